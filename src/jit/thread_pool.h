#pragma once
// Parallel loops for compiling candidates: NVRTC compiles of different programs run concurrently (each is
// single-threaded), so the tuner compiles its top candidates with one worker per core.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/env.h"

namespace gemmtune::jit {

// Worker count for compiles: $GEMMTUNE_COMPILE_THREADS if set (>0), else the number of hardware threads.
inline int default_compile_threads() {
  const int64_t hw = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<int>(env::integer("GEMMTUNE_COMPILE_THREADS", hw, 1, 4096));
}

// Calls fn(i) for every i in [0, n) on up to `threads` threads (<= 0: default_compile_threads()). Items are handed
// out dynamically, so slow compiles do not hold up a fixed share. Returns when all calls have finished. If calls throw,
// the remaining items still run (a failed candidate must not stop the others) and the first exception is rethrown
// at the end; callers that record failures per item should catch inside fn.
inline void parallel_for(std::size_t n, int threads, const std::function<void(std::size_t)>& fn) {
  if (n == 0) return;
  if (threads <= 0) threads = default_compile_threads();
  std::size_t workers = std::min<std::size_t>(n, static_cast<std::size_t>(threads));
  std::atomic<std::size_t> next{0};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  for (std::size_t t = 1; t < workers; ++t) pool.emplace_back(work);
  work();  // the calling thread is one of the workers
  for (auto& t : pool) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace gemmtune::jit
