#pragma once
// One exception type for everything gemmtune reports: the failing call, where, and why.
#include <stdexcept>
#include <string>

namespace gemmtune {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Thrown when an operation needs a GPU (driver, device) that is not there.
class NoGpuError : public Error {
 public:
  using Error::Error;
};

namespace detail {
[[noreturn]] void throw_error(const std::string& msg, const char* file, int line);
}  // namespace detail

}  // namespace gemmtune

#define GT_THROW(msg) ::gemmtune::detail::throw_error((msg), __FILE__, __LINE__)
#define GT_REQUIRE(cond, msg)                    \
  do {                                           \
    if (!(cond)) GT_THROW(msg);                  \
  } while (0)
