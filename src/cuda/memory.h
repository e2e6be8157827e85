#pragma once
// RAII device memory, events and streams over the dlopen'd driver.
#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "gemmtune/types.h"

namespace gemmtune::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);  // cuMemAlloc; bytes == 0 gives a null buffer
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, 0)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  CUdeviceptr ptr() const { return ptr_; }
  void* get() const { return reinterpret_cast<void*>(ptr_); }
  size_t bytes() const { return bytes_; }

  void upload(const void* host, size_t bytes, size_t offset = 0);
  void download(void* host, size_t bytes, size_t offset = 0) const;

 private:
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(Stream s);
  CUevent get() const { return ev_; }
  // Milliseconds from `start` to this event; both must have completed (synchronizes on this one).
  float elapsed_ms_since(const Event& start) const;

 private:
  CUevent ev_ = nullptr;
};

class StreamOwner {
 public:
  StreamOwner();
  ~StreamOwner();
  StreamOwner(const StreamOwner&) = delete;
  StreamOwner& operator=(const StreamOwner&) = delete;
  Stream get() const { return reinterpret_cast<Stream>(s_); }
  void sync() const;

 private:
  CUstream s_ = nullptr;
};

}  // namespace gemmtune::cuda
