#!/usr/bin/env bash
# Nsight Compute on Triton's Hopper matmul (triton_gemm.py --once, bf16 4096^3), one launch of
# each config given as BM,BN,BK,W,S (default: the 4- against 8-warp pairs the model gets wrong):
# warp states, scheduler, pipes, memory and the SASS with per-instruction counts, as CSV in $OUT,
# plus the cubin's SASS (cuobjdump). Clocks are left as they are (--clock-control none).
set -uo pipefail
cd "$(dirname "$0")"
out=${OUT:-out}
configs=${CONFIGS:-"128,256,64,8,3 128,256,64,4,3 128,128,64,4,3 128,128,64,8,3 64,256,64,4,4"}
for c in $configs; do
  n=${c//,/_}
  timeout 120 ncu --clock-control none --launch-skip 2 -c 1 -k regex:matmul_tma \
      --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
      --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section Occupancy \
      --section LaunchStats --section InstructionStats --section SourceCounters \
      -f -o "/tmp/ncu_tgemm_$n" python3 triton_gemm.py --once "$c" > "$out/ncu_tgemm_$n.log" 2>&1
  ncu -i "/tmp/ncu_tgemm_$n.ncu-rep" --page details --csv > "$out/ncu_tgemm_${n}_details.csv" 2>&1
  ncu -i "/tmp/ncu_tgemm_$n.ncu-rep" --page raw --csv > "$out/ncu_tgemm_${n}_raw.csv" 2>&1
  ncu -i "/tmp/ncu_tgemm_$n.ncu-rep" --page source --csv --print-source sass > "$out/ncu_tgemm_${n}_sass.csv" 2>&1
  cuobjdump -sass "/tmp/tgemm_$n.cubin" > "$out/tgemm_${n}.sass" 2>&1
done
