#!/usr/bin/env bash
# Nsight Compute's L2 and DRAM counters for cluster.cu's multicast kernels (`cluster mcast`: one
# launch each, in the order the program prints its `mcast` rows), as CSV in $OUT/cluster_ncu.csv.
# Clocks are left as they are (--clock-control none).
set -euo pipefail
cd "$(dirname "$0")"
out=${OUT:-out}
build=${BUILD:-/tmp/calibration-build}
mkdir -p "$out" "$build"
[ -x "$build/cluster" ] || nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o "$build/cluster" cluster.cu
metrics=dram__bytes_read.sum,lts__t_bytes.sum,lts__t_sectors_op_read.sum,lts__t_requests_op_read.sum,sm__cycles_elapsed.max,gpc__cycles_elapsed.max
ncu --clock-control none -k mcast_kernel --metrics "$metrics" --csv "$build/cluster" mcast > "$out/cluster_ncu.csv"
