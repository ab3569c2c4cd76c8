// Which warp a partition's scheduler issues when several are ready: greedy-then-oldest (the
// warp that issued last goes on until it stalls, then the oldest) or round-robin. The model's
// `sm.scheduler` was assumed (GPGPU-Sim's usual choice), never measured.
//
// Warps w and w + 4 of a CTA share a partition (warp w sits on partition w % 4). `W` warps of
// partition 0 (warps 0, 4, 8, ..) pass a __syncthreads, then each issues `N` instructions with
// no dependence the scheduler waits for (8 independent FFMA chains: one warp alone may issue
// every cycle), stamping clock64 at its start, when it is half
// way and at its end. The other warps exit after the barrier. (The compiler gives each FFMA a
// stall count of 1 and its yield bit: calibration/sass.py sched.)
//
// Rows (test,param,value,unit):
//   sched_alone      n<N>                  cycles one warp alone takes for its N instructions
//   sched_<what>     w<W>_warp<k>_n<N>     warp k of W (k = 0 the oldest): `half` and `end`
//                                          cycles from the common start (the earliest stamp)
// Greedy-then-oldest: the oldest warp ends near `sched_alone` and the others after it, one by
// one; round-robin: all end together, near W times it.
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o sched sched.cu
#include "common.cuh"
#include <algorithm>
#include <vector>

template <int N>
__global__ void sched_kernel(int warps, long long* out, float* sink) {
  const int w = threadIdx.x / 32;
  __syncthreads();
  if (w % 4 != 0 || w / 4 >= warps) return;
  float a[8];
  for (int c = 0; c < 8; ++c) a[c] = threadIdx.x * 0.001f + c;
  long long t0 = clock64(), th = 0;
#pragma unroll
  for (int i = 0; i < N / 8; ++i) {
#pragma unroll
    for (int c = 0; c < 8; ++c) a[c] = fmaf(a[c], 1.0001f, 0.5f);
    if (i == N / 16) th = clock64();
  }
  long long t1 = clock64();
  float s = 0;
  for (int c = 0; c < 8; ++c) s += a[c];
  if (threadIdx.x % 32 == 0) {
    const int k = w / 4;
    out[3 * k] = t0;
    out[3 * k + 1] = th;
    out[3 * k + 2] = t1;
  }
  if (s == 1.2345f) sink[threadIdx.x] = s;
}

template <int N>
static void run(long long* d, float* sink) {
  for (int warps : {1, 2, 3, 4}) {
    std::vector<long long> h(3 * warps);
    for (int rep = 0; rep < 3; ++rep) {  // the last of three (warm clock and caches)
      sched_kernel<N><<<1, 32 * 4 * warps>>>(warps, d, sink);
      LAUNCH_CHECK();
    }
    CHECK(cudaMemcpy(h.data(), d, h.size() * sizeof(long long), cudaMemcpyDeviceToHost));
    long long start = h[0];
    for (int k = 0; k < warps; ++k) start = std::min(start, h[3 * k]);
    char p[64];
    if (warps == 1) {
      snprintf(p, sizeof p, "n%d", N);
      row("sched_alone", p, (double)(h[2] - h[0]), "cycles");
      continue;
    }
    for (int k = 0; k < warps; ++k) {
      snprintf(p, sizeof p, "w%d_warp%d_n%d", warps, k, N);
      row("sched_start", p, (double)(h[3 * k] - start), "cycles");
      row("sched_half", p, (double)(h[3 * k + 1] - start), "cycles");
      row("sched_end", p, (double)(h[3 * k + 2] - start), "cycles");
    }
  }
}

int main() {
  header("sched");
  long long* d;
  float* sink;
  CHECK(cudaMalloc(&d, 64 * sizeof(long long)));
  CHECK(cudaMalloc(&sink, 1024 * sizeof(float)));
  run<512>(d, sink);
  run<2048>(d, sink);
  CHECK(cudaFree(d));
  CHECK(cudaFree(sink));
  footer();
  return 0;
}
