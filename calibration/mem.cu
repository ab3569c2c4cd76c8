// Memory latency and L2 capacity microbenchmarks, cycles from clock64() inside the kernel:
//   l2_chase / hbm_chase : cycles per hop of one thread's pointer chase (ld.global.cg, so L1 is
//                          bypassed) through `param` distinct 128-byte lines at random places
//                          in a 32 MiB buffer: warm (every line in L2) or cold (L2 flushed by
//                          writing 512 MiB elsewhere first)
//   l2_hop_pNN / hbm_hop_pNN : percentiles of single hops timed with %clock around the load and
//                          a shared-memory store of its value (the store waits for the data);
//                          *_hop_overhead is their mean minus the plain chase's: what the timing
//                          adds. Two L2 partitions show up as two clusters (near / far)
//   l2_hist / hbm_hist   : the same single hops, counted in 20-cycle bins (param = bin start)
//   l2_footprint         : GPU-wide bytes per cycle of 132 CTAs (one per SM) re-reading a
//                          buffer of `param` MiB, each CTA its own contiguous slice, with
//                          16-byte ld.global.cg: the L2 capacity knee
//   l2_disjoint          : the same over a 32 MiB (L2-resident) buffer with `param` CTAs: L2
//                          bandwidth vs SMs when no two SMs read the same line (mem_bw.cu's
//                          l2_read has every SM read the whole buffer)
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o mem mem.cu
#include "common.cuh"
#include <algorithm>
#include <map>
#include <random>
#include <vector>

constexpr int MAX_HOPS = 4096;

__global__ void chase(uint64_t start, int hops, unsigned long long* out) {
  uint64_t p = start;
  long long t0 = clock64();
  for (int i = 0; i < hops; ++i) asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p) : : "memory");
  long long t1 = clock64();
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  out[0] = t1 - t0;
  out[1] = p;
  out[2] = smid;
}

__global__ void chase_hops(uint64_t start, int hops, unsigned* lat) {
  __shared__ unsigned s_lat[MAX_HOPS];
  __shared__ unsigned s_val;
  const uint32_t val_addr = (uint32_t)__cvta_generic_to_shared(&s_val);
  uint64_t p = start;
  for (int i = 0; i < hops; ++i) {
    unsigned t0, t1;
    asm volatile("mov.u32 %0, %%clock;" : "=r"(t0) : : "memory");
    asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p) : : "memory");
    asm volatile("st.shared.u32 [%0], %1;" : : "r"(val_addr), "r"((unsigned)p) : "memory");
    asm volatile("mov.u32 %0, %%clock;" : "=r"(t1) : : "memory");
    s_lat[i] = t1 - t0;
  }
  for (int i = 0; i < hops; ++i) lat[i] = s_lat[i];
}

// A random cycle through `hops` distinct lines of buf (bytes); returns its start address.
static uint64_t build_chain(char* d_buf, size_t bytes, int hops, unsigned seed) {
  std::mt19937_64 rng(seed);
  const size_t lines = bytes / 128;
  std::vector<size_t> pick;
  std::map<size_t, bool> seen;
  while ((int)pick.size() < hops) {
    size_t l = rng() % lines;
    if (!seen[l]) { seen[l] = true; pick.push_back(l); }
  }
  std::vector<uint64_t> host(bytes / 8, 0);
  const uint64_t base = (uint64_t)d_buf;
  for (int k = 0; k < hops; ++k) host[pick[k] * 16] = base + pick[(k + 1) % hops] * 128;
  CHECK(cudaMemcpy(d_buf, host.data(), bytes, cudaMemcpyHostToDevice));
  return base + pick[0] * 128;
}

static void flush_l2(char* scratch, size_t bytes) {
  static int v = 0;
  CHECK(cudaMemset(scratch, ++v, bytes));
  CHECK(cudaDeviceSynchronize());
}

static double chase_cycles(uint64_t start, int hops, unsigned long long* d_out) {
  chase<<<1, 1>>>(start, hops, d_out);
  LAUNCH_CHECK();
  unsigned long long h[3];
  CHECK(cudaMemcpy(h, d_out, sizeof h, cudaMemcpyDeviceToHost));
  return (double)h[0] / hops;
}

static std::vector<double> hop_latencies(uint64_t start, int hops, unsigned* d_lat) {
  chase_hops<<<1, 1>>>(start, hops, d_lat);
  LAUNCH_CHECK();
  std::vector<unsigned> h(hops);
  CHECK(cudaMemcpy(h.data(), d_lat, hops * sizeof(unsigned), cudaMemcpyDeviceToHost));
  std::vector<double> v(h.begin(), h.end());
  std::sort(v.begin(), v.end());
  return v;
}

static void report_hops(const char* name, const std::vector<double>& v, double plain) {
  double mean = 0;
  for (double x : v) mean += x;
  mean /= v.size();
  char t[64];
  for (int p : {5, 10, 25, 50, 75, 90, 95}) {
    snprintf(t, sizeof t, "%s_hop_p%02d", name, p);
    row(t, (long)v.size(), v[std::min(v.size() - 1, v.size() * p / 100)], "cycles");
  }
  snprintf(t, sizeof t, "%s_hop_overhead", name);
  row(t, (long)v.size(), mean - plain, "cycles");
  std::map<int, int> hist;
  for (double x : v) hist[(int)x / 20 * 20]++;
  snprintf(t, sizeof t, "%s_hist", name);
  for (auto& kv : hist) row(t, kv.first, kv.second, "hops");
}

constexpr int THREADS = 1024;
constexpr int UNROLL = 8;

// CTA c reads its contiguous slice [c * vecs / grid, (c + 1) * vecs / grid) `passes` times.
__global__ void __launch_bounds__(THREADS) slice_read(const int4* __restrict__ p, size_t vecs, int passes,
                                                     unsigned long long* cycles, int4* sink) {
  extern __shared__ int pad[];  // one CTA per SM
  int4 acc = make_int4(0, 0, 0, 0);
  const size_t lo = vecs * blockIdx.x / gridDim.x, hi = vecs * (blockIdx.x + 1) / gridDim.x;
  __syncthreads();
  long long t0 = clock64();
  for (int pass = 0; pass < passes; ++pass) {
    for (size_t i = lo + threadIdx.x; i < hi; i += THREADS * UNROLL) {
      int4 v[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        size_t j = i + (size_t)u * THREADS;
        v[u] = j < hi ? __ldcg(p + j) : make_int4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) { acc.x ^= v[u].x; acc.y ^= v[u].y; acc.z ^= v[u].z; acc.w ^= v[u].w; }
    }
  }
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
  if (acc.x == 0x7fffffff && acc.y == 1) sink[threadIdx.x] = acc;
  (void)pad;
}

// GPU-wide bytes per cycle of `ctas` CTAs re-reading disjoint slices of `bytes`: one warm-up
// pass, then `passes` timed ones; the slowest CTA's cycles.
static double slice_bw(const char* buf, size_t bytes, int ctas, int passes, int smem, unsigned long long* d_out,
                       int4* sink) {
  const size_t vecs = bytes / 16;
  slice_read<<<ctas, THREADS, smem>>>((const int4*)buf, vecs, 1, d_out, sink);
  LAUNCH_CHECK();
  slice_read<<<ctas, THREADS, smem>>>((const int4*)buf, vecs, passes, d_out, sink);
  LAUNCH_CHECK();
  std::vector<unsigned long long> c(ctas);
  CHECK(cudaMemcpy(c.data(), d_out, ctas * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  return (double)bytes * passes / (double)*std::max_element(c.begin(), c.end());
}

int main() {
  header("mem");
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  unsigned long long* d_out;
  CHECK(cudaMalloc(&d_out, 4096 * sizeof(unsigned long long)));
  unsigned* d_lat;
  CHECK(cudaMalloc(&d_lat, MAX_HOPS * sizeof(unsigned)));
  const size_t scratch_bytes = 512ull << 20, buf_bytes = 32ull << 20;
  char *scratch, *warm, *cold;
  CHECK(cudaMalloc(&scratch, scratch_bytes));
  CHECK(cudaMalloc(&warm, buf_bytes));
  CHECK(cudaMalloc(&cold, buf_bytes));
  const int hops = 2048;

  {  // L2 hits: one warm-up pass, then the timed chase and the timed single hops.
    uint64_t s = build_chain(warm, buf_bytes, hops, 1);
    chase_cycles(s, hops, d_out);
    const double plain = chase_cycles(s, hops, d_out);
    unsigned long long h[3];
    CHECK(cudaMemcpy(h, d_out, sizeof h, cudaMemcpyDeviceToHost));
    row("l2_chase", hops, plain, "cycles");
    row("chase_smid", "block0", (double)h[2], "sm");
    report_hops("l2", hop_latencies(s, hops, d_lat), plain);
  }
  {  // DRAM: flush L2 before each cold pass.
    uint64_t s = build_chain(cold, buf_bytes, hops, 2);
    flush_l2(scratch, scratch_bytes);
    const double plain = chase_cycles(s, hops, d_out);
    row("hbm_chase", hops, plain, "cycles");
    flush_l2(scratch, scratch_bytes);
    report_hops("hbm", hop_latencies(s, hops, d_lat), plain);
  }
  {  // L2 capacity knee (all SMs), and SMs sharing an L2-resident 32 MiB buffer.
    const int sms = prop.multiProcessorCount;
    const int smem = (int)prop.sharedMemPerMultiprocessor / 2 + 1024;
    CHECK(cudaFuncSetAttribute(slice_read, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int4* sink;
    CHECK(cudaMalloc(&sink, THREADS * sizeof(int4)));
    for (int mib : {8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 96, 128, 192, 256, 512}) {
      const size_t bytes = (size_t)mib << 20;
      const int passes = std::max(2, (int)((4096ull << 20) / bytes));
      row("l2_footprint", mib, slice_bw(scratch, bytes, sms, passes, smem, d_out, sink), "bytes_per_clk");
    }
    for (int n : {1, 2, 4, 8, 16, 33, 66, 132}) {
      if (n > sms) continue;
      row("l2_disjoint", n, slice_bw(scratch, 32ull << 20, n, n < 16 ? 1 : 4, smem, d_out, sink), "bytes_per_clk");
    }
  }
  footer();
  return 0;
}
