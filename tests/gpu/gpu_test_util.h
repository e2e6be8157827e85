#pragma once
// Host-side helpers for GPU correctness tests of any backend (header-only):
//   fp32 <-> bf16/f16 on the host, random operands drawn fresh, a double-precision CPU reference that honours
//   dtypes, layouts, leading dimensions, batch strides (0 = broadcast) and alpha/beta, the normalized error, and a
//   check that nothing outside D's logical elements was written; GpuTest, the fixture that skips a test without a GPU.
// Buffers are byte vectors that cover an operand's whole span (batches and padding included), exactly as uploaded.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gemmtune/device.h"
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

inline double load_elem(DType t, const uint8_t* base, int64_t i) {
  switch (t) {
    case DType::bf16: { uint16_t h; std::memcpy(&h, base + 2 * i, 2); return bf16_to_float(h); }
    case DType::f16: { uint16_t h; std::memcpy(&h, base + 2 * i, 2); return f16_to_float(h); }
    case DType::f32: { float f; std::memcpy(&f, base + 4 * i, 4); return f; }
    default: return std::numeric_limits<double>::quiet_NaN();  // fp8: not needed yet
  }
}

inline void store_elem(DType t, uint8_t* base, int64_t i, double v) {
  switch (t) {
    case DType::bf16: { uint16_t h = float_to_bf16(static_cast<float>(v)); std::memcpy(base + 2 * i, &h, 2); break; }
    case DType::f16: { uint16_t h = float_to_f16(static_cast<float>(v)); std::memcpy(base + 2 * i, &h, 2); break; }
    case DType::f32: { float f = static_cast<float>(v); std::memcpy(base + 4 * i, &f, 4); break; }
    default: break;
  }
}

// ---- geometry ----

inline int64_t elem_offset(const Operand& o, int64_t batch, int64_t r, int64_t c) {
  return batch * o.batch_stride + (o.layout == Layout::row ? r * o.ld + c : c * o.ld + r);
}

// Elements operand `which` spans, batches included. `p` must be resolved.
inline int64_t span_elems(const Problem& p, char which) {
  const Operand& o = p.operand(which);
  const int64_t rows = Problem::rows_of(which, p), cols = Problem::cols_of(which, p);
  const int64_t footprint = o.layout == Layout::row ? (rows - 1) * o.ld + cols : (cols - 1) * o.ld + rows;
  return o.batch_stride * (p.batch - 1) + footprint;
}

inline size_t span_bytes(const Problem& p, char which) {
  return static_cast<size_t>(span_elems(p, which)) * dtype_size(p.operand(which).dtype);
}

// ---- data ----

// The whole span filled with N(0,1) values rounded to the operand's dtype (padding too: a kernel that reads padding
// gets garbage, not zeros).
inline std::vector<uint8_t> random_operand(const Problem& p, char which, std::mt19937_64& rng) {
  const DType t = p.operand(which).dtype;
  const int64_t n = span_elems(p, which);
  std::vector<uint8_t> v(static_cast<size_t>(n) * dtype_size(t));
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (int64_t i = 0; i < n; ++i) store_elem(t, v.data(), i, dist(rng));
  return v;
}

// All bytes 0xFF: NaN in bf16, f16 and f32.
inline std::vector<uint8_t> poisoned_operand(const Problem& p, char which) {
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
    e.residual = random_vector(p.epilogue_dtype(EpiOpKind::residual), span_elems(p, 'D'), rng);
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
      const DType t = op.dtype ? *op.dtype : p.d.dtype;
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

}  // namespace gemmtune::test
