#pragma once
// Test-only kernels that fail on the GPU the ways a broken candidate can (the worker's fault injection,
// src/tuner/fault_injection.h): each leaves the CUDA context with a sticky error, hangs, or writes where it must not.
namespace gemmtune::test {

// An illegal instruction (CUDA_ERROR_ILLEGAL_INSTRUCTION on sm_90).
__device__ __forceinline__ void fault_trap() { asm volatile("trap;"); }

// A load from an address no allocation maps (CUDA_ERROR_ILLEGAL_ADDRESS).
__device__ __forceinline__ void fault_illegal_address(unsigned* out) {
  const unsigned* bad = reinterpret_cast<const unsigned*>(0x10ull);
  unsigned v;
  asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(bad));
  *out = v;
}

// A 16-byte vector load from an odd address inside a live allocation (CUDA_ERROR_MISALIGNED_ADDRESS).
__device__ __forceinline__ void fault_misaligned(const char* live, unsigned* out) {
  unsigned a, b, c, d;
  asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "l"(live + 1));
  *out = a ^ b ^ c ^ d;
}

// Never returns (the tuner's per-candidate deadline must end it).
__device__ __forceinline__ void fault_hang() {
  for (;;) asm volatile("nanosleep.u32 1000000;");
}

// Zeroes `n` bytes at `p` (p: just outside an output, in its guard region).
__device__ __forceinline__ void fault_write(char* p, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) p[i] = 0;
}

}  // namespace gemmtune::test
