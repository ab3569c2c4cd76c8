// Memory-hierarchy bandwidth microbenchmarks for the simulator's presets:
//   l2_read   : all blocks re-read one buffer that fits in L2 (16 MiB), 1 block per SM;
//               bytes per SM cycle, per SM and GPU-wide, for 1, 2, 4, ... 132 SMs.
//   hbm_read  : every block reads its own slice of a buffer far larger than L2, once.
//   hbm_copy  : a copy kernel over the same sizes (bytes read + bytes written).
// Cycles are counted in-kernel with clock64() per block (SM clocks drop under load, so time x
// nominal clock would be wrong); wall time comes from CUDA events; their ratio is the SM clock.
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o mem_bw mem_bw.cu
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

constexpr int THREADS = 1024;
constexpr int UNROLL = 8;

// Each block reads `vecs` int4 starting at p + block_offset, `passes` times.
__global__ void __launch_bounds__(THREADS) read_kernel(const int4* __restrict__ p, size_t vecs,
    size_t block_stride, int passes, unsigned long long* cycles, int4* sink) {
  extern __shared__ int pad[];  // forces one block per SM
  const int4* base = p + blockIdx.x * block_stride;
  int4 acc = make_int4(0, 0, 0, 0);
  __syncthreads();
  unsigned long long t0 = clock64();
  for (int pass = 0; pass < passes; ++pass) {
    for (size_t i = threadIdx.x; i < vecs; i += THREADS * UNROLL) {
      int4 v[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        size_t j = i + (size_t)u * THREADS;
        v[u] = j < vecs ? __ldcg(base + j) : make_int4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) { acc.x ^= v[u].x; acc.y ^= v[u].y; acc.z ^= v[u].z; acc.w ^= v[u].w; }
    }
  }
  __syncthreads();
  unsigned long long t1 = clock64();
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
  if (acc.x == 0x7fffffff && acc.y == 1) sink[threadIdx.x] = acc;  // keeps the loads
  (void)pad;
}

__global__ void __launch_bounds__(THREADS) copy_kernel(const int4* __restrict__ src, int4* __restrict__ dst,
    size_t vecs, unsigned long long* cycles) {
  extern __shared__ int pad[];
  size_t per = vecs / gridDim.x;
  const int4* s = src + blockIdx.x * per;
  int4* d = dst + blockIdx.x * per;
  __syncthreads();
  unsigned long long t0 = clock64();
  for (size_t i = threadIdx.x; i < per; i += THREADS * UNROLL) {
    int4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) { size_t j = i + (size_t)u * THREADS; if (j < per) v[u] = __ldcs(s + j); }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) { size_t j = i + (size_t)u * THREADS; if (j < per) __stcs(d + j, v[u]); }
  }
  __syncthreads();
  unsigned long long t1 = clock64();
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
  (void)pad;
}

struct Result { double cycles_mean, cycles_max, ms; };

static Result time_read(const int4* p, size_t vecs, size_t stride, int passes, int blocks,
                        unsigned long long* d_cycles, int4* sink, int smem) {
  cudaEvent_t a, b; CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b));
  read_kernel<<<blocks, THREADS, smem>>>(p, vecs, stride, passes, d_cycles, sink);  // warm-up
  CHECK(cudaGetLastError());
  std::vector<double> ms;
  Result r{};
  for (int rep = 0; rep < 5; ++rep) {
    CHECK(cudaEventRecord(a));
    read_kernel<<<blocks, THREADS, smem>>>(p, vecs, stride, passes, d_cycles, sink);
    CHECK(cudaEventRecord(b)); CHECK(cudaEventSynchronize(b)); CHECK(cudaGetLastError());
    float t; CHECK(cudaEventElapsedTime(&t, a, b)); ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  std::vector<unsigned long long> c(blocks);
  CHECK(cudaMemcpy(c.data(), d_cycles, blocks * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  double sum = 0, mx = 0; for (auto x : c) { sum += x; mx = std::max(mx, (double)x); }
  r.cycles_mean = sum / blocks; r.cycles_max = mx; r.ms = ms[ms.size() / 2];
  CHECK(cudaEventDestroy(a)); CHECK(cudaEventDestroy(b));
  return r;
}

int main() {
  cudaDeviceProp prop; CHECK(cudaGetDeviceProperties(&prop, 0));
  int driver = 0, runtime = 0; CHECK(cudaDriverGetVersion(&driver)); CHECK(cudaRuntimeGetVersion(&runtime));
  const int sms = prop.multiProcessorCount;
  // Enough dynamic shared memory that two blocks cannot share an SM.
  const int smem = (int)prop.sharedMemPerMultiprocessor / 2 + 1024;
  CHECK(cudaFuncSetAttribute(read_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaFuncSetAttribute(copy_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  printf("# gpu=%s sms=%d l2_bytes=%d driver=%d runtime=%d\n", prop.name, sms, prop.l2CacheSize, driver, runtime);
  printf("test,sms,bytes_per_sm,cycles_mean,cycles_max,ms,bytes_per_clk_per_sm,bytes_per_clk_total,gbs,sm_clock_mhz\n");

  unsigned long long* d_cycles; CHECK(cudaMalloc(&d_cycles, 4096 * sizeof(unsigned long long)));
  int4* sink; CHECK(cudaMalloc(&sink, THREADS * sizeof(int4)));

  // L2-resident buffer: 16 MiB, filled with non-zero data.
  const size_t l2_bytes = 16u << 20, l2_vecs = l2_bytes / 16;
  int4* l2buf; CHECK(cudaMalloc(&l2buf, l2_bytes)); CHECK(cudaMemset(l2buf, 0x5a, l2_bytes));
  for (int n : {1, 2, 4, 8, 16, 33, 66, 132}) {
    if (n > sms) continue;
    // Each block reads the whole buffer `passes` times: all reads after the first hit L2.
    int passes = n <= 8 ? 4 : 2;
    Result r = time_read(l2buf, l2_vecs, 0, passes, n, d_cycles, sink, smem);
    double bytes = (double)l2_bytes * passes;
    double per_sm = bytes / r.cycles_mean;
    printf("l2_read,%d,%.0f,%.0f,%.0f,%.4f,%.2f,%.1f,%.1f,%.0f\n", n, bytes, r.cycles_mean, r.cycles_max, r.ms,
           per_sm, per_sm * n, bytes * n / r.ms / 1e6, r.cycles_max / r.ms / 1e3);
  }

  // HBM: 8 GiB buffer, each block reads its own slice once.
  const size_t big = 8ull << 30, big_vecs = big / 16;
  int4* hbm; CHECK(cudaMalloc(&hbm, big)); CHECK(cudaMemset(hbm, 0x3c, big));
  for (int n : {1, 2, 4, 8, 16, 33, 66, 132}) {
    if (n > sms) continue;
    size_t per = std::min((size_t)(256u << 20) / 16, big_vecs / n);  // at most 256 MiB per SM
    Result r = time_read(hbm, per, per, 1, n, d_cycles, sink, smem);
    double bytes = (double)per * 16;
    double per_sm = bytes / r.cycles_mean;
    printf("hbm_read,%d,%.0f,%.0f,%.0f,%.4f,%.2f,%.1f,%.1f,%.0f\n", n, bytes, r.cycles_mean, r.cycles_max, r.ms,
           per_sm, per_sm * n, bytes * n / r.ms / 1e6, r.cycles_max / r.ms / 1e3);
  }

  // Copy 4 GiB -> 4 GiB with one block per SM.
  {
    const size_t half = big / 2, vecs = half / 16;
    int4* src = hbm; int4* dst = hbm + vecs;
    cudaEvent_t a, b; CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b));
    copy_kernel<<<sms, THREADS, smem>>>(src, dst, vecs, d_cycles); CHECK(cudaGetLastError());
    std::vector<float> ms;
    for (int rep = 0; rep < 5; ++rep) {
      CHECK(cudaEventRecord(a)); copy_kernel<<<sms, THREADS, smem>>>(src, dst, vecs, d_cycles);
      CHECK(cudaEventRecord(b)); CHECK(cudaEventSynchronize(b)); CHECK(cudaGetLastError());
      float t; CHECK(cudaEventElapsedTime(&t, a, b)); ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    std::vector<unsigned long long> c(sms);
    CHECK(cudaMemcpy(c.data(), d_cycles, sms * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    double mx = 0, sum = 0; for (auto x : c) { mx = std::max(mx, (double)x); sum += x; }
    double bytes = 2.0 * half, t = ms[ms.size() / 2];
    printf("hbm_copy,%d,%.0f,%.0f,%.0f,%.4f,%.2f,%.1f,%.1f,%.0f\n", sms, bytes / sms, sum / sms, mx, t,
           bytes / sms / (sum / sms), bytes / mx, bytes / t / 1e6, mx / t / 1e3);
  }
  return 0;
}
