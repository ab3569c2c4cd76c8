"""bf16 GEMMs through PyTorch (cuBLAS) for Nsight Compute to count DRAM bytes and L2 hit rate.
Run under: ncu --clock-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum,
lts__t_sector_hit_rate.pct,gpc__cycles_elapsed.max,sm__cycles_elapsed.avg.per_second python3 gemm_dram.py"""
import torch

for n in (4096, 8192):
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(2):
        c = a @ b.t()
    torch.cuda.synchronize()
    print(n, float(c.float().abs().mean()))
