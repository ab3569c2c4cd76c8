// The fundamentals on one SM (issue 19), timed with clock64 by thread 0 between two
// __syncthreads(); each kernel runs once untimed first (warm-up, and L2-resident data).
// The twins are scenarios/coalescing.ron, bank_conflicts.ron and divergence.ron.
//   gmem_stride   : cycles per warp-load per SM; one CTA of 32 warps, each issuing 16
//                   independent 4-byte loads (ld.global.cg) with lane L at word L * stride of
//                   its own 32 * stride words (nothing read twice), from L2; param = stride
//                   1..32 (coalescing.ron's cycles / 512)
//   gmem_stride_bw: the bytes used (128 a warp-load) per cycle per SM of the same runs
//   smem_stride   : cycles per warp-load per SM; 32 warps x 64 x 32 independent 4-byte
//                   ld.shared, lane L at word L * stride; param = stride 1..33
//                   (bank_conflicts.ron's cycles / 2048 = wavefronts)
//   smem_column   : the same for column u % 32 of a 32 x (32 + pad) float tile
//                   (tile[lane][u]); param pad0 / pad1 (bank_conflicts.ron, layout = 1)
//   div_branch    : cycles per round of 4 warps (one per partition), each round an if/else
//                   whose paths are 32 dependent FFMAs each; param uniform (the condition is
//                   warp % 2: one path per warp) or parity (lane % 2: both paths per warp)
//                   (divergence.ron modes 0 and 1, cycles / iters)
//   div_trips     : cycles of 4 warps running a loop of 32 dependent FFMAs per trip; param
//                   lanes (lane L runs 1 + L * 31 / 31 = L + 1 trips: the warp runs 32) or
//                   uniform (every lane 32 trips) (divergence.ron modes 2 and 3)
// The FFMAs are asm volatile, and the two paths' asm differs, so that the compiler neither
// merges nor speculates the paths. If div_branch's uniform row comes out as high as its parity
// row, check the SASS (cuobjdump -sass fundamentals | grep -E 'BSSY|BRA') for a predicated
// if/else.
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o fundamentals fundamentals.cu
#include "common.cuh"

constexpr int kWarps = 32, kThreads = kWarps * 32;
constexpr int kGmemLoads = 16;  // per warp, as coalescing.ron's iters
constexpr int kMaxStride = 32;  // words
constexpr int kSmemIters = 64, kUnroll = 32;
constexpr int kChain = 32;      // dependent FFMAs per path or trip, as divergence.ron's n
constexpr int kDivThreads = 128;

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}

// kChain dependent FFMAs on x. FTZ picks the .ftz form (same pipe and latency): the two paths
// of an if/else then differ in their asm text, so the compiler cannot merge them into one chain
// with selected operands.
template <bool FTZ>
__device__ __forceinline__ void ffma_chain(float& x, float a, float b) {
#pragma unroll
  for (int k = 0; k < kChain; ++k) {
    if (FTZ) asm volatile("fma.rn.ftz.f32 %0, %0, %1, %2;" : "+f"(x) : "f"(a), "f"(b));
    else asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x) : "f"(a), "f"(b));
  }
}

// ---------------------------------------------------------------- coalescing

__global__ void __launch_bounds__(kThreads) gmem_stride_kernel(const float* __restrict__ p, int stride,
                                                               unsigned long long* cyc, float* sink) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float v[kGmemLoads];
  __syncthreads();
  long long t0 = clock64();
#pragma unroll
  for (int k = 0; k < kGmemLoads; ++k) {
    const size_t word = ((size_t)(warp * kGmemLoads + k) * 32 + lane) * (size_t)stride;
    v[k] = __ldcg(p + word);
  }
  float acc = 0.f;
#pragma unroll
  for (int k = 0; k < kGmemLoads; ++k) acc += v[k];
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) *cyc = (unsigned long long)(t1 - t0);
  if (acc == 1.2345f) sink[threadIdx.x] = acc;  // keeps the loads alive
}

// ---------------------------------------------------------------- bank conflicts

// COLUMN 0: lane L at word L * arg; COLUMN 1: word L * (32 + arg) + u (a tile's column u).
template <int COLUMN>
__global__ void __launch_bounds__(kThreads) smem_kernel(int arg, unsigned long long* cyc, unsigned* sink) {
  __shared__ unsigned words[8192];
  for (int i = threadIdx.x; i < 8192; i += blockDim.x) words[i] = i;
  const unsigned lane = threadIdx.x % 32;
  const unsigned base = smem_addr(words);
  unsigned acc = 0;
  __syncthreads();
  long long t0 = clock64();
  for (int i = 0; i < kSmemIters; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const unsigned word = COLUMN ? lane * (32u + arg) + u : (lane * arg) % 8192u;
      unsigned v;
      asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(v) : "r"(base + 4u * word));
      acc ^= v;
    }
  }
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) *cyc = (unsigned long long)(t1 - t0);
  if (acc == 0x12345678u) sink[threadIdx.x] = acc;
}

// ---------------------------------------------------------------- divergence

// PARITY 0: the condition is the warp's parity (uniform in a warp); 1: the lane's.
template <int PARITY>
__global__ void branch_kernel(int iters, float a, float b, unsigned long long* cyc, float* sink) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const bool take = PARITY ? lane % 2 == 0 : warp % 2 == 0;
  float x = threadIdx.x * 1e-3f;
  __syncthreads();
  long long t0 = clock64();
#pragma unroll 1
  for (int i = 0; i < iters; ++i) {
    if (take) ffma_chain<false>(x, a, b);
    else ffma_chain<true>(x, b, a);
  }
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) *cyc = (unsigned long long)(t1 - t0);
  if (x == 1.2345f) sink[threadIdx.x] = x;
}

// LANES 1: lane L runs 1 + L * (trips - 1) / 31 trips; 0: every lane `trips`.
template <int LANES>
__global__ void trips_kernel(int trips, float a, float b, unsigned long long* cyc, float* sink) {
  const int lane = threadIdx.x % 32;
  const int mine = LANES ? 1 + lane * (trips - 1) / 31 : trips;
  float x = threadIdx.x * 1e-3f;
  __syncthreads();
  long long t0 = clock64();
#pragma unroll 1
  for (int i = 0; i < mine; ++i) ffma_chain<false>(x, a, b);
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) *cyc = (unsigned long long)(t1 - t0);
  if (x == 1.2345f) sink[threadIdx.x] = x;
}

// ---------------------------------------------------------------- host

// Launches `launch` twice (the first warms up) and returns the second run's cycles.
template <typename F>
static double timed(F launch, unsigned long long* d_cyc) {
  for (int rep = 0; rep < 2; ++rep) {
    launch();
    LAUNCH_CHECK();
  }
  unsigned long long c = 0;
  CHECK(cudaMemcpy(&c, d_cyc, sizeof c, cudaMemcpyDeviceToHost));
  return (double)c;
}

int main() {
  header("fundamentals");
  unsigned long long* d_cyc;
  CHECK(cudaMalloc(&d_cyc, sizeof(unsigned long long)));
  float* fsink;
  CHECK(cudaMalloc(&fsink, kThreads * sizeof(float)));
  unsigned* usink;
  CHECK(cudaMalloc(&usink, kThreads * sizeof(unsigned)));

  {  // Coalescing from L2: the buffer holds the widest stride's words (2 MiB).
    const size_t words = (size_t)kWarps * kGmemLoads * 32 * kMaxStride;
    float* buf;
    CHECK(cudaMalloc(&buf, words * sizeof(float)));
    CHECK(cudaMemset(buf, 0, words * sizeof(float)));
    CHECK(cudaDeviceSynchronize());
    for (int stride = 1; stride <= kMaxStride; ++stride) {
      const double c = timed([&] { gmem_stride_kernel<<<1, kThreads>>>(buf, stride, d_cyc, fsink); }, d_cyc);
      const double loads = (double)kWarps * kGmemLoads;
      row("gmem_stride", stride, c / loads, "cycles_per_warp_load_per_sm");
      row("gmem_stride_bw", stride, 128.0 * loads / c, "used_bytes_per_clk_per_sm");
    }
    CHECK(cudaFree(buf));
  }
  {  // Bank conflicts.
    const double loads = (double)kWarps * kSmemIters * kUnroll;
    for (int stride = 1; stride <= 33; ++stride) {
      const double c = timed([&] { smem_kernel<0><<<1, kThreads>>>(stride, d_cyc, usink); }, d_cyc);
      row("smem_stride", stride, c / loads, "cycles_per_warp_load_per_sm");
    }
    for (int pad = 0; pad <= 1; ++pad) {
      const double c = timed([&] { smem_kernel<1><<<1, kThreads>>>(pad, d_cyc, usink); }, d_cyc);
      row("smem_column", pad ? "pad1" : "pad0", c / loads, "cycles_per_warp_load_per_sm");
    }
  }
  {  // Divergence: 4 warps, one per partition.
    const int iters = 16, trips = 32;
    const float a = 0.999f, b = 1e-3f;
    double c = timed([&] { branch_kernel<0><<<1, kDivThreads>>>(iters, a, b, d_cyc, fsink); }, d_cyc);
    row("div_branch", "uniform", c / iters, "cycles_per_round");
    c = timed([&] { branch_kernel<1><<<1, kDivThreads>>>(iters, a, b, d_cyc, fsink); }, d_cyc);
    row("div_branch", "parity", c / iters, "cycles_per_round");
    c = timed([&] { trips_kernel<1><<<1, kDivThreads>>>(trips, a, b, d_cyc, fsink); }, d_cyc);
    row("div_trips", "lanes", c, "cycles");
    c = timed([&] { trips_kernel<0><<<1, kDivThreads>>>(trips, a, b, d_cyc, fsink); }, d_cyc);
    row("div_trips", "uniform", c, "cycles");
  }
  footer();
  CHECK(cudaFree(d_cyc));
  CHECK(cudaFree(fsink));
  CHECK(cudaFree(usink));
  return 0;
}
