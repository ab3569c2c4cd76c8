#!/usr/bin/env bash
# Builds and runs every microbenchmark on a Hopper GPU; writes CSV files to $OUT (or ./out).
set -euo pipefail
cd "$(dirname "$0")"
out=${OUT:-out}
mkdir -p "$out"
nvcc --version | tail -1 > "$out/toolchain.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv >> "$out/toolchain.txt"
nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o "$out/mem_bw" mem_bw.cu
"$out/mem_bw" | tee "$out/mem_bw.csv"
