#pragma once
// NVRTC JIT: source text -> CUBIN for sm_90a (no PTX JIT at load) -> CUfunction.
// Kernel headers under kernels/ are embedded into the library at build time; a translation unit includes them by
// their path relative to kernels/ (e.g. #include "sm90/sm90_gemm_coop.cuh") and NVRTC reads them from memory.
#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/fnv.h"

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
  bool from_disk = false;   // came from the disk cache (implies cache_hit)
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

// NVRTC's version as "major.minor", for the cache keys, without loading NVRTC (a cache hit needs no compiler): the
// version of the NVRTC the process has loaded, else of the toolkit this library was built with (the NVRTC it loads).
std::string nvrtc_version();
// The version the NVRTC library itself reports, loading it; throws gemmtune::Error when it cannot be loaded.
std::string nvrtc_library_version();

// A 64-bit FNV-1a hash of `s`, for unique kernel names (the cache key is the SHA-256 of the whole unit).
inline uint64_t name_hash(const std::string& s) { return gemmtune::detail::fnv1a64(s); }

// Directory of the on-disk cubin cache: $GEMMTUNE_CACHE_DIR/kernels (default ~/.cache/gemmtune/kernels).
// Read from the environment on every call; "" when no directory can be determined (no HOME).
std::string kernel_cache_dir();

// False when GEMMTUNE_NO_DISK_CACHE=1 (or no cache directory): compile() then neither reads nor writes the disk.
bool disk_cache_enabled();

// The cache key compile() would use (SHA-256, 64 hex digits) -- for tools and tests.
std::string cache_key(const std::string& source, const std::string& kernel_name, const CompileOptions& opts = {});

// Drops the in-memory cubin cache (loaded modules stay loaded). The next compile() of a known unit reads the disk
// cache, as a fresh process would.
void clear_memory_cache();

// Process-wide counters, for tests and --verbose output.
struct CacheStats {
  std::size_t compiles = 0;      // NVRTC invocations (successful or not)
  std::size_t memory_hits = 0;   // includes callers that waited for a concurrent compile of the same key
  std::size_t disk_hits = 0;
  std::size_t disk_corrupt = 0;  // disk entries rejected as corrupt (each also a miss)
};
CacheStats cache_stats();

}  // namespace gemmtune::jit
