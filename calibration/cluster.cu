// Thread-block clusters on Hopper: where clusters are placed, distributed shared memory (DSMEM)
// latency and bandwidth, the cluster barrier, a remote mbarrier arrive, and TMA multicast
// against unicast of the same tiles.
//
// Rows (test,param,value,unit):
//   cluster_max_active  <size>_smem<KiB>  clusters of `size` CTAs that fit at once
//                        (cudaOccupancyMaxActiveClusters), CTAs of `KiB` dynamic shared memory
//   cluster_gpcs        <size>            distinct SM groups seen by clusters of `size` when the
//                        grid is all the clusters that fit (1 CTA per SM); `# members` lines list
//                        each cluster's SMs
//   dsmem_lat           <where>_c<size>   cycles per hop of one thread's pointer chase through
//                        4,096 words of shared memory: own (`ld.shared`), own through its
//                        cluster address (`self`), the next CTA's (`remote`)
//   dsmem_bw            <op>_<dir>_w<W>   bytes per cycle per reading SM: W warps per CTA of 16-byte
//                        `ld.shared::cluster` (or `st`), 8 in flight a thread, over the peer CTA's
//                        64 KiB; `one`: only rank 0 reads, `both`: each reads the other
//   cluster_barrier     <size>_t<T>[_relaxed]  cycles per barrier.cluster.arrive + wait, T threads a CTA
//                        (the default arrive is a release: MEMBAR.ALL.GPU + ERRBAR + CGAERRBAR first)
//   fence               <form>_t<T>       cycles per fence of each of T threads of one CTA, back to
//                        back: `cta` (fence.acq_rel.cta), `release_cluster`, `threadfence`
//   remote_pingpong     <size>            cycles per round trip of two CTAs' threads handing
//                        mbarrier phases to each other by remote arrive (rank 0 and rank size-1):
//                        `.release.cluster` (<size>) or the default CTA-scope release (<size>_cta)
//   arrive_cost         <form>_n<N>       cycles per arrive of one thread issuing N back to back
//                        on a barrier that never completes: `local`, `remote_cta` (CUTLASS's),
//                        `remote_release_cluster`, `cutlass_lanes` (lanes 0, 8, .. of one warp
//                        arrive on ranks 0, 1, .. in one instruction, as CUTLASS's consumers
//                        release a stage), `self_cluster_addr` (its own barrier by its cluster
//                        address); `_gap<G>_w<W>_c<C>`: G dependent FFMAs between arrives, W
//                        warps' lane 0 each issuing N (the slowest warp's cycles), clusters of C
//   mcast               <mode>_c<N>_<src>   cycles per 16 KiB tile (128 rows of 128 B) a CTA, clusters
//                        of N on every SM they fit, 4 stages: `unicast` (each CTA loads the tile),
//                        `unicast_sync` (the same, with multicast's cross-CTA empty barriers),
//                        `multicast` (rank r loads rows r*128/N.. to every CTA of the cluster);
//                        the empty barriers' arrives `.release.cluster`, or CTA-scope (`*_cta`,
//                        as CUTLASS's pipelines);
//                        src `l2`: 8 tiles a cluster re-read, `hbm`: 256 distinct tiles a cluster.
//                        `mcast_max` is the slowest CTA's.
//
// `cluster mcast` runs only the multicast kernels (one launch each, in the order printed), for
// Nsight Compute's L2 and DRAM counters.
#include "tma_util.cuh"
#include <algorithm>
#include <set>
#include <string>
#include <vector>

__device__ __forceinline__ uint32_t smid() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ uint32_t cluster_size() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ uint32_t cluster_id() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.aligned;\n barrier.cluster.wait.aligned;" ::: "memory");
}
// The shared::cluster address of the local shared address `a` in CTA `rank`.
__device__ __forceinline__ uint32_t mapa(uint32_t a, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
  return r;
}
__device__ __forceinline__ uint32_t ld_cluster(uint32_t a) {
  uint32_t v;
  asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory");
  return v;
}
__device__ __forceinline__ uint32_t ld_local(uint32_t a) {
  uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory");
  return v;
}
// `.release.cluster` compiles to MEMBAR.ALL.GPU + ERRBAR + CGAERRBAR before the arrive (SYNCS.ARRIVE);
// the default semantics (release at CTA scope, CUTLASS's ClusterBarrier::arrive(cta_id)) to the
// arrive alone. The waits that pair with each use acquire at the same scope.
__device__ __forceinline__ void remote_arrive(uint32_t cluster_addr, bool cluster_scope = true) {
  if (cluster_scope)
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(cluster_addr) : "memory");
  else
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(cluster_addr) : "memory");
}
__device__ __forceinline__ void tma_load_mcast(uint32_t dst, const CUtensorMap* map, int row, uint32_t bar,
                                               uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;"
      ::"r"(dst), "l"((uint64_t)map), "r"(0), "r"(row), "r"(bar), "h"(mask) : "memory");
}

extern __shared__ __align__(1024) unsigned char dyn[];

// ---------------------------------------------------------------- placement
__global__ void place_kernel(uint32_t* out) {
  if (threadIdx.x == 0) {
    uint32_t b = blockIdx.x;
    out[3 * b] = smid();
    out[3 * b + 1] = cluster_id();
    out[3 * b + 2] = cluster_rank();
  }
  // Hold the SM long enough that every cluster of the grid is resident at once.
  long long t0 = clock64();
  while (clock64() - t0 < 2000000) {
  }
}

template <typename K>
static void allow(K kernel, size_t smem) {
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
}

template <typename K>
static int max_active(K kernel, unsigned csize, unsigned block, size_t smem) {
  cudaLaunchAttribute attr[1];
  cudaLaunchConfig_t c = config(csize * 64, block, smem, csize, attr);
  int n = 0;
  CHECK(cudaOccupancyMaxActiveClusters(&n, (void*)kernel, &c));
  return n;
}

static void placement() {
  const size_t big = 200 << 10, half = 100 << 10;
  allow(place_kernel, big);
  for (unsigned size : {1u, 2u, 4u, 8u, 16u}) {
    for (size_t smem : {big, half}) {
      char p[32];
      snprintf(p, sizeof p, "%u_smem%zu", size, smem >> 10);
      row("cluster_max_active", p, max_active(place_kernel, size, 128, smem), "clusters");
    }
  }
  uint32_t* d;
  CHECK(cudaMalloc(&d, 3 * 1024 * sizeof(uint32_t)));
  for (unsigned size : {2u, 4u, 8u, 16u}) {
    int n = max_active(place_kernel, size, 128, big);
    unsigned grid = n * size;
    cudaLaunchAttribute attr[1];
    cudaLaunchConfig_t c = config(grid, 128, big, size, attr);
    CHECK(cudaLaunchKernelEx(&c, place_kernel, d));
    LAUNCH_CHECK();
    std::vector<uint32_t> h(3 * grid);
    CHECK(cudaMemcpy(h.data(), d, h.size() * 4, cudaMemcpyDeviceToHost));
    std::vector<std::vector<uint32_t>> members(n);
    for (unsigned b = 0; b < grid; b++) members[h[3 * b + 1]].push_back(h[3 * b]);
    printf("# members size=%u:", size);
    for (auto& m : members) {
      std::sort(m.begin(), m.end());
      printf(" [");
      for (size_t i = 0; i < m.size(); i++) printf(i ? " %u" : "%u", m[i]);
      printf("]");
    }
    printf("\n");
    std::set<uint32_t> used;
    for (unsigned b = 0; b < grid; b++) used.insert(h[3 * b]);
    row("cluster_sms_used", (long)size, (double)used.size(), "SMs");
  }
  CHECK(cudaFree(d));
}

// ---------------------------------------------------------------- DSMEM latency
// mode 0: ld.shared on own; 1: own via mapa; 2: CTA rank size-1 (rank 0 chases).
__global__ void chase_kernel(int mode, int hops, long long* out) {
  uint32_t* buf = (uint32_t*)dyn;
  const uint32_t n = 4096;
  uint32_t rank = cluster_rank();
  // A single cycle through all words with a stride that defeats nothing but is not sequential.
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) buf[i] = ((i + 1237) % n) * 4;
  __syncthreads();
  cluster_sync();
  if (rank == 0 && threadIdx.x == 0) {
    uint32_t base = saddr(buf);
    uint32_t target = mode == 2 ? cluster_size() - 1 : 0;
    uint32_t cbase = mapa(base, target);
    uint32_t off = 0;
    long long t0 = 0;
    for (int i = 0; i < hops + 64; i++) {
      if (i == 64) t0 = clock64();
      off = mode == 0 ? ld_local(base + off) : ld_cluster(cbase + off);
    }
    long long t1 = clock64();
    out[0] = t1 - t0;
    out[1] = off;
  }
  cluster_sync();
}

static void dsmem_latency() {
  allow(chase_kernel, 16 << 10);
  long long* d;
  CHECK(cudaMalloc(&d, 2 * sizeof(long long)));
  const int hops = 4000;
  for (unsigned size : {2u, 4u, 8u, 16u}) {
    for (int mode = 0; mode < 3; mode++) {
      if (size > 2 && mode < 2) continue;
      cudaLaunchAttribute attr[1];
      cudaLaunchConfig_t c = config(size, 128, 16 << 10, size, attr);
      CHECK(cudaLaunchKernelEx(&c, chase_kernel, mode, hops, d));
      LAUNCH_CHECK();
      long long h[2];
      CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
      const char* where[] = {"own", "self", "remote"};
      char p[32];
      snprintf(p, sizeof p, "%s_c%u", where[mode], size);
      row("dsmem_lat", p, (double)h[0] / hops, "cycles");
    }
  }
  CHECK(cudaFree(d));
}

// ---------------------------------------------------------------- DSMEM bandwidth
// Each thread of the reading CTAs moves 8 x 16 B per round from/to the peer's 64 KiB buffer.
__global__ void dsmem_bw_kernel(int store, int both, int rounds, long long* out, uint32_t* sink) {
  const uint32_t bytes = 64 << 10;
  uint32_t rank = cluster_rank();
  uint32_t peer = (rank + 1) % cluster_size();
  uint32_t* buf = (uint32_t*)dyn;
  for (uint32_t i = threadIdx.x; i < bytes / 4; i += blockDim.x) buf[i] = i;
  __syncthreads();
  cluster_sync();
  bool active = both || rank == 0;
  long long t0 = clock64();
  uint32_t acc = 0;
  if (active) {
    uint32_t base = mapa(saddr(buf), peer);
    // Consecutive lanes take consecutive 16-byte words: conflict-free in the peer's banks.
    auto at = [&](int r, int j) { return base + (((uint32_t)(r * 8 + j) * blockDim.x + threadIdx.x) * 16) % bytes; };
    for (int r = 0; r < rounds; r++) {
      if (store) {
#pragma unroll
        for (int j = 0; j < 8; j++)
          asm volatile("st.shared::cluster.v4.u32 [%0], {%1, %1, %1, %1};" ::"r"(at(r, j)), "r"(r) : "memory");
      } else {
        uint32_t v[8][4];
#pragma unroll
        for (int j = 0; j < 8; j++)
          asm volatile("ld.shared::cluster.v4.u32 {%0, %1, %2, %3}, [%4];"
                       : "=r"(v[j][0]), "=r"(v[j][1]), "=r"(v[j][2]), "=r"(v[j][3]) : "r"(at(r, j)) : "memory");
#pragma unroll
        for (int j = 0; j < 8; j++) acc ^= v[j][0] ^ v[j][1] ^ v[j][2] ^ v[j][3];
      }
    }
  }
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) out[rank] = t1 - t0;
  if (acc == 0x12345678) sink[0] = acc;
  cluster_sync();
}

static void dsmem_bandwidth() {
  allow(dsmem_bw_kernel, 64 << 10);
  long long* d;
  uint32_t* sink;
  CHECK(cudaMalloc(&d, 16 * sizeof(long long)));
  CHECK(cudaMalloc(&sink, 4));
  const int rounds = 64;
  for (int store = 0; store < 2; store++)
    for (int both = 0; both < 2; both++)
      for (int warps : {1, 4, 8, 16, 32}) {
        cudaLaunchAttribute attr[1];
        cudaLaunchConfig_t c = config(2, warps * 32, 64 << 10, 2, attr);
        CHECK(cudaLaunchKernelEx(&c, dsmem_bw_kernel, store, both, rounds, d, sink));
        LAUNCH_CHECK();
        long long h[2];
        CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
        double moved = (double)warps * 32 * 8 * 16 * rounds;
        char p[32];
        snprintf(p, sizeof p, "%s_%s_w%d", store ? "st" : "ld", both ? "both" : "one", warps);
        row("dsmem_bw", p, moved / h[0], "B/cycle");
      }
  CHECK(cudaFree(d));
  CHECK(cudaFree(sink));
}

// ---------------------------------------------------------------- cluster barrier
__global__ void cbar_kernel(int iters, int relaxed, long long* out) {
  cluster_sync();
  long long t0 = clock64();
  for (int i = 0; i < iters; i++) {
    if (relaxed)
      asm volatile("barrier.cluster.arrive.relaxed.aligned;\n barrier.cluster.wait.aligned;" ::: "memory");
    else
      asm volatile("barrier.cluster.arrive.aligned;\n barrier.cluster.wait.aligned;" ::: "memory");
  }
  long long t1 = clock64();
  if (threadIdx.x == 0 && cluster_rank() == 0) out[0] = t1 - t0;
}

static void cluster_barrier() {
  allow(cbar_kernel, 0);
  long long* d;
  CHECK(cudaMalloc(&d, sizeof(long long)));
  const int iters = 2000;
  for (int relaxed = 0; relaxed < 2; relaxed++)
    for (unsigned size : {1u, 2u, 4u, 8u, 16u})
      for (unsigned threads : {32u, 128u, 384u}) {
        cudaLaunchAttribute attr[1];
        cudaLaunchConfig_t c = config(size, threads, 0, size, attr);
        CHECK(cudaLaunchKernelEx(&c, cbar_kernel, iters, relaxed, d));
        LAUNCH_CHECK();
        long long h;
        CHECK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
        char p[32];
        snprintf(p, sizeof p, "%u_t%u%s", size, threads, relaxed ? "_relaxed" : "");
        row("cluster_barrier", p, (double)h / iters, "cycles");
      }
  CHECK(cudaFree(d));
}

// ---------------------------------------------------------------- fences
// form 0: fence.acq_rel.cta (MEMBAR.ALL.CTA); 1: fence.release.cluster (MEMBAR.ALL.GPU, ERRBAR,
// CGAERRBAR: what a cluster-scope release arrive or barrier.cluster.arrive adds); 2:
// __threadfence() (MEMBAR.SC.GPU, ERRBAR, CGAERRBAR, CCTL.IVALL). No memory traffic before them.
__global__ void fence_kernel(int iters, int form, long long* out) {
  __syncthreads();
  long long t0 = clock64();
  for (int i = 0; i < iters; i++) {
    if (form == 0) asm volatile("fence.acq_rel.cta;" ::: "memory");
    else if (form == 1) asm volatile("fence.release.cluster;" ::: "memory");
    else __threadfence();
  }
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) out[0] = t1 - t0;
}

static void fences() {
  long long* d;
  CHECK(cudaMalloc(&d, sizeof(long long)));
  const int iters = 1000;
  const char* names[] = {"cta", "release_cluster", "threadfence"};
  for (int form = 0; form < 3; form++)
    for (unsigned threads : {32u, 128u, 256u, 512u}) {
      for (int rep = 0; rep < 2; rep++) {  // the first warms the clock up
        fence_kernel<<<1, threads>>>(iters, form, d);
        LAUNCH_CHECK();
      }
      long long h;
      CHECK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
      char p[48];
      snprintf(p, sizeof p, "%s_t%u", names[form], threads);
      row("fence", p, (double)h / iters, "cycles");
    }
  CHECK(cudaFree(d));
}

// ---------------------------------------------------------------- remote arrive ping-pong
__global__ void pingpong_kernel(int rounds, int cluster_scope, long long* out) {
  __shared__ __align__(8) uint64_t bar;
  uint32_t rank = cluster_rank(), last = cluster_size() - 1;
  if (threadIdx.x == 0) bar_init(saddr(&bar), 1);
  __syncthreads();
  cluster_sync();
  if (threadIdx.x == 0 && (rank == 0 || rank == last)) {
    uint32_t other = mapa(saddr(&bar), rank == 0 ? last : 0);
    long long t0 = clock64();
    for (int i = 0; i < rounds; i++) {
      if (rank == 0) {
        remote_arrive(other, cluster_scope);
        wait_phase(saddr(&bar), i & 1, cluster_scope);
      } else {
        wait_phase(saddr(&bar), i & 1, cluster_scope);
        remote_arrive(other, cluster_scope);
      }
    }
    long long t1 = clock64();
    if (rank == 0) out[0] = t1 - t0;
  }
  cluster_sync();
}

static void remote_pingpong() {
  allow(pingpong_kernel, 0);
  long long* d;
  CHECK(cudaMalloc(&d, sizeof(long long)));
  const int rounds = 2000;
  for (int scope = 1; scope >= 0; scope--)
    for (unsigned size : {2u, 4u, 8u, 16u}) {
      cudaLaunchAttribute attr[1];
      cudaLaunchConfig_t c = config(size, 32, 0, size, attr);
      CHECK(cudaLaunchKernelEx(&c, pingpong_kernel, rounds, scope, d));
      LAUNCH_CHECK();
      long long h;
      CHECK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
      char p[16];
      snprintf(p, sizeof p, scope ? "%u" : "%u_cta", size);
      row("remote_pingpong", p, (double)h / rounds, "cycles");
    }
  CHECK(cudaFree(d));
}

// ---------------------------------------------------------------- arrive issue cost
// One thread of rank 0 issues `n` mbarrier arrivals back to back on a barrier that never
// completes (count 2^20 - 1): mode 0 its own CTA's (mbarrier.arrive.shared::cta), 1 the last
// rank's through its cluster address (CUTLASS's remote arrive), 2 the same with
// .release.cluster. Cycles per arrive: what an arrive holds its thread.
// Lane 0 of `warps` warps of rank 0 each issue `n` arrives, `gap` dependent FFMAs apart, on a
// barrier that never completes (its own CTA's, or the last rank's). Mode 3 is CUTLASS's consumer
// release (spread_arrivals_to_warpgroup): lanes 0, 8, 16, 24 of a warp each arrive on one rank's
// barrier (rank lane / 8, its own included) in one instruction; mode 4 arrives on its own
// barrier through its cluster address.
__global__ void arrive_cost_kernel(int mode, int n, int gap, int warps, long long* out) {
  __shared__ __align__(8) uint64_t bar;
  if (threadIdx.x == 0) bar_init(saddr(&bar), (1u << 20) - 1);
  __syncthreads();
  cluster_sync();
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  const bool active = mode == 3 ? lane % 8 == 0 && (uint32_t)lane / 8 < cluster_size() : lane == 0;
  if (active && w < warps && cluster_rank() == 0) {
    const uint32_t local = saddr(&bar);
    const uint32_t target = mapa(local, mode == 3 ? lane / 8 : mode == 4 ? 0 : cluster_size() - 1);
    float x = (float)threadIdx.x;
    long long t0 = clock64();
    for (int i = 0; i < n; i++) {
      if (mode == 0) arrive(local);
      else remote_arrive(target, mode == 2);
#pragma unroll 1
      for (int g = 0; g < gap; g++) x = fmaf(x, 1.0001f, 0.5f);
    }
    long long t1 = clock64();
    if (lane == 0) out[w] = t1 - t0;
    if (x == 1.2345f) out[8] = 0;
  }
  cluster_sync();
}

static void arrive_cost() {
  allow(arrive_cost_kernel, 0);
  long long* d;
  CHECK(cudaMalloc(&d, 16 * sizeof(long long)));
  const char* names[] = {"local", "remote_cta", "remote_release_cluster", "cutlass_lanes", "self_cluster_addr"};
  struct Shape {
    int n, gap, warps, csize;
  };
  for (int mode = 0; mode < 5; mode++)
    for (Shape sh : {Shape{1000, 0, 1, 2}, Shape{2000, 0, 1, 2}, Shape{1000, 25, 1, 2}, Shape{1000, 50, 1, 2},
                     Shape{1000, 0, 4, 2}, Shape{1000, 0, 1, 4}}) {
      if (mode == 2 && (sh.gap || sh.warps > 1 || sh.csize > 2)) continue;
      if ((mode == 0 || mode == 4) && sh.csize > 2) continue;
      cudaLaunchAttribute attr[1];
      cudaLaunchConfig_t c = config(sh.csize, 128, 0, sh.csize, attr);
      for (int rep = 0; rep < 2; rep++) {  // the first warms the clock up
        CHECK(cudaLaunchKernelEx(&c, arrive_cost_kernel, mode, sh.n, sh.gap, sh.warps, d));
        LAUNCH_CHECK();
      }
      long long h[4];
      CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
      long long mx = 0;
      for (int w = 0; w < sh.warps; w++) mx = std::max(mx, h[w]);
      char p[64];
      if (sh.gap || sh.warps > 1 || sh.csize > 2)
        snprintf(p, sizeof p, "%s_n%d_gap%d_w%d_c%d", names[mode], sh.n, sh.gap, sh.warps, sh.csize);
      else
        snprintf(p, sizeof p, "%s_n%d", names[mode], sh.n);
      row("arrive_cost", p, (double)mx / sh.n, "cycles");
    }
  CHECK(cudaFree(d));
}

// ---------------------------------------------------------------- multicast
constexpr int STAGES = 4, TILE_ROWS = 128, TILE_BYTES = TILE_ROWS * 128;
// Padding that keeps one CTA on an SM (as a GEMM's or FA3's mainloop does).
constexpr size_t MCAST_SMEM = 180 << 10;

// mode 0: unicast, 1: unicast with the cross-CTA empty barriers, 2: multicast; 3 and 4: 1 and 2
// with CUTLASS's arrive (CTA-scope release, no MEMBAR) on the empty barriers.
__global__ void mcast_kernel(const __grid_constant__ CUtensorMap map, int mode, int tiles, int region,
                             long long* out) {
  unsigned char* slots = dyn;
  uint64_t* full = (uint64_t*)(dyn + STAGES * TILE_BYTES);
  uint64_t* empty = full + STAGES;
  const uint32_t n = cluster_size(), rank = cluster_rank(), cid = cluster_id();
  if (threadIdx.x == 0)
    for (int s = 0; s < STAGES; s++) {
      bar_init(saddr(&full[s]), 1);
      bar_init(saddr(&empty[s]), n);
    }
  __syncthreads();
  cluster_sync();
  if (threadIdx.x == 0) {
    const uint16_t all = (uint16_t)((1u << n) - 1);
    const int slice = TILE_ROWS / n;
    auto issue = [&](int t) {
      int s = t % STAGES;
      int row0 = (int)((cid * region + (t & (region - 1))) * TILE_ROWS);
      arrive_expect(saddr(&full[s]), TILE_BYTES);
      uint32_t dst = saddr(slots + s * TILE_BYTES);
      if (mode == 2 || mode == 4)
        tma_load_mcast(dst + rank * slice * 128, &map, row0 + rank * slice, saddr(&full[s]), all);
      else
        tma_load(dst, &map, row0, saddr(&full[s]));
    };
    long long t0 = clock64();
    for (int t = 0; t < STAGES && t < tiles; t++) issue(t);
    for (int t = 0; t < tiles; t++) {
      int s = t % STAGES;
      uint32_t ph = (t / STAGES) & 1;
      // Acquire at cluster scope only with the .release.cluster arrives (modes 1 and 2): unicast's
      // and CUTLASS's full barriers are waited for at CTA scope (a cluster-scope try_wait adds
      // CCTL.IVALL).
      wait_phase(saddr(&full[s]), ph, mode == 1 || mode == 2);
      if (mode > 0)
        for (uint32_t r = 0; r < n; r++) remote_arrive(mapa(saddr(&empty[s]), r), mode < 3);
      if (t + STAGES < tiles) {
        if (mode > 0) wait_phase(saddr(&empty[s]), ph, mode < 3);
        issue(t + STAGES);
      }
    }
    long long t1 = clock64();
    out[blockIdx.x] = t1 - t0;
  }
  __syncthreads();
  cluster_sync();
}

static void multicast(bool ncu_only) {
  allow(mcast_kernel, MCAST_SMEM);
  const int max_clusters = 132;
  const int hbm_tiles = 256, l2_region = 8, l2_tiles = 256;
  size_t rows = (size_t)max_clusters * hbm_tiles * TILE_ROWS;
  void* data;
  CHECK(cudaMalloc(&data, rows * 128));
  CHECK(cudaMemset(data, 1, rows * 128));
  void* flush;
  const size_t flush_bytes = 256 << 20;
  CHECK(cudaMalloc(&flush, flush_bytes));
  CUtensorMap mapc[3];
  long long* d;
  CHECK(cudaMalloc(&d, 1024 * sizeof(long long)));
  const char* names[] = {"unicast", "unicast_sync", "multicast", "unicast_sync_cta", "multicast_cta"};
  for (int src = 0; src < 2; src++)
    for (unsigned n : {1u, 2u, 4u})
      for (int mode = 0; mode < 5; mode++) {
        if (n == 1 && mode > 0) continue;
        int clusters = max_active(mcast_kernel, n, 128, MCAST_SMEM);
        unsigned grid = clusters * n;
        int box = mode == 2 || mode == 4 ? TILE_ROWS / n : TILE_ROWS;
        mapc[0] = make_map(data, rows, box);
        int tiles = src ? hbm_tiles : l2_tiles, region = src ? hbm_tiles : l2_region;
        cudaLaunchAttribute attr[1];
        cudaLaunchConfig_t c = config(grid, 128, MCAST_SMEM, n, attr);
        if (src) CHECK(cudaMemset(flush, 0, flush_bytes));  // evict the tiles from L2
        else if (!ncu_only) {  // warm: the same launch once before
          CHECK(cudaLaunchKernelEx(&c, mcast_kernel, mapc[0], mode, tiles, region, d));
          LAUNCH_CHECK();
        }
        CHECK(cudaLaunchKernelEx(&c, mcast_kernel, mapc[0], mode, tiles, region, d));
        LAUNCH_CHECK();
        std::vector<long long> h(grid);
        CHECK(cudaMemcpy(h.data(), d, grid * sizeof(long long), cudaMemcpyDeviceToHost));
        double sum = 0, mx = 0;
        for (auto v : h) {
          sum += v;
          mx = std::max(mx, (double)v);
        }
        char p[48];
        snprintf(p, sizeof p, "%s_c%u_%s", names[mode], n, src ? "hbm" : "l2");
        row("mcast", p, sum / grid / tiles, "cycles");
        row("mcast_max", p, mx / tiles, "cycles");
        char q[64];
        snprintf(q, sizeof q, "%s_ctas%u", p, grid);
        row("mcast_grid", q, grid, "CTAs");
      }
  CHECK(cudaFree(data));
  CHECK(cudaFree(flush));
  CHECK(cudaFree(d));
}

int main(int argc, char** argv) {
  std::string only = argc > 1 ? argv[1] : "";
  if (only == "mcast") {
    multicast(true);
    return 0;
  }
  header("cluster");
  placement();
  dsmem_latency();
  dsmem_bandwidth();
  cluster_barrier();
  fences();
  remote_pingpong();
  arrive_cost();
  multicast(false);
  unsigned timeouts = 0;
  CHECK(cudaMemcpyFromSymbol(&timeouts, g_timeouts, sizeof timeouts));
  printf("# mbarrier_wait_timeouts=%u\n", timeouts);
  footer();
  return 0;
}
