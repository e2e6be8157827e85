#include "backends/cublaslt/cublaslt_library.h"

#include <string_view>

#include "backends/cublaslt/cublaslt_backend.h"
#include "core/check.h"
#include "cuda/driver.h"

namespace gemmtune {
namespace {

const cuda::ToolkitLibrary& lt_library() {
  static const cuda::ToolkitLibrary lib("libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR), "cuBLASLt");
  return lib;
}

std::string version_string(size_t v) {  // major*10000 + minor*100 + patch
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

}  // namespace

namespace cublaslt {

const CublasLt& lt() {
  static const CublasLt table = [] {
    CublasLt t;
    const cuda::ToolkitLibrary& lib = lt_library();
    GEMMTUNE_CUBLASLT_FUNCS(GEMMTUNE_TOOLKIT_LOAD)
    return t;
  }();
  return table;
}

[[noreturn]] void lt_fail(cublasStatus_t s, const char* call, const char* file, int line) {
  const char* name = lt().cublasLtGetStatusName(s);
  const std::string_view table = "lt().";  // the call as cuBLASLt names it
  if (std::string_view(call).substr(0, table.size()) == table) call += table.size();
  detail::throw_error(std::string("cublaslt: ") + call + " failed: " + (name ? name : "unknown status") + " (" +
                          std::to_string(static_cast<int>(s)) + ")",
                      file, line);
}

std::string status_name(cublasStatus_t s) {
  const char* name = lt().cublasLtGetStatusName(s);
  return name ? name : ("status " + std::to_string(static_cast<int>(s)));
}

cublasLtHandle_t lt_handle() {
  cuda::ensure_context();  // throws NoGpuError without a GPU
  // A magic static: thread-safe, and retried on the next call if creation throws.
  static const cublasLtHandle_t handle = [] {
    cublasLtHandle_t h = nullptr;
    GT_LT(lt().cublasLtCreate(&h));
    return h;
  }();
  return handle;
}

}  // namespace cublaslt

std::string cublaslt_version() {
  // cuBLASLt in the process already (loaded by this backend, or PyTorch's): its own version, at no cost.
  if (auto* fn = reinterpret_cast<decltype(&::cublasLtGetVersion)>(lt_library().resident_symbol("cublasLtGetVersion")))
    return version_string(fn());
  // Not loaded: the one this process would load is the toolkit's whose headers it was built with.
  return version_string(CUBLAS_VERSION);
}

std::string cublaslt_library_version() { return version_string(cublaslt::lt().cublasLtGetVersion()); }

}  // namespace gemmtune
