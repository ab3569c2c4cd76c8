#!/usr/bin/env bash
# Nsight Compute on FlashAttention-3 itself (fa3_real.cu's builds, head dim 128, seqlen 8192):
# one forward of each build in $BUILD named by $VARIANTS (default: with and without
# intra-warpgroup overlap, ping-pong on), the sections $SECTIONS (default the full set; fewer
# replay passes with e.g. "WarpStateStats SourceCounters SchedulerStats SpeedOfLight"), then the
# details page, every raw metric with its instances and the SASS with its per-instruction
# warp-state samples, as CSV in $OUT. Clocks are left as they are (--clock-control none), so
# the kernel's cycles (sm__cycles_elapsed) are the ones it ran at.
#
#   BUILD=<dir of fa3_real.sh's binaries> OUT=<dir> bash calibration/fa3_ncu.sh
set -uo pipefail
build=${BUILD:-/tmp/fa3-real}
out=${OUT:-out}
if [ -n "${SECTIONS:-}" ]; then
  what=(); for s in $SECTIONS; do what+=(--section "$s"); done
else
  what=(--set full)
fi
for v in ${VARIANTS:-pp1_io1_c1_hd128 pp1_io0_c1_hd128}; do
  timeout 240 ncu --clock-control none "${what[@]}" --import-source no -k 'regex:device_kernel' \
      --launch-skip 2 -c 1 -f -o "/tmp/ncu_fa3_$v" "$build/fa3_real_$v" 8192 0.3 \
      > "$out/ncu_fa3_$v.log" 2>&1
  ncu -i "/tmp/ncu_fa3_$v.ncu-rep" --page details --csv > "$out/ncu_fa3_${v}_details.csv" 2>&1
  ncu -i "/tmp/ncu_fa3_$v.ncu-rep" --page raw --csv --print-metric-instances values \
      > "$out/ncu_fa3_${v}_raw.csv" 2>&1
  ncu -i "/tmp/ncu_fa3_$v.ncu-rep" --page source --csv --print-source sass \
      > "$out/ncu_fa3_${v}_sass.csv" 2>&1
done
