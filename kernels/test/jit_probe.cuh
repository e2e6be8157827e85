#pragma once
// Test-only header: proves that a JIT unit can include an embedded header (tests/unit/test_jit.cpp).
namespace gemmtune::test {
template <int kScale>
__device__ __forceinline__ float jit_probe_scale(float x) { return x * kScale; }
}  // namespace gemmtune::test
