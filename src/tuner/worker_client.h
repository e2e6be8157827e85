#pragma once
// Runs evaluate() in a worker process (gemmtune-worker), so that a candidate that corrupts the CUDA context (sticky
// errors such as illegal address), hangs, or crashes the process is recorded as such and the tuning goes on in a
// fresh worker. Protocol: one JSON request line on the worker's stdin; JSON event lines on its stdout.
#include <optional>
#include <string>
#include <vector>

#include "gemmtune/tuner.h"
#include "tuner/pipeline.h"

namespace gemmtune {

// Path of the worker executable: $GEMMTUNE_WORKER, else next to libgemmtune (build tree), else
// <prefix>/libexec/gemmtune-worker. nullopt when none is found.
std::optional<std::string> find_worker();

// evaluate() of the pending candidates in worker processes (the worker compiles them again: kernel cache hits).
void evaluate_in_worker(const std::string& worker, const Problem& p, std::vector<PreparedCandidate>& cands,
                        const TuneOptions& opts);

// The worker side: reads the request from stdin, writes events to stdout. Returns the process exit code.
int worker_main();

}  // namespace gemmtune
