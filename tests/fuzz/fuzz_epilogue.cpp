// libFuzzer target: the epilogue parser. Whatever it accepts prints back to a key that parses to the same chain, and
// the chain's checks (alone and inside a problem) answer without crashing or overflowing.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "gemmtune/errors.h"
#include "gemmtune/problem.h"

using namespace gemmtune;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string spec(reinterpret_cast<const char*>(data), size);
  Epilogue e;
  try {
    e = parse_epilogue(spec);
  } catch (const Error&) {
    return 0;
  }
  if (parse_epilogue(e.key()) != e) std::abort();  // the documented round trip
  (void)e.check();
  for (int64_t n : {int64_t(1), int64_t(64), int64_t(4096), (int64_t(1) << 31) - 2}) {
    Problem p = Problem::make(16, n, 64, DType::bf16, DType::bf16);
    p.epilogue = e;
    p.resolve();
    if (p.check().empty()) {
      (void)p.key();
      (void)p.min_bytes();
      for (EpiOpKind k : {EpiOpKind::bias_col, EpiOpKind::bias_row, EpiOpKind::row_scale, EpiOpKind::col_scale})
        (void)p.check_epilogue_vector(k, p.epilogue_vector_len(k));
    }
  }
  return 0;
}
