// The text of a progress event: the line the CLI prints and the C ABI passes along with the event's fields.
#include "gemmtune/progress.h"

#include <fmt/format.h>

#include "tuner/pipeline.h"

namespace gemmtune {

const char* to_string(ProgressKind k) {
  switch (k) {
    case ProgressKind::cache_hit: return "cache_hit";
    case ProgressKind::cache_stale: return "cache_stale";
    case ProgressKind::backend_skipped: return "backend_skipped";
    case ProgressKind::backend_planned: return "backend_planned";
    case ProgressKind::not_compiled: return "not_compiled";
    case ProgressKind::compiled: return "compiled";
    case ProgressKind::compile_summary: return "compile_summary";
    case ProgressKind::candidate_failed: return "candidate_failed";
    case ProgressKind::evaluating: return "evaluating";
    case ProgressKind::timing: return "timing";
    case ProgressKind::result: return "result";
    case ProgressKind::runoff: return "runoff";
    case ProgressKind::runoff_result: return "runoff_result";
    case ProgressKind::worker: return "worker";
    case ProgressKind::note: return "note";
    case ProgressKind::warning: return "warning";
  }
  return "?";
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
