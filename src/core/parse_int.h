#pragma once
// Integers in config lines and option strings: the whole text, in range, or a message. sscanf("%d") and std::stoi
// overflow silently (99999999999 became 1215752191) or stop at the first non-digit ("4abc" read as 4).
#include <charconv>
#include <climits>
#include <cstdint>
#include <string>
#include <string_view>

namespace gemmtune::detail {

// "" with `out` set when all of `text` is a decimal integer (an optional '-', digits) in [lo, hi]; else a phrase to
// follow the text in a message: "is not an integer", "is out of range (at most 1024)".
inline std::string parse_int(std::string_view text, int64_t lo, int64_t hi, int64_t& out) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || (ec != std::errc() && ec != std::errc::result_out_of_range) || p != end)
    return "is not an integer";
  const bool below = ec == std::errc::result_out_of_range ? text[0] == '-' : v < lo;
  if (below) return "is out of range (at least " + std::to_string(lo) + ")";
  if (ec == std::errc::result_out_of_range || v > hi) return "is out of range (at most " + std::to_string(hi) + ")";
  out = v;
  return "";
}

// parse_int into an int, over the whole int range unless told otherwise.
inline std::string parse_int(std::string_view text, int& out, int64_t lo = INT_MIN, int64_t hi = INT_MAX) {
  int64_t v = 0;
  std::string why = parse_int(text, lo, hi, v);
  if (why.empty()) out = int(v);
  return why;
}

}  // namespace gemmtune::detail
