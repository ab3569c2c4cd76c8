// One SM streaming L2-resident data: does its bandwidth follow the bytes it reads or the
// address range (pages) those bytes are spread over?
//
// The data are `bytes` per pass, laid out in chunks of `chunk` bytes whose starts are `stride`
// bytes apart (stride >= chunk), so the reads touch bytes / chunk * stride bytes of address
// space. Every pass reads the same lines, which stay in L2 after a warm-up pass.
//
//   pages_bw  : B/cycle of one CTA of 1024 threads, each keeping 4 loads of 16 B in flight
//               (asm volatile loads, then one fold; as memsys.cu's probe_inflight<4>);
//               param <bytes MiB>_<chunk KiB>_<stride KiB>
//   pages_lat : cycles per hop of one thread chasing 4096 lines of the same layout in a
//               pseudo-random order (each hop a dependent load), after a warm-up pass
//
// Contiguous rows (chunk = stride) sweep the footprint; rows with 8 MiB of data spread over
// 16 to 256 MiB of addresses keep the bytes (and the L2 lines) fixed and vary only the span.
#include "common.cuh"
#include <algorithm>
#include <vector>

// Chunks and strides are powers of two, given as shifts: a 64-bit division per load would make
// the loop issue-bound.
__host__ __device__ __forceinline__ size_t place(size_t off, int chunk, int stride) {
  return (off >> chunk << stride) | (off & ((size_t(1) << chunk) - 1));
}

__global__ void __launch_bounds__(1024) stream(const char* __restrict__ p, size_t bytes, int chunk,
                                               int stride, int passes, unsigned long long* cycles,
                                               int4* sink) {
  uint32_t acc = 0;
  const size_t step = (size_t)blockDim.x * 16;
  __syncthreads();
  const long long t0 = clock64();
  for (int pass = 0; pass < passes; ++pass)
    for (size_t i = threadIdx.x * 16; i + 3 * step < bytes; i += 4 * step) {
      uint32_t v[4][4];
#pragma unroll
      for (int u = 0; u < 4; ++u)
        asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(v[u][0]), "=r"(v[u][1]), "=r"(v[u][2]), "=r"(v[u][3])
                     : "l"(p + place(i + u * step, chunk, stride)));
      uint32_t x = 0;
#pragma unroll
      for (int u = 0; u < 4; ++u)
        asm volatile(
            "{\n .reg .b32 t;\n xor.b32 t, %1, %2;\n xor.b32 t, t, %3;\n xor.b32 t, t, %4;\n xor.b32 %0, %0, t;\n}\n"
            : "+r"(x) : "r"(v[u][0]), "r"(v[u][1]), "r"(v[u][2]), "r"(v[u][3]));
      acc += x;
    }
  __syncthreads();
  const long long t1 = clock64();
  if (threadIdx.x == 0) *cycles = t1 - t0;
  if (acc == 0x7fffffffu) sink[threadIdx.x] = make_int4(acc, 0, 0, 0);
}

// Each line holds the offset of the next line of the chain in its first 8 bytes.
__global__ void chase(const char* p, size_t start, int hops, unsigned long long* cycles, size_t* sink) {
  size_t at = start;
  const long long t0 = clock64();
  for (int h = 0; h < hops; ++h) at = *(const volatile size_t*)(p + at);
  const long long t1 = clock64();
  *cycles = t1 - t0;
  *sink = at;
}

int main() {
  header("l2_pages");
  const size_t span_max = 256ull << 20;
  char* buf;
  CHECK(cudaMalloc(&buf, span_max));
  CHECK(cudaMemset(buf, 1, span_max));
  unsigned long long* d;
  CHECK(cudaMalloc(&d, sizeof(unsigned long long)));
  int4* sink;
  CHECK(cudaMalloc(&sink, 1024 * sizeof(int4)));
  size_t* psink;
  CHECK(cudaMalloc(&psink, sizeof(size_t)));
  struct Layout {
    size_t mib, chunk_kib, stride_kib;
  };
  std::vector<Layout> layouts;
  for (size_t mib : {2, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 48}) layouts.push_back({mib, 2048, 2048});
  for (size_t chunk : {1024, 512, 256, 128, 64}) layouts.push_back({8, chunk, 2048});
  layouts.push_back({8, 64, 128});   // 16 MiB span, 64 KiB chunks
  layouts.push_back({8, 1024, 4096});  // 32 MiB span in 1 MiB chunks
  for (const Layout& l : layouts) {
    const size_t bytes = l.mib << 20;
    const int chunk = 10 + __builtin_ctzll(l.chunk_kib), stride = 10 + __builtin_ctzll(l.stride_kib);
    char param[48];
    snprintf(param, sizeof param, "%zu_%zu_%zu", l.mib, l.chunk_kib, l.stride_kib);
    // Bandwidth: a warm-up pass, then the best of three timed runs of enough passes for ~2 GiB.
    const int passes = (int)std::max<size_t>(4, (2048ull << 20) / bytes);
    stream<<<1, 1024>>>(buf, bytes, chunk, stride, 1, d, sink);
    LAUNCH_CHECK();
    double best = 0;
    for (int rep = 0; rep < 3; ++rep) {
      stream<<<1, 1024>>>(buf, bytes, chunk, stride, passes, d, sink);
      LAUNCH_CHECK();
      unsigned long long c;
      CHECK(cudaMemcpy(&c, d, sizeof c, cudaMemcpyDeviceToHost));
      const size_t per_pass = bytes / (1024 * 16 * 4) * (1024 * 16 * 4);
      best = std::max(best, (double)per_pass * passes / (double)c);
    }
    row("pages_bw", param, best, "bytes_per_clk");
    // Latency: 4096 lines spread evenly over the data, visited in a pseudo-random order.
    const int hops = 4096;
    const size_t lines = bytes / 128, every = lines / hops;
    std::vector<size_t> order(hops);
    for (int h = 0; h < hops; ++h) order[h] = ((size_t)h * 2654435761u) % hops;  // a permutation: odd multiplier, power-of-two size
    std::vector<size_t> next(hops);
    for (int h = 0; h < hops; ++h) {
      const size_t from = place(order[h] * every * 128, chunk, stride);
      const size_t to = place(order[(h + 1) % hops] * every * 128, chunk, stride);
      CHECK(cudaMemcpy(buf + from, &to, sizeof to, cudaMemcpyHostToDevice));
    }
    const size_t start = place(order[0] * every * 128, chunk, stride);
    chase<<<1, 1>>>(buf, start, hops, d, psink);
    LAUNCH_CHECK();
    chase<<<1, 1>>>(buf, start, hops, d, psink);
    LAUNCH_CHECK();
    unsigned long long c;
    CHECK(cudaMemcpy(&c, d, sizeof c, cudaMemcpyDeviceToHost));
    row("pages_lat", param, (double)c / hops, "cycles");
  }
  footer();
  CHECK(cudaFree(buf));
  return 0;
}
