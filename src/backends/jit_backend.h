#pragma once
// What the JIT backends (sm90, gemv) share, so that each supplies only its source unit and its launch: the unique
// kernel symbol of a unit, the compile of one unit through src/jit reported as a CompileResult, and the cubin back
// from that result at load(). Per-stream scratch for launches: backends/stream_scratch.h.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "backends/jit_result.h"
#include "core/check.h"
#include "core/clock.h"
#include "gemmtune/errors.h"
#include "jit/jit.h"

namespace gemmtune {

// One JIT translation unit: a few includes, one instantiation and the extern "C" kernel `name`.
struct JitUnit {
  std::string source;
  std::string name;
  std::string arch = "sm_90a";
  std::vector<std::string> flags;  // extra NVRTC flags (part of the cache key)
  int dynamic_smem = 0;            // the kernel's dynamic shared memory, reported with the static in CompileResult
};

// "<prefix>_<16 hex digits>" of `key`: kernels of different configs or problem classes never share a symbol, so a
// module cache or a profiler never confuses them.
inline std::string jit_kernel_name(const std::string& prefix, const std::string& key) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "_%016llx", static_cast<unsigned long long>(jit::name_hash(key)));
  return prefix + buf;
}

// The target of a JIT unit: the device's own architecture (sm_90a on Hopper; the assumed device without a GPU is an
// sm_90 one).
inline std::string jit_arch(const DeviceInfo& dev) {
  return dev.cc_major == 9 && dev.cc_minor == 0 ? "sm_90a" : dev.arch();
}

// The unit's cubin (kernel cache, NVRTC).
inline std::shared_ptr<const jit::Cubin> compile_jit_cubin(const JitUnit& u, const std::string& context) {
  jit::CompileOptions opts;
  opts.arch = u.arch;
  opts.flags = u.flags;
  return jit::compile(u.source, u.name, opts, context);
}

// Compiles the unit and reports it; compile_ms counts from `t0`, the start of compile().
inline CompileResult compile_jit_unit(const JitUnit& u, const std::string& context,
                                      std::chrono::steady_clock::time_point t0) {
  CompileResult r = jit_compile_result(compile_jit_cubin(u, context), u.dynamic_smem);
  r.compile_ms = ms_since(t0);
  return r;
}

// The cubin of a compile_jit_unit result, for load(); throws naming the backend and candidate without one.
inline std::shared_ptr<const jit::Cubin> jit_cubin(const CompileResult& compiled, const std::string& backend,
                                                   const Candidate& c) {
  GT_REQUIRE(compiled.artifact, backend + ": load() needs the CompileResult of compile() (" + c.str() + ")");
  return std::static_pointer_cast<const jit::Cubin>(compiled.artifact);
}

}  // namespace gemmtune
