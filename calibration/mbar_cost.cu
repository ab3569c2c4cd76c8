// What mbarrier operations cost the thread that issues them, alone and next to TMA loads, on one
// SM: cycles per loop iteration (clock64 around 512 iterations, the median of three runs after a
// warm-up). Row mbar_cost, param = the variant:
//
//   self_arrive_wait : one thread, a 1-arrival mbarrier: arrive, then wait (try_wait loop) for
//                      the phase it just completed
//   wait_done        : one thread waits on a phase that completed before the loop
//   arrive_only      : one thread arrives on an mbarrier that never completes (2^20 - 1 arrivals)
//   expect_only      : the same with arrive.expect_tx of 128 bytes
//   tma_onebar       : one thread issues 1-row (128 B) TMA loads, all on one mbarrier armed for
//                      all of them before the loop
//   tma_arrive       : tma_onebar's loads, each followed by an arrive on another mbarrier
//   tma_wait         : tma_onebar's loads, each followed by a wait on a completed phase
//   tma_expect_each  : each load with its own arrive.expect_tx on one mbarrier of 512 arrivals
//                      (the burst's pattern with one barrier)
//   stream_rot4      : a 4-stage stream of 16 KiB boxes whose box j completes mbarrier j % 64
//                      (each mbarrier reused only every 64 boxes); compare memsys.cu's
//                      tma_stream k0_s4 (one mbarrier per stage)
//   stream_rot4_1row : the same with 1-row boxes
//   test_done        : wait_done with a test_wait loop; test_once: one test_wait (no loop)
//   lat_same         : a 1-row load's round trip: arrive.expect_tx, the load, a wait woken by
//                      its completion, on one mbarrier (tma.cu's tma_lat); lat_alt: the same
//                      alternating between two mbarriers
//   stream_same4     : stream_rot4 with one mbarrier per stage (each re-armed right after its
//                      wait, as memsys.cu's tma_stream); stream_same4_1row: with 1-row boxes
//   self_expect_wait : self_arrive_wait with arrive.expect_tx of 0 bytes instead of the arrive
//   wg_arrive_wait   : 128 threads arrive on a 128-arrival mbarrier, then all wait for it
//   cta_arrive_wait  : the same with 256 threads (gemm_ws's empty barrier)
//   warp_arrive_wait : 128 threads, lane 0 of each warp arrives (4 arrivals), all wait
//   empty            : the loop alone (one thread)
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o mbar_cost mbar_cost.cu
#include "tma_util.cuh"
#include <algorithm>
#include <vector>

constexpr int kIters = 512, kRing = 196608;

enum {
  kSelfArriveWait, kWaitDone, kArriveOnly, kExpectOnly, kTmaOneBar, kTmaArrive, kTmaWait,
  kTmaExpectEach, kStreamRot4, kStreamRot4Row, kTestDone, kTestOnce, kLatSame, kLatAlt,
  kStreamSame4, kStreamSame4Row, kSelfExpectWait, kWgArriveWait, kCtaArriveWait, kWarpArriveWait,
  kEmpty, kVariants
};
static const char* kNames[kVariants] = {
    "self_arrive_wait", "wait_done",  "arrive_only",     "expect_only",    "tma_onebar",
    "tma_arrive",       "tma_wait",   "tma_expect_each", "stream_rot4",    "stream_rot4_1row",
    "test_done",        "test_once",  "lat_same",        "lat_alt",        "stream_same4",
    "stream_same4_1row", "self_expect_wait",
    "wg_arrive_wait",   "cta_arrive_wait", "warp_arrive_wait", "empty"};

__device__ __forceinline__ void wait_test(uint32_t bar, uint32_t parity) {
  for (;;) {
    uint32_t ok;
    asm volatile(
        "{\n .reg .pred q;\n mbarrier.test_wait.parity.shared::cta.b64 q, [%1], %2;\n selp.u32 %0, 1, 0, q;\n}\n"
        : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
    if (ok) return;
  }
}

// The variant is a template parameter: a switch on a run-time value inside the loop compiles
// to an indirect branch, which costs the loop far more than the operations measured.
template <int variant>
__global__ void cost_kernel(const __grid_constant__ CUtensorMap row1, const __grid_constant__ CUtensorMap row128,
                            unsigned long long* out) {
  extern __shared__ __align__(1024) uint8_t ring[];
  __shared__ __align__(8) uint64_t bars[64], one, big, done, tma, each;
  const int t = threadIdx.x;
  if (t == 0) {
    for (int i = 0; i < 64; ++i) bar_init(saddr(&bars[i]));
    const uint32_t n = variant == kCtaArriveWait ? 256 : variant == kWgArriveWait ? 128 : variant == kWarpArriveWait ? 4 : 1;
    bar_init(saddr(&one), n);
    bar_init(saddr(&big), (1u << 20) - 1);  // the largest arrival count
    bar_init(saddr(&done));
    bar_init(saddr(&tma));
    bar_init(saddr(&each), kIters);
    arrive(saddr(&done));  // phase 0 of `done` completes here
  }
  __syncthreads();
  const bool multi = variant >= kWgArriveWait && variant != kEmpty;
  if (!multi && t != 0) return;
  const uint32_t b_one = saddr(&one), b_big = saddr(&big), b_done = saddr(&done), b_tma = saddr(&tma);
  if (variant >= kTmaOneBar && variant <= kTmaWait) arrive_expect(b_tma, kIters * 128);
  long long t0 = clock64();
  for (int i = 0; i < kIters; ++i) {
    switch (variant) {
      case kSelfArriveWait:
        arrive(b_one);
        wait_phase(b_one, i & 1);
        break;
      case kWaitDone: wait_phase(b_done, 0); break;
      case kArriveOnly: arrive(b_big); break;
      case kExpectOnly: arrive_expect(b_big, 128); break;
      case kTmaOneBar: tma_load(saddr(ring + (i % 1024) * 128), &row1, i, b_tma); break;
      case kTmaArrive:
        tma_load(saddr(ring + (i % 1024) * 128), &row1, i, b_tma);
        arrive(b_big);
        break;
      case kTmaWait:
        tma_load(saddr(ring + (i % 1024) * 128), &row1, i, b_tma);
        wait_phase(b_done, 0);
        break;
      case kTmaExpectEach:
        arrive_expect(saddr(&each), 128);
        tma_load(saddr(ring + (i % 1024) * 128), &row1, i, saddr(&each));
        break;
      case kStreamRot4:
      case kStreamRot4Row: {
        const bool wide = variant == kStreamRot4;
        const int bytes = wide ? 16384 : 128;
        if (i >= 4) wait_phase(saddr(&bars[(i - 4) % 64]), ((i - 4) / 64) & 1);
        const uint32_t bar = saddr(&bars[i % 64]);
        arrive_expect(bar, bytes);
        tma_load(saddr(ring + (i % 4) * 16384), wide ? &row128 : &row1, wide ? (i * 128) & 65535 : i, bar);
        break;
      }
      case kLatSame:  // a 1-row load's round trip, re-arming the barrier its wait was woken on
        arrive_expect(b_one, 128);
        tma_load(saddr(ring), &row1, i, b_one);
        wait_phase(b_one, i & 1);
        break;
      case kLatAlt: {  // the same, alternating between two barriers
        const uint32_t bar = saddr(&bars[i & 1]);
        arrive_expect(bar, 128);
        tma_load(saddr(ring), &row1, i, bar);
        wait_phase(bar, (i >> 1) & 1);
        break;
      }
      case kStreamSame4:
      case kStreamSame4Row: {  // stream_rot4 with one barrier per stage (memsys.cu's tma_stream)
        const bool wide = variant == kStreamSame4;
        const uint32_t bar = saddr(&bars[i % 4]);
        if (i >= 4) wait_phase(bar, ((i - 4) / 4) & 1);
        arrive_expect(bar, wide ? 16384 : 128);
        tma_load(saddr(ring + (i % 4) * 16384), wide ? &row128 : &row1, wide ? (i * 128) & 65535 : i, bar);
        break;
      }
      case kSelfExpectWait:  // self_arrive_wait with arrive.expect_tx of 0 bytes
        arrive_expect(b_one, 0);
        wait_phase(b_one, i & 1);
        break;
      case kTestDone: wait_test(b_done, 0); break;
      case kTestOnce: {  // one test_wait whose result the loop needs
        uint32_t ok;
        asm volatile(
            "{\n .reg .pred q;\n mbarrier.test_wait.parity.shared::cta.b64 q, [%1], 0;\n selp.u32 %0, 1, 0, q;\n}\n"
            : "=r"(ok) : "r"(b_done) : "memory");
        if (!ok) atomicAdd(&g_timeouts, 1u);
        break;
      }
      case kEmpty: asm volatile("" ::: "memory"); break;
      default:  // the multi-thread hand-offs
        if (variant != kWarpArriveWait || t % 32 == 0) arrive(b_one);
        wait_phase(b_one, i & 1);
        break;
    }
  }
  if (variant >= kTmaOneBar && variant <= kTmaWait) wait_phase(b_tma, 0);
  if (variant == kTmaExpectEach) wait_phase(saddr(&each), 0);  // all 512 arrivals and bytes
  if (variant == kStreamRot4 || variant == kStreamRot4Row)
    for (int i = kIters - 4; i < kIters; ++i) wait_phase(saddr(&bars[i % 64]), (i / 64) & 1);
  if (variant == kStreamSame4 || variant == kStreamSame4Row)
    for (int i = kIters - 4; i < kIters; ++i) wait_phase(saddr(&bars[i % 4]), (i / 4) & 1);
  long long t1 = clock64();
  if (t == 0) out[0] = t1 - t0;
}

template <int v>
static void measure(const CUtensorMap& row1, const CUtensorMap& row128, unsigned long long* d) {
  CHECK(cudaFuncSetAttribute(cost_kernel<v>, cudaFuncAttributeMaxDynamicSharedMemorySize, kRing));
  const int threads = v == kCtaArriveWait ? 256 : (v >= kWgArriveWait && v != kEmpty) ? 128 : 32;
  std::vector<double> c;
  for (int rep = 0; rep < 4; ++rep) {
    cost_kernel<v><<<1, threads, kRing>>>(row1, row128, d);
    LAUNCH_CHECK();
    unsigned long long h;
    CHECK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
    if (rep) c.push_back((double)h / kIters);
  }
  std::sort(c.begin(), c.end());
  row("mbar_cost", kNames[v], c[1], "cycles_per_iter");
}

int main() {
  header("mbar_cost");
  char* buf;
  CHECK(cudaMalloc(&buf, 8u << 20));
  CHECK(cudaMemset(buf, 0x3c, 8u << 20));
  const CUtensorMap row1 = make_map(buf, 65536, 1), row128 = make_map(buf, 65536, 128);
  unsigned long long* d;
  CHECK(cudaMalloc(&d, sizeof(unsigned long long)));
  measure<kSelfArriveWait>(row1, row128, d);
  measure<kWaitDone>(row1, row128, d);
  measure<kArriveOnly>(row1, row128, d);
  measure<kExpectOnly>(row1, row128, d);
  measure<kTmaOneBar>(row1, row128, d);
  measure<kTmaArrive>(row1, row128, d);
  measure<kTmaWait>(row1, row128, d);
  measure<kTmaExpectEach>(row1, row128, d);
  measure<kStreamRot4>(row1, row128, d);
  measure<kStreamRot4Row>(row1, row128, d);
  measure<kTestDone>(row1, row128, d);
  measure<kTestOnce>(row1, row128, d);
  measure<kLatSame>(row1, row128, d);
  measure<kLatAlt>(row1, row128, d);
  measure<kStreamSame4>(row1, row128, d);
  measure<kStreamSame4Row>(row1, row128, d);
  measure<kSelfExpectWait>(row1, row128, d);
  measure<kWgArriveWait>(row1, row128, d);
  measure<kCtaArriveWait>(row1, row128, d);
  measure<kWarpArriveWait>(row1, row128, d);
  measure<kEmpty>(row1, row128, d);
  unsigned timeouts = 0;
  CHECK(cudaMemcpyFromSymbol(&timeouts, g_timeouts, sizeof timeouts));
  printf("# mbarrier_wait_timeouts=%u\n", timeouts);
  footer();
  return 0;
}
