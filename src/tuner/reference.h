#pragma once
// GPU helpers for verification: random normal fill, the fp32 SIMT reference GEMM, and the normalized-error compare.
// JIT-compiled from kernels/reference/gemm_ref.cuh (one small unit per dtype combination, cached like any kernel).
#include <cstdint>

#include "gemmtune/problem.h"
#include "gemmtune/types.h"

namespace gemmtune {

// Fills `count` elements of `dtype` at `ptr` with N(0, scale^2) values (deterministic per seed).
void fill_normal(void* ptr, DType dtype, int64_t count, uint64_t seed, float scale, Stream s);
// Fills `count` fp32 values uniform in [lo, hi) (deterministic per seed): the dequantization scales.
void fill_uniform(float* ptr, int64_t count, uint64_t seed, float lo, float hi, Stream s);
// Fills with a NaN bit pattern of the dtype (poison: an unwritten output fails verification).
void fill_nan(void* ptr, DType dtype, int64_t count, Stream s);

// ref (packed row-major fp32, batch*M*n_out()) = the epilogue chain of alpha*A*B + beta*C for problem p, reading the
// epilogue's operands from args (bias, residual, scales). A grouped problem reads its routing from args.group_rows
// (required; contiguous ends must not decrease): each row takes its group's B (and B's row or block scales, per
// group); the rows of no group hold no result (compare_to_reference skips them).
void reference_gemm(const Problem& p, const GemmArgs& args, float* ref, Stream s);

struct ErrorStats {
  double normalized = 0;  // ||out - ref|| / ||ref|| over finite outputs
  uint64_t nonfinite = 0;  // NaN/inf outputs (a correct kernel has none on random normal inputs)
  float ref_amax = 0;      // max |ref| (before an fp8 D's scale): what a kernel's amax output must match
  uint64_t outside_writes = 0;  // grouped: elements of D outside every group that no longer hold the poison
  bool ok(double tol) const {
    return nonfinite == 0 && outside_writes == 0 && normalized <= tol && normalized == normalized;
  }
};
// An fp8 D is compared with saturate(ref * scale_d[0]) (scale_d: device pointer, required for an fp8 D). A grouped
// problem compares the rows of its groups only (group_rows: the routing on the device, required), and counts the
// elements of every other row that differ from fill_nan's poison: D must have been poisoned before the kernel ran.
ErrorStats compare_to_reference(const Problem& p, const void* d, const float* ref, Stream s,
                                const float* scale_d = nullptr, const int32_t* group_rows = nullptr);

// Where operand `which` ('A', 'B', 'C', 'D') keeps its elements: count() matrices of `outer` rows (in its storage
// order) of `inner` elements, rows `ld` apart, matrices `bs` apart, spanning `span` elements from its pointer.
// disjoint: no two elements of it share an address (then every other element of its allocation is a gap).
struct OperandGeometry {
  int64_t outer = 0, inner = 0, ld = 0, bs = 0, count = 1, span = 0;
  bool disjoint = true;
};
OperandGeometry operand_geometry(const Problem& p, Which which);
// The elements [lo, hi) around `data` (lo < 0: a guard region before the operand) that belong to no matrix of `g`
// get fill_nan's poison; count_outside counts those that no longer hold it (synchronizes). Both need g.disjoint.
void poison_outside(void* data, DType dtype, int64_t lo, int64_t hi, const OperandGeometry& g, Stream s);
uint64_t count_outside(const void* data, DType dtype, int64_t lo, int64_t hi, const OperandGeometry& g, Stream s);

// Busy-waits the GPU for about `ns` nanoseconds on stream s.
void gpu_spin(uint64_t ns, Stream s);

// Source of a reference JIT unit: "util" (fills, compares, epilogue, spin) or "gemm_<abc>" (a, b, c in 0=bf16,
// 1=f16, 2=f32, 3=e4m3, 4=e5m2), "gemm_<abc>s" for a scaled GEMM. Exposed for the compile test.
std::string reference_unit_source(const std::string& unit);

// Elements an operand spans in memory, batches included (for allocation).
int64_t operand_span(const Problem& p, Which which);

}  // namespace gemmtune
