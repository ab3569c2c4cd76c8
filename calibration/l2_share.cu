// What sets the rate of TMA loads from L2 when many SMs stream at once, and whether SMs that
// load the same tiles get them faster: the question behind TMA multicast (cluster.cu's mcast
// rows: unicast of one tile by the 2 or 4 CTAs of a cluster takes as long per tile as disjoint
// tiles, although the L2 serves half or a quarter of the sectors).
//
// One thread a CTA (one CTA an SM, 180 KiB of shared memory) streams `tiles` 16 KiB TMA boxes
// (128 rows of 128 B) through `stages` slots of shared memory, each slot refilled as soon as its
// box has landed; the CTAs form groups that read the same tiles (`share` CTAs a group), each
// group cycling over its own region of tiles, warm in L2.
//
// Rows (test,param,value,unit), value = clock64 cycles per tile, the mean over the CTAs
// (`*_max`: the slowest CTA's), and GB/s GPU-wide from the launch's events:
//   stages     s<S>                 132 CTAs, disjoint 8-tile regions, S = 1..8 slots
//   sms        n<N>                 N CTAs (no cluster), disjoint regions, 4 slots
//   gpc        c<C>_n<N>            N CTAs in clusters of C (a cluster sits on one GPC), disjoint
//   share      <adj|spread>_g<G>_r<R>  128 CTAs in groups of G reading the same tiles, R tiles a
//                                   group's region; `adj`: CTAs b and b+1 share (group b / G),
//                                   `spread`: CTAs b and b + 128/G do (group b % (128/G))
//   share      cluster_c<C>         clusters of C (132 or 120 CTAs) whose CTAs read the same tiles
//   lag        c2_l<L>              132 CTAs in clusters of 2 reading the same tiles (regions of 16),
//                                   the second L tiles after the first (data/h100-l2_share_lag.csv;
//                                   data/h100-l2_share.csv is the run before these rows)
//   div        s4                   stages and slots by run-time division (the first version's
//                                   loop), 132 CTAs, 4 slots
// `# smid` lists the SM of each block of a 132-CTA launch (block order).
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o l2_share l2_share.cu
#include "tma_util.cuh"
#include <algorithm>
#include <string>
#include <vector>

constexpr int TILE_ROWS = 128, TILE_BYTES = TILE_ROWS * 128, MAX_STAGES = 8;
constexpr size_t SMEM = 180 << 10;

__device__ __forceinline__ uint32_t smid() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}

extern __shared__ __align__(1024) unsigned char dyn[];

// CTA b reads group g(b)'s region: groups of `share` adjacent blocks, or every (grid/share)-th.
// The loop holds no division by a run-time value (tma.cu's note: one made its loop take ~582
// cycles a box): STAGES is a template parameter and the region a power of two.
template <int STAGES>
__global__ void stream_kernel(const __grid_constant__ CUtensorMap map, int tiles, int region_mask, int share,
                              int spread, int lag, long long* out, uint32_t* sm) {
  uint64_t* full = (uint64_t*)(dyn + MAX_STAGES * TILE_BYTES);
  const uint32_t b = blockIdx.x;
  if (threadIdx.x == 0) {
    sm[b] = smid();
    for (int s = 0; s < STAGES; s++) bar_init(saddr(&full[s]), 1);
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  const uint32_t groups = gridDim.x / share;
  const uint32_t g = spread ? b % groups : b / share;
  const int base = (int)g * (region_mask + 1);
  // Member k of a group (b mod share) reads the tile member 0 read k * lag tiles before.
  const int shift = (int)(spread ? b / groups : b % share) * (region_mask + 1 - lag);
  long long t0 = clock64();
  int s = 0;
  uint32_t phase = 0;
  for (int j = 0; j < tiles; ++j) {
    if (j >= STAGES) wait_phase(saddr(&full[s]), phase ^ 1);  // the phase its previous fill completed
    arrive_expect(saddr(&full[s]), TILE_BYTES);
    tma_load(saddr(dyn + s * TILE_BYTES), &map, (base + ((j + shift) & region_mask)) * TILE_ROWS, saddr(&full[s]));
    if (++s == STAGES) {
      s = 0;
      phase ^= 1;
    }
  }
  for (int k = 0; k < STAGES; ++k) {  // the last fill of every slot
    wait_phase(saddr(&full[s]), phase ^ 1);
    if (++s == STAGES) {
      s = 0;
      phase ^= 1;
    }
  }
  out[b] = clock64() - t0;
}

// The first version of this loop: stages, slot and region by run-time division (kept for the
// `div` row, which shows what that costs).
__global__ void stream_div_kernel(const __grid_constant__ CUtensorMap map, int stages, int tiles, int region,
                                  long long* out) {
  uint64_t* full = (uint64_t*)(dyn + MAX_STAGES * TILE_BYTES);
  if (threadIdx.x == 0)
    for (int s = 0; s < stages; s++) bar_init(saddr(&full[s]), 1);
  __syncthreads();
  if (threadIdx.x != 0) return;
  auto issue = [&](int t) {
    int s = t % stages;
    arrive_expect(saddr(&full[s]), TILE_BYTES);
    tma_load(saddr(dyn + s * TILE_BYTES), &map, (int)((blockIdx.x * region + t % region) * TILE_ROWS),
             saddr(&full[s]));
  };
  long long t0 = clock64();
  for (int t = 0; t < stages && t < tiles; t++) issue(t);
  for (int t = 0; t < tiles; t++) {
    wait_phase(saddr(&full[t % stages]), (t / stages) & 1);
    if (t + stages < tiles) issue(t + stages);
  }
  out[blockIdx.x] = clock64() - t0;
}

using Kernel = void (*)(CUtensorMap, int, int, int, int, int, long long*, uint32_t*);
static Kernel kernel_for(int stages) {
  switch (stages) {
    case 1: return stream_kernel<1>;
    case 2: return stream_kernel<2>;
    case 3: return stream_kernel<3>;
    case 4: return stream_kernel<4>;
    case 6: return stream_kernel<6>;
    default: return stream_kernel<8>;
  }
}

struct Result {
  double mean, max, gbs;
};

// Launches `kernel` twice with `args` (the first warms L2 and the clock) and reads the second's
// per-CTA cycles and wall time.
template <typename K, typename... Args>
static Result launch(K kernel, unsigned grid, unsigned csize, int tiles, long long* d, uint32_t* dsm,
                     std::vector<uint32_t>* sms, Args... args) {
  cudaLaunchAttribute attr[1];
  cudaLaunchConfig_t c = config(grid, 128, SMEM, csize, attr);
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  CHECK(cudaLaunchKernelEx(&c, kernel, args...));
  LAUNCH_CHECK();
  CHECK(cudaEventRecord(e0));
  CHECK(cudaLaunchKernelEx(&c, kernel, args...));
  CHECK(cudaEventRecord(e1));
  LAUNCH_CHECK();
  float ms;
  CHECK(cudaEventElapsedTime(&ms, e0, e1));
  std::vector<long long> h(grid);
  CHECK(cudaMemcpy(h.data(), d, grid * sizeof(long long), cudaMemcpyDeviceToHost));
  if (sms) {
    sms->resize(grid);
    CHECK(cudaMemcpy(sms->data(), dsm, grid * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  }
  double sum = 0, mx = 0;
  for (auto v : h) {
    sum += v;
    mx = std::max(mx, (double)v);
  }
  CHECK(cudaEventDestroy(e0));
  CHECK(cudaEventDestroy(e1));
  return {sum / grid / tiles, mx / tiles, (double)grid * tiles * TILE_BYTES / ms / 1e6};
}

// One stream per CTA: `stages` slots, regions of `region` tiles (a power of two).
static Result stream(const CUtensorMap& map, unsigned grid, unsigned csize, int stages, int tiles, int region,
                     int share, int spread, long long* d, uint32_t* dsm, std::vector<uint32_t>* sms = nullptr,
                     int lag = 0) {
  return launch(kernel_for(stages), grid, csize, tiles, d, dsm, sms, map, tiles, region - 1, share, spread, lag,
                d, dsm);
}

static void rows(const char* test, const char* p, const Result& r) {
  row(test, p, r.mean, "cycles");
  char q[64];
  snprintf(q, sizeof q, "%s_max", test);
  row(q, p, r.max, "cycles");
  snprintf(q, sizeof q, "%s_gbs", test);
  row(q, p, r.gbs, "GB/s");
}

int main() {
  header("l2_share");
  for (int st : {1, 2, 3, 4, 6, 8})
    CHECK(cudaFuncSetAttribute(kernel_for(st), cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM));
  CHECK(cudaFuncSetAttribute(stream_div_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM));
  const int sms = 132, tiles = 256;
  // The largest layout: 132 regions of 8 tiles (or 128 groups of 8, or fewer of 8 x share): 17 MiB.
  const size_t nrows = (size_t)sms * 8 * TILE_ROWS;
  void* data;
  CHECK(cudaMalloc(&data, nrows * 128));
  CHECK(cudaMemset(data, 1, nrows * 128));
  CUtensorMap map = make_map(data, nrows, TILE_ROWS);
  long long* d;
  uint32_t* dsm;
  CHECK(cudaMalloc(&d, 1024 * sizeof(long long)));
  CHECK(cudaMalloc(&dsm, 1024 * sizeof(uint32_t)));
  char p[64];

  std::vector<uint32_t> ids;
  for (int s : {1, 2, 3, 4, 6, 8}) {
    snprintf(p, sizeof p, "s%d", s);
    rows("stages", p, stream(map, sms, 1, s, tiles, 8, 1, 0, d, dsm, &ids));
  }
  printf("# smid");
  for (auto v : ids) printf(" %u", v);
  printf("\n");
  for (int n : {1, 2, 4, 8, 16, 33, 66, 99, 132}) {
    snprintf(p, sizeof p, "n%d", n);
    rows("sms", p, stream(map, n, 1, 4, tiles, 8, 1, 0, d, dsm));
  }
  for (int c : {2, 4, 8})
    for (int n : {c, 2 * c, 4 * c, 8 * c, 16 * c}) {
      if (n > 120) continue;
      snprintf(p, sizeof p, "c%d_n%d", c, n);
      rows("gpc", p, stream(map, n, c, 4, tiles, 8, 1, 0, d, dsm));
    }
  // 128 CTAs, so that every group size divides the grid.
  for (int spread = 0; spread < 2; spread++)
    for (int g : {1, 2, 4, 8, 16, 32, 64, 128})
      for (int fixed_region = 0; fixed_region < 2; fixed_region++) {
        int region = fixed_region ? 8 : 8 * g;
        if (g == 1 && fixed_region) continue;
        snprintf(p, sizeof p, "%s_g%d_r%d", spread ? "spread" : "adj", g, region);
        rows("share", p, stream(map, 128, 1, 4, tiles, region, g, spread, d, dsm));
      }
  // The CTAs of a cluster (one GPC, consecutive ranks) reading the same tiles.
  for (int c : {2, 4, 8}) {
    snprintf(p, sizeof p, "cluster_c%d", c);
    int n = c == 2 ? 132 : 120;
    rows("share", p, stream(map, n, c, 4, tiles, 8, c, 0, d, dsm));
  }
  // Clusters of 2 whose second CTA reads each tile `lag` tiles after the first (regions of 16
  // tiles): how long after one read-out another request of its GPC still shares it.
  for (int lag : {0, 1, 2, 4, 8}) {
    snprintf(p, sizeof p, "c2_l%d", lag);
    rows("lag", p, stream(map, 132, 2, 4, tiles, 16, 2, 0, d, dsm, nullptr, lag));
  }
  rows("div", "s4", launch(stream_div_kernel, sms, 1, tiles, d, dsm, nullptr, map, 4, tiles, 8, d));
  CHECK(cudaFree(data));
  CHECK(cudaFree(d));
  CHECK(cudaFree(dsm));
  printf("# mbarrier_wait_timeouts=%u\n", [] {
    unsigned h;
    CHECK(cudaMemcpyFromSymbol(&h, g_timeouts, sizeof h));
    return h;
  }());
  footer();
  return 0;
}
