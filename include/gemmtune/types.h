#pragma once
// Every public header includes this one, so a translation unit below C++20 stops here with a clear message instead
// of an error deep inside a header (the headers use defaulted comparisons and other C++20 features).
#if __cplusplus < 202002L
#error "gemmtune's headers need C++20 (-std=c++20); with CMake, link gemmtune::gemmtune, which requires cxx_std_20"
#endif
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

struct CUstream_st;  // the driver's and runtime's stream type (global scope, as in cuda.h)

namespace gemmtune {

// Element types. e4m3 and e5m2 are the OCP fp8 formats (PyTorch's float8_e4m3fn and float8_e5m2): inputs of scaled
// GEMMs (Problem::scaling) and, for e4m3, an output with a scale (GemmArgs::scale_d).
enum class DType : uint8_t { bf16, f16, f32, e4m3, e5m2 };

std::string_view dtype_name(DType t);              // "bf16", "f16", "f32", "e4m3", "e5m2"
std::optional<DType> parse_dtype(std::string_view);  // also accepts "fp16", "half", "fp32", "float", "bfloat16"
size_t dtype_size(DType t);                         // bytes per element
constexpr bool is_fp8(DType t) { return t == DType::e4m3 || t == DType::e5m2; }

// Storage order of a matrix: row-major (rows contiguous) or column-major.
enum class Layout : uint8_t { row, col };
std::string_view layout_name(Layout l);  // "row" / "col"
std::optional<Layout> parse_layout(std::string_view);  // "row"/"r"/"n"... see problem.cpp

// How fp8 inputs are dequantized (gemmtune/problem.h). none: the inputs are not scaled (16-bit and fp32 GEMMs).
enum class Scaling : uint8_t { none, tensor, row, block };
std::string_view scaling_name(Scaling s);                // "none", "tensor", "row", "block"
std::optional<Scaling> parse_scaling(std::string_view);  // also "tensorwise", "rowwise", "blockwise"

// How a GEMM of fp8 A and B accumulates K (torch._scaled_mm's use_fast_accum). The fp8 tensor-core MMA of Hopper
// keeps fewer bits in its accumulator than fp32 (about 14 mantissa bits): exact promotes the tensor core's partial sums
// into fp32 accumulators at least every 128 K (use_fast_accum=False, torch's default); fast lets the tensor core
// accumulate all of K (use_fast_accum=True). Only kernels of the problem's mode serve it.
enum class Fp8Accum : uint8_t { exact, fast };
std::string_view fp8_accum_name(Fp8Accum a);                // "exact", "fast"
std::optional<Fp8Accum> parse_fp8_accum(std::string_view);  // the names above

// Grouped GEMMs (mixture-of-experts, gemmtune/problem.h): how the rows of A and D are split into groups whose sizes
// are known only on the device. none: a plain (batched) GEMM.
enum class Grouping : uint8_t { none, contiguous, masked };
std::string_view grouping_name(Grouping g);                // "none", "contiguous", "masked"
std::optional<Grouping> parse_grouping(std::string_view);  // the names above

// The stream type of the CUDA driver and runtime (CUstream == cudaStream_t == CUstream_st*).
using Stream = ::CUstream_st*;

}  // namespace gemmtune
