// How DRAM addresses spread over HBM channels, seen from one SM: the latency of one TMA box of
// R rows of 128 B read from DRAM (a region no earlier access touched, so every line misses L2),
// for contiguous boxes (row pitch 128 B: R * 128 contiguous bytes) and strided ones (row pitch
// 8 KiB: a GEMM operand's box of a 4096-column bf16 tensor). If a channel holds an aligned
// `interleave` bytes, a contiguous box of up to `interleave` bytes lands on one channel and
// streams at one channel's rate, while a strided box spreads over R channels.
//
//   dram_box_c, dram_box_s : cycles from arrive.expect_tx + cp.async.bulk.tensor.2d to the
//                            try_wait loop's wake, one thread, median of 32 boxes each at a
//                            fresh 1 MiB-aligned offset; param R (rows)
//   l2_box_c               : the same contiguous box read again right after (L2 hits)
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o dram_map dram_map.cu
#include "tma_util.cuh"
#include <algorithm>
#include <vector>

constexpr int kBoxes = 32;

// Box b (of kBoxes) at row offset rows0[b]; out[b] = cycles of the cold load, out[kBoxes + b]
// of the same box again.
__global__ void box_lat(const __grid_constant__ CUtensorMap map, const int* rows0, int bytes,
                        unsigned long long* out) {
  extern __shared__ __align__(1024) uint8_t dst[];
  __shared__ __align__(8) uint64_t bar;
  if (threadIdx.x != 0) return;
  const uint32_t b = saddr(&bar);
  bar_init(b);
  uint32_t parity = 0;
  for (int i = 0; i < kBoxes; ++i)
    for (int again = 0; again < 2; ++again) {
      const long long t0 = clock64();
      arrive_expect(b, bytes);
      tma_load(saddr(dst), &map, rows0[i], b);
      wait_phase(b, parity);
      parity ^= 1;
      out[again * kBoxes + i] = clock64() - t0;
    }
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main() {
  header("dram_map");
  // 4 GiB: every box of the sweep gets its own untouched MiB.
  const size_t bytes = 4ull << 30;
  uint8_t* buf;
  CHECK(cudaMalloc(&buf, bytes));
  CHECK(cudaMemset(buf, 0x3c, bytes));
  uint8_t* flush;
  CHECK(cudaMalloc(&flush, 256u << 20));
  int* rows0;
  CHECK(cudaMalloc(&rows0, kBoxes * sizeof(int)));
  unsigned long long* d;
  CHECK(cudaMalloc(&d, 2 * kBoxes * sizeof(unsigned long long)));
  CHECK(cudaFuncSetAttribute(box_lat, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536));
  size_t next_mib = 0;
  for (int strided = 0; strided < 2; ++strided)
    for (int r : {1, 2, 4, 8, 16, 32, 64, 128, 256}) {
      // Contiguous: rows of 128 B (64 bf16) over the whole buffer; strided: rows of 8 KiB
      // (4096 bf16), a box of 64 columns of each.
      const uint64_t cols = strided ? 4096 : 64;
      const uint64_t pitch = cols * 2;
      const CUtensorMap m = make_map(buf, bytes / pitch, r, cols, CU_TENSOR_MAP_L2_PROMOTION_NONE, 64);
      std::vector<int> h(kBoxes);
      for (int i = 0; i < kBoxes; ++i) {
        h[i] = (int)((next_mib << 20) / pitch);
        next_mib += (r * pitch + (1u << 20) - 1) >> 20;  // the box's MiBs, never touched again
      }
      CHECK(cudaMemcpy(rows0, h.data(), kBoxes * sizeof(int), cudaMemcpyHostToDevice));
      CHECK(cudaMemset(flush, r, 256u << 20));  // evicts the memset's lines from L2
      box_lat<<<1, 32, 65536>>>(m, rows0, r * 128, d);
      LAUNCH_CHECK();
      std::vector<unsigned long long> c(2 * kBoxes);
      CHECK(cudaMemcpy(c.data(), d, c.size() * 8, cudaMemcpyDeviceToHost));
      std::vector<double> cold(c.begin(), c.begin() + kBoxes), warm(c.begin() + kBoxes, c.end());
      row(strided ? "dram_box_s" : "dram_box_c", r, median(cold), "cycles");
      if (!strided) row("l2_box_c", r, median(warm), "cycles");
    }
  printf("# mib_used=%zu\n", next_mib);
  unsigned timeouts = 0;
  CHECK(cudaMemcpyFromSymbol(&timeouts, g_timeouts, sizeof timeouts));
  printf("# mbarrier_wait_timeouts=%u\n", timeouts);
  footer();
  return 0;
}
