#!/usr/bin/env bash
# Nsight Compute's L1 hit rate, L1 and L2 traffic and DRAM bytes for l1_cache.cu's two GEMMs
# (`l1_cache gemm`: naive then tiled at n = 1024, each launched twice; the second launch of
# each is the one l1_cache.cu times), as CSV in $OUT/l1_ncu.csv. Clocks are left as they are
# (--clock-control none).
set -euo pipefail
cd "$(dirname "$0")"
out=${OUT:-out}
build=${BUILD:-/tmp/calibration-build}
mkdir -p "$out" "$build"
[ -x "$build/l1_cache" ] || nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o "$build/l1_cache" l1_cache.cu
metrics=l1tex__t_sector_hit_rate.pct,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,lts__t_bytes.sum,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum,sm__cycles_elapsed.max,gpc__cycles_elapsed.max
ncu --clock-control none -k regex:'naive_kernel|tiled_kernel' --metrics "$metrics" --csv "$build/l1_cache" gemm > "$out/l1_ncu.csv"
