"""The SM clock under sustained load (the power cap): NVML's median SM clock and power over the
second half of a ~2 s loop, for workloads of different intensity. Rows:
  load_clock <load>   median SM MHz;  load_power <load>  median W;  load_rate <load>  the
  workload's own rate (TFLOP/s for matmuls, GB/s read + written for the copy)
Loads: bf16 matmuls of n^3 (n = 2048, 4096, 8192; random data) and 8192^3 on zeros, fp32 FFMA
through a matmul in fp32 without tensor cores is not available in PyTorch, so the FFMA load is a
CuPy kernel of independent FFMA chains on every SM; a 4 GiB device-to-device copy; and idle (one
thread spinning)."""
import cupy
import torch

from sm_clock import sustained

FFMA = cupy.RawKernel(r"""
extern "C" __global__ void ffma(float* out, int iters) {
  float a = threadIdx.x, b = 1.0001f, c0 = 0.f, c1 = 1.f, c2 = 2.f, c3 = 3.f;
  for (int i = 0; i < iters; ++i) {
    c0 = fmaf(a, b, c0); c1 = fmaf(a, b, c1); c2 = fmaf(a, b, c2); c3 = fmaf(a, b, c3);
    c0 = fmaf(c1, b, c0); c1 = fmaf(c2, b, c1); c2 = fmaf(c3, b, c2); c3 = fmaf(c0, b, c3);
  }
  if (c0 + c1 + c2 + c3 == 1.2345f) out[threadIdx.x] = c0;
}""", "ffma")


def row(test, param, value, unit):
    print(f"{test},{param},{value:.4f},{unit}", flush=True)


def main():
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"# program=clocks.py gpu={torch.cuda.get_device_name(0)} torch={torch.__version__} sms={sms}")
    print("test,param,value,unit")
    loads = []
    for n in (2048, 4096, 8192):
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        loads.append((f"matmul{n}", lambda a=a, b=b: a @ b, 2 * n ** 3 / 1e12, "tflop_per_s"))
    z = torch.zeros(8192, 8192, device="cuda", dtype=torch.bfloat16)
    loads.append(("matmul8192_zeros", lambda: z @ z, 2 * 8192 ** 3 / 1e12, "tflop_per_s"))
    out = cupy.zeros(1024, dtype=cupy.float32)
    iters = 20000
    loads.append(("ffma", lambda: FFMA((sms * 8,), (256,), (out, cupy.int32(iters))),
                  sms * 8 * 256 * iters * 8 * 2 / 1e12, "tflop_per_s"))
    src = torch.empty(1 << 31, device="cuda", dtype=torch.uint8)
    dst = torch.empty_like(src)
    loads.append(("copy4g", lambda: dst.copy_(src), 2 * (1 << 31) / 1e9, "gb_per_s"))
    loads.append(("spin1", lambda: FFMA((1,), (32,), (out, cupy.int32(200000))), 0, "none"))
    for name, fn, work, unit in loads:
        rate, mhz, watts = sustained(fn, 2.0)
        row("load_clock", name, mhz, "mhz")
        row("load_power", name, watts, "w")
        if work:
            row("load_rate", name, rate * work, unit)


if __name__ == "__main__":
    main()
