#!/usr/bin/env bash
# Builds cutlass_gemm.cu once per variant (schedule, tile, cluster) and, with RUN=1 on a Hopper
# GPU, runs each at 4096^3 and 8192^3, then once more under Nsight Compute for its cycles and
# memory traffic.
#
#   CUTLASS=<cutlass checkout, 4.3.x>   BUILD=<dir> (default /tmp/cutlass-gemm)
#   OUT=<dir for cutlass_gemm.csv and cutlass_gemm_ncu.csv> (default ./out)
#   VARIANTS="pp bm bn cm ..." (default "0 128 256 1  0 128 256 2  1 128 128 1  1 128 128 2")
#   NVCC_FLAGS=<more flags> (a toolkit from NVIDIA's wheels, as sass.py fetches, needs -L<its
#   lib> and its CCCL headers with -I)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-/tmp/cutlass-gemm}
out=$(mkdir -p "${OUT:-out}" && cd "${OUT:-out}" && pwd)
variants=${VARIANTS:-"0 128 256 1  0 128 256 2  1 128 128 1  1 128 128 2"}
mkdir -p "$build"
flags=(-O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -DNDEBUG
  -I"$CUTLASS/include" -I"$CUTLASS/tools/util/include" ${NVCC_FLAGS:-})
set -- $variants
names=()
pids=()
while [ $# -ge 4 ]; do
  name="cutlass_gemm_pp$1_${2}x$3_c$4"
  if [ "${RUN:-0}" != 1 ] || [ ! -x "$build/$name" ]; then
    nvcc "${flags[@]}" -DGEMM_PP="$1" -DGEMM_BM="$2" -DGEMM_BN="$3" -DGEMM_CM="$4" \
      -o "$build/$name" "$here/cutlass_gemm.cu" -ldl &
    pids+=($!)
  fi
  names+=("$name")
  shift 4
done
for p in "${pids[@]}"; do wait "$p"; done
if [ "${RUN:-0}" = 1 ]; then
  for m in 4096 8192; do
    for name in "${names[@]}"; do "$build/$name" "$m" 1.5 | tee -a "$out/cutlass_gemm.csv"; done
  done
  # Nsight Compute, unlocked clocks as in the timed runs: one launch each (the first is the
  # correctness run).
  metrics=gpc__cycles_elapsed.max,sm__cycles_elapsed.avg,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,lts__t_sector_hit_rate.pct,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,lts__t_requests_srcunit_tex.sum
  for m in 4096 8192; do
    for name in "${names[@]}"; do
      ncu --clock-control none --kernel-name regex:device_kernel --launch-count 1 --csv \
        --metrics "$metrics" "$build/$name" "$m" 0 | sed "s/^/$name,$m,/" | tee -a "$out/cutlass_gemm_ncu.csv"
    done
  done
fi
