#pragma once
// gemmtune's own Hopper backend: TMA + WGMMA warp-specialized GEMM templates (kernels/sm90), JIT-compiled by NVRTC.
#include <memory>

#include "backends/backend.h"

namespace gemmtune {

std::shared_ptr<Backend> make_sm90_backend();

}  // namespace gemmtune
