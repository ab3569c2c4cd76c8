// wgmma's rate by input type on one SM, cycles from clock64() inside the kernel: bf16 (k16, the
// control: wgmma.cu's rows), e4m3 (k32) and tf32 (k8), every shape m64nNk* reading 32 bytes of
// K a row from shared memory (SS), so the data moved per instruction is the same and only the
// tensor core's rate differs. The model takes fp8 at twice and tf32 at half bf16's FLOP rate
// (the H100 datasheet's dense figures); these rows measure it.
//   wgmma_dtype,<dtype>_n<N>_<W>wg  cycles per wgmma per SM, back to back: each of W warpgroups
//                                   issues groups of 32 wgmmas into its accumulators (fence,
//                                   32 x wgmma, commit, wait_group 1), as wgmma.cu's *_ss_*wg
//   wgmma_dtype,<dtype>_n<N>_lat    cycles per iteration of fence, one wgmma, commit, wait 0
// Build: python3 gen_wgmma.py 64 128 256 e4m3:64 e4m3:128 e4m3:256 tf32:64 tf32:128 tf32:256
//          > wgmma_ops.h; nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -I. -o wgmma_dtype wgmma_dtype.cu
#include "common.cuh"
#include "wgmma_ops.h"

// Start address, leading-dimension byte offset 128 (between the two 16-byte K core matrices),
// stride-dimension byte offset 256 (between 8-row groups), no swizzle: the same for all three
// types, since each row holds 32 bytes of K.
__device__ __forceinline__ uint64_t desc(uint32_t addr) {
  const uint64_t lbo = 128, sbo = 256;
  return ((addr & 0x3FFFF) >> 4) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32);
}

template <template <int> class Op, int N, int PER>
__global__ void __launch_bounds__(256, 1) dtype_kernel(int iters, int sc, unsigned long long* cyc, float* sink) {
  // 32 bytes a row for A (64 rows) and B (256 rows); small values in every type's encoding.
  __shared__ __align__(128) uint32_t smem[(64 + 256) * 8];
  for (int i = threadIdx.x; i < (64 + 256) * 8; i += blockDim.x) smem[i] = 0x30303030u + (i & 3);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const uint32_t base = (uint32_t)__cvta_generic_to_shared(smem);
  const uint64_t da = desc(base), db = desc(base + 64 * 32);
  float d[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) d[i] = 0.f;
  __syncthreads();
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int k = 0; k < PER; ++k) Op<N>::ss(d, da, db, sc);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    if (PER == 1) asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    else asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  __syncthreads();
  const long long t1 = clock64();
  if (threadIdx.x == 0) *cyc = t1 - t0;
  float s = 0;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) s += d[i];
  if (s == 1.2345f) sink[threadIdx.x] = s;  // keeps the accumulators
}

template <template <int> class Op, int N, int PER>
static double cycles_per_wgmma(int warpgroups, int iters, unsigned long long* d_cyc, float* sink) {
  for (int rep = 0; rep < 2; ++rep) {  // the first run warms the clock up
    dtype_kernel<Op, N, PER><<<1, 128 * warpgroups>>>(iters, 1, d_cyc, sink);
    LAUNCH_CHECK();
  }
  unsigned long long c;
  CHECK(cudaMemcpy(&c, d_cyc, sizeof c, cudaMemcpyDeviceToHost));
  return (double)c / ((double)iters * PER * warpgroups);
}

template <template <int> class Op, int N>
static void sweep(const char* dtype, unsigned long long* d_cyc, float* sink) {
  char p[32];
  snprintf(p, sizeof p, "%s_n%d_1wg", dtype, N);
  row("wgmma_dtype", p, cycles_per_wgmma<Op, N, 32>(1, 32, d_cyc, sink), "cycles_per_wgmma");
  snprintf(p, sizeof p, "%s_n%d_2wg", dtype, N);
  row("wgmma_dtype", p, cycles_per_wgmma<Op, N, 32>(2, 32, d_cyc, sink), "cycles_per_wgmma");
  snprintf(p, sizeof p, "%s_n%d_lat", dtype, N);
  row("wgmma_dtype", p, cycles_per_wgmma<Op, N, 1>(1, 256, d_cyc, sink), "cycles");
}

// Wgmma<N> has an RS form as well; only its SS form is timed here.
template <int N> struct Bf16 {
  static __device__ __forceinline__ void ss(float (&d)[N / 2], uint64_t a, uint64_t b, int sc) {
    Wgmma<N>::ss(d, a, b, sc);
  }
};

int main() {
  header("wgmma_dtype");
  unsigned long long* d_cyc;
  CHECK(cudaMalloc(&d_cyc, sizeof(unsigned long long)));
  float* sink;
  CHECK(cudaMalloc(&sink, 256 * sizeof(float)));
  sweep<Bf16, 64>("bf16", d_cyc, sink);
  sweep<Bf16, 128>("bf16", d_cyc, sink);
  sweep<Bf16, 256>("bf16", d_cyc, sink);
  sweep<WgmmaE4m3, 64>("e4m3", d_cyc, sink);
  sweep<WgmmaE4m3, 128>("e4m3", d_cyc, sink);
  sweep<WgmmaE4m3, 256>("e4m3", d_cyc, sink);
  sweep<WgmmaTf32, 64>("tf32", d_cyc, sink);
  sweep<WgmmaTf32, 128>("tf32", d_cyc, sink);
  sweep<WgmmaTf32, 256>("tf32", d_cyc, sink);
  footer();
  return 0;
}
