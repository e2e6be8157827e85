#pragma once
// Progress of a tune or a compile as typed events: the library reports what happened, each front end formats it.
// to_string() is the one-line text the CLI prints; the C ABI hands each event over as JSON with that line beside the
// fields (to_json in src/tuner/serialize.h), and the Python package turns it into gemmtune.ProgressEvent.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "gemmtune/tuner.h"

namespace gemmtune {

enum class ProgressKind {
  cache_hit,          // result: the cached winner (candidate only)
  cache_stale,        // text: why the cached winner no longer stands; the tune runs again
  backend_skipped,    // backend, text: why it takes no part (unavailable, refuses the problem)
  backend_planned,    // backend, count of total ranked candidates to compile and time
  not_compiled,       // backend, count candidates left out as not compiled yet, total compiled
  compiled,           // result: one compile finished (slow compiles in a tune; each in `gemmtune compile`);
                      // count of total (0: not counted)
  compile_summary,    // total candidates compiled in ms, count of them failed
  candidate_failed,   // result: a candidate out before timing or in the worker (status and reason)
  evaluating,         // isolated: in a worker process (true) or in-process
  timing,             // count verified candidates timed side by side
  result,             // result: a candidate's verification and timing
  runoff,             // count fastest timed again side by side
  runoff_result,      // result: its runoff numbers, or how it failed there
  worker,             // text: the worker restarted, retimed, gave up, or printed something
  note,               // backend, text: a backend that takes no part in a compile, and why
  warning,            // text: something went wrong that the run survived
};
const char* to_string(ProgressKind k);

struct ProgressEvent {
  ProgressKind kind = ProgressKind::note;
  std::string backend = {};
  std::optional<CandidateResult> result = {};
  size_t count = 0, total = 0;
  double ms = 0;
  bool isolated = false;
  std::string text = {};
};

// The event as one line of text (no newline).
std::string to_string(const ProgressEvent& e);

}  // namespace gemmtune
