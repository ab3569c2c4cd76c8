// An FA3-class attention forward main loop on one SM, written after FlashAttention-3's Hopper
// kernel (hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp, Dao-AILab/flash-attention), so that its two
// techniques can be switched off one at a time on the chip: head dim 128, 128 query rows per
// CTA, KV blocks of 128, 2 K/V stages (3 in the `_s3` rows). One producer warpgroup whose
// thread 0 issues the TMA loads (Q once; K_j and V_j^T per block, 128-byte swizzle), two
// consumer warpgroups of 64 query rows each: S = Q K_j^T (8 SS wgmma m64n128k16), the online
// softmax in registers (the instruction mix of cuDNN's FA3-class kernel, as softmax.cu: FMNMX
// tree, 2 SHFL.BFLY rounds, FMUL + FADD + MUFU.EX2 per score, FADD row sums, F2FP packs, FMUL
// rescaling O), P converted to bf16 in registers and O += P V_j (8 RS wgmma m64n128k16).
//
//   pingpong       FA3's warp-scheduler barriers (bar.sync on the warpgroup's own named
//                  barrier before its GEMMs, bar.arrive on the other's after them; only the
//                  first consumer waits on the K / V mbarriers, as FA3 does with them)
//   intra_overlap  FA3's IntraWGOverlap: S_{j+1} = Q K_{j+1}^T and O += P_j V_j issued together,
//                  the softmax of S_{j+1} while P_j V_j runs; without it each block's S, softmax
//                  and P V one after another (FA3's other path, with its barrier placement)
//
//   fa3_block      cycles per KV block, the slope of the consumers' cycles (clock64, earliest
//                  start to latest end) between 32 and 64 KV blocks, K and V from L2;
//                  param pp<0|1>_io<0|1>_g<CTAs> (1 CTA, or 132: one per SM, the same K and V),
//                  and pp<>_io<>_g1_s3 with 3 K/V stages
//   fa3_flop_per_sm_cycle  4 * 128 * 128 * 128 FLOP a block over fa3_block
//   fa3_stamp      one traced 1-CTA launch of 64 blocks: clock64 of each consumer warpgroup's
//                  thread 0 at 8 points of blocks 24 to 31 (param pp<>_io<>_wg<c>_b<block>_s<k>,
//                  cycles after consumer 0's first stamp of block 24). With overlap: 0 start,
//                  1 K waited, 2 scheduler barrier passed, 3 both GEMMs issued, 4 S ready
//                  (wait_group 1), 5 softmax done, 6 P V done (wait_group 0), 7 P and O ready.
//                  Without: 0 start, 1 K waited, 2 S ready, 3 softmax and rescale done, 4 V
//                  waited, 5 barrier passed, 6 P V issued, 7 P V done. (A stamp costs tens of
//                  cycles: the traced iterations run ~7% slower.)
// The values are not checked (the timing of these instructions does not depend on them).
// Build: python3 gen_wgmma.py 128 > wgmma_ops.h;
//        nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -I. -o fa3 fa3.cu
#include "tma_util.cuh"
#include "wgmma_ops.h"
#include <algorithm>
#include <cstring>
#include <vector>

constexpr int kBm = 128, kBn = 128, kHd = 128;
constexpr int kTile = 128 * 64 * 2;  // one 128 x 64 bf16 box, 16 KiB
constexpr int kBlockBytes = 2 * kTile;  // K_j or V_j^T: 32 KiB

__device__ __forceinline__ void named_sync(int id) { asm volatile("bar.sync %0, 256;" ::"r"(id) : "memory"); }
__device__ __forceinline__ void named_arrive(int id) { asm volatile("bar.arrive %0, 256;" ::"r"(id) : "memory"); }
__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wait_group() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Keeps the compiler from moving uses of accumulators across a wgmma wait (CUTLASS's
// warpgroup_fence_operand).
template <int N>
__device__ __forceinline__ void fence_operand(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ uint32_t pack(float a, float b) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
  return r;
}

struct Softmax {
  float m0 = -1e30f, m1 = -1e30f, l0 = 0.f, l1 = 0.f, c0 = 1.f, c1 = 1.f;
  // The m64n128 accumulator layout: register 4j + r holds row l/4 + 8 (r/2); rows 0 and 1 of
  // the thread are registers {4j, 4j+1} and {4j+2, 4j+3}. S becomes the unnormalized P.
  __device__ __forceinline__ void step(float (&s)[64], float scale) {
    float a = fmaxf(s[0], s[1]), b = fmaxf(s[2], s[3]);
#pragma unroll
    for (int j = 1; j < 16; ++j) {
      a = fmaxf(a, fmaxf(s[4 * j], s[4 * j + 1]));
      b = fmaxf(b, fmaxf(s[4 * j + 2], s[4 * j + 3]));
    }
    a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, 1));
    b = fmaxf(b, __shfl_xor_sync(0xffffffffu, b, 1));
    a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, 2));
    b = fmaxf(b, __shfl_xor_sync(0xffffffffu, b, 2));
    const float n0 = fmaxf(m0, a), n1 = fmaxf(m1, b);
    c0 = ex2((m0 - n0) * scale);
    c1 = ex2((m1 - n1) * scale);
    m0 = n0;
    m1 = n1;
    const float n0s = n0 * scale, n1s = n1 * scale;
    float r0 = 0.f, r1 = 0.f;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      // FMUL then FADD, not one FFMA, as cuDNN's kernel computes them.
      s[4 * j] = ex2(__fadd_rn(__fmul_rn(s[4 * j], scale), -n0s));
      s[4 * j + 1] = ex2(__fadd_rn(__fmul_rn(s[4 * j + 1], scale), -n0s));
      s[4 * j + 2] = ex2(__fadd_rn(__fmul_rn(s[4 * j + 2], scale), -n1s));
      s[4 * j + 3] = ex2(__fadd_rn(__fmul_rn(s[4 * j + 3], scale), -n1s));
      r0 += s[4 * j] + s[4 * j + 1];
      r1 += s[4 * j + 2] + s[4 * j + 3];
    }
    l0 = l0 * c0 + r0;
    l1 = l1 * c1 + r1;
  }
  __device__ __forceinline__ void rescale(float (&o)[64]) const {
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      o[4 * j] *= c0;
      o[4 * j + 1] *= c0;
      o[4 * j + 2] *= c1;
      o[4 * j + 3] *= c1;
    }
  }
};

// P as the RS wgmma's A fragments: k-step k takes columns 16k .. 16k + 15, registers 8k .. 8k+7.
__device__ __forceinline__ void to_p(const float (&s)[64], uint32_t (&p)[8][4]) {
#pragma unroll
  for (int k = 0; k < 8; ++k)
#pragma unroll
    for (int r = 0; r < 4; ++r) p[k][r] = pack(s[8 * k + 2 * r], s[8 * k + 2 * r + 1]);
}

// 8 k-steps over a 128 x 128 operand held as two 128 x 64 boxes (k-steps 0-3 and 4-7).
__device__ __forceinline__ uint64_t kdesc(uint32_t tile, int k) {
  return desc_sw128(tile + (k / 4) * kTile) + 2 * (k % 4);
}
__device__ __forceinline__ void gemm_qk(float (&s)[64], uint32_t q, uint32_t kt) {
#pragma unroll
  for (int k = 0; k < 8; ++k) Wgmma<128>::ss(s, kdesc(q, k), kdesc(kt, k), k > 0);
}
__device__ __forceinline__ void gemm_pv(float (&o)[64], const uint32_t (&p)[8][4], uint32_t vt) {
#pragma unroll
  for (int k = 0; k < 8; ++k) Wgmma<128>::rs(o, p[k], kdesc(vt, k), 1);
}

struct Params {
  int blocks;
  float scale;
  unsigned long long* out;  // per CTA: [0..1] consumer starts, [2..3] ends
  float* sink;
  long long* trace;  // TR: 2 x 64 x 8 stamps of CTA 0 (only one CTA is traced)
};

template <bool PP, bool IO, int ST = 2, bool TR = false>
__global__ void __launch_bounds__(384, 1) fa3_kernel(const __grid_constant__ CUtensorMap mq,
                                                      const __grid_constant__ CUtensorMap mk,
                                                      const __grid_constant__ CUtensorMap mv, Params p) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = (uint8_t*)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
  __shared__ __align__(8) uint64_t q_full, k_full[ST], v_full[ST], k_empty[ST], v_empty[ST];
  if (threadIdx.x == 0) {
    bar_init(saddr(&q_full), 1);
    for (int s = 0; s < ST; ++s) {
      bar_init(saddr(&k_full[s]), 1);
      bar_init(saddr(&v_full[s]), 1);
      bar_init(saddr(&k_empty[s]), 256);
      bar_init(saddr(&v_empty[s]), 256);
    }
  }
  __syncthreads();
  const int wg = threadIdx.x / 128;
  const uint32_t sq = saddr(smem), sk = sq + kBlockBytes, sv = sk + ST * kBlockBytes;
  if (wg == 0) {  // producer
    asm volatile("setmaxnreg.dec.sync.aligned.u32 24;");
    if (threadIdx.x != 0) return;
    arrive_expect(saddr(&q_full), kBlockBytes);
    tma_load(sq, &mq, 0, saddr(&q_full), 0);
    tma_load(sq + kTile, &mq, 0, saddr(&q_full), 64);
    for (int j = 0; j < p.blocks; ++j) {
      const int s = j % ST;
      const uint32_t ph = (j / ST) & 1;
      wait_phase(saddr(&k_empty[s]), ph ^ 1);
      arrive_expect(saddr(&k_full[s]), kBlockBytes);
      tma_load(sk + s * kBlockBytes, &mk, j * kBn, saddr(&k_full[s]), 0);
      tma_load(sk + s * kBlockBytes + kTile, &mk, j * kBn, saddr(&k_full[s]), 64);
      wait_phase(saddr(&v_empty[s]), ph ^ 1);
      arrive_expect(saddr(&v_full[s]), kBlockBytes);
      tma_load(sv + s * kBlockBytes, &mv, 0, saddr(&v_full[s]), j * kBn);
      tma_load(sv + s * kBlockBytes + kTile, &mv, 0, saddr(&v_full[s]), j * kBn + 64);
    }
    return;
  }
  asm volatile("setmaxnreg.inc.sync.aligned.u32 240;");
  const int c = wg - 1;
  const uint32_t qa = sq + c * 64 * 128;  // this warpgroup's 64 rows of each Q box
  // FA3's scheduler barriers: consumer c syncs on id 1 + c, arrives on the other's.
  const int own = 1 + c, other = 2 - c;
  const bool waits = !PP || c == 0;  // with them only the first consumer waits on K / V
  float o[64], s[64];
  uint32_t pf[8][4];
#pragma unroll
  for (int i = 0; i < 64; ++i) o[i] = 0.f;
  Softmax sm;
  wait_phase(saddr(&q_full), 0);
  if (PP && c == 0) named_arrive(own);  // the first consumer's first turn (FA3 mma_init)
  const long long t0 = clock64();
  const int n = p.blocks;
  // Trace: 8 clock64 stamps per iteration of this warpgroup's thread 0 (stamp k of block i at
  // p.trace[((c * kMaxBlocks) + i) * 8 + k]), relative to t0 of consumer 0 afterwards.
  auto stamp = [&](int i, int k) {
    if constexpr (TR) {
      const long long t = clock64();
      if (threadIdx.x % 128 == 0) p.trace[(c * 64 + i) * 8 + k] = t;
    }
  };
  if (IO) {
    // The prologue, S_0 and its softmax, runs without the scheduler barriers (as FA3's).
    wait_phase(saddr(&k_full[0]), 0);
    fence();
    gemm_qk(s, qa, sk);
    commit();
    wait_group<0>();
    fence_operand(s);
    arrive(saddr(&k_empty[0]));
    sm.step(s, p.scale);
    to_p(s, pf);
    for (int i = 0; i + 1 < n; ++i) {
      const int s1 = (i + 1) % ST, s0 = i % ST;
      const uint32_t ph1 = ((i + 1) / ST) & 1, ph0 = (i / ST) & 1;
      stamp(i, 0);
      if (waits) wait_phase(saddr(&k_full[s1]), ph1);
      stamp(i, 1);
      if (PP) named_sync(own);
      stamp(i, 2);
      fence();
      gemm_qk(s, qa, sk + s1 * kBlockBytes);
      commit();
      if (waits) wait_phase(saddr(&v_full[s0]), ph0);
      fence();
      gemm_pv(o, pf, sv + s0 * kBlockBytes);
      commit();
      if (PP) named_arrive(other);
      stamp(i, 3);
      wait_group<1>();
      fence_operand(s);
      stamp(i, 4);
      arrive(saddr(&k_empty[s1]));
      sm.step(s, p.scale);
      stamp(i, 5);
      wait_group<0>();
      fence_operand(o);
      stamp(i, 6);
      arrive(saddr(&v_empty[s0]));
      to_p(s, pf);
      sm.rescale(o);
      stamp(i, 7);
    }
    const int last = (n - 1) % ST;
    wait_phase(saddr(&v_full[last]), ((n - 1) / ST) & 1);
    fence();
    gemm_pv(o, pf, sv + last * kBlockBytes);
    commit();
    wait_group<0>();
    fence_operand(o);
    arrive(saddr(&v_empty[last]));
  } else {
    if (PP) named_sync(own);
    for (int j = 0; j < n; ++j) {
      const int st = j % ST;
      const uint32_t ph = (j / ST) & 1;
      stamp(j, 0);
      wait_phase(saddr(&k_full[st]), ph);
      stamp(j, 1);
      fence();
      gemm_qk(s, qa, sk + st * kBlockBytes);
      commit();
      if (PP) named_arrive(other);
      wait_group<0>();
      fence_operand(s);
      stamp(j, 2);
      arrive(saddr(&k_empty[st]));
      sm.step(s, p.scale);
      to_p(s, pf);
      sm.rescale(o);
      stamp(j, 3);
      wait_phase(saddr(&v_full[st]), ph);
      stamp(j, 4);
      if (PP) named_sync(own);
      stamp(j, 5);
      fence();
      gemm_pv(o, pf, sv + st * kBlockBytes);
      commit();
      stamp(j, 6);
      wait_group<0>();
      fence_operand(o);
      stamp(j, 7);
      arrive(saddr(&v_empty[st]));
    }
    if (PP) named_arrive(other);
  }
  const long long t1 = clock64();
  if (threadIdx.x % 128 == 0) {
    p.out[blockIdx.x * 4 + c] = t0;
    p.out[blockIdx.x * 4 + 2 + c] = t1;
  }
  float t = sm.l0 + sm.l1;
#pragma unroll
  for (int i = 0; i < 64; ++i) t += o[i];
  if (t == 1.2345f) p.sink[threadIdx.x] = t;
}


constexpr int kMaxBlocks = 64, kSeq = kMaxBlocks * kBn;
static unsigned long long* g_out;
static float* g_sink;
static long long* g_trace;

// Median over CTAs of the consumers' cycles (earliest start to latest end) of one launch.
template <bool PP, bool IO, int ST = 2, bool TR = false>
static double run_once(const CUtensorMap& mq, const CUtensorMap& mk, const CUtensorMap& mv, int blocks,
                       int ctas) {
  const int smem = (1 + 2 * ST) * kBlockBytes + 1024;
  CHECK(cudaFuncSetAttribute(fa3_kernel<PP, IO, ST, TR>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  Params p{blocks, 0.0883883f * 1.4427f, g_out, g_sink, g_trace};
  fa3_kernel<PP, IO, ST, TR><<<ctas, 384, smem>>>(mq, mk, mv, p);
  LAUNCH_CHECK();
  std::vector<unsigned long long> h(4 * ctas);
  CHECK(cudaMemcpy(h.data(), g_out, h.size() * 8, cudaMemcpyDeviceToHost));
  std::vector<double> c(ctas);
  for (int b = 0; b < ctas; ++b)
    c[b] = (double)(std::max(h[4 * b + 2], h[4 * b + 3]) - std::min(h[4 * b], h[4 * b + 1]));
  std::sort(c.begin(), c.end());
  return c[ctas / 2];
}

template <bool PP, bool IO, int ST = 2>
static void point(const CUtensorMap& mq, const CUtensorMap& mk, const CUtensorMap& mv, int ctas) {
  std::vector<double> a, b;
  run_once<PP, IO, ST>(mq, mk, mv, kMaxBlocks, ctas);  // warms L2 and the clock
  for (int rep = 0; rep < 5; ++rep) {
    a.push_back(run_once<PP, IO, ST>(mq, mk, mv, kMaxBlocks / 2, ctas));
    b.push_back(run_once<PP, IO, ST>(mq, mk, mv, kMaxBlocks, ctas));
  }
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  const double per = (b[2] - a[2]) / (kMaxBlocks / 2);
  char param[32];
  if (ST == 2) snprintf(param, sizeof param, "pp%d_io%d_g%d", PP, IO, ctas);
  else snprintf(param, sizeof param, "pp%d_io%d_g%d_s%d", PP, IO, ctas, ST);
  row("fa3_block", param, per, "cycles");
  row("fa3_flop_per_sm_cycle", param, 4.0 * kBm * kBn * kHd / per, "flop_per_sm_cycle");
  if (ctas != 1 || ST != 2) return;
  // One traced launch of 64 blocks: the stamps of blocks 24 .. 31, relative to consumer 0's
  // stamp 0 of block 24.
  run_once<PP, IO, 2, true>(mq, mk, mv, kMaxBlocks, 1);
  std::vector<long long> t(2 * 64 * 8);
  CHECK(cudaMemcpy(t.data(), g_trace, t.size() * 8, cudaMemcpyDeviceToHost));
  const long long base = t[(0 * 64 + 24) * 8];
  for (int c = 0; c < 2; ++c)
    for (int i = 24; i < 32; ++i)
      for (int k = 0; k < 8; ++k) {
        char q[48];
        snprintf(q, sizeof q, "pp%d_io%d_wg%d_b%d_s%d", PP, IO, c, i, k);
        row("fa3_stamp", q, (double)(t[(c * 64 + i) * 8 + k] - base), "cycles");
      }
}

int main() {
  header("fa3");
  CHECK(cudaMalloc(&g_out, 4 * 132 * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&g_sink, 4096 * sizeof(float)));
  CHECK(cudaMalloc(&g_trace, 2 * 64 * 8 * sizeof(long long)));
  std::vector<uint16_t> hq((size_t)kBm * kHd), hk((size_t)kSeq * kHd), hv((size_t)kHd * kSeq);
  uint32_t x = 12345u;
  auto rnd = [&]() {
    x = x * 1664525u + 1013904223u;
    return ((float)(x >> 8) / 16777216.0f - 0.5f);
  };
  for (auto& v : hq) v = to_bf16(rnd());
  for (auto& v : hk) v = to_bf16(rnd());
  for (auto& v : hv) v = to_bf16(rnd());
  uint16_t *dq, *dk, *dv;
  CHECK(cudaMalloc(&dq, hq.size() * 2));
  CHECK(cudaMalloc(&dk, hk.size() * 2));
  CHECK(cudaMalloc(&dv, hv.size() * 2));
  CHECK(cudaMemcpy(dq, hq.data(), hq.size() * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dk, hk.data(), hk.size() * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dv, hv.data(), hv.size() * 2, cudaMemcpyHostToDevice));
  const auto promo = CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
  const auto swz = CU_TENSOR_MAP_SWIZZLE_128B;
  // Q: 128 x 128, K: seq x 128 (boxes of 128 rows x 64 columns), V^T: 128 x seq.
  const CUtensorMap mq = make_map(dq, kBm, kBm, kHd, promo, 64, swz);
  const CUtensorMap mk = make_map(dk, kSeq, kBn, kHd, promo, 64, swz);
  const CUtensorMap mv = make_map(dv, kHd, kHd, kSeq, promo, 64, swz);
  for (int ctas : {1, 132}) {
    point<true, true>(mq, mk, mv, ctas);
    point<false, true>(mq, mk, mv, ctas);
    point<true, false>(mq, mk, mv, ctas);
    point<false, false>(mq, mk, mv, ctas);
  }
  // Three K/V stages (224 KiB of shared memory): is the two-stage ring's round trip binding?
  point<true, true, 3>(mq, mk, mv, 1);
  point<false, true, 3>(mq, mk, mv, 1);
  point<true, false, 3>(mq, mk, mv, 1);
  point<false, false, 3>(mq, mk, mv, 1);
  unsigned timeouts = 0;
  CHECK(cudaMemcpyFromSymbol(&timeouts, g_timeouts, sizeof timeouts));
  printf("# mbarrier_wait_timeouts=%u\n", timeouts);
  footer();
  return 0;
}
