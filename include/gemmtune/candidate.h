#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "gemmtune/types.h"

namespace gemmtune {

// A backend plus that backend's config, printable as one line "backend:config" that the CLI accepts back
// (`--config`). The config string is owned and parsed by its backend; it is canonical, so equal strings are
// equal configs.
struct Candidate {
  std::string backend;  // "sm90", "cublaslt"
  std::string config;   // e.g. "tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m8"

  std::string str() const { return backend + ":" + config; }
  static Candidate parse(const std::string& line);  // throws gemmtune::Error on a malformed line
  bool operator==(const Candidate&) const = default;
};

// The fate of a candidate in the pipeline validate -> compile -> load -> verify -> time. Everything but `pending`
// and `ok` is a failure, with its reason beside it.
enum class Status {
  pending,        // not done yet (compiled and waiting to be verified and timed, or not reached)
  ok,             // compiled (and, when tuning, verified and timed)
  unsupported,    // the backend rejects the candidate for this problem (or does not exist)
  spills,         // compiled, but ptxas spilled registers to local memory
  compile_error,  // the compiler failed
  needs_gpu,      // the backend needs a GPU to compile or judge it, and there is none
  load_error,     // the compiled kernel could not be loaded onto the GPU
  launch_error,   // the launch failed (a recoverable CUDA error)
  wrong_result,   // the output did not match the reference
  timeout,        // took longer than TuneOptions::max_candidate_s
  crashed,        // corrupted the CUDA context or killed the worker process
  skipped,        // not run: an earlier candidate took the CUDA context down
};

// The spelling used in tables, JSON, the result cache and the worker protocol ("ok", "compile_error", ...).
const char* to_string(Status s);
// The inverse of to_string; nullopt for an unknown name.
std::optional<Status> status_from_string(std::string_view name);

}  // namespace gemmtune
