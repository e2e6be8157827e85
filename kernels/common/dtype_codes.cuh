#pragma once
// Element type codes of the JIT kernels' template parameters and run-time arguments, read by NVRTC and by the host
// compiler alike (no device code), so the host backends, the reference kernels and the device code name one set.

namespace gt {

enum DTypeCode : int { kBF16 = 0, kF16 = 1, kF32 = 2 };

constexpr int dtype_code_bytes(int code) { return code == kF32 ? 4 : 2; }

}  // namespace gt
