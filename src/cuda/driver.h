#pragma once
// The CUDA driver API, loaded with dlopen so that the library starts on machines without a driver.
// Usage: `cu().cuMemAlloc(&p, n)` or, with error checking, `GT_CU(cuMemAlloc(&p, n))`.
#include <cuda.h>

#include <string>

namespace gemmtune::cuda {

#define GEMMTUNE_CU_FUNCS(X)                                                                              \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGet) X(cuDeviceGetCount) \
  X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain)               \
  X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxGetDevice) X(cuCtxSynchronize) X(cuStreamCreate)            \
  X(cuStreamDestroy) X(cuStreamSynchronize) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH)     \
  X(cuMemcpyDtoDAsync) X(cuMemsetD8Async) X(cuMemsetD16Async) X(cuMemsetD32Async) X(cuModuleLoadData)      \
  X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncSetAttribute) X(cuFuncGetAttribute) X(cuLaunchKernel)   \
  X(cuLaunchKernelEx) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize)            \
  X(cuEventElapsedTime) X(cuTensorMapEncodeTiled) X(cuOccupancyMaxActiveClusters) X(cuPointerGetAttribute) \
  X(cuMemGetInfo) X(cuFuncGetModule) X(cuThreadExchangeStreamCaptureMode)

struct Driver {
#define GEMMTUNE_DECL(name) decltype(&::name) name = nullptr;
  GEMMTUNE_CU_FUNCS(GEMMTUNE_DECL)
#undef GEMMTUNE_DECL
  bool loaded = false;
  std::string load_error;  // why the driver could not be loaded, when !loaded
};

// Loads libcuda.so.1 once (thread-safe) and calls cuInit(0). Never throws: check `loaded`.
const Driver& driver();
// driver(), or throw NoGpuError naming why the driver is unusable.
const Driver& cu();

// "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)".
std::string error_string(CUresult r);
// True for errors after which the CUDA context is unusable (illegal address, misaligned address, launch failure...).
bool is_sticky(CUresult r);

// Throws gemmtune::Error with call text, file:line and the error name. NoGpuError for no device/driver.
void check(CUresult r, const char* call, const char* file, int line);

// The device ordinal GEMMTUNE_DEVICE names (0 when unset); throws gemmtune::Error when it is not a number.
int device_ordinal_from_env();

// Makes the primary context of the current device current on this thread (device from GEMMTUNE_DEVICE, default 0),
// unless the thread already has a current context.
void ensure_context();
// Makes device `ordinal`'s primary context current on this thread (shared with the CUDA runtime and PyTorch), whatever
// was current before: what a binding calls for the device of the tensors it launches on.
// `named_by` prefixes the ordinal in the error for one out of range.
void make_current(int ordinal, const char* named_by = "device ");
// The device of that ordinal, checked against the visible count (NoGpuError when none is visible), without a context.
CUdevice device_of(int ordinal, const char* named_by = "device ");

}  // namespace gemmtune::cuda

#define GT_CU(call) ::gemmtune::cuda::check(::gemmtune::cuda::cu().call, #call, __FILE__, __LINE__)
