#!/usr/bin/env bash
# Nsight Compute's instruction counts per pipe for the load loops the twins follow: mem_bw.cu's
# read_kernel (its first launch) and memsys.cu's probe_read launches, with the SM cycles each
# pipe was active, as CSV in $OUT (pipes_ncu_<program>.csv). Which pipe CS2R, BRA and IMAD go to
# is read from the counts: read_kernel's trip has 58 ALU instructions (ISETP, LEA, LOP3, IADD3),
# 28 IMAD, 16 CS2R and one BRA per 8 LDG (data/sm90a-sass-loops.txt).
set -uo pipefail
cd "$(dirname "$0")"
out=${OUT:-out}
build=${BUILD:-/tmp/calibration-build}
mkdir -p "$build"
metrics='regex:^smsp__inst_executed_pipe_[a-z0-9_]+\.sum$,smsp__inst_executed.sum,smsp__sass_inst_executed_op_global_ld.sum,regex:^sm__pipe_[a-z0-9_]+_cycles_active\.max$,sm__cycles_active.max'
for b in mem_bw memsys; do
  [ -x "$build/$b" ] || nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o "$build/$b" "$b.cu"
done
timeout 200 ncu --clock-control none -k regex:read_kernel -c 1 --metrics "$metrics" --csv \
  "$build/mem_bw" > "$out/pipes_ncu_mem_bw.csv" 2> "$out/pipes_ncu_mem_bw.log"
timeout 300 ncu --clock-control none -k regex:probe_read -c 24 --metrics "$metrics" --csv \
  "$build/memsys" > "$out/pipes_ncu_memsys.csv" 2> "$out/pipes_ncu_memsys.log"
exit 0
