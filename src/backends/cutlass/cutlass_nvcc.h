#pragma once
// The cutlass backend's toolchain and build cache: where the CUTLASS headers and nvcc are, nvcc run as a child
// process on a generated unit, and the shared objects it makes, cached by content in memory and on disk
// (jit::kernel_cache_dir()/cutlass/<sha256>.so) and loaded once per key per process.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "backends/cutlass/cutlass_abi.h"

namespace gemmtune::cutlass_be {

struct Toolchain {
  std::string include_dir;      // holds cutlass/cutlass.h
  std::string nvcc;             // the compiler
  std::string lib_dir;          // the toolkit's lib64 (the objects' rpath to libcudart)
  std::string nvcc_version;     // e.g. "V13.0.88" (cache key)
  std::string cutlass_version;  // e.g. "4.2.0" (cache key)
};

// Finds the toolchain from the environment (uncached): CUTLASS headers from $CUTLASS_DIR/include (or $CUTLASS_DIR
// itself when it holds cutlass/cutlass.h), else the nvidia-cutlass Python package ($GEMMTUNE_PYTHON or python3:
// cutlass_library/source/include); nvcc from $CUDACXX, $CUDA_HOME/bin/nvcc, /usr/local/cuda/bin/nvcc, else PATH.
// "" when both were found, else why not (naming what is missing).
std::string find_toolchain(Toolchain& out);
// The process's toolchain, found once; toolchain_error() is "" or find_toolchain's reason.
const Toolchain& toolchain();
const std::string& toolchain_error();

// A loaded shared object and its entry points (never unloaded: the CUDA runtime holds its registered kernels).
struct SharedObject {
  void* handle = nullptr;
  std::string path;
  IdentFn ident = nullptr;
  ArgsSizeFn args_size = nullptr;
  CheckFn check = nullptr;
  WorkspaceFn workspace = nullptr;
  CreateFn create = nullptr;
  DestroyFn destroy = nullptr;
  InitFn init = nullptr;
  RunFn run = nullptr;
};

struct BuildResult {
  std::shared_ptr<const SharedObject> so;
  bool cache_hit = false;  // memory or disk
  double nvcc_ms = 0;      // the compile's own time (a cache hit: the time it took when it was built)
  std::string log;         // nvcc's output
};

// The nvcc flags of every unit (in the cache key).
std::vector<std::string> nvcc_flags(const Toolchain& tc);
// The cache key of a unit: SHA-256 of the source, the flags, nvcc's and CUTLASS's versions (no paths).
std::string unit_key(const std::string& source);
// Whether build() of this key would be answered by a cache (memory, or disk when the disk cache is on).
bool is_built(const std::string& key);
// Builds (or finds) the unit's shared object; `ident` is what its gt_cutlass_ident() must return. Concurrent builds
// of one key share one nvcc run. Throws gemmtune::Error with nvcc's log on a compile error or timeout
// ($GEMMTUNE_NVCC_TIMEOUT_S, default 900 s). A disk entry that does not load or whose ident differs is a miss with a
// warning.
BuildResult build(const std::string& source, const std::string& ident);
// Drops the in-memory map (loaded objects stay loaded): the next build of a known key reads the disk, as a new
// process would. For tests.
void clear_memory_cache();

// The largest register count and spill bytes (stores + loads) that nvcc's ptxas -v report names; -1 when absent.
void ptxas_resources(const std::string& log, int& registers, int& spill_bytes);

struct BuildStats {
  size_t compiles = 0, memory_hits = 0, disk_hits = 0, disk_corrupt = 0;
};
BuildStats build_stats();

}  // namespace gemmtune::cutlass_be
