#!/usr/bin/env bash
# Builds and runs the calibration microbenchmarks on a Hopper GPU (sm_90a). Writes one CSV per
# program (`<name>.csv`), run.log's timings and toolchain.txt to $OUT (default ./out); builds
# into $BUILD (default /tmp/calibration-build). BENCH="core wgmma" runs a subset of
# mem_bw core wgmma mem tma smem_port memsys mbar_cost fa3 dram_map wgmma_arb tma_box launch l2_pages mma_sync fundamentals l1_rate lsu_queue loaded_lat sreg cluster l1_cache branch wgmma_dtype l2_share sched. The stored copies in data/ add a header naming the run.
set -euo pipefail
cd "$(dirname "$0")"
out=$(mkdir -p "${OUT:-out}" && cd "${OUT:-out}" && pwd)
build=${BUILD:-/tmp/calibration-build}
mkdir -p "$build"
benches=${BENCH:-mem_bw core wgmma mem tma smem_port memsys mbar_cost fa3 dram_map wgmma_arb tma_box launch l2_pages mma_sync fundamentals l1_rate lsu_queue loaded_lat sreg cluster l1_cache branch wgmma_dtype l2_share sched}
arch=-gencode=arch=compute_90a,code=sm_90a
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvcc --version | tail -2
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.max.mem,power.limit --format=csv || echo "nvidia-smi failed"
} > "$out/toolchain.txt"
python3 gen_wgmma.py 8 16 24 32 48 64 96 128 192 256 e4m3:64 e4m3:128 e4m3:256 tf32:64 tf32:128 tf32:256 > "$build/wgmma_ops.h"
# Builds in parallel; any failed build stops the run.
pids=()
for b in $benches; do
  nvcc -O3 "$arch" -I"$build" -o "$build/$b" "$b.cu" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
# A failing program does not stop the others; the exit status says whether any failed.
status=0
for b in $benches; do
  t0=$(date +%s.%N)
  timeout 300 "$build/$b" > "$out/$b.csv" || { echo "$b: FAILED ($?)" | tee -a "$out/run.log"; status=1; }
  t1=$(date +%s.%N)
  awk -v b="$b" -v a="$t0" -v c="$t1" 'BEGIN { printf "%s: %.1f s\n", b, c - a }' | tee -a "$out/run.log"
done
exit $status
