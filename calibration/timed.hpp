// Whole-kernel timing shared by fa3_real.cu and cutlass_gemm.cu: launches back to back between
// CUDA events for a number of seconds while a thread samples NVML's SM clock, because under
// tensor load the clock sits far below its maximum and cycles are time x that clock.
#pragma once
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

// NVML's SM clock, loaded at run time (the driver's library; no header needed).
struct Nvml {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  int (*init)() = nullptr;
  int (*handle)(unsigned, void**) = nullptr;
  int (*clock)(void*, int, unsigned*) = nullptr;
  void* dev = nullptr;
  Nvml() {
    if (!lib) return;
    init = (int (*)())dlsym(lib, "nvmlInit_v2");
    handle = (int (*)(unsigned, void**))dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
    clock = (int (*)(void*, int, unsigned*))dlsym(lib, "nvmlDeviceGetClockInfo");
    if (!init || !handle || !clock || init() != 0 || handle(0, &dev) != 0) dev = nullptr;
  }
  unsigned sm_mhz() {
    unsigned mhz = 0;
    if (dev) clock(dev, 1 /* NVML_CLOCK_SM */, &mhz);
    return mhz;
  }
};

struct Timing {
  double ms;   // median of the second half of the launches
  double mhz;  // median of the second half of the clock samples (0 without NVML)
};

#define TIMED_CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

// Five warm-up launches, then launches for `seconds`, each between events; the clock sampled
// every 10 ms meanwhile. The second halves are kept, once the clock has settled.
template <class Launch>
Timing time_kernel(Launch launch, cudaStream_t stream, double seconds) {
  for (int i = 0; i < 5; ++i) launch();
  TIMED_CHECK(cudaStreamSynchronize(stream));
  Nvml nvml;
  std::vector<unsigned> mhz;
  std::atomic<bool> stop{false};
  std::thread sampler([&] {
    while (!stop) {
      mhz.push_back(nvml.sm_mhz());
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  std::vector<float> ms;
  cudaEvent_t e0, e1;
  TIMED_CHECK(cudaEventCreate(&e0));
  TIMED_CHECK(cudaEventCreate(&e1));
  auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds) {
    TIMED_CHECK(cudaEventRecord(e0, stream));
    launch();
    TIMED_CHECK(cudaEventRecord(e1, stream));
    TIMED_CHECK(cudaEventSynchronize(e1));
    float t;
    TIMED_CHECK(cudaEventElapsedTime(&t, e0, e1));
    ms.push_back(t);
  }
  stop = true;
  sampler.join();
  TIMED_CHECK(cudaGetLastError());
  std::vector<float> late(ms.begin() + ms.size() / 2, ms.end());
  std::sort(late.begin(), late.end());
  std::vector<unsigned> settled(mhz.begin() + mhz.size() / 2, mhz.end());
  std::sort(settled.begin(), settled.end());
  return {late[late.size() / 2], settled.empty() ? 0.0 : double(settled[settled.size() / 2])};
}
