#pragma once
// Checked 64-bit arithmetic for sizes, strides, spans and config products. Every value that comes from a user, a
// suite or a cache file can be near INT64_MAX, where a plain `*` or `+` is undefined behaviour and in practice wraps
// to a small or negative number that then passes a range check. These return std::nullopt on overflow instead.
#include <cstdint>
#include <optional>

namespace gemmtune::detail {

inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<int64_t> checked_add(std::optional<int64_t> a, std::optional<int64_t> b) {
  return a && b ? checked_add(*a, *b) : std::nullopt;
}

inline std::optional<int64_t> checked_mul(std::optional<int64_t> a, std::optional<int64_t> b) {
  return a && b ? checked_mul(*a, *b) : std::nullopt;
}

}  // namespace gemmtune::detail
