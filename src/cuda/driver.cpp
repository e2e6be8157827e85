#include "cuda/driver.h"

#include <dlfcn.h>

#include <charconv>
#include <cstdlib>
#include <mutex>
#include <string_view>

#include "core/env.h"
#include "gemmtune/errors.h"

namespace gemmtune::cuda {

namespace {
#define GEMMTUNE_STR2(x) #x
#define GEMMTUNE_STR(x) GEMMTUNE_STR2(x)

Driver load_driver() {
  Driver d;
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) h = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    d.load_error = std::string("no CUDA driver: cannot load libcuda.so.1 (") + (e ? e : "unknown") + ")";
    return d;
  }
  // cuda.h maps API names to versioned symbols (cuMemAlloc -> cuMemAlloc_v2); stringify after macro expansion.
#define GEMMTUNE_LOAD(name)                                                              \
  d.name = reinterpret_cast<decltype(d.name)>(dlsym(h, GEMMTUNE_STR(name)));             \
  if (!d.name) {                                                                         \
    d.load_error = std::string("CUDA driver too old: missing ") + GEMMTUNE_STR(name);    \
    return d;                                                                            \
  }
  GEMMTUNE_CU_FUNCS(GEMMTUNE_LOAD)
#undef GEMMTUNE_LOAD
  CUresult r = d.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    d.cuGetErrorName(r, &name);
    d.load_error = std::string("cuInit failed: ") + (name ? name : "unknown error") +
                   (r == CUDA_ERROR_NO_DEVICE ? " (no GPU visible)" : "");
    return d;
  }
  d.loaded = true;
  return d;
}
}  // namespace

const Driver& driver() {
  static const Driver d = load_driver();
  return d;
}

const Driver& cu() {
  const Driver& d = driver();
  if (!d.loaded) throw NoGpuError(d.load_error);
  return d;
}

std::string error_string(CUresult r) {
  const Driver& d = driver();
  const char* name = nullptr;
  const char* desc = nullptr;
  if (d.cuGetErrorName) d.cuGetErrorName(r, &name);
  if (d.cuGetErrorString) d.cuGetErrorString(r, &desc);
  std::string s = name ? name : ("CUresult " + std::to_string(static_cast<int>(r)));
  if (desc) s += std::string(" (") + desc + ")";
  return s;
}

bool is_sticky(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_TENSOR_MEMORY_LEAK:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return true;
    default:
      return false;
  }
}

void check(CUresult r, const char* call, const char* file, int line) {
  if (r == CUDA_SUCCESS) return;
  std::string msg = std::string(call) + " failed: " + error_string(r) + " at " + file + ":" + std::to_string(line);
  if (r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_NOT_INITIALIZED) throw NoGpuError(msg);
  throw CudaError(msg, static_cast<int>(r), is_sticky(r));
}

int device_ordinal_from_env() {
  // atoi would read "junk" (or "1x") as a device number: an ordinal is all digits or an error.
  return static_cast<int>(env::integer("GEMMTUNE_DEVICE", 0, 0, 1023));
}

void ensure_context() {
  const Driver& d = cu();
  CUcontext cur = nullptr;
  if (d.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur) return;
  make_current(device_ordinal_from_env(), "GEMMTUNE_DEVICE=");
}

CUdevice device_of(int ordinal, const char* named_by) {
  int count = 0;
  GT_CU(cuDeviceGetCount(&count));
  if (count == 0) throw NoGpuError("no CUDA GPU visible");
  if (ordinal < 0 || ordinal >= count)
    throw Error(std::string(named_by) + std::to_string(ordinal) + " but only " + std::to_string(count) + " GPU(s)");
  CUdevice dev;
  GT_CU(cuDeviceGet(&dev, ordinal));
  return dev;
}

void make_current(int ordinal, const char* named_by) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  const CUdevice dev = device_of(ordinal, named_by);
  CUcontext ctx;
  GT_CU(cuDevicePrimaryCtxRetain(&ctx, dev));  // shared with the CUDA runtime (and PyTorch)
  GT_CU(cuCtxSetCurrent(ctx));
}

}  // namespace gemmtune::cuda
