#include "core/env.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/parse_int.h"
#include "gemmtune/errors.h"

namespace gemmtune::env {

const std::vector<Variable>& variables() {
  static const std::vector<Variable> v = {
      {"GEMMTUNE_CACHE_DIR", "result cache (`results/`) and kernel cache (`kernels/`) (default `~/.cache/gemmtune`)"},
      {"GEMMTUNE_NO_DISK_CACHE", "`1`: compiled kernels are neither read from nor written to disk"},
      {"GEMMTUNE_DEVICE", "GPU ordinal (default 0) where no CUDA context is current; the tuner's worker process times on "
                        "the device current in the caller (e.g. PyTorch's `cuda:1`)"},
      {"GEMMTUNE_DUMP_DIR", "dump JIT sources, cubins and logs"},
      {"GEMMTUNE_COMPILE_THREADS", "compile threads (default: one per hardware thread)"},
      {"GEMMTUNE_WORKER", "the worker executable (default: next to the library, or `<prefix>/libexec`)"},
      {"GEMMTUNE_WORKER_IDLE_S",
       "how long a worker kept between evaluations waits for the next before it exits, freeing its CUDA context (60)"},
      {"GEMMTUNE_WORKER_FAULT",
       "tests only: `<kind>,<step>,<candidate>[;...]` makes the worker fail a candidate for real (`trap`, "
       "`illegal_address`, `misaligned`, `hang`, `wrong`, `oob_write`, `segv`, `abort` at `verify`, `timing`, "
       "`setup`, `restart`, `restart_always`; `src/tuner/fault_injection.h`)"},
      {"GEMMTUNE_PYTHON",
       "the Python the triton backend compiles with and the cutlass backend finds `nvidia-cutlass` in (default "
       "`python3`; the Python package sets its own)"},
      {"GEMMTUNE_TRITON_TIMEOUT_S", "a Triton compile's deadline in seconds (600)"},
      {"GEMMTUNE_TRITON_WARM", "`0`: no warm Triton helper processes (a process per compile)"},
      {"GEMMTUNE_NVCC_TIMEOUT_S", "one nvcc run's deadline in seconds (900)"},
      {"GEMMTUNE_NVCC_JOBS", "parallel nvcc runs (default: one per core and 2 GiB of memory)"},
      {"GEMMTUNE_SM90_VERBOSE", "`1`: ptxas's verbose report in each sm90 compile log"},
      {"GEMMTUNE_SM90_PINGPONG_MULTITILE", "`0`: ping-pong configs keep one tile per consumer (a diagnostic)"},
      {"CUTLASS_DIR", "CUTLASS headers for the cutlass backend (`$CUTLASS_DIR/include/cutlass/cutlass.h`)"},
      {"CUDACXX", "the nvcc the cutlass backend runs (else `$CUDA_HOME/bin/nvcc`, `PATH`, `/usr/local/cuda/bin`)"},
      {"CUDA_HOME", "the CUDA toolkit for nvcc and NVRTC's headers (also `CUDA_PATH`)"},
      {"CUDA_PATH", "the CUDA toolkit for NVRTC's headers when `CUDA_HOME` is not set"},
      {"PATH", "where the cutlass backend looks for nvcc"},
      {"HOME", "the default cache directory's parent (`~/.cache/gemmtune`)"},
  };
  return v;
}

std::optional<std::string> get(const char* name) {
  bool known = false;
  for (const Variable& v : variables()) known = known || std::strcmp(v.name, name) == 0;
  if (!known) throw Error(std::string("env: '") + name + "' is not in gemmtune's table of environment variables");
  const char* e = std::getenv(name);
  if (!e || !*e) return std::nullopt;
  return std::string(e);
}

bool flag(const char* name) {
  const auto v = get(name);
  return v && *v != "0";
}

int64_t integer(const char* name, int64_t fallback, int64_t lo, int64_t hi) {
  const auto v = get(name);
  if (!v) return fallback;
  int64_t out = 0;
  if (const std::string why = detail::parse_int(*v, lo, hi, out); !why.empty())
    throw Error(std::string(name) + "='" + *v + "' " + why);
  return out;
}

double positive(const char* name, double fallback, double hi) {
  const auto v = get(name);
  if (!v) return fallback;
  char* end = nullptr;
  const double x = std::strtod(v->c_str(), &end);
  if (!end || *end != '\0' || !std::isfinite(x) || x <= 0 || x > hi)
    throw Error(std::string(name) + "='" + *v + "' is not a number in (0, " + std::to_string(int64_t(hi)) + "]");
  return x;
}

}  // namespace gemmtune::env
