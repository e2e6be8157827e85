#pragma once
// Per-stream device scratch of one executable (sm90's tile counters and stream-K partials, gemv's K split across
// CTAs, cuBLASLt's workspace). Launches on one stream run one after another, so device state that a launch leaves for
// the next (counts and flags the kernel sets back to zero) is kept per stream, and launches of the executable on
// different streams may overlap. Not thread-safe: the executable holds its own mutex around every call.
#include <cuda.h>

#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "cuda/driver.h"
#include "cuda/memory.h"
#include "gemmtune/errors.h"

namespace gemmtune {

class StreamScratch {
 public:
  static constexpr size_t kMaxStreams = 64;

  StreamScratch() = default;
  // `who` names the executable's kind in errors ("... runs on at most 64 distinct streams (context)"); each stream
  // gets `ws_bytes` of scratch and `zero_ints` ints that start at zero (both may be 0).
  StreamScratch(std::string who, std::string context, size_t ws_bytes, size_t zero_ints)
      : who_(std::move(who)), context_(std::move(context)), ws_bytes_(ws_bytes), zero_ints_(zero_ints) {}

  // The position of `s` among the streams launched on so far, registering it (throws past kMaxStreams).
  size_t index(CUstream s) {
    size_t i = 0;
    while (i < streams_.size() && streams_[i] != s) ++i;
    if (i == streams_.size()) {
      GT_REQUIRE(i < kMaxStreams,
                 who_ + " runs on at most " + std::to_string(kMaxStreams) + " distinct streams (" + context_ + ")");
      streams_.push_back(s);
    }
    return i;
  }

  struct Buffers {
    void* ws;
    int* zeros;
  };
  // Stream `s`'s buffers, made on its first launch (make_first() makes the first stream's at load, so that the usual
  // single-stream use never allocates in a launch). A stream's first launch may be inside a CUDA graph capture (a
  // framework captures on a stream of its own): the allocation then runs with this thread's capture mode relaxed,
  // which is what allows cuMemAlloc while a capture is under way (it is not captured, the buffers live with the
  // executable), and the counters are zeroed by a memset on `s`, which a capture records ahead of the kernel.
  Buffers get(CUstream s) {
    const size_t i = index(s);
    while (bufs_.size() <= i) {
      RelaxedCapture relaxed;
      Pair p{cuda::DeviceBuffer(ws_bytes_), cuda::DeviceBuffer(zero_ints_ * sizeof(int))};
      if (zero_ints_ > 0) GT_CU(cuMemsetD32Async(p.zeros.ptr(), 0, zero_ints_, streams_[bufs_.size()]));
      bufs_.push_back(std::move(p));
    }
    return {bufs_[i].ws.get(), static_cast<int*>(bufs_[i].zeros.get())};
  }
  void make_first() {
    if (bufs_.empty()) bufs_.push_back(make());
  }

  // `n` ints on the device, all zero.
  static cuda::DeviceBuffer zeroed_ints(size_t n) {
    cuda::DeviceBuffer b(n * sizeof(int));
    const std::vector<int> zeros(n, 0);
    if (n > 0) b.upload(zeros.data(), n * sizeof(int));
    return b;
  }

 private:
  // This thread's stream-capture mode set to relaxed for the scope, and restored.
  struct RelaxedCapture {
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    RelaxedCapture() { GT_CU(cuThreadExchangeStreamCaptureMode(&mode)); }
    ~RelaxedCapture() { cuda::cu().cuThreadExchangeStreamCaptureMode(&mode); }
  };
  struct Pair {
    cuda::DeviceBuffer ws, zeros;
  };
  Pair make() const { return {cuda::DeviceBuffer(ws_bytes_), zeroed_ints(zero_ints_)}; }

  std::string who_, context_;
  size_t ws_bytes_ = 0, zero_ints_ = 0;
  std::vector<CUstream> streams_;  // in first-launch order
  std::vector<Pair> bufs_;         // by stream index
};

}  // namespace gemmtune
