// TMA, mbarrier and wgmma helpers shared by the calibration programs: mbarrier init, arrive and
// arrive.expect_tx, a try_wait loop that gives up after about a second (counted in g_timeouts,
// which each program prints as `# mbarrier_wait_timeouts`), one cp.async.bulk.tensor.2d tile
// load, a 2-D bf16 tensor map through the runtime's driver entry point (no -lcuda needed), the
// 128-byte-swizzle wgmma descriptor and the host's bf16 rounding.
#pragma once
#include "common.cuh"
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cstring>

__device__ unsigned g_timeouts;

// K-major operand with the 128-byte swizzle: rows of 128 B (64 bf16), 8-row atoms 1024 B apart
// (stride byte offset), leading byte offset unused (1), layout type 1 (SWIZZLE_128B) in bits
// 62-63; a k-step of 16 elements advances the start address by 32 bytes.
__device__ __forceinline__ uint64_t desc_sw128(uint32_t addr) {
  return ((uint64_t)((addr & 0x3FFFF) >> 4)) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) |
         ((uint64_t)1 << 62);
}

__device__ __forceinline__ void arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// Host: round-to-nearest-even float to bf16 bits.
static inline uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

__device__ __forceinline__ uint32_t saddr(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void bar_init(uint32_t bar, uint32_t arrivals = 1) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(arrivals));
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void arrive_expect(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
// Spins on try_wait; gives up (and counts a timeout) after about a second so that a mistake
// cannot hang the device. `cluster`: acquire at cluster scope (remote arrivals, multicast).
__device__ __forceinline__ void wait_phase(uint32_t bar, uint32_t parity, bool cluster = false) {
  long long t0 = clock64();
  for (;;) {
    uint32_t ok;
    if (cluster)
      asm volatile(
          "{\n .reg .pred p;\n mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
          " selp.u32 %0, 1, 0, p;\n}\n"
          : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
    else
      asm volatile(
          "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
          " selp.u32 %0, 1, 0, p;\n}\n"
          : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
    if (ok) return;
    if (clock64() - t0 > 2000000000LL) { atomicAdd(&g_timeouts, 1u); return; }
  }
}
// The box at element column `col` (0 by default) of row `row`.
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap* map, int row, uint32_t bar, int col = 0) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
      ::"r"(dst), "l"((uint64_t)map), "r"(col), "r"(row), "r"(bar) : "memory");
}

// A TMA store of the box at (row, col) from shared memory at `src`, in the thread's bulk group.
__device__ __forceinline__ void tma_store(const CUtensorMap* map, uint32_t src, int row, int col = 0) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
               ::"l"((uint64_t)map), "r"(col), "r"(row), "r"(src) : "memory");
}

// Commit the thread's bulk group and wait until its stores are complete (wait_group 0).
__device__ __forceinline__ void tma_store_wait_all() {
  asm volatile("cp.async.bulk.commit_group;\n cp.async.bulk.wait_group 0;" ::: "memory");
}

// A launch of `grid` CTAs of `block` threads in clusters of `csize` (`attr` holds the cluster
// attribute the config points to).
static cudaLaunchConfig_t config(unsigned grid, unsigned block, size_t smem, unsigned csize,
                                 cudaLaunchAttribute* attr) {
  cudaLaunchConfig_t c = {};
  c.gridDim = dim3(grid);
  c.blockDim = dim3(block);
  c.dynamicSmemBytes = smem;
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = csize;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  c.attrs = attr;
  c.numAttrs = 1;
  return c;
}

// A 2-D bf16 tensor of `rows` rows of `cols` elements over base, boxes of `box_rows` rows of
// `box_cols` elements (0: full rows), laid out in shared memory with swizzle `swz`.
static CUtensorMap make_map(void* base, uint64_t rows, uint32_t box_rows, uint32_t cols = 64,
                            CUtensorMapL2promotion promo = CU_TENSOR_MAP_L2_PROMOTION_NONE,
                            uint32_t box_cols = 0,
                            CUtensorMapSwizzle swz = CU_TENSOR_MAP_SWIZZLE_NONE) {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
  if (!encode) {
    cudaDriverEntryPointQueryResult q;
    CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void**)&encode, 12000, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || !encode) {
      fprintf(stderr, "cuTensorMapEncodeTiled not found\n");
      exit(1);
    }
  }
  CUtensorMap m;
  cuuint64_t dims[2] = {cols, rows};
  cuuint64_t strides[1] = {cols * 2};
  cuuint32_t box[2] = {box_cols ? box_cols : cols, box_rows};
  cuuint32_t estr[2] = {1, 1};
  CUresult r = encode(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, base, dims, strides, box, estr,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, swz,
                        promo, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "cuTensorMapEncodeTiled failed: %d\n", (int)r);
    exit(1);
  }
  return m;
}
