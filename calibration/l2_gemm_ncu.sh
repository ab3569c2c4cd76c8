#!/usr/bin/env bash
# What the L2 slices carry in a GEMM: Nsight Compute's L2 counters split by source (SMs'
# requests, the fabric between the two L2 partitions, fills) on cutlass_gemm.sh's cooperative
# and ping-pong kernels at 4096^3, beside mem.cu and mem_bw.cu's L2 bandwidth rows of the same
# GPU (the H100 preset's slice rate came from one thread per SM streaming TMA boxes, 3,990 B a
# cycle, where CUTLASS's ping-pong kernel moved 4,778 B a cycle of lts__t_bytes).
#
#   BUILD=<dir with cutlass_gemm_* from cutlass_gemm.sh, and mem, mem_bw built from this folder>
#   OUT=<dir for mem.csv, mem_bw.csv and gemm_lts_ncu.csv>
set -euo pipefail
cd "$(dirname "$0")"
build=${BUILD:-/tmp/cutlass-gemm}
out=$(mkdir -p "${OUT:-out}" && cd "${OUT:-out}" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm --format=csv > "$out/smi.txt"
"$build/mem" > "$out/mem.csv"
"$build/mem_bw" > "$out/mem_bw.csv"
# Two metric sets, one launch each (an unknown metric fails only its own set).
sets=(
  lts__t_sectors_srcunit_tex.sum,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,lts__t_bytes.sum,dram__bytes_read.sum,gpc__cycles_elapsed.max
  lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum,lts__d_sectors_fill_sysmem.sum,lts__d_sectors_fill_device.sum,lts__t_sectors.sum
)
for v in pp0_128x256_c1 pp1_128x128_c1; do
  for m in "${sets[@]}"; do
    ncu --clock-control none --kernel-name regex:device_kernel --launch-count 1 --csv \
      --metrics "$m" "$build/cutlass_gemm_$v" 4096 0 2>&1 | sed "s/^/$v,4096,/" >> "$out/gemm_lts_ncu.csv" || true
  done
done
