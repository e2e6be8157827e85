#pragma once
// NVRTC JIT: source text -> CUBIN for sm_90a (no PTX JIT at load) -> CUfunction.
// Kernel headers under kernels/ are embedded into the library at build time; a translation unit includes them by
// their path relative to kernels/ (e.g. #include "sm90/sm90_gemm_coop.cuh") and NVRTC reads them from memory.
#include <cuda.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gemmtune::jit {

struct CompileOptions {
  std::string arch = "sm_90a";
  std::vector<std::string> flags;  // extra NVRTC flags; part of the cache key
};

struct Cubin {
  std::string kernel_name;  // extern "C" symbol of the kernel in the unit
  std::string key;          // content hash: source + embedded headers + NVRTC version + arch + flags
  std::vector<char> image;  // the CUBIN
  int registers = -1;       // per thread (ptxas report)
  int spill_bytes = 0;      // spill stores + spill loads, bytes
  int smem_static = 0;      // static shared memory, bytes
  int stack_bytes = 0;      // stack frame, bytes
  std::string log;          // NVRTC/ptxas log
  bool cache_hit = false;   // came from the memory or disk cache
  double compile_ms = 0;    // wall time of the compile() call
};

// Compiles (or finds in the memory / disk cache) one translation unit. Thread-safe; concurrent calls compile in
// parallel. Throws gemmtune::Error carrying the NVRTC log and `context` (e.g. the candidate's config) on failure.
std::shared_ptr<const Cubin> compile(const std::string& source, const std::string& kernel_name,
                                     const CompileOptions& opts = {}, const std::string& context = "");

// Loads the cubin into the current context (once per cubin key and context) and returns the kernel.
CUfunction load(const Cubin& cubin);

// The embedded headers: path relative to kernels/ -> content.
const std::map<std::string, std::string>& embedded_headers();

// NVRTC version as "major.minor".
std::string nvrtc_version();

// Directory of the on-disk cubin cache: $GEMMTUNE_CACHE_DIR/kernels (default ~/.cache/gemmtune/kernels).
std::string kernel_cache_dir();

}  // namespace gemmtune::jit
