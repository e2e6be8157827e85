#include "backends/cublaslt/cublaslt_backend.h"
#include "backends/jit_result.h"
#include "backends/stream_scratch.h"
#include "core/fnv.h"

#include <cublasLt.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "backends/cublaslt/cublaslt_config.h"
#include "core/check.h"
#include "core/clock.h"
#include "core/epilogue_codegen.h"
#include "cuda/driver.h"
#include "cuda/memory.h"
#include "cuda/toolkit_library.h"
#include "gemmtune/errors.h"
#include "jit/jit.h"

namespace gemmtune {

namespace {

using cublaslt::AlgoConfig;

constexpr const char* kName = "cublaslt";
constexpr uint64_t kMaxWorkspace = 32ull << 20;  // what the heuristic may ask for
constexpr uint32_t kBiasAlignment = 16;  // a fused bias pointer's alignment the heuristic may rely on (checked at launch)
constexpr int kHeuristicCount = 32;

// ---- cuBLASLt, loaded when first used (cuda/toolkit_library.h): enumeration, a load, `gemmtune version` ----

#define GEMMTUNE_CUBLASLT_FUNCS(X)                                                                                  \
  X(cublasLtGetVersion) X(cublasLtGetStatusName) X(cublasLtCreate) X(cublasLtMatmul) X(cublasLtMatmulDescCreate)   \
  X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute) X(cublasLtMatmulPreferenceCreate)                 \
  X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatrixLayoutCreate)         \
  X(cublasLtMatrixLayoutDestroy) X(cublasLtMatrixLayoutSetAttribute) X(cublasLtMatmulAlgoInit)                     \
  X(cublasLtMatmulAlgoCheck) X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmulAlgoCapGetAttribute)                \
  X(cublasLtMatmulAlgoConfigGetAttribute) X(cublasLtMatmulAlgoConfigSetAttribute)

const cuda::ToolkitLibrary& lt_library() {
  static const cuda::ToolkitLibrary lib("libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR), "cuBLASLt");
  return lib;
}

struct CublasLt {
  GEMMTUNE_CUBLASLT_FUNCS(GEMMTUNE_TOOLKIT_DECL)
};

// The table, loaded once (thread-safe); throws gemmtune::Error when cuBLASLt cannot be loaded.
const CublasLt& lt() {
  static const CublasLt table = [] {
    CublasLt t;
    const cuda::ToolkitLibrary& lib = lt_library();
    GEMMTUNE_CUBLASLT_FUNCS(GEMMTUNE_TOOLKIT_LOAD)
    return t;
  }();
  return table;
}

std::string version_string(size_t v) {  // major*10000 + minor*100 + patch
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

// ---- errors ----

[[noreturn]] void lt_fail(cublasStatus_t s, const char* call, const char* file, int line) {
  const char* name = lt().cublasLtGetStatusName(s);
  const std::string_view table = "lt().";  // the call as cuBLASLt names it
  if (std::string_view(call).substr(0, table.size()) == table) call += table.size();
  detail::throw_error(std::string("cublaslt: ") + call + " failed: " + (name ? name : "unknown status") + " (" +
                          std::to_string(static_cast<int>(s)) + ")",
                      file, line);
}

#define GT_LT(call)                                                         \
  do {                                                                      \
    cublasStatus_t gt_lt_status_ = (call);                                  \
    if (gt_lt_status_ != CUBLAS_STATUS_SUCCESS)                             \
      lt_fail(gt_lt_status_, #call, __FILE__, __LINE__);                    \
  } while (0)

std::string status_name(cublasStatus_t s) {
  const char* name = lt().cublasLtGetStatusName(s);
  return name ? name : ("status " + std::to_string(static_cast<int>(s)));
}

// One handle for the process: created lazily on the primary context of the current device, never destroyed (its
// destruction at exit could run after the driver is gone).
cublasLtHandle_t lt_handle() {
  cuda::ensure_context();  // throws NoGpuError without a GPU
  // A magic static: thread-safe, and retried on the next call if creation throws.
  static const cublasLtHandle_t handle = [] {
    cublasLtHandle_t h = nullptr;
    GT_LT(lt().cublasLtCreate(&h));
    return h;
  }();
  return handle;
}

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

std::string dn(DType t) { return std::string(dtype_name(t)); }

// ---- the problem as cuBLASLt sees it ----

// One matrix in column-major terms.
struct LtMatrix {
  cudaDataType_t type;
  uint64_t rows, cols;
  int64_t ld, stride;
  uint32_t align = 16;  // bytes the pointer is a multiple of (Operand::align): what the heuristic may rely on
};

// The column-major problem handed to cuBLASLt. With a row-major D we solve Dᵀ = Bᵀ·Aᵀ: "A" is then our B.
struct LtProblem {
  bool swapped = false;  // A and B pointers swap roles
  bool c_is_d = false;   // beta == 0: C is not read, so D's layout (and pointer) stand in for it
  cublasOperation_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
  LtMatrix a{}, b{}, c{}, d{};
  int32_t batch = 1;
  float alpha = 1, beta = 0;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;  // fused epilogue (bias / relu / gelu), else DEFAULT
  bool bias = false;                                        // epilogue reads CUBLASLT_MATMUL_DESC_BIAS_POINTER
  cudaDataType_t bias_type = CUDA_R_32F;
  // fp8: the scale modes of cuBLASLt's A and B (after the swap, so "A" may be our B), CUBLASLT_MATMUL_DESC_FAST_ACCUM,
  // whether D has an output scale (an e4m3 D) and an amax output.
  bool fp8 = false;
  int32_t scale_mode_a = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F, scale_mode_b = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  bool fast_accum = false;
  bool d_scale = false, amax = false;
  bool c_null = false;  // C is not read and its type differs from D's (an e4m3 D): its pointer is null
};

// ---- epilogues ----
// cuBLASLt fuses bias (one value per row of its column-major D), ReLU and GELU (tanh approximation) and their
// bias-then-activation combinations. With a row-major D it computes Dᵀ, whose rows are our columns: there our
// per-column bias (the y = x·Wᵀ + b case) is cuBLASLt's bias; with a column-major D our bias_row is. Every other
// chain runs as this GEMM into a workspace plus the separate elementwise kernel (kernels/epilogue/elementwise.cuh):
// the unfused baseline. The config says which: "<algo>,epi=fused" or "<algo>,epi=separate" (cublaslt_config.h).
using cublaslt::CandidateConfig;
using cublaslt::EpiMode;

// A candidate's config as parse() leaves it: the suffixes split off and the algorithm parsed. A malformed algorithm
// is kept as its error rather than thrown, because validate() names a mismatched epilogue mode first.
struct LtConfig {
  CandidateConfig split;
  std::optional<AlgoConfig> algo;  // empty for "default" (and when algo_error is set)
  std::string algo_error;          // why the algorithm part does not parse; "" when it does
};

bool fp8_problem(const Problem& p) { return is_fp8(p.a.dtype) || is_fp8(p.b.dtype); }

// The dtype cuBLASLt's fused bias must have. 16-bit inputs: D's. fp8 inputs (cuBLASLt's fp8 type table): bf16 or
// f16 with a D of that dtype, bf16 with an f32 D, and with an e4m3 D the dtype of C (bf16 or f16: we pick the bias's
// own, bf16 by default).
DType fused_bias_dtype(const Problem& p, DType bias) {
  if (!fp8_problem(p)) return p.d.dtype;
  if (p.d.dtype == DType::f32) return DType::bf16;
  if (p.d.dtype == DType::e4m3) return bias == DType::f16 ? DType::f16 : DType::bf16;
  return p.d.dtype;
}

// The cuBLASLt epilogue for the problem's chain, or "" + why not (then only the separate path runs it).
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

// The plain GEMM of the separate path: D replaced by a packed M x N intermediate of D's dtype and layout.
Problem intermediate_problem(const Problem& p) {
  Problem q = p;
  q.epilogue = {};
  q.d.ld = 0;
  q.d.batch_stride = -1;
  q.resolve();
  return q;
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

const char* scale_mode_name(int32_t m) {
  switch (m) {
    case CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F: return "SCALAR_32F";
    case CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F: return "OUTER_VEC_32F";
    case CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F: return "VEC128_32F";
    case CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F: return "BLK128x128_32F";
  }
  return "?";
}

// cuBLASLt's scale mode for our A and B under the problem's scaling. Its scale tensors follow the operand, not the
// operand's position in its column-major view, so the swap of A and B (row-major D) swaps the modes and pointers and
// nothing else: OUTER_VEC_32F scales "row i of op(A)" and "column j of op(B)", which after the swap are our column n
// (scale_b, N values) and our row m (scale_a, M values).
void scale_modes(Scaling s, int32_t& a, int32_t& b) {
  a = b = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  if (s == Scaling::row) a = b = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
  if (s == Scaling::block) {
    a = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;     // 1 x 128 along K per row of A: M x ceil(K/128), M contiguous
    b = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;  // 128 x 128 blocks of B, K blocks contiguous per 128 columns
  }
}

// The fp8 part of problem_reason: cuBLASLt's fp8 rules, on top of gemmtune's own (Problem::check(), passed).
std::string fp8_reason(const Problem& p, const DeviceInfo& dev) {
  const std::string pre = "cublaslt: ";
  if (dev.cc_major != 0 && dev.cc_major * 10 + dev.cc_minor < 89)
    return pre + "fp8 needs sm_89 or newer (fp8 tensor cores), got " + dev.arch();
  if (dev.cc_major != 0 && p.scaling != Scaling::tensor && !(dev.cc_major == 9 && dev.cc_minor == 0))
    return pre + "scaling=" + std::string(scaling_name(p.scaling)) +
           " uses cuBLASLt scale modes that exist on sm_90 only (OUTER_VEC_32F, VEC128_32F/BLK128x128_32F), got " +
           dev.arch();
  if (!is_fp8(p.a.dtype))
    return pre + "A=" + dn(p.a.dtype) + " with B=" + dn(p.b.dtype) +
           ": cuBLASLt's fp8 matmul takes fp8 A and B only (no 16-bit x fp8 kernel); the gemv backend takes "
           "skinny weight-only fp8 problems";
  if (p.a.dtype == DType::e5m2 && p.b.dtype == DType::e5m2)
    return pre + "A=e5m2 with B=e5m2: cuBLASLt has no e5m2 x e5m2 matmul (one of A, B must be e4m3)";
  if (p.beta != 0.0f && p.c.layout != p.d.layout)
    return pre + "C must have D's layout when beta != 0 (cuBLASLt has no transpose for C), got C=" +
           std::string(layout_name(p.c.layout)) + " D=" + std::string(layout_name(p.d.layout));
  // cuBLASLt's fp8 kernels need every matrix's pointer and leading dimension 16-byte aligned.
  for (Which w : kOperands) {
    if (w == Which::C && p.beta == 0.0f) continue;
    if (const int acc = p.access_bytes(w); acc < 16) {
      const Operand& o = p.operand(w);
      return pre + "cuBLASLt's fp8 matmul needs 16-byte aligned rows of every matrix: " + which_name(w) + " (" +
             dn(o.dtype) + ") has ld" + which_lower(w) + "=" + std::to_string(o.ld) + " = " +
             std::to_string(o.ld * int64_t(dtype_size(o.dtype))) + " bytes, align=" + std::to_string(o.align) +
             (p.batch > 1 ? ", batch stride " + std::to_string(o.batch_stride) : "") + ": " + std::to_string(acc) +
             "-byte aligned";
    }
  }
  if (p.scaling == Scaling::block) {
    // cuBLASLt's BLK128x128_32F tensor has a pitch of ceil(K/128) rounded up to a multiple of 4 floats (16 bytes)
    // between consecutive 128-column blocks of N; gemmtune's scale_b is packed (pitch ceil(K/128)). They agree when
    // the pitch needs no rounding or when there is one block of columns.
    const int64_t kb = (p.k + kScaleBlock - 1) / kScaleBlock, nb = (p.n + kScaleBlock - 1) / kScaleBlock;
    if (kb % 4 != 0 && nb > 1)
      return pre + "scaling=block: cuBLASLt reads B's 128x128 block scales with a pitch of ceil(K/128) rounded up to "
                   "a multiple of 4 (" + std::to_string((kb + 3) / 4 * 4) + " floats per 128 columns of N), gemmtune's "
                   "scale_b is packed (pitch ceil(K/128)=" + std::to_string(kb) +
             "): needs ceil(K/128) % 4 == 0 or N <= 128";
  }
  // Measured on sm_90 with CUDA 13.0: the heuristic answers CUBLAS_STATUS_INVALID_VALUE for an fp8 D with outer-vector
  // or block scales, and no algorithm for block scales when M is not a multiple of 4 (A's VEC128 scale columns).
  if (p.d.dtype == DType::e4m3 && p.scaling != Scaling::tensor)
    return pre + "an e4m3 D takes tensor scaling only in cuBLASLt (scaling=" + std::string(scaling_name(p.scaling)) +
           " with an fp8 D is not supported there)";
  if (p.scaling == Scaling::block && p.m % 4 != 0)
    return pre + "scaling=block needs M a multiple of 4 in cuBLASLt (M=" + std::to_string(p.m) + ")";
  if (p.d.dtype == DType::e4m3 && !p.epilogue.empty()) {
    cublasLtEpilogue_t ep;
    if (std::string why = native_epilogue(p, ep); !why.empty())
      return pre + "an e4m3 D with epilogue '" + p.epilogue.key() + "' needs the chain fused in cuBLASLt (" + why +
             "): the separate elementwise pass does not apply scale_d, saturation or amax";
  }
  return "";
}

// THE validity function of this backend: supports(), validate() and enumerate() all start here. Shapes, pitches and
// batch strides (0 broadcasts an input) are the resolved problem's own check; cuBLASLt takes any for 16-bit types.
std::string problem_reason(const ResolvedProblem& rp, const DeviceInfo& dev) {
  const Problem& p = rp;
  const std::string pre = "cublaslt: ";
  if (dev.cc_major != 0 && dev.cc_major < 8) return pre + "needs sm_80 or newer for bf16/f16 tensor cores, got " + dev.arch();
  // A plain or batched matmul here would ignore the groups and compute a wrong answer. cuBLASLt's batches (strided or
  // pointer-array) share one shape, and cublasGemmGroupedBatchedEx reads the group sizes on the host.
  if (p.grouped())
    return pre + "grouped GEMMs (grouping=" + std::string(grouping_name(p.grouping)) +
           ") are not supported: cuBLASLt has no grouped matmul whose group sizes live on the device";
  const DType in = p.a.dtype;
  if (fp8_problem(p)) return fp8_reason(p, dev);
  if (in != DType::bf16 && in != DType::f16 && in != DType::f32)
    return pre + "A must be bf16, f16 or f32, got " + dn(in);
  if (p.b.dtype != in) return pre + "A and B must have the same dtype, got A=" + dn(in) + " B=" + dn(p.b.dtype);
  // f32 inputs: full-precision SGEMM (CUBLAS_COMPUTE_32F, not TF32), D must be f32.
  if (in == DType::f32 && p.d.dtype != DType::f32)
    return pre + "with f32 inputs D must be f32 (CUBLAS_COMPUTE_32F), got " + dn(p.d.dtype);
  if (p.d.dtype != in && p.d.dtype != DType::f32)
    return pre + "with " + dn(in) + " inputs D must be " + dn(in) + " or f32 (cuBLASLt CUBLAS_COMPUTE_32F types), got " +
           dn(p.d.dtype);
  if (p.beta != 0.0f && p.c.layout != p.d.layout)
    return pre + "C must have D's layout when beta != 0 (cuBLASLt has no transpose for C), got C=" +
           std::string(layout_name(p.c.layout)) + " D=" + std::string(layout_name(p.d.layout));
  return "";
}

// `mode`: fused maps the chain to cuBLASLt's epilogue; separate (or none) maps the plain GEMM into the intermediate.
// `fast_accum`: CUBLASLT_MATMUL_DESC_FAST_ACCUM of an fp8 problem.
LtProblem map_problem(const Problem& p0, EpiMode mode = EpiMode::none, bool fast_accum = false) {
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

// ---- RAII descriptors, made once per executable ----

struct LtDescs {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  uint32_t told[4] = {16, 16, 16, 16};  // A, B, C, D (cuBLASLt's order): the pointer alignment the heuristic was told

  explicit LtDescs(const LtProblem& lp) {
    try {
      GT_LT(lt().cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
      int32_t ta = lp.transa, tb = lp.transb;
      GT_LT(lt().cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
      GT_LT(lt().cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
      if (lp.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
        cublasLtEpilogue_t ep = lp.epilogue;
        GT_LT(lt().cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof(ep)));
      }
      // The heuristic reads pointers' alignment, not their data: a 16-byte aligned stand-in until launch sets the
      // real pointer. Scale modes and the fp8 pointers (scales, amax) change which kernels are valid, so the heuristic
      // sees them all.
      const void* stand_in = reinterpret_cast<const void*>(uintptr_t(1) << 20);
      if (lp.fp8) {
        if (lp.scale_mode_a != CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F || lp.scale_mode_b != CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F) {
          int32_t ma = lp.scale_mode_a, mb = lp.scale_mode_b;
          GT_LT(lt().cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &ma, sizeof(ma)));
          GT_LT(lt().cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mb, sizeof(mb)));
        }
        GT_LT(lt().cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &stand_in, sizeof(stand_in)));
        GT_LT(lt().cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &stand_in, sizeof(stand_in)));
        const int8_t fast = lp.fast_accum ? 1 : 0;
        GT_LT(lt().cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast)));
        if (lp.d_scale)
          GT_LT(lt().cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &stand_in, sizeof(stand_in)));
        if (lp.amax)
          GT_LT(lt().cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, &stand_in, sizeof(stand_in)));
      }
      if (lp.bias) {
        int32_t bt = lp.bias_type;
        GT_LT(lt().cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof(bt)));
        GT_LT(lt().cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &stand_in, sizeof(stand_in)));
      }
      a = layout(lp.a, lp.batch);
      b = layout(lp.b, lp.batch);
      c = layout(lp.c, lp.batch);
      d = layout(lp.d, lp.batch);
      GT_LT(lt().cublasLtMatmulPreferenceCreate(&pref));
      uint64_t ws = kMaxWorkspace;
      GT_LT(lt().cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
      // The pointers' alignment the problem declares (Operand::align), so the heuristic picks only algorithms that
      // take such pointers (a sliced view's, off 16 bytes).
      const cublasLtMatmulPreferenceAttributes_t attrs[4] = {
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
      const LtMatrix* mats[4] = {&lp.a, &lp.b, &lp.c, &lp.d};
      for (int i = 0; i < 4; ++i) {
        told[i] = mats[i]->align;
        GT_LT(lt().cublasLtMatmulPreferenceSetAttribute(pref, attrs[i], &told[i], sizeof(told[i])));
      }
    } catch (...) {
      release();
      throw;
    }
  }
  ~LtDescs() { release(); }
  LtDescs(const LtDescs&) = delete;
  LtDescs& operator=(const LtDescs&) = delete;

 private:
  static cublasLtMatrixLayout_t layout(const LtMatrix& m, int32_t batch) {
    cublasLtMatrixLayout_t l = nullptr;
    GT_LT(lt().cublasLtMatrixLayoutCreate(&l, m.type, m.rows, m.cols, m.ld));
    if (batch > 1) {
      GT_LT(lt().cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)));
      int64_t stride = m.stride;
      GT_LT(lt().cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
    }
    return l;
  }
  void release() {
    if (pref) lt().cublasLtMatmulPreferenceDestroy(pref);
    for (auto* l : {&a, &b, &c, &d})
      if (*l) lt().cublasLtMatrixLayoutDestroy(*l);
    if (op) lt().cublasLtMatmulDescDestroy(op);
    pref = nullptr, a = b = c = d = nullptr, op = nullptr;
  }
};

// ---- algo <-> config ----

template <class T>
T get_cfg(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr, const char* what) {
  T v{};
  size_t written = 0;
  cublasStatus_t s = lt().cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof(v), &written);
  if (s != CUBLAS_STATUS_SUCCESS) lt_fail(s, what, __FILE__, __LINE__);
  return v;
}

AlgoConfig config_of(const cublasLtMatmulAlgo_t& algo) {
  AlgoConfig c;
  c.algo = get_cfg<int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID, "get ALGO_CONFIG_ID");
  c.tile = get_cfg<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, "get ALGO_CONFIG_TILE_ID");
  c.stages = get_cfg<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, "get ALGO_CONFIG_STAGES_ID");
  c.splitk = get_cfg<int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, "get ALGO_CONFIG_SPLITK_NUM");
  c.reduction = get_cfg<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, "get ALGO_CONFIG_REDUCTION_SCHEME");
  c.swizzle = get_cfg<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, "get ALGO_CONFIG_CTA_SWIZZLING");
  c.custom = get_cfg<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, "get ALGO_CONFIG_CUSTOM_OPTION");
  c.cluster = get_cfg<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, "get ALGO_CONFIG_CLUSTER_SHAPE_ID");
  c.inner = get_cfg<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, "get ALGO_CONFIG_INNER_SHAPE_ID");
  return c;
}

// Rebuilds the algorithm from its config; "" or why cuBLASLt refuses it.
std::string algo_from_config(const AlgoConfig& c, const LtProblem& lp, cublasLtMatmulAlgo_t& algo) {
  cublasStatus_t s = lt().cublasLtMatmulAlgoInit(lt_handle(), CUBLAS_COMPUTE_32F, CUDA_R_32F, lp.a.type, lp.b.type,
                                            lp.c.type, lp.d.type, c.algo, &algo);
  if (s != CUBLAS_STATUS_SUCCESS)
    return "cublaslt: lt().cublasLtMatmulAlgoInit(algo=" + std::to_string(c.algo) + ") failed: " + status_name(s);
  struct Set {
    cublasLtMatmulAlgoConfigAttributes_t attr;
    const void* v;
    size_t n;
    const char* name;
  };
  const Set sets[] = {
      {CUBLASLT_ALGO_CONFIG_TILE_ID, &c.tile, sizeof(c.tile), "tile"},
      {CUBLASLT_ALGO_CONFIG_STAGES_ID, &c.stages, sizeof(c.stages), "stages"},
      {CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &c.splitk, sizeof(c.splitk), "splitk"},
      {CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &c.reduction, sizeof(c.reduction), "red"},
      {CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &c.swizzle, sizeof(c.swizzle), "swizzle"},
      {CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &c.custom, sizeof(c.custom), "custom"},
      {CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &c.cluster, sizeof(c.cluster), "cluster"},
      {CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, &c.inner, sizeof(c.inner), "inner"},
  };
  for (const Set& set : sets) {
    s = lt().cublasLtMatmulAlgoConfigSetAttribute(&algo, set.attr, set.v, set.n);
    if (s != CUBLAS_STATUS_SUCCESS) return std::string("cublaslt: cannot set ") + set.name + ": " + status_name(s);
  }
  return "";
}

uint32_t cap_u32(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr) {
  uint32_t v = 0;
  size_t written = 0;
  if (lt().cublasLtMatmulAlgoCapGetAttribute(&algo, attr, &v, sizeof(v), &written) != CUBLAS_STATUS_SUCCESS) return 1;
  return v == 0 ? 1 : v;
}

struct Checked {
  std::string reason;  // "" = usable
  size_t workspace = 0;
  uint32_t align[4] = {1, 1, 1, 1};  // A, B, C, D minimum pointer alignment in bytes
};

// cublasLtMatmulAlgoCheck plus our own limits (workspace, pointer alignment the heuristic was told about).
Checked check_algo(const cublasLtMatmulAlgo_t& algo, const LtDescs& ds) {
  Checked r;
  cublasLtMatmulHeuristicResult_t res{};
  cublasStatus_t s = lt().cublasLtMatmulAlgoCheck(lt_handle(), ds.op, ds.a, ds.b, ds.c, ds.d, &algo, &res);
  if (s != CUBLAS_STATUS_SUCCESS) {
    r.reason = "cublaslt: cublasLtMatmulAlgoCheck rejects the algorithm: " + status_name(s);
    return r;
  }
  r.workspace = res.workspaceSize;
  if (r.workspace > kMaxWorkspace)
    r.reason = "cublaslt: algorithm needs " + std::to_string(r.workspace) + " bytes of workspace (limit " +
               std::to_string(kMaxWorkspace) + ")";
  const cublasLtMatmulAlgoCapAttributes_t caps[4] = {
      CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i) {
    r.align[i] = cap_u32(algo, caps[i]);
    if (r.reason.empty() && r.align[i] > ds.told[i])
      r.reason = "cublaslt: algorithm needs " + std::to_string(r.align[i]) + "-byte aligned " + "ABCD"[i] +
                 " (cuBLASLt's operand order; the problem declares " + std::to_string(ds.told[i]) + ")";
  }
  return r;
}

std::vector<cublasLtMatmulHeuristicResult_t> heuristic(const LtDescs& ds, int count) {
  std::vector<cublasLtMatmulHeuristicResult_t> res(count);
  int returned = 0;
  cublasStatus_t s =
      lt().cublasLtMatmulAlgoGetHeuristic(lt_handle(), ds.op, ds.a, ds.b, ds.c, ds.d, ds.pref, count, res.data(), &returned);
  if (s == CUBLAS_STATUS_NOT_SUPPORTED) returned = 0;  // no algorithm for this problem
  else if (s != CUBLAS_STATUS_SUCCESS) lt_fail(s, "cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__);
  res.resize(returned);
  std::erase_if(res, [](const auto& r) { return r.state != CUBLAS_STATUS_SUCCESS; });
  return res;
}

// ---- executable ----

// The separate elementwise epilogue kernel: its NVRTC unit, named after the chain (FNV-1a of the source's chain type).
struct EwUnit {
  std::string source, name;
};
EwUnit elementwise_unit(const Problem& p) {
  const std::string chain = epi::chain_type(p) + std::string(dtype_name(p.d.dtype));
  EwUnit u;
  u.name = "gt_epi_ew_" + detail::hex64(detail::fnv1a64(chain));
  u.source = epi::elementwise_source(p, p.d.dtype, u.name);
  return u;
}

std::shared_ptr<const jit::Cubin> compile_elementwise(const Problem& p, const Candidate& c) {
  const EwUnit u = elementwise_unit(p);
  return jit::compile(u.source, u.name, {}, c.str());
}

class LtExecutable final : public Executable {
 public:
  LtExecutable(const Problem& p, const Candidate& c, const LtConfig& cfg, std::shared_ptr<const jit::Cubin> ew)
      : cand_(c), split_(cfg.split), lp_(map_problem(p, split_.epi, split_.fast_accum.value_or(false))), descs_(lp_) {
    if (cublaslt::is_default_config(split_.algo)) {
      auto res = heuristic(descs_, 1);
      if (res.empty()) GT_THROW("cublaslt: the heuristic returns no algorithm for " + p.str());
      algo_ = res[0].algo;
    } else {
      if (!cfg.algo) throw Error(cfg.algo_error);
      if (std::string why = algo_from_config(*cfg.algo, lp_, algo_); !why.empty()) GT_THROW(why + " [" + c.str() + "]");
    }
    Checked ck = check_algo(algo_, descs_);
    if (!ck.reason.empty()) GT_THROW(ck.reason + " [" + c.str() + "]");
    std::memcpy(align_, ck.align, sizeof(align_));
    ws_size_ = ck.workspace;
    if (ws_size_ > 0) {
      // A workspace per stream: cuBLASLt's algorithms use it as scratch during the launch, so launches on two
      // streams must not share one. The first stream's is made here (no allocation in the usual launch).
      ws_ = StreamScratch("cublaslt: an executable with a workspace", c.str(), ws_size_, 0);
      ws_.make_first();
    }
    c_ld_ = lp_.c.ld, c_stride_ = lp_.c.stride;
    d_ld_ = lp_.d.ld, d_stride_ = lp_.d.stride;
    if (split_.epi == EpiMode::separate) {
      const Problem q = intermediate_problem(p);
      // The intermediate is per stream too: launches on two streams must not write one buffer.
      mid_ = StreamScratch("cublaslt: a GEMM + elementwise executable", c.str(),
                           size_t(q.d.batch_stride * (q.batch - 1) + q.m * q.n) * dtype_size(q.d.dtype), 0);
      mid_.make_first();
      if (!ew) ew = compile_elementwise(p, c);
      ew_cubin_ = ew;
      ew_fn_ = jit::load(*ew);
      ew_.in_ld = q.d.ld, ew_.in_bs = q.d.batch_stride, ew_.in_row = q.d.layout == Layout::row;
      ew_.out_ld = p.d.ld, ew_.out_bs = p.d.batch_stride, ew_.out_row = p.d.layout == Layout::row;
      ew_.m = p.m, ew_.n_out = p.n_out(), ew_.batch = p.batch;
    }
    p_ = p;
  }

  void launch(const GemmArgs& args, Stream stream) override {
    GT_REQUIRE(args.a && args.b && args.d, "cublaslt: A, B and D pointers must be set");
    // One launch at a time: the pointers of the bias and the fp8 scales are attributes of the shared matmul
    // descriptor, read when cublasLtMatmul enqueues, and the per-stream buffers are looked up here.
    std::lock_guard<std::mutex> lk(mu_);
    void* mid = split_.epi == EpiMode::separate ? mid_.get(reinterpret_cast<CUstream>(stream)).ws : nullptr;
    void* d = mid ? mid : args.d;
    const void* a = lp_.swapped ? args.b : args.a;
    const void* b = lp_.swapped ? args.a : args.b;
    const void* c = d;
    if (!lp_.c_is_d) {
      GT_REQUIRE(args.c, "cublaslt: C pointer must be set when beta != 0");
      c = args.c;
      // In place (C == D), cuBLASLt needs identical C and D layouts.
      GT_REQUIRE(c != d || (c_ld_ == d_ld_ && c_stride_ == d_stride_),
                 "cublaslt: C == D (in place) needs C and D with the same ld and batch stride");
    }
    const void* ptrs[4] = {a, b, c, d};
    for (int i = 0; i < 4; ++i)
      if (reinterpret_cast<uintptr_t>(ptrs[i]) % align_[i] != 0)
        GT_THROW(std::string("cublaslt: ") + "ABCD"[i] + " pointer (cuBLASLt operand order) not " +
                 std::to_string(align_[i]) + "-byte aligned, as " + cand_.str() + " needs");
    if (lp_.fp8) set_fp8_pointers(args, stream);
    if (lp_.c_null) c = nullptr;
    if (lp_.bias) {
      GT_REQUIRE(args.bias, "cublaslt: epilogue '" + p_.epilogue.key() + "' needs GemmArgs::bias (null)");
      GT_REQUIRE(reinterpret_cast<uintptr_t>(args.bias) % kBiasAlignment == 0,
                 "cublaslt: a fused bias must be " + std::to_string(kBiasAlignment) + "-byte aligned");
      GT_LT(lt().cublasLtMatmulDescSetAttribute(descs_.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &args.bias,
                                           sizeof(args.bias)));
    }
    void* ws = ws_size_ > 0 ? ws_.get(reinterpret_cast<CUstream>(stream)).ws : nullptr;
    GT_LT(lt().cublasLtMatmul(lt_handle(), descs_.op, &lp_.alpha, a, descs_.a, b, descs_.b, &lp_.beta, c, descs_.c, d,
                         descs_.d, &algo_, ws, ws_size_, reinterpret_cast<cudaStream_t>(stream)));
    if (mid) launch_elementwise(args, mid, stream);
  }

  const Candidate& candidate() const override { return cand_; }

 private:
  // The scale pointers follow their operands through the swap (see scale_modes()); amax is zeroed on the stream first,
  // so that its value is this launch's whether or not cuBLASLt's kernels start from zero themselves.
  void set_fp8_pointers(const GemmArgs& args, Stream stream) {
    GT_REQUIRE(args.scale_a && args.scale_b, "cublaslt: an fp8 GEMM needs GemmArgs::scale_a and scale_b (" +
                                                 std::string(scaling_name(p_.scaling)) + " scaling)");
    const float* sa = lp_.swapped ? args.scale_b : args.scale_a;
    const float* sb = lp_.swapped ? args.scale_a : args.scale_b;
    GT_LT(lt().cublasLtMatmulDescSetAttribute(descs_.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof(sa)));
    GT_LT(lt().cublasLtMatmulDescSetAttribute(descs_.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof(sb)));
    if (lp_.d_scale) {
      GT_REQUIRE(args.scale_d, "cublaslt: an e4m3 D needs GemmArgs::scale_d");
      GT_LT(lt().cublasLtMatmulDescSetAttribute(descs_.op, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &args.scale_d,
                                           sizeof(args.scale_d)));
    }
    if (lp_.amax) {
      GT_REQUIRE(args.amax, "cublaslt: a problem with amax needs GemmArgs::amax");
      GT_LT(lt().cublasLtMatmulDescSetAttribute(descs_.op, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, &args.amax,
                                           sizeof(args.amax)));
      GT_CU(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(args.amax), 0, 1, reinterpret_cast<CUstream>(stream)));
    }
  }

  void launch_elementwise(const GemmArgs& args, void* mid, Stream stream) {
    epi::EwParams e = ew_;
    e.in = mid;
    e.out = args.d;
    epi::EpiParams ep = epi::make_params(p_, args);
    const int64_t inner = e.out_row ? e.n_out : e.m, outer = e.out_row ? e.m : e.n_out;
    const unsigned gx = unsigned(std::min<int64_t>((inner + 255) / 256, 1024));
    const unsigned gy = unsigned(std::min<int64_t>(outer, 65535));
    const unsigned gz = unsigned(std::min<int64_t>(e.batch, 65535));
    void* params[] = {&e, &ep};
    GT_CU(cuLaunchKernel(ew_fn_, gx, gy, gz, 256, 1, 1, 0, reinterpret_cast<CUstream>(stream), params, nullptr));
  }

  Candidate cand_;
  CandidateConfig split_;
  LtProblem lp_;
  LtDescs descs_;
  cublasLtMatmulAlgo_t algo_{};
  uint32_t align_[4] = {1, 1, 1, 1};
  StreamScratch ws_;  // the workspace of each stream launched on (ws_size_ > 0)
  std::mutex mu_;
  size_t ws_size_ = 0;
  int64_t c_ld_ = 0, c_stride_ = 0, d_ld_ = 0, d_stride_ = 0;
  Problem p_;
  // separate epilogue
  StreamScratch mid_;  // the GEMM's M x N output, per stream (the separate epilogue's input)
  std::shared_ptr<const jit::Cubin> ew_cubin_;
  CUfunction ew_fn_ = nullptr;
  epi::EwParams ew_;
};

// ---- backend ----

class CublasLtBackend final : public Backend {
 public:
  std::string name() const override { return kName; }
  // The algorithms are cuBLASLt's; a separate epilogue is an NVRTC kernel.
  std::string fingerprint() const override {
    return name() + "@" + cublaslt_version() + "+nvrtc" + jit::nvrtc_version();
  }

  std::string supports(const ResolvedProblem& p, const DeviceInfo& dev) const override {
    return problem_reason(p, dev);
  }

  std::string path(const ResolvedProblem& rp, const BackendAnalysis&, const DeviceInfo& dev) const override {
    const Problem& p = rp;
    if (!fp8_problem(p) || !problem_reason(rp, dev).empty()) return "";
    int32_t ma, mb;
    scale_modes(p.scaling, ma, mb);
    std::string s = dn(p.a.dtype) + " x " + dn(p.b.dtype) + ", " + std::string(scaling_name(p.scaling)) + " scales (";
    s += ma == mb ? std::string(scale_mode_name(ma)) : std::string("A ") + scale_mode_name(ma) + ", B " + scale_mode_name(mb);
    s += ")";
    if (p.d.dtype == DType::e4m3) s += p.amax ? ", D scaled by scale_d, amax" : ", D scaled by scale_d";
    return s;
  }

  std::vector<Candidate> enumerate(const ResolvedProblem& rp, const BackendAnalysis&,
                                   const DeviceInfo& dev) const override {
    const Problem& p = rp;
    if (!problem_reason(rp, dev).empty()) return {};
    (void)lt_handle();  // throws NoGpuError without a GPU: the heuristic needs the device
    // fp8: the algorithms of the problem's accumulation mode (fast_accum=1 for fp8_accum=fast, else 0).
    std::optional<bool> accum;
    if (fp8_problem(p)) accum = p.fp8_accum == Fp8Accum::fast;
    auto all = [&](EpiMode mode) { return list_algos(p, mode, accum); };
    if (p.epilogue.empty()) return all(EpiMode::none);
    cublasLtEpilogue_t ep;
    if (!native_epilogue(p, ep).empty()) return all(EpiMode::separate);
    std::vector<Candidate> out = all(EpiMode::fused);
    if (p.d.dtype != DType::e4m3)  // the unfused baseline (an e4m3 D cannot run it: see problem_reason)
      out.push_back({kName, CandidateConfig{cublaslt::kDefaultConfig, accum, EpiMode::separate}.str()});
    return out;
  }

  std::shared_ptr<const BackendConfig> parse(const Candidate& c) const override {
    if (c.backend != kName) throw Error("cublaslt: candidate of backend '" + c.backend + "'");
    LtConfig cfg;
    cfg.split = CandidateConfig::parse(c.config);  // throws on a bad suffix
    if (!cublaslt::is_default_config(cfg.split.algo)) {
      try {
        cfg.algo = AlgoConfig::parse(cfg.split.algo);
      } catch (const Error& e) {
        cfg.algo_error = e.what();
      }
    }
    return std::make_shared<const BackendConfigOf<LtConfig>>(std::move(cfg));
  }

  // A problem this backend cannot run is named before anything about the config.
  std::string parse_error_reason(const ResolvedProblem& p, const DeviceInfo& dev,
                                 const std::string& error) const override {
    if (std::string why = problem_reason(p, dev); !why.empty()) return why;
    return error;
  }

  using Backend::compile, Backend::enumerate, Backend::load, Backend::path, Backend::validate;  // single calls

  std::string validate(const ResolvedProblem& rp, const BackendAnalysis& an, const Candidate& c,
                       const BackendConfig& parsed, const DeviceInfo& dev) const override {
    const Problem& p = rp;
    if (std::string why = problem_reason(rp, dev); !why.empty()) return why;
    const LtConfig& cfg = config_of<LtConfig>(parsed, kName);
    if (std::string why = config_reason(p, cfg.split); !why.empty()) return why;
    if (cublaslt::is_default_config(cfg.split.algo)) return "";
    if (!cfg.algo) return cfg.algo_error;
    // Whether cuBLASLt accepts the algorithm for this problem can only be asked with a GPU; without one the syntax
    // is all we can check (load() checks again).
    if (!gpu_available()) return "";
    const LtProblem lp = map_problem(p, cfg.split.epi, cfg.split.fast_accum.value_or(false));
    LtDescs ds(lp);
    cublasLtMatmulAlgo_t algo{};
    if (std::string why = algo_from_config(*cfg.algo, lp, algo); !why.empty()) return why;
    return check_algo(algo, ds).reason;
  }

  CompileResult compile(const ResolvedProblem& rp, const BackendAnalysis& an, const Candidate& c,
                        const BackendConfig& parsed, const DeviceInfo& dev) const override {
    const auto t0 = std::chrono::steady_clock::now();
    const Problem& p = rp;
    if (std::string why = problem_reason(rp, dev); !why.empty()) GT_THROW(why);
    const LtConfig& cfg = config_of<LtConfig>(parsed, kName);
    if (std::string why = config_reason(p, cfg.split); !why.empty()) GT_THROW(why);
    if (!cfg.algo_error.empty()) throw Error(cfg.algo_error);
    CompileResult r;  // cuBLASLt kernels ship with the library; only a separate epilogue is compiled
    if (cfg.split.epi == EpiMode::separate) r = jit_compile_result(compile_elementwise(p, c));
    r.compile_ms = ms_since(t0);
    return r;
  }

  std::unique_ptr<Executable> load(const ResolvedProblem& rp, const BackendAnalysis& an, const Candidate& c,
                                   const BackendConfig& parsed, const CompileResult& compiled) const override {
    const Problem& p = rp;
    DeviceInfo dev;  // arch was checked by supports(); only the problem matters here
    if (std::string why = problem_reason(rp, dev); !why.empty()) GT_THROW(why);
    GT_REQUIRE(c.backend == kName, "cublaslt: cannot load a candidate of backend '" + c.backend + "'");
    const LtConfig& cfg = config_of<LtConfig>(parsed, kName);
    if (std::string why = config_reason(p, cfg.split); !why.empty()) GT_THROW(why);
    return std::make_unique<LtExecutable>(p, c, cfg, std::static_pointer_cast<const jit::Cubin>(compiled.artifact));
  }

 private:
  friend std::string gemmtune::cublaslt_mapping(const Problem&, const std::string&);
  // "" when the config's suffixes fit the problem: its epilogue mode the chain, its fast_accum the inputs and their
  // accumulation mode.
  static std::string config_reason(const Problem& p, const CandidateConfig& cfg) {
    if (cfg.fast_accum && !fp8_problem(p))
      return "cublaslt: fast_accum applies to fp8 inputs (A and B are " + dn(p.a.dtype) + "): drop ',fast_accum=" +
             (*cfg.fast_accum ? "1" : "0") + "'";
    if (const bool fast = p.fp8_accum == Fp8Accum::fast; fp8_problem(p) && cfg.fast_accum.value_or(false) != fast)
      return std::string("cublaslt: fast_accum=") + (fast ? "0" : "1") + " is not the problem's fp8_accum=" +
             std::string(fp8_accum_name(p.fp8_accum)) + ": use ',fast_accum=" + (fast ? "1" : "0") + "'";
    const EpiMode mode = cfg.epi;
    if (p.epilogue.empty())
      return mode == EpiMode::none ? "" : "cublaslt: the config has ',epi=...' but the problem has no epilogue";
    if (mode == EpiMode::none)
      return "cublaslt: epilogue '" + p.epilogue.key() + "' needs ',epi=fused' or ',epi=separate' in the config";
    cublasLtEpilogue_t ep;
    if (mode == EpiMode::fused)
      if (std::string why = native_epilogue(p, ep); !why.empty())
        return "cublaslt: epi=fused cannot run '" + p.epilogue.key() + "': " + why + " (use epi=separate)";
    if (mode == EpiMode::separate && p.d.dtype == DType::e4m3)
      return "cublaslt: epi=separate cannot produce an e4m3 D: the elementwise pass does not apply scale_d, "
             "saturation or amax (use epi=fused)";
    return "";
  }

  // Candidates from the heuristic for the GEMM of `mode` (and fast accumulation, for fp8), best first, each config
  // tagged with both.
  static std::vector<Candidate> list_algos(const Problem& p, EpiMode mode, std::optional<bool> fast_accum) {
    const LtProblem lp = map_problem(p, mode, fast_accum.value_or(false));
    LtDescs ds(lp);
    std::vector<Candidate> out;
    const auto res = heuristic(ds, kHeuristicCount);
    if (res.empty()) return out;
    auto config = [&](const std::string& algo) { return CandidateConfig{algo, fast_accum, mode}.str(); };
    out.push_back({kName, config(cublaslt::kDefaultConfig)});
    std::vector<std::string> seen;
    for (size_t i = 0; i < res.size(); ++i) {
      std::string cfg = config_of(res[i].algo).str();
      bool dup = false;
      for (const auto& s : seen) dup = dup || s == cfg;
      seen.push_back(cfg);
      // res[0] is what `default` resolves to: listing it again would time the same kernel twice.
      if (dup || i == 0) continue;
      if (!check_algo(res[i].algo, ds).reason.empty()) continue;
      out.push_back({kName, config(cfg)});
    }
    return out;
  }
};

}  // namespace

std::shared_ptr<Backend> make_cublaslt_backend() { return std::make_shared<CublasLtBackend>(); }

std::string cublaslt_mapping(const Problem& p0, const std::string& config) {
  const ResolvedProblem rp = resolve(p0);
  const Problem& p = rp;
  if (std::string why = problem_reason(rp, DeviceInfo{}); !why.empty()) throw Error(why);
  const CandidateConfig cfg = CandidateConfig::parse(config);
  if (std::string why = CublasLtBackend::config_reason(p, cfg); !why.empty()) throw Error(why);
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

std::string cublaslt_version() {
  // cuBLASLt in the process already (loaded by this backend, or PyTorch's): its own version, at no cost.
  if (auto* fn = reinterpret_cast<decltype(&::cublasLtGetVersion)>(lt_library().resident_symbol("cublasLtGetVersion")))
    return version_string(fn());
  // Not loaded: the one this process would load is the toolkit's whose headers it was built with.
  return version_string(CUBLAS_VERSION);
}

std::string cublaslt_library_version() { return version_string(lt().cublasLtGetVersion()); }

}  // namespace gemmtune
