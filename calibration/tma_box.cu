// What one TMA box costs the SM, by its size and shape, from L2 (the source is read once before
// each timed pass): cycles from clock64 of the issuing thread, the median of 8 repetitions after
// a warm-up pass. Box kinds: c<R> = R contiguous rows of 128 B (a tensor of 128-byte rows, no
// swizzle); s<R> = a GEMM operand's k-tile box, R rows of 64 bf16 of a K-major 8192-column tensor
// (16 KiB row pitch), 128-byte swizzle, L2 promotion 128 B (gemm_ws.cu's boxes).
//
//   tma_pair    one thread: arrive.expect_tx and box A on mbarrier 0, then the same for box B on
//               mbarrier 1, then waits for each; param <A>_<B>_first / _second: cycles from
//               before the first arrive to each wait's return (<B> = none: A alone)
//   tma_burst   one thread issues N boxes back to back on one mbarrier armed for all of them,
//               then waits: cycles from before the arrive to the wait's return; param <box>_n<N>.
//               The slope over N is the time a box adds when boxes queue
//   tma_burstw  the same from lane 0 of W warps at once (each its own mbarrier and N boxes):
//               cycles from the CTA's start to the last warp's wait; param <box>_n<N>_w<W>.
//               `tma_box unit` runs only these, for W = 1 to 32 warps (data/h200-tma_unit.csv):
//               where the SM's TMA unit, not the issuing threads, sets the rate
//   tma_storew  (`tma_box unit` too) lane 0 of W warps each issues N TMA stores of boxes of
//               contiguous rows from shared memory, commits them and waits for their
//               completion (cp.async.bulk.wait_group 0): cycles from the CTA's start to the last
//               warp's return; param c<R>_n<N>_w<W>
//   tma_stream  one thread streams S stages of B boxes each, every stage refilled right after
//               its wait (arrive.expect_tx, then the B loads), 256 stages timed after 64: cycles
//               per stage; param <box>_b<B>_s<S>
//   tma_ring    gemm_ws.cu's ring without wgmma, one stage: thread 0 of warpgroup 0 waits on
//               `empty`, arms `full` for A (s128) and B (s<BN>) and loads them; C consumer warps
//               wait on `full` and arrive on `empty` (all their threads, or lane 0 of each warp);
//               param bn<BN>_c<C>_<all|lane0>: cycles per round trip over 256 round trips.
//               tma_ring_stamp (..._<stamp>): the same with clock64 stamps kept in shared
//               memory for round trips 64 to 71, cycles after the producer's wake: `issued` (its
//               second load issued), `full` (consumer warp 0's wait returned), `arrived` (its
//               arrive done), `next` (the producer's next wake)
// All indices are compile-time or counters: no division by a run-time value in the loops.
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o tma_box tma_box.cu
#include "tma_util.cuh"
#include <algorithm>
#include <string>
#include <vector>

constexpr int kReps = 9, kSmem = 200 * 1024;
enum { kC, kS };

// Shared-memory bytes a box of R rows takes: the 128-byte swizzle needs 1024-byte alignment.
template <int R>
__host__ __device__ constexpr int slot_bytes() {
  return R * 128 > 1024 ? R * 128 : 1024;
}

// Box `i` of a walk over the source: c boxes step by their rows through 8 MiB, s boxes by 64
// columns (one k-tile) along the 8192 columns, rows 0..R-1 of a 512-row tensor.
template <int KIND, int R>
__device__ __forceinline__ void load_box(uint32_t dst, const CUtensorMap* m, int i, uint32_t bar) {
  if (KIND == kC) tma_load(dst, m, (i * R) & 65535, bar);
  else tma_load(dst, m, 0, bar, (i & 127) * 64);
}

template <int KIND, int RA, int RB>
__global__ void pair_kernel(const __grid_constant__ CUtensorMap ma, const __grid_constant__ CUtensorMap mb,
                            long long* out) {
  extern __shared__ __align__(1024) uint8_t ring[];
  __shared__ __align__(8) uint64_t bars[2];
  if (threadIdx.x != 0) return;
  bar_init(saddr(&bars[0]));
  bar_init(saddr(&bars[1]));
  const uint32_t b0 = saddr(&bars[0]), b1 = saddr(&bars[1]);
  for (int rep = 0; rep < 2 * kReps; ++rep) {
    const int i = rep % kReps;  // the second pass re-reads the first's boxes: L2 hits
    const long long t0 = clock64();
    arrive_expect(b0, RA * 128);
    load_box<KIND, RA>(saddr(ring), &ma, 2 * i, b0);
    if (RB > 0) {
      arrive_expect(b1, RB * 128);
      load_box<KIND, RB>(saddr(ring + 65536), &mb, 2 * i + 1, b1);
    }
    wait_phase(b0, rep & 1);
    const long long t1 = clock64();
    if (RB > 0) wait_phase(b1, rep & 1);
    const long long t2 = clock64();
    if (rep >= kReps) {
      out[2 * i] = t1 - t0;
      out[2 * i + 1] = t2 - t0;
    }
  }
}

template <int KIND, int R, int N, int W>
__global__ void burst_kernel(const __grid_constant__ CUtensorMap m, long long* out) {
  extern __shared__ __align__(1024) uint8_t ring[];
  __shared__ __align__(8) uint64_t bars[W];
  __shared__ long long s_t0;
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) bar_init(saddr(&bars[warp]));
  __syncthreads();
  const uint32_t bar = saddr(&bars[warp]);
  for (int rep = 0; rep < 2 * kReps; ++rep) {
    __syncthreads();
    if (threadIdx.x == 0) s_t0 = clock64();
    __syncthreads();
    if (threadIdx.x % 32 == 0) {
      arrive_expect(bar, N * R * 128);
#pragma unroll
      for (int k = 0; k < N; ++k)
        load_box<KIND, R>(saddr(ring + (warp * N + k) * slot_bytes<R>()), &m, (rep % kReps) * N * W + warp * N + k, bar);
      wait_phase(bar, rep & 1);
      const long long t = clock64() - s_t0;
      if (rep >= kReps) out[(rep - kReps) * W + warp] = t;
    }
  }
}

template <int R, int N, int W>
__global__ void store_kernel(const __grid_constant__ CUtensorMap m, long long* out) {
  extern __shared__ __align__(1024) uint8_t ring[];
  __shared__ long long s_t0;
  const int warp = threadIdx.x / 32;
  for (int rep = 0; rep < 2 * kReps; ++rep) {
    __syncthreads();
    if (threadIdx.x == 0) s_t0 = clock64();
    __syncthreads();
    if (threadIdx.x % 32 == 0) {
#pragma unroll
      for (int k = 0; k < N; ++k)
        tma_store(&m, saddr(ring + (warp * N + k) * slot_bytes<R>()), (((rep % kReps) * N * W + warp * N + k) * R) & 65535);
      tma_store_wait_all();
      const long long t = clock64() - s_t0;
      if (rep >= kReps) out[(rep - kReps) * W + warp] = t;
    }
  }
}

template <int KIND, int R, int B, int S>
__global__ void stream_kernel(const __grid_constant__ CUtensorMap m, long long* out) {
  extern __shared__ __align__(1024) uint8_t ring[];
  __shared__ __align__(8) uint64_t bars[S];
  if (threadIdx.x != 0) return;
  for (int s = 0; s < S; ++s) bar_init(saddr(&bars[s]));
  // Stages 64 to 320 are timed; the last S are waited for without a refill, so that no load is
  // in flight when the thread exits.
  constexpr int kStages = 64 + 256 + 64;
  long long t_start = 0;
  int s = 0, box = 0;
  uint32_t phase = 0;
  for (int i = 0; i < kStages + S; ++i) {
    const uint32_t bar = saddr(&bars[s]);
    if (i >= S) wait_phase(bar, phase ^ 1);  // the phase its previous fill completed
    if (i == 64) t_start = clock64();
    if (i == 64 + 256) out[0] = clock64() - t_start;
    if (i < kStages) {
      arrive_expect(bar, B * R * 128);
#pragma unroll
      for (int k = 0; k < B; ++k) load_box<KIND, R>(saddr(ring + (s * B + k) * slot_bytes<R>()), &m, box++, bar);
    }
    if (++s == S) {
      s = 0;
      phase ^= 1;
    }
  }
}

template <int BN, int C, bool ALL, bool STAMP>
__global__ void ring_kernel(const __grid_constant__ CUtensorMap ma, const __grid_constant__ CUtensorMap mb,
                            long long* out) {
  extern __shared__ __align__(1024) uint8_t ring[];
  __shared__ __align__(8) uint64_t full, empty;
  // Per stamped round trip: producer wake, its last issue, consumer wait return, its arrive
  // done, the producer's next wake.
  __shared__ long long stamps[8][5];
  constexpr int kTrips = 64 + 256;
  if (threadIdx.x == 0) {
    bar_init(saddr(&full));
    bar_init(saddr(&empty), ALL ? C * 32 : C);
  }
  __syncthreads();
  const uint32_t bf = saddr(&full), be = saddr(&empty);
  if (threadIdx.x < 128) {  // the producer warpgroup: its thread 0 issues
    if (threadIdx.x != 0) return;
    long long t_start = 0;
    for (int i = 0; i < kTrips; ++i) {
      wait_phase(be, (i & 1) ^ 1);
      const long long t = clock64();
      if (i == 64) t_start = t;
      if (STAMP && i >= 64 && i < 72) stamps[i - 64][0] = t;
      if (STAMP && i > 64 && i <= 72) stamps[i - 65][4] = t;
      arrive_expect(bf, (128 + BN) * 128);
      tma_load(saddr(ring), &ma, 0, bf, (i & 127) * 64);
      tma_load(saddr(ring + 16384), &mb, 256, bf, (i & 127) * 64);  // B: rows 256.., as another tensor
      if (STAMP && i >= 64 && i < 72) stamps[i - 64][1] = clock64();
    }
    wait_phase(be, (kTrips & 1) ^ 1);
    out[0] = clock64() - t_start;
    if (STAMP)
      for (int k = 0; k < 8; ++k)
        for (int j = 0; j < 5; ++j) out[1 + 5 * k + j] = stamps[k][j] - stamps[k][0];
    return;
  }
  if ((threadIdx.x - 128) / 32 >= C) return;
  for (int i = 0; i < kTrips; ++i) {
    wait_phase(bf, i & 1);
    const bool mark = STAMP && threadIdx.x == 128 && i >= 64 && i < 72;
    if (mark) stamps[i - 64][2] = clock64();
    if (ALL || threadIdx.x % 32 == 0) arrive(be);
    if (mark) stamps[i - 64][3] = clock64();
  }
}

static CUtensorMap g_c[512 + 1], g_s[512 + 1];
static char* g_buf;

static const CUtensorMap& map_for(int kind, int rows) {
  CUtensorMap* maps = kind == kC ? g_c : g_s;
  static bool made[2][513];
  if (!made[kind][rows]) {
    maps[rows] = kind == kC ? make_map(g_buf, 65536, rows)
                            : make_map(g_buf, 512, rows, 8192, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, 64,
                                       CU_TENSOR_MAP_SWIZZLE_128B);
    made[kind][rows] = true;
  }
  return maps[rows];
}

static const char* kind_name(int kind) { return kind == kC ? "c" : "s"; }

static double median(std::vector<long long> v) {
  std::sort(v.begin(), v.end());
  return (double)v[v.size() / 2];
}

template <int BN, int C, bool ALL>
static void ring_case(long long* d) {
  const CUtensorMap& ma = map_for(kS, 128);
  const CUtensorMap& mb = map_for(kS, BN);
  char p[64];
  snprintf(p, sizeof p, "bn%d_c%d_%s", BN, C, ALL ? "all" : "lane0");
  {
    auto k = ring_kernel<BN, C, ALL, false>;
    CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    std::vector<long long> v;
    for (int rep = 0; rep < 4; ++rep) {
      k<<<1, 128 + 32 * C, kSmem>>>(ma, mb, d);
      LAUNCH_CHECK();
      long long h;
      CHECK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
      if (rep) v.push_back(h);
    }
    row("tma_ring", p, median(v) / 256.0, "cycles");
  }
  auto k = ring_kernel<BN, C, ALL, true>;
  CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  k<<<1, 128 + 32 * C, kSmem>>>(ma, mb, d);
  LAUNCH_CHECK();
  long long h[41];
  CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  row("tma_ring_stamp", (std::string(p) + "_total").c_str(), (double)h[0] / 256.0, "cycles");
  const char* names[5] = {"wake", "issued", "full", "arrived", "next"};
  for (int j = 1; j < 5; ++j) {
    std::vector<long long> v;
    for (int k2 = 0; k2 < 8; ++k2) v.push_back(h[1 + 5 * k2 + j]);
    row("tma_ring_stamp", (std::string(p) + "_" + names[j]).c_str(), median(v), "cycles");
  }
}

template <int KIND, int RA, int RB>
static void pair(long long* d) {
  auto k = pair_kernel<KIND, RA, RB>;
  CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  k<<<1, 32, kSmem>>>(map_for(KIND, RA), map_for(KIND, RB > 0 ? RB : RA), d);
  LAUNCH_CHECK();
  std::vector<long long> h(2 * kReps);
  CHECK(cudaMemcpy(h.data(), d, h.size() * sizeof(long long), cudaMemcpyDeviceToHost));
  std::vector<long long> first, second;
  for (int i = 0; i < kReps; ++i) {
    first.push_back(h[2 * i]);
    second.push_back(h[2 * i + 1]);
  }
  char p[64], b[16];
  if (RB > 0) snprintf(b, sizeof b, "%s%d", kind_name(KIND), RB);
  else snprintf(b, sizeof b, "none");
  snprintf(p, sizeof p, "%s%d_%s_first", kind_name(KIND), RA, b);
  row("tma_pair", p, median(first), "cycles");
  if (RB > 0) {
    snprintf(p, sizeof p, "%s%d_%s_second", kind_name(KIND), RA, b);
    row("tma_pair", p, median(second), "cycles");
  }
}

// Runs kernel `k` on one CTA of W warps and returns, per timed repetition, the last warp's
// cycles (the kernels write kReps x W of them).
template <int W, typename Kernel>
static std::vector<long long> last_warps(Kernel k, const CUtensorMap& m, long long* d) {
  CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  k<<<1, 32 * W, kSmem>>>(m, d);
  LAUNCH_CHECK();
  std::vector<long long> h(kReps * W), last;
  CHECK(cudaMemcpy(h.data(), d, h.size() * sizeof(long long), cudaMemcpyDeviceToHost));
  for (int r = 0; r < kReps; ++r) last.push_back(*std::max_element(&h[r * W], &h[r * W] + W));
  return last;
}

template <int KIND, int R, int N, int W>
static void burst(long long* d) {
  static_assert(W * N * slot_bytes<R>() <= kSmem, "boxes too large");
  const std::vector<long long> last = last_warps<W>(burst_kernel<KIND, R, N, W>, map_for(KIND, R), d);
  char p[64];
  if (W == 1) {
    snprintf(p, sizeof p, "%s%d_n%d", kind_name(KIND), R, N);
    row("tma_burst", p, median(last), "cycles");
  } else {
    snprintf(p, sizeof p, "%s%d_n%d_w%d", kind_name(KIND), R, N, W);
    row("tma_burstw", p, median(last), "cycles");
  }
}

template <int KIND, int R, int B, int S>
static void stream(long long* d) {
  static_assert(S * B * slot_bytes<R>() <= kSmem, "ring too large");
  auto k = stream_kernel<KIND, R, B, S>;
  CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  std::vector<long long> v;
  for (int rep = 0; rep < 4; ++rep) {
    k<<<1, 32, kSmem>>>(map_for(KIND, R), d);
    LAUNCH_CHECK();
    long long h;
    CHECK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
    if (rep) v.push_back(h);
  }
  char p[64];
  snprintf(p, sizeof p, "%s%d_b%d_s%d", kind_name(KIND), R, B, S);
  row("tma_stream", p, median(v) / 256.0, "cycles_per_stage");
}

template <int KIND, int R>
static void bursts(long long* d) {
  burst<KIND, R, 1, 1>(d);
  burst<KIND, R, 2, 1>(d);
  burst<KIND, R, 4, 1>(d);
  if constexpr (R <= 128) burst<KIND, R, 8, 1>(d);
  burst<KIND, R, 1, 4>(d);
  if constexpr (R <= 128) burst<KIND, R, 2, 4>(d);
  if constexpr (R <= 64) burst<KIND, R, 4, 4>(d);
}

template <int R, int N, int W>
static void store(long long* d) {
  static_assert(W * N * slot_bytes<R>() <= kSmem, "boxes too large");
  const std::vector<long long> last = last_warps<W>(store_kernel<R, N, W>, map_for(kC, R), d);
  char p[64];
  snprintf(p, sizeof p, "c%d_n%d_w%d", R, N, W);
  row("tma_storew", p, median(last), "cycles");
}

// The issue rate of the SM's TMA unit: W warps issuing N1 or N2 boxes each, 1 to 32 warps;
// loads, then the same counts of stores.
template <int KIND, int R, int N1, int N2, int W>
static void burst_pair(long long* d) {
  burst<KIND, R, N1, W>(d);
  burst<KIND, R, N2, W>(d);
}

template <int R, int N1, int N2, int W>
static void store_pair(long long* d) {
  store<R, N1, W>(d);
  store<R, N2, W>(d);
}

template <int R, int N1, int N2>
static void stores(long long* d) {
  store_pair<R, N1, N2, 1>(d);
  store_pair<R, N1, N2, 2>(d);
  store_pair<R, N1, N2, 4>(d);
  store_pair<R, N1, N2, 8>(d);
  store_pair<R, N1, N2, 16>(d);
  store_pair<R, N1, N2, 32>(d);
}

template <int KIND, int R, int N1, int N2>
static void units(long long* d) {
  burst_pair<KIND, R, N1, N2, 1>(d);
  burst_pair<KIND, R, N1, N2, 2>(d);
  burst_pair<KIND, R, N1, N2, 4>(d);
  burst_pair<KIND, R, N1, N2, 8>(d);
  burst_pair<KIND, R, N1, N2, 16>(d);
  burst_pair<KIND, R, N1, N2, 32>(d);
}

template <int KIND>
static void sweep(long long* d) {
  pair<KIND, 1, 0>(d);
  pair<KIND, 1, 1>(d);
  pair<KIND, 32, 0>(d);
  pair<KIND, 32, 32>(d);
  pair<KIND, 64, 0>(d);
  pair<KIND, 64, 64>(d);
  pair<KIND, 128, 0>(d);
  pair<KIND, 128, 128>(d);
  pair<KIND, 128, 256>(d);
  pair<KIND, 256, 0>(d);
  pair<KIND, 256, 256>(d);
  bursts<KIND, 1>(d);
  bursts<KIND, 16>(d);
  bursts<KIND, 64>(d);
  bursts<KIND, 128>(d);
  bursts<KIND, 256>(d);
  stream<KIND, 64, 1, 4>(d);
  stream<KIND, 128, 1, 2>(d);
  stream<KIND, 128, 1, 4>(d);
  stream<KIND, 128, 1, 8>(d);
  stream<KIND, 128, 2, 2>(d);
  stream<KIND, 128, 2, 4>(d);
  stream<KIND, 256, 1, 4>(d);
  stream<KIND, 256, 2, 2>(d);
}

int main(int argc, char** argv) {
  const bool unit = argc > 1 && std::string(argv[1]) == "unit";
  header(unit ? "tma_unit" : "tma_box");
  CHECK(cudaMalloc(&g_buf, 8u << 20));
  CHECK(cudaMemset(g_buf, 0x3c, 8u << 20));
  long long* d;
  CHECK(cudaMalloc(&d, kReps * 32 * sizeof(long long)));
  if (unit) {
    units<kC, 1, 2, 6>(d);
    units<kC, 16, 1, 3>(d);
    units<kS, 16, 1, 3>(d);
    stores<1, 2, 6>(d);
    stores<16, 1, 3>(d);
    footer();
    return 0;
  }
  sweep<kC>(d);
  sweep<kS>(d);
  ring_case<128, 8, true>(d);
  ring_case<128, 8, false>(d);
  ring_case<128, 1, true>(d);
  ring_case<128, 4, true>(d);
  ring_case<256, 8, true>(d);
  unsigned timeouts = 0;
  CHECK(cudaMemcpyFromSymbol(&timeouts, g_timeouts, sizeof timeouts));
  printf("# mbarrier_wait_timeouts=%u\n", timeouts);
  footer();
  return 0;
}
