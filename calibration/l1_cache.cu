// The L1 data cache as global loads see it (plain ld.global, SASS LDG.E: cached in L1, as the
// naive GEMM's loads compile), which the model does not have yet: a warp
// that re-reads lines its SM read before gets them from L1 on the chip and from L2 in the
// model. The rows a model of it needs, and two whole kernels to check it with (the naive and
// the 32 x 32 shared-memory-tiled fp32 GEMM of issue 19's naive_vs_tiled_gemm.ron). One SM
// unless said otherwise; every kernel runs once untimed first (warm-up).
//   l1_chase,<KiB>        cycles per hop of one thread's chase over a footprint of KiB, one
//                         pointer per 128-byte line in a random cycle, plain loads, after one
//                         untimed pass; the carveout asks for the least shared memory (the
//                         most L1): hits while the footprint fits
//   l1_chase_cg,<KiB>     the same with ld.global.cg (L2 only): the baseline
//   l1_chase_smem,<KiB>   the same as l1_chase with the carveout at the most shared memory
//   l1_hit_bw,w<W>        bytes per cycle of 32 warps loading W-byte lanes (W = 4, 8, 16),
//                         coalesced, 8 independent loads a round, over 16 KiB that stay in L1
//   l1_broadcast,<warps>  cycles per warp-load of 32 lanes reading one word (a hit), `warps`
//                         warps of 8 independent loads a round (the naive GEMM's A operand)
//   naive_gemm,<n>        kernel cycles of C = A B, fp32, n x n, one thread per output in
//                         32 x 32-thread blocks, the k-loop reading A's row (one word for the
//                         warp) and B's row (32 consecutive words) from global memory
//   tiled_gemm,<n>        the same with 32 x 32 tiles of A and B staged in shared memory, two
//                         __syncthreads() a step
//   *_gemm_ns,<n>         their wall time (the span of the CTAs' %globaltimer stamps); cycles
//                         are that span times the clock the CTAs' clock64 stamps give
// l1_ncu.sh adds Nsight Compute's L1 hit rate, L2 and DRAM bytes for the two GEMMs.
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o l1_cache l1_cache.cu
#include <algorithm>
#include <initializer_list>
#include <numeric>
#include <random>
#include <string>
#include <vector>
#include "common.cuh"

constexpr int kLine = 128;
constexpr int kHops = 8192;

// ---------------------------------------------------------------- latency and capacity

template <bool CG>
__global__ void chase_kernel(const unsigned* p, unsigned long long* out, unsigned* sink) {
  unsigned i = 0;
  // One untimed pass over the whole cycle (kHops covers it) brings the lines in.
  for (int k = 0; k < kHops; ++k) {
    i = CG ? __ldcg(p + i) : p[i];
  }
  const long long t0 = clock64();
  for (int k = 0; k < kHops; ++k) {
    i = CG ? __ldcg(p + i) : p[i];
  }
  const long long t1 = clock64();
  out[0] = (unsigned long long)(t1 - t0);
  sink[0] = i;
}

// A random cycle through the footprint's lines: word (line * 32) holds the next line's word.
static std::vector<unsigned> chase_cycle(size_t bytes, unsigned seed) {
  const size_t lines = bytes / kLine, words = kLine / 4;
  std::vector<unsigned> order(lines);
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin() + 1, order.end(), std::mt19937(seed));
  std::vector<unsigned> mem(lines * words, 0u);
  for (size_t k = 0; k < lines; ++k) mem[order[k] * words] = order[(k + 1) % lines] * words;
  return mem;
}

template <bool CG>
static double chase(const std::vector<unsigned>& host, int carveout, unsigned long long* d_out,
                    unsigned* sink) {
  unsigned* d;
  CHECK(cudaMalloc(&d, host.size() * sizeof(unsigned)));
  CHECK(cudaMemcpy(d, host.data(), host.size() * sizeof(unsigned), cudaMemcpyHostToDevice));
  CHECK(cudaFuncSetAttribute(chase_kernel<CG>, cudaFuncAttributePreferredSharedMemoryCarveout, carveout));
  chase_kernel<CG><<<1, 1>>>(d, d_out, sink);
  LAUNCH_CHECK();
  chase_kernel<CG><<<1, 1>>>(d, d_out, sink);
  LAUNCH_CHECK();
  unsigned long long c = 0;
  CHECK(cudaMemcpy(&c, d_out, sizeof c, cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d));
  return (double)c / kHops;
}

// ---------------------------------------------------------------- bandwidth and broadcast

constexpr int kRegion = 16 << 10;  // bytes every warp-load of the bandwidth rows falls in
constexpr int kUnroll = 8;

// 32 warps: lane L of warp w reads W bytes at ((w * 32 + L) * W + u * 32 * W) mod kRegion.
template <int W>
__global__ void __launch_bounds__(1024) hit_bw_kernel(const char* p, int rounds,
                                                      unsigned long long* cyc, unsigned* sink) {
  const unsigned t = threadIdx.x;
  unsigned acc = 0;
  for (int pass = 0; pass < 2; ++pass) {  // pass 0 brings the region into L1
    __syncthreads();
    const long long t0 = clock64();
    for (int r = 0; r < (pass ? rounds : 1); ++r) {
      unsigned v[kUnroll][W / 4];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const char* a = p + ((t * W + (unsigned)(r * kUnroll + u) * 1024u) & (kRegion - 1));
        // asm volatile: plain C++ loads of a read-only region repeat across rounds, and the
        // compiler folded them (the first run gave 2,792 B/cycle).
        if constexpr (W == 4) {
          asm volatile("ld.global.u32 %0, [%1];" : "=r"(v[u][0]) : "l"(a));
        } else if constexpr (W == 8) {
          asm volatile("ld.global.v2.u32 {%0, %1}, [%2];" : "=r"(v[u][0]), "=r"(v[u][1]) : "l"(a));
        } else {
          asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                       : "=r"(v[u][0]), "=r"(v[u][1]), "=r"(v[u][2]), "=r"(v[u][3])
                       : "l"(a));
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
#pragma unroll
        for (int i = 0; i < W / 4; ++i) acc += v[u][i];
    }
    __syncthreads();
    const long long t1 = clock64();
    if (pass && t == 0) *cyc = (unsigned long long)(t1 - t0);
  }
  if (acc == 0x12345u) sink[t] = acc;  // keeps the loads alive
}

// Every lane of a warp reads the same word; the warps' words are 128 bytes apart, in L1.
__global__ void __launch_bounds__(1024) broadcast_kernel(const unsigned* p, int rounds,
                                                         unsigned long long* cyc, unsigned* sink) {
  const unsigned warp = threadIdx.x / 32;
  unsigned acc = 0;
  for (int pass = 0; pass < 2; ++pass) {
    __syncthreads();
    const long long t0 = clock64();
    for (int r = 0; r < (pass ? rounds : 1); ++r) {
      unsigned v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const unsigned* a = p + ((warp * 32 + (unsigned)(r * kUnroll + u) * 1024u) & (kRegion / 4 - 1));
        asm volatile("ld.global.u32 %0, [%1];" : "=r"(v[u]) : "l"(a));
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) acc += v[u];
    }
    __syncthreads();
    const long long t1 = clock64();
    if (pass && threadIdx.x == 0) *cyc = (unsigned long long)(t1 - t0);
  }
  if (acc == 0x12345u) sink[threadIdx.x] = acc;
}

// ---------------------------------------------------------------- the two GEMMs

// Per CTA: clock64 and %globaltimer at its start and end.
struct Stamps {
  long long c0, c1;
  unsigned long long g0, g1;
};

__device__ __forceinline__ void stamp_start(Stamps* s) {
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    Stamps& m = s[blockIdx.y * gridDim.x + blockIdx.x];
    m.g0 = globaltimer_ns();
    m.c0 = clock64();
  }
}
__device__ __forceinline__ void stamp_end(Stamps* s) {
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    Stamps& m = s[blockIdx.y * gridDim.x + blockIdx.x];
    m.c1 = clock64();
    m.g1 = globaltimer_ns();
  }
}

__global__ void __launch_bounds__(1024) naive_kernel(const float* A, const float* B, float* C, int n,
                                                     Stamps* s) {
  stamp_start(s);
  const int row = blockIdx.y * 32 + threadIdx.y, col = blockIdx.x * 32 + threadIdx.x;
  float acc = 0.f;
  for (int k = 0; k < n; ++k) acc += A[(size_t)row * n + k] * B[(size_t)k * n + col];
  C[(size_t)row * n + col] = acc;
  stamp_end(s);
}

__global__ void __launch_bounds__(1024) tiled_kernel(const float* A, const float* B, float* C, int n,
                                                     Stamps* s) {
  __shared__ float As[32][32], Bs[32][32];
  stamp_start(s);
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * 32 + ty, col = blockIdx.x * 32 + tx;
  float acc = 0.f;
  for (int k0 = 0; k0 < n; k0 += 32) {
    As[ty][tx] = A[(size_t)row * n + k0 + tx];
    Bs[ty][tx] = B[(size_t)(k0 + ty) * n + col];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 32; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  C[(size_t)row * n + col] = acc;
  stamp_end(s);
}

// Runs `kernel` twice (the first warms the clock and the caches' tags), and prints its cycles
// and nanoseconds from the second run's stamps.
template <typename K>
static void gemm(const char* name, K kernel, int n, const float* A, const float* B, float* C) {
  const dim3 grid(n / 32, n / 32), block(32, 32);
  const size_t ctas = (size_t)grid.x * grid.y;
  Stamps* d;
  CHECK(cudaMalloc(&d, ctas * sizeof(Stamps)));
  for (int rep = 0; rep < 2; ++rep) {
    kernel<<<grid, block>>>(A, B, C, n, d);
    LAUNCH_CHECK();
  }
  std::vector<Stamps> h(ctas);
  CHECK(cudaMemcpy(h.data(), d, ctas * sizeof(Stamps), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d));
  unsigned long long g0 = ~0ull, g1 = 0;
  double cycles = 0, ns = 0;
  for (const Stamps& m : h) {
    g0 = std::min(g0, m.g0);
    g1 = std::max(g1, m.g1);
    cycles += (double)(m.c1 - m.c0);
    ns += (double)(m.g1 - m.g0);
  }
  const double span = (double)(g1 - g0), mhz = cycles / ns * 1e3;
  char test[64];
  snprintf(test, sizeof test, "%s_gemm", name);
  row(test, n, span * mhz / 1e3, "cycles");
  snprintf(test, sizeof test, "%s_gemm_ns", name);
  row(test, n, span, "ns");
  snprintf(test, sizeof test, "%s_gemm_mhz", name);
  row(test, n, mhz, "mhz");
}

int main(int argc, char** argv) {
  // `l1_cache gemm` runs only the two GEMMs at n = 1024 (for l1_ncu.sh).
  const bool gemm_only = argc > 1 && std::string(argv[1]) == "gemm";
  header("l1_cache");
  unsigned long long* d_out;
  CHECK(cudaMalloc(&d_out, sizeof(unsigned long long)));
  unsigned* sink;
  CHECK(cudaMalloc(&sink, 1024 * sizeof(unsigned)));
  if (!gemm_only) {
    for (int kib : {8, 16, 32, 64, 96, 128, 160, 192, 224, 256, 384}) {
      const std::vector<unsigned> cycle = chase_cycle((size_t)kib << 10, 1234u + kib);
      row("l1_chase", kib, chase<false>(cycle, 0, d_out, sink), "cycles_per_hop");
      row("l1_chase_cg", kib, chase<true>(cycle, 0, d_out, sink), "cycles_per_hop");
      row("l1_chase_smem", kib, chase<false>(cycle, 100, d_out, sink), "cycles_per_hop");
    }
    char* region;
    CHECK(cudaMalloc(&region, kRegion));
    CHECK(cudaMemset(region, 1, kRegion));
    const int rounds = 256;
    auto bw = [&](auto kernel, int w) {
      for (int rep = 0; rep < 2; ++rep) {
        kernel<<<1, 1024>>>(region, rounds, d_out, sink);
        LAUNCH_CHECK();
      }
      unsigned long long c = 0;
      CHECK(cudaMemcpy(&c, d_out, sizeof c, cudaMemcpyDeviceToHost));
      char p[8];
      snprintf(p, sizeof p, "w%d", w);
      row("l1_hit_bw", p, 32.0 * rounds * kUnroll * 32 * w / (double)c, "bytes_per_clk_per_sm");
    };
    bw(hit_bw_kernel<4>, 4);
    bw(hit_bw_kernel<8>, 8);
    bw(hit_bw_kernel<16>, 16);
    for (int warps : {1, 4, 32}) {
      for (int rep = 0; rep < 2; ++rep) {
        broadcast_kernel<<<1, warps * 32>>>((const unsigned*)region, rounds, d_out, sink);
        LAUNCH_CHECK();
      }
      unsigned long long c = 0;
      CHECK(cudaMemcpy(&c, d_out, sizeof c, cudaMemcpyDeviceToHost));
      row("l1_broadcast", warps, (double)c / ((double)warps * rounds * kUnroll), "cycles_per_warp_load");
    }
    CHECK(cudaFree(region));
  }
  // A vector: a conditional between two initializer lists leaves their arrays dangling.
  const std::vector<int> sizes = gemm_only ? std::vector<int>{1024} : std::vector<int>{512, 1024, 2048};
  for (int n : sizes) {
    const size_t elems = (size_t)n * n;
    float *A, *B, *C;
    CHECK(cudaMalloc(&A, elems * sizeof(float)));
    CHECK(cudaMalloc(&B, elems * sizeof(float)));
    CHECK(cudaMalloc(&C, elems * sizeof(float)));
    std::vector<float> h(elems);
    std::mt19937 rng(n);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (float& x : h) x = u(rng);
    CHECK(cudaMemcpy(A, h.data(), elems * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(B, h.data(), elems * sizeof(float), cudaMemcpyHostToDevice));
    gemm("naive", naive_kernel, n, A, B, C);
    gemm("tiled", tiled_kernel, n, A, B, C);
    CHECK(cudaFree(A));
    CHECK(cudaFree(B));
    CHECK(cudaFree(C));
  }
  footer();
  return 0;
}
