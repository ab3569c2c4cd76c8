// When each of a warp's back-to-back global loads comes back: do U loads issued together return
// one latency after issue, or spaced out? One CTA on one SM, W warps; each warp issues U
// independent coalesced ld.global.cg of `width` bytes a lane (each its own 32 x width bytes,
// L2-resident), then uses them in issue order, reading clock64 after each use (a dependent
// add: the clock read waits for that load's data). The buffer (4 MiB) is read once first.
// Rows (param w<width>_W<warps>_U<loads>_u<u>):
//   ret_ready       cycles from warp 0's first load issue to its u-th load's data in use
//   ret_ready_mean  the same averaged over the W warps
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o lsu_return lsu_return.cu
#include <initializer_list>
#include "common.cuh"

constexpr unsigned kBufBytes = 4u << 20;

template <int WIDTH, int U>
__global__ void __launch_bounds__(1024) return_kernel(const char* __restrict__ p, long long* times,
                                                       unsigned* sink) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  unsigned v[U][WIDTH / 4];
  long long t[U + 1];
  unsigned acc = 0;
  __syncthreads();
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t[0]));
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const unsigned off = (((unsigned)u * warps + warp) * 32u * WIDTH) % kBufBytes + lane * WIDTH;
    if constexpr (WIDTH == 4) {
      asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v[u][0]) : "l"(p + off));
    } else {
      asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(v[u][0]), "=r"(v[u][1]), "=r"(v[u][2]), "=r"(v[u][3]) : "l"(p + off));
    }
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    asm volatile("add.u32 %0, %0, %1;" : "+r"(acc) : "r"(v[u][0]));
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t[u + 1]));
  }
  if (lane == 0)
    for (int u = 0; u < U; ++u) times[warp * 8 + u] = t[u + 1] - t[0];
#pragma unroll
  for (int u = 0; u < U; ++u)
    for (int i = 1; i < WIDTH / 4; ++i) acc += v[u][i];
  if (acc == 0x12345u) sink[threadIdx.x] = acc;  // keeps the loads alive
}

template <int WIDTH, int U>
static void point(const char* buf, int warps, long long* d, unsigned* sink) {
  for (int rep = 0; rep < 2; ++rep) {  // the first warms L2 and the clock
    return_kernel<WIDTH, U><<<1, warps * 32>>>(buf, d, sink);
    LAUNCH_CHECK();
  }
  long long h[32 * 8];
  CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  for (int u = 0; u < U; ++u) {
    char param[64];
    snprintf(param, sizeof param, "w%d_W%d_U%d_u%d", WIDTH, warps, U, u + 1);
    row("ret_ready", param, (double)h[u], "cycles");
    double mean = 0;
    for (int w = 0; w < warps; ++w) mean += (double)h[w * 8 + u];
    row("ret_ready_mean", param, mean / warps, "cycles");
  }
}

template <int WIDTH>
static void sweep(const char* buf, long long* d, unsigned* sink) {
  for (int warps : {1, 4, 32}) {
    point<WIDTH, 1>(buf, warps, d, sink);
    point<WIDTH, 2>(buf, warps, d, sink);
    point<WIDTH, 4>(buf, warps, d, sink);
    point<WIDTH, 8>(buf, warps, d, sink);
  }
}

int main() {
  header("lsu_return");
  char* buf;
  long long* d;
  unsigned* sink;
  CHECK(cudaMalloc(&buf, kBufBytes));
  CHECK(cudaMemset(buf, 1, kBufBytes));
  CHECK(cudaMalloc(&d, 32 * 8 * sizeof(long long)));
  CHECK(cudaMemset(d, 0, 32 * 8 * sizeof(long long)));
  CHECK(cudaMalloc(&sink, 1024 * sizeof(unsigned)));
  sweep<4>(buf, d, sink);
  sweep<16>(buf, d, sink);
  footer();
  return 0;
}
