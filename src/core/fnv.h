#pragma once
// 64-bit FNV-1a: a fast, stable, non-cryptographic hash for names (kernel names, result-cache file names). Stable
// across builds and platforms, so a name computed today finds the file written yesterday. Not for integrity: the
// kernel cache keys by SHA-256 (src/jit/sha256.h).
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace gemmtune::detail {

inline constexpr uint64_t kFnv1aOffset = 14695981039346656037ull;
inline constexpr uint64_t kFnv1aPrime = 1099511628211ull;

// FNV-1a of `s`, starting from `basis` (the standard offset basis by default; another basis gives an independent
// lane, e.g. for a 128-bit name).
inline uint64_t fnv1a64(std::string_view s, uint64_t basis = kFnv1aOffset) {
  uint64_t h = basis;
  for (unsigned char c : s) h = (h ^ c) * kFnv1aPrime;
  return h;
}

// 16 lowercase hex digits.
inline std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace gemmtune::detail
