// SM-core microbenchmarks, one SM each (one CTA), cycles from clock64() inside the kernel:
//   ffma_rate / ex2_rate : warp-instructions per cycle per SM, 32 warps with 8 independent chains
//   ffma_dep / ex2_dep   : cycles per instruction of one warp's dependent chain
//   smem_chase           : cycles per hop of one thread's shared-memory pointer chase
//   smem_bw              : bytes per cycle per SM, 32 warps of conflict-free 16-byte loads
//   smem_ld              : cycles per warp-load per SM for a width and a lane stride (param
//                          "wW_sS": W bytes per lane, lane L at byte L*S; S = 0 is every lane
//                          on the same W bytes, a broadcast); smem_degree is that over the
//                          conflict-free 4-byte load's, rounded to an integer
//   bar_sync             : cycles per bar.sync round of a CTA of `param` threads
//   mbar_pingpong        : cycles per round trip of two warps handing an mbarrier phase back
//                          and forth (arrive -> the other warp's wait loop sees it -> arrive),
//                          waiting with try_wait (param try_wait) or test_wait (test_wait)
//   cta_gap              : cycles between one CTA's last clock read and the next CTA's first on
//                          the same SM (launch + retire), one CTA per SM at a time
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o core core.cu
#include "common.cuh"
#include <algorithm>
#include <map>
#include <vector>

constexpr int UNROLL = 32;

// OP 0: FFMA, OP 1: MUFU.EX2. Each thread runs CHAINS independent dependent chains.
template <int OP, int CHAINS>
__global__ void pipe_kernel(int iters, float a, float b, unsigned long long* cyc, float* sink) {
  float x[CHAINS];
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) x[c] = threadIdx.x * 1e-3f + c;
  __syncthreads();
  long long t0 = clock64();
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
      for (int c = 0; c < CHAINS; ++c) {
        if (OP == 0) x[c] = fmaf(x[c], a, b);
        else asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(x[c]));
      }
    }
  }
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) *cyc = t1 - t0;
  float s = 0;
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) s += x[c];
  if (s == 1.2345f) sink[threadIdx.x] = s;  // keeps the chains alive
}

template <int OP, int CHAINS>
static double pipe_cycles(int threads, int iters, unsigned long long* d_cyc, float* sink) {
  pipe_kernel<OP, CHAINS><<<1, threads>>>(iters, 0.999f, 1e-4f, d_cyc, sink);  // warm-up
  LAUNCH_CHECK();
  pipe_kernel<OP, CHAINS><<<1, threads>>>(iters, 0.999f, 1e-4f, d_cyc, sink);
  LAUNCH_CHECK();
  unsigned long long c;
  CHECK(cudaMemcpy(&c, d_cyc, sizeof c, cudaMemcpyDeviceToHost));
  return (double)c;
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}

// One thread follows a ring of shared-memory byte addresses: each load's result is the next
// load's address.
__global__ void smem_chase(int iters, unsigned long long* cyc, unsigned* sink) {
  __shared__ unsigned ring[1024];
  const unsigned base = smem_addr(ring);
  for (int i = threadIdx.x; i < 1024; i += blockDim.x) ring[i] = base + ((i + 97) % 1024) * 4;
  __syncthreads();
  if (threadIdx.x != 0) return;
  unsigned p = base;
  long long t0 = clock64();
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(p));
  }
  long long t1 = clock64();
  *cyc = t1 - t0;
  sink[0] = p;
}

// Every warp issues UNROLL independent loads per iteration; lane L reads WIDTH bytes at
// byte L * stride of a 32 KiB buffer.
template <int WIDTH>
__global__ void smem_loads(int iters, int stride, unsigned long long* cyc, unsigned* sink) {
  extern __shared__ uint4 sbuf[];
  unsigned* words = (unsigned*)sbuf;
  for (int i = threadIdx.x; i < 8192; i += blockDim.x) words[i] = i;
  const unsigned lane = threadIdx.x % 32;
  const unsigned addr = smem_addr(sbuf) + (lane * stride) % 32768;
  unsigned acc = 0;
  __syncthreads();
  long long t0 = clock64();
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      unsigned v0, v1, v2, v3;
      if (WIDTH == 4) {
        asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(v0) : "r"(addr));
      } else if (WIDTH == 8) {
        asm volatile("ld.volatile.shared.v2.u32 {%0, %1}, [%2];" : "=r"(v0), "=r"(v1) : "r"(addr));
      } else {
        asm volatile("ld.volatile.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3) : "r"(addr));
      }
      // Every component is consumed: unused ones would let ptxas narrow the load.
      if (WIDTH == 4) acc ^= v0;
      else if (WIDTH == 8) acc ^= v0 ^ v1;
      else acc ^= v0 ^ v1 ^ v2 ^ v3;
    }
  }
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) *cyc = t1 - t0;
  if (acc == 0xdeadbeef) sink[threadIdx.x] = acc;
}

template <int WIDTH>
static double smem_cycles_per_load(int stride, unsigned long long* d_cyc, unsigned* sink) {
  const int threads = 1024, iters = 64;
  CHECK(cudaFuncSetAttribute(smem_loads<WIDTH>, cudaFuncAttributeMaxDynamicSharedMemorySize, 32768));
  smem_loads<WIDTH><<<1, threads, 32768>>>(iters, stride, d_cyc, sink);
  LAUNCH_CHECK();
  smem_loads<WIDTH><<<1, threads, 32768>>>(iters, stride, d_cyc, sink);
  LAUNCH_CHECK();
  unsigned long long c;
  CHECK(cudaMemcpy(&c, d_cyc, sizeof c, cudaMemcpyDeviceToHost));
  return (double)c / ((threads / 32) * (double)iters * UNROLL);
}

template <int THREADS>
__global__ void bar_kernel(int iters, unsigned long long* cyc) {
  __syncthreads();
  long long t0 = clock64();
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) asm volatile("bar.sync 1, %0;" ::"n"(THREADS));
  }
  long long t1 = clock64();
  if (threadIdx.x == 0) *cyc = t1 - t0;
}

template <int THREADS>
static double bar_cycles(unsigned long long* d_cyc) {
  const int iters = 256;
  bar_kernel<THREADS><<<1, THREADS>>>(iters, d_cyc);
  LAUNCH_CHECK();
  bar_kernel<THREADS><<<1, THREADS>>>(iters, d_cyc);
  LAUNCH_CHECK();
  unsigned long long c;
  CHECK(cudaMemcpy(&c, d_cyc, sizeof c, cudaMemcpyDeviceToHost));
  return (double)c / ((double)iters * UNROLL);
}

__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// TEST 0: try_wait (may suspend the thread until the phase completes, as CUTLASS waits);
// TEST 1: test_wait (returns at once; the loop polls).
template <int TEST>
__device__ __forceinline__ bool mbar_poll(uint32_t bar, uint32_t parity) {
  uint32_t ok;
  if (TEST)
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
  else
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
  return ok != 0;
}

// Lane 0 of warp 0 arrives on bar 0 and waits on bar 1; lane 0 of warp 1 waits on bar 0 and
// arrives on bar 1. One iteration is one round trip.
template <int TEST>
__global__ void mbar_pingpong(int iters, unsigned long long* cyc) {
  __shared__ __align__(8) uint64_t bars[2];
  const uint32_t b0 = smem_addr(&bars[0]), b1 = smem_addr(&bars[1]);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b0));
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b1));
    asm volatile("fence.mbarrier_init.release.cluster;");
  }
  __syncthreads();
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 != 0) return;
  long long t0 = clock64();
  for (int i = 0; i < iters; ++i) {
    // A wait that never ends (a mistake) gives up after about a second instead of hanging.
    if (warp == 0) {
      mbar_arrive(b0);
      while (!mbar_poll<TEST>(b1, i & 1) && clock64() - t0 < 2000000000LL) {}
    } else {
      while (!mbar_poll<TEST>(b0, i & 1) && clock64() - t0 < 2000000000LL) {}
      mbar_arrive(b1);
    }
  }
  long long t1 = clock64();
  if (warp == 0) *cyc = t1 - t0;
}

// One CTA per SM at a time (its shared memory); thread 0 records its SM and first and last
// clock64 reads around a fixed spin.
__global__ void cta_gap_kernel(long long spin, unsigned long long* rec) {
  extern __shared__ int pad[];
  if (threadIdx.x != 0) return;
  long long t0 = clock64(), t1 = t0;
  while (t1 - t0 < spin) t1 = clock64();
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  rec[3 * blockIdx.x + 0] = smid;
  rec[3 * blockIdx.x + 1] = t0;
  rec[3 * blockIdx.x + 2] = t1;
  (void)pad;
}

int main() {
  header("core");
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  unsigned long long* d_cyc;
  CHECK(cudaMalloc(&d_cyc, 1 << 20));
  float* fsink;
  CHECK(cudaMalloc(&fsink, 4096 * sizeof(float)));
  unsigned* usink;
  CHECK(cudaMalloc(&usink, 4096 * sizeof(unsigned)));

  {  // Pipes: throughput (32 warps x 8 chains) and dependent latency (one warp, one chain).
    const int iters = 256;
    double c = pipe_cycles<0, 8>(1024, iters, d_cyc, fsink);
    row("ffma_rate", 1024, 32.0 * iters * UNROLL * 8 / c, "warp_inst_per_clk_per_sm");
    c = pipe_cycles<1, 8>(1024, iters / 4, d_cyc, fsink);
    row("ex2_rate", 1024, 32.0 * (iters / 4) * UNROLL * 8 / c, "warp_inst_per_clk_per_sm");
    c = pipe_cycles<0, 1>(32, iters, d_cyc, fsink);
    row("ffma_dep", 32, c / (iters * UNROLL), "cycles");
    c = pipe_cycles<1, 1>(32, iters, d_cyc, fsink);
    row("ex2_dep", 32, c / (iters * UNROLL), "cycles");
  }
  {  // Shared memory.
    const int iters = 256;
    smem_chase<<<1, 32>>>(iters, d_cyc, usink);
    LAUNCH_CHECK();
    smem_chase<<<1, 32>>>(iters, d_cyc, usink);
    LAUNCH_CHECK();
    unsigned long long c;
    CHECK(cudaMemcpy(&c, d_cyc, sizeof c, cudaMemcpyDeviceToHost));
    row("smem_chase", 1, (double)c / (iters * UNROLL), "cycles");

    row("smem_bw", 16, 512.0 / smem_cycles_per_load<16>(16, d_cyc, usink), "bytes_per_clk_per_sm");
    const double base = smem_cycles_per_load<4>(4, d_cyc, usink);
    struct Case { int width, stride; };
    const Case cases[] = {{4, 0}, {4, 4}, {4, 8}, {4, 12}, {4, 16}, {4, 32}, {4, 64}, {4, 128},
                          {4, 256}, {8, 0}, {8, 8}, {8, 16}, {16, 0},
                          {16, 16}, {16, 32}, {16, 256}};
    for (const Case& k : cases) {
      double cpl = k.width == 4 ? smem_cycles_per_load<4>(k.stride, d_cyc, usink)
                   : k.width == 8 ? smem_cycles_per_load<8>(k.stride, d_cyc, usink)
                                  : smem_cycles_per_load<16>(k.stride, d_cyc, usink);
      char p[32];
      snprintf(p, sizeof p, "w%d_s%d", k.width, k.stride);
      row("smem_ld", p, cpl, "cycles_per_warp_load_per_sm");
      row("smem_degree", p, (double)std::max(1L, std::lround(cpl / base)), "wavefronts");
    }
  }
  {  // Barriers.
    row("bar_sync", 64, bar_cycles<64>(d_cyc), "cycles");
    row("bar_sync", 128, bar_cycles<128>(d_cyc), "cycles");
    row("bar_sync", 256, bar_cycles<256>(d_cyc), "cycles");
    row("bar_sync", 512, bar_cycles<512>(d_cyc), "cycles");
    row("bar_sync", 1024, bar_cycles<1024>(d_cyc), "cycles");
    const int iters = 4096;
    unsigned long long c;
    for (int rep = 0; rep < 2; ++rep) mbar_pingpong<0><<<1, 64>>>(iters, d_cyc);
    LAUNCH_CHECK();
    CHECK(cudaMemcpy(&c, d_cyc, sizeof c, cudaMemcpyDeviceToHost));
    row("mbar_pingpong", "try_wait", (double)c / iters, "cycles_per_round_trip");
    for (int rep = 0; rep < 2; ++rep) mbar_pingpong<1><<<1, 64>>>(iters, d_cyc);
    LAUNCH_CHECK();
    CHECK(cudaMemcpy(&c, d_cyc, sizeof c, cudaMemcpyDeviceToHost));
    row("mbar_pingpong", "test_wait", (double)c / iters, "cycles_per_round_trip");
  }
  {  // CTA turnaround: 16 CTAs per SM, one resident at a time.
    const int sms = prop.multiProcessorCount, per_sm = 16, ctas = sms * per_sm;
    const int smem = (int)prop.sharedMemPerMultiprocessor / 2 + 1024;
    CHECK(cudaFuncSetAttribute(cta_gap_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    for (int rep = 0; rep < 2; ++rep) cta_gap_kernel<<<ctas, 128, smem>>>(2000, d_cyc);
    LAUNCH_CHECK();
    std::vector<unsigned long long> rec(3 * ctas);
    CHECK(cudaMemcpy(rec.data(), d_cyc, rec.size() * 8, cudaMemcpyDeviceToHost));
    std::map<unsigned long long, std::vector<std::pair<unsigned long long, unsigned long long>>> by_sm;
    for (int i = 0; i < ctas; ++i) by_sm[rec[3 * i]].push_back({rec[3 * i + 1], rec[3 * i + 2]});
    std::vector<double> gaps;
    for (auto& kv : by_sm) {
      auto& v = kv.second;
      std::sort(v.begin(), v.end());
      for (size_t i = 1; i < v.size(); ++i) gaps.push_back((double)v[i].first - (double)v[i - 1].second);
    }
    std::sort(gaps.begin(), gaps.end());
    row("cta_gap", 128, gaps.empty() ? -1.0 : gaps[gaps.size() / 2], "cycles");
  }
  footer();
  return 0;
}
