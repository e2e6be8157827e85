#pragma once
// A cuBLASLt candidate loaded: descriptors, algorithm and workspace made once, a launch that sets the pointers and
// runs cublasLtMatmul, and for epi=separate the elementwise epilogue kernel after it.
#include <memory>

#include "backends/backend.h"
#include "backends/cublaslt/cublaslt_config.h"
#include "jit/jit.h"

namespace gemmtune::cublaslt {

// The separate elementwise epilogue kernel of `p`'s chain (NVRTC; `c` names the candidate in errors).
std::shared_ptr<const jit::Cubin> compile_elementwise(const Problem& p, const Candidate& c);

// `ew`: the elementwise kernel compile() made for epi=separate, or null (then compiled here). Throws gemmtune::Error
// when cuBLASLt refuses the algorithm for `p`.
std::unique_ptr<Executable> make_executable(const Problem& p, const Candidate& c, const LtConfig& cfg,
                                            std::shared_ptr<const jit::Cubin> ew);

}  // namespace gemmtune::cublaslt
