// The instructions around a compiled load loop's loads, one SM (one CTA), cycles from clock64():
//   ldc_chain  : cycles per hop of one thread's constant-memory pointer chase (LDC R, c[3][R]):
//                the constant cache's hit latency
//                (mem_bw.cu's and memsys.cu's loops reload their kernel parameters with LDC.64
//                c[0x0][...] every trip; a fixed address outside them is hoisted by ptxas)
//   s2r_use    : cycles from an S2R to the first instruction that reads it (CS2R, S2R, IADD3,
//                CS2R; the same without the S2R subtracted), here S2R SR_VIRTID (%warpid; ptxas turns %ctaid, %tid, %smid and the
//                clocks into hoisted or uniform S2UR reads, and follows this S2R with a
//                dependent SHF and SGXT, stall counts 4 and 4, not subtracted)
//   alu_dep    : cycles per instruction of one warp's dependent chain (param iadd3, lop3, imad,
//                and half-and-half mixes imad_lop3, imad_ffma, lop3_ffma)
//   alu_rate   : warp-instructions per cycle per SM, 32 warps with 8 independent chains each:
//                whether the mixed instructions share one pipe
// The kernels' SASS is checked with `python3 calibration/sass.py sreg`.
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o sreg sreg.cu
#include "common.cuh"
#include <algorithm>
#include <vector>

constexpr int UNROLL = 32;
constexpr int REPEATS = 64;

// Zero-filled, so every chase hop reads offset 0 again: one constant-cache line, always a hit
// after the first.
__constant__ unsigned c_tab[64];

__global__ void ldc_chain(int iters, unsigned long long* cyc, unsigned* sink) {
  unsigned p = 0;
  long long t0 = clock64();
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      p = *(const unsigned*)((const char*)c_tab + p);  // LDC R, c[0x3][R]
  }
  long long t1 = clock64();
  *cyc = t1 - t0;
  if (p == 12345) *sink = p;
}

// KIND 0: nothing before the use (baseline); 1: S2R SR_VIRTID (%warpid,
// which PTX says may change while a thread runs, so ptxas neither hoists it nor reads it into a
// uniform register). Every step is volatile asm, so the compiler keeps their order: the second clock
// read issues after the IADD3, which waits for the loaded register.
template <int KIND>
__global__ void use_after(const int* reps, unsigned long long* cyc, unsigned* sink) {
  unsigned acc = threadIdx.x, x = threadIdx.x;
  // A trip count read per thread keeps the loop out of the uniform datapath.
  const int n = reps[threadIdx.x];
#pragma unroll 1
  for (int r = 0; r < n; ++r) {
    long long t0, t1;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t0)::"memory");
    if (KIND == 1) asm volatile("mov.u32 %0, %%warpid;" : "=r"(x)::"memory");
    asm volatile("add.u32 %0, %0, %1;" : "+r"(acc) : "r"(x) : "memory");
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t1)::"memory");
    cyc[r] = t1 - t0;
  }
  *sink = acc;
}

// OP 0: IADD3, 1: LOP3, 2: IMAD; mixes, half each: 3 IMAD and LOP3, 4 IMAD and FFMA, 5 LOP3 and
// FFMA. Each thread runs CHAINS independent chains of pairs (x, y),
// each instruction reading the other's last result, so ptxas cannot fold a chain of constant
// operands into one instruction.
template <int OP, int CHAINS>
__global__ void alu_kernel(int iters, unsigned a, unsigned b, unsigned long long* cyc, unsigned* sink) {
  unsigned x[CHAINS], y[CHAINS];
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) x[c] = threadIdx.x + c, y[c] = threadIdx.x * 3 + c;
  __syncthreads();
  long long t0 = clock64();
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int u = 0; u < UNROLL / 2; ++u) {
#pragma unroll
      for (int c = 0; c < CHAINS; ++c) {
        if (OP == 0) {
          asm volatile("add.u32 %0, %0, %1;\n\tadd.u32 %0, %0, %2;" : "+r"(x[c]) : "r"(y[c]), "r"(a));
          asm volatile("add.u32 %0, %0, %1;\n\tadd.u32 %0, %0, %2;" : "+r"(y[c]) : "r"(x[c]), "r"(b));
        }
        if (OP == 1) {
          asm volatile("lop3.b32 %0, %0, %1, %2, 0x96;" : "+r"(x[c]) : "r"(y[c]), "r"(a));
          asm volatile("lop3.b32 %0, %0, %1, %2, 0x96;" : "+r"(y[c]) : "r"(x[c]), "r"(b));
        }
        if (OP == 2) {
          asm volatile("mad.lo.u32 %0, %0, %1, %2;" : "+r"(x[c]) : "r"(y[c]), "r"(a));
          asm volatile("mad.lo.u32 %0, %0, %1, %2;" : "+r"(y[c]) : "r"(x[c]), "r"(b));
        }
        if (OP == 3) {  // IMAD beside LOP3: one pipe or two
          asm volatile("mad.lo.u32 %0, %0, %1, %2;" : "+r"(x[c]) : "r"(y[c]), "r"(a));
          asm volatile("lop3.b32 %0, %0, %1, %2, 0x96;" : "+r"(y[c]) : "r"(x[c]), "r"(b));
        }
        if (OP == 4) {  // IMAD beside FFMA
          asm volatile("mad.lo.u32 %0, %0, %1, %2;" : "+r"(x[c]) : "r"(y[c]), "r"(a));
          asm volatile("fma.rn.f32 %0, %0, %1, %1;" : "+r"(y[c]) : "r"(x[c]));
        }
        if (OP == 5) {  // LOP3 beside FFMA
          asm volatile("lop3.b32 %0, %0, %1, %2, 0x96;" : "+r"(x[c]) : "r"(y[c]), "r"(a));
          asm volatile("fma.rn.f32 %0, %0, %1, %1;" : "+r"(y[c]) : "r"(x[c]));
        }
      }
    }
  }
  __syncthreads();
  long long t1 = clock64();
  if (threadIdx.x == 0) *cyc = t1 - t0;
  unsigned s = 0;
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) s += x[c] + y[c];
  if (s == 12345) sink[threadIdx.x] = s;
}

static unsigned long long* d_cyc;
static unsigned* d_sink;
static int* d_reps;

static double one(unsigned long long* host, int n) {
  CHECK(cudaMemcpy(host, d_cyc, n * sizeof *host, cudaMemcpyDeviceToHost));
  return (double)host[0];
}

template <int KIND>
static double use_cycles() {
  unsigned long long h[REPEATS];
  use_after<KIND><<<1, 32>>>(d_reps, d_cyc, d_sink);  // warm-up: constant cache and icache
  LAUNCH_CHECK();
  use_after<KIND><<<1, 32>>>(d_reps, d_cyc, d_sink);
  LAUNCH_CHECK();
  one(h, REPEATS);
  std::vector<unsigned long long> v(h + 1, h + REPEATS);
  std::sort(v.begin(), v.end());
  return (double)v[v.size() / 2];
}

template <int OP, int CHAINS>
static double alu_cycles(int threads, int iters) {
  unsigned long long h;
  alu_kernel<OP, CHAINS><<<1, threads>>>(iters, 3, 1, d_cyc, d_sink);
  LAUNCH_CHECK();
  alu_kernel<OP, CHAINS><<<1, threads>>>(iters, 3, 1, d_cyc, d_sink);
  LAUNCH_CHECK();
  return one(&h, 1);
}

template <int OP>
static void alu(const char* name) {
  const int iters = 256;
  double dep = alu_cycles<OP, 1>(32, iters);
  row("alu_dep", name, dep / (iters * UNROLL), "cycles");
  double rate = alu_cycles<OP, 8>(1024, iters);
  row("alu_rate", name, 32.0 * iters * UNROLL * 8 / rate, "warp-inst/cycle/SM");
}

int main() {
  header("sreg");
  CHECK(cudaMalloc(&d_cyc, REPEATS * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&d_sink, 1024 * sizeof(unsigned)));
  std::vector<int> reps(32, REPEATS);
  CHECK(cudaMalloc(&d_reps, 32 * sizeof(int)));
  CHECK(cudaMemcpy(d_reps, reps.data(), 32 * sizeof(int), cudaMemcpyHostToDevice));
  unsigned zeros[64] = {};
  CHECK(cudaMemcpyToSymbol(c_tab, zeros, sizeof zeros));

  const int iters = 256;
  unsigned long long h;
  ldc_chain<<<1, 1>>>(iters, d_cyc, d_sink);
  LAUNCH_CHECK();
  ldc_chain<<<1, 1>>>(iters, d_cyc, d_sink);
  LAUNCH_CHECK();
  row("ldc_chain", "hop", one(&h, 1) / (iters * UNROLL), "cycles");

  double base = use_cycles<0>();
  row("use_baseline", "iadd3", base, "cycles");
  row("s2r_use", "warpid", use_cycles<1>() - base, "cycles");

  alu<0>("iadd3");
  alu<1>("lop3");
  alu<2>("imad");
  alu<3>("imad_lop3");
  alu<4>("imad_ffma");
  alu<5>("lop3_ffma");
  footer();
  return 0;
}
