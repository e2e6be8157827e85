#pragma once
// Fault injection for the tests of crash isolation: the worker process reads GEMMTUNE_WORKER_FAULT and makes one
// candidate fail for real, on the GPU or in the process, at a chosen step, so that the tuner's recovery is tested
// against the failures it must survive rather than against a simulation of them.
//
//   GEMMTUNE_WORKER_FAULT=<kind>,<step>,<candidate>[;<kind>,<step>,<candidate>...]   e.g. trap,verify,cublaslt:default
//   kind:  trap | illegal_address | misaligned   a kernel that leaves a sticky CUDA error (illegal instruction,
//                                                 illegal address, misaligned 16-byte load)
//          hang                                   a kernel that never returns (the per-candidate deadline ends it)
//          wrong                                  the candidate's kernel does not run (D keeps its poison)
//          oob_write                              the kernel runs, then 16 bytes just before D are zeroed
//          segv | abort                           the worker process dies by that signal
//   step:  verify   at the candidate's first launch (its verification)
//          timing   at its first launch after verification (the timing round)
//          setup    in the worker's setup of every request, before any candidate (candidate ignored)
//          restart  in the setup of the first worker started after a candidate failed (candidate ignored): a
//                   failure while the tuner recovers; the worker started after that one works
//          restart_always  in the setup of every worker started after a candidate failed
//   candidate: the candidate's printed form (backend:config), or * for every candidate.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "gemmtune/problem.h"

namespace gemmtune {

struct FaultPlan {
  std::string kind, step, candidate;
};

// The plans of GEMMTUNE_WORKER_FAULT; empty when unset. Throws gemmtune::Error on a malformed value.
std::vector<FaultPlan> fault_plans_from_env();

// Fails now, in this process, the way `kind` says (setup and restart steps): a sticky error surfaces as a CudaError.
void inject_fault_now(const std::string& kind, Stream stream);

// `exe` wrapped so that it fails as the plan says on launch number `at` (0-based) when it is `plan.candidate` and
// the plan's step is verify or timing; `exe` itself otherwise.
std::unique_ptr<Executable> wrap_with_fault(const FaultPlan& plan, std::unique_ptr<Executable> exe, int at);

}  // namespace gemmtune
