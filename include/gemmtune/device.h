#pragma once
#include <cstdint>
#include <string>

#include "gemmtune/types.h"

namespace gemmtune {

// What the backends need to know about the GPU. Without a GPU, `assumed_sm90()` stands in (an H100/H200 SXM).
struct DeviceInfo {
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int smem_per_block_optin = 0;  // bytes
  int64_t l2_bytes = 0;
  int64_t global_mem_bytes = 0;
  int driver_version = 0;  // cuDriverGetVersion, e.g. 13000
  bool real = false;       // false for an assumed device (no GPU)

  std::string arch() const { return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor); }
  std::string key() const;  // name, cc, SMs, driver: part of the result-cache key
  static DeviceInfo assumed_sm90(int sm_count = 132);
};

// The current device: that of the calling thread's current CUDA context, else device GEMMTUNE_DEVICE (default 0).
// Queried once per process, without creating a context. Throws NoGpuError without driver/GPU.
const DeviceInfo& current_device();
// True when a driver and at least one GPU are present (never throws).
bool gpu_available();

}  // namespace gemmtune
