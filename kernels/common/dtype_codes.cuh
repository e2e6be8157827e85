#pragma once
// Element type codes of the JIT kernels' template parameters and run-time arguments, read by NVRTC and by the host
// compiler alike (no device code), so the host backends, the reference kernels and the device code name one set.

namespace gt {

enum DTypeCode : int { kBF16 = 0, kF16 = 1, kF32 = 2, kE4M3 = 3, kE5M2 = 4 };

constexpr int dtype_code_bytes(int code) { return code == kF32 ? 4 : code >= kE4M3 ? 1 : 2; }
constexpr bool dtype_code_fp8(int code) { return code == kE4M3 || code == kE5M2; }

}  // namespace gt
