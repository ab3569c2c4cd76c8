#!/usr/bin/env bash
# Nsight Compute on one attention forward of each backend (attention.py --once, head dim 128,
# seqlen 8k): the full section set, then the details page, every raw metric with its instances
# (per-opcode instruction counts, warp states) and the SASS with per-instruction counts, as CSV
# in $OUT. Clocks are left as they are (--clock-control none).
set -uo pipefail
cd "$(dirname "$0")"
out=${OUT:-out}
for b in cudnn flash; do
  timeout 150 ncu --clock-control none --set full --import-source no -k 'regex:(?i)(sdpa|fmha|flash|attn)' -c 1 \
      -f -o "/tmp/ncu_$b" python3 attention.py --once "$b" 128 8192 > "$out/ncu_$b.log" 2>&1
  ncu -i "/tmp/ncu_$b.ncu-rep" --page details --csv > "$out/ncu_${b}_details.csv" 2>&1
  ncu -i "/tmp/ncu_$b.ncu-rep" --page raw --csv --print-metric-instances values > "$out/ncu_${b}_raw.csv" 2>&1
  ncu -i "/tmp/ncu_$b.ncu-rep" --page source --csv --print-source sass > "$out/ncu_${b}_sass.csv" 2>&1
done
