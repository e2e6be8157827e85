#pragma once
// What `gemmtune compile` and `gemmtune bench` do, as library calls (the CLI parses arguments and prints these).
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gemmtune/candidate.h"
#include "gemmtune/device.h"
#include "gemmtune/problem.h"
#include "gemmtune/tuner.h"

namespace gemmtune {

// One candidate of compile_candidates().
struct CompiledCandidate {
  CandidateResult result;  // status ok, or why not: unsupported, compile_error, needs_gpu, spills; compile numbers
  bool compiled = false;   // a real compilation (or a kernel-cache hit of one) happened
  std::string log;         // the compiler's log
  double wall_ms = 0;      // validate + compile, seen from the caller
};

struct CompileOptions {
  std::vector<std::string> backends;  // empty = sm90, gemv, pad (triton and cutlass when named)
  std::optional<Candidate> only;      // compile exactly this candidate
  int top_k = 8;                      // per backend, 0 = all; a failed compile (a spill) gives its slot to the next
  int threads = 0;                    // parallel compiles; 0 = hardware concurrency
  // Progress (gemmtune/progress.h): `compiled` per candidate in the order done, `note` per backend left out.
  std::function<void(const ProgressEvent&)> progress;
};

struct CompileReport {
  Problem problem;  // resolved
  DeviceInfo device;
  std::vector<CompiledCandidate> candidates;  // backend by backend, in rank order
  int threads = 0;
  double wall_ms = 0;
};

// Compiles the top candidates of a problem without a GPU (`dev` may be DeviceInfo::assumed_sm90()): the same
// enumeration, top-k and compile as a tune. Throws gemmtune::Error when there is nothing to compile.
CompileReport compile_candidates(const Problem& p, const DeviceInfo& dev, const CompileOptions& opts = {});

// One shape of `gemmtune bench`: tuned, then the winner timed side by side with cuBLASLt's reference and the best
// candidate of every other backend (compare()).
struct ShapeBench {
  TuneReport tune;
  Candidate reference;                  // cuBLASLt's heuristic default; with an epilogue its fused form where the
                                        // chain maps onto one (epi=fused), else GEMM + elementwise (epi=separate);
                                        // fp8 with tensor/row scales: its fast accumulation (fast_accum=1)
  std::vector<CandidateResult> compare;  // the side-by-side numbers
  std::string status = "ok";            // else what failed (one line)
  const CandidateResult* winner() const { return find(tune.winner); }
  const CandidateResult* cublas() const { return find(reference); }
  bool winner_ok() const { return winner() && winner()->status == Status::ok; }
  bool cublas_ok() const { return cublas() && cublas()->status == Status::ok && cublas()->us_median > 0; }
  // cuBLAS time / winner time (NaN when either did not run).
  double speedup() const {
    return winner_ok() && cublas_ok() && winner()->us_median > 0 ? cublas()->us_median / winner()->us_median : NAN;
  }

 private:
  const CandidateResult* find(const std::optional<Candidate>& c) const {
    if (c)
      for (const auto& r : compare)
        if (r.candidate == *c) return &r;
    return nullptr;
  }
};

// Tunes and compares one problem. A failure of this shape is recorded in `status` (NoGpuError is thrown).
ShapeBench bench_problem(const Problem& p, const TuneOptions& opts);

}  // namespace gemmtune
