// What a loop's taken branch costs, and whom it stalls: the model's `Loop` costs nothing per
// trip, where fundamentals.cu's div_trips leaves about 9.5 cycles a trip beyond the SASS's
// stall counts (and div_branch about 11 per taken branch). One CTA; W warps a partition
// (4 * W warps), each running a loop kept rolled (`#pragma unroll 1`) of B FFMAs a trip, every
// warp its own accumulators.
//   trip_dep,b<B>_w<W>      cycles per trip: B dependent FFMAs (one chain), latency-bound, so
//                           another warp of the partition can fill the gaps
//   trip_indep,b<B>_w<W>    cycles per trip: B FFMAs on 8 chains (independent within a trip),
//                           issue-bound at one warp a partition
//   straight_dep,b<B>_w<W>  512 of the same FFMAs unrolled (no branch), cycles per B: the
//                           control. A trip's cost beyond its straight-line time is the loop's
//                           own instructions (ISETP, IADD, its BRA's stall count; see
//                           `cuobjdump -sass branch`) and the taken branch; with W > 1 whether
//                           the branch blocks only its warp or the partition
//   straight_indep,b<B>_w<W>
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o branch branch.cu
#include <initializer_list>
#include "common.cuh"

constexpr int kChains = 8;
constexpr int kWork = 4096;     // FFMAs a warp issues in a loop's trips
constexpr int kStraight = 512;  // FFMAs of the straight-line control (8 KiB of code: larger
                                // would time the instruction cache)

template <int B, bool DEP>
__device__ __forceinline__ void body(float (&x)[kChains], float a, float b) {
#pragma unroll
  for (int k = 0; k < B; ++k) {
    float& r = x[DEP ? 0 : k % kChains];
    asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(r) : "f"(a), "f"(b));
  }
}

// LOOP: kWork / B trips of a rolled loop; otherwise kStraight / B bodies in straight-line code.
template <int B, bool DEP, bool LOOP>
__global__ void trip_kernel(float a, float b, unsigned long long* cyc, float* sink) {
  float x[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) x[c] = threadIdx.x + c;
  const int trips = LOOP ? kWork / B : kStraight / B;
  __syncthreads();
  const long long t0 = clock64();
  if (LOOP) {
#pragma unroll 1
    for (int t = 0; t < trips; ++t) body<B, DEP>(x, a, b);
  } else {
#pragma unroll
    for (int t = 0; t < kStraight / B; ++t) body<B, DEP>(x, a, b);
  }
  __syncthreads();
  const long long t1 = clock64();
  if (threadIdx.x == 0) *cyc = (unsigned long long)(t1 - t0);
  float s = 0.f;
#pragma unroll
  for (int c = 0; c < kChains; ++c) s += x[c];
  if (s == 1.2345f) sink[threadIdx.x] = s;
}

template <int B, bool DEP, bool LOOP>
static void run(const char* test, int w, unsigned long long* d, float* sink) {
  for (int rep = 0; rep < 2; ++rep) {
    trip_kernel<B, DEP, LOOP><<<1, 128 * w>>>(0.999f, 1e-3f, d, sink);
    LAUNCH_CHECK();
  }
  unsigned long long c = 0;
  CHECK(cudaMemcpy(&c, d, sizeof c, cudaMemcpyDeviceToHost));
  char p[32];
  snprintf(p, sizeof p, "b%d_w%d", B, w);
  row(test, p, (double)c / ((LOOP ? kWork : kStraight) / B), "cycles_per_trip");
}

template <int B>
static void sizes(unsigned long long* d, float* sink) {
  for (int w : {1, 2, 4}) {
    run<B, true, true>("trip_dep", w, d, sink);
    run<B, false, true>("trip_indep", w, d, sink);
    run<B, true, false>("straight_dep", w, d, sink);
    run<B, false, false>("straight_indep", w, d, sink);
  }
}

int main() {
  header("branch");
  unsigned long long* d;
  CHECK(cudaMalloc(&d, sizeof(unsigned long long)));
  float* sink;
  CHECK(cudaMalloc(&sink, 512 * sizeof(float)));
  sizes<8>(d, sink);
  sizes<16>(d, sink);
  sizes<32>(d, sink);
  sizes<64>(d, sink);
  footer();
  return 0;
}
