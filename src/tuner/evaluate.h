#pragma once
// Verification and timing of candidates on the GPU (in this process). The tuner calls this directly
// (Isolation::in_process) or through the worker process (tools/worker).
#include <functional>
#include <memory>
#include <vector>

#include "gemmtune/tuner.h"
#include "tuner/pipeline.h"

namespace gemmtune {

struct EvaluateHooks {
  std::function<void(size_t index)> on_begin;                               // before candidate `index` is touched
  std::function<void(size_t index, const CandidateResult&)> on_result;  // after it is done (any status)
  // Before the verified candidates `indices` are timed side by side (TuneOptions::interleave): a crash from here on
  // cannot be pinned on one of them.
  std::function<void(const std::vector<size_t>& indices)> on_timing;
  // Test hook: replaces candidate `index`'s loaded executable (the worker's fault injection wraps it in one that
  // faults on the GPU at a chosen launch).
  using Wrap = std::function<std::unique_ptr<Executable>(std::unique_ptr<Executable>)>;
  std::function<std::unique_ptr<Executable>(size_t index, std::unique_ptr<Executable>)> wrap;
};

// The one timing path (first timings, the runoff, compare). For each pending candidate in order: load (parsing and
// compiling it first when it was not compiled in this process, as in the worker) and verify once against the reference
// on fresh random inputs with a poisoned output; then settle the clocks and time the verified ones side by side,
// interleaved round by round (cold L2 by rotating buffer sets; warm-up; median of CUDA-event timed runs), or each right
// after its verification when TuneOptions::interleave is off. Each candidate's result is updated and handed to
// on_result (a failure right away, a timed candidate after the timing); candidates not pending are only reported.
// A grouped problem is verified on each of its routings (tuner/routing.h: uniform, skewed, sparse; D poisoned each
// time, rows outside the groups must stay poisoned) and timed on each with an equal share of min_time_ms: its
// us_median is the mean over the routings of the per-routing medians (a kernel must be good on all of them), its
// TFLOP/s and GB/s those of the mean routed rows.
void evaluate(const ResolvedProblem& p, std::vector<PreparedCandidate>& cands, const TuneOptions& opts,
              const EvaluateHooks& hooks = {});

// The normalized error a candidate may have on `p`: TuneOptions::tolerance, raised to 0.05 for an fp8 D (the format's
// own rounding). fp8 inputs keep the default: the reference computes the dequantized products in fp64, so the error is
// the kernel's accumulation and output rounding, as for 16-bit inputs.
double verification_tolerance(const Problem& p, double tolerance);

// How many input buffer sets the timing rotates through (launch L reads set L % count): enough that at least 2x L2
// of other sets' data is read between two reads of one set, hence never fewer than two, and at most `fit` (what GPU
// memory holds; 64 at most). One set larger than L2 is not cold: every launch found lines of the previous launch's
// in L2 (H200, 224 MiB of weights at M = 1: 51.9 us on one set against 55.3 on 2-8).
size_t timing_set_count(size_t set_bytes, size_t l2_bytes, size_t fit);

}  // namespace gemmtune
