#include "core/text.h"

#include <cstdio>

namespace gemmtune::detail {

namespace {
// Length of the valid UTF-8 sequence at s[i] (1-4), or 0 when the bytes there are not one (a stray continuation byte,
// a truncated sequence, an overlong form, a UTF-16 surrogate or a code point past U+10FFFF).
std::size_t utf8_len(std::string_view s, std::size_t i) {
  const auto at = [&](std::size_t j) { return static_cast<unsigned char>(s[j]); };
  const unsigned char c = at(i);
  if (c < 0x80) return 1;
  std::size_t n;
  unsigned char lo = 0x80, hi = 0xbf;  // the valid range of the second byte
  if (c >= 0xc2 && c <= 0xdf) n = 2;
  else if (c == 0xe0) n = 3, lo = 0xa0;
  else if (c == 0xed) n = 3, hi = 0x9f;
  else if (c >= 0xe1 && c <= 0xef) n = 3;
  else if (c == 0xf0) n = 4, lo = 0x90;
  else if (c >= 0xf1 && c <= 0xf3) n = 4;
  else if (c == 0xf4) n = 4, hi = 0x8f;
  else return 0;
  if (i + n > s.size()) return 0;
  if (at(i + 1) < lo || at(i + 1) > hi) return 0;
  for (std::size_t j = 2; j < n; ++j)
    if (at(i + j) < 0x80 || at(i + j) > 0xbf) return 0;
  return n;
}
}  // namespace

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const std::size_t n = utf8_len(s, i);
    if (n == 0) {
      out += '?';
      ++i;
    } else if (n == 1) {
      out += c < 0x20 || c == 0x7f ? '?' : char(c);
      ++i;
    } else {
      const bool c1 = n == 2 && c == 0xc2 && static_cast<unsigned char>(s[i + 1]) <= 0x9f;
      if (c1) out += '?';
      else out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

void warn(std::string_view msg) {
  const std::string line = "gemmtune: warning: " + printable(msg) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace gemmtune::detail
