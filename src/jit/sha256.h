#pragma once
// SHA-256 (FIPS 180-4) for content-addressed cache keys. Small and dependency-free; speed is irrelevant here
// (sources and headers are tens of KB).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gemmtune::jit {

class Sha256 {
 public:
  Sha256();
  Sha256& update(const void* data, std::size_t n);
  Sha256& update(std::string_view s) { return update(s.data(), s.size()); }
  // Length-prefixed field: keeps ("ab","c") and ("a","bc") apart when several fields are hashed in a row.
  Sha256& field(std::string_view s);
  std::array<std::uint8_t, 32> digest();  // finalizes; the object must not be updated afterwards
  std::string hex_digest();

 private:
  void block(const std::uint8_t* p);
  std::array<std::uint32_t, 8> h_;
  std::array<std::uint8_t, 64> buf_{};
  std::size_t buf_len_ = 0;
  std::uint64_t total_ = 0;
};

std::string sha256_hex(std::string_view s);

}  // namespace gemmtune::jit
