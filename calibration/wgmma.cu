// wgmma m64nNk16 (bf16 x bf16 -> f32) on one SM, cycles from clock64() inside the kernel.
//   wgmma_{ss,rs}_{1,2}wg : cycles per wgmma per SM, back to back: each warpgroup issues groups
//                           of 32 wgmmas into its accumulators (wgmma.fence, 32 x wgmma,
//                           commit, wait_group 1, so one group stays in flight), 1 or 2
//                           warpgroups; param = N
//   wgmma_{ss,rs}_lat     : cycles per iteration of fence, one wgmma, commit, wait_group 0 by
//                           one warpgroup (issue to completion plus the three fences' cost)
// Operands: A 64x16 and B Nx16, K-major, no swizzle (8x16-byte core matrices stored
// contiguously, which reads conflict-free). The data are small non-zero bf16 values.
// Build: python3 gen_wgmma.py 8 16 ... 256 > wgmma_ops.h;
//        nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -I. -o wgmma wgmma.cu
#include "common.cuh"
#include "wgmma_ops.h"

__device__ __forceinline__ uint64_t desc(uint32_t addr) {
  // Matrix descriptor: start address, leading-dimension byte offset (between the two K core
  // matrices: 128 B), stride-dimension byte offset (between 8-row groups: 256 B), no swizzle.
  const uint64_t lbo = 128, sbo = 256;
  return ((addr & 0x3FFFF) >> 4) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32);
}

template <int N, bool RS, int PER>
__global__ void __launch_bounds__(256, 1) wgmma_kernel(int iters, int sc, unsigned long long* cyc, float* sink) {
  __shared__ __align__(128) uint16_t smem[(64 + 256) * 16];
  for (int i = threadIdx.x; i < (64 + 256) * 16; i += blockDim.x) smem[i] = 0x3c00 + (i & 7);  // ~1.0 in bf16
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const uint32_t base = (uint32_t)__cvta_generic_to_shared(smem);
  const uint64_t da = desc(base), db = desc(base + 64 * 16 * 2);
  // The A fragment (RS) comes from a run-time value: with constants, ptxas 13.0 re-creates the
  // registers between wgmmas and serializes them (C7511, "insufficient register resources").
  uint32_t a[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = 0x3c003c00u + (uint32_t)sc * (uint32_t)(i + threadIdx.x % 4);
  float d[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) d[i] = 0.f;
  __syncthreads();
  long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int k = 0; k < PER; ++k) {
      if (RS) Wgmma<N>::rs(d, a, db, sc);
      else Wgmma<N>::ss(d, da, db, sc);
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    if (PER == 1) asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    else asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) *cyc = t1 - t0;
  float s = 0;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) s += d[i];
  if (s == 1.2345f) sink[threadIdx.x] = s;  // keeps the accumulators
}

template <int N, bool RS, int PER>
static double cycles_per_wgmma(int warpgroups, int iters, unsigned long long* d_cyc, float* sink) {
  wgmma_kernel<N, RS, PER><<<1, 128 * warpgroups>>>(iters, 1, d_cyc, sink);  // warm-up
  LAUNCH_CHECK();
  wgmma_kernel<N, RS, PER><<<1, 128 * warpgroups>>>(iters, 1, d_cyc, sink);
  LAUNCH_CHECK();
  unsigned long long c;
  CHECK(cudaMemcpy(&c, d_cyc, sizeof c, cudaMemcpyDeviceToHost));
  return (double)c / ((double)iters * PER * warpgroups);
}

template <int N>
static void sweep(unsigned long long* d_cyc, float* sink) {
  row("wgmma_ss_1wg", N, cycles_per_wgmma<N, false, 32>(1, 32, d_cyc, sink), "cycles_per_wgmma");
  row("wgmma_rs_1wg", N, cycles_per_wgmma<N, true, 32>(1, 32, d_cyc, sink), "cycles_per_wgmma");
  row("wgmma_ss_2wg", N, cycles_per_wgmma<N, false, 32>(2, 32, d_cyc, sink), "cycles_per_wgmma");
  row("wgmma_rs_2wg", N, cycles_per_wgmma<N, true, 32>(2, 32, d_cyc, sink), "cycles_per_wgmma");
  row("wgmma_ss_lat", N, cycles_per_wgmma<N, false, 1>(1, 256, d_cyc, sink), "cycles");
  row("wgmma_rs_lat", N, cycles_per_wgmma<N, true, 1>(1, 256, d_cyc, sink), "cycles");
}

int main() {
  header("wgmma");
  unsigned long long* d_cyc;
  CHECK(cudaMalloc(&d_cyc, sizeof(unsigned long long)));
  float* sink;
  CHECK(cudaMalloc(&sink, 256 * sizeof(float)));
  sweep<8>(d_cyc, sink);
  sweep<16>(d_cyc, sink);
  sweep<24>(d_cyc, sink);
  sweep<32>(d_cyc, sink);
  sweep<48>(d_cyc, sink);
  sweep<64>(d_cyc, sink);
  sweep<96>(d_cyc, sink);
  sweep<128>(d_cyc, sink);
  sweep<192>(d_cyc, sink);
  sweep<256>(d_cyc, sink);
  footer();
  return 0;
}
