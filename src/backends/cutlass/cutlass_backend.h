#pragma once
// The cutlass backend (optional): CUTLASS 3.x GemmUniversal kernels for sm_90a, one instantiation per config
// (cutlass_config.h), generated (cutlass_codegen.h) and compiled by nvcc into a shared object with a C launcher
// (cutlass_abi.h), cached by content (cutlass_nvcc.h). Unavailable without CUTLASS headers or nvcc. A compile takes
// tens of seconds, so the tuner times only what is built already unless asked to wait (slow_compile()).
// Takes bf16 / f16 A and B in either layout, or e4m3 / e5m2 K-major A and B with tensor or row scaling; fp32
// accumulation (fp8: the problem's fp8_accum picks the schedule, promoted every 128 K or the FP8FastAccum one);
// D bf16 / f16 / f32 in either layout (C in D's layout); batches; alpha and beta; the epilogue ops bias, bias_row,
// the activations, row_scale, col_scale and residual in any order (an epilogue visitor tree).
// Refuses, naming why: grouped problems, GLUs, block scaling, fp8 D, amax, a broadcast operand (batch stride 0) and
// any operand TMA cannot read (16-byte aligned base, ld, batch stride and contiguous extent).
#include <memory>
#include <string>

#include "backends/backend.h"

namespace gemmtune {

std::shared_ptr<Backend> make_cutlass_backend();
// The translation unit a config of the cutlass backend compiles for a problem (for tests and dumps). Throws
// gemmtune::Error on a config line that does not parse or a problem the backend does not support.
std::string cutlass_unit_source(const Problem& p, const std::string& config);

}  // namespace gemmtune
