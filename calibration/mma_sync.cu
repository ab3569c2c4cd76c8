// The pre-Hopper tensor path that Triton's small-M dots and FlashAttention-2 compile to, on one
// SM, cycles from clock64() inside the kernel:
//
//   mma_dep          : cycles per mma.sync.m16n8k16 (f32 += bf16 x bf16, SASS HMMA.16816.F32.BF16)
//                      in one warp's dependent chain (each accumulates into the last one's D)
//   mma_rate         : HMMA per cycle per SM with W warps of 8 independent chains each
//                      (param w<W>: 1, 4 = one per partition, 8, 16)
//   ldsm_rate        : ldmatrix.x4 per cycle per SM with W warps of 4 independent chains each
//   mma_ldsm_chain   : cycles per step of one warp's ldmatrix.x4 chain when each load also
//                      feeds 2 HMMA accumulating into one D (a k-step of Triton's S = q K^T):
//                      the two chains run side by side, so a step is the longer of them
//
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o mma_sync mma_sync.cu
#include "common.cuh"

__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void ldsm4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// kChains independent chains of HMMA per warp, each `iters` long.
template <int kChains>
__global__ void mma_kernel(int iters, uint32_t bits, unsigned long long* cyc, float* sink) {
  uint32_t a[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = bits + i;  // run-time bf16 pairs near 1/128
  float d[kChains][4];
#pragma unroll
  for (int c = 0; c < kChains; ++c)
#pragma unroll
    for (int i = 0; i < 4; ++i) d[c][i] = 0.0f;
  __syncthreads();
  long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) mma(d[c], a, bits, bits + c);
  }
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) cyc[blockIdx.x] = t1 - t0;
  float s = 0;
#pragma unroll
  for (int c = 0; c < kChains; ++c) s += d[c][0] + d[c][1] + d[c][2] + d[c][3];
  if (s == 1.2345f) sink[threadIdx.x] = s;
}

// kChains chains of ldmatrix.x4 per warp; with kMma, each load also feeds 2 HMMA into one
// accumulator (the next load waits only for the load before it).
template <int kChains, bool kMma>
__global__ void ldsm_kernel(int iters, uint32_t bits, unsigned long long* cyc, float* sink) {
  __shared__ __align__(128) uint32_t tile[kChains][512];  // 2 KiB a chain, all zero
  for (int i = threadIdx.x; i < kChains * 512; i += blockDim.x) (&tile[0][0])[i] = 0;
  __syncthreads();
  const int lane = threadIdx.x & 31;
  uint32_t off[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c)
    off[c] = (uint32_t)__cvta_generic_to_shared(&tile[c][0]) + (uint32_t)(lane * 16);
  uint32_t r[kChains][4];
  float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  __syncthreads();
  long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) {
      ldsm4(r[c], off[c]);
      off[c] += r[c][0];  // 0: the next address waits for this load
      if (kMma) {
        const uint32_t a[4] = {r[c][0] + bits, r[c][1] + bits, r[c][2] + bits, r[c][3] + bits};
        mma(d, a, bits, bits);
        mma(d, a, bits, bits + 1);
      }
    }
  }
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) cyc[blockIdx.x] = t1 - t0;
  float s = d[0] + d[1] + d[2] + d[3];
#pragma unroll
  for (int c = 0; c < kChains; ++c) s += (float)off[c];
  if (s == 1.2345f) sink[threadIdx.x] = s;
}

// Median over 5 launches of one CTA of `warps` warps: cycles of the timed loop.
template <typename K>
static double cycles(K kernel, int warps, int iters, unsigned long long* d_cyc, float* d_sink) {
  double v[5];
  for (int rep = 0; rep < 5; ++rep) {
    kernel<<<1, warps * 32>>>(iters, 0x3c003c00u, d_cyc, d_sink);
    LAUNCH_CHECK();
    unsigned long long c;
    CHECK(cudaMemcpy(&c, d_cyc, sizeof c, cudaMemcpyDeviceToHost));
    v[rep] = (double)c;
  }
  for (int i = 0; i < 5; ++i)
    for (int j = i + 1; j < 5; ++j)
      if (v[j] < v[i]) { double t = v[i]; v[i] = v[j]; v[j] = t; }
  return v[2];
}

int main() {
  header("mma_sync.cu");
  unsigned long long* d_cyc;
  float* d_sink;
  CHECK(cudaMalloc(&d_cyc, sizeof(unsigned long long)));
  CHECK(cudaMalloc(&d_sink, 1024 * sizeof(float)));
  CHECK(cudaMemset(d_sink, 0, 1024 * sizeof(float)));
  const int iters = 4096;
  row("mma_dep", 1, cycles(mma_kernel<1>, 1, iters, d_cyc, d_sink) / iters, "cycles");
  for (int w : {1, 4, 8, 16}) {
    char p[16];
    snprintf(p, sizeof p, "w%d", w);
    double c = cycles(mma_kernel<8>, w, iters, d_cyc, d_sink);
    row("mma_rate", p, 8.0 * w * iters / c, "hmma_per_cycle");
  }
  for (int w : {1, 4, 8, 16}) {
    char p[16];
    snprintf(p, sizeof p, "w%d", w);
    double c = cycles(ldsm_kernel<4, false>, w, iters, d_cyc, d_sink);
    row("ldsm_rate", p, 4.0 * w * iters / c, "ldsm_per_cycle");
  }
  row("mma_ldsm_chain", 1, cycles(ldsm_kernel<1, true>, 1, iters, d_cyc, d_sink) / iters, "cycles");
  footer();
  CHECK(cudaFree(d_cyc));
  CHECK(cudaFree(d_sink));
  return 0;
}
