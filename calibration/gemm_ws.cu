// A warp-specialized GEMM main loop on one SM, the structure of scenarios/gemm_ws.ron (CUTLASS's
// "cooperative" kernel, PipelineTmaAsync): one producer warpgroup whose thread 0 issues the TMA
// loads of A (128 x 64) and B (BN x 64) k-tiles into a ring of `stages` slots, and two consumer
// warpgroups (64 rows of the 128 x BN tile each) issuing wgmma m64nBNk16 (SS, bf16 -> f32, 4 per
// k-tile), full / empty mbarriers per stage, setmaxnreg 40 / 232. The consumers keep one wgmma
// batch in flight (wait_group 1, then release the stage before) except with one stage.
// Operands use the 128-byte swizzle of TMA and of the wgmma descriptors, as CUTLASS does; the
// product is checked against a host reference.
//
//   ws_total_{cold,warm}  : cycles from the consumers' first full-barrier wait to their last
//                           wait_group 0 (clock64 of each consumer warpgroup's thread 0, earliest
//                           start to latest end), K = 4096 (64 k-tiles); cold: after an L2
//                           flush (A and B from DRAM), warm: A and B already in L2;
//                           param n<BN>_s<stages>
//   ws_ktile_warm         : cycles per k-tile, the slope between K = 4096 and K = 8192, warm
//   ws_check              : relative Frobenius error of C against the double-precision reference
//   ws_ktile_parts        : ws_ktile_warm with parts of the kernel taken out, to find what bounds
//                           it; param n<BN>_s<stages>_<part>: no_mma (the consumers wait for each
//                           stage and release it at once, no wgmma: the producer's TMA ring),
//                           no_tma (the producer arrives on the full barrier without loading:
//                           the consumers' wgmmas and barriers on stale slots), mma_only (the
//                           consumers' wgmma loop over the slots without any barrier)
//   ws_stamp              : the full kernel with clock64 stamps in shared memory at k-tiles 32
//                           to 39 (warm, K = 8192), cycles after the producer's wake of k-tile
//                           32; param n<BN>_s<stages>_k<kb>_<point>: p_wake, p_issued (the
//                           producer after its wait and after its second load), c<i>_full,
//                           c<i>_fenced, c<i>_first, c<i>_commit, c<i>_waited (consumer
//                           warpgroup i's thread 0 after its full wait, its wgmma.fence, its
//                           first wgmma, its commit and its wait_group)
// Build: python3 gen_wgmma.py 128 256 > wgmma_ops.h;
//        nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -I. -o gemm_ws gemm_ws.cu
#include "tma_util.cuh"
#include "wgmma_ops.h"
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

constexpr int kBm = 128, kBk = 64, kMaxStages = 6;

enum { kFull, kNoMma, kNoTma, kMmaOnly, kStamp };

struct Params {
  int ktiles;
  unsigned long long* out;  // [0..1] consumer starts, [2..3] consumer ends
  float* c;                 // 128 x BN
  long long* stamps;        // kStamp: 8 k-tiles x 8 clock64 stamps
};

// The stage count and the mode are template parameters: run-time tests of them in the loops
// cost the round trip ~90 cycles (an earlier build, h200-gemm_ws.csv before 2026-12-01 20:15).
template <int BN, int stages, int mode>
__global__ void __launch_bounds__(384, 1) ws_kernel(const __grid_constant__ CUtensorMap ma,
                                                     const __grid_constant__ CUtensorMap mb, Params p) {
  extern __shared__ uint8_t smem_raw[];
  // The 128-byte swizzle needs 1024-byte aligned slots.
  uint8_t* smem = (uint8_t*)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
  __shared__ __align__(8) uint64_t full[kMaxStages], empty[kMaxStages];
  // kStamp: the full kernel with clock64 stamps of k-tiles 32 to 39 kept in shared memory (a
  // few cycles each): the producer's wake and last issue, and per consumer warpgroup (thread 0)
  // its full-barrier wait's return, its fence, its first wgmma, its commit and its wait_group's
  // return.
  constexpr bool tr = mode == kStamp;
  __shared__ long long st[8][12];
  const auto stamp = [&](int kb, int k) {
    if (tr && kb >= 32 && kb < 40) st[kb - 32][k] = clock64();
  };
  constexpr int kABytes = kBm * kBk * 2, kBBytes = BN * kBk * 2, kStageBytes = kABytes + kBBytes;
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) {
      bar_init(saddr(&full[s]), 1);
      bar_init(saddr(&empty[s]), 256);
    }
  }
  __syncthreads();
  // Warp-uniform, as CUTLASS's canonical_warp_group_idx makes it: derived from threadIdx alone,
  // the A descriptor (slot + 64 c rows) is computed per k-tile in vector registers and moved to
  // uniform ones (R2UR) before each HGMMA, ~100 cycles on the consumers' path at 2 stages.
  const int wg = __shfl_sync(0xffffffffu, threadIdx.x / 128, 0);
  const uint32_t base = saddr(smem);
  if (wg == 0) {  // producer
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (threadIdx.x != 0 || mode == kMmaOnly) return;
    // The stage and its phase are counters, as CUTLASS's PipelineState keeps them: a division
    // by the run-time stage count would put tens of cycles of integer latency in the loop.
    int s = 0;
    uint32_t phase = 0;
    for (int kb = 0; kb < p.ktiles; ++kb) {
      wait_phase(saddr(&empty[s]), phase ^ 1);
      stamp(kb, 0);
      if (mode == kNoTma) {
        arrive(saddr(&full[s]));
      } else {
        arrive_expect(saddr(&full[s]), kStageBytes);
        const uint32_t slot = base + s * kStageBytes;
        tma_load(slot, &ma, 0, saddr(&full[s]), kb * kBk);
        tma_load(slot + kABytes, &mb, 0, saddr(&full[s]), kb * kBk);
        stamp(kb, 1);
      }
      if (++s == stages) {
        s = 0;
        phase ^= 1;
      }
    }
    return;
  }
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
  const int c = wg - 1;  // consumer warpgroup: rows 64c .. 64c + 63 of the tile
  float d[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) d[i] = 0.f;
  const long long t0 = clock64();
  int s = 0, prev = 0;
  uint32_t phase = 0;
  for (int kb = 0; kb < p.ktiles; ++kb) {
    if (mode != kMmaOnly) wait_phase(saddr(&full[s]), phase);
    const bool lead = threadIdx.x % 128 == 0;
    if (lead) stamp(kb, 2 + 3 * c);
    if (mode == kNoMma) {
      arrive(saddr(&empty[s]));
    } else {
      const uint32_t slot = base + s * kStageBytes;
      const uint64_t da = desc_sw128(slot + c * 64 * 128), db = desc_sw128(slot + kABytes);
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
      if (lead) stamp(kb, 8 + 2 * c);
#pragma unroll
      for (int k = 0; k < kBk / 16; ++k) {
        Wgmma<BN>::ss(d, da + 2 * k, db + 2 * k, 1);
        if (k == 0 && lead) stamp(kb, 9 + 2 * c);
      }
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      if (lead) stamp(kb, 3 + 3 * c);
      if (stages == 1) {
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        if (lead) stamp(kb, 4 + 3 * c);
        arrive(saddr(&empty[s]));
      } else {
        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
        if (lead) stamp(kb, 4 + 3 * c);
        if (kb >= 1 && mode != kMmaOnly) arrive(saddr(&empty[prev]));
      }
    }
    prev = s;
    if (++s == stages) {
      s = 0;
      phase ^= 1;
    }
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  const long long t1 = clock64();
  if (tr) {
    asm volatile("bar.sync 1, 256;" ::: "memory");  // both consumers' stamps are in
    if (threadIdx.x == 128)
      for (int i = 0; i < 96; ++i) p.stamps[i] = st[i / 12][i % 12] - st[0][0];
  }
  if (threadIdx.x % 128 == 0) {
    p.out[c] = t0;
    p.out[2 + c] = t1;
  }
  // The m64nNk16 accumulator layout: warp w of the warpgroup holds rows 16w .. 16w + 15; lane l,
  // register 4j + r: row l/4 + 8 (r/2), column 8j + 2 (l%4) + r%2.
  const int t = threadIdx.x % 128, w = t / 32, l = t % 32;
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) {
    const int j = i / 4, r = i % 4;
    const int row = 64 * c + 16 * w + l / 4 + 8 * (r / 2), col = 8 * j + 2 * (l % 4) + r % 2;
    p.c[row * BN + col] = d[i];
  }
}

static float from_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static unsigned long long* g_out;
static long long* g_stamps;
static float* g_c;
static uint8_t* g_flush;
constexpr size_t kFlushBytes = 256ull << 20;

// One run; returns the consumers' cycles (earliest start to latest end).
template <int BN, int stages, int mode>
static double run_once(const CUtensorMap& ma, const CUtensorMap& mb, int ktiles, bool cold) {
  if (cold) CHECK(cudaMemset(g_flush, ktiles & 0xff, kFlushBytes));  // evicts A and B from L2
  const int smem = stages * (kBm + BN) * kBk * 2 + 1024;
  CHECK(cudaFuncSetAttribute(ws_kernel<BN, stages, mode>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  Params p{ktiles, g_out, g_c, g_stamps};
  ws_kernel<BN, stages, mode><<<1, 384, smem>>>(ma, mb, p);
  LAUNCH_CHECK();
  unsigned long long h[4];
  CHECK(cudaMemcpy(h, g_out, sizeof h, cudaMemcpyDeviceToHost));
  return (double)(std::max(h[2], h[3]) - std::min(h[0], h[1]));
}

// run_once at a run-time stage count and mode.
template <int BN>
static double run(const CUtensorMap& ma, const CUtensorMap& mb, int stages, int ktiles, bool cold, int mode = kFull) {
#define WS_MODES(S)                                                          \
  if (stages == S) switch (mode) {                                           \
      case kFull: return run_once<BN, S, kFull>(ma, mb, ktiles, cold);       \
      case kNoMma: return run_once<BN, S, kNoMma>(ma, mb, ktiles, cold);     \
      case kNoTma: return run_once<BN, S, kNoTma>(ma, mb, ktiles, cold);     \
      case kMmaOnly: return run_once<BN, S, kMmaOnly>(ma, mb, ktiles, cold); \
      default: return run_once<BN, S, kStamp>(ma, mb, ktiles, cold);         \
    }
  WS_MODES(1)
  WS_MODES(2)
  WS_MODES(3)
  WS_MODES(4)
  WS_MODES(5)
  WS_MODES(6)
#undef WS_MODES
  fprintf(stderr, "no build for %d stages\n", stages);
  exit(1);
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <int BN>
static void sweep(int max_stages) {
  constexpr int kK = 8192;
  std::vector<uint16_t> ha((size_t)kBm * kK), hb((size_t)BN * kK);
  uint32_t x = 12345u + BN;
  auto rnd = [&]() {
    x = x * 1664525u + 1013904223u;
    return ((float)(x >> 8) / 16777216.0f - 0.5f);
  };
  for (auto& v : ha) v = to_bf16(rnd());
  for (auto& v : hb) v = to_bf16(rnd());
  uint16_t *da, *db;
  CHECK(cudaMalloc(&da, ha.size() * 2));
  CHECK(cudaMalloc(&db, hb.size() * 2));
  CHECK(cudaMemcpy(da, ha.data(), ha.size() * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, hb.data(), hb.size() * 2, cudaMemcpyHostToDevice));
  const CUtensorMap ma = make_map(da, kBm, kBm, kK, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, kBk, CU_TENSOR_MAP_SWIZZLE_128B);
  const CUtensorMap mb = make_map(db, BN, BN, kK, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, kBk, CU_TENSOR_MAP_SWIZZLE_128B);
  for (int stages = 1; stages <= max_stages; ++stages) {
    char param[32];
    snprintf(param, sizeof param, "n%d_s%d", BN, stages);
    std::vector<double> cold, warm4, warm8;
    for (int rep = 0; rep < 4; ++rep) {
      cold.push_back(run<BN>(ma, mb, stages, 64, true));
      run<BN>(ma, mb, stages, 128, false);  // brings all of A and B into L2
      warm4.push_back(run<BN>(ma, mb, stages, 64, false));
      warm8.push_back(run<BN>(ma, mb, stages, 128, false));
    }
    row("ws_total_cold", param, median(cold), "cycles");
    row("ws_total_warm", param, median(warm4), "cycles");
    row("ws_ktile_warm", param, (median(warm8) - median(warm4)) / 64.0, "cycles_per_ktile");
    if (stages == std::min(4, max_stages)) {  // C of the last K = 4096 run against the reference
      std::vector<float> hc((size_t)kBm * BN);
      run<BN>(ma, mb, stages, 64, false);
      CHECK(cudaMemcpy(hc.data(), g_c, hc.size() * 4, cudaMemcpyDeviceToHost));
      double err = 0, ref = 0;
      for (int i = 0; i < kBm; ++i)
        for (int j = 0; j < BN; ++j) {
          double s = 0;
          for (int k = 0; k < 64 * kBk; ++k) s += (double)from_bf16(ha[(size_t)i * kK + k]) * from_bf16(hb[(size_t)j * kK + k]);
          err += (hc[i * BN + j] - s) * (hc[i * BN + j] - s);
          ref += s * s;
        }
      row("ws_check", param, std::sqrt(err / ref), "relative_error");
    }
  }
  const char* parts[] = {"full", "no_mma", "no_tma", "mma_only"};
  for (int stages = 1; stages <= max_stages; ++stages)
    for (int mode = kNoMma; mode <= kMmaOnly; ++mode) {
      std::vector<double> w4, w8;
      for (int rep = 0; rep < 3; ++rep) {
        run<BN>(ma, mb, stages, 128, false, mode);
        w4.push_back(run<BN>(ma, mb, stages, 64, false, mode));
        w8.push_back(run<BN>(ma, mb, stages, 128, false, mode));
      }
      char param[40];
      snprintf(param, sizeof param, "n%d_s%d_%s", BN, stages, parts[mode]);
      row("ws_ktile_parts", param, (median(w8) - median(w4)) / 64.0, "cycles_per_ktile");
    }
  // The stamped kernel at 1 to 3 stages, warm, K = 8192 (k-tiles 32 to 39 stamped).
  const char* points[12] = {"p_wake",    "p_issued",  "c0_full",   "c0_commit", "c0_waited", "c1_full",
                            "c1_commit", "c1_waited", "c0_fenced", "c0_first",  "c1_fenced", "c1_first"};
  for (int stages = 1; stages <= 3; ++stages) {
    run<BN>(ma, mb, stages, 128, false);
    run<BN>(ma, mb, stages, 128, false, kStamp);
    long long h[96];
    CHECK(cudaMemcpy(h, g_stamps, sizeof h, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 96; ++i) {
      char param[48];
      snprintf(param, sizeof param, "n%d_s%d_k%d_%s", BN, stages, 32 + i / 12, points[i % 12]);
      row("ws_stamp", param, (double)h[i], "cycles");
    }
  }
  CHECK(cudaFree(da));
  CHECK(cudaFree(db));
}

int main() {
  header("gemm_ws");
  CHECK(cudaMalloc(&g_out, 4 * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&g_stamps, 96 * sizeof(long long)));
  CHECK(cudaMalloc(&g_c, (size_t)kBm * 256 * sizeof(float)));
  CHECK(cudaMalloc(&g_flush, kFlushBytes));
  sweep<128>(6);
  sweep<256>(4);  // 48 KiB a stage: 4 stages fill 192 of the 227 KiB
  unsigned timeouts = 0;
  CHECK(cudaMemcpyFromSymbol(&timeouts, g_timeouts, sizeof timeouts));
  printf("# mbarrier_wait_timeouts=%u\n", timeouts);
  footer();
  return 0;
}
