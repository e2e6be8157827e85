#include "cuda/memory.h"

#include "cuda/driver.h"

namespace gemmtune::cuda {

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes) {
    ensure_context();
    GT_CU(cuMemAlloc(&ptr_, bytes));
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) driver().cuMemFree(ptr_);  // no throw in a destructor; a dead context frees nothing anyway
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) driver().cuMemFree(ptr_);
    ptr_ = std::exchange(o.ptr_, 0);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::upload(const void* host, size_t bytes, size_t offset) {
  GT_CU(cuMemcpyHtoD(ptr_ + offset, host, bytes));
  // From pageable memory cuMemcpyHtoD may return once the data is staged, before the DMA into the buffer is done; a
  // kernel launched next on a non-blocking stream does not wait for it. Seen on the H200: a poisoned D uploaded right
  // before a launch landed after the kernel had written parts of it. Wait for the legacy stream's copy.
  GT_CU(cuStreamSynchronize(CU_STREAM_LEGACY));
}

void DeviceBuffer::download(void* host, size_t bytes, size_t offset) const {
  GT_CU(cuMemcpyDtoH(host, ptr_ + offset, bytes));
}

Event::Event() {
  ensure_context();
  GT_CU(cuEventCreate(&ev_, CU_EVENT_DEFAULT));
}

Event::~Event() {
  if (ev_) driver().cuEventDestroy(ev_);
}

void Event::record(Stream s) { GT_CU(cuEventRecord(ev_, reinterpret_cast<CUstream>(s))); }

float Event::elapsed_ms_since(const Event& start) const {
  GT_CU(cuEventSynchronize(ev_));
  float ms = 0;
  GT_CU(cuEventElapsedTime(&ms, start.ev_, ev_));
  return ms;
}

StreamOwner::StreamOwner() {
  ensure_context();
  GT_CU(cuStreamCreate(&s_, CU_STREAM_NON_BLOCKING));
}

StreamOwner::~StreamOwner() {
  if (s_) driver().cuStreamDestroy(s_);
}

void StreamOwner::sync() const { GT_CU(cuStreamSynchronize(s_)); }

}  // namespace gemmtune::cuda
