// What limits one SM's L2-resident warp-loads: the lines a warp-load touches (an L1 line
// rate), the bytes it moves (the SM's port), or the loads in flight against the latency.
// One CTA on one SM, W warps; each warp runs R rounds of U independent ld.global.cg of `width`
// bytes a lane, lane L at byte L * stride * width of the round's own span (.cg bypasses
// L1, so every load goes to L2), then adds them up (the round's loads are consumed together,
// after all U are issued). The buffer (4 MiB) is read once before the timed pass, so every load hits L2.
// Rows (param w<width>_s<stride>_W<warps>_U<loads>):
//   l1_load    cycles per warp-load over the timed pass (clock64 around it, thread 0), from
//              R = 64 rounds less R = 16 (the difference takes out the start and the drain)
//   l1_bytes   the bytes the lanes use (32 x width a warp-load) per cycle of the same
//   l1_lines   128-byte lines a warp-load touches (its address pattern; for reading the rows)
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o l1_rate l1_rate.cu
#include <initializer_list>
#include "common.cuh"

constexpr size_t kBufBytes = 4u << 20;

template <int WIDTH, int U>
__global__ void __launch_bounds__(1024) l1_kernel(const char* __restrict__ p, int stride, int rounds,
                          unsigned long long* cyc, unsigned* sink) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  // One warp-load's address range; a power of two, as is the buffer, so the wrap is a mask (a
  // 64-bit remainder here cost ~10 cycles a warp-load and bound the first run).
  const unsigned span = 32u * stride * WIDTH;
  unsigned acc = 0;
  __syncthreads();
  long long t0 = clock64();
  for (int r = 0; r < rounds; ++r) {
    unsigned v[U][WIDTH / 4 > 0 ? WIDTH / 4 : 1];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const unsigned load = ((unsigned)r * U + u) * warps + warp;
      // Spans are whole lines, so every warp-load starts on a line.
      const unsigned off = ((load * span) & (unsigned)(kBufBytes - 1)) + lane * stride * WIDTH;
      const char* a = p + off;
      if constexpr (WIDTH == 4) {
        asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v[u][0]) : "l"(a));
      } else if constexpr (WIDTH == 8) {
        asm volatile("ld.global.cg.v2.u32 {%0, %1}, [%2];" : "=r"(v[u][0]), "=r"(v[u][1]) : "l"(a));
      } else {
        asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(v[u][0]), "=r"(v[u][1]), "=r"(v[u][2]), "=r"(v[u][3]) : "l"(a));
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int i = 0; i < (WIDTH / 4 > 0 ? WIDTH / 4 : 1); ++i) acc += v[u][i];
  }
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) *cyc = (unsigned long long)(t1 - t0);
  if (acc == 0x12345u) sink[threadIdx.x] = acc;  // keeps the loads alive
}

template <int WIDTH, int U>
static double timed(const char* buf, int stride, int warps, int rounds, unsigned long long* d,
                    unsigned* sink) {
  l1_kernel<WIDTH, U><<<1, warps * 32>>>(buf, stride, rounds, d, sink);  // warm: L2 and clock
  LAUNCH_CHECK();
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    l1_kernel<WIDTH, U><<<1, warps * 32>>>(buf, stride, rounds, d, sink);
    LAUNCH_CHECK();
    unsigned long long h;
    CHECK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
    best = best < (double)h ? best : (double)h;
  }
  return best;
}

template <int WIDTH, int U>
static void point(const char* buf, int stride, int warps, unsigned long long* d, unsigned* sink) {
  const int lo = 16, hi = 64;
  double t_lo = timed<WIDTH, U>(buf, stride, warps, lo, d, sink);
  double t_hi = timed<WIDTH, U>(buf, stride, warps, hi, d, sink);
  double per = (t_hi - t_lo) / ((double)(hi - lo) * U * warps);
  char param[64];
  snprintf(param, sizeof param, "w%d_s%d_W%d_U%d", WIDTH, stride, warps, U);
  const long lines = ((long)32 * stride * WIDTH + 127) / 128;
  row("l1_load", param, per, "cycles");
  row("l1_bytes", param, 32.0 * WIDTH / per, "bytes_per_clk");
  row("l1_lines", param, (double)(stride * WIDTH >= 128 ? 32 : lines), "lines");
}

template <int WIDTH>
static void sweep(const char* buf, unsigned long long* d, unsigned* sink) {
  for (int stride : {1, 2, 4, 8, 32}) {
    if ((long)stride * WIDTH > 128 && stride != 32) continue;
    for (int warps : {8, 16, 32}) {
      point<WIDTH, 4>(buf, stride, warps, d, sink);
      point<WIDTH, 8>(buf, stride, warps, d, sink);
    }
  }
}

int main() {
  header("l1_rate");
  char* buf;
  unsigned long long* d;
  unsigned* sink;
  CHECK(cudaMalloc(&buf, kBufBytes));
  CHECK(cudaMemset(buf, 1, kBufBytes));
  CHECK(cudaMalloc(&d, sizeof(unsigned long long)));
  CHECK(cudaMalloc(&sink, 1024 * sizeof(unsigned)));
  sweep<4>(buf, d, sink);
  sweep<8>(buf, d, sink);
  sweep<16>(buf, d, sink);
  footer();
  return 0;
}
