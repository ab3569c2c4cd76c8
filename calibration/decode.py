"""Split-KV decode attention on the chip (flash-decoding): one query token per sequence,
grouped-query attention (32 query heads sharing 8 KV heads, head dim 128, bf16), batch 1 to 8,
KV length 1k to 64k. Kernel 1 (Triton) gives each (sequence, KV head, split) a CTA that reads its
chunk of K and V once for the 4 query heads of the group and writes a partial O and its
log-sum-exp; kernel 2 combines the splits. Same structure as scenarios/split_kv_decode.ron.
Rows (param b<batch>_l<kv length>_s<splits>):
  decode_us         median µs per decode step (both kernels), back to back in a CUDA graph
  decode_eager_us   the same, launched eagerly
  decode_split_us   kernel 1 alone (graph), decode_combine_us kernel 2 alone (graph)
  decode_gbps       K and V bytes (2 b 8 L 128 2) over decode_us, GB/s
  decode_check      relative error against fp32 attention (first point of each shape)
  sdpa_us, sdpa_gbps  torch's scaled_dot_product_attention on the same shapes, per backend
  decode_clock      median SM MHz (NVML) while the best split of b1_l32768 runs back to back
KV sets rotate so that every step reads its K and V from DRAM, not from the 60 MiB L2."""
import math
import statistics

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from torch.nn.attention import SDPBackend, sdpa_kernel

from sm_clock import sustained

HQ, HKV, D, BN = 32, 8, 128, 64
G = HQ // HKV


@triton.jit
def split_kernel(Q, K, V, Opart, Lpart, L, chunk, scale,
                 HKV: tl.constexpr, G: tl.constexpr, GP: tl.constexpr, D: tl.constexpr,
                 BN: tl.constexpr, SPLITS: tl.constexpr):
    bh = tl.program_id(0)  # sequence * HKV + KV head
    sp = tl.program_id(1)
    b = bh // HKV
    kvh = bh % HKV
    rows = tl.arange(0, GP)
    d = tl.arange(0, D)
    qmask = rows < G
    h = kvh * G + rows
    q = tl.load(Q + (b * HKV * G + h[:, None]) * D + d[None, :], mask=qmask[:, None], other=0.0)
    base = bh.to(tl.int64) * L * D
    start = sp * chunk
    end = tl.minimum(start + chunk, L)
    m = tl.full([GP], float("-inf"), tl.float32)
    l = tl.zeros([GP], tl.float32)
    acc = tl.zeros([GP, D], tl.float32)
    n = tl.arange(0, BN)
    for s in range(start, end, BN):
        cols = s + n
        kmask = cols < end
        k = tl.load(K + base + cols[:, None] * D + d[None, :], mask=kmask[:, None], other=0.0)
        qk = tl.dot(q, tl.trans(k)) * scale
        qk = tl.where(kmask[None, :], qk, float("-inf"))
        m_new = tl.maximum(m, tl.max(qk, 1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(qk - m_new[:, None])
        l = l * alpha + tl.sum(p, 1)
        v = tl.load(V + base + cols[:, None] * D + d[None, :], mask=kmask[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.bfloat16), v)
        m = m_new
    o = (b * HKV * G + h) * SPLITS + sp
    tl.store(Opart + o[:, None] * D + d[None, :], acc / l[:, None], mask=qmask[:, None])
    tl.store(Lpart + o, m + tl.log(l), mask=qmask)


@triton.jit
def combine_kernel(Opart, Lpart, O, SPLITS: tl.constexpr, SP2: tl.constexpr, D: tl.constexpr):
    bh = tl.program_id(0)  # sequence * HQ + query head
    s = tl.arange(0, SP2)
    d = tl.arange(0, D)
    smask = s < SPLITS
    lse = tl.load(Lpart + bh * SPLITS + s, mask=smask, other=float("-inf"))
    mx = tl.max(lse, 0)
    w = tl.exp(lse - mx)
    w = w / tl.sum(w, 0)
    o = tl.load(Opart + (bh * SPLITS + s[:, None]) * D + d[None, :], mask=smask[:, None], other=0.0)
    tl.store(O + bh * D + d, tl.sum(o * w[:, None], 0).to(tl.bfloat16))


def kv_sets(b, length):
    """Enough K/V sets that one pass over them is more than 4x the L2."""
    per = 2 * b * HKV * length * D * 2
    n = max(1, math.ceil(256 * 2**20 / per))
    return [(torch.randn(b, HKV, length, D, device="cuda", dtype=torch.bfloat16),
             torch.randn(b, HKV, length, D, device="cuda", dtype=torch.bfloat16)) for _ in range(n)]


class Decode:
    def __init__(self, b, length, splits):
        self.b, self.length, self.splits = b, length, splits
        self.chunk = triton.cdiv(triton.cdiv(length, splits), BN) * BN
        self.q = torch.randn(b, HQ, D, device="cuda", dtype=torch.bfloat16)
        self.opart = torch.empty(b * HQ * splits, D, device="cuda", dtype=torch.float32)
        self.lpart = torch.empty(b * HQ * splits, device="cuda", dtype=torch.float32)
        self.out = torch.empty(b, HQ, D, device="cuda", dtype=torch.bfloat16)

    def split(self, k, v):
        grid = (self.b * HKV, triton.cdiv(self.length, self.chunk))
        split_kernel[grid](self.q, k, v, self.opart, self.lpart, self.length, self.chunk,
                           1.0 / math.sqrt(D), HKV=HKV, G=G, GP=16, D=D, BN=BN, SPLITS=self.splits,
                           num_warps=4, num_stages=3)

    def combine(self):
        combine_kernel[(self.b * HQ,)](self.opart, self.lpart, self.out, SPLITS=self.splits,
                                       SP2=max(2, triton.next_power_of_2(self.splits)), D=D,
                                       num_warps=4)

    def step(self, k, v):
        self.split(k, v)
        self.combine()


def reference(q, k, v):
    kk = k.float().repeat_interleave(G, dim=1)
    vv = v.float().repeat_interleave(G, dim=1)
    s = torch.einsum("bhd,bhld->bhl", q.float(), kk) / math.sqrt(D)
    return torch.einsum("bhl,bhld->bhd", torch.softmax(s, -1), vv)


def per_call_us(fn, sets, graph, reps=40):
    """Median µs per call over 7 timed batches of `reps` calls rotating over `sets`."""
    for i in range(len(sets)):
        fn(*sets[i])
    torch.cuda.synchronize()
    run = lambda: [fn(*sets[i % len(sets)]) for i in range(reps)]
    if graph:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            run()
        run = g.replay
        run()
    times = []
    for _ in range(7):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        run()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) * 1e3 / reps)
    return statistics.median(times)


def row(test, param, value, unit):
    print(f"{test},{param},{value:.4f},{unit}", flush=True)


def main():
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"# program=decode.py gpu={torch.cuda.get_device_name(0)} torch={torch.__version__} "
          f"triton={triton.__version__} sms={sms}")
    print("test,param,value,unit")
    best = None
    for b, length in ((1, 1024), (1, 4096), (1, 8192), (1, 16384), (1, 32768), (1, 65536),
                      (4, 8192), (8, 4096), (8, 32768)):
        sets = kv_sets(b, length)
        kv_bytes = 2 * b * HKV * length * D * 2
        checked = False
        for splits in (1, 2, 4, 8, 16, 32, 64, 128):
            if splits * BN > length:
                continue
            dec = Decode(b, length, splits)
            param = f"b{b}_l{length}_s{splits}"
            try:
                if not checked:
                    k, v = sets[0]
                    dec.step(k, v)
                    ref = reference(dec.q, k, v)
                    err = ((dec.out.float() - ref).norm() / ref.norm()).item()
                    row("decode_check", param, err, "relative_error")
                    checked = True
                us = per_call_us(dec.step, sets, True)
                row("decode_us", param, us, "us")
                row("decode_eager_us", param, per_call_us(dec.step, sets, False), "us")
                row("decode_split_us", param, per_call_us(dec.split, sets, True), "us")
                row("decode_combine_us", param, per_call_us(lambda k, v: dec.combine(), sets, True), "us")
                row("decode_gbps", param, kv_bytes / us / 1e3, "gb_per_s")
                if b == 1 and length == 32768 and (best is None or us < best[0]):
                    best = (us, dec, sets)
            except Exception as e:  # one failing point must not lose the others
                print(f"# {param}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION),
                              ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            q = torch.randn(b, HQ, 1, D, device="cuda", dtype=torch.bfloat16)

            def sdpa(k, v):
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
            try:
                us = per_call_us(sdpa, sets, True)
                row("sdpa_us", f"{name}_b{b}_l{length}", us, "us")
                row("sdpa_gbps", f"{name}_b{b}_l{length}", kv_bytes / us / 1e3, "gb_per_s")
            except Exception as e:
                print(f"# sdpa {name} b{b} l{length}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        del sets
        torch.cuda.empty_cache()
    if best is not None:
        us, dec, sets = best
        i = [0]

        def step():
            dec.step(*sets[i[0] % len(sets)])
            i[0] += 1
        _, mhz, watts = sustained(step, 1.0)
        row("decode_clock", f"b1_l32768_s{dec.splits}", mhz, "mhz")
        row("decode_power", f"b1_l32768_s{dec.splits}", watts, "w")


if __name__ == "__main__":
    main()
