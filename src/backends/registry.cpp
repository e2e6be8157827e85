#include "backends/backend.h"
#include "backends/cublaslt/cublaslt_backend.h"
#include "backends/cutlass/cutlass_backend.h"
#include "backends/gemv/gemv_backend.h"
#include "backends/pad/pad_backend.h"
#include "backends/sm90/sm90_backend.h"
#include "backends/triton/triton_backend.h"

namespace gemmtune {

const std::vector<std::shared_ptr<Backend>>& all_backends() {
  static const std::vector<std::shared_ptr<Backend>> backends = [] {
    std::vector<std::shared_ptr<Backend>> v = {make_sm90_backend(), make_gemv_backend(), make_cublaslt_backend(),
                                               make_triton_backend(), make_cutlass_backend()};
    v.push_back(make_pad_backend(v));  // pad wraps the others' candidates
    return v;
  }();
  return backends;
}

std::shared_ptr<Backend> find_backend(const std::string& name) {
  for (const auto& b : all_backends())
    if (b->name() == name) return b;
  return nullptr;
}

}  // namespace gemmtune
