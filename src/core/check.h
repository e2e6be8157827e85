#pragma once
// Internal: how the library throws gemmtune::Error with the file and line of the failing check.
// Kept out of the public headers so that user code gets no macros from gemmtune.
#include <string>

#include "gemmtune/errors.h"

namespace gemmtune::detail {
[[noreturn]] void throw_error(const std::string& msg, const char* file, int line);
}  // namespace gemmtune::detail

#define GT_THROW(msg) ::gemmtune::detail::throw_error((msg), __FILE__, __LINE__)
#define GT_REQUIRE(cond, msg)   \
  do {                          \
    if (!(cond)) GT_THROW(msg); \
  } while (0)
