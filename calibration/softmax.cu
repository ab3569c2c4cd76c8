// The instruction stream of an attention consumer warp between its two GEMMs (FlashAttention's
// online softmax, as cuDNN's FA3-class Hopper kernel compiles it: FMNMX tree, SHFL.BFLY, FMUL,
// FADD, MUFU.EX2, F2FP, FMUL), and the rates and latencies of its instructions, on one SM,
// cycles from clock64() inside the kernel.
//
//   shfl_dep        : cycles per SHFL.BFLY of one warp's dependent chain
//   shfl_rate       : warp-shuffles per cycle per SM, 32 warps, 8 independent chains each
//   fmnmx_dep, fmnmx_rate, fadd_rate, fmul_rate, f2fp_rate : the same for FMNMX (dependent
//                     chain and rate), FADD, FMUL and F2FP.BF16.F32.PACK_AB (rates: 32 warps)
//   softmax_step    : cycles per step of one row block's online softmax: each thread holds 64
//                     scores (2 rows x 32) and 64 output accumulators; a step is the row maxima
//                     (a tree of FMNMX, 2 SHFL.BFLY rounds per row), the correction factors
//                     (2 MUFU.EX2), 64 x (FMUL, FADD, MUFU.EX2, FADD into the row sum), 32 F2FP
//                     packs and 64 FMUL rescaling the accumulators; the next step's scores
//                     depend on this step's sums, so steps do not overlap. param = warps per
//                     SM (4: one per partition; 8: two per partition, as two consumer
//                     warpgroups without ping-pong)
//   softmax_beside_{ss,rs} : softmax_step's cycles (4 warps, one per partition, or 8, two per
//                     partition as in an attention kernel's two consumer warpgroups) while
//                     another warpgroup issues back-to-back wgmma m64n128k16 (SS, or RS with A
//                     from registers) that outlast it; param = softmax warps
//   wgmma_beside_{ss,rs}   : cycles per wgmma of that warpgroup while the softmax steps outlast
//                     it (wgmma_alone_{ss,rs}: with no softmax beside); param 128 (N) beside 4
//                     softmax warps, 128_w8 beside 8
//   arb_done_wg{0,1}  : how the tensor pipe shares itself between two warpgroups that issue at
//                     once: both warpgroups pass a bar.sync, warpgroup 1 then spins `d` cycles,
//                     and each issues k back-to-back wgmma m64n128k16 (SS) and waits for them;
//                     cycles from the bar.sync to each warpgroup's wait_group 0 (the tensor
//                     time of one warpgroup's k wgmmas is 64 k); param k<k>_d<d>
//   arb_alone_wg0     : the same with warpgroup 1 issuing no wgmma (it spins d cycles)
//   arb_issued_wg{0,1}: cycles from the bar.sync to the warpgroup's last wgmma issue
//   order_done_wg{0,1}, order_issued_wg{0,1} : two warpgroups on separate code paths (so that
//                     the compiler cannot share their wgmma code, warpgroup 1 uses the RS form,
//                     the same 64 cycles at N = 128): warpgroup 0 issues k SS wgmmas right
//                     after the bar.sync, warpgroup 1 spins d cycles and issues k RS wgmmas;
//                     cycles to each one's last issue and wait_group 0: does the tensor pipe
//                     finish the earlier warpgroup's HGMMAs first, or share itself?
//                     param k<k>_d<d>
//   wgmma_issue_{ss,rs}, wgmma_issue_max_{ss,rs}, wgmma_group_{ss,rs} (`softmax issue` runs only
//                     these): the beside kernel's wgmma warps, each adding up the cycles from a
//                     group's start (wait_group 1 returned) to its commit: the mean and the
//                     slowest warp's per group, and the group's whole cycles; param w0, w4, w8:
//                     softmax warps beside (w0_g100: 100 groups, the first launch)
//   busy_issued_wg0, busy_done_wg0 : warpgroup 0's last wgmma issue and its wait_group 0 while
//                     warpgroup 1 (no wgmma) is busy with something else after the bar.sync:
//                     a clock64 spin of d cycles (spin), d/4 dependent FFMAs (ffma), or d/1000
//                     softmax steps (softmax); param <what>_k<k>_d<d>
// Build: python3 gen_wgmma.py 128 > wgmma_ops.h;
//        nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -I. -o softmax softmax.cu
#include "common.cuh"
#include "wgmma_ops.h"

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float shfl_bfly(float x, int m) { return __shfl_xor_sync(0xffffffffu, x, m); }
__device__ __forceinline__ uint32_t pack(float a, float b) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
  return r;
}

enum Op { kShfl, kFadd, kFmul, kF2fp };

// `chains` independent dependent chains of `op` per thread, `iters` long.
template <int kOp, int kChains>
__global__ void chain_kernel(int iters, unsigned long long* cyc, float* sink) {
  float x[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) x[c] = threadIdx.x * 0.001f + c;
  const float y = sink[1023] + 1.0001f;  // a run-time operand
  __syncthreads();
  long long t0 = clock64();
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) {
      if (kOp == kShfl) x[c] = shfl_bfly(x[c], 1 + (c & 3));
      if (kOp == kFadd) x[c] = x[c] + y;
      if (kOp == kFmul) x[c] = x[c] * y;
      if (kOp == kF2fp) x[c] = __uint_as_float(pack(x[c], y));
    }
  }
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) cyc[blockIdx.x] = t1 - t0;
  float s = 0;
#pragma unroll
  for (int c = 0; c < kChains; ++c) s += x[c];
  if (s == 1.2345f) sink[threadIdx.x] = s;
}

// FMNMX with a run-time operand that the compiler cannot fold: max(x, y) where y varies.
__global__ void fmnmx_kernel(int iters, int chains8, unsigned long long* cyc, float* sink) {
  float x[8];
#pragma unroll
  for (int c = 0; c < 8; ++c) x[c] = threadIdx.x * 0.001f + c;
  float y = sink[1022];
  __syncthreads();
  long long t0 = clock64();
  for (int i = 0; i < iters; ++i) {
    if (chains8) {
#pragma unroll
      for (int c = 0; c < 8; ++c) x[c] = fmaxf(x[c], y + c);
    } else {
#pragma unroll
      for (int c = 0; c < 8; ++c) x[0] = fmaxf(x[0], y + c);  // one dependent chain
    }
    y = __int_as_float(__float_as_int(y) ^ 1);  // a new operand every iteration (1 LOP3)
  }
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) cyc[blockIdx.x] = t1 - t0;
  float s = 0;
#pragma unroll
  for (int c = 0; c < 8; ++c) s += x[c];
  if (s == 1.2345f) sink[threadIdx.x] = s;
}

// `iters` online-softmax steps, as described at the top; returns the cycles they took.
__device__ __forceinline__ long long softmax_steps(int iters, float* sink) {
  float s[64], o[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) {
    s[i] = sink[i & 255] + 0.01f * i + 0.001f * threadIdx.x;
    o[i] = 1.0f + 0.001f * i;
  }
  const float scale = 1.4427f * sink[1021];
  float m0 = -1e30f, m1 = -1e30f, l0 = 0.f, l1 = 0.f;
  uint32_t packed = 0;
  long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
    // Row maxima: thread-local, then the 4 threads of each row (SHFL.BFLY 1 and 2).
    float a = s[0], b = s[1];
#pragma unroll
    for (int i = 2; i < 64; i += 2) {
      a = fmaxf(a, s[i]);
      b = fmaxf(b, s[i + 1]);
    }
    a = fmaxf(a, shfl_bfly(a, 1));
    b = fmaxf(b, shfl_bfly(b, 1));
    a = fmaxf(a, shfl_bfly(a, 2));
    b = fmaxf(b, shfl_bfly(b, 2));
    const float n0 = fmaxf(m0, a), n1 = fmaxf(m1, b);
    const float c0 = ex2((m0 - n0) * scale), c1 = ex2((m1 - n1) * scale);
    const float n0s = n0 * scale, n1s = n1 * scale;
    m0 = n0;
    m1 = n1;
    float r0 = 0.f, r1 = 0.f;
#pragma unroll
    for (int i = 0; i < 64; i += 2) {
      // FMUL then FADD, not one FFMA, as cuDNN's kernel computes them.
      const float p0 = ex2(__fadd_rn(__fmul_rn(s[i], scale), -n0s));
      const float p1 = ex2(__fadd_rn(__fmul_rn(s[i + 1], scale), -n1s));
      r0 += p0;
      r1 += p1;
      packed ^= pack(p0, p1);
      o[i] *= c0;
      o[i + 1] *= c1;
    }
    l0 = l0 * c0 + r0;
    l1 = l1 * c1 + r1;
    // The next step's scores depend on this step (as the next S depends on the GEMM that
    // reads this step's P): one FADD per score.
    const float d = (l0 + l1) * 1e-30f;
#pragma unroll
    for (int i = 0; i < 64; ++i) s[i] += d;
  }
  long long t1 = clock64();
  float t = l0 + l1 + (float)packed;
#pragma unroll
  for (int i = 0; i < 64; ++i) t += o[i];
  if (t == 1.2345f) sink[threadIdx.x] = t;
  return t1 - t0;
}

__global__ void softmax_kernel(int iters, unsigned long long* cyc, float* sink) {
  __syncthreads();
  const long long c = softmax_steps(iters, sink);
  if (threadIdx.x % 32 == 0) cyc[blockIdx.x * 32 + threadIdx.x / 32] = c;
}

__device__ __forceinline__ uint64_t desc(uint32_t addr) {
  // As wgmma.cu: no swizzle, leading-dimension byte offset 128, stride-dimension 256.
  const uint64_t lbo = 128, sbo = 256;
  return ((addr & 0x3FFFF) >> 4) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32);
}

// Warps 0 to SW-1 (SW / 4 a partition) run `iters` softmax steps while the last warpgroup
// issues `groups` x 8 back-to-back wgmma m64nNk16 (SS, or RS with A from registers), one group
// in flight; cyc[0..SW-1]: each softmax warp's cycles, cyc[SW]: the wgmma warpgroup's.
// With kProbe, each wgmma warp also adds up the cycles from a group's start (its wait_group 1
// returned) to its commit, its issue span, into cyc[SW + 1 + warp].
template <int N, int SW, bool kProbe = false>
__global__ void __launch_bounds__(32 * SW + 128, 1) beside_kernel(int iters, int groups, int rs,
                                                                  unsigned long long* cyc, float* sink) {
  __shared__ __align__(128) uint16_t ops[(64 + 256) * 16];
  for (int i = threadIdx.x; i < (64 + 256) * 16; i += blockDim.x) ops[i] = 0x3c00 + (i & 7);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (threadIdx.x < 32 * SW) {
    const long long c = softmax_steps(iters, sink);
    if (threadIdx.x % 32 == 0) cyc[threadIdx.x / 32] = c;
    return;
  }
  const uint32_t base = (uint32_t)__cvta_generic_to_shared(ops);
  const uint64_t da = desc(base), db = desc(base + 64 * 16 * 2);
  uint32_t a[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = __float_as_uint(sink[i]) | 0x3c003c00u;  // run-time A fragment
  float d[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) d[i] = 0.f;
  long long t0 = clock64();
  long long span = 0;
  for (int g = 0; g < groups; ++g) {
    long long ta = 0;
    if (kProbe) ta = clock64();
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    if (rs) {
#pragma unroll
      for (int k = 0; k < 8; ++k) Wgmma<N>::rs(d, a, db, 1);
    } else {
#pragma unroll
      for (int k = 0; k < 8; ++k) Wgmma<N>::ss(d, da, db, 1);
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    if (kProbe) span += clock64() - ta;
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  long long t1 = clock64();
  if (threadIdx.x == 32 * SW) cyc[SW] = t1 - t0;
  if (kProbe && threadIdx.x % 32 == 0) cyc[SW + 1 + (threadIdx.x / 32 - SW)] = span;
  float s = 0;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) s += d[i];
  if (s == 1.2345f) sink[threadIdx.x] = s;
}

// Two warpgroups, k wgmmas each after a common bar.sync (warpgroup 1 `delay` cycles later).
template <int K>
__global__ void __launch_bounds__(256, 1) arb_kernel(int delay, int reps, int wg1_mma, unsigned long long* cyc,
                                                      float* sink) {
  __shared__ __align__(128) uint16_t ops[(64 + 256) * 16];
  for (int i = threadIdx.x; i < (64 + 256) * 16; i += blockDim.x) ops[i] = 0x3c00 + (i & 7);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const int wg = threadIdx.x / 128;
  const uint32_t base = (uint32_t)__cvta_generic_to_shared(ops);
  const uint64_t da = desc(base), db = desc(base + 64 * 16 * 2);
  float d[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) d[i] = 0.f;
  unsigned long long total = 0, issued = 0;
  for (int r = 0; r <= reps; ++r) {  // rep 0 warms up
    __syncthreads();
    const long long t0 = clock64();
    if (wg == 1)
      while (clock64() - t0 < delay) {
      }
    long long ti = t0;
    if (wg == 0 || wg1_mma) {
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
      for (int k = 0; k < K; ++k) Wgmma<128>::ss(d, da, db, 1);
      ti = clock64();
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    }
    const long long t1 = clock64();
    if (r > 0) {
      total += t1 - t0;
      issued += ti - t0;
    }
  }
  if (threadIdx.x % 128 == 0) {
    cyc[wg] = total / reps;
    cyc[2 + wg] = issued / reps;
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < 64; ++i) s += d[i];
  if (s == 1.2345f) sink[threadIdx.x] = s;
}

// Warpgroup 0 issues K wgmmas after a bar.sync while warpgroup 1 keeps busy (`what`: 0 clock
// spin, 1 FFMA chain, 2 softmax steps) for about `delay` cycles and issues none.
template <int K>
__global__ void __launch_bounds__(256, 1) busy_kernel(int delay, int what, int reps, unsigned long long* cyc,
                                                       float* sink) {
  __shared__ __align__(128) uint16_t ops[(64 + 256) * 16];
  for (int i = threadIdx.x; i < (64 + 256) * 16; i += blockDim.x) ops[i] = 0x3c00 + (i & 7);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const int wg = threadIdx.x / 128;
  const uint32_t base = (uint32_t)__cvta_generic_to_shared(ops);
  const uint64_t da = desc(base), db = desc(base + 64 * 16 * 2);
  float d[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) d[i] = 0.f;
  float x = sink[1000 + threadIdx.x % 8];
  unsigned long long total = 0, issued = 0;
  for (int r = 0; r <= reps; ++r) {
    __syncthreads();
    const long long t0 = clock64();
    if (wg == 1) {
      if (what == 0) {
        while (clock64() - t0 < delay) {
        }
      } else if (what == 1) {
        for (int i = 0; i < delay / 4; ++i) x = fmaf(x, 1.0001f, 0.5f);
      } else {
        softmax_steps(delay / 1000, sink);
      }
    } else {
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
      for (int k = 0; k < K; ++k) Wgmma<128>::ss(d, da, db, 1);
      const long long ti = clock64();
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
      const long long t1 = clock64();
      if (r > 0) {
        total += t1 - t0;
        issued += ti - t0;
      }
    }
  }
  if (threadIdx.x == 0) {
    cyc[0] = total / reps;
    cyc[1] = issued / reps;
  }
  float s = x;
#pragma unroll
  for (int i = 0; i < 64; ++i) s += d[i];
  if (s == 1.2345f) sink[threadIdx.x] = s;
}

template <int K>
__global__ void __launch_bounds__(256, 1) order_kernel(int delay, int reps, unsigned long long* cyc, float* sink) {
  __shared__ __align__(128) uint16_t ops[(64 + 256) * 16];
  for (int i = threadIdx.x; i < (64 + 256) * 16; i += blockDim.x) ops[i] = 0x3c00 + (i & 7);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const int wg = threadIdx.x / 128;
  const uint32_t base = (uint32_t)__cvta_generic_to_shared(ops);
  const uint64_t da = desc(base), db = desc(base + 64 * 16 * 2);
  uint32_t a[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = __float_as_uint(sink[i]) | 0x3c003c00u;
  float d[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) d[i] = 0.f;
  unsigned long long total = 0, issued = 0;
  for (int r = 0; r <= reps; ++r) {
    __syncthreads();
    const long long t0 = clock64();
    long long ti;
    if (wg == 0) {
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
      for (int k = 0; k < K; ++k) Wgmma<128>::ss(d, da, db, 1);
      ti = clock64();
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    } else {
      while (clock64() - t0 < delay) {
      }
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
      for (int k = 0; k < K; ++k) Wgmma<128>::rs(d, a, db, 1);
      ti = clock64();
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    }
    const long long t1 = clock64();
    if (r > 0) {
      total += t1 - t0;
      issued += ti - t0;
    }
  }
  if (threadIdx.x % 128 == 0) {
    cyc[wg] = total / reps;
    cyc[2 + wg] = issued / reps;
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < 64; ++i) s += d[i];
  if (s == 1.2345f) sink[threadIdx.x] = s;
}

static unsigned long long* g_cyc;
static float* g_sink;

template <int kOp, int kChains>
static double chain(int warps, int iters) {
  chain_kernel<kOp, kChains><<<1, 32 * warps>>>(iters, g_cyc, g_sink);
  LAUNCH_CHECK();
  unsigned long long c;
  CHECK(cudaMemcpy(&c, g_cyc, sizeof c, cudaMemcpyDeviceToHost));
  return (double)c;
}

// Cycles per instruction of one warp's chain, and warp-instructions per cycle per SM of 32
// warps with 8 chains each: the slope between two loop counts.
template <int kOp>
static void op_rows(const char* dep, const char* rate) {
  chain<kOp, 1>(1, 100);  // warm-up
  const double d = (chain<kOp, 1>(1, 20000) - chain<kOp, 1>(1, 10000)) / 10000.0;
  if (dep) row(dep, 32, d, "cycles");
  const double r = (chain<kOp, 8>(32, 4000) - chain<kOp, 8>(32, 2000)) / 2000.0;
  row(rate, 1024, 32.0 * 8.0 / r, "warp_inst_per_clk_per_sm");
}

static double fmnmx(int warps, int chains8, int iters) {
  fmnmx_kernel<<<1, 32 * warps>>>(iters, chains8, g_cyc, g_sink);
  LAUNCH_CHECK();
  unsigned long long c;
  CHECK(cudaMemcpy(&c, g_cyc, sizeof c, cudaMemcpyDeviceToHost));
  return (double)c;
}

static double softmax(int warps, int iters) {
  softmax_kernel<<<1, 32 * warps>>>(iters, g_cyc, g_sink);
  LAUNCH_CHECK();
  unsigned long long c[32];
  CHECK(cudaMemcpy(c, g_cyc, warps * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  unsigned long long m = 0;
  for (int w = 0; w < warps; ++w) m = c[w] > m ? c[w] : m;
  return (double)m;
}

// The beside kernel with SW softmax warps: the wgmma warpgroup's cycles, or the slowest
// softmax warp's.
template <int SW>
static double beside(int iters, int groups, int rs, bool wgmma) {
  beside_kernel<128, SW><<<1, 32 * SW + 128>>>(iters, groups, rs, g_cyc, g_sink);
  LAUNCH_CHECK();
  unsigned long long c[SW + 1];
  CHECK(cudaMemcpy(c, g_cyc, sizeof c, cudaMemcpyDeviceToHost));
  if (wgmma) return (double)c[SW];
  unsigned long long m = 0;
  for (int w = 0; w < SW; ++w) m = c[w] > m ? c[w] : m;
  return (double)m;
}

// The wgmma warps' issue span per group (see beside_kernel), as the mean and the largest over
// the 4 warps, with SW softmax warps outlasting `groups` groups (0 steps: none beside).
template <int SW>
static void issue_rows(const char* kind, const char* param, int iters, int groups, int rs) {
  beside_kernel<128, SW, true><<<1, 32 * SW + 128>>>(iters, groups, rs, g_cyc, g_sink);
  LAUNCH_CHECK();
  unsigned long long c[SW + 5];
  CHECK(cudaMemcpy(c, g_cyc, sizeof c, cudaMemcpyDeviceToHost));
  double sum = 0, most = 0;
  for (int w = 0; w < 4; ++w) {
    sum += (double)c[SW + 1 + w];
    most = (double)c[SW + 1 + w] > most ? (double)c[SW + 1 + w] : most;
  }
  char t[40];
  snprintf(t, sizeof t, "wgmma_issue_%s", kind);
  row(t, param, sum / 4 / groups, "cycles");
  snprintf(t, sizeof t, "wgmma_issue_max_%s", kind);
  row(t, param, most / groups, "cycles");
  snprintf(t, sizeof t, "wgmma_group_%s", kind);
  row(t, param, (double)c[SW] / groups, "cycles");
}

int main(int argc, char** argv) {
  header("softmax");
  if (argc > 1 && strcmp(argv[1], "issue") == 0) {
    // Only the issue-span rows: is the wgmma warp starved by softmax warps beside it?
    CHECK(cudaMalloc(&g_cyc, 64 * sizeof(unsigned long long)));
    CHECK(cudaMalloc(&g_sink, 1024 * sizeof(float)));
    CHECK(cudaMemset(g_sink, 0, 1024 * sizeof(float)));
    for (int rs = 0; rs < 2; ++rs) {
      const char* kind = rs ? "rs" : "ss";
      issue_rows<4>(kind, "w0_g100", 0, 100, rs);
      issue_rows<4>(kind, "w0", 0, 2000, rs);
      issue_rows<4>(kind, "w4", 6000, 2000, rs);
      issue_rows<8>(kind, "w8", 6000, 2000, rs);
    }
    footer();
    return 0;
  }
  CHECK(cudaMalloc(&g_cyc, 64 * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&g_sink, 1024 * sizeof(float)));
  CHECK(cudaMemset(g_sink, 0, 1024 * sizeof(float)));
  op_rows<kShfl>("shfl_dep", "shfl_rate");
  op_rows<kFadd>(nullptr, "fadd_rate");
  op_rows<kFmul>(nullptr, "fmul_rate");
  op_rows<kF2fp>("f2fp_dep", "f2fp_rate");
  fmnmx(1, 0, 100);
  // One chain: 8 dependent FMNMX + 1 LOP3 per iteration (the LOP3 runs beside the chain).
  row("fmnmx_dep", 32, (fmnmx(1, 0, 20000) - fmnmx(1, 0, 10000)) / (10000.0 * 8), "cycles");
  row("fmnmx_rate", 1024, 32.0 * 8 / ((fmnmx(32, 1, 4000) - fmnmx(32, 1, 2000)) / 2000.0),
      "warp_inst_per_clk_per_sm");
  for (int warps : {1, 4, 8}) {
    softmax(warps, 10);
    row("softmax_step", warps, (softmax(warps, 2000) - softmax(warps, 1000)) / 1000.0, "cycles");
  }
  for (int rs = 0; rs < 2; ++rs) {
    const char* kind = rs ? "rs" : "ss";
    char t[32];
    beside<4>(10, 10, rs, false);
    // Softmax steps beside wgmmas that outlast them (2000 steps take ~2.2-3M cycles; 9000
    // groups of 8 at >= 64 cycles each take >= 4.6M).
    snprintf(t, sizeof t, "softmax_beside_%s", kind);
    row(t, 4, (beside<4>(2000, 9000, rs, false) - beside<4>(1000, 9000, rs, false)) / 1000.0, "cycles");
    // wgmmas beside softmax steps that outlast them (6000 steps >= 6.4M cycles; 2000 groups
    // of 8 at <= 100 cycles each <= 1.6M).
    snprintf(t, sizeof t, "wgmma_beside_%s", kind);
    row(t, 128, (beside<4>(6000, 2000, rs, true) - beside<4>(6000, 1000, rs, true)) / 8000.0, "cycles");
    snprintf(t, sizeof t, "wgmma_alone_%s", kind);
    row(t, 128, (beside<4>(0, 2000, rs, true) - beside<4>(0, 1000, rs, true)) / 8000.0, "cycles");
    // The same with two softmax warps a partition (2000 steps take ~3.2-4M cycles; 9000
    // groups >= 4.6M; 6000 steps >= 9.6M cycles beside 2000 groups <= 1.6M).
    beside<8>(10, 10, rs, false);
    snprintf(t, sizeof t, "softmax_beside_%s", kind);
    row(t, 8, (beside<8>(2000, 9000, rs, false) - beside<8>(1000, 9000, rs, false)) / 1000.0, "cycles");
    snprintf(t, sizeof t, "wgmma_beside_%s", kind);
    row(t, "128_w8", (beside<8>(6000, 2000, rs, true) - beside<8>(6000, 1000, rs, true)) / 8000.0, "cycles");
  }
  auto arb = [](auto kernel, int k) {
    for (int d : {0, 100, 400, 1500}) {
      unsigned long long c[4];
      char p[32];
      snprintf(p, sizeof p, "k%d_d%d", k, d);
      kernel<<<1, 256>>>(d, 20, 0, g_cyc, g_sink);
      LAUNCH_CHECK();
      CHECK(cudaMemcpy(c, g_cyc, sizeof c, cudaMemcpyDeviceToHost));
      row("arb_alone_wg0", p, (double)c[0], "cycles");
      kernel<<<1, 256>>>(d, 20, 1, g_cyc, g_sink);
      LAUNCH_CHECK();
      CHECK(cudaMemcpy(c, g_cyc, sizeof c, cudaMemcpyDeviceToHost));
      row("arb_done_wg0", p, (double)c[0], "cycles");
      row("arb_done_wg1", p, (double)c[1], "cycles");
      row("arb_issued_wg0", p, (double)c[2], "cycles");
      row("arb_issued_wg1", p, (double)c[3], "cycles");
    }
  };
  arb(arb_kernel<4>, 4);
  arb(arb_kernel<8>, 8);
  arb(arb_kernel<16>, 16);
  auto order = [](auto kernel, int k) {
    for (int dl : {0, 50, 150, 300, 600}) {
      unsigned long long c[4];
      char p[32];
      snprintf(p, sizeof p, "k%d_d%d", k, dl);
      kernel<<<1, 256>>>(dl, 10, g_cyc, g_sink);
      LAUNCH_CHECK();
      CHECK(cudaMemcpy(c, g_cyc, sizeof c, cudaMemcpyDeviceToHost));
      row("order_done_wg0", p, (double)c[0], "cycles");
      row("order_done_wg1", p, (double)c[1], "cycles");
      row("order_issued_wg0", p, (double)c[2], "cycles");
      row("order_issued_wg1", p, (double)c[3], "cycles");
    }
  };
  order(order_kernel<8>, 8);
  order(order_kernel<16>, 16);
  for (int what = 0; what < 3; ++what) {
    for (int dl : {0, 2000, 6000}) {
      unsigned long long c[2];
      char p[48];
      snprintf(p, sizeof p, "%s_k8_d%d", what == 0 ? "spin" : what == 1 ? "ffma" : "softmax", dl);
      busy_kernel<8><<<1, 256>>>(dl, what, 10, g_cyc, g_sink);
      LAUNCH_CHECK();
      CHECK(cudaMemcpy(c, g_cyc, sizeof c, cudaMemcpyDeviceToHost));
      row("busy_issued_wg0", p, (double)c[1], "cycles");
      row("busy_done_wg0", p, (double)c[0], "cycles");
    }
  }
  footer();
  return 0;
}
