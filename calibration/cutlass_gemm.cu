// CUTLASS's own Hopper GEMMs (NVIDIA/cutlass 4.3, CollectiveBuilder), the kernels that
// scenarios/gemm.ron (cooperative) and scenarios/gemm_pingpong.ron (ping-pong) rebuild, with and
// without a 2x1 cluster that multicasts B: the whole-kernel check of those scenarios and of what
// a cluster buys. One build per variant (cutlass_gemm.sh):
//
//   GEMM_PP   0: KernelTmaWarpSpecializedCooperative (2 consumer warpgroups share a tile),
//             1: KernelTmaWarpSpecializedPingpong (consumers on alternate tiles)
//   GEMM_BM, GEMM_BN   the CTA tile (bk = 64)
//   GEMM_CM   CTAs a cluster along M (1 or 2)
//
// bf16 A (m x k, K-major) and B (n x k, K-major), fp32 accumulation, bf16 D = A B^T (m x n,
// row-major), no source C (beta = 0), the TMA epilogue CUTLASS's builder picks, stages as many as
// fit beside it (StageCountAutoCarveout). CUTLASS's persistent tile scheduler, one CTA per SM,
// tiles in the order gemm.ron's group_m = 8 gives: raster along N with swizzle 8 walks 8 rows of
// (cluster) tiles column by column.
//
//   cutlass_gemm_ms      param <sched>_<bm>x<bn>_c<cm>_<m>: median milliseconds (CUDA events)
//   cutlass_gemm_mhz     the median NVML SM clock meanwhile
//   cutlass_gemm_cycles  ms x MHz: SM cycles at that clock
//   cutlass_gemm_stages  the builder's stage count
//   cutlass_gemm_err     max |D - D_ref| / max |D_ref| over 256 elements checked on the host
//
// Arguments: m (= n = k; 4096 unless given), seconds to time (1.5; 0 runs the kernel once, for
// Nsight Compute).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"

#include "timed.hpp"

#if !defined(GEMM_PP) || !defined(GEMM_BM) || !defined(GEMM_BN) || !defined(GEMM_CM)
#error "build with -DGEMM_PP=0|1 -DGEMM_BM=.. -DGEMM_BN=.. -DGEMM_CM=1|2 (cutlass_gemm.sh)"
#endif

using namespace cute;
using bf16 = cutlass::bfloat16_t;
using TileShape = Shape<Int<GEMM_BM>, Int<GEMM_BN>, _64>;
using ClusterShape = Shape<Int<GEMM_CM>, _1, _1>;
using MainloopSchedule =
    std::conditional_t<GEMM_PP, cutlass::gemm::KernelTmaWarpSpecializedPingpong,
                       cutlass::gemm::KernelTmaWarpSpecializedCooperative>;
using EpilogueSchedule =
    std::conditional_t<GEMM_PP, cutlass::epilogue::TmaWarpSpecialized,
                       cutlass::epilogue::TmaWarpSpecializedCooperative>;
constexpr int kAlign = 8;  // 16 bytes of bf16

using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float, void,
    cutlass::layout::RowMajor, kAlign, bf16, cutlass::layout::RowMajor, kAlign,
    EpilogueSchedule>::CollectiveOp;

using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, bf16, cutlass::layout::RowMajor, kAlign,
    bf16, cutlass::layout::ColumnMajor, kAlign, float, TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<
        static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
    MainloopSchedule>::CollectiveOp;

using GemmKernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>,
                                                        CollectiveMainloop, CollectiveEpilogue>;
using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;
using RasterOrder =
    cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90Params::RasterOrderOptions;

static __global__ void fill(bf16* x, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    x[i] = bf16(float(h & 0xffff) / 32768.f - 1.f);
  }
}

int main(int argc, char** argv) {
  int m = argc > 1 ? atoi(argv[1]) : 4096;
  double seconds = argc > 2 ? atof(argv[2]) : 1.5;
  int n = m, k = m;
  size_t ea = size_t(m) * k, eb = size_t(n) * k, ed = size_t(m) * n;
  bf16 *a, *b, *d;
  TIMED_CHECK(cudaMalloc(&a, ea * sizeof(bf16)));
  TIMED_CHECK(cudaMalloc(&b, eb * sizeof(bf16)));
  TIMED_CHECK(cudaMalloc(&d, ed * sizeof(bf16)));
  fill<<<1024, 256>>>(a, ea, 1);
  fill<<<1024, 256>>>(b, eb, 2);
  TIMED_CHECK(cudaMemset(d, 0xff, ed * sizeof(bf16)));

  using StrideA = typename Gemm::GemmKernel::StrideA;
  using StrideB = typename Gemm::GemmKernel::StrideB;
  using StrideD = typename Gemm::GemmKernel::StrideD;
  auto sa = cutlass::make_cute_packed_stride(StrideA{}, {m, k, 1});
  auto sb = cutlass::make_cute_packed_stride(StrideB{}, {n, k, 1});
  auto sd = cutlass::make_cute_packed_stride(StrideD{}, {m, n, 1});
  cutlass::KernelHardwareInfo hw = cutlass::KernelHardwareInfo::make_kernel_hardware_info<GemmKernel>(0);
  typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                {m, n, k, 1},
                                {a, sa, b, sb},
                                {{1.f, 0.f}, nullptr, sd, d, sd},
                                hw};
  args.scheduler.raster_order = RasterOrder::AlongN;
  args.scheduler.max_swizzle_size = 8;

  Gemm gemm;
  size_t ws_bytes = Gemm::get_workspace_size(args);
  void* ws = nullptr;
  if (ws_bytes) TIMED_CHECK(cudaMalloc(&ws, ws_bytes));
  if (gemm.can_implement(args) != cutlass::Status::kSuccess) {
    fprintf(stderr, "CUTLASS cannot implement this GEMM\n");
    return 1;
  }
  cudaStream_t stream;
  TIMED_CHECK(cudaStreamCreate(&stream));
  if (gemm.initialize(args, ws, stream) != cutlass::Status::kSuccess) {
    fprintf(stderr, "CUTLASS initialize failed\n");
    return 1;
  }
  auto launch = [&] {
    if (gemm.run(stream) != cutlass::Status::kSuccess) {
      fprintf(stderr, "CUTLASS run failed\n");
      exit(1);
    }
  };
  launch();
  TIMED_CHECK(cudaStreamSynchronize(stream));

  // 256 elements of D against a double reference from the same bf16 operands.
  std::vector<bf16> ha(ea), hb(eb), hd(ed);
  TIMED_CHECK(cudaMemcpy(ha.data(), a, ea * sizeof(bf16), cudaMemcpyDeviceToHost));
  TIMED_CHECK(cudaMemcpy(hb.data(), b, eb * sizeof(bf16), cudaMemcpyDeviceToHost));
  TIMED_CHECK(cudaMemcpy(hd.data(), d, ed * sizeof(bf16), cudaMemcpyDeviceToHost));
  std::mt19937 gen(m);
  double err = 0, ref_max = 0;
  for (int t = 0; t < 256; ++t) {
    int i = gen() % m, j = gen() % n;
    double want = 0;
    for (int l = 0; l < k; ++l) want += double(float(ha[size_t(i) * k + l])) * float(hb[size_t(j) * k + l]);
    double got = float(hd[size_t(i) * n + j]);
    if (!std::isfinite(got)) got = 1e30;
    err = std::max(err, std::fabs(got - want));
    ref_max = std::max(ref_max, std::fabs(want));
  }

  char param[64];
  snprintf(param, sizeof param, "%s_%dx%d_c%d_%d", GEMM_PP ? "pp" : "coop", GEMM_BM, GEMM_BN,
           GEMM_CM, m);
  printf("cutlass_gemm_stages,%s,%d,stages\n", param,
         int(CollectiveMainloop::DispatchPolicy::Stages));
  printf("cutlass_gemm_err,%s,%.2e,relative\n", param, err / ref_max);
  if (seconds > 0) {
    Timing t = time_kernel(launch, stream, seconds);
    printf("cutlass_gemm_ms,%s,%.4f,ms\n", param, t.ms);
    printf("cutlass_gemm_mhz,%s,%.0f,MHz\n", param, t.mhz);
    printf("cutlass_gemm_cycles,%s,%.0f,cycles\n", param, t.ms * 1e3 * t.mhz);
  }
  return err / ref_max < 2e-2 ? 0 : 2;
}
