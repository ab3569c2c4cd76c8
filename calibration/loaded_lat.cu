// Latency under load on one SM: how long one warp's dependent load takes while the SM's other
// warps stream loads from the same level. One CTA on one SM: warp 0's lane 0 chases a chain of
// pointers (one 4-byte ld.global.cg a hop, each in its own 128-byte line, random order); warps
// 1..S stream coalesced 16-byte ld.global.cg (512 bytes a warp-load, U of them issued before
// any is used; ptxas narrows them to 8-byte loads touching every sector, and folds U = 8 after
// 4) until the chase ends. Two levels: L2 (a 1 MiB chain, a 4 MiB stream buffer, both
// read once first) and DRAM (a fresh chain of lines spread over 1 GiB for each point, the
// stream over 512 MiB windows of another 2 GiB, each line read once). Rows (param <level>_S<streamers>_U<loads>):
//   loaded_lat   cycles per chase hop (clock64 around 256 hops; S = 0 is the idle latency)
//   loaded_bw    bytes per cycle the S streaming warps read meanwhile (0 at S = 0)
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o loaded_lat loaded_lat.cu
#include <algorithm>
#include <initializer_list>
#include <random>
#include <vector>
#include "common.cuh"

constexpr int kHops = 256;
constexpr size_t kLine = 128;

template <int U>
__global__ void __launch_bounds__(1024) loaded_kernel(const unsigned* __restrict__ chain,
                                                       const int4* __restrict__ stream, unsigned stream_mask,
                                                       unsigned first, long long* out, unsigned* sink) {
  __shared__ volatile int done;
  __shared__ unsigned long long bytes;
  int4 acc = make_int4(0, 0, 0, 0);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) { done = 0; bytes = 0; }
  __syncthreads();
  if (warp == 0) {
    if (lane == 0) {
      unsigned idx = first;
      long long t0 = clock64();
      for (int h = 0; h < kHops; ++h)
        asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(idx) : "l"(chain + idx));
      long long t1 = clock64();
      done = 1;
      out[0] = t1 - t0;
      sink[0] = idx;
    }
  } else {
    const int streamers = blockDim.x / 32 - 1;
    long long t0 = clock64();
    unsigned base = (warp - 1) * 32u * U, it = 0;
    while (!done) {
#pragma unroll
      for (int u = 0; u < U; ++u) {
        int4 v;
        const int4* q = stream + ((base + u * 32u + lane) & stream_mask);
        asm volatile("ld.global.cg.v4.s32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(q));
        acc.x += v.x; acc.y ^= v.y;
      }
      base += streamers * 32u * U;
      ++it;
    }
    long long t1 = clock64();
    if (lane == 0) {
      atomicAdd(&bytes, (unsigned long long)it * U * 512);
      if (warp == 1) out[1] = t1 - t0;
    }
  }
  __syncthreads();
  if (threadIdx.x == 32) out[2] = (long long)bytes;
  if (acc.x == 0x12345 && acc.y == 7) sink[threadIdx.x] = acc.x;
}

// A random cycle of kHops lines among `lines` (128-byte lines of the chain buffer), written into
// the device buffer; returns the first element's index (in 4-byte words).
static unsigned make_chain(unsigned* d_chain, size_t lines, std::mt19937_64& rng) {
  std::vector<size_t> pick;
  std::uniform_int_distribution<size_t> any(0, lines - 1);
  while (pick.size() < kHops) {
    size_t l = any(rng);
    if (std::find(pick.begin(), pick.end(), l) == pick.end()) pick.push_back(l);
  }
  const size_t words = kLine / 4;
  for (int h = 0; h < kHops; ++h) {
    unsigned next = (unsigned)(pick[(h + 1) % kHops] * words);
    CHECK(cudaMemcpy(d_chain + pick[h] * words, &next, 4, cudaMemcpyHostToDevice));
  }
  return (unsigned)(pick[0] * words);
}

// One point's rows; returns the bytes the stream read.
template <int U>
static long long point(const char* level, int streamers, const unsigned* chain, unsigned first,
                  const int4* stream, size_t stream_bytes, bool warm, long long* d, unsigned* sink) {
  const int threads = 32 * (streamers + 1);
  if (warm) {  // L2: the first run brings chain and stream into L2 and wakes the clock
    loaded_kernel<U><<<1, threads>>>(chain, stream, (unsigned)(stream_bytes / 16 - 1), first, d, sink);
    LAUNCH_CHECK();
  }
  loaded_kernel<U><<<1, threads>>>(chain, stream, (unsigned)(stream_bytes / 16 - 1), first, d, sink);
  LAUNCH_CHECK();
  long long h[3];
  CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  char param[64];
  snprintf(param, sizeof param, "%s_S%d_U%d", level, streamers, U);
  row("loaded_lat", param, (double)h[0] / kHops, "cycles");
  row("loaded_bw", param, streamers ? (double)h[2] / (double)h[1] : 0.0, "bytes_per_clk");
  return h[2];
}

int main() {
  header("loaded_lat");
  std::mt19937_64 rng(1);
  long long* d;
  unsigned* sink;
  CHECK(cudaMalloc(&d, 4 * sizeof(long long)));
  CHECK(cudaMalloc(&sink, 1024 * sizeof(unsigned)));
  const size_t l2_chain = 1u << 20, l2_stream = 4u << 20;
  const size_t dram_chain = 1ull << 30, dram_stream = 2ull << 30;
  unsigned* chain;
  int4* stream;
  CHECK(cudaMalloc(&chain, dram_chain));
  CHECK(cudaMalloc(&stream, dram_stream));
  CHECK(cudaMemset(stream, 1, dram_stream));
  const std::initializer_list<int> sweep = {0, 1, 2, 4, 8, 16, 28, 31};
  const unsigned l2_first = make_chain(chain, l2_chain / kLine, rng);
  for (int s : sweep) point<1>("l2", s, chain, l2_first, stream, l2_stream, true, d, sink);
  for (int s : sweep) point<4>("l2", s, chain, l2_first, stream, l2_stream, true, d, sink);
  for (int s : sweep) point<8>("l2", s, chain, l2_first, stream, l2_stream, true, d, sink);
  // DRAM: each point a fresh chain, and a stream that starts where the last one stopped (lines
  // not yet read), after a 256 MiB write elsewhere evicts the L2.
  char* evict;
  CHECK(cudaMalloc(&evict, 256u << 20));
  size_t stream_off = 0;
  for (int u : {1, 4, 8})
    for (int s : sweep) {
      const unsigned first = make_chain(chain, dram_chain / kLine, rng);
      CHECK(cudaMemset(evict, 0, 256u << 20));  // the chain's writes leave its lines in L2
      LAUNCH_CHECK();
      const int4* st = stream + stream_off / 16;
      const size_t window = 512u << 20;
      const long long streamed =
          u == 1   ? point<1>("hbm", s, chain, first, st, window, false, d, sink)
          : u == 4 ? point<4>("hbm", s, chain, first, st, window, false, d, sink)
                   : point<8>("hbm", s, chain, first, st, window, false, d, sink);
      stream_off += ((size_t)streamed >> 20 << 20) + (64u << 20);
      if (stream_off > dram_stream - window) stream_off = 0;  // evicted meanwhile
    }
  footer();
  return 0;
}
