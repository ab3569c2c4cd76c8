// What shares an SM's shared-memory bandwidth: SS-wgmma operand reads and TMA writes, on one SM,
// cycles from clock64() inside the kernel. wgmma is m64nNk16 bf16 x bf16 -> f32 with A and B in
// shared memory (SS), K-major, no swizzle, as in wgmma.cu; it reads A (64x16: 2048 B) and B
// (Nx16: 32*N B) per instruction, `operand bytes` below. TMA is cp.async.bulk.tensor.2d (tile,
// no swizzle) of boxes of `b` rows of 128 bytes (64 bf16) from a 4 MiB L2-resident tensor into
// a 128 KiB ring the wgmmas never read (no data dependence).
//
//   ss_fixed_{1,2}wg  : cycles per wgmma per SM, back to back (groups of 32, one group in
//                       flight, as wgmma.cu), every wgmma reading the same A and B, both
//                       warpgroups the same ones (wgmma.cu's setup: the sanity check); param N
//   ss_alone_{1,2}wg  : the same, the 32 wgmmas of a group walking over 4 k-slices of A and B
//                       (distinct addresses, like a 64-deep k-tile); the 2nd warpgroup reads its
//                       own A and the same B (a 128-row CTA tile); param N
//   ss_share_2wg      : ss_alone_2wg with the two warpgroups reading the same A and B (same),
//                       their own A and the same B (diffA), or their own A and B (diffAB);
//                       param n<N>_<variant>
//   tma_alone         : TMA bytes per cycle per SM with no wgmma; param b<rows>_p<W>x<L>: boxes
//                       of <rows> rows, issued by lanes 0..L-1 of W producer warps, each issuing
//                       lane with its own 4 stages (mbarrier per stage, waits with try_wait)
//   tma_wait_alone, tma_issue_alone : cycles per box an issuing lane spends in its stage wait,
//                       and in arrive.expect_tx + cp.async.bulk.tensor; same param
//   tma_arrive_alone  : the part of tma_issue_alone spent in arrive.expect_tx
//   tma_*_alone_testwait : tma_alone, tma_wait_alone, tma_issue_alone with the stage wait
//                       polling mbarrier.test_wait
//   ss_tma_{1,2}wg    : ss_alone_{1,2}wg's cycles per wgmma per SM while the stream runs;
//                       param n<N>_b<rows>_p<W>x<L>
//   tma_with_{1,2}wg  : the stream's bytes per cycle per SM during those wgmmas; same param
//   tma_wait_with_{1,2}wg : its cycles per box in the stage wait; same param
//   port_sum_{1,2}wg  : operand bytes per cycle (wgmmas x (2048 + 32 N) over their cycles) plus
//                       tma_with; same param
//   lds_alone, sts_alone : bytes per cycle per SM of `param` warps (p<W>) of conflict-free
//                       16-byte shared loads / stores (8 independent per iteration per lane)
//   ss_lds_{1,2}wg, lds_with_{1,2}wg, lds_sum_{1,2}wg : as ss_tma / tma_with / port_sum with
//                       those loads beside the wgmmas instead of TMA; param n<N>_p<W>
//   ss_sts_*, sts_with_*, sts_sum_* : the same with stores
//   ss_spin_{1,2}wg   : the wgmmas beside W warps that only poll the done flag (issue-slot
//                       contention without memory traffic); param n<N>_p<W>
//   ss_tmatest_1wg, tmatest_with_1wg : ss_tma_1wg / tma_with_1wg at b128_p1x1 with the stage
//                       wait polling test_wait; param n<N>_b128_p1x1
//   ss_tmasleep_1wg, tmasleep_with_1wg : the same with try_wait and a 4 us __nanosleep after
//                       each box (a trickle of TMA)
//   ss_idlewait_1wg   : the wgmmas beside one lane sitting in try_wait on an mbarrier that never
//                       completes (no TMA); param n<N>_p1
//   inflight_issue_n<N> : one warpgroup: cycles from before wgmma.fence to right after the k-th
//                       back-to-back wgmma issued (clock64 of the issuing thread); param k
//   inflight_done_n<N>  : the same to after commit + wait_group 0 (accumulators ready); param k
// Build: python3 gen_wgmma.py 32 64 128 256 > wgmma_ops.h (run.sh makes one with every N);
//        nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -I. -o smem_port smem_port.cu
#include "tma_util.cuh"
#include "wgmma_ops.h"
#include <algorithm>
#include <vector>

// Shared-memory layout (dynamic): A of warpgroup w at w*8 KiB (4 slices of 2 KiB), B of
// warpgroup w at 16 KiB + w*32 KiB (4 slices of 32*N B), the TMA ring at 80 KiB (128 KiB).
constexpr int kAOff = 8192, kBBase = 16384, kBOff = 32768, kRing = 81920, kRingBytes = 131072;
constexpr int kSmem = kRing + kRingBytes;
constexpr int kStages = 4, kMaxIssuers = 8;
// Producer modes: a TMA stream (waits with try_wait, or with a test_wait poll, or try_wait and
// a 4 us nanosleep after each box), shared loads, shared stores, a warp that only polls the
// consumers' done flag, or one lane that sits in try_wait on an mbarrier that never completes.
enum { kTma, kTmaTest, kTmaSleep, kLds, kSts, kSpin, kIdleWait };
static bool is_tma(int mode) { return mode == kTma || mode == kTmaTest || mode == kTmaSleep; }

// wait_phase with mbarrier.test_wait (returns at once; this loop polls), same time-out.
__device__ __forceinline__ void wait_phase_test(uint32_t bar, uint32_t parity) {
  long long t0 = clock64();
  for (;;) {
    uint32_t ok;
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
    if (ok) return;
    if (clock64() - t0 > 2000000000LL) { atomicAdd(&g_timeouts, 1u); return; }
  }
}

__device__ __forceinline__ uint64_t desc(uint32_t addr) {
  // As wgmma.cu: leading-dimension byte offset 128 (between the two K core matrices),
  // stride-dimension byte offset 256 (between 8-row groups), no swizzle.
  const uint64_t lbo = 128, sbo = 256;
  return ((addr & 0x3FFFF) >> 4) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32);
}

struct Params {
  int wgs, groups;           // consumer warpgroups; groups of 32 wgmmas per warpgroup (0: none)
  int a_step, b_step, walk;  // bytes between the warpgroups' A / B; 1: walk over 4 k-slices
  int mode, pw, pl;          // producer mode; producer warps; TMA-issuing lanes per warp
  int box_rows, loads;       // box rows of 128 B; boxes per issuer or iterations per warp (a cap
                             // when the wgmmas stop it)
  int region_rows;
  unsigned long long* out;   // [0..1] wg t0, [2..3] wg t1, [8 + 6i ..] producer i: t0, t_end, bytes,
                             // TMA wait, issue and arrive cycles per box
  float* sink;
};

template <int N>
__global__ void __launch_bounds__(320, 1) port_kernel(const __grid_constant__ CUtensorMap map, Params p) {
  extern __shared__ __align__(1024) uint8_t smem[];
  __shared__ __align__(8) uint64_t bars[kMaxIssuers * kStages];
  __shared__ int done;
  uint16_t* ops = (uint16_t*)smem;
  for (int i = threadIdx.x; i < kRing / 2; i += blockDim.x) ops[i] = 0x3c00 + (i & 7);  // ~0.008 in bf16
  const int issuers = p.pw * p.pl;
  if (threadIdx.x == 0) {
    done = 0;
    for (int i = 0; i < issuers * kStages; ++i) bar_init(saddr(&bars[i]));
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint32_t base = saddr(smem);
  if (warp < 4 * p.wgs) {  // consumer warpgroup
    const int wg = warp / 4;
    uint64_t da[4], db[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      da[i] = desc(base + wg * p.a_step + i * p.walk * 2048);
      db[i] = desc(base + kBBase + wg * p.b_step + i * p.walk * 32 * N);
    }
    float d[N / 2];
#pragma unroll
    for (int i = 0; i < N / 2; ++i) d[i] = 0.f;
    long long t0 = clock64();
    for (int it = 0; it < p.groups; ++it) {
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
      for (int k = 0; k < 32; ++k) Wgmma<N>::ss(d, da[k & 3], db[k & 3], 1);
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    long long t1 = clock64();
    if (threadIdx.x % 128 == 0) {
      atomicAdd(&done, 1);
      p.out[wg] = t0;
      p.out[2 + wg] = t1;
    }
    float s = 0;
#pragma unroll
    for (int i = 0; i < N / 2; ++i) s += d[i];
    if (s == 1.2345f) p.sink[threadIdx.x] = s;  // keeps the accumulators
    return;
  }
  const int pwarp = warp - 4 * p.wgs;
  if (pwarp >= p.pw) return;
  const bool stop_on_done = p.groups > 0;
  volatile int* vdone = &done;
  const uint32_t ring = base + kRing;
  if (p.mode == kLds || p.mode == kSts || p.mode == kSpin) {
    // Every lane of each producer warp: 8 conflict-free 16-byte shared loads (or stores) per
    // iteration, lane L at L*16 + k*512 in the warp's own 4 KiB of the ring; kSpin only polls.
    const uint32_t a = ring + pwarp * 4096 + lane * 16;
    uint32_t acc = lane;
    long long t0 = clock64();
    int it = 0;
    for (; it < p.loads && !(stop_on_done && *vdone >= p.wgs); ++it) {
      if (p.mode == kLds) {
        uint32_t x[8][4];
#pragma unroll
        for (int k = 0; k < 8; ++k)
          asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                       : "=r"(x[k][0]), "=r"(x[k][1]), "=r"(x[k][2]), "=r"(x[k][3]) : "r"(a + k * 512));
#pragma unroll
        for (int k = 0; k < 8; ++k) acc ^= x[k][0] + x[k][1] + x[k][2] + x[k][3];
      } else if (p.mode == kSts) {
#pragma unroll
        for (int k = 0; k < 8; ++k)
          asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};" ::"r"(a + k * 512), "r"(acc + k) : "memory");
      }
    }
    long long t1 = clock64();
    if (acc == 0x12345678u) p.sink[threadIdx.x] = (float)acc;
    if (lane == 0) {
      unsigned long long* o = p.out + 8 + 6 * pwarp;
      o[0] = t0;
      o[1] = t1;
      o[2] = p.mode == kSpin ? 0 : (unsigned long long)it * 8 * 512;
    }
    return;
  }
  if (p.mode == kIdleWait) {
    if (lane != 0) return;
    const uint32_t bar = saddr(&bars[pwarp * kStages]);
    long long t0 = clock64();
    for (int it = 0; it < p.loads && !(stop_on_done && *vdone >= p.wgs); ++it) {
      uint32_t ok;  // phase 0 never completes: each try_wait returns false at its time limit
      asm volatile(
          "{\n .reg .pred q;\n mbarrier.try_wait.parity.shared::cta.b64 q, [%1], 0;\n selp.u32 %0, 1, 0, q;\n}\n"
          : "=r"(ok) : "r"(bar) : "memory");
      if (ok) break;
    }
    unsigned long long* o = p.out + 8 + 6 * pwarp;
    o[0] = t0;
    o[1] = clock64();
    return;
  }
  if (lane >= p.pl) return;
  // TMA: issuer i streams boxes through its own kStages stages; a stage's slot in the ring is
  // (i * kStages + s) mod slots (slots may alias between issuers: nothing reads them). It also
  // adds up the cycles it spends waiting for a stage and issuing (arrive.expect_tx + the copy).
  const int i = pwarp * p.pl + lane;
  const int box_bytes = p.box_rows * 128, slots = kRingBytes / box_bytes;
  uint64_t* my = bars + i * kStages;
  long long t0 = clock64(), t_last = t0, waiting = 0, issuing = 0, arriving = 0;
  unsigned long long boxes = 0;
  int j = 0;
  for (;; ++j) {
    const int s = j % kStages;
    if (j >= kStages) {
      const long long w0 = clock64();
      if (p.mode == kTmaTest) wait_phase_test(saddr(&my[s]), ((j / kStages) - 1) & 1);
      else wait_phase(saddr(&my[s]), ((j / kStages) - 1) & 1);
      ++boxes;
      t_last = clock64();
      waiting += t_last - w0;
    }
    if (j >= p.loads || (stop_on_done && *vdone >= p.wgs)) break;
    const uint32_t r = ((uint32_t)j * issuers + i) * p.box_rows & (p.region_rows - 1);
    const uint32_t dst = ring + ((i * kStages + s) % slots) * box_bytes;
    const long long i0 = clock64();
    arrive_expect(saddr(&my[s]), box_bytes);
    const long long i1 = clock64();
    tma_load(dst, &map, (int)r, saddr(&my[s]));
    issuing += clock64() - i0;
    arriving += i1 - i0;
    if (p.mode == kTmaSleep) __nanosleep(4000);
  }
  // Drain the boxes still in flight (not counted: the rate is over boxes seen before the stop).
  for (int b = j > kStages - 1 ? j - kStages + 1 : 0; b < j; ++b) wait_phase(saddr(&my[b % kStages]), (b / kStages) & 1);
  unsigned long long* o = p.out + 8 + 6 * i;
  o[0] = t0;
  o[1] = t_last;
  o[2] = boxes * box_bytes;
  o[3] = boxes ? waiting / boxes : 0;
  o[4] = j ? issuing / j : 0;
  o[5] = j ? arriving / j : 0;
}

// One warpgroup: K back-to-back wgmmas, timed at issue and at wait_group 0, `reps` times.
template <int N, int K>
__global__ void __launch_bounds__(128, 1) inflight_kernel(int reps, unsigned long long* out, float* sink) {
  __shared__ __align__(128) uint16_t ops[(64 + 256) * 16];
  for (int i = threadIdx.x; i < (64 + 256) * 16; i += blockDim.x) ops[i] = 0x3c00 + (i & 7);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const uint32_t base = saddr(ops);
  const uint64_t da = desc(base), db = desc(base + 64 * 16 * 2);
  float d[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) d[i] = 0.f;
  unsigned long long issue = 0, total = 0;
  for (int r = 0; r <= reps; ++r) {
    long long t0 = clock64();
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int k = 0; k < K; ++k) Wgmma<N>::ss(d, da, db, 1);
    long long t1 = clock64();
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    long long t2 = clock64();
    if (r > 0) {  // rep 0 warms up
      issue += t1 - t0;
      total += t2 - t0;
    }
  }
  if (threadIdx.x == 0) {
    out[0] = issue;
    out[1] = total;
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) s += d[i];
  if (s == 1.2345f) sink[threadIdx.x] = s;
}

struct Result {
  double wg_cycles;      // cycles per wgmma per SM (0: no wgmma)
  double bpc;            // the producer's bytes per cycle per SM (0: none)
  double wait, issue;    // TMA: cycles per box in wait_phase, and in arrive.expect_tx + the copy
  double arrive;         // TMA: cycles per box in arrive.expect_tx
};

static unsigned long long* g_out;
static float* g_sink;

static double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <int N>
static Result run(const CUtensorMap& map, Params p) {
  p.out = g_out;
  p.sink = g_sink;
  const int threads = 128 * p.wgs + 32 * p.pw;
  const int producers = is_tma(p.mode) ? p.pw * p.pl : p.pw;
  std::vector<double> wgc, bpc, wait, issue, arrive;
  for (int rep = 0; rep < 4; ++rep) {  // a warm-up, then the median of three
    CHECK(cudaMemset(g_out, 0, 64 * sizeof(unsigned long long)));
    port_kernel<N><<<1, threads, kSmem>>>(map, p);
    LAUNCH_CHECK();
    unsigned long long h[64];
    CHECK(cudaMemcpy(h, g_out, sizeof h, cudaMemcpyDeviceToHost));
    if (rep == 0) continue;
    if (p.wgs > 0 && p.groups > 0) {
      long long t0 = (long long)h[0], t1 = (long long)h[2];
      for (int w = 1; w < p.wgs; ++w) {
        t0 = std::min(t0, (long long)h[w]);
        t1 = std::max(t1, (long long)h[2 + w]);
      }
      wgc.push_back((double)(t1 - t0) / ((double)p.groups * 32 * p.wgs));
    }
    if (producers > 0) {
      long long t0 = (long long)h[8], t1 = (long long)h[9];
      double bytes = 0, w = 0, is = 0, ar = 0;
      for (int i = 0; i < producers; ++i) {
        const unsigned long long* o = h + 8 + 6 * i;
        t0 = std::min(t0, (long long)o[0]);
        t1 = std::max(t1, (long long)o[1]);
        bytes += (double)o[2];
        w += (double)o[3] / producers;
        is += (double)o[4] / producers;
        ar += (double)o[5] / producers;
      }
      bpc.push_back(bytes / (double)(t1 - t0));
      wait.push_back(w);
      issue.push_back(is);
      arrive.push_back(ar);
    }
  }
  return {median(wgc), median(bpc), median(wait), median(issue), median(arrive)};
}

static Params consumers(int n, int wgs, int walk, int a_step, int b_step) {
  Params p{};
  p.wgs = wgs;
  p.groups = std::max(16, 8192 / n);  // about 130 k cycles per warpgroup
  p.walk = walk;
  p.a_step = a_step;
  p.b_step = b_step;
  p.region_rows = 32768;
  return p;
}

static void rowf(const char* param, double v, const char* unit, const char* fmt, int wgs) {
  char t[64];
  snprintf(t, sizeof t, fmt, wgs);
  row(t, param, v, unit);
}

template <int N>
static void sweep_n(const CUtensorMap* maps, const int* box_rows, int nbox, const int (*prods)[2], int nprod) {
  char param[64], test[64];
  for (int wgs = 1; wgs <= 2; ++wgs) {
    snprintf(test, sizeof test, "ss_fixed_%dwg", wgs);
    row(test, N, run<N>(maps[0], consumers(N, wgs, 0, 0, 0)).wg_cycles, "cycles_per_wgmma");
  }
  for (int wgs = 1; wgs <= 2; ++wgs) {
    snprintf(test, sizeof test, "ss_alone_%dwg", wgs);
    row(test, N, run<N>(maps[0], consumers(N, wgs, 1, kAOff, 0)).wg_cycles, "cycles_per_wgmma");
  }
  const char* names[3] = {"same", "diffA", "diffAB"};
  const int steps[3][2] = {{0, 0}, {kAOff, 0}, {kAOff, kBOff}};
  for (int v = 0; v < 3; ++v) {
    snprintf(param, sizeof param, "n%d_%s", N, names[v]);
    row("ss_share_2wg", param, run<N>(maps[0], consumers(N, 2, 1, steps[v][0], steps[v][1])).wg_cycles,
        "cycles_per_wgmma");
  }
  const double op_bytes = 2048.0 + 32.0 * N;
  for (int wgs = 1; wgs <= 2; ++wgs) {
    for (int b = 0; b < nbox; ++b)
      for (int q = 0; q < nprod; ++q) {
        Params p = consumers(N, wgs, 1, kAOff, 0);
        p.mode = kTma;
        p.pw = prods[q][0];
        p.pl = prods[q][1];
        p.box_rows = box_rows[b];
        p.loads = 1 << 20;
        Result r = run<N>(maps[b], p);
        snprintf(param, sizeof param, "n%d_b%d_p%dx%d", N, box_rows[b], p.pw, p.pl);
        rowf(param, r.wg_cycles, "cycles_per_wgmma", "ss_tma_%dwg", wgs);
        rowf(param, r.bpc, "bytes_per_clk_per_sm", "tma_with_%dwg", wgs);
        rowf(param, op_bytes / r.wg_cycles + r.bpc, "bytes_per_clk_per_sm", "port_sum_%dwg", wgs);
        rowf(param, r.wait, "cycles_per_box", "tma_wait_with_%dwg", wgs);
      }
    if (wgs == 1) {  // what in a TMA stream slows the wgmmas: the wait, the rate, an idle wait
      snprintf(param, sizeof param, "n%d_b128_p1x1", N);
      Params p = consumers(N, wgs, 1, kAOff, 0);
      p.pw = p.pl = 1;
      p.box_rows = 128;
      p.loads = 1 << 20;
      p.mode = kTmaTest;
      Result r = run<N>(maps[1], p);
      rowf(param, r.wg_cycles, "cycles_per_wgmma", "ss_tmatest_%dwg", wgs);
      rowf(param, r.bpc, "bytes_per_clk_per_sm", "tmatest_with_%dwg", wgs);
      p.mode = kTmaSleep;
      r = run<N>(maps[1], p);
      rowf(param, r.wg_cycles, "cycles_per_wgmma", "ss_tmasleep_%dwg", wgs);
      rowf(param, r.bpc, "bytes_per_clk_per_sm", "tmasleep_with_%dwg", wgs);
      snprintf(param, sizeof param, "n%d_p1", N);
      p.mode = kIdleWait;
      rowf(param, run<N>(maps[1], p).wg_cycles, "cycles_per_wgmma", "ss_idlewait_%dwg", wgs);
    }
    // Shared loads, shared stores and a polling-only warp beside the wgmmas (4 warps: 1 wg only).
    for (int pw = 1; pw <= (wgs == 1 ? 4 : 2); pw *= 2) {
      snprintf(param, sizeof param, "n%d_p%d", N, pw);
      Params p = consumers(N, wgs, 1, kAOff, 0);
      p.pw = pw;
      p.loads = 1 << 24;
      p.mode = kLds;
      Result r = run<N>(maps[0], p);
      rowf(param, r.wg_cycles, "cycles_per_wgmma", "ss_lds_%dwg", wgs);
      rowf(param, r.bpc, "bytes_per_clk_per_sm", "lds_with_%dwg", wgs);
      rowf(param, op_bytes / r.wg_cycles + r.bpc, "bytes_per_clk_per_sm", "lds_sum_%dwg", wgs);
      p.mode = kSts;
      r = run<N>(maps[0], p);
      rowf(param, r.wg_cycles, "cycles_per_wgmma", "ss_sts_%dwg", wgs);
      rowf(param, r.bpc, "bytes_per_clk_per_sm", "sts_with_%dwg", wgs);
      rowf(param, op_bytes / r.wg_cycles + r.bpc, "bytes_per_clk_per_sm", "sts_sum_%dwg", wgs);
      p.mode = kSpin;
      r = run<N>(maps[0], p);
      rowf(param, r.wg_cycles, "cycles_per_wgmma", "ss_spin_%dwg", wgs);
    }
  }
}

template <int N, int K>
static void inflight_one(unsigned long long* d) {
  const int reps = 64;
  inflight_kernel<N, K><<<1, 128>>>(reps, d, g_sink);  // warm-up
  LAUNCH_CHECK();
  inflight_kernel<N, K><<<1, 128>>>(reps, d, g_sink);
  LAUNCH_CHECK();
  unsigned long long h[2];
  CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  char test[32];
  snprintf(test, sizeof test, "inflight_issue_n%d", N);
  row(test, K, (double)h[0] / reps, "cycles");
  snprintf(test, sizeof test, "inflight_done_n%d", N);
  row(test, K, (double)h[1] / reps, "cycles");
}

template <int N>
static void inflight_n(unsigned long long* d) {
  inflight_one<N, 1>(d);
  inflight_one<N, 2>(d);
  inflight_one<N, 4>(d);
  inflight_one<N, 8>(d);
  inflight_one<N, 16>(d);
  inflight_one<N, 32>(d);
}

int main() {
  header("smem_port");
  CHECK(cudaMalloc(&g_out, 64 * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&g_sink, 320 * sizeof(float)));
  const size_t bytes = 8u << 20;  // 64 Ki rows of 128 B; boxes come from the first 4 MiB
  char* buf;
  CHECK(cudaMalloc(&buf, bytes));
  CHECK(cudaMemset(buf, 0x3c, bytes));
  CHECK(cudaFuncSetAttribute(port_kernel<32>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  CHECK(cudaFuncSetAttribute(port_kernel<64>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  CHECK(cudaFuncSetAttribute(port_kernel<128>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  CHECK(cudaFuncSetAttribute(port_kernel<256>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  const int box_rows[3] = {64, 128, 256};
  CUtensorMap maps[3];
  for (int b = 0; b < 3; ++b) maps[b] = make_map(buf, bytes / 128, box_rows[b]);

  // The stream alone: 8 MiB per run over all issuers.
  const int alone_prods[][2] = {{1, 1}, {1, 2}, {1, 4}, {1, 8}, {2, 1}, {2, 4}};
  char param[64];
  for (int mode : {kTma, kTmaTest})
    for (int b = 0; b < 3; ++b)
      for (auto& q : alone_prods) {
        if (mode == kTmaTest && q[0] * q[1] > 4) continue;
        Params p{};
        p.mode = mode;
        p.pw = q[0];
        p.pl = q[1];
        p.box_rows = box_rows[b];
        p.loads = (8 << 20) / (box_rows[b] * 128) / (q[0] * q[1]);
        p.region_rows = 32768;
        snprintf(param, sizeof param, "b%d_p%dx%d", box_rows[b], q[0], q[1]);
        Result r = run<64>(maps[b], p);
        const bool t = mode == kTmaTest;
        row(t ? "tma_alone_testwait" : "tma_alone", param, r.bpc, "bytes_per_clk_per_sm");
        row(t ? "tma_wait_alone_testwait" : "tma_wait_alone", param, r.wait, "cycles_per_box");
        row(t ? "tma_issue_alone_testwait" : "tma_issue_alone", param, r.issue, "cycles_per_box");
        if (!t) row("tma_arrive_alone", param, r.arrive, "cycles_per_box");
      }
  for (int mode : {kLds, kSts})
    for (int pw = 1; pw <= 4; pw *= 2) {
      Params p{};
      p.mode = mode;
      p.pw = pw;
      p.loads = 4096;
      snprintf(param, sizeof param, "p%d", pw);
      row(mode == kLds ? "lds_alone" : "sts_alone", param, run<64>(maps[0], p).bpc, "bytes_per_clk_per_sm");
    }
  const int prods[][2] = {{1, 1}, {1, 4}, {2, 4}};
  sweep_n<32>(maps, box_rows, 3, prods, 3);
  sweep_n<64>(maps, box_rows, 3, prods, 3);
  sweep_n<128>(maps, box_rows, 3, prods, 3);
  sweep_n<256>(maps, box_rows, 3, prods, 3);

  inflight_n<64>(g_out);
  inflight_n<128>(g_out);
  inflight_n<256>(g_out);

  unsigned timeouts = 0;
  CHECK(cudaMemcpyFromSymbol(&timeouts, g_timeouts, sizeof timeouts));
  printf("# mbarrier_wait_timeouts=%u\n", timeouts);
  footer();
  return 0;
}
