// TMA (cp.async.bulk.tensor.2d, tile mode, no swizzle) on one SM, cycles from clock64():
//   tma_lat_l2 / tma_lat_hbm : cycles from arrive.expect_tx + the load to the try_wait loop
//                              seeing the mbarrier phase complete, one box of `param` rows of
//                              128 bytes (64 bf16) at a time: the same box again (L2 hit) or a
//                              new box 1 MiB further on after an L2 flush (DRAM)
//   tma_issue                : total cycles for one thread to issue `param` 1-row (128-byte)
//                              boxes on one mbarrier and see them all land (L2 hits); the slope
//                              between two counts is the issue interval
//   tma_bw_l2 / tma_bw_hbm   : bytes per cycle per SM of one thread streaming 16 KiB boxes
//                              (128 rows) through `param` stages (mbarrier per stage), 1024
//                              boxes from a 4 MiB L2-resident region or from DRAM
//   tma_bw_streams           : the same (L2) from `param` warps at once, 8 slots in all
//   tma_bw_hbm_streams       : the same from DRAM, each warp its own rows; param 43: 4 warps of
//                              3 stages (12 slots, 192 KiB)
//   tma_bw_rows              : one thread, boxes of `param` 128-byte rows, 128 KiB of slots
//   tma_bw_wide              : one thread, 16 KiB boxes of 64 rows of 256 bytes
//   tma_bw_promo256          : tma_bw_l2 at 8 stages with CU_TENSOR_MAP_L2_PROMOTION_L2_256B
//   tma_bw_shape             : tma_bw_streams,4 (4 warps x 2 stages of 16 KiB boxes, 128 rows
//                              of 128 B) with the box's rows `pitch` bytes apart in a wider
//                              tensor, no swizzle or the 128-byte one, and each L2 promotion;
//                              param p<pitch>_sw<0|128>_pr<0|128|256>; and boxes of 256 rows
//                              of 64 B or 32 B without swizzle or with the 64- or 32-byte one,
//                              param w<row bytes>_sw<swizzle bytes>
// The streams' loops divide by no run-time value (data/h200-tma.csv of 2026-11-29 came from a
// loop that did, and measured it: 28 B/cycle a thread for any box and stage count).
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o tma tma.cu
// (cuTensorMapEncodeTiled comes through the runtime's driver entry point: no -lcuda needed.)
#include "tma_util.cuh"
#include <algorithm>

// Mean cycles per load over iterations 1..iters (iteration 0 warms the line when step is 0).
__global__ void tma_lat(const __grid_constant__ CUtensorMap map, int iters, int row0, int step, int bytes,
                        unsigned long long* out) {
  extern __shared__ __align__(1024) uint8_t dst[];
  __shared__ __align__(8) uint64_t bar;
  if (threadIdx.x != 0) return;
  const uint32_t b = saddr(&bar);
  bar_init(b);
  unsigned long long total = 0;
  for (int i = 0; i <= iters; ++i) {
    long long t0 = clock64();
    arrive_expect(b, bytes);
    tma_load(saddr(dst), &map, row0 + i * step, b);
    wait_phase(b, i & 1);
    long long t1 = clock64();
    if (i > 0) total += t1 - t0;
  }
  out[0] = total / iters;
}

// One thread issues n one-row boxes on one mbarrier and waits for all of them.
__global__ void tma_issue(const __grid_constant__ CUtensorMap map, int n, unsigned long long* out) {
  extern __shared__ __align__(1024) uint8_t dst[];
  __shared__ __align__(8) uint64_t bar;
  if (threadIdx.x != 0) return;
  const uint32_t b = saddr(&bar);
  bar_init(b);
  long long t0 = clock64();
  arrive_expect(b, n * 128);
  for (int k = 0; k < n; ++k) tma_load(saddr(dst + (k % 256) * 128), &map, (k * 37) % 4096, b);
  wait_phase(b, 0);
  long long t1 = clock64();
  out[0] = t1 - t0;
}

// Lane 0 of each of the CTA's warps streams `loads` boxes of `box_rows` rows (`box_bytes`
// bytes) through its own STAGES slots, each with its own mbarrier; warp w's rows start
// `warp_rows` after warp w - 1's. Stage count and box bytes are template parameters and the
// region a power of two, so that the loop holds no division by a run-time value (this file's
// first version divided by a run-time stage count and its loop took ~582 cycles a box whatever
// the box and the stages: 28 B/cycle a thread) and no constant-bank load.
template <int STAGES, int BOX_BYTES>
__global__ void tma_stream(const __grid_constant__ CUtensorMap map, int loads, int box_rows, int row0,
                           int region_mask, int warp_rows, unsigned long long* out) {
  constexpr int box_bytes = BOX_BYTES;
  extern __shared__ __align__(1024) uint8_t dst[];
  __shared__ __align__(8) uint64_t bars[16];
  if (threadIdx.x % 32 != 0) return;
  const int w = threadIdx.x / 32;
  uint64_t* my = bars + w * STAGES;
  uint8_t* slots = dst + w * STAGES * box_bytes;
  for (int s = 0; s < STAGES; ++s) bar_init(saddr(&my[s]));
  long long t0 = clock64();
  int s = 0;
  uint32_t phase = 0;
  for (int j = 0; j < loads; ++j) {
    if (j >= STAGES) wait_phase(saddr(&my[s]), phase ^ 1);  // the phase its previous fill completed
    arrive_expect(saddr(&my[s]), box_bytes);
    tma_load(saddr(slots + s * box_bytes), &map, row0 + w * warp_rows + ((j * box_rows) & region_mask),
             saddr(&my[s]));
    if (++s == STAGES) {
      s = 0;
      phase ^= 1;
    }
  }
  for (int k = 0; k < STAGES; ++k) {  // the last fill of every slot
    wait_phase(saddr(&my[s]), phase ^ 1);
    if (++s == STAGES) {
      s = 0;
      phase ^= 1;
    }
  }
  long long t1 = clock64();
  out[w] = t1 - t0;
}

static unsigned long long read1(unsigned long long* d) {
  unsigned long long h;
  CHECK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
  return h;
}

int main() {
  header("tma");
  unsigned long long* d_out;
  CHECK(cudaMalloc(&d_out, 64));
  const size_t big = 2ull << 30, scratch_bytes = 512ull << 20;
  char *buf, *scratch;
  CHECK(cudaMalloc(&buf, big));
  CHECK(cudaMalloc(&scratch, scratch_bytes));
  CHECK(cudaMemset(buf, 0x3c, big));
  const uint64_t rows = big / 128;
  const int smem = 12 * 16384;
  CHECK(cudaFuncSetAttribute(tma_lat, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaFuncSetAttribute(tma_issue, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  // The streams' (stages, box bytes) pairs.
  using StreamKernel = void (*)(CUtensorMap, int, int, int, int, int, unsigned long long*);
  const struct {
    int stages, bytes;
    StreamKernel k;
  } kStreams[] = {{1, 16384, tma_stream<1, 16384>}, {2, 16384, tma_stream<2, 16384>},
                  {3, 16384, tma_stream<3, 16384>}, {4, 16384, tma_stream<4, 16384>},
                  {8, 16384, tma_stream<8, 16384>}, {8, 2048, tma_stream<8, 2048>},
                  {8, 8192, tma_stream<8, 8192>},   {4, 32768, tma_stream<4, 32768>},
                  {2, 8192, tma_stream<2, 8192>}};
  for (const auto& e : kStreams) CHECK(cudaFuncSetAttribute(e.k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int flushes = 0;
  auto flush = [&]() { CHECK(cudaMemset(scratch, ++flushes, scratch_bytes)); CHECK(cudaDeviceSynchronize()); };

  int region = 0;
  for (int box : {1, 16, 128}) {
    CUtensorMap m = make_map(buf, rows, box);
    tma_lat<<<1, 32, smem>>>(m, 32, 0, 0, box * 128, d_out);
    LAUNCH_CHECK();
    row("tma_lat_l2", box, (double)read1(d_out), "cycles");
    flush();
    // A fresh region of 1 Mi rows for every box size in the upper half of the buffer, which
    // nothing else reads; boxes 1 MiB apart.
    tma_lat<<<1, 32, smem>>>(m, 32, (int)(rows / 2) + (region++ << 20), 8192, box * 128, d_out);
    LAUNCH_CHECK();
    row("tma_lat_hbm", box, (double)read1(d_out), "cycles");
  }
  {
    CUtensorMap m = make_map(buf, rows, 1);
    for (int n : {32, 256}) {
      tma_issue<<<1, 32, smem>>>(m, n, d_out);  // warm-up: the rows into L2
      LAUNCH_CHECK();
      tma_issue<<<1, 32, smem>>>(m, n, d_out);
      LAUNCH_CHECK();
      row("tma_issue", n, (double)read1(d_out), "cycles");
    }
  }
  // Bytes per cycle of one SM: the slowest stream's cycles.
  // Cold streams (warm = false) read rows of their own, warm ones one L2-resident region.
  auto stream = [&](const CUtensorMap& m, int streams, int loads, int stages, int box_rows, int box_bytes, int row0,
                    int region_rows, bool warm) {
    for (int rep = warm ? 0 : 1; rep < 2; ++rep) {
      StreamKernel k = nullptr;
      for (const auto& e : kStreams)
        if (e.stages == stages && e.bytes == box_bytes) k = e.k;
      if (!k) {
        fprintf(stderr, "no tma_stream<%d, %d>\n", stages, box_bytes);
        exit(1);
      }
      k<<<1, 32 * streams, smem>>>(m, loads, box_rows, row0, region_rows - 1, warm ? 0 : region_rows, d_out);
      LAUNCH_CHECK();
    }
    unsigned long long c[8];
    CHECK(cudaMemcpy(c, d_out, streams * sizeof c[0], cudaMemcpyDeviceToHost));
    unsigned long long mx = 0;
    for (int w = 0; w < streams; ++w) mx = std::max(mx, c[w]);
    return (double)streams * loads * box_bytes / mx;
  };
  {
    CUtensorMap m = make_map(buf, rows, 128);
    const int loads = 1024, region = 32768;  // 16 KiB boxes, a 4 MiB L2-resident region
    for (int stages : {1, 2, 4, 8})
      row("tma_bw_l2", stages, stream(m, 1, loads, stages, 128, 16384, 0, region, true), "bytes_per_clk_per_sm");
    for (int stages : {1, 2, 4, 8}) {
      flush();
      const int row0 = (int)(rows / 4) + stages * loads * 128;  // never read before
      row("tma_bw_hbm", stages, stream(m, 1, loads, stages, 128, 16384, row0, loads * 128, false),
          "bytes_per_clk_per_sm");
    }
    // Several issuing warps, 8 slots in all; from DRAM also 12 (4 warps of 3 stages).
    for (int streams : {2, 4})
      row("tma_bw_streams", streams, stream(m, streams, loads / streams, 8 / streams, 128, 16384, 0, region, true),
          "bytes_per_clk_per_sm");
    for (int streams : {2, 4, 8}) {
      flush();
      const int row0 = (int)(rows / 4) + (8 + streams) * loads * 128;  // never read before
      row("tma_bw_hbm_streams", streams, stream(m, streams, loads, 8 / streams, 128, 16384, row0, loads * 128, false),
          "bytes_per_clk_per_sm");
    }
    flush();
    row("tma_bw_hbm_streams", 43,  // 4 warps x 3 stages
        stream(m, 4, loads, 3, 128, 16384, (int)(rows / 4) + 24 * loads * 128, loads * 128, false),
        "bytes_per_clk_per_sm");
  }
  for (int box_rows : {16, 64, 256}) {  // box size, 128-byte rows, 8 slots or 128 KiB
    CUtensorMap m = make_map(buf, rows, box_rows);
    const int bytes = box_rows * 128, stages = std::min(8, 131072 / bytes);
    row("tma_bw_rows", box_rows, stream(m, 1, (16 << 20) / bytes, stages, box_rows, bytes, 0, 32768, true),
        "bytes_per_clk_per_sm");
  }
  {  // 256-byte rows (128 bf16), 64-row boxes of 16 KiB; and 128-byte rows with L2 promotion.
    CUtensorMap wide = make_map(buf, rows / 2, 64, 128);
    row("tma_bw_wide", 256, stream(wide, 1, 1024, 8, 64, 16384, 0, 16384, true), "bytes_per_clk_per_sm");
    CUtensorMap promo = make_map(buf, rows, 128, 64, CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
    row("tma_bw_promo256", 128, stream(promo, 1, 1024, 8, 128, 16384, 0, 32768, true), "bytes_per_clk_per_sm");
  }
  // Box shape against the fill path: 4 warps x 2 stages of 16 KiB boxes (128 rows of 128 B) from
  // L2 (4 MiB of lines), the rows `pitch` bytes apart, with each swizzle and L2 promotion.
  // param p<pitch>_sw<swizzle bytes>_pr<promotion bytes>.
  for (int pitch : {128, 256, 1024, 4096, 16384})
    for (int sw : {0, 128})
      for (int pr : {0, 128, 256}) {
        const auto promo = pr == 0     ? CU_TENSOR_MAP_L2_PROMOTION_NONE
                           : pr == 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                                       : CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
        CUtensorMap m = make_map(buf, big / pitch, 128, pitch / 2, promo, 64,
                                 sw ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE);
        char p[48];
        snprintf(p, sizeof p, "p%d_sw%d_pr%d", pitch, sw, pr);
        row("tma_bw_shape", p, stream(m, 4, 256, 2, 128, 16384, 0, 32768, true), "bytes_per_clk_per_sm");
      }
  // Narrower rows and their swizzles: boxes of 256 rows of 64 B (16 KiB) or 32 B (8 KiB),
  // contiguous, the same 4 warps x 2 stages; param w<row bytes>_sw<swizzle bytes>.
  for (int width : {32, 64})
    for (int sw : {0, width}) {
      const auto swz = sw == 0 ? CU_TENSOR_MAP_SWIZZLE_NONE : sw == 32 ? CU_TENSOR_MAP_SWIZZLE_32B : CU_TENSOR_MAP_SWIZZLE_64B;
      CUtensorMap m = make_map(buf, big / width, 256, width / 2, CU_TENSOR_MAP_L2_PROMOTION_NONE, 0, swz);
      char p[48];
      snprintf(p, sizeof p, "w%d_sw%d", width, sw);
      row("tma_bw_shape", p, stream(m, 4, 256, 2, 256, 256 * width, 0, 65536, true), "bytes_per_clk_per_sm");
    }
  unsigned timeouts = 0;
  CHECK(cudaMemcpyFromSymbol(&timeouts, g_timeouts, sizeof timeouts));
  printf("# mbarrier_wait_timeouts=%u\n", timeouts);
  footer();
  return 0;
}
