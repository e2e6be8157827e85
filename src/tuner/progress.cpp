// The text of a progress event: the line the CLI prints and the C ABI passes along with the event's fields.
#include "gemmtune/progress.h"

#include <fmt/format.h>

#include <iterator>

#include "tuner/pipeline.h"

namespace gemmtune {

const char* to_string(ProgressKind k) {
  static const char* const kNames[] = {  // in the enum's order
      "cache_hit", "cache_stale", "backend_skipped", "backend_planned", "not_compiled", "compiled", "compile_summary",
      "candidate_failed", "evaluating", "timing", "result", "runoff", "runoff_result", "worker", "note", "warning"};
  static_assert(std::size(kNames) == size_t(ProgressKind::warning) + 1);
  return kNames[size_t(k)];
}

namespace {

// "<candidate>: <status> (<reason>)" of a candidate that did not run to the end.
std::string failure(const CandidateResult& r) {
  return r.candidate.str() + ": " + to_string(r.status) + (r.reason.empty() ? "" : " (" + r.reason + ")");
}

std::string compiled_line(const ProgressEvent& e) {
  const CandidateResult& r = *e.result;
  const std::string head = e.total > 0 ? fmt::format("[{}/{}] ", e.count, e.total) : "  compiled ";
  if (r.status != Status::ok && r.status != Status::pending) {
    // The first line of a compiler's log is the reason; the rest is in the report.
    return head + r.candidate.str() + ": " + to_string(r.status) + " (" + r.reason.substr(0, r.reason.find('\n')) + ")";
  }
  const std::string t = r.compile_ms >= 1000 ? fmt::format("{:.1f} s", r.compile_ms / 1000)
                                             : fmt::format("{:.1f} ms", r.compile_ms);
  return head + r.candidate.str() + ": ok " + t + (r.compile_cache_hit ? " (cache hit)" : "");
}

}  // namespace

std::string to_string(const ProgressEvent& e) {
  static const CandidateResult kNone;
  const CandidateResult& r = e.result ? *e.result : kNone;
  switch (e.kind) {
    case ProgressKind::cache_hit: return "cache hit: " + r.candidate.str();
    case ProgressKind::cache_stale: return "cached winner is stale, retuning (" + e.text + ")";
    case ProgressKind::backend_skipped: return e.backend + ": skipped (" + e.text + ")";
    case ProgressKind::backend_planned: return fmt::format("{}: {} of {} candidates", e.backend, e.count, e.total);
    case ProgressKind::not_compiled:
      return fmt::format("{}: {} skipped, {} ({} compiled)", e.backend, e.count, kNotCompiledReason, e.total);
    case ProgressKind::compiled: return e.result ? compiled_line(e) : "";
    case ProgressKind::compile_summary:
      return fmt::format("compiled {} candidates in {:.0f} ms ({} failed)", e.total, e.ms, e.count);
    case ProgressKind::candidate_failed: return "  " + failure(r);
    case ProgressKind::evaluating:
      return e.isolated ? "verifying and timing in a worker process" : "verifying and timing in-process";
    case ProgressKind::timing: return fmt::format("  timing {} verified candidates side by side", e.count);
    case ProgressKind::result:
      if (r.status != Status::ok) return "  " + failure(r);
      return fmt::format("  {}  {:9.2f} us {:8.1f} TFLOP/s  err {:.1e}", r.candidate.str(), r.us_median, r.tflops,
                         r.error);
    case ProgressKind::runoff: return fmt::format("runoff of the {} fastest, side by side:", e.count);
    case ProgressKind::runoff_result:
      if (r.status != Status::ok) return "  " + failure(r);
      return fmt::format("  {}  {:9.2f} us", r.candidate.str(), r.us_median);
    case ProgressKind::worker: return "  worker: " + e.text;
    case ProgressKind::note: return "note: " + e.text;
    case ProgressKind::warning: return "warning: " + e.text;
  }
  return e.text;
}

}  // namespace gemmtune
