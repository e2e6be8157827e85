#pragma once
// The gemv backend: skinny GEMMs (M <= 16 or N <= 16: decode tokens against weights), streaming kernel templates on
// the CUDA cores (kernels/gemv/gemv_kmajor.cuh) and on mma.sync (gemv_mma.cuh), JIT-compiled by NVRTC for the
// device's architecture (8.0+), with loads as wide as the problem's pitches and pointers allow (16 down to 2 bytes).
#include <memory>
#include <string>

#include "backends/backend.h"

namespace gemmtune {

std::shared_ptr<Backend> make_gemv_backend();
// The JIT unit a config of the gemv backend compiles for a problem (what the kernel cache keys on; for tests and
// dumps). Throws gemmtune::Error on a config line that does not parse.
std::string gemv_jit_source(const Problem& p, const std::string& config);

}  // namespace gemmtune
