// Kernel sequences: the time between one kernel's last CTA and the next kernel's first CTA when
// kernels are launched back to back in one stream, eagerly or replayed from a CUDA graph.
//
//   seq_gap    : ns from the latest end of any CTA of kernel k to the earliest start of any CTA of
//                kernel k + 1 (%globaltimer), median over 63 pairs; param
//                <eager|graph>_<ctas>cta_<spin cycles>. A kernel's CTAs each spin `cycles` SM
//                cycles (clock64) on thread 0, so a kernel lasts about cycles / clock.
//   seq_period : ns between consecutive kernels' earliest CTA starts, median.
//   seq_spread : ns from a 132-CTA kernel's earliest CTA start to its latest, median over the
//                kernels (how long the launch takes to reach every SM).
//
// Short kernels show the launch rate (the host's for eager launches, the graph's otherwise);
// long ones the GPU's own gap between kernels, with the next launch already queued.
#include "common.cuh"
#include <algorithm>
#include <vector>

__global__ void spin(unsigned long long* start, unsigned long long* end, unsigned long long* cta,
                     int k, long long cycles) {
  if (threadIdx.x != 0) return;
  const unsigned long long t0 = globaltimer_ns();
  const long long c0 = clock64();
  while (clock64() - c0 < cycles) {
  }
  const unsigned long long t1 = globaltimer_ns();
  atomicMin(&start[k], t0);
  atomicMax(&end[k], t1);
  cta[k * gridDim.x + blockIdx.x] = t0;
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main() {
  header("launch");
  const int n = 64;
  const int max_ctas = 132;
  unsigned long long *start, *end, *cta;
  CHECK(cudaMalloc(&start, n * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&end, n * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&cta, n * max_ctas * sizeof(unsigned long long)));
  cudaStream_t st;
  CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  for (int ctas : {1, max_ctas})
    for (long long cycles : {0LL, 2000LL, 10000LL, 40000LL})
      for (int graph = 0; graph < 2; ++graph) {
        // One CTA per SM: 1024 threads and 200 KiB of dynamic shared memory would also do it;
        // 128 threads and a grid of at most 132 already spread over the SMs.
        cudaGraphExec_t exec = nullptr;
        if (graph) {
          cudaGraph_t g;
          CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
          for (int k = 0; k < n; ++k) spin<<<ctas, 128, 0, st>>>(start, end, cta, k, cycles);
          CHECK(cudaStreamEndCapture(st, &g));
          CHECK(cudaGraphInstantiate(&exec, g, 0));
          CHECK(cudaGraphDestroy(g));
        }
        std::vector<double> gaps, periods, spreads;
        for (int rep = 0; rep < 3; ++rep) {  // rep 0 warms up
          CHECK(cudaMemsetAsync(start, 0xff, n * sizeof(unsigned long long), st));
          CHECK(cudaMemsetAsync(end, 0, n * sizeof(unsigned long long), st));
          CHECK(cudaStreamSynchronize(st));
          if (graph) CHECK(cudaGraphLaunch(exec, st));
          else
            for (int k = 0; k < n; ++k) spin<<<ctas, 128, 0, st>>>(start, end, cta, k, cycles);
          CHECK(cudaStreamSynchronize(st));
          CHECK(cudaGetLastError());
          if (rep == 0) continue;
          std::vector<unsigned long long> s(n), e(n), c(n * ctas);
          CHECK(cudaMemcpy(s.data(), start, n * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
          CHECK(cudaMemcpy(e.data(), end, n * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
          CHECK(cudaMemcpy(c.data(), cta, n * ctas * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
          for (int k = 0; k + 1 < n; ++k) {
            gaps.push_back((double)s[k + 1] - (double)e[k]);
            periods.push_back((double)(s[k + 1] - s[k]));
          }
          for (int k = 0; k < n; ++k) {
            auto [lo, hi] = std::minmax_element(c.begin() + k * ctas, c.begin() + (k + 1) * ctas);
            spreads.push_back((double)(*hi - *lo));
          }
        }
        char param[48];
        snprintf(param, sizeof param, "%s_%dcta_%lld", graph ? "graph" : "eager", ctas, cycles);
        row("seq_gap", param, median(gaps), "ns");
        row("seq_period", param, median(periods), "ns");
        if (ctas > 1) row("seq_spread", param, median(spreads), "ns");
        if (exec) CHECK(cudaGraphExecDestroy(exec));
      }
  printf("# sm_clock_mhz_at_end=%.0f\n", sm_clock_mhz());
  CHECK(cudaFree(start));
  CHECK(cudaFree(end));
  CHECK(cudaFree(cta));
  return 0;
}
