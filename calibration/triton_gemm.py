"""Triton's Hopper matmul on the chip over a grid of configs: C = A B^T in bf16, 4096^3, loads
through TMA tensor descriptors, tl.dot (wgmma), software-pipelined by num_stages; grouped tile
order (GROUP_M 8). The same structure as scenarios/gemm_pipelined.ron, whose parameters the
configs name (bm, bn, bk, num_warps, stages). Rows (param bm<BM>_bn<BN>_bk<BK>_w<W>_s<S>):
  tgemm_us        median µs per call (CUDA events over back-to-back calls)
  tgemm_clock     median SM MHz (NVML) while the config runs back to back (sm_clock.py)
  tgemm_flop_per_sm_cycle   2 M N K / (µs x SMs x MHz): FLOP per SM-cycle (peak 4096)
  tgemm_regs, tgemm_spills, tgemm_smem   ptxas registers per thread, spilled bytes, shared
                  memory bytes of the compiled kernel
  tgemm_error     the config did not compile or launch (value 1; the message in a comment)
cublas_* rows: torch.matmul on the same shape, for reference.
`--once BM,BN,BK,W,S` launches one config three times and prints nothing (for Nsight Compute:
triton_ncu.sh profiles the third launch)."""
import itertools
import sys

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from sm_clock import sustained

M = N = K = 4096
GROUP_M = 8


@triton.jit
def matmul_tma(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
               BK: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    in_group = GROUP_M * num_pid_n
    first_m = pid // in_group * GROUP_M
    group_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + pid % group_m
    pid_n = pid % in_group // group_m
    off_m = pid_m * BM
    off_n = pid_n * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kb in range(0, tl.cdiv(K, BK)):
        a = a_desc.load([off_m, kb * BK])
        b = b_desc.load([off_n, kb * BK])
        acc = tl.dot(a, b.T, acc)
    c_desc.store([off_m, off_n], acc.to(tl.bfloat16))


def row(test, param, value, unit):
    print(f"{test},{param},{value:.4f},{unit}", flush=True)


def timed(fn, reps=20):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    times.sort()
    return times[len(times) // 2]


def once(a, b, c, cfg):
    bm, bn, bk, w, s = map(int, cfg.split(","))
    a_d = TensorDescriptor.from_tensor(a, [bm, bk])
    b_d = TensorDescriptor.from_tensor(b, [bn, bk])
    c_d = TensorDescriptor.from_tensor(c, [bm, bn])
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    for _ in range(3):
        k = matmul_tma[grid](a_d, b_d, c_d, M, N, K, bm, bn, bk, GROUP_M, num_warps=w, num_stages=s)
    torch.cuda.synchronize()
    with open(f"/tmp/tgemm_{cfg.replace(',', '_')}.cubin", "wb") as f:
        f.write(k.asm["cubin"])


def main():
    if sys.argv[1:2] == ["--once"]:
        torch.manual_seed(0)
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        once(a, b, c, sys.argv[2])
        return
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"# program=triton_gemm.py gpu={torch.cuda.get_device_name(0)} torch={torch.__version__} "
          f"triton={triton.__version__} sms={sms} shape={M}x{N}x{K}")
    print("test,param,value,unit")
    torch.manual_seed(0)
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    flop = 2 * M * N * K
    ref = a @ b.T

    def report(prefix, param, fn):
        us = timed(fn)
        _, mhz, _ = sustained(fn, seconds=0.6)
        row(f"{prefix}_us", param, us, "us")
        row(f"{prefix}_clock", param, mhz, "mhz")
        row(f"{prefix}_flop_per_sm_cycle", param, flop / (us * 1e-6 * sms * mhz * 1e6), "flop_per_sm_cycle")

    report("cublas", "torch_matmul", lambda: torch.matmul(a, b.T, out=c))
    configs = sys.argv[1:] or [
        f"{bm},{bn},{bk},{w},{s}"
        for bm, bn, bk, w, s in itertools.product((64, 128), (128, 256), (64, 128), (4, 8), (2, 3, 4, 5))
    ]
    for cfg in configs:
        bm, bn, bk, w, s = map(int, cfg.split(","))
        param = f"bm{bm}_bn{bn}_bk{bk}_w{w}_s{s}"
        try:
            a_d = TensorDescriptor.from_tensor(a, [bm, bk])
            b_d = TensorDescriptor.from_tensor(b, [bn, bk])
            c_d = TensorDescriptor.from_tensor(c, [bm, bn])
            grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
            launch = lambda: matmul_tma[grid](a_d, b_d, c_d, M, N, K, bm, bn, bk, GROUP_M,
                                              num_warps=w, num_stages=s)
            k = launch()
            torch.cuda.synchronize()
            err = ((c.float() - ref.float()).norm() / ref.float().norm()).item()
            if err > 1e-2:
                raise RuntimeError(f"relative error {err:.3g}")
        except Exception as e:  # a config that does not fit: recorded, not fatal
            print(f"# {param}: {str(e).splitlines()[0] if str(e) else type(e).__name__}", flush=True)
            row("tgemm_error", param, 1, "flag")
            continue
        row("tgemm_regs", param, k.n_regs, "registers")
        row("tgemm_spills", param, k.n_spills, "bytes")
        row("tgemm_smem", param, k.metadata.shared, "bytes")
        report("tgemm", param, launch)


if __name__ == "__main__":
    main()
