// Register spills: what a thread pays when its live values exceed its register budget, on one
// SM, cycles from clock64() inside the kernel. Each thread keeps `kLive` fp32 values live
// across a loop whose body updates every one of them with an FFMA that depends on its
// previous value (so none can be rematerialized); the program is built with several
// -maxrregcount caps (the run script passes REGS), and ptxas's spill report for each build is
// printed into the CSV header (`# ptxas ...`).
//
//   spill_iter_w<W>   : cycles per loop iteration with W warps on the SM (1, 4: one per
//                       partition, 32 where the registers fit); param <regs cap>_<live values>
//   local_chase       : cycles per hop of one thread's pointer chase through a local-memory
//                       array indexed at run time (LDL hits in L1); param 1
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -maxrregcount=$REGS -DREGS=$REGS
//        -o spill_$REGS spill.cu
#include "common.cuh"

#ifndef REGS
#define REGS 255
#endif

template <int kLive>
__global__ void live_kernel(int iters, unsigned long long* cyc, float* sink) {
  float v[kLive];
#pragma unroll
  for (int i = 0; i < kLive; ++i) v[i] = sink[i % 64] + 0.001f * (threadIdx.x + i);
  const float a = sink[100] + 1.0001f, b = sink[101] + 0.5f;
  __syncthreads();
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < kLive; ++i) v[i] = fmaf(v[i], a, b);
  }
  __syncthreads();
  const long long t1 = clock64();
  if (threadIdx.x == 0) cyc[0] = t1 - t0;
  float s = 0;
#pragma unroll
  for (int i = 0; i < kLive; ++i) s += v[i];
  if (s == 1.2345f) sink[threadIdx.x] = s;
}

// One thread chases indices through a 256-entry local array (run-time indexing puts it in
// local memory).
__global__ void chase_kernel(int hops, unsigned long long* cyc, int* sink) {
  int idx[256];
  for (int i = 0; i < 256; ++i) idx[i] = (i * 97 + sink[0]) & 255;
  int p = sink[1] & 255;
  for (int i = 0; i < 64; ++i) p = idx[p];  // warm L1
  const long long t0 = clock64();
  for (int i = 0; i < hops; ++i) p = idx[p];
  const long long t1 = clock64();
  cyc[0] = t1 - t0;
  if (p == 12345) sink[2] = p;
}

static unsigned long long* g_cyc;
static float* g_sink;

template <int kLive>
static double per_iter(int warps) {
  auto run = [&](int iters) {
    live_kernel<kLive><<<1, 32 * warps>>>(iters, g_cyc, g_sink);
    LAUNCH_CHECK();
    unsigned long long c;
    CHECK(cudaMemcpy(&c, g_cyc, sizeof c, cudaMemcpyDeviceToHost));
    return (double)c;
  };
  run(10);
  return (run(2000) - run(1000)) / 1000.0;
}

template <int kLive>
static void rows() {
  char p[32];
  snprintf(p, sizeof p, "%d_%d", REGS, kLive);
  cudaFuncAttributes attr;
  CHECK(cudaFuncGetAttributes(&attr, live_kernel<kLive>));
  for (int w : {1, 4, 32}) {
    if (attr.numRegs * 32 * w > 65536) continue;  // does not fit on the SM
    char t[32];
    snprintf(t, sizeof t, "spill_iter_w%d", w);
    row(t, p, per_iter<kLive>(w), "cycles");
  }
}

int main() {
  header("spill");
  CHECK(cudaMalloc(&g_cyc, 8 * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&g_sink, 1024 * sizeof(float)));
  CHECK(cudaMemset(g_sink, 0, 1024 * sizeof(float)));
  rows<32>();
  rows<64>();
  rows<96>();
  rows<128>();
  rows<192>();
  if (REGS == 255) {
    int* isink;
    CHECK(cudaMalloc(&isink, 16));
    CHECK(cudaMemset(isink, 0, 16));
    auto chase = [&](int hops) {
      chase_kernel<<<1, 1>>>(hops, g_cyc, isink);
      LAUNCH_CHECK();
      unsigned long long c;
      CHECK(cudaMemcpy(&c, g_cyc, sizeof c, cudaMemcpyDeviceToHost));
      return (double)c;
    };
    chase(100);
    row("local_chase", 1, (chase(20000) - chase(10000)) / 10000.0, "cycles");
  }
  footer();
  return 0;
}
