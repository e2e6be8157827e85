#pragma once
// The element type code the JIT kernels take for a dtype (kernels/common/dtype_codes.cuh): the one mapping the
// backends and the reference kernels share.
#include "common/dtype_codes.cuh"
#include "gemmtune/types.h"

namespace gemmtune {

constexpr int kernel_dtype_code(DType t) {
  switch (t) {
    case DType::bf16: return gt::kBF16;
    case DType::f16: return gt::kF16;
    case DType::f32: return gt::kF32;
    case DType::e4m3: return gt::kE4M3;
    case DType::e5m2: return gt::kE5M2;
  }
  return gt::kF32;
}

}  // namespace gemmtune
