#pragma once
// The cuBLASLt backend ("cublaslt"): candidates are cuBLASLt algorithms from its heuristic, named by their config
// attributes (see cublaslt_config.h) so that a winner can be pinned and reloaded. Nothing is compiled.
//
// NOTES:
// - cuBLASLt is column-major. A row-major D is computed as the column-major Dᵀ = Bᵀ·Aᵀ (A and B swap roles); all
//   matrix layouts stay CUBLASLT_ORDER_COL, the order every matmul kernel accepts. C has no transpose flag in
//   cuBLASLt, so when C is read (beta != 0) it must have D's layout and dtype.
// - The heuristic is asked for algorithms that work with 16-byte aligned pointers; launch() checks each pointer
//   against the loaded algorithm's own minimum alignment and throws rather than run it misaligned.
// - Epilogues: bias, relu, gelu_tanh and bias+activation map to cuBLASLt's own epilogue ("<algo>,epi=fused"); any
//   chain can run as the GEMM into an executable-owned M x N workspace plus a JIT-compiled elementwise kernel
//   ("<algo>,epi=separate", kernels/epilogue/elementwise.cuh): the unfused baseline.
// - One cublasLt handle per process (the primary context of GEMMTUNE_DEVICE); descriptors, the algorithm and the
//   workspace are made once per Executable, in load().
#include <memory>
#include <string>

#include "backends/backend.h"

namespace gemmtune {

std::shared_ptr<Backend> make_cublaslt_backend();

// How the backend hands `p` to cuBLASLt under a candidate config (as enumerate() prints it), as one line of
// "key=value" fields: swapped (A and B exchanged for a row-major D), transa/transb, each matrix's type, rows x cols and
// ld in cuBLASLt's column-major terms, and for fp8 the scale mode of cuBLASLt's A and B with the GemmArgs pointer each
// reads, fast_accum, d_scale and amax. For tests and debugging; needs no GPU. Throws gemmtune::Error when the backend
// refuses the problem or the config.
std::string cublaslt_mapping(const Problem& p, const std::string& config);

// cublasLtGetVersion() as "major.minor.patch", e.g. "13.0.2": part of the result-cache key. Needs no GPU.
std::string cublaslt_version();

}  // namespace gemmtune
