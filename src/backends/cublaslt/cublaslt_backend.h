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
// - fp8 (e4m3/e5m2 A and B, any pairing but e5m2 x e5m2; cuBLASLt's "TN" form, which gemmtune's K-major fp8 layouts
//   give for either D layout): tensor scaling maps to SCALAR_32F scales, row to OUTER_VEC_32F (sm_90), block to
//   VEC128_32F on A and BLK128x128_32F on B (sm_90). The scale modes and pointers follow their operands through the
//   A/B swap. cuBLASLt's 128x128 scales have a pitch of ceil(K/128) rounded up to 4; gemmtune's are packed, so block
//   scaling is taken only where the two agree (ceil(K/128) % 4 == 0 or N <= 128). An e4m3 D gets D_SCALE_POINTER
//   (scale_d) and, with Problem::amax, AMAX_D_POINTER (zeroed on the stream before each launch); its chain must fuse
//   in cuBLASLt (the elementwise pass applies no output scale). Every matrix needs 16-byte aligned rows. A 16-bit A
//   with an fp8 B has no cuBLASLt kernel and is refused.
// - fp8 configs carry ",fast_accum=0|1" (CUBLASLT_MATMUL_DESC_FAST_ACCUM; see cublaslt_config.h), the problem's
//   fp8_accum: enumerate() lists the heuristic's algorithms of that mode only (exact: 0, fast: 1; block scaling is
//   exact by definition) and a config of the other mode is refused.
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

// cuBLASLt's version as "major.minor.patch", e.g. "13.1.0", for the result-cache key, without loading cuBLASLt (a
// cache hit does not need it): the version of the cuBLASLt the process has loaded, else of the toolkit this library was
// built with (the cuBLASLt it loads). Needs no GPU.
std::string cublaslt_version();
// The version the cuBLASLt library itself reports (cublasLtGetVersion), loading it; throws gemmtune::Error when it
// cannot be loaded. Needs no GPU.
std::string cublaslt_library_version();

}  // namespace gemmtune
