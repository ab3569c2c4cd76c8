#!/usr/bin/env bash
# The SASS of FlashAttention-3's own forward kernel (bf16, head dim 128, non-causal: 128 x 176
# tiles, 2 consumer warpgroups of 64 rows), summed up for the consumer warpgroup's mainloop (the
# loop with the HGMMAs of S = Q K^T and O += P V, the MUFU.EX2s and the ping-pong's BAR.SYNC /
# BAR.ARV): one trip's instructions by opcode and stall-count sum, its phases in program order
# (split at HGMMA groups, WARPGROUP.*, BAR.*, SYNCS.*), the softmax span (first to last MUFU.EX2),
# the uniform-datapath instructions per HGMMA, and the trip's listing with decoded control codes.
#
#   FA3=<flash-attention checkout> CUTLASS=<cutlass checkout> bash calibration/fa3_sass.sh
#   VARIANTS="pp io cluster hd ..." (default "1 1 1 128  1 0 1 128", as in fa3_real.sh)
#   BUILD=<dir> (default /tmp/fa3-sass)  OUT=<file> (default calibration/data/sm90a-fa3_sass.txt)
#   FA3_COMMIT / CUTLASS_COMMIT name the commits (else git rev-parse HEAD in the checkouts).
#
# Builds through fa3_real.sh (its source patch and flags) with -cubin added: device code only, no
# GPU needed; the compiler is sass.py's (CUDA 13.0.88 from NVIDIA's wheels) plus the CCCL headers
# of the nvidia-cuda-cccl 13.0 wheel. Control codes are decoded by sass.py's control(). "One trip"
# takes the mbarrier try-waits as succeeding at once (their out-of-line retry not run).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-/tmp/fa3-sass}
out=${OUT:-$here/data/sm90a-fa3_sass.txt}
variants=${VARIANTS:-"1 1 1 128  1 0 1 128"}
cuda=$(cd "$here" && python3 -c 'import sass; print(sass.toolkit())')
if [ ! -d "$cuda/include/cccl" ]; then
  python3 -m pip download --no-deps -q -d "$cuda/../.." 'nvidia-cuda-cccl==13.0.85'
  python3 -m zipfile -e "$cuda"/../../nvidia_cuda_cccl-13.0.85-*.whl "$cuda/../.."
fi
export PATH="$cuda/bin:$PATH"
mkdir -p "$build"
BUILD=$build OUT=$build/out VARIANTS=$variants \
  NVCC_FLAGS="-cubin -isystem $cuda/include/cccl ${NVCC_FLAGS:-}" bash "$here/fa3_real.sh"

fa3_commit=${FA3_COMMIT:-$(git -C "$FA3" rev-parse HEAD 2>/dev/null || echo unknown)}
cutlass_commit=${CUTLASS_COMMIT:-$(git -C "$CUTLASS" rev-parse HEAD 2>/dev/null || echo unknown)}
{
  echo "# FlashAttention-3 forward (bf16, non-causal), consumer mainloop SASS; $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "# nvcc: $(nvcc --version | grep -o 'V[0-9][0-9.]*' | head -1) (NVIDIA's pip wheels), -gencode=arch=compute_90a,code=sm_90a, FA3's flags (fa3_real.sh)"
  echo "# cuobjdump: $(cuobjdump --version | grep -o 'V[0-9][0-9.]*' | head -1)"
  echo "# flash-attention $fa3_commit, cutlass $cutlass_commit"
  echo "# command: FA3=<checkout> CUTLASS=<checkout> VARIANTS=\"$variants\" bash calibration/fa3_sass.sh"
  echo "# per trip = per consumer warp (all 4 warps of a consumer warpgroup run the same stream);"
  echo "# stall = the control code's stall count (cycles before the warp's next issue), waits ="
  echo "# instructions that wait on a scoreboard (variable-latency results: MUFU, SHFL, SYNCS, BAR)"
  echo "# SYNCS.PHASECHK.TRANS64.TRYWAIT: mbarrier wait for a K or V stage (consumer_wait); SYNCS.ARRIVE:"
  echo "# its release (consumer_release); BAR.SYNC / BAR.ARV: FA3's warp-scheduler barriers (ping-pong);"
  echo "# WARPGROUP.DEPBAR.LE gsb0, n: warpgroup_wait<n>; WARPGROUP.ARRIVE: warpgroup_arrive (wgmma fence)"
  set -- $variants
  while [ $# -ge 4 ]; do
    name="fa3_real_pp$1_io$2_c$3_hd$4"
    cuobjdump -sass "$build/$name" > "$build/$name.sass"
    echo "#"
    python3 "$here/fa3_sass.py" "$build/$name.sass" "$name (FA3_PP=$1 FA3_IO=$2 FA3_CLUSTER=$3 FA3_HD=$4)"
    shift 4
  done
} > "$out"
echo "wrote $out"
