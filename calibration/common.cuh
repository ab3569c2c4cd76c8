// Shared by the calibration microbenchmarks: error checks, the CSV row format and the SM clock.
//
// Every program prints `# key=value` header lines, then rows `test,param,value,unit`. `test`
// names the mechanism, `param` the point of its sweep (a number or a short label), `value` the
// result in `unit`. `sim validate` reads these rows by (test, param).
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)
#define LAUNCH_CHECK() do { CHECK(cudaGetLastError()); CHECK(cudaDeviceSynchronize()); } while (0)

static inline void row(const char* test, const char* param, double value, const char* unit) {
  printf("%s,%s,%.4f,%s\n", test, param, value, unit);
  fflush(stdout);
}
static inline void row(const char* test, long param, double value, const char* unit) {
  char p[32];
  snprintf(p, sizeof p, "%ld", param);
  row(test, p, value, unit);
}

__device__ __forceinline__ uint64_t globaltimer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Spins one thread for `cycles` SM cycles and records the SM cycles and the wall-clock
// nanoseconds that passed: their ratio is the SM clock while the GPU is busy with one warp.
__global__ void clock_probe(long long cycles, unsigned long long* out) {
  uint64_t g0 = globaltimer_ns();
  long long c0 = clock64(), c1 = c0;
  while (c1 - c0 < cycles) c1 = clock64();
  uint64_t g1 = globaltimer_ns();
  out[0] = (unsigned long long)(c1 - c0);
  out[1] = g1 - g0;
}

// SM clock in MHz, from a 40-million-cycle spin (about 20 ms).
static inline double sm_clock_mhz() {
  unsigned long long* d;
  CHECK(cudaMalloc(&d, 2 * sizeof(unsigned long long)));
  clock_probe<<<1, 1>>>(4000000, d);  // warm-up: wakes the clock from idle
  LAUNCH_CHECK();
  clock_probe<<<1, 1>>>(40000000, d);
  LAUNCH_CHECK();
  unsigned long long h[2];
  CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d));
  return (double)h[0] / (double)h[1] * 1e3;
}

// The header every program prints first.
static inline void header(const char* program) {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  int driver = 0, runtime = 0;
  CHECK(cudaDriverGetVersion(&driver));
  CHECK(cudaRuntimeGetVersion(&runtime));
  printf("# program=%s gpu=%s sms=%d l2_bytes=%d smem_per_sm=%zu driver_api=%d runtime=%d\n", program,
         prop.name, prop.multiProcessorCount, prop.l2CacheSize, prop.sharedMemPerMultiprocessor, driver,
         runtime);
  printf("# sm_clock_mhz_at_start=%.0f\n", sm_clock_mhz());
  printf("test,param,value,unit\n");
  fflush(stdout);
}

static inline void footer() { printf("# sm_clock_mhz_at_end=%.0f\n", sm_clock_mhz()); }
