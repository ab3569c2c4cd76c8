// How one SM's tensor cores share themselves between two warpgroups that issue wgmma at the
// same time (FA3's two consumer warpgroups without ping-pong barriers, or a CUTLASS cooperative
// kernel). One CTA of 2 warpgroups; each issues one commit group of G back-to-back
// wgmma m64nNk16 (bf16 -> f32, into its own accumulators) and waits for it with wait_group 0.
// Warpgroup 1 starts `d` cycles after warpgroup 0 (both spin on clock64 to a common start).
//
//   wgmma_arb  param <case>_<stamp>: cycles after the common start, the median over 24
//              repetitions (the first 4 dropped) of, per warpgroup, its first warp's start
//              (`start`), its last warp's clock after the commit (`issued`) and after
//              wait_group 0 (`done`). <case> = <form0><G0>_<form1><G1>_n<N>_d<d>: form ss
//              (A and B from shared memory) or rs (A from registers); G1 = 0 is warpgroup 0 alone.
//
//   wgmma_fence  one warpgroup, 16 times: a 2,000-cycle spin, then fence (or none), 4 wgmma
//              m64nNk16 SS into the same accumulators, commit, and wait_group 0 or 1 (1: the
//              group stays pending, complete by the next round since the spin outlasts it);
//              param n<N>_wait<0|1>_<fence|nofence>_<issue|wait>: cycles from before the fence to
//              after the commit (issue), and from there to the wait's return (wait), median of
//              rounds 4 to 15. Whether a committed group not yet waited for slows the next issue.
//   wgmma_order  the order in which the SM grants HGMMA places to two warpgroups: warpgroup 1
//              starts when warpgroup 0's thread 0 has issued K of its G0 wgmmas (it arrives on an
//              mbarrier warpgroup 1 sleeps on in try_wait: no spinning warp shares the
//              partitions), then issues G1. Every warp reads clock64 right after each wgmma
//              issues (a wgmma issues once the SM has a place for it); param
//              g<G0>_<G1>_k<K>_wg<w>_i<i>: the latest of the warpgroup's four warps for its i-th
//              wgmma, and _done after wait_group 0, in cycles after warpgroup 0's first, median
//              of 20 repetitions; N = 128, SS.
// What the rows tell: if the pipe served HGMMAs first come first served, a warpgroup arriving
// while the other's HGMMAs are queued would finish after all of them; if it alternates between
// the warpgroups, the late one's few HGMMAs finish about twice their own time after it starts.
// Operands: wgmma.cu's (A 64x16, B Nx16, K-major, no swizzle, re-read by every wgmma).
// Build: python3 gen_wgmma.py 128 256 > wgmma_ops.h;
//        nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -I. -o wgmma_arb wgmma_arb.cu
#include "common.cuh"
#include "wgmma_ops.h"
#include <algorithm>
#include <vector>

constexpr int kReps = 24, kDrop = 4;

__device__ __forceinline__ uint64_t desc(uint32_t addr) {
  const uint64_t lbo = 128, sbo = 256;
  return ((addr & 0x3FFFF) >> 4) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32);
}

// One warpgroup's commit group of G wgmmas; stamps (start, issued, done) relative to t0.
template <int N, bool RS, int G>
__device__ __forceinline__ void group(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t da, uint64_t db,
                                      int sc, long long t0, long long* st) {
  st[0] = clock64() - t0;
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
  for (int k = 0; k < G; ++k) {
    if (RS) Wgmma<N>::rs(d, a, db, sc);
    else Wgmma<N>::ss(d, da, db, sc);
  }
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  st[1] = clock64() - t0;
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  st[2] = clock64() - t0;
}

template <int N, bool RS0, int G0, bool RS1, int G1>
__global__ void __launch_bounds__(256, 1) arb_kernel(int delay1, int sc, long long* out, float* sink) {
  __shared__ __align__(128) uint16_t smem[(64 + 256) * 16];
  __shared__ long long s_t0;
  for (int i = threadIdx.x; i < (64 + 256) * 16; i += blockDim.x) smem[i] = 0x3c00 + (i & 7);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const uint32_t base = (uint32_t)__cvta_generic_to_shared(smem);
  const uint64_t da = desc(base), db = desc(base + 64 * 16 * 2);
  uint32_t a[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = 0x3c003c00u + (uint32_t)sc * (uint32_t)(i + threadIdx.x % 4);
  float d[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) d[i] = 0.f;
  const int wg = threadIdx.x / 128, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int r = 0; r < kReps; ++r) {
    __syncthreads();
    if (threadIdx.x == 0) s_t0 = clock64() + 256;
    __syncthreads();
    const long long t0 = s_t0, go = t0 + (wg == 1 ? delay1 : 0);
    while (clock64() < go) {
    }
    long long st[3] = {0, 0, 0};
    if (wg == 0) group<N, RS0, G0>(d, a, da, db, sc, t0, st);
    else if (G1 > 0) group<N, RS1, G1 == 0 ? 1 : G1>(d, a, da, db, sc, t0, st);
    if (lane == 0)
      for (int k = 0; k < 3; ++k) out[(r * 8 + warp) * 3 + k] = st[k];
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) s += d[i];
  if (s == 1.2345f) sink[threadIdx.x] = s;
}

template <int N, int WAIT, bool FENCE>
__global__ void __launch_bounds__(128, 1) fence_kernel(int sc, long long* out, float* sink) {
  __shared__ __align__(128) uint16_t smem[(64 + 256) * 16];
  for (int i = threadIdx.x; i < (64 + 256) * 16; i += blockDim.x) smem[i] = 0x3c00 + (i & 7);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const uint32_t base = (uint32_t)__cvta_generic_to_shared(smem);
  const uint64_t da = desc(base), db = desc(base + 64 * 16 * 2);
  float d[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) d[i] = 0.f;
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  for (int r = 0; r < 16; ++r) {
    const long long go = clock64() + 2000;
    while (clock64() < go) {
    }
    const long long t0 = clock64();
    if (FENCE || r == 0) asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int k = 0; k < 4; ++k) Wgmma<N>::ss(d, da, db, sc);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    const long long t1 = clock64();
    if (WAIT == 0) asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    else asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
    const long long t2 = clock64();
    if (threadIdx.x == 0) {
      out[2 * r] = t1 - t0;
      out[2 * r + 1] = t2 - t1;
    }
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  float s = 0;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) s += d[i];
  if (s == 1.2345f) sink[threadIdx.x] = s;
}

// wgmma_order: warpgroup w issues G wgmmas (SS, N = 128), each followed by a clock64 read;
// warpgroup 0's thread 0 releases warpgroup 1 after its K-th. st[i] for i < G, st[S] done.
template <int G, int S>
__device__ __forceinline__ void order_group(float (&d)[64], uint64_t da, uint64_t db, int K, uint32_t go,
                                            long long* st) {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
  for (int k = 0; k < G; ++k) {
    if (k == K && threadIdx.x == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(go) : "memory");
    Wgmma<128>::ss(d, da, db, 1);
    st[k] = clock64();
  }
  if (K >= G && threadIdx.x == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(go) : "memory");
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  st[S] = clock64();
}

template <int G0, int G1>
__global__ void __launch_bounds__(256, 1) order_kernel(int K, long long* out, float* sink) {
  __shared__ __align__(128) uint16_t smem[(64 + 256) * 16];
  __shared__ __align__(8) uint64_t go;
  for (int i = threadIdx.x; i < (64 + 256) * 16; i += blockDim.x) smem[i] = 0x3c00 + (i & 7);
  const uint32_t bar = (uint32_t)__cvta_generic_to_shared(&go);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  const uint32_t base = (uint32_t)__cvta_generic_to_shared(smem);
  const uint64_t da = desc(base), db = desc(base + 64 * 16 * 2);
  float d[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) d[i] = 0.f;
  const int wg = threadIdx.x / 128, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  constexpr int G = G0 > G1 ? G0 : G1;
  for (int r = 0; r < kReps; ++r) {
    __syncthreads();
    if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar));
    __syncthreads();
    long long st[G + 1];
    if (wg == 0) {
      order_group<G0, G>(d, da, db, K, bar, st);
    } else {
      for (;;) {
        uint32_t ok;
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n"
                     " selp.u32 %0, 1, 0, p;\n}\n" : "=r"(ok) : "r"(bar) : "memory");
        if (ok) break;
      }
      order_group<G1, G>(d, da, db, G1, bar, st);
    }
    // Unrolled with a constant bound so that the stamps stay in registers.
    const int g = wg == 0 ? G0 : G1;
    if (lane == 0) {
#pragma unroll
      for (int k = 0; k <= G; ++k)
        if (k < g || k == G) out[(r * 8 + warp) * (G + 1) + (k == G ? g : k)] = st[k];
    }
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < 64; ++i) s += d[i];
  if (s == 1.2345f) sink[threadIdx.x] = s;
}

static double median(std::vector<long long> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? (double)v[n / 2] : 0.5 * (double)(v[n / 2 - 1] + v[n / 2]);
}

template <int N, bool RS0, int G0, bool RS1, int G1>
static void arb(int delay1, long long* d_out, float* sink) {
  arb_kernel<N, RS0, G0, RS1, G1><<<1, 256>>>(delay1, 1, d_out, sink);  // warm-up
  LAUNCH_CHECK();
  arb_kernel<N, RS0, G0, RS1, G1><<<1, 256>>>(delay1, 1, d_out, sink);
  LAUNCH_CHECK();
  std::vector<long long> h(kReps * 8 * 3);
  CHECK(cudaMemcpy(h.data(), d_out, h.size() * sizeof(long long), cudaMemcpyDeviceToHost));
  char name[64];
  snprintf(name, sizeof name, "%s%d_%s%d_n%d_d%d", RS0 ? "rs" : "ss", G0, RS1 ? "rs" : "ss", G1, N, delay1);
  for (int wg = 0; wg < (G1 > 0 ? 2 : 1); ++wg) {
    // Per repetition: the warpgroup's earliest start, latest commit and latest completion.
    std::vector<long long> start, issued, done;
    for (int r = kDrop; r < kReps; ++r) {
      long long s = 1LL << 62, i = 0, dn = 0;
      for (int w = wg * 4; w < wg * 4 + 4; ++w) {
        const long long* st = &h[(r * 8 + w) * 3];
        s = std::min(s, st[0]);
        i = std::max(i, st[1]);
        dn = std::max(dn, st[2]);
      }
      start.push_back(s);
      issued.push_back(i);
      done.push_back(dn);
    }
    const char* stamps[3] = {"start", "issued", "done"};
    std::vector<long long>* v[3] = {&start, &issued, &done};
    for (int k = 0; k < 3; ++k) {
      char p[96];
      snprintf(p, sizeof p, "%s_wg%d_%s", name, wg, stamps[k]);
      row("wgmma_arb", p, median(*v[k]), "cycles");
    }
  }
}

template <int G0, int G1>
static void order(int K, long long* d_out, float* sink) {
  constexpr int G = G0 > G1 ? G0 : G1;
  order_kernel<G0, G1><<<1, 256>>>(K, d_out, sink);  // warm-up
  LAUNCH_CHECK();
  order_kernel<G0, G1><<<1, 256>>>(K, d_out, sink);
  LAUNCH_CHECK();
  std::vector<long long> h(kReps * 8 * (G + 1));
  CHECK(cudaMemcpy(h.data(), d_out, h.size() * sizeof(long long), cudaMemcpyDeviceToHost));
  // Per repetition, per warpgroup and stamp: the latest of its four warps, relative to
  // warpgroup 0's first wgmma (its earliest warp).
  for (int wg = 0; wg < 2; ++wg) {
    const int g = wg == 0 ? G0 : G1;
    for (int k = 0; k <= g; ++k) {
      std::vector<long long> v;
      for (int r = kDrop; r < kReps; ++r) {
        long long t0 = 1LL << 62, t = 0;
        for (int w = 0; w < 4; ++w) t0 = std::min(t0, h[(r * 8 + w) * (G + 1)]);
        for (int w = wg * 4; w < wg * 4 + 4; ++w) t = std::max(t, h[(r * 8 + w) * (G + 1) + k]);
        v.push_back(t - t0);
      }
      char p[64];
      if (k < g) snprintf(p, sizeof p, "g%d_%d_k%d_wg%d_i%d", G0, G1, K, wg, k);
      else snprintf(p, sizeof p, "g%d_%d_k%d_wg%d_done", G0, G1, K, wg);
      row("wgmma_order", p, median(v), "cycles");
    }
  }
}

template <int N, int WAIT, bool FENCE>
static void fence_case(long long* d_out, float* sink) {
  fence_kernel<N, WAIT, FENCE><<<1, 128>>>(1, d_out, sink);
  LAUNCH_CHECK();
  long long h[32];
  CHECK(cudaMemcpy(h, d_out, sizeof h, cudaMemcpyDeviceToHost));
  std::vector<long long> issue, wait;
  for (int r = 4; r < 16; ++r) {
    issue.push_back(h[2 * r]);
    wait.push_back(h[2 * r + 1]);
  }
  char p[64];
  snprintf(p, sizeof p, "n%d_wait%d_%s_issue", N, WAIT, FENCE ? "fence" : "nofence");
  row("wgmma_fence", p, median(issue), "cycles");
  snprintf(p, sizeof p, "n%d_wait%d_%s_wait", N, WAIT, FENCE ? "fence" : "nofence");
  row("wgmma_fence", p, median(wait), "cycles");
}

int main() {
  header("wgmma_arb");
  long long* d_out;
  CHECK(cudaMalloc(&d_out, kReps * 8 * 3 * sizeof(long long)));
  float* sink;
  CHECK(cudaMalloc(&sink, 256 * sizeof(float)));
  // Alone: each form's group time.
  arb<128, false, 8, false, 0>(0, d_out, sink);
  arb<128, false, 16, false, 0>(0, d_out, sink);
  arb<128, true, 8, false, 0>(0, d_out, sink);
  arb<128, false, 4, false, 0>(0, d_out, sink);
  arb<256, false, 8, false, 0>(0, d_out, sink);
  // Together, equal groups, from the same start or the second later.
  for (int dl : {0, 128, 256}) arb<128, false, 8, false, 8>(dl, d_out, sink);
  // A long group and a short one arriving while the long one's HGMMAs are queued.
  for (int dl : {0, 100, 200, 400}) arb<128, false, 16, false, 4>(dl, d_out, sink);
  arb<128, false, 32, false, 4>(300, d_out, sink);
  // FA3's mix without ping-pong: one warpgroup's S = Q K^T (SS) beside the other's P V (RS).
  for (int dl : {0, 200}) arb<128, false, 8, true, 8>(dl, d_out, sink);
  arb<128, true, 16, false, 4>(200, d_out, sink);
  arb<128, false, 16, true, 4>(200, d_out, sink);
  // Wider wgmmas: fewer, longer HGMMAs.
  arb<256, false, 8, false, 2>(200, d_out, sink);
  // The order of places: warpgroup 1 released after K of warpgroup 0's wgmmas.
  long long* d_order;
  CHECK(cudaMalloc(&d_order, kReps * 8 * 17 * sizeof(long long)));
  for (int k : {0, 2, 4, 7, 8}) order<8, 8>(k, d_order, sink);
  for (int k : {4, 8, 12}) order<16, 4>(k, d_order, sink);
  order<16, 16>(8, d_order, sink);
  fence_case<128, 0, true>(d_out, sink);
  fence_case<128, 1, true>(d_out, sink);
  fence_case<128, 0, false>(d_out, sink);
  fence_case<128, 1, false>(d_out, sink);
  fence_case<256, 0, true>(d_out, sink);
  fence_case<256, 1, true>(d_out, sink);
  fence_case<256, 1, false>(d_out, sink);
  footer();
  return 0;
}
