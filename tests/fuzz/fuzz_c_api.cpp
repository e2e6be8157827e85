// libFuzzer target: the C ABI's readers (gemmtune/c_api.h), which bindings feed with whatever their callers pass. The
// input is a problem document, a newline, and an options document. Every call must answer GT_OK or a status with a
// message, never crash; returned strings are released.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "gemmtune/c_api.h"

namespace {

void check(int status, char* out) {
  if (status != GT_OK && gt_last_error()[0] == '\0') std::abort();  // a failure always says why
  gt_free(out);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const size_t nl = text.find('\n');
  const std::string problem = text.substr(0, nl);
  const std::string options = nl == std::string::npos ? "" : text.substr(nl + 1);
  char* out = nullptr;
  check(gt_problem_info(problem.c_str(), &out), out);
  out = nullptr;
  // Listing with an assumed GPU never runs anything: the options reader and the enumeration over any problem.
  check(gt_list(problem.c_str(), options.c_str(), &out), out);
  return 0;
}
