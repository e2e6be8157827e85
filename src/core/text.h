#pragma once
// Text that came from outside (cache files, suites, imported entries, file names, compiler logs) on its way to a
// terminal or a log line.
#include <string>
#include <string_view>

namespace gemmtune::detail {

// `s` safe to print: every C0 control byte (newline and tab included: a message is one line), DEL, C1 control
// (U+0080..U+009F, bytes C2 80..C2 9F: a C1 CSI U+009B starts an escape sequence on many terminals) and every byte
// that is not part of valid UTF-8 becomes '?'. Printable UTF-8 passes unchanged. The one function for everything
// gemmtune prints from untrusted data: warnings, `cache ls`, suite shape names, error messages.
std::string printable(std::string_view s);

// "gemmtune: warning: <msg>" on stderr, `msg` through printable(). One line, written with one call (concurrent
// compile threads do not interleave their warnings).
void warn(std::string_view msg);

}  // namespace gemmtune::detail
