#pragma once
// Runs evaluate() in a worker process (gemmtune-worker), so that whatever a candidate does on the GPU or to the
// process (a sticky CUDA error, a signal, a hang, an abort) is recorded against it and the tuning goes on in a fresh
// worker. Protocol: JSON request lines on the worker's stdin, one per evaluation; JSON event lines on its stdout
// ("begin", "timing", "result", "fatal", and "done" at the end of a request). A worker that finished a request cleanly
// is kept for the next one in this process (a start costs a CUDA context and the reference kernels' load).
#include <optional>
#include <string>
#include <vector>

#include "gemmtune/tuner.h"
#include "tuner/pipeline.h"

namespace gemmtune {

// Path of the worker executable: $GEMMTUNE_WORKER, else next to libgemmtune (build tree), else
// <prefix>/libexec/gemmtune-worker. nullopt when none is found.
std::optional<std::string> find_worker();

// evaluate() of the pending candidates where TuneOptions::isolation says: in worker processes (process; in this
// process, with a warning, when no worker executable is found) or in this process (in_process). Progress lines go to
// TuneOptions::progress. Every pending candidate ends with a status: a failure of one candidate, whatever its kind,
// is that candidate's result; only a failure of the evaluation itself (no GPU, a problem too large to verify, a
// worker that cannot start before any candidate ran) throws.
void evaluate_candidates(const ResolvedProblem& p, std::vector<PreparedCandidate>& cands, const TuneOptions& opts);

// evaluate() of the pending candidates in worker processes (the worker compiles them again: kernel cache hits).
// A candidate in flight when its worker dies or times out is crashed / timeout; a death while candidates were timed
// side by side times them again one at a time (which tells whose it was); a worker that fails in its setup after a
// crash is restarted (a few times, then the candidates left are skipped, each with the reason).
void evaluate_in_worker(const std::string& worker, const ResolvedProblem& p, std::vector<PreparedCandidate>& cands,
                        const TuneOptions& opts);

// The worker side: reads requests from stdin until EOF, writes events to stdout. Returns the process exit code.
int worker_main();

}  // namespace gemmtune
