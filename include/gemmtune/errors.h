#pragma once
// One exception type for everything gemmtune reports: the failing call, where, and why.
#include <stdexcept>
#include <string>

#include "gemmtune/types.h"

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

// A CUDA driver (or cuBLASLt) call failed. `sticky` means the CUDA context is unusable afterwards (illegal address,
// launch failure...): the process must end to use the GPU again.
class CudaError : public Error {
 public:
  CudaError(const std::string& what, int code, bool sticky) : Error(what), code(code), sticky(sticky) {}
  int code;
  bool sticky;
};

}  // namespace gemmtune
