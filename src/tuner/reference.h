#pragma once
// GPU helpers for verification: random normal fill, the fp32 SIMT reference GEMM, and the normalized-error compare.
// JIT-compiled from kernels/reference/gemm_ref.cuh (one small unit per dtype combination, cached like any kernel).
#include <cstdint>

#include "gemmtune/problem.h"
#include "gemmtune/types.h"

namespace gemmtune {

// Fills `count` elements of `dtype` at `ptr` with N(0, scale^2) values (deterministic per seed).
void fill_normal(void* ptr, DType dtype, int64_t count, uint64_t seed, float scale, Stream s);
// Fills with a NaN bit pattern of the dtype (poison: an unwritten output fails verification).
void fill_nan(void* ptr, DType dtype, int64_t count, Stream s);

// ref (packed row-major fp32, batch*M*n_out()) = the epilogue chain of alpha*A*B + beta*C for problem p, reading the
// epilogue's operands from args (bias, residual, scales).
void reference_gemm(const Problem& p, const GemmArgs& args, float* ref, Stream s);

struct ErrorStats {
  double normalized = 0;  // ||out - ref|| / ||ref|| over finite outputs
  uint64_t nonfinite = 0;  // NaN/inf outputs (a correct kernel has none on random normal inputs)
  bool ok(double tol) const { return nonfinite == 0 && normalized <= tol && normalized == normalized; }
};
ErrorStats compare_to_reference(const Problem& p, const void* d, const float* ref, Stream s);

// Busy-waits the GPU for about `ns` nanoseconds on stream s.
void gpu_spin(uint64_t ns, Stream s);

// Source of a reference JIT unit: "util" (fills, compares, epilogue, spin) or "gemm_<abc>" (a, b, c in 0=bf16,
// 1=f16, 2=f32). Exposed for the compile test.
std::string reference_unit_source(const std::string& unit);

// Elements an operand spans in memory, batches included (for allocation).
int64_t operand_span(const Problem& p, char which);

}  // namespace gemmtune
