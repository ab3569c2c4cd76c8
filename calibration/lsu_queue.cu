// How many global loads a warp can issue before the load/store path pushes back (lg_throttle),
// and how fast it issues them after that. One CTA on one SM, W warps; each warp issues K = 32
// independent ld.global.cg of 4 bytes a lane, lane L at word L * stride of the load's own span
// (stride 32: 32 lines a load, 32 cycles of the L1's tag stage; stride 1: one line), reading
// clock64 after every issue and consuming nothing until all 32 are out. The buffer (4 MiB) is
// read once first, so every load hits L2. ptxas keeps asm volatile statements in order, so
// each clock read follows its load's issue (the SASS is in the data file's header).
// Rows (param s<stride>_W<warps>_k<k>):
//   lsu_issue  cycles from warp 0's first load to its k-th load's issue (k = 1..32)
//   lsu_issue_mean  the same, averaged over the W warps, each from its own first load
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o lsu_queue lsu_queue.cu
#include <initializer_list>
#include "common.cuh"

constexpr unsigned kBufBytes = 4u << 20;
constexpr int K = 32;

__global__ void __launch_bounds__(1024) issue_kernel(const char* __restrict__ p, int stride,
                                                      long long* times, unsigned* sink) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  const unsigned span = 128u * stride;  // 32 lanes x 4 bytes x stride
  unsigned v[K];
  long long t[K];
  __syncthreads();
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const unsigned off = (((unsigned)k * warps + warp) * span) % kBufBytes + lane * 4u * stride;
    asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v[k]) : "l"(p + off));
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t[k]));
  }
  unsigned acc = 0;
#pragma unroll
  for (int k = 0; k < K; ++k) acc += v[k];
  if (lane == 0)
    for (int k = 0; k < K; ++k) times[warp * K + k] = t[k] - t[0];
  if (acc == 0x12345u) sink[threadIdx.x] = acc;  // keeps the loads alive
}

int main() {
  header("lsu_queue");
  char* buf;
  long long* d;
  unsigned* sink;
  CHECK(cudaMalloc(&buf, kBufBytes));
  CHECK(cudaMemset(buf, 1, kBufBytes));
  CHECK(cudaMalloc(&d, 32 * K * sizeof(long long)));
  CHECK(cudaMalloc(&sink, 1024 * sizeof(unsigned)));
  long long h[32 * K];
  for (int stride : {1, 8, 32}) {
    for (int warps : {1, 4, 32}) {
      // The first launch warms L2 and the clock; the second is the one recorded.
      for (int rep = 0; rep < 2; ++rep) {
        issue_kernel<<<1, warps * 32>>>(buf, stride, d, sink);
        LAUNCH_CHECK();
      }
      CHECK(cudaMemcpy(h, d, warps * K * sizeof(long long), cudaMemcpyDeviceToHost));
      for (int k = 1; k < K; ++k) {
        char param[64];
        snprintf(param, sizeof param, "s%d_W%d_k%d", stride, warps, k + 1);
        row("lsu_issue", param, (double)h[k], "cycles");
        double mean = 0;
        for (int w = 0; w < warps; ++w) mean += (double)h[w * K + k];
        row("lsu_issue_mean", param, mean / warps, "cycles");
      }
    }
  }
  footer();
  return 0;
}
