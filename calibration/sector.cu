// How many bytes DRAM moves for isolated accesses: 132 CTAs of 1024 threads, each thread reading
// `param` bytes (32: one sector, 64: two, 128: a whole line; aligned to their size) at random
// addresses of a 4 GiB buffer (after an L2 flush, so every access misses), 8 accesses in flight
// per thread. Run under Nsight Compute for DRAM bytes (dram__bytes_read.sum) against the bytes
// the threads asked for; the rows here give the time:
//   sector_read      : bytes asked for per cycle, GPU-wide; param = access bytes
//   sector_asked     : bytes the threads asked for in all; param = access bytes
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o sector sector.cu
#include "common.cuh"
#include <algorithm>
#include <vector>

constexpr int kThreads = 1024, kPer = 64;  // accesses per thread

__device__ __forceinline__ uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

template <int B>
__global__ void __launch_bounds__(kThreads) sector_kernel(const uint4* __restrict__ p, uint64_t units,
                                                          unsigned long long* cycles, uint4* sink) {
  extern __shared__ int pad[];
  (void)pad;
  const uint64_t id = (uint64_t)blockIdx.x * kThreads + threadIdx.x;
  uint4 acc = make_uint4(0, 0, 0, 0);
  __syncthreads();
  long long t0 = clock64();
  for (int k = 0; k < kPer; k += 8) {
    uint4 v[8][B / 16];
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const uint64_t unit = mix(id * kPer + k + u) % units;  // a random B-byte unit
#pragma unroll
      for (int q = 0; q < B / 16; ++q) v[u][q] = __ldcg(p + unit * (B / 16) + q);
    }
#pragma unroll
    for (int u = 0; u < 8; ++u)
#pragma unroll
      for (int q = 0; q < B / 16; ++q) { acc.x ^= v[u][q].x; acc.y ^= v[u][q].y; }
  }
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
  if (acc.x == 0x7fffffffu && acc.y == 1) sink[threadIdx.x] = acc;
}

template <int B>
static void run(const uint4* buf, size_t bytes, char* flush, int sms, unsigned long long* d, uint4* sink) {
  const int smem = 120 * 1024;
  CHECK(cudaFuncSetAttribute(sector_kernel<B>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  std::vector<double> rates;
  for (int rep = 0; rep < 3; ++rep) {
    CHECK(cudaMemset(flush, rep + 1, 256u << 20));  // evicts the buffer's lines from L2
    CHECK(cudaDeviceSynchronize());
    sector_kernel<B><<<sms, kThreads, smem>>>(buf, bytes / B, d, sink);
    LAUNCH_CHECK();
    std::vector<unsigned long long> c(sms);
    CHECK(cudaMemcpy(c.data(), d, sms * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    const double asked = (double)sms * kThreads * kPer * B;
    rates.push_back(asked / (double)*std::max_element(c.begin(), c.end()));
  }
  std::sort(rates.begin(), rates.end());
  row("sector_read", B, rates[1], "bytes_per_clk");
  row("sector_asked", B, (double)sms * kThreads * kPer * B, "bytes");
}

int main() {
  header("sector");
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  const size_t bytes = 4ull << 30;
  uint4* buf;
  char* flush;
  unsigned long long* d;
  uint4* sink;
  CHECK(cudaMalloc(&buf, bytes));
  CHECK(cudaMemset(buf, 1, bytes));
  CHECK(cudaMalloc(&flush, 256u << 20));
  CHECK(cudaMalloc(&d, sms * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&sink, kThreads * sizeof(uint4)));
  run<32>(buf, bytes, flush, sms, d, sink);
  run<64>(buf, bytes, flush, sms, d, sink);
  run<128>(buf, bytes, flush, sms, d, sink);
  footer();
  return 0;
}
