// The memory system's limits, on one H200, cycles from clock64() inside the kernels:
//
//   tma_burst_issue, tma_burst_done : one thread issues a burst of boxes back to back, each on
//                       its own mbarrier; cycles from the burst's start to box g's issue
//                       returning (the issuing thread's clock) and to box g's complete-tx (seen
//                       by an observer thread polling the boxes' mbarriers in issue order with
//                       test_wait, so a box seen done is also after the previous box's sighting);
//                       param <shape>_<src>_<g>. Shapes: c<R> = R rows of 128 B from a tensor
//                       of 128-byte rows (contiguous boxes), s<R> = a GEMM operand's box, R
//                       rows of 64 bf16 (128 B) from a 4096-column tensor (8 KiB row pitch),
//                       swizzle 128B, L2 promotion 128B, consecutive boxes 64 columns apart
//                       (consecutive k-tiles). src: warm (the same boxes loaded just before,
//                       L2-resident) or cold (L2 flushed)
//   tma_burst_first, tma_burst_last, tma_burst_issued : the same bursts issued by lanes 0..L-1
//                       of W warps (boxes dealt round-robin): cycles to the first and last
//                       complete-tx and to the last issue; param <shape>_<src>_p<W>x<L>_n<boxes>
//   tma_stream         : bytes per cycle of one thread streaming boxes through `stages` stages,
//                       each refilled as soon as its last fill landed (waits with try_wait or a
//                       test_wait poll); param k<kind>_s<stages>_<try|test>; kind 0: one
//                       contiguous 16 KiB box per stage, 1: one 16 KiB GEMM-operand box (s128),
//                       2: two of them (a 128 x 128 x 64 k-tile's A and B)
//   tma_burst_self     : one thread issues n warm boxes (c1 or c128) back to back, each on its
//                       own mbarrier (bars) or all on one (onebar), then waits for them itself:
//                       cycles from before the first issue to the last completion seen
//   inflight_hbm, inflight_l2 : bytes per cycle of ONE SM reading with T threads that each keep
//                       U independent 16-byte ld.global.cg in flight (T*U*16 bytes requested),
//                       from DRAM (cold, a region never read before in the run after an L2
//                       flush) or from L2 (an 8 MiB region read once before); param t<T>_u<U>.
//                       inflight_l2_fp: the L2 rate of 1024 threads at footprints of 4-32 MiB.
//                       The compiler consumes probe_read's loads early at U = 8 (see its SASS);
//                       inflight_all_hbm / inflight_all_l2: probe_inflight, whose U loads are
//                       all issued before any is used, T = 32..1024, U = 1..16
//   hbm_mix            : GPU-wide bytes per cycle (read + written) of 132 CTAs that each move
//                       32 MiB with R 16-byte streaming loads and 4-R stores per 4 positions,
//                       every position touched once; param r<R>w<4-R>. Also hbm_mix_gbs (GB/s)
//   launch_interval    : ns between consecutive kernels' starts (%globaltimer of CTA 0), 256
//                       launches of an empty kernel of 1 or 132 CTAs in one stream, eager or
//                       replayed from a CUDA graph; median. launch_wall: host wall time per
//                       launch (cudaEvent over the 256)
//   l2_side            : per SM (param = smid), the fraction of 1024 random lines of a 16 MiB
//                       buffer (one chain, each SM starting 7 lines further along it)
//                       L2-resident buffer whose single-hop latency is below that line's median
//                       over all SMs, agreeing with SM 0's pattern (near SM 0's partition: ~1;
//                       the other partition: ~0); l2_near_lat / l2_far_lat: per SM, mean hop
//                       latency of the lines fast / slow for it. l2_part_*: the summary
//   l2_hop_hist        : those hops (all SMs) in 10-cycle bins; l2_hop_raw: the first 64 lines'
//                       hops from SMs 0, 8, 16, 24
//   l2_class_*         : 131,072 lines (16 MiB) classified by the hop latency from one SM of
//                       each side: the fraction near side A, how often neighbouring lines share
//                       their side (granularity of the partition hash), mean near / far latency
//   l2_part_bw         : GPU-wide bytes per cycle of SMs reading lines of the 16 MiB buffer
//                       from an index list: their own side's lines (near) or the other side's
//                       (far), each SM its own part of the list (disjoint) or every SM of a
//                       side the whole list (shared); param <near|far>_<disjoint|shared>_<K>
//                       with K SMs of each side taking part
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o memsys memsys.cu
#include "tma_util.cuh"
#include <algorithm>
#include <random>
#include <string>
#include <vector>

constexpr int kRingBytes = 196608;  // 192 KiB of dynamic shared memory for bursts
constexpr int kMaxBoxes = 32;

__device__ __forceinline__ unsigned smid() {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}

// ---------------------------------------------------------------------------------------------
// TMA bursts.
struct Burst {
  int boxes, warps, lanes;  // boxes in all; issuing warps; issuing lanes per warp
  int box_bytes;
  int row_step, col_step;   // box g at (col g*col_step, row g*row_step)
  unsigned long long* out;  // [g]: issue cycles, [32 + g]: complete-tx cycles
};

__global__ void burst_kernel(const __grid_constant__ CUtensorMap map, Burst p) {
  extern __shared__ __align__(1024) uint8_t ring[];
  __shared__ __align__(8) uint64_t bars[kMaxBoxes];
  __shared__ long long s_t0, s_issue[kMaxBoxes];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int g = 0; g < p.boxes; ++g) bar_init(saddr(&bars[g]));
    s_t0 = clock64();
  }
  __syncthreads();
  const long long t0 = s_t0;
  const int issuers = p.warps * p.lanes;
  if (warp < p.warps) {
    const int i = warp * p.lanes + lane;
    for (int g = i; lane < p.lanes && g < p.boxes; g += issuers) {
      arrive_expect(saddr(&bars[g]), p.box_bytes);
      tma_load(saddr(ring + g * p.box_bytes), &map, g * p.row_step, saddr(&bars[g]), g * p.col_step);
      s_issue[g] = clock64() - t0;
    }
  } else if (lane == 0) {
    // Observer: one thread polls the boxes' mbarriers in issue order.
    for (int g = 0; g < p.boxes; ++g) {
      const uint32_t bar = saddr(&bars[g]);
      for (;;) {
        uint32_t ok;
        asm volatile(
            "{\n .reg .pred q;\n mbarrier.test_wait.parity.shared::cta.b64 q, [%1], 0;\n selp.u32 %0, 1, 0, q;\n}\n"
            : "=r"(ok) : "r"(bar) : "memory");
        const long long t = clock64();
        if (ok) {
          p.out[32 + g] = t - t0;
          break;
        }
        if (t - t0 > 2000000000LL) {
          atomicAdd(&g_timeouts, 1u);
          g = p.boxes;
          break;
        }
      }
    }
  }
  __syncthreads();
  if (threadIdx.x < p.boxes) p.out[threadIdx.x] = s_issue[threadIdx.x];
}

// A stream as a producer runs it: one thread, `stages` stages with an mbarrier each; a stage
// is refilled as soon as its previous fill has landed (no consumer). kind 0: one contiguous
// 16 KiB box per stage; 1: one GEMM-operand box (128 rows x 64 bf16, 8 KiB row pitch, swizzle
// 128B); 2: two such boxes per stage (A and B of a 128 x 128 x 64 k-tile).
struct Stream {
  int stages, steps, kind, test;
  unsigned long long* out;
};

__device__ __forceinline__ void wait_test(uint32_t bar, uint32_t parity) {
  long long t0 = clock64();
  for (;;) {
    uint32_t ok;
    asm volatile(
        "{\n .reg .pred q;\n mbarrier.test_wait.parity.shared::cta.b64 q, [%1], %2;\n selp.u32 %0, 1, 0, q;\n}\n"
        : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
    if (ok) return;
    if (clock64() - t0 > 2000000000LL) { atomicAdd(&g_timeouts, 1u); return; }
  }
}

__global__ void stream_kernel(const __grid_constant__ CUtensorMap map, Stream p) {
  extern __shared__ __align__(1024) uint8_t ring[];
  __shared__ __align__(8) uint64_t bars[16];
  if (threadIdx.x != 0) return;
  for (int s = 0; s < p.stages; ++s) bar_init(saddr(&bars[s]));
  const int box = 16384, stage_bytes = p.kind == 2 ? 2 * box : box;
  const long long t0 = clock64();
  // Stage and phase as counters (no division by the run-time stage count in the loop).
  int s = 0;
  uint32_t parity = 1;  // the phase the stage's previous fill completed (none on the first lap)
  for (int j = 0; j < p.steps; ++j) {
    const uint32_t bar = saddr(&bars[s]);
    if (j >= p.stages) {
      if (p.test) wait_test(bar, parity);
      else wait_phase(bar, parity);
    }
    arrive_expect(bar, stage_bytes);
    const uint32_t dst = saddr(ring + s * stage_bytes);
    if (p.kind == 0) {
      tma_load(dst, &map, (j * 128) & 65535, bar);
    } else {
      tma_load(dst, &map, 0, bar, (j % 64) * 64);
      if (p.kind == 2) tma_load(dst + box, &map, 128, bar, (j % 64) * 64);
    }
    if (++s == p.stages) {
      s = 0;
      parity ^= 1;
    }
  }
  for (int j = p.steps > p.stages ? p.steps - p.stages : 0; j < p.steps; ++j)
    wait_phase(saddr(&bars[j % p.stages]), (j / p.stages) & 1);
  p.out[0] = clock64() - t0;
}

// One thread issues n boxes back to back (each on its own mbarrier, or all on one), then waits
// for them in order: cycles from the first issue to the last completion, no observer.
__global__ void burst_self(const __grid_constant__ CUtensorMap map, int n, int one_bar, int rows,
                           unsigned long long* out) {
  extern __shared__ __align__(1024) uint8_t ring[];
  __shared__ __align__(8) uint64_t bars[kMaxBoxes];
  if (threadIdx.x != 0) return;
  for (int g = 0; g < n; ++g) bar_init(saddr(&bars[g]));
  const int bytes = rows * 128;
  const long long t0 = clock64();
  if (one_bar) arrive_expect(saddr(&bars[0]), bytes * n);
  for (int g = 0; g < n; ++g) {
    const uint32_t bar = saddr(&bars[one_bar ? 0 : g]);
    if (!one_bar) arrive_expect(bar, bytes);
    tma_load(saddr(ring + g * bytes), &map, g * rows, bar);
  }
  for (int g = 0; g < (one_bar ? 1 : n); ++g) wait_phase(saddr(&bars[g]), 0);
  out[0] = clock64() - t0;
}

static char* g_scratch;
static const size_t kScratch = 256u << 20;
static void flush_l2() {
  static int v = 0;
  CHECK(cudaMemset(g_scratch, ++v, kScratch));
  CHECK(cudaDeviceSynchronize());
}

struct BurstResult {
  std::vector<long long> issue, done;
  long long first, last, issued;
};

static BurstResult run_burst(const CUtensorMap& map, Burst p, bool cold, unsigned long long* d) {
  p.out = d;
  const int threads = 32 * (p.warps + 1);
  std::vector<BurstResult> reps;
  for (int rep = 0; rep < 4; ++rep) {  // rep 0 warms the boxes into L2 (and the code)
    if (cold) flush_l2();
    CHECK(cudaMemset(d, 0, 64 * sizeof(unsigned long long)));
    burst_kernel<<<1, threads, kRingBytes>>>(map, p);
    LAUNCH_CHECK();
    unsigned long long h[64];
    CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    if (rep == 0) continue;
    BurstResult r;
    r.first = 1LL << 62;
    r.last = r.issued = 0;
    for (int g = 0; g < p.boxes; ++g) {
      r.issue.push_back((long long)h[g]);
      r.done.push_back((long long)h[32 + g]);
      r.first = std::min(r.first, (long long)h[32 + g]);
      r.last = std::max(r.last, (long long)h[32 + g]);
      r.issued = std::max(r.issued, (long long)h[g]);
    }
    reps.push_back(r);
  }
  std::sort(reps.begin(), reps.end(), [](const BurstResult& a, const BurstResult& b) { return a.last < b.last; });
  return reps[reps.size() / 2];  // the median run by its last completion
}

static void bursts() {
  unsigned long long* d;
  CHECK(cudaMalloc(&d, 64 * sizeof(unsigned long long)));
  CHECK(cudaFuncSetAttribute(burst_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kRingBytes));
  // Contiguous boxes: 65536 rows of 128 B (8 MiB). GEMM operand boxes: 4096 x 4096 bf16.
  char *contig, *gemm;
  CHECK(cudaMalloc(&contig, 8u << 20));
  CHECK(cudaMalloc(&gemm, 32u << 20));
  CHECK(cudaMemset(contig, 0x3c, 8u << 20));
  CHECK(cudaMemset(gemm, 0x3c, 32u << 20));
  struct Shape {
    char name[8];
    CUtensorMap map;
    int box_bytes, row_step, col_step;
  };
  std::vector<Shape> shapes;
  for (int r : {1, 8, 32, 64, 128, 256}) {
    Shape s;
    snprintf(s.name, sizeof s.name, "c%d", r);
    s.map = make_map(contig, 65536, r);
    s.box_bytes = r * 128;
    s.row_step = r;
    s.col_step = 0;
    shapes.push_back(s);
  }
  for (int r : {64, 128, 256}) {
    Shape s;
    snprintf(s.name, sizeof s.name, "s%d", r);
    s.map = make_map(gemm, 4096, r, 4096, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, 64, CU_TENSOR_MAP_SWIZZLE_128B);
    s.box_bytes = r * 128;
    s.row_step = 0;
    s.col_step = 64;
    shapes.push_back(s);
  }
  const int issuers[][2] = {{1, 1}, {1, 2}, {1, 4}, {2, 1}, {4, 1}};
  char param[64];
  for (auto& s : shapes)
    for (int cold = 0; cold < 2; ++cold)
      for (auto& q : issuers) {
        Burst p{};
        p.warps = q[0];
        p.lanes = q[1];
        const int n = q[0] * q[1];
        p.boxes = std::min(16, kRingBytes / s.box_bytes) / n * n;
        p.box_bytes = s.box_bytes;
        p.row_step = s.row_step;
        p.col_step = s.col_step;
        const char* src = cold ? "cold" : "warm";
        BurstResult r = run_burst(s.map, p, cold, d);
        if (n == 1)
          for (int g = 0; g < p.boxes; ++g) {
            snprintf(param, sizeof param, "%s_%s_%d", s.name, src, g);
            row("tma_burst_issue", param, (double)r.issue[g], "cycles");
            row("tma_burst_done", param, (double)r.done[g], "cycles");
          }
        snprintf(param, sizeof param, "%s_%s_p%dx%d_n%d", s.name, src, q[0], q[1], p.boxes);
        row("tma_burst_first", param, (double)r.first, "cycles");
        row("tma_burst_last", param, (double)r.last, "cycles");
        row("tma_burst_issued", param, (double)r.issued, "cycles");
      }
  // Bursts without an observer.
  CHECK(cudaFuncSetAttribute(burst_self, cudaFuncAttributeMaxDynamicSharedMemorySize, kRingBytes));
  for (int r : {1, 128})
    for (int one = 0; one < 2; ++one)
      for (int n : {1, 2, 4, 8, 12, 16}) {
        if (n * r * 128 > kRingBytes) continue;
        const CUtensorMap m = make_map(contig, 65536, r);
        std::vector<double> v;
        for (int rep = 0; rep < 4; ++rep) {
          burst_self<<<1, 32, kRingBytes>>>(m, n, one, r, d);
          LAUNCH_CHECK();
          unsigned long long c;
          CHECK(cudaMemcpy(&c, d, sizeof c, cudaMemcpyDeviceToHost));
          if (rep) v.push_back((double)c);
        }
        std::sort(v.begin(), v.end());
        snprintf(param, sizeof param, "c%d_%s_n%d", r, one ? "onebar" : "bars", n);
        row("tma_burst_self", param, v[1], "cycles");
      }
  // Streams through stages.
  CHECK(cudaFuncSetAttribute(stream_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kRingBytes));
  const CUtensorMap c128 = make_map(contig, 65536, 128);
  const CUtensorMap s128 = make_map(gemm, 4096, 128, 4096, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, 64, CU_TENSOR_MAP_SWIZZLE_128B);
  for (int kind = 0; kind < 3; ++kind)
    for (int test = 0; test < 2; ++test)
      for (int stages : {1, 2, 3, 4, 6, 8, 12}) {
        const int stage_bytes = kind == 2 ? 32768 : 16384;
        if (stages * stage_bytes > kRingBytes) continue;
        Stream p{stages, 256, kind, test, d};
        std::vector<double> v;
        for (int rep = 0; rep < 4; ++rep) {  // rep 0 warms L2
          stream_kernel<<<1, 32, kRingBytes>>>(kind == 0 ? c128 : s128, p);
          LAUNCH_CHECK();
          unsigned long long c;
          CHECK(cudaMemcpy(&c, d, sizeof c, cudaMemcpyDeviceToHost));
          if (rep) v.push_back((double)p.steps * stage_bytes / (double)c);
        }
        std::sort(v.begin(), v.end());
        snprintf(param, sizeof param, "k%d_s%d_%s", kind, stages, test ? "test" : "try");
        row("tma_stream", param, v[1], "bytes_per_clk");
      }
  CHECK(cudaFree(contig));
  CHECK(cudaFree(gemm));
  CHECK(cudaFree(d));
}

// ---------------------------------------------------------------------------------------------
// One SM's bytes in flight.
template <int U>
__global__ void probe_read(const int4* __restrict__ p, size_t vecs, int passes, unsigned long long* cycles,
                           int4* sink) {
  int4 acc = make_int4(0, 0, 0, 0);
  __syncthreads();
  long long t0 = clock64();
  for (int pass = 0; pass < passes; ++pass)
    for (size_t i = threadIdx.x; i < vecs; i += (size_t)blockDim.x * U) {
      int4 v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        size_t j = i + (size_t)u * blockDim.x;
        v[u] = j < vecs ? __ldcg(p + j) : make_int4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < U; ++u) { acc.x ^= v[u].x; acc.y ^= v[u].y; acc.z ^= v[u].z; acc.w ^= v[u].w; }
    }
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) *cycles = t1 - t0;
  if (acc.x == 0x7fffffff && acc.y == 1) sink[threadIdx.x] = acc;
}

// The same probe with every load issued before any is used: the U loads are asm volatile (kept
// in order) and one asm block that needs all of them folds them, so the compiler cannot consume
// early loads before it issues the later ones (which probe_read's SASS does at U = 8).
template <int U>
__global__ void probe_inflight(const int4* __restrict__ p, size_t vecs, int passes, unsigned long long* cycles,
                               int4* sink) {
  uint32_t acc = 0;
  __syncthreads();
  long long t0 = clock64();
  for (int pass = 0; pass < passes; ++pass)
    for (size_t i = threadIdx.x; i + (size_t)(U - 1) * blockDim.x < vecs; i += (size_t)blockDim.x * U) {
      uint32_t v[U][4];
#pragma unroll
      for (int u = 0; u < U; ++u)
        asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(v[u][0]), "=r"(v[u][1]), "=r"(v[u][2]), "=r"(v[u][3])
                     : "l"(p + i + (size_t)u * blockDim.x));
      uint32_t x = 0;
#pragma unroll
      for (int u = 0; u < U; ++u)
        asm volatile(
            "{\n .reg .b32 t;\n xor.b32 t, %1, %2;\n xor.b32 t, t, %3;\n xor.b32 t, t, %4;\n xor.b32 %0, %0, t;\n}\n"
            : "+r"(x) : "r"(v[u][0]), "r"(v[u][1]), "r"(v[u][2]), "r"(v[u][3]));
      acc += x;
    }
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) *cycles = t1 - t0;
  if (acc == 0x7fffffffu) sink[threadIdx.x] = make_int4(acc, 0, 0, 0);
}

using ProbeKernel = void (*)(const int4*, size_t, int, unsigned long long*, int4*);

// One CTA of `threads` runs `kernel` over `bytes` at p; its cycles.
static double probe_cycles(ProbeKernel kernel, const int4* p, size_t bytes, int threads, int passes,
                           unsigned long long* d, int4* sink) {
  kernel<<<1, threads>>>(p, bytes / 16, passes, d, sink);
  LAUNCH_CHECK();
  unsigned long long c;
  CHECK(cudaMemcpy(&c, d, sizeof c, cudaMemcpyDeviceToHost));
  return (double)c;
}

template <int U>
static double probe_all(const int4* p, size_t bytes, int threads, int passes, unsigned long long* d, int4* sink) {
  const double c = probe_cycles(probe_inflight<U>, p, bytes, threads, passes, d, sink);
  // Whole steps of U vectors per thread only.
  const size_t step = (size_t)threads * U * 16;
  return (double)(bytes / step * step) * passes / c;
}

static double probe_all_u(int u, const int4* p, size_t bytes, int threads, int passes, unsigned long long* d,
                          int4* sink) {
  switch (u) {
    case 1: return probe_all<1>(p, bytes, threads, passes, d, sink);
    case 2: return probe_all<2>(p, bytes, threads, passes, d, sink);
    case 4: return probe_all<4>(p, bytes, threads, passes, d, sink);
    case 8: return probe_all<8>(p, bytes, threads, passes, d, sink);
    default: return probe_all<16>(p, bytes, threads, passes, d, sink);
  }
}

template <int U>
static double probe(const int4* p, size_t bytes, int threads, int passes, unsigned long long* d, int4* sink) {
  return (double)bytes * passes / probe_cycles(probe_read<U>, p, bytes, threads, passes, d, sink);
}

static double probe_u(int u, const int4* p, size_t bytes, int threads, int passes, unsigned long long* d, int4* sink) {
  switch (u) {
    case 1: return probe<1>(p, bytes, threads, passes, d, sink);
    case 2: return probe<2>(p, bytes, threads, passes, d, sink);
    case 4: return probe<4>(p, bytes, threads, passes, d, sink);
    default: return probe<8>(p, bytes, threads, passes, d, sink);
  }
}

using Prober = double (*)(int, const int4*, size_t, int, int, unsigned long long*, int4*);

// One point of a probe: from DRAM (a region never read before in the run, after an L2 flush:
// about 4000 round trips' worth, 2 to 256 MiB) and from L2 (an 8 MiB region read once, then
// timed over two passes).
static void inflight_point(const char* hbm, const char* l2, Prober probe, int t, int u, char* buf, size_t big,
                           size_t& off, unsigned long long* d, int4* sink) {
  char param[32];
  snprintf(param, sizeof param, "t%d_u%d", t, u);
  size_t bytes = std::min<size_t>(256u << 20, std::max<size_t>(2u << 20, (size_t)t * u * 16 * 4000));
  if (off + bytes > big) off = 0;
  flush_l2();
  row(hbm, param, probe(u, (const int4*)(buf + off), bytes, t, 1, d, sink), "bytes_per_clk");
  off += bytes;
  probe(u, (const int4*)buf, 8u << 20, t, 1, d, sink);
  row(l2, param, probe(u, (const int4*)buf, 8u << 20, t, 2, d, sink), "bytes_per_clk");
}

static void inflight() {
  unsigned long long* d;
  int4* sink;
  CHECK(cudaMalloc(&d, sizeof(unsigned long long)));
  CHECK(cudaMalloc(&sink, 1024 * sizeof(int4)));
  const size_t big = 6ull << 30;  // fresh DRAM regions for every cold point
  char* buf;
  CHECK(cudaMalloc(&buf, big));
  CHECK(cudaMemset(buf, 1, big));
  size_t off = 0;
  char param[32];
  for (int t : {32, 64, 128, 256, 512, 1024})
    for (int u : {1, 2, 4, 8}) inflight_point("inflight_hbm", "inflight_l2", probe_u, t, u, buf, big, off, d, sink);
  // All U loads in flight (probe_inflight): from DRAM and from L2.
  for (int t : {32, 128, 512, 1024})
    for (int u : {1, 2, 4, 8, 16}) {
      if (t * u > 8192) continue;  // registers: 16 x 4 values per thread only up to 512 threads
      inflight_point("inflight_all_hbm", "inflight_all_l2", probe_all_u, t, u, buf, big, off, d, sink);
    }
  for (int mib : {4, 8, 16, 32})
    for (int u : {4, 8}) {
      snprintf(param, sizeof param, "t1024_u%d_%dmib", u, mib);
      probe_u(u, (const int4*)buf, (size_t)mib << 20, 1024, 1, d, sink);
      row("inflight_l2_fp", param, probe_u(u, (const int4*)buf, (size_t)mib << 20, 1024, 2, d, sink), "bytes_per_clk");
    }
  CHECK(cudaFree(buf));
  CHECK(cudaFree(sink));
  CHECK(cudaFree(d));
}

// ---------------------------------------------------------------------------------------------
// DRAM read/write mix.
constexpr int kMixThreads = 1024;
__global__ void __launch_bounds__(kMixThreads) mix_kernel(const int4* __restrict__ src, int4* __restrict__ dst,
                                                          size_t per, int reads, unsigned long long* cycles) {
  extern __shared__ int pad[];  // one CTA per SM
  const int4* s = src + blockIdx.x * per;
  int4* o = dst + blockIdx.x * per;
  int4 acc = make_int4(blockIdx.x, 1, 2, 3);
  __syncthreads();
  long long t0 = clock64();
  for (size_t i = threadIdx.x; i < per; i += kMixThreads * 4) {
    int4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      size_t j = i + (size_t)u * kMixThreads;
      if (u < reads && j < per) v[u] = __ldcs(s + j);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      size_t j = i + (size_t)u * kMixThreads;
      if (u < reads) { acc.x ^= v[u].x; acc.y ^= v[u].y; }
      else if (j < per) __stcs(o + j, acc);
    }
  }
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
  (void)pad;
}

static void hbm_mix(int sms) {
  const size_t per_bytes = 32u << 20, per = per_bytes / 16;
  int4 *src, *dst;
  CHECK(cudaMalloc(&src, per_bytes * sms));
  CHECK(cudaMalloc(&dst, per_bytes * sms));
  CHECK(cudaMemset(src, 2, per_bytes * sms));
  CHECK(cudaMemset(dst, 3, per_bytes * sms));
  unsigned long long* d;
  CHECK(cudaMalloc(&d, sms * sizeof(unsigned long long)));
  const int smem = 120 * 1024;
  CHECK(cudaFuncSetAttribute(mix_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  char param[16];
  for (int r = 4; r >= 0; --r) {
    snprintf(param, sizeof param, "r%dw%d", r, 4 - r);
    std::vector<double> bpc, gbs;
    for (int rep = 0; rep < 4; ++rep) {  // 4 GiB each way: what L2 holds from before is noise
      CHECK(cudaEventRecord(a));
      mix_kernel<<<sms, kMixThreads, smem>>>(src, dst, per, r, d);
      CHECK(cudaEventRecord(b));
      LAUNCH_CHECK();
      float ms;
      CHECK(cudaEventElapsedTime(&ms, a, b));
      std::vector<unsigned long long> c(sms);
      CHECK(cudaMemcpy(c.data(), d, sms * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
      if (rep == 0) continue;
      const double total = (double)per_bytes * sms;
      bpc.push_back(total / (double)*std::max_element(c.begin(), c.end()));
      gbs.push_back(total / (ms * 1e6));
    }
    std::sort(bpc.begin(), bpc.end());
    std::sort(gbs.begin(), gbs.end());
    row("hbm_mix", param, bpc[1], "bytes_per_clk");
    row("hbm_mix_gbs", param, gbs[1], "GB_per_s");
  }
  CHECK(cudaFree(src));
  CHECK(cudaFree(dst));
  CHECK(cudaFree(d));
}

// ---------------------------------------------------------------------------------------------
// Kernel launch overhead.
__global__ void stamp(unsigned long long* t, int k) {
  if (threadIdx.x == 0 && blockIdx.x == 0) t[k] = globaltimer_ns();
}

static void launches() {
  const int n = 256;
  unsigned long long* d;
  CHECK(cudaMalloc(&d, n * sizeof(unsigned long long)));
  cudaStream_t st;
  CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int ctas : {1, 132})
    for (int graph = 0; graph < 2; ++graph) {
      cudaGraphExec_t exec = nullptr;
      if (graph) {
        cudaGraph_t g;
        CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
        for (int k = 0; k < n; ++k) stamp<<<ctas, 32, 0, st>>>(d, k);
        CHECK(cudaStreamEndCapture(st, &g));
        CHECK(cudaGraphInstantiate(&exec, g, 0));
        CHECK(cudaGraphDestroy(g));
      }
      double wall = 0;
      std::vector<double> gaps;
      for (int rep = 0; rep < 3; ++rep) {  // rep 0 warms up
        CHECK(cudaEventRecord(a, st));
        if (graph) CHECK(cudaGraphLaunch(exec, st));
        else
          for (int k = 0; k < n; ++k) stamp<<<ctas, 32, 0, st>>>(d, k);
        CHECK(cudaEventRecord(b, st));
        CHECK(cudaStreamSynchronize(st));
        CHECK(cudaGetLastError());
        float ms;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        std::vector<unsigned long long> h(n);
        CHECK(cudaMemcpy(h.data(), d, n * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
        if (rep == 0) continue;
        wall += ms * 1e3 / n / 2;
        for (int k = 1; k < n; ++k) gaps.push_back((double)(h[k] - h[k - 1]));
      }
      std::sort(gaps.begin(), gaps.end());
      char param[32];
      snprintf(param, sizeof param, "%s_%dcta", graph ? "graph" : "eager", ctas);
      row("launch_interval", param, gaps[gaps.size() / 2], "ns");
      row("launch_wall", param, wall * 1e3, "ns");
      if (exec) CHECK(cudaGraphExecDestroy(exec));
    }
  CHECK(cudaFree(d));
}

// ---------------------------------------------------------------------------------------------
// L2 partitions.
// Thread 0 of each CTA whose SM is wanted (want[smid] != 0, or every SM when want is null)
// follows the chain of `n` lines that buf holds (each line's first word: the next line's
// address; `order` lists them), from its own starting point, once untimed, then timing each hop
// (clock, load, a shared store that needs the value, clock), as mem.cu's chase_hops does; lat
// is indexed by the line's position in `order`.
__global__ void hop_lat(const uint64_t* buf, const unsigned* order, int n, int step, const int* want, unsigned* lat,
                        unsigned* smids, int stride) {
  extern __shared__ int pad[];  // one CTA per SM
  __shared__ unsigned s_val;
  (void)pad;
  if (threadIdx.x != 0) return;
  const unsigned sm = smid();
  smids[blockIdx.x] = sm;
  if (want && !want[sm]) return;
  const int slot = want ? want[sm] - 1 : blockIdx.x;
  const uint32_t val = saddr(&s_val);
  // CTAs start `step` lines apart along the chain, so that no two SMs ask for a line at once.
  const int first = (int)(((long long)slot * step) % n);
  const uint64_t start = (uint64_t)(buf + (size_t)order[first] * 16);
  uint64_t p = start;
  for (int j = 0; j < n; ++j) asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p) : : "memory");
  p = start;
  for (int j = 0; j < n; ++j) {
    unsigned t0, t1;
    asm volatile("mov.u32 %0, %%clock;" : "=r"(t0) : : "memory");
    asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p) : : "memory");
    asm volatile("st.shared.u32 [%0], %1;" : : "r"(val), "r"((unsigned)p) : "memory");
    asm volatile("mov.u32 %0, %%clock;" : "=r"(t1) : : "memory");
    lat[(size_t)slot * stride + (first + j) % n] = t1 - t0;
  }
}

// Writes the chain through `order` (line indices) into buf.
static void chain(uint64_t* d_buf, size_t lines, const std::vector<unsigned>& order) {
  std::vector<uint64_t> h(lines * 16, 0);
  const uint64_t base = (uint64_t)d_buf;
  for (size_t k = 0; k < order.size(); ++k) h[(size_t)order[k] * 16] = base + (uint64_t)order[(k + 1) % order.size()] * 128;
  CHECK(cudaMemcpy(d_buf, h.data(), h.size() * 8, cudaMemcpyHostToDevice));
}

// Each participating CTA reads the lines of its list part: 8 lanes per line, 16 bytes each,
// 4 lines per warp step, 4 steps in flight per warp.
__global__ void __launch_bounds__(1024) list_read(const int4* __restrict__ buf, const unsigned* __restrict__ lists,
                                                  const int* __restrict__ plan, int passes, unsigned long long* out) {
  extern __shared__ int pad[];
  (void)pad;
  const unsigned sm = smid();
  // plan[4 * sm ..]: first index in lists, count of lines, participates (1/0)
  const int first = plan[4 * sm], count = plan[4 * sm + 1], on = plan[4 * sm + 2];
  if (!on) {
    if (threadIdx.x == 0) out[blockIdx.x] = 0;
    return;
  }
  const unsigned* l = lists + first;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  int4 acc = make_int4(0, 0, 0, 0);
  __syncthreads();
  long long t0 = clock64();
  for (int pass = 0; pass < passes; ++pass)
    for (int j = warp * 16; j < count; j += warps * 16) {
      int4 v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int k = j + u * 4 + lane / 8;
        v[u] = k < count ? __ldcg(buf + (size_t)__ldg(l + k) * 8 + lane % 8) : make_int4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < 4; ++u) { acc.x ^= v[u].x; acc.y ^= v[u].y; }
    }
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) out[blockIdx.x] = t1 - t0;
  if (acc.x == 0x7fffffff && acc.y == 3) out[1024 + threadIdx.x] = acc.x;
}

static void partitions(int sms) {
  const size_t bytes = 16u << 20, lines = bytes / 128;
  uint64_t* buf;
  CHECK(cudaMalloc(&buf, bytes));
  const int smem = 120 * 1024;
  CHECK(cudaFuncSetAttribute(hop_lat, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaFuncSetAttribute(list_read, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  // 1. Latency of 1024 random lines from every SM.
  const int n = 1024;
  std::mt19937 rng(7);
  std::vector<unsigned> pick;
  {
    std::vector<char> seen(lines, 0);
    while ((int)pick.size() < n) {
      const unsigned l = rng() % lines;
      if (!seen[l]) { seen[l] = 1; pick.push_back(l); }
    }
  }
  unsigned *d_lines, *d_lat, *d_smids;
  CHECK(cudaMalloc(&d_lines, lines * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_lat, (size_t)2 * lines * sizeof(unsigned) + (size_t)sms * n * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_smids, sms * sizeof(unsigned)));
  chain(buf, lines, pick);
  CHECK(cudaMemcpy(d_lines, pick.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
  hop_lat<<<sms, 32, smem>>>(buf, d_lines, n, 7, nullptr, d_lat, d_smids, n);
  LAUNCH_CHECK();
  std::vector<unsigned> lat((size_t)sms * n), ids(sms);
  CHECK(cudaMemcpy(lat.data(), d_lat, lat.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(ids.data(), d_smids, sms * sizeof(unsigned), cudaMemcpyDeviceToHost));
  std::vector<std::vector<bool>> fast(sms, std::vector<bool>(n));
  for (int j = 0; j < n; ++j) {
    std::vector<unsigned> col(sms);
    for (int c = 0; c < sms; ++c) col[c] = lat[(size_t)c * n + j];
    std::nth_element(col.begin(), col.begin() + sms / 2, col.end());
    for (int c = 0; c < sms; ++c) fast[c][j] = lat[(size_t)c * n + j] < col[sms / 2];
  }
  int ref = 0;
  for (int c = 0; c < sms; ++c)
    if (ids[c] == 0) ref = c;
  {
    std::vector<int> hist(64, 0);
    for (unsigned v : lat) hist[std::min<unsigned>(v / 10, 63)]++;
    for (int b = 0; b < 64; ++b)
      if (hist[b]) row("l2_hop_hist", b * 10, hist[b], "hops");
    for (int c = 0; c < sms; ++c)
      if (ids[c] % 8 == 0 && ids[c] < 32)
        for (int j = 0; j < 64; ++j) {
          char q[32];
          snprintf(q, sizeof q, "sm%u_%d", ids[c], j);
          row("l2_hop_raw", q, lat[(size_t)c * n + j], "cycles");
        }
  }
  std::vector<int> side(1024, 0);  // by smid: 0 = SM 0's side (A), 1 = the other (B)
  std::vector<double> agreement(sms);
  for (int c = 0; c < sms; ++c) {
    int a = 0;
    for (int j = 0; j < n; ++j) a += fast[c][j] == fast[ref][j];
    agreement[c] = (double)a / n;
  }
  // Two groups of agreement with SM 0: split at the midpoint of the extremes.
  const double split = (*std::min_element(agreement.begin(), agreement.end()) + 1.0) / 2;
  double near_sum = 0, far_sum = 0;
  int near_n = 0, far_n = 0;
  for (int c = 0; c < sms; ++c) {
    int agree = 0;
    double ns = 0, fs = 0;
    int nn = 0, fn = 0;
    for (int j = 0; j < n; ++j) {
      agree += fast[c][j] == fast[ref][j];
      const double v = lat[(size_t)c * n + j];
      if (fast[c][j]) { ns += v; ++nn; } else { fs += v; ++fn; }
    }
    side[ids[c]] = agreement[c] < split;
    row("l2_side", (long)ids[c], (double)agree / n, "fraction");
    row("l2_near_lat", (long)ids[c], nn ? ns / nn : 0, "cycles");
    row("l2_far_lat", (long)ids[c], fn ? fs / fn : 0, "cycles");
    near_sum += ns; near_n += nn; far_sum += fs; far_n += fn;
  }
  int side_b = 0;
  for (int c = 0; c < sms; ++c) side_b += side[ids[c]];
  row("l2_part_sms_a", "all", sms - side_b, "sms");
  row("l2_part_near_lat", "all", near_sum / std::max(near_n, 1), "cycles");
  row("l2_part_far_lat", "all", far_sum / std::max(far_n, 1), "cycles");
  // 2. Classify every line of the buffer from one SM of each side (the lowest smid of each).
  int sm_a = -1, sm_b = -1;
  for (int c = 0; c < sms; ++c) {
    const int s = (int)ids[c];
    if (!side[s] && (sm_a < 0 || s < sm_a)) sm_a = s;
    if (side[s] && (sm_b < 0 || s < sm_b)) sm_b = s;
  }
  if (sm_b < 0) {
    row("l2_part_found", "no", 0, "sides");
    CHECK(cudaFree(buf));
    return;
  }
  std::vector<int> want(1024, 0);
  want[sm_a] = 1;
  want[sm_b] = 2;
  int* d_want;
  CHECK(cudaMalloc(&d_want, want.size() * sizeof(int)));
  CHECK(cudaMemcpy(d_want, want.data(), want.size() * sizeof(int), cudaMemcpyHostToDevice));
  std::vector<unsigned> all(lines);
  for (size_t i = 0; i < lines; ++i) all[i] = (unsigned)i;
  chain(buf, lines, all);
  CHECK(cudaMemcpy(d_lines, all.data(), lines * sizeof(unsigned), cudaMemcpyHostToDevice));
  hop_lat<<<sms, 32, smem>>>(buf, d_lines, (int)lines, (int)lines / 2, d_want, d_lat, d_smids, (int)lines);
  LAUNCH_CHECK();
  std::vector<unsigned> la(lines), lb(lines);
  CHECK(cudaMemcpy(la.data(), d_lat, lines * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(lb.data(), d_lat + lines, lines * sizeof(unsigned), cudaMemcpyDeviceToHost));
  std::vector<unsigned> near_a, near_b;  // lines near side A / side B
  double na = 0, fa = 0;
  size_t same_next = 0;
  std::vector<char> cls(lines);
  for (size_t i = 0; i < lines; ++i) {
    cls[i] = la[i] < lb[i] ? 0 : 1;
    (cls[i] ? near_b : near_a).push_back((unsigned)i);
    na += std::min(la[i], lb[i]);
    fa += std::max(la[i], lb[i]);
    if (i && cls[i] == cls[i - 1]) ++same_next;
  }
  row("l2_class_near_a", (long)lines, (double)near_a.size() / lines, "fraction");
  row("l2_class_same_next", (long)lines, (double)same_next / (lines - 1), "fraction");
  for (int g : {2, 4, 8, 16, 32, 64}) {  // lines in aligned groups of g all on one side
    size_t whole = 0;
    for (size_t i = 0; i < lines; i += g) {
      bool one = true;
      for (int k = 1; k < g; ++k) one &= cls[i + k] == cls[i];
      whole += one;
    }
    row("l2_class_group_uniform", g, (double)whole * g / lines, "fraction");
  }
  row("l2_class_near_lat", (long)lines, na / lines, "cycles");
  row("l2_class_far_lat", (long)lines, fa / lines, "cycles");
  // 3. Bandwidth from index lists: lists[0 .. |A|) = near_a, then near_b.
  std::vector<unsigned> lists(near_a);
  lists.insert(lists.end(), near_b.begin(), near_b.end());
  CHECK(cudaMemcpy(d_lines, lists.data(), lists.size() * sizeof(unsigned), cudaMemcpyHostToDevice));
  std::vector<int> rank(1024, 0);
  int count[2] = {0, 0};
  for (int c = 0; c < sms; ++c) rank[ids[c]] = count[side[ids[c]]]++;
  int* d_plan;
  CHECK(cudaMalloc(&d_plan, 4 * 1024 * sizeof(int)));
  unsigned long long* d_out;
  CHECK(cudaMalloc(&d_out, 2048 * sizeof(unsigned long long)));
  const int kmax = std::min(count[0], count[1]);
  for (int far = 0; far < 2; ++far)
    for (int shared = 0; shared < 2; ++shared)
      for (int k : {1, 8, 16, 33, kmax}) {
        if (k > kmax) continue;
        std::vector<int> plan(4 * 1024, 0);
        double bytes = 0;
        for (int c = 0; c < sms; ++c) {
          const int s = (int)ids[c];
          const int list = side[s] ^ far;  // 0: near_a, 1: near_b
          const int first = list ? (int)near_a.size() : 0;
          const int len = list ? (int)near_b.size() : (int)near_a.size();
          if (rank[s] >= k) continue;
          plan[4 * s + 2] = 1;
          if (shared) {
            plan[4 * s] = first;
            plan[4 * s + 1] = len;
          } else {
            plan[4 * s] = first + (int)((long long)len * rank[s] / k);
            plan[4 * s + 1] = (int)((long long)len * (rank[s] + 1) / k) - (int)((long long)len * rank[s] / k);
          }
          bytes += 128.0 * plan[4 * s + 1];
        }
        CHECK(cudaMemcpy(d_plan, plan.data(), plan.size() * sizeof(int), cudaMemcpyHostToDevice));
        const int passes = shared ? 2 : std::max(2, 64 / std::max(1, 132 / k));
        list_read<<<sms, 1024, smem>>>((const int4*)buf, d_lines, d_plan, 1, d_out);  // warm
        LAUNCH_CHECK();
        std::vector<double> v;
        for (int rep = 0; rep < 3; ++rep) {
          list_read<<<sms, 1024, smem>>>((const int4*)buf, d_lines, d_plan, passes, d_out);
          LAUNCH_CHECK();
          std::vector<unsigned long long> c(sms);
          CHECK(cudaMemcpy(c.data(), d_out, sms * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
          v.push_back(bytes * passes / (double)*std::max_element(c.begin(), c.end()));
        }
        std::sort(v.begin(), v.end());
        char param[48];
        snprintf(param, sizeof param, "%s_%s_%d", far ? "far" : "near", shared ? "shared" : "disjoint", k);
        row("l2_part_bw", param, v[1], "bytes_per_clk");
      }
  CHECK(cudaFree(buf));
  CHECK(cudaFree(d_lines));
  CHECK(cudaFree(d_lat));
  CHECK(cudaFree(d_smids));
  CHECK(cudaFree(d_want));
  CHECK(cudaFree(d_plan));
  CHECK(cudaFree(d_out));
}

int main(int argc, char** argv) {
  header("memsys");
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  CHECK(cudaMalloc(&g_scratch, kScratch));
  const std::string only = argc > 1 ? argv[1] : "";
  if (only.empty() || only == "tma") bursts();
  if (only.empty() || only == "part") partitions(prop.multiProcessorCount);
  if (only.empty() || only == "inflight") inflight();
  if (only.empty() || only == "mix") hbm_mix(prop.multiProcessorCount);
  if (only.empty() || only == "launch") launches();
  unsigned timeouts = 0;
  CHECK(cudaMemcpyFromSymbol(&timeouts, g_timeouts, sizeof timeouts));
  printf("# mbarrier_wait_timeouts=%u\n", timeouts);
  footer();
  return 0;
}
