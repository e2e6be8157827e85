#pragma once
// The triton backend's compile: a helper process (kernels/triton/compile_driver.py under $GEMMTUNE_PYTHON, default
// python3 from PATH) turns a template and a request into a cubin for sm_90a and Triton's launch metadata; the result
// is cached in memory and on disk by content (request, template sources, Triton version). Helpers stay warm between
// compiles (one per compile running in parallel), so a candidate pays Triton's compile, not an interpreter's start
// and Triton's import (about a second on a 2-core host); GEMMTUNE_TRITON_WARM=0 starts one process per compile.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/triton/triton_config.h"

namespace gemmtune::triton {

// A compiled kernel: the cubin and what launching it needs, as Triton's metadata says.
struct Kernel {
  std::string key;          // SHA-256 of the request, the template sources and the Triton version
  std::vector<char> image;  // the cubin (sm_90a)
  std::string name;         // the kernel's symbol
  int num_warps = 4, num_ctas = 1;
  int shared = 0;           // dynamic shared memory, bytes
  int global_scratch_size = 0, global_scratch_align = 1;    // per program
  int profile_scratch_size = 0, profile_scratch_align = 1;  // per program (instrumented builds only)
  bool cooperative = false, pdl = false;
  std::vector<Param> params;  // the run-time arguments as compiled, in order (before the two scratch pointers)
  std::string triton_version;
  double compile_ms = 0;      // the helper process's wall time (0 for a cache entry)
  bool cache_hit = false, from_disk = false;
};

// "" when `python` can import triton (then *version is its version), else why not. Runs the interpreter once per
// distinct `python` per process (cached, thread-safe).
std::string probe(const std::string& python, std::string* version = nullptr);
// The interpreter the backend uses: $GEMMTUNE_PYTHON, else "python3".
std::string python_exe();

// Compiles (or finds in the memory or disk cache) the request. Throws gemmtune::Error with the helper's stderr on a
// failed or timed-out compile ($GEMMTUNE_TRITON_TIMEOUT_S, default 600 s; the helper is killed then).
std::shared_ptr<const Kernel> compile(const Request& r, const std::string& context);

// The cache key compile() uses for `r` (needs a working interpreter: the Triton version is part of it).
std::string cache_key(const Request& r);
// Drops the in-memory cache (tests: the next compile reads the disk, as a new process would).
void clear_memory_cache();
// The disk entry of a key (tests).
std::string disk_entry_path(const std::string& key);

// The embedded templates: file name under kernels/triton -> content.
const std::map<std::string, std::string>& templates();

}  // namespace gemmtune::triton
