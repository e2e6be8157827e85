#pragma once
// The problem as cuBLASLt sees it: the column-major LtProblem that a Problem maps to under a candidate config
// (cublaslt_problem.cpp), and what cuBLASLt refuses (cublaslt_rules.cpp). cuBLASLt's types only, no cuBLASLt calls.
#include <cublasLt.h>

#include <cstdint>
#include <string>

#include "backends/cublaslt/cublaslt_config.h"
#include "gemmtune/device.h"
#include "gemmtune/problem.h"

namespace gemmtune::cublaslt {

cudaDataType_t lt_type(DType t);
// A dtype's name for messages.
inline std::string dn(DType t) { return std::string(dtype_name(t)); }

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

inline bool fp8_problem(const Problem& p) { return is_fp8(p.a.dtype) || is_fp8(p.b.dtype); }

// ---- epilogues ----
// cuBLASLt fuses bias (one value per row of its column-major D), ReLU and GELU (tanh approximation) and their
// bias-then-activation combinations. With a row-major D it computes Dᵀ, whose rows are our columns: there our
// per-column bias (the y = x·Wᵀ + b case) is cuBLASLt's bias; with a column-major D our bias_row is. Every other
// chain runs as this GEMM into a workspace plus the separate elementwise kernel (kernels/epilogue/elementwise.cuh):
// the unfused baseline. The config says which: "<algo>,epi=fused" or "<algo>,epi=separate" (cublaslt_config.h).

// The cuBLASLt epilogue for the problem's chain, or "" + why not (then only the separate path runs it).
std::string native_epilogue(const Problem& p, cublasLtEpilogue_t& out);

// The plain GEMM of the separate path: D replaced by a packed M x N intermediate of D's dtype and layout.
Problem intermediate_problem(const Problem& p);

// ---- mapping ----

// cuBLASLt's scale mode for our A and B under the problem's scaling. Its scale tensors follow the operand, not the
// operand's position in its column-major view, so the swap of A and B (row-major D) swaps the modes and pointers and
// nothing else: OUTER_VEC_32F scales "row i of op(A)" and "column j of op(B)", which after the swap are our column n
// (scale_b, N values) and our row m (scale_a, M values).
void scale_modes(Scaling s, int32_t& a, int32_t& b);
const char* scale_mode_name(int32_t m);

// `mode`: fused maps the chain to cuBLASLt's epilogue; separate (or none) maps the plain GEMM into the intermediate.
// `fast_accum`: CUBLASLT_MATMUL_DESC_FAST_ACCUM of an fp8 problem.
LtProblem map_problem(const Problem& p0, EpiMode mode = EpiMode::none, bool fast_accum = false);

// ---- rules ----

// THE validity function of this backend: supports(), validate() and enumerate() all start here. Shapes, pitches and
// batch strides (0 broadcasts an input) are the resolved problem's own check; cuBLASLt takes any for 16-bit types.
std::string problem_reason(const ResolvedProblem& rp, const DeviceInfo& dev);

// "" when the config's suffixes fit the problem: its epilogue mode the chain, its fast_accum the inputs.
std::string config_reason(const Problem& p, const CandidateConfig& cfg);

}  // namespace gemmtune::cublaslt
