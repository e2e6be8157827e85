#pragma once
// Host-side helpers for GPU correctness tests of any backend (header-only):
//   fp32 <-> bf16/f16/e4m3/e5m2 on the host, random operands drawn fresh, a double-precision CPU reference that honours
//   dtypes, layouts, leading dimensions, batch strides (0 = broadcast) and alpha/beta, the normalized error, and a
//   check that nothing outside D's logical elements was written; the scaled (fp8) reference of problem.h's scale
//   layouts; GpuTest, the fixture that skips a test without a GPU.
// Buffers are byte vectors that cover an operand's whole span (batches and padding included), exactly as uploaded.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/memory.h"
#include "gemmtune/device.h"
#include "gemmtune/tuner.h"
#include "gemmtune/errors.h"
#include "gemmtune/problem.h"
#include "gemmtune/types.h"

namespace gemmtune::test {

// ---- needing a GPU ----

// Why this host cannot run GPU tests (the driver's or device's own message), or "" when it can.
inline std::string no_gpu_reason() {
  try {
    current_device();
    return "";
  } catch (const NoGpuError& e) {
    return e.what();
  }
}

// Fixture of tests that need a GPU: without one, each test is skipped (once, with the reason) instead of failing.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = no_gpu_reason(); !why.empty()) GTEST_SKIP() << "no GPU: " << why;
  }
};

// ---- scalar conversions (round to nearest even; NaN stays NaN) ----

inline uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float bf16_to_float(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float f16_to_float(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1u, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  float v;
  if (exp == 0) v = std::ldexp(static_cast<float>(man), -24);                 // subnormal / zero
  else if (exp == 31) v = man ? std::numeric_limits<float>::quiet_NaN() : INFINITY;
  else v = std::ldexp(static_cast<float>(man | 0x400u), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

inline uint16_t float_to_f16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  if (std::isnan(f)) return sign | 0x7e00u;
  const float a = std::fabs(f);
  if (a >= 65520.0f) return sign | 0x7c00u;  // rounds to inf
  if (a < std::ldexp(1.0f, -14)) {           // subnormal: multiples of 2^-24, round to nearest even
    const float q = std::nearbyint(a * std::ldexp(1.0f, 24));
    return sign | static_cast<uint16_t>(q);
  }
  int e;
  const float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  float q = std::nearbyint(std::ldexp(m, 11));  // 11 significant bits, in [1024, 2048]
  if (q >= 2048.0f) q /= 2, ++e;
  const uint32_t exp = static_cast<uint32_t>(e - 1 + 15), man = static_cast<uint32_t>(q) - 1024u;
  if (exp >= 31) return sign | 0x7c00u;
  return sign | static_cast<uint16_t>((exp << 10) | man);
}

// ---- fp8 (OCP e4m3 = PyTorch's float8_e4m3fn, e5m2 = float8_e5m2) ----

// Exact decode. e4m3: bias 7, no infinities, S.1111.111 is NaN, largest finite 448. e5m2: bias 15, IEEE-like
// (exponent 31: inf or NaN), largest finite 57344.
inline float e4m3_to_float(uint8_t x) {
  const int sign = x >> 7, exp = (x >> 3) & 0xf, man = x & 7;
  float v;
  if (exp == 15 && man == 7) return std::numeric_limits<float>::quiet_NaN();
  if (exp == 0) v = std::ldexp(static_cast<float>(man), -9);  // subnormal: man/8 * 2^-6
  else v = std::ldexp(static_cast<float>(8 + man), exp - 10);  // (1 + man/8) * 2^(exp-7)
  return sign ? -v : v;
}

inline float e5m2_to_float(uint8_t x) {
  const int sign = x >> 7, exp = (x >> 2) & 0x1f, man = x & 3;
  float v;
  if (exp == 31) return man ? std::numeric_limits<float>::quiet_NaN() : (sign ? -INFINITY : INFINITY);
  if (exp == 0) v = std::ldexp(static_cast<float>(man), -16);  // subnormal: man/4 * 2^-14
  else v = std::ldexp(static_cast<float>(4 + man), exp - 17);  // (1 + man/4) * 2^(exp-15)
  return sign ? -v : v;
}

// The non-negative finite values of an fp8 format by code (0x00 up to its largest finite code): increasing, so the
// nearest value of any magnitude is found by a search, with no bit tricks to get wrong.
inline const std::vector<float>& fp8_magnitudes(DType t) {
  static const std::vector<float> e4m3 = [] {
    std::vector<float> v;
    for (int c = 0; c <= 0x7e; ++c) v.push_back(e4m3_to_float(static_cast<uint8_t>(c)));
    return v;
  }();
  static const std::vector<float> e5m2 = [] {
    std::vector<float> v;
    for (int c = 0; c <= 0x7b; ++c) v.push_back(e5m2_to_float(static_cast<uint8_t>(c)));
    return v;
  }();
  return t == DType::e4m3 ? e4m3 : e5m2;
}

// Round to nearest, ties to the even code; magnitudes above the largest finite value saturate to it (what an e4m3
// output stores: saturate(v * scale_d)); NaN gives the format's NaN.
inline uint8_t float_to_fp8(DType t, double f) {
  if (std::isnan(f)) return 0x7f;
  const std::vector<float>& mag = fp8_magnitudes(t);
  const uint8_t sign = std::signbit(f) ? 0x80 : 0;
  const double a = std::fabs(f);
  size_t hi = static_cast<size_t>(std::lower_bound(mag.begin(), mag.end(), a) - mag.begin());
  uint8_t code;
  if (hi == mag.size()) {
    code = static_cast<uint8_t>(mag.size() - 1);  // saturate
  } else if (hi == 0 || mag[hi] == a) {
    code = static_cast<uint8_t>(hi);
  } else {
    const double dlo = a - mag[hi - 1], dhi = mag[hi] - a;
    code = static_cast<uint8_t>(dlo < dhi ? hi - 1 : dhi < dlo ? hi : ((hi - 1) % 2 == 0 ? hi - 1 : hi));
  }
  return sign | code;
}

inline double fp8_max(DType t) { return fp8_magnitudes(t).back(); }  // 448 (e4m3), 57344 (e5m2)
inline double saturate_e4m3(double v) { return std::clamp(v, -448.0, 448.0); }

inline double load_elem(DType t, const uint8_t* base, int64_t i) {
  switch (t) {
    case DType::bf16: { uint16_t h; std::memcpy(&h, base + 2 * i, 2); return bf16_to_float(h); }
    case DType::f16: { uint16_t h; std::memcpy(&h, base + 2 * i, 2); return f16_to_float(h); }
    case DType::f32: { float f; std::memcpy(&f, base + 4 * i, 4); return f; }
    case DType::e4m3: return e4m3_to_float(base[i]);
    case DType::e5m2: return e5m2_to_float(base[i]);
  }
  return std::numeric_limits<double>::quiet_NaN();
}

inline void store_elem(DType t, uint8_t* base, int64_t i, double v) {
  switch (t) {
    case DType::bf16: { uint16_t h = float_to_bf16(static_cast<float>(v)); std::memcpy(base + 2 * i, &h, 2); break; }
    case DType::f16: { uint16_t h = float_to_f16(static_cast<float>(v)); std::memcpy(base + 2 * i, &h, 2); break; }
    case DType::f32: { float f = static_cast<float>(v); std::memcpy(base + 4 * i, &f, 4); break; }
    case DType::e4m3: case DType::e5m2: base[i] = float_to_fp8(t, v); break;
  }
}

// ---- geometry ----

inline int64_t elem_offset(const Operand& o, int64_t batch, int64_t r, int64_t c) {
  return batch * o.batch_stride + (o.layout == Layout::row ? r * o.ld + c : c * o.ld + r);
}

// Elements operand `which` spans, batches included. `p` must be resolved.
inline int64_t span_elems(const Problem& p, Which which) {
  const Operand& o = p.operand(which);
  const int64_t rows = Problem::rows_of(which, p), cols = Problem::cols_of(which, p);
  const int64_t footprint = o.layout == Layout::row ? (rows - 1) * o.ld + cols : (cols - 1) * o.ld + rows;
  return o.batch_stride * (p.batch - 1) + footprint;
}

inline size_t span_bytes(const Problem& p, Which which) {
  return static_cast<size_t>(span_elems(p, which)) * dtype_size(p.operand(which).dtype);
}

// ---- data ----

// The whole span filled with N(0,1) values rounded to the operand's dtype (padding too: a kernel that reads padding
// gets garbage, not zeros).
inline std::vector<uint8_t> random_operand(const Problem& p, Which which, std::mt19937_64& rng) {
  const DType t = p.operand(which).dtype;
  const int64_t n = span_elems(p, which);
  std::vector<uint8_t> v(static_cast<size_t>(n) * dtype_size(t));
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (int64_t i = 0; i < n; ++i) store_elem(t, v.data(), i, dist(rng));
  return v;
}

// All bytes 0xFF: NaN in bf16, f16, f32, e4m3 and e5m2.
inline std::vector<uint8_t> poisoned_operand(const Problem& p, Which which) {
  return std::vector<uint8_t>(span_bytes(p, which), 0xFF);
}

// The GEMM in double, packed as [batch][M][N]: alpha * A*B + beta * C (before any epilogue: see apply_epilogue). `c` may be empty when beta == 0. `p` resolved.
inline std::vector<double> reference_d(const Problem& p, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                                       const std::vector<uint8_t>& c) {
  const int64_t M = p.m, N = p.n, K = p.k;
  std::vector<double> out(static_cast<size_t>(p.batch * M * N));
  std::vector<double> ad(static_cast<size_t>(M * K)), bt(static_cast<size_t>(N * K));  // A row-major, Bᵀ row-major
  for (int64_t bi = 0; bi < p.batch; ++bi) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k) ad[i * K + k] = load_elem(p.a.dtype, a.data(), elem_offset(p.a, bi, i, k));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j) bt[j * K + k] = load_elem(p.b.dtype, b.data(), elem_offset(p.b, bi, k, j));
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        const double* x = &ad[i * K];
        const double* y = &bt[j * K];
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += x[k] * y[k];
        double v = double(p.alpha) * acc;
        if (p.beta != 0.0f) v += double(p.beta) * load_elem(p.c.dtype, c.data(), elem_offset(p.c, bi, i, j));
        out[(bi * M + i) * N + j] = v;
      }
  }
  return out;
}

// ---- scaled (fp8) GEMMs ----

// The scales of one call (GemmArgs::scale_a/scale_b/scale_d), each as uploaded. An empty `a` stands for a null
// scale_a (1: a 16-bit A with an fp8 B).
struct Scales {
  std::vector<float> a, b;
  float d = 1.0f;
};

// Uniform in [0.5, 2): Problem::scale_len values for A and B (A's left empty with `null_a`).
inline Scales random_scales(const Problem& p, std::mt19937_64& rng, bool null_a = false) {
  std::uniform_real_distribution<float> dist(0.5f, 2.0f);
  Scales s;
  if (!null_a) s.a.resize(static_cast<size_t>(p.scale_len(Which::A)));
  s.b.resize(static_cast<size_t>(p.scale_len(Which::B)));
  for (float& x : s.a) x = dist(rng);
  for (float& x : s.b) x = dist(rng);
  return s;
}

// The scale of A[m, k] and of B[k, n], exactly as gemmtune/problem.h lays them out.
inline double scale_a_of(const Problem& p, const Scales& s, int64_t m, int64_t k) {
  if (s.a.empty()) return 1.0;
  switch (p.scaling) {
    case Scaling::none: return 1.0;
    case Scaling::tensor: return s.a[0];
    case Scaling::row: return s.a[static_cast<size_t>(m)];
    case Scaling::block: return s.a[static_cast<size_t>((k / kScaleBlock) * p.m + m)];
  }
  return 1.0;
}

inline double scale_b_of(const Problem& p, const Scales& s, int64_t k, int64_t n) {
  const int64_t kb = (p.k + kScaleBlock - 1) / kScaleBlock;
  switch (p.scaling) {
    case Scaling::none: return 1.0;
    case Scaling::tensor: return s.b[0];
    case Scaling::row: return s.b[static_cast<size_t>(n)];
    case Scaling::block: return s.b[static_cast<size_t>((n / kScaleBlock) * kb + k / kScaleBlock)];
  }
  return 1.0;
}

// reference_d of a scaled problem: alpha * sum_k (A[m,k] * sa(m,k)) * (B[k,n] * sb(k,n)) + beta * C in double, each
// input dequantized by its own scale before the products (packed [batch][M][N], before the epilogue).
inline std::vector<double> reference_scaled(const Problem& p, const std::vector<uint8_t>& a,
                                            const std::vector<uint8_t>& b, const std::vector<uint8_t>& c,
                                            const Scales& s) {
  const int64_t M = p.m, N = p.n, K = p.k;
  std::vector<double> out(static_cast<size_t>(p.batch * M * N));
  std::vector<double> ad(static_cast<size_t>(M * K)), bt(static_cast<size_t>(N * K));  // dequantized A, Bᵀ
  for (int64_t bi = 0; bi < p.batch; ++bi) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k)
        ad[i * K + k] = load_elem(p.a.dtype, a.data(), elem_offset(p.a, bi, i, k)) * scale_a_of(p, s, i, k);
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j)
        bt[j * K + k] = load_elem(p.b.dtype, b.data(), elem_offset(p.b, bi, k, j)) * scale_b_of(p, s, k, j);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += ad[i * K + k] * bt[j * K + k];
        double v = double(p.alpha) * acc;
        if (p.beta != 0.0f) v += double(p.beta) * load_elem(p.c.dtype, c.data(), elem_offset(p.c, bi, i, j));
        out[(bi * M + i) * N + j] = v;
      }
  }
  return out;
}

// What an e4m3 D holds for the final values `v` (after the epilogue): saturate(v * scale_d), in the same packing.
inline std::vector<double> e4m3_expected(const std::vector<double>& v, float scale_d) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = saturate_e4m3(v[i] * double(scale_d));
  return out;
}

inline double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

// ---- epilogue ----

// The epilogue's operands as uploaded: vectors packed, the residual spanning D's span (D's layout, ld, batch stride).
struct EpilogueData {
  std::vector<uint8_t> bias, residual, row_scale, col_scale;
};

inline std::vector<uint8_t> random_vector(DType t, int64_t n, std::mt19937_64& rng) {
  std::vector<uint8_t> v(static_cast<size_t>(n) * dtype_size(t));
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (int64_t i = 0; i < n; ++i) store_elem(t, v.data(), i, dist(rng));
  return v;
}

// Random operands for every op of p's chain (empty vectors for ops it lacks).
inline EpilogueData random_epilogue(const Problem& p, std::mt19937_64& rng) {
  EpilogueData e;
  for (EpiOpKind k : {EpiOpKind::bias_col, EpiOpKind::bias_row})
    if (int64_t n = p.epilogue_vector_len(k)) e.bias = random_vector(p.epilogue_dtype(k), n, rng);
  if (int64_t n = p.epilogue_vector_len(EpiOpKind::row_scale))
    e.row_scale = random_vector(p.epilogue_dtype(EpiOpKind::row_scale), n, rng);
  if (int64_t n = p.epilogue_vector_len(EpiOpKind::col_scale))
    e.col_scale = random_vector(p.epilogue_dtype(EpiOpKind::col_scale), n, rng);
  if (p.epilogue.has(EpiOpKind::residual))
    e.residual = random_vector(p.epilogue_dtype(EpiOpKind::residual), span_elems(p, Which::D), rng);
  return e;
}

inline double act_ref(Activation a, double x) {
  switch (a) {
    case Activation::relu: return x > 0 ? x : 0;
    case Activation::gelu_tanh: return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case Activation::gelu_erf: return 0.5 * x * (1 + std::erf(x * 0.7071067811865476));
    case Activation::silu: return x / (1 + std::exp(-x));
    case Activation::sigmoid: return 1 / (1 + std::exp(-x));
  }
  return x;
}

// The chain applied in double to `gemm` (packed [batch][M][N], as reference_d returns): packed [batch][M][n_out()].
inline std::vector<double> apply_epilogue(const Problem& p, const std::vector<double>& gemm, const EpilogueData& e) {
  const auto& ops = p.epilogue.ops;
  if (ops.empty()) return gemm;
  const int64_t M = p.m, N = p.n, NO = p.n_out();
  const int glu_at = p.epilogue.glu_index();
  auto run = [&](size_t begin, size_t end, double v, int64_t bi, int64_t r, int64_t c) {
    for (size_t i = begin; i < end; ++i) {
      const EpiOp& op = ops[i];
      const DType t = op.dtype ? *op.dtype : p.epilogue_default_dtype();  // bf16 for an fp8 D
      switch (op.kind) {
        case EpiOpKind::bias_col: v += load_elem(t, e.bias.data(), c); break;
        case EpiOpKind::bias_row: v += load_elem(t, e.bias.data(), r); break;
        case EpiOpKind::act: v = act_ref(op.act, v); break;
        case EpiOpKind::row_scale: v *= load_elem(t, e.row_scale.data(), r); break;
        case EpiOpKind::col_scale: v *= load_elem(t, e.col_scale.data(), c); break;
        case EpiOpKind::residual: v += load_elem(t, e.residual.data(), elem_offset(p.d, bi, r, c)); break;
        case EpiOpKind::glu: break;
      }
    }
    return v;
  };
  std::vector<double> out(static_cast<size_t>(p.batch * M * NO));
  for (int64_t bi = 0; bi < p.batch; ++bi)
    for (int64_t r = 0; r < M; ++r)
      for (int64_t c = 0; c < NO; ++c) {
        const double* row = &gemm[static_cast<size_t>((bi * M + r) * N)];
        double v;
        if (glu_at < 0) {
          v = run(0, ops.size(), row[c], bi, r, c);
        } else {
          const EpiOp& g = ops[static_cast<size_t>(glu_at)];
          const int64_t b = g.glu == GluLayout::interleaved ? g.glu_block : 0;
          const int64_t gc = b == 0 ? c : (c / b) * 2 * b + c % b, uc = b == 0 ? c + N / 2 : gc + b;
          const double gv = run(0, static_cast<size_t>(glu_at), row[gc], bi, r, gc);
          const double uv = run(0, static_cast<size_t>(glu_at), row[uc], bi, r, uc);
          v = run(static_cast<size_t>(glu_at) + 1, ops.size(), act_ref(g.act, gv) * uv, bi, r, c);
        }
        out[static_cast<size_t>((bi * M + r) * NO + c)] = v;
      }
  return out;
}

// ||out - ref|| / ||ref|| over D's logical elements (M x n_out()); NaN when any output is not finite (so `err <= tol` fails).
inline double normalized_error(const Problem& p, const std::vector<uint8_t>& d, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (int64_t bi = 0; bi < p.batch; ++bi)
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n_out(); ++j) {
        const double o = load_elem(p.d.dtype, d.data(), elem_offset(p.d, bi, i, j));
        if (!std::isfinite(o)) return std::numeric_limits<double>::quiet_NaN();
        const double r = ref[static_cast<size_t>((bi * p.m + i) * p.n_out() + j)];
        num += (o - r) * (o - r);
        den += r * r;
      }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// Bytes of D's span outside its logical elements that no longer hold the poison 0xFF (a kernel wrote out of bounds).
inline int64_t written_outside(const Problem& p, const std::vector<uint8_t>& d) {
  const size_t es = dtype_size(p.d.dtype);
  std::vector<uint8_t> logical(d.size(), 0);
  for (int64_t bi = 0; bi < p.batch; ++bi)
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n_out(); ++j)
        std::memset(&logical[static_cast<size_t>(elem_offset(p.d, bi, i, j)) * es], 1, es);
  int64_t bad = 0;
  for (size_t i = 0; i < d.size(); ++i) bad += !logical[i] && d[i] != 0xFF;
  return bad;
}

// A fresh, empty result and kernel cache for one test (GEMMTUNE_CACHE_DIR; the worker process inherits it), removed
// afterwards.
struct FreshCache {
  std::string dir;
  FreshCache() {
    char tmpl[] = "/tmp/gemmtune-gpu-test-XXXXXX";
    dir = mkdtemp(tmpl);
    setenv("GEMMTUNE_CACHE_DIR", dir.c_str(), 1);
  }
  ~FreshCache() { std::filesystem::remove_all(dir); }
  FreshCache(const FreshCache&) = delete;
  FreshCache& operator=(const FreshCache&) = delete;
};

// ---- running a tuned GEMM ----

// Runs the Gemm on fresh random inputs with a poisoned D and returns the normalized error vs the CPU reference.
inline double run_and_check(const Gemm& g, uint64_t seed) {
  const Problem& p = g.problem();
  std::mt19937_64 rng(seed);
  auto a = random_operand(p, Which::A, rng), b = random_operand(p, Which::B, rng);
  std::vector<uint8_t> c;
  if (p.beta != 0.0f) c = random_operand(p, Which::C, rng);
  auto d = poisoned_operand(p, Which::D);
  cuda::DeviceBuffer da(a.size()), db(b.size()), dc(c.size()), dd(d.size());
  da.upload(a.data(), a.size());
  db.upload(b.data(), b.size());
  if (!c.empty()) dc.upload(c.data(), c.size());
  dd.upload(d.data(), d.size());
  g.run({da.get(), db.get(), c.empty() ? nullptr : dc.get(), dd.get()});
  dd.download(d.data(), d.size());
  EXPECT_EQ(written_outside(p, d), 0) << g.candidate().str();
  return normalized_error(p, d, reference_d(p, a, b, c));
}

}  // namespace gemmtune::test
