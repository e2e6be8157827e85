#pragma once
// The triton backend (optional): matmul templates written in Triton (kernels/triton/: a persistent TMA template and
// a masked-pointer one for any alignment, the epilogue chain compiled in), compiled ahead of time to sm_90a cubins by
// a helper Python process (triton_compile.h), loaded with the driver API and launched with the argument list of
// Triton's own launcher, checked against the compiled kernel's. Unavailable, with the reason, where
// `$GEMMTUNE_PYTHON -c 'import triton'` (default python3) fails.
#include <memory>

#include "backends/backend.h"

namespace gemmtune {

std::shared_ptr<Backend> make_triton_backend();

}  // namespace gemmtune
