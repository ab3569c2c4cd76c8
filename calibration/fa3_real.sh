#!/usr/bin/env bash
# Builds fa3_real.cu against FlashAttention-3's own source, once per combination of its two
# scheduling techniques, and (with RUN=1, on a Hopper GPU) runs each at seqlen 8192 and 16384.
#
#   FA3=<flash-attention checkout, commit 0251105a2fb19d2957484b7f023cd8c115286ced>
#   CUTLASS=<cutlass checkout at FA3's submodule commit 7127592069c2fe01b041e174ba4345ef9b279671>
#   BUILD=<dir> (default /tmp/fa3-real)  OUT=<dir for the CSV> (default ./out)
#   VARIANTS="pp io cluster hd ..." (default "1 1 1 128  0 1 1 128  1 0 1 128  0 0 1 128
#   1 1 2 128  1 1 1 64  1 1 1 256")
#   NVCC_FLAGS=<more flags> (a toolkit from NVIDIA's wheels, as sass.py fetches, needs
#   -L<its lib>; its CCCL headers come from the nvidia-cuda-cccl wheel)
#
# The only change to FA3's source: the two constexpr bools that choose the techniques read the
# macros FA3_PP and FA3_IO (and keep FA3's own condition), in a copy under $BUILD.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-/tmp/fa3-real}
out=$(mkdir -p "${OUT:-out}" && cd "${OUT:-out}" && pwd)
variants=${VARIANTS:-"1 1 1 128  0 1 1 128  1 0 1 128  0 0 1 128  1 1 2 128  1 1 1 64  1 1 1 256"}
mkdir -p "$build"
rm -rf "$build/hopper"
cp -r "$FA3/hopper" "$build/hopper"
main="$build/hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp"
launch="$build/hopper/flash_fwd_launch_template.h"
grep -q 'static constexpr bool UseSchedulerBarrier = (IntraWGOverlap' "$main"
sed -i 's/static constexpr bool UseSchedulerBarrier = (IntraWGOverlap/static constexpr bool UseSchedulerBarrier = FA3_PP \&\& (IntraWGOverlap/' "$main"
grep -q 'static constexpr bool IntraWGOverlap = std::get<3>' "$launch"
sed -i 's/static constexpr bool IntraWGOverlap = std::get<3>/static constexpr bool IntraWGOverlap = FA3_IO \&\& std::get<3>/' "$launch"

# FA3's own flags (hopper/setup.py): the features this kernel does not use compiled out.
flags=(-O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr
  --use_fast_math -DNDEBUG -DCUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED -DCUTLASS_ENABLE_GDC_FOR_SM90
  -DFLASHATTENTION_DISABLE_BACKWARD -DFLASHATTENTION_DISABLE_DROPOUT
  -I"$build/hopper" -I"$CUTLASS/include" -I"$CUTLASS/tools/util/include" ${NVCC_FLAGS:-})
set -- $variants
pids=()
names=()
while [ $# -ge 4 ]; do
  name="fa3_real_pp$1_io$2_c$3_hd$4"
  nvcc "${flags[@]}" -DFA3_PP="$1" -DFA3_IO="$2" -DFA3_CLUSTER="$3" -DFA3_HD="$4" \
    -o "$build/$name" "$here/fa3_real.cu" -ldl &
  pids+=($!)
  names+=("$name")
  shift 4
done
for p in "${pids[@]}"; do wait "$p"; done
if [ "${RUN:-0}" = 1 ]; then
  for s in 8192 16384; do
    for name in "${names[@]}"; do
      "$build/$name" "$s" 1.5 | tee -a "$out/fa3_real.csv"
    done
  done
fi
