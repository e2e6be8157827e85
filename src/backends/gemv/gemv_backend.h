#pragma once
// The gemv backend: skinny GEMMs (M <= 8 or N <= 8: decode tokens against weights) on the CUDA cores, a streaming
// kernel template (kernels/gemv/gemv_kmajor.cuh) JIT-compiled by NVRTC for the device's architecture (8.0+).
#include <memory>

#include "backends/backend.h"

namespace gemmtune {

std::shared_ptr<Backend> make_gemv_backend();

}  // namespace gemmtune
