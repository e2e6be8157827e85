#include "backends/cublaslt/cublaslt_problem.h"

#include "backends/cublaslt/cublaslt_backend.h"
#include "core/check.h"
#include "gemmtune/errors.h"

namespace gemmtune {
namespace cublaslt {
namespace {

// The dtype cuBLASLt's fused bias must have. 16-bit inputs: D's. fp8 inputs (cuBLASLt's fp8 type table): bf16 or
// f16 with a D of that dtype, bf16 with an f32 D, and with an e4m3 D the dtype of C (bf16 or f16: we pick the bias's
// own, bf16 by default).
DType fused_bias_dtype(const Problem& p, DType bias) {
  if (!fp8_problem(p)) return p.d.dtype;
  if (p.d.dtype == DType::f32) return DType::bf16;
  if (p.d.dtype == DType::e4m3) return bias == DType::f16 ? DType::f16 : DType::bf16;
  return p.d.dtype;
}

// A stored operand seen column-major: a row-major R x C matrix is the column-major C x R matrix (its transpose).
LtMatrix col_view(const Operand& o, int64_t rows, int64_t cols) {
  LtMatrix m;
  m.type = lt_type(o.dtype);
  m.rows = static_cast<uint64_t>(o.layout == Layout::col ? rows : cols);
  m.cols = static_cast<uint64_t>(o.layout == Layout::col ? cols : rows);
  m.ld = o.ld;
  m.stride = o.batch_stride;
  m.align = static_cast<uint32_t>(o.align);
  return m;
}

}  // namespace

cudaDataType_t lt_type(DType t) {
  switch (t) {
    case DType::bf16: return CUDA_R_16BF;
    case DType::f16: return CUDA_R_16F;
    case DType::f32: return CUDA_R_32F;
    case DType::e4m3: return CUDA_R_8F_E4M3;
    case DType::e5m2: return CUDA_R_8F_E5M2;
  }
  return CUDA_R_32F;
}

std::string native_epilogue(const Problem& p, cublasLtEpilogue_t& out) {
  out = CUBLASLT_EPILOGUE_DEFAULT;
  const auto& ops = p.epilogue.ops;
  if (ops.empty()) return "";
  const EpiOpKind native_bias = p.d.layout == Layout::row ? EpiOpKind::bias_col : EpiOpKind::bias_row;
  size_t i = 0;
  bool bias = false;
  if (i < ops.size() && (ops[i].kind == EpiOpKind::bias_col || ops[i].kind == EpiOpKind::bias_row)) {
    if (ops[i].kind != native_bias)
      return std::string("cuBLASLt's bias is per row of its column-major output: with a ") +
             std::string(layout_name(p.d.layout)) + "-major D only " +
             (native_bias == EpiOpKind::bias_col ? "bias (per column)" : "bias_row") + " fuses";
    const DType have = p.epilogue_dtype(ops[i].kind), need = fused_bias_dtype(p, have);
    if (have != need)
      return "a fused bias must be " + dn(need) + (fp8_problem(p) ? " (cuBLASLt's fp8 types) with D=" : " (D's dtype), D=") +
             dn(p.d.dtype) + ", got " + dn(have);
    bias = true;
    ++i;
  }
  cublasLtEpilogue_t act = CUBLASLT_EPILOGUE_DEFAULT;
  if (i < ops.size() && ops[i].kind == EpiOpKind::act) {
    if (ops[i].act == Activation::relu) act = CUBLASLT_EPILOGUE_RELU;
    else if (ops[i].act == Activation::gelu_tanh) act = CUBLASLT_EPILOGUE_GELU;
    else return "cuBLASLt fuses only relu and gelu_tanh";
    ++i;
  }
  if (i != ops.size()) return "cuBLASLt fuses only [bias][,relu|gelu_tanh]";
  if (bias && act == CUBLASLT_EPILOGUE_RELU) out = CUBLASLT_EPILOGUE_RELU_BIAS;
  else if (bias && act == CUBLASLT_EPILOGUE_GELU) out = CUBLASLT_EPILOGUE_GELU_BIAS;
  else if (bias) out = CUBLASLT_EPILOGUE_BIAS;
  else out = act;
  return "";
}

Problem intermediate_problem(const Problem& p) {
  Problem q = p;
  q.epilogue = {};
  q.d.ld = 0;
  q.d.batch_stride = -1;
  q.resolve();
  return q;
}

const char* scale_mode_name(int32_t m) {
  switch (m) {
    case CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F: return "SCALAR_32F";
    case CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F: return "OUTER_VEC_32F";
    case CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F: return "VEC128_32F";
    case CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F: return "BLK128x128_32F";
  }
  return "?";
}

void scale_modes(Scaling s, int32_t& a, int32_t& b) {
  a = b = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  if (s == Scaling::row) a = b = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
  if (s == Scaling::block) {
    a = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;     // 1 x 128 along K per row of A: M x ceil(K/128), M contiguous
    b = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;  // 128 x 128 blocks of B, K blocks contiguous per 128 columns
  }
}

LtProblem map_problem(const Problem& p0, EpiMode mode, bool fast_accum) {
  const Problem p = mode == EpiMode::separate ? intermediate_problem(p0) : p0;
  LtProblem lp;
  if (mode == EpiMode::fused) {
    if (std::string why = native_epilogue(p, lp.epilogue); !why.empty()) GT_THROW("cublaslt: " + why);
    const EpiOp* b = p.epilogue.find(EpiOpKind::bias_col);
    if (!b) b = p.epilogue.find(EpiOpKind::bias_row);
    lp.bias = b != nullptr;
    if (b) lp.bias_type = lt_type(fused_bias_dtype(p, p.epilogue_dtype(b->kind)));
  }
  lp.swapped = p.d.layout == Layout::row;
  lp.c_is_d = p.beta == 0.0f;
  lp.batch = static_cast<int32_t>(p.batch);
  lp.alpha = p.alpha;
  lp.beta = p.beta;
  const LtMatrix a = col_view(p.a, p.m, p.k), b = col_view(p.b, p.k, p.n);
  lp.d = col_view(p.d, p.m, p.n);  // M x N, or N x M (= Dᵀ) when row-major
  lp.c = lp.c_is_d ? lp.d : col_view(p.c, p.m, p.n);
  if (fp8_problem(p)) {
    lp.fp8 = true;
    lp.fast_accum = fast_accum;
    int32_t ma, mb;
    scale_modes(p.scaling, ma, mb);
    lp.scale_mode_a = lp.swapped ? mb : ma;
    lp.scale_mode_b = lp.swapped ? ma : mb;
    lp.d_scale = p.d.dtype == DType::e4m3;
    lp.amax = p.amax;
    if (lp.d_scale) {
      // cuBLASLt's fp8 type table: an e4m3 D goes with a 16-bit C (the fused bias's dtype). C is not read (beta == 0
      // with an e4m3 D), so it gets D's shape and a null pointer.
      lp.c.type = lp.bias ? lp.bias_type : CUDA_R_16BF;
      lp.c_null = true;
    }
  }
  // An operand needs a transpose exactly when its storage order differs from D's: in the direct case we want A
  // (col-major), in the swapped case Bᵀ, which a row-major B already is in column-major terms.
  const cublasOperation_t ta = p.a.layout == p.d.layout ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cublasOperation_t tb = p.b.layout == p.d.layout ? CUBLAS_OP_N : CUBLAS_OP_T;
  if (!lp.swapped) {
    lp.a = a, lp.transa = ta;
    lp.b = b, lp.transb = tb;
  } else {
    lp.a = b, lp.transa = tb;
    lp.b = a, lp.transb = ta;
  }
  return lp;
}

}  // namespace cublaslt

std::string cublaslt_mapping(const Problem& p0, const std::string& config) {
  using namespace cublaslt;
  const ResolvedProblem rp = resolve(p0);
  const Problem& p = rp;
  if (std::string why = problem_reason(rp, DeviceInfo{}); !why.empty()) throw Error(why);
  const CandidateConfig cfg = CandidateConfig::parse(config);
  if (std::string why = config_reason(p, cfg); !why.empty()) throw Error(why);
  const LtProblem lp = map_problem(p, cfg.epi, cfg.fast_accum.value_or(false));
  auto type = [](cudaDataType_t t) -> std::string {
    for (DType d : {DType::bf16, DType::f16, DType::f32, DType::e4m3, DType::e5m2})
      if (lt_type(d) == t) return dn(d);
    return "#" + std::to_string(static_cast<int>(t));
  };
  auto mat = [&](const char* name, const LtMatrix& m) {
    return std::string(name) + "=" + type(m.type) + ":" + std::to_string(m.rows) + "x" + std::to_string(m.cols) +
           ":ld" + std::to_string(m.ld);
  };
  std::string s = std::string("swapped=") + (lp.swapped ? "1" : "0") + " transa=" + (lp.transa == CUBLAS_OP_T ? "T" : "N") +
                  " transb=" + (lp.transb == CUBLAS_OP_T ? "T" : "N") + " " + mat("A", lp.a) + " " + mat("B", lp.b) + " " +
                  mat("C", lp.c) + (lp.c_null ? "(null)" : "") + " " + mat("D", lp.d);
  if (lp.fp8) {
    const char* sa = lp.swapped ? "scale_b" : "scale_a";
    const char* sb = lp.swapped ? "scale_a" : "scale_b";
    s += std::string(" scale_mode_a=") + scale_mode_name(lp.scale_mode_a) + "(" + sa + ")" + " scale_mode_b=" +
         scale_mode_name(lp.scale_mode_b) + "(" + sb + ")" + " fast_accum=" + (lp.fast_accum ? "1" : "0") +
         " d_scale=" + (lp.d_scale ? "1" : "0") + " amax=" + (lp.amax ? "1" : "0");
  }
  if (lp.bias) s += " bias=" + type(lp.bias_type);
  return s;
}

}  // namespace gemmtune
