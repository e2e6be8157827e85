#include "core/check.h"
#include "gemmtune/errors.h"

#include <cstring>

namespace gemmtune::detail {

[[noreturn]] void throw_error(const std::string& msg, const char* file, int line) {
  const char* base = std::strrchr(file, '/');
  throw Error(msg + " [" + (base ? base + 1 : file) + ":" + std::to_string(line) + "]");
}

}  // namespace gemmtune::detail
