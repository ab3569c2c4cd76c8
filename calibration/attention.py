"""Attention forward through PyTorch's scaled_dot_product_attention on the chip: the cuDNN
backend (a FlashAttention-3-class warp-specialized Hopper kernel) and the flash backend
(FlashAttention-2), bf16, non-causal and causal, head dims 64 / 128 / 256, seqlen 8k and 16k,
with FA3's problem sizes (batch x seqlen = 16k tokens, heads x hd = 2048). Rows:
  attn_tflops      TFLOP/s from the median of CUDA-event timings (4 b h s^2 d FLOP, half causal)
  attn_clock       median SM MHz (NVML) while the kernel runs back to back (sm_clock.py)
  attn_power       median W meanwhile
  attn_flop_per_sm_cycle   TFLOP/s over (SMs x that clock): FLOP per SM-cycle (peak 4096)
param <backend>_hd<d>_s<seqlen>[_causal]. `--once BACKEND HD S` runs one call (for ncu)."""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from sm_clock import sustained

BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}


def inputs(hd, s):
    b, h = 16384 // s, 2048 // hd
    return [torch.randn(b, h, s, hd, device="cuda", dtype=torch.bfloat16) for _ in range(3)]


def call(backend, q, k, v, causal):
    with sdpa_kernel(BACKENDS[backend]):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def row(test, param, value, unit):
    print(f"{test},{param},{value:.4f},{unit}", flush=True)


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--once":
        q, k, v = inputs(int(sys.argv[3]), int(sys.argv[4]))
        call(sys.argv[2], q, k, v, False)
        torch.cuda.synchronize()
        return
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"# program=attention.py gpu={torch.cuda.get_device_name(0)} torch={torch.__version__} "
          f"cudnn={torch.backends.cudnn.version()} sms={sms}")
    print("test,param,value,unit")
    for backend in ("cudnn", "flash"):
        for hd in (64, 128, 256):
            for s in (8192, 16384):
                for causal in (False, True):
                    q, k, v = inputs(hd, s)
                    b, h = q.shape[0], q.shape[1]
                    flop = 4 * b * h * s * s * hd / (2 if causal else 1)
                    ref = None
                    try:
                        out = call(backend, q, k, v, causal)
                        if hd == 128 and s == 8192:  # against the math backend in fp32
                            ref = F.scaled_dot_product_attention(q[:1].float(), k[:1].float(), v[:1].float(), is_causal=causal)
                            err = ((out[:1].float() - ref).norm() / ref.norm()).item()
                    except RuntimeError as e:
                        print(f"# {backend} hd{hd} s{s} causal={causal}: {str(e).splitlines()[0]}")
                        continue
                    param = f"{backend}_hd{hd}_s{s}" + ("_causal" if causal else "")
                    times = []
                    for _ in range(20):
                        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        e0.record()
                        call(backend, q, k, v, causal)
                        e1.record()
                        torch.cuda.synchronize()
                        times.append(e0.elapsed_time(e1) / 1e3)
                    times.sort()
                    tflops = flop / times[len(times) // 2] / 1e12
                    _, mhz, watts = sustained(lambda: call(backend, q, k, v, causal), 1.0)
                    row("attn_tflops", param, tflops, "tflop_per_s")
                    row("attn_clock", param, mhz, "mhz")
                    row("attn_power", param, watts, "w")
                    row("attn_flop_per_sm_cycle", param, tflops * 1e12 / (sms * mhz * 1e6), "flop_per_sm_cycle")
                    if ref is not None:
                        row("attn_check", param, err, "relative_error")


if __name__ == "__main__":
    main()
