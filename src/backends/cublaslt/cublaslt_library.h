#pragma once
// cuBLASLt as the cublaslt backend reaches it: the library loaded when first used (cuda/toolkit_library.h: enumeration,
// a load, `gemmtune version`), its errors as gemmtune::Error, and the one handle of the process.
#include <cublasLt.h>

#include <string>

#include "cuda/toolkit_library.h"

namespace gemmtune::cublaslt {

#define GEMMTUNE_CUBLASLT_FUNCS(X)                                                                                  \
  X(cublasLtGetVersion) X(cublasLtGetStatusName) X(cublasLtCreate) X(cublasLtMatmul) X(cublasLtMatmulDescCreate)   \
  X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute) X(cublasLtMatmulPreferenceCreate)                 \
  X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatrixLayoutCreate)         \
  X(cublasLtMatrixLayoutDestroy) X(cublasLtMatrixLayoutSetAttribute) X(cublasLtMatmulAlgoInit)                     \
  X(cublasLtMatmulAlgoCheck) X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmulAlgoCapGetAttribute)                \
  X(cublasLtMatmulAlgoConfigGetAttribute) X(cublasLtMatmulAlgoConfigSetAttribute)

struct CublasLt {
  GEMMTUNE_CUBLASLT_FUNCS(GEMMTUNE_TOOLKIT_DECL)
};

// The table, loaded once (thread-safe); throws gemmtune::Error when cuBLASLt cannot be loaded.
const CublasLt& lt();

// Throws gemmtune::Error naming the call (as cuBLASLt names it) and the status.
[[noreturn]] void lt_fail(cublasStatus_t s, const char* call, const char* file, int line);

#define GT_LT(call)                                                            \
  do {                                                                         \
    cublasStatus_t gt_lt_status_ = (call);                                     \
    if (gt_lt_status_ != CUBLAS_STATUS_SUCCESS)                                \
      ::gemmtune::cublaslt::lt_fail(gt_lt_status_, #call, __FILE__, __LINE__); \
  } while (0)

std::string status_name(cublasStatus_t s);

// One handle for the process: created lazily on the primary context of the current device, never destroyed (its
// destruction at exit could run after the driver is gone). Throws NoGpuError without a GPU.
cublasLtHandle_t lt_handle();

}  // namespace gemmtune::cublaslt
