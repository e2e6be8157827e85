#include <mutex>

#include "cuda/driver.h"
#include "gemmtune/device.h"
#include "gemmtune/errors.h"

namespace gemmtune {

std::string DeviceInfo::key() const {
  return name + ":" + arch() + ":sm" + std::to_string(sm_count) + ":drv" + std::to_string(driver_version);
}

DeviceInfo DeviceInfo::assumed_sm90(int sm_count) {
  DeviceInfo d;
  d.name = "assumed sm_90 (no GPU)";
  d.cc_major = 9, d.cc_minor = 0;
  d.sm_count = sm_count;
  d.smem_per_block_optin = 232448;  // 227 KiB
  d.l2_bytes = 50 * 1024 * 1024;
  d.real = false;
  return d;
}

bool gpu_available() {
  const cuda::Driver& d = cuda::driver();
  if (!d.loaded) return false;
  int n = 0;
  return d.cuDeviceGetCount(&n) == CUDA_SUCCESS && n > 0;
}

const DeviceInfo& current_device() {
  static std::once_flag once;
  static DeviceInfo info;
  std::call_once(once, [] {
    // The device of the thread's current context (a caller's, e.g. PyTorch's), else the one ensure_context() would
    // make current, asked by ordinal: creating its context here would cost a cache hit (Tuner::tune answered from the
    // result cache) 100 ms or more on an H100, for attributes the driver has without one. What needs a context makes
    // one (cuda::ensure_context).
    CUdevice dev;
    CUcontext cur = nullptr;
    if (cuda::cu().cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur) {
      GT_CU(cuCtxGetDevice(&dev));
    } else {
      dev = cuda::device_of(cuda::device_ordinal_from_env(), "GEMMTUNE_DEVICE=");
    }
    char name[256] = {};
    GT_CU(cuDeviceGetName(name, sizeof(name), dev));
    info.name = name;
    auto attr = [&](CUdevice_attribute a) {
      int v = 0;
      GT_CU(cuDeviceGetAttribute(&v, a, dev));
      return v;
    };
    info.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    info.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    info.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    info.smem_per_block_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    info.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
    size_t total = 0;
    GT_CU(cuDeviceTotalMem(&total, dev));
    info.global_mem_bytes = int64_t(total);
    GT_CU(cuDriverGetVersion(&info.driver_version));
    info.real = true;
  });
  return info;
}

}  // namespace gemmtune
