// libFuzzer target: each backend's config parser and validity rules, reached as `--config backend:config` is. The
// first byte picks the backend and a problem shape; the rest is the config text. validate() must answer "" or a
// reason, never crash, hang or overflow.
#include <cstddef>
#include <cstdint>
#include <string>

#include "backends/backend.h"
#include "gemmtune/errors.h"

using namespace gemmtune;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const DeviceInfo dev = DeviceInfo::assumed_sm90();
  const auto& backends = all_backends();
  if (backends.empty()) return 0;
  const uint8_t sel = data[0];
  const auto& backend = backends[sel % backends.size()];
  struct Shape {
    int64_t m, n, k, batch;
  };
  static const Shape kShapes[] = {{1, 4096, 4096, 1}, {16, 64, 64, 1}, {128, 256, 512, 1}, {4096, 4096, 4096, 1},
                                  {8, 14336, 4096, 1}, {256, 256, 256, 4}, {3, 5, 7, 1},      {1, 1, 1, 1}};
  const Shape& s = kShapes[(sel >> 3) % 8];
  Problem p = Problem::make(s.m, s.n, s.k, DType::bf16, DType::bf16, Layout::row, Layout::col, s.batch);
  const Candidate c{backend->name(), std::string(reinterpret_cast<const char*>(data) + 1, size - 1)};
  try {
    (void)backend->validate(resolve(p), c, dev);
    (void)Candidate::parse(c.str());
  } catch (const Error&) {  // NoGpuError (cuBLASLt judges on the GPU) or a parse error with a message
  }
  return 0;
}
