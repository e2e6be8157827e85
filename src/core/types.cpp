#include "gemmtune/types.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace gemmtune {

namespace {
std::string lower(std::string_view s) {
  std::string r(s);
  std::transform(r.begin(), r.end(), r.begin(), [](unsigned char c) { return std::tolower(c); });
  return r;
}
}  // namespace

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    case DType::f32: return "f32";
    case DType::e4m3: return "e4m3";
    case DType::e5m2: return "e5m2";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  const std::string v = lower(s);
  if (v == "bf16" || v == "bfloat16") return DType::bf16;
  if (v == "f16" || v == "fp16" || v == "half" || v == "float16") return DType::f16;
  if (v == "f32" || v == "fp32" || v == "float" || v == "float32") return DType::f32;
  if (v == "e4m3" || v == "fp8_e4m3" || v == "float8_e4m3fn") return DType::e4m3;
  if (v == "e5m2" || v == "fp8_e5m2" || v == "float8_e5m2") return DType::e5m2;
  return std::nullopt;
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::bf16:
    case DType::f16: return 2;
    case DType::f32: return 4;
    case DType::e4m3:
    case DType::e5m2: return 1;
  }
  return 0;
}

std::string_view scaling_name(Scaling s) {
  switch (s) {
    case Scaling::none: return "none";
    case Scaling::tensor: return "tensor";
    case Scaling::row: return "row";
    case Scaling::block: return "block";
  }
  return "?";
}

std::optional<Scaling> parse_scaling(std::string_view s) {
  const std::string v = lower(s);
  if (v == "none") return Scaling::none;
  if (v == "tensor" || v == "tensorwise") return Scaling::tensor;
  if (v == "row" || v == "rowwise") return Scaling::row;
  if (v == "block" || v == "blockwise") return Scaling::block;
  return std::nullopt;
}

std::string_view fp8_accum_name(Fp8Accum a) { return a == Fp8Accum::fast ? "fast" : "exact"; }

std::optional<Fp8Accum> parse_fp8_accum(std::string_view s) {
  const std::string v = lower(s);
  if (v == "exact") return Fp8Accum::exact;
  if (v == "fast") return Fp8Accum::fast;
  return std::nullopt;
}

std::string_view grouping_name(Grouping g) {
  switch (g) {
    case Grouping::none: return "none";
    case Grouping::contiguous: return "contiguous";
    case Grouping::masked: return "masked";
  }
  return "?";
}

std::optional<Grouping> parse_grouping(std::string_view s) {
  if (s == "none") return Grouping::none;
  if (s == "contiguous") return Grouping::contiguous;
  if (s == "masked") return Grouping::masked;
  return std::nullopt;
}

std::string_view layout_name(Layout l) { return l == Layout::row ? "row" : "col"; }

std::optional<Layout> parse_layout(std::string_view s) {
  const std::string v = lower(s);
  if (v == "row" || v == "r" || v == "rowmajor" || v == "row-major") return Layout::row;
  if (v == "col" || v == "c" || v == "column" || v == "colmajor" || v == "col-major" || v == "column-major")
    return Layout::col;
  return std::nullopt;
}

}  // namespace gemmtune
