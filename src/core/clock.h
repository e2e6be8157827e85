#pragma once
// Wall time of host-side stages (compiles, tunes, CLI commands) in milliseconds.
#include <chrono>

namespace gemmtune {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace gemmtune
