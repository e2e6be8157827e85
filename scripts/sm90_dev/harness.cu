// Standalone correctness + speed harness for the sm90 kernels (nvcc, no gemmtune library).
// Build: nvcc -std=c++17 -O2 -gencode arch=compute_90a,code=sm_90a -I../../kernels -I../../src harness.cu -lcuda
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backends/sm90/sm90_plan.h"
#include "sm90/sm90_gemm_coop.cuh"
#include "sm90/sm90_gemm_pingpong.cuh"

using namespace gemmtune::sm90;

template <class Cfg>
__device__ __forceinline__ void run_cfg(const gt_sm90::TmaDesc& ta, const gt_sm90::TmaDesc& tb,
                                        const gt_sm90::TmaDesc& td, const gt_sm90::GemmParams& p) {
  if constexpr (Cfg::PINGPONG)
    gt_sm90::gemm_pingpong<Cfg>(ta, tb, td, p);
  else
    gt_sm90::gemm_coop<Cfg>(ta, tb, td, p);
}

struct Entry {
  const char* name;
  const void* fn;
  int bm, bn, stages, cm, cn;
  bool a_mn, b_mn;
  int in, out, ct;
  bool has_c, pp, perf;
  int smem;
};
std::vector<Entry> g_entries;

#define GT_K(NAME, BM, BN, S, CM, CN, AMN, BMN, F16, OUT, CT, HASC, RASTER, GROUP, PP, PERF)                         \
  using Cfg_##NAME = gt_sm90::GemmConfig<BM, BN, S, CM, CN, AMN, BMN, F16, OUT, CT, HASC, RASTER, GROUP, PP>;       \
  extern "C" __global__ void __launch_bounds__(384, 1)                                                             \
      NAME(const __grid_constant__ gt_sm90::TmaDesc ta, const __grid_constant__ gt_sm90::TmaDesc tb,               \
           const __grid_constant__ gt_sm90::TmaDesc td, const gt_sm90::GemmParams p) {                             \
    run_cfg<Cfg_##NAME>(ta, tb, td, p);                                                                            \
  }                                                                                                                \
  static int reg_##NAME = (g_entries.push_back({#NAME, (const void*)NAME, BM, BN, S, CM, CN, AMN, BMN, F16 ? 1 : 0, \
                                                OUT, CT, HASC, PP, PERF, Cfg_##NAME::kSmemBytes}),                 \
                           0);

GT_K(p_128x128_kk, 128, 128, 5, 1, 1, false, false, false, 0, 0, false, 0, 8, true, true)
GT_K(p_64x256_mm_c, 64, 256, 4, 1, 1, true, true, true, 2, 1, true, 0, 8, true, false)
GT_K(p_128x192_kk_2x1, 128, 192, 4, 2, 1, false, false, false, 0, 0, false, 0, 8, true, true)
GT_K(p_128x128_mk_1x2, 128, 128, 5, 1, 2, true, false, true, 0, 0, false, 1, 8, true, false)
GT_K(c_128x256_kk, 128, 256, 4, 1, 1, false, false, false, 0, 0, false, 0, 8, false, true)
GT_K(c_128x256_mm, 128, 256, 4, 1, 1, true, true, false, 0, 0, false, 0, 8, false, false)
GT_K(c_128x128_mk_c, 128, 128, 5, 1, 1, true, false, true, 2, 2, true, 0, 8, false, false)
GT_K(c_256x128_km_c, 256, 128, 4, 1, 1, false, true, false, 1, 0, true, 1, 4, false, false)
GT_K(c_128x208_kk, 128, 208, 4, 1, 1, false, false, false, 0, 0, false, 0, 8, false, false)
GT_K(c_128x96_kk_f16, 128, 96, 6, 1, 1, false, false, true, 1, 1, false, 1, 8, false, false)
GT_K(c_128x256_kk_2x1, 128, 256, 4, 2, 1, false, false, false, 0, 0, false, 0, 8, false, true)
GT_K(c_128x256_mm_1x2, 128, 256, 4, 1, 2, true, true, false, 0, 0, false, 1, 8, false, false)
GT_K(c_128x160_kk_2x1_c, 128, 160, 4, 2, 1, false, false, false, 2, 2, true, 0, 8, false, false)
GT_K(c_128x192_kk_f32, 128, 192, 4, 1, 1, false, false, false, 2, 0, false, 0, 8, false, false)

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      printf("CUDA error %s at %s:%d: %s\n", cudaGetErrorName(e_), __FILE__, __LINE__, #x);     \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

__device__ double ld_elem(const void* p, int t, long long i) {
  if (t == 0) return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  if (t == 1) return __half2float(static_cast<const __half*>(p)[i]);
  return static_cast<const float*>(p)[i];
}
struct RefArgs {
  const void *a, *b, *c;
  double* out;
  int m, n, k, batch, ta, tb, tc;
  long long a_r, a_c, a_b, b_r, b_c, b_b, c_r, c_c, c_b;
  float alpha, beta;
};
__global__ void ref_kernel(RefArgs r) {
  long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  long long total = (long long)r.m * r.n * r.batch;
  if (idx >= total) return;
  int b = idx / ((long long)r.m * r.n);
  int rem = idx % ((long long)r.m * r.n);
  int i = rem / r.n, j = rem % r.n;
  double s = 0;
  for (int k = 0; k < r.k; ++k)
    s += ld_elem(r.a, r.ta, b * r.a_b + i * r.a_r + k * r.a_c) * ld_elem(r.b, r.tb, b * r.b_b + k * r.b_r + j * r.b_c);
  s *= r.alpha;
  if (r.c) s += r.beta * ld_elem(r.c, r.tc, b * r.c_b + i * r.c_r + j * r.c_c);
  r.out[idx] = s;
}

static float h2f(const void* p, int t, size_t i) {
  if (t == 0) return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  if (t == 1) return __half2float(static_cast<const __half*>(p)[i]);
  return static_cast<const float*>(p)[i];
}
static void f2h(void* p, int t, size_t i, float v) {
  if (t == 0) static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(v);
  else if (t == 1) static_cast<__half*>(p)[i] = __float2half(v);
  else static_cast<float*>(p)[i] = v;
}

static int g_sms = 0;
static std::mt19937 g_rng(1234);

struct Mat {
  void* d = nullptr;
  size_t bytes = 0;
};
static Mat make_mat(int t, bool row, int64_t rows, int64_t cols, int64_t ld, int64_t bstride, int64_t batch,
                    bool random) {
  Mat m;
  size_t n = bstride * (batch - 1) + (row ? rows * ld : cols * ld);
  m.bytes = n * elem_size(t);
  std::vector<char> h(m.bytes, (char)0xFF);
  if (random) {
    std::normal_distribution<float> nd(0.f, 1.f);
    for (size_t i = 0; i < n; ++i) f2h(h.data(), t, i, nd(g_rng));
  }
  CK(cudaMalloc(&m.d, m.bytes));
  CK(cudaMemcpy(m.d, h.data(), m.bytes, cudaMemcpyHostToDevice));
  return m;
}

static int grid_for(const Entry& e, const KernelView& v) {
  int tm = (v.m + e.bm - 1) / e.bm, tn = (v.n + e.bn - 1) / e.bn;
  long long ct = (long long)((tm + e.cm - 1) / e.cm) * ((tn + e.cn - 1) / e.cn) * v.batch;
  int cs = e.cm * e.cn;
  int max_clusters = g_sms / cs;
  if (cs > 1) {
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = cs;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.gridDim = dim3(cs * 64);
    cfg.blockDim = dim3(384);
    cfg.dynamicSmemBytes = e.smem;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    int n = 0;
    CK(cudaOccupancyMaxActiveClusters(&n, e.fn, &cfg));
    max_clusters = n;
  }
  long long g = ct < max_clusters ? ct : max_clusters;
  return (int)g * cs;
}

static void launch(const Entry& e, const KernelView& v, const void* a, const void* b, const void* c, void* d,
                   float alpha, float beta) {
  TileShape t{e.bm, e.bn, e.cm, e.cn};
  CUtensorMap maps[3];
  CUresult r = encode_maps(&cuTensorMapEncodeTiled, v, t, a, b, d, maps);
  if (r != CUDA_SUCCESS) {
    printf("encode failed %d\n", (int)r);
    exit(1);
  }
  HostGemmParams p = make_params(v, alpha, beta, c, d);
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = e.cm * e.cn;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.gridDim = dim3(grid_for(e, v));
  cfg.blockDim = dim3(384);
  cfg.dynamicSmemBytes = e.smem;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  void* args[4] = {&maps[0], &maps[1], &maps[2], &p};
  CK(cudaLaunchKernelExC(&cfg, e.fn, args));
}

// Returns normalized error; prints a line.
static bool run_case(const Entry& e, int64_t M, int64_t N, int64_t K, int64_t batch, bool d_row, int pad) {
  PlanProblem pp;
  pp.m = M; pp.n = N; pp.k = K; pp.batch = batch; pp.has_c = e.has_c;
  auto al = [&](int64_t x) { return ((x + 7) / 8) * 8 + pad; };
  // Choose user layouts so the kernel view matches the entry's (a_mn, b_mn).
  bool a_row = d_row ? !e.a_mn : !e.b_mn;
  bool b_row = d_row ? e.b_mn : e.a_mn;
  pp.a = {e.in, a_row, al(a_row ? K : M), 0};
  pp.b = {e.in, b_row, al(b_row ? N : K), 0};
  pp.d = {e.out, d_row, al(d_row ? N : M), 0};
  pp.c = {e.ct, !d_row, al(!d_row ? N : M), 0};  // C in the other layout than D on purpose
  auto bsz = [&](const OperandDesc& o, int64_t rows, int64_t cols) { return (o.row_major ? rows : cols) * o.ld + 8 * pad; };
  pp.a.batch_stride = bsz(pp.a, M, K);
  pp.b.batch_stride = bsz(pp.b, K, N);
  pp.c.batch_stride = bsz(pp.c, M, N);
  pp.d.batch_stride = bsz(pp.d, M, N);
  KernelView v = make_kernel_view(pp);
  if (v.a_mn != e.a_mn || v.b_mn != e.b_mn) { printf("layout mapping bug\n"); exit(1); }
  Mat A = make_mat(e.in, a_row, M, K, pp.a.ld, pp.a.batch_stride, batch, true);
  Mat B = make_mat(e.in, b_row, K, N, pp.b.ld, pp.b.batch_stride, batch, true);
  Mat C = make_mat(e.ct, pp.c.row_major, M, N, pp.c.ld, pp.c.batch_stride, batch, true);
  Mat D = make_mat(e.out, d_row, M, N, pp.d.ld, pp.d.batch_stride, batch, false);
  float alpha = 0.75f, beta = e.has_c ? -1.25f : 0.f;
  launch(e, v, A.d, B.d, C.d, D.d, alpha, beta);
  cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) { printf("%-22s %5ld %5ld %5ld b%ld %s: LAUNCH ERROR %s\n", e.name, M, N, K, batch, d_row ? "Drow" : "Dcol", cudaGetErrorName(err)); exit(1); }
  RefArgs r{};
  r.a = A.d; r.b = B.d; r.c = e.has_c ? C.d : nullptr;
  r.m = M; r.n = N; r.k = K; r.batch = batch; r.ta = e.in; r.tb = e.in; r.tc = e.ct;
  r.a_r = a_row ? pp.a.ld : 1; r.a_c = a_row ? 1 : pp.a.ld; r.a_b = pp.a.batch_stride;
  r.b_r = b_row ? pp.b.ld : 1; r.b_c = b_row ? 1 : pp.b.ld; r.b_b = pp.b.batch_stride;
  r.c_r = pp.c.row_major ? pp.c.ld : 1; r.c_c = pp.c.row_major ? 1 : pp.c.ld; r.c_b = pp.c.batch_stride;
  r.alpha = alpha; r.beta = beta;
  size_t tot = M * N * batch;
  CK(cudaMalloc(&r.out, tot * sizeof(double)));
  ref_kernel<<<(tot + 255) / 256, 256>>>(r);
  CK(cudaDeviceSynchronize());
  std::vector<double> ref(tot);
  CK(cudaMemcpy(ref.data(), r.out, tot * 8, cudaMemcpyDeviceToHost));
  std::vector<char> hd(D.bytes);
  CK(cudaMemcpy(hd.data(), D.d, D.bytes, cudaMemcpyDeviceToHost));
  double num = 0, den = 0;
  long long nan = 0, touched = 0;
  std::vector<char> written(D.bytes / elem_size(e.out), 0);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        size_t off = b * pp.d.batch_stride + (d_row ? i * pp.d.ld + j : j * pp.d.ld + i);
        written[off] = 1;
        double o = h2f(hd.data(), e.out, off), rf = ref[(b * M + i) * N + j];
        if (std::isnan(o)) ++nan;
        num += (o - rf) * (o - rf);
        den += rf * rf;
      }
  for (size_t i = 0; i < written.size(); ++i)
    if (!written[i] && !std::isnan(h2f(hd.data(), e.out, i))) ++touched;
  double err_n = std::sqrt(num / (den > 0 ? den : 1));
  bool ok = nan == 0 && touched == 0 && err_n < 1e-2;
  printf("%-22s %5ld %5ld %5ld b%ld %s pad%d: err %.2e nan %lld oob-writes %lld %s\n", e.name, M, N, K, batch,
         d_row ? "Drow" : "Dcol", pad, err_n, nan, touched, ok ? "ok" : "FAIL");
  cudaFree(A.d); cudaFree(B.d); cudaFree(C.d); cudaFree(D.d); cudaFree(r.out);
  return ok;
}

static void perf(const Entry& e, int64_t M, int64_t N, int64_t K) {
  PlanProblem pp;
  pp.m = M; pp.n = N; pp.k = K;
  pp.a = {e.in, !e.a_mn, e.a_mn ? M : K, 0};
  pp.b = {e.in, e.b_mn, e.b_mn ? N : K, 0};
  pp.d = {e.out, true, N, 0};
  pp.c = pp.d;
  KernelView v = make_kernel_view(pp);
  Mat A = make_mat(e.in, true, M, K, K, 0, 1, true);
  Mat B = make_mat(e.in, true, N, K, K, 0, 1, true);
  Mat D = make_mat(e.out, true, M, N, N, 0, 1, false);
  for (int i = 0; i < 5; ++i) launch(e, v, A.d, B.d, nullptr, D.d, 1.f, 0.f);
  cudaEvent_t s, t;
  cudaEventCreate(&s); cudaEventCreate(&t);
  std::vector<float> ms;
  for (int i = 0; i < 30; ++i) {
    cudaEventRecord(s);
    launch(e, v, A.d, B.d, nullptr, D.d, 1.f, 0.f);
    cudaEventRecord(t);
    cudaEventSynchronize(t);
    float x; cudaEventElapsedTime(&x, s, t); ms.push_back(x);
  }
  CK(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  double med = ms[ms.size() / 2];
  printf("PERF %-22s %5ld %5ld %5ld: %.3f ms  %.1f TFLOP/s (min %.3f max %.3f)\n", e.name, M, N, K, med,
         2.0 * M * N * K / med / 1e9, ms.front(), ms.back());
  cudaFree(A.d); cudaFree(B.d); cudaFree(D.d);
}

int main(int argc, char** argv) {
  CK(cudaDeviceGetAttribute(&g_sms, cudaDevAttrMultiProcessorCount, 0));
  for (auto& e : g_entries) CK(cudaFuncSetAttribute(e.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, e.smem));
  const char* only = argc > 1 ? argv[1] : nullptr;
  for (auto& e : g_entries)
    if (e.perf && (!only || std::string(only) == "all")) {
      perf(e, 8192, 8192, 8192);
      perf(e, 8192, 28672, 4096);
    }
  struct S { int64_t m, n, k, b; };
  std::vector<S> shapes = {{1, 1, 1, 1}, {17, 33, 65, 1}, {127, 255, 129, 1}, {300, 520, 1000, 3},
                           {1000, 1100, 256, 1}, {64, 64, 64, 2}};
  int fails = 0, total = 0;
  auto t0 = std::chrono::steady_clock::now();
  double budget = argc > 2 ? atof(argv[2]) : 1e9;
  for (auto& e : g_entries) {
    if (only && std::string(only) != "all" && std::string(only) != e.name) continue;
    auto t1 = std::chrono::steady_clock::now();
    for (size_t si = 0; si < shapes.size(); ++si)
      for (int d_row = 1; d_row >= 0; --d_row) {
        auto s = shapes[si];
        ++total;
        if (!run_case(e, s.m, s.n, s.k, s.b, d_row, (int)(si % 2) * 8)) ++fails;
      }
    double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    printf("  [%s: %.1f s]\n", e.name, std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count());
    if (el > budget) { printf("time budget reached\n"); break; }
  }
  printf("CORRECTNESS: %d / %d failed\n", fails, total);
  return fails ? 1 : 0;
}
