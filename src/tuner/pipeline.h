#pragma once
// The candidate pipeline, written once for the tuner, Tuner::load, list_candidates, compare and the CLI's `list`
// and `compile`:
//   enumerate_ranked (+ top-k)  ->  prepare (parse + validate + compile, parallel)  ->  load  ->  verify + time
//   (evaluate.h)
// Every stage takes the problem resolved (ResolvedProblem). A PreparedCandidate carries one candidate through them:
// its backend, that backend's analysis of the problem (made once, by enumerate_ranked), its config as the backend
// parsed it (once, by compile_one), its compiled artifact, and its status and numbers (its CandidateResult).
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "gemmtune/tuner.h"

namespace gemmtune {

struct PreparedCandidate {
  CandidateResult result;                 // candidate, status, reason, compile and timing numbers
  std::shared_ptr<const Backend> backend; // null for an unknown backend (then status is unsupported)
  std::shared_ptr<const BackendAnalysis> analysis;  // backend->analyze(problem); null until made (compile_one)
  std::shared_ptr<const BackendConfig> config;  // backend->parse(candidate); null until compile_one parsed it
  std::optional<CompileResult> compiled;  // what compile() returned here; empty when not compiled in this process
  double compile_wall_ms = 0;             // validate + compile as seen from the pipeline

  const Candidate& candidate() const { return result.candidate; }
  Status status() const { return result.status; }
};

// A pending PreparedCandidate of `c` (its backend looked up; unknown: status unsupported).
PreparedCandidate make_prepared(const Candidate& c);

// The named backends (empty = all, in registry order); throws gemmtune::Error naming an unknown one.
std::vector<std::shared_ptr<Backend>> enabled_backends(const std::vector<std::string>& names);

// One backend's candidates for a problem, best first by its heuristic.
struct RankedList {
  std::shared_ptr<const Backend> backend;
  std::vector<Candidate> ranked;  // empty when skipped
  std::string skipped;            // why there are none: the backend does not support the problem, or needs a GPU
  bool needs_gpu = false;         // skipped because enumerating needs a GPU and `dev` is assumed (dev.real false)
  bool unavailable = false;       // skipped because the backend is unavailable here (Backend::unavailable)
  std::string path;               // Backend::path of a supported problem ("" when skipped or nothing to say)
  std::shared_ptr<const BackendAnalysis> analysis;  // Backend::analyze of a supported problem (null when skipped)

  // "" or one line on why the backend was skipped, e.g. "sm90: does not support this problem: ...", or on the path
  // it takes, e.g. "sm90: A, B: TMA; D: TMA store".
  std::string note() const;
};

// Enumerates every enabled backend for the problem. A backend that needs the GPU to enumerate
// throws NoGpuError on a real device and is skipped (needs_gpu) on an assumed one (DeviceInfo::assumed_sm90: the
// CLI's --arch-sms / no-GPU enumeration).
std::vector<RankedList> enumerate_ranked(const ResolvedProblem& p, const DeviceInfo& dev,
                                         const std::vector<std::string>& names);

// The first `top_k` of each list (0 = all), backend by backend.
std::vector<Candidate> top_candidates(const std::vector<RankedList>& lists, int top_k);

// Analyzes the problem and parses the config (unless done already), validates and compiles one candidate (no GPU
// needed). Leaves it pending when it
// compiled clean; else records the failure: unsupported (a config that does not parse, or validate()), compile_error,
// needs_gpu, or spills (a ptxas report with spilled bytes: such a kernel is never the one to pick, whatever a config
// rule says).
void compile_one(const ResolvedProblem& p, const DeviceInfo& dev, PreparedCandidate& pc);

// Compiles candidates in parallel (jit::parallel_for on `threads`, 0 = hardware concurrency) with `compile`
// (compile_one in the product; tests pass their own). `done` (optional) is called after each compile, serialized.
using CompileFn = std::function<void(PreparedCandidate&)>;
void compile_all(std::vector<PreparedCandidate>& cands, int threads, const CompileFn& compile,
                 const std::function<void(const PreparedCandidate&)>& done = {});

// Compiles each backend's candidates in rank order until `top_k` of them compiled clean or its list is exhausted
// (top_k 0: all of them): a candidate that fails to compile (a spill above all) gives its slot to the next in rank
// order, so a tune times as many candidates as it asked for. Rounds of parallel compiles; the result is backend by
// backend, in rank order, the failed ones included.
std::vector<PreparedCandidate> prepare_ranked(const std::vector<RankedList>& lists, int top_k, int threads,
                                              const CompileFn& compile,
                                              const std::function<void(const PreparedCandidate&)>& done = {});

// The reason a slow-compile backend's candidate (Backend::slow_compile: nvcc) is skipped by a tune that does not wait.
extern const char* const kNotCompiledReason;

// Takes the candidates of slow-compile backends that are not compiled yet (Backend::is_compiled) out of `lists`, so
// that they take no top-k slot from compiled ones, and returns those among each list's first `top_k` (0 = all) as
// skipped PreparedCandidates (status skipped, kNotCompiledReason): the ones the tune would have timed. A candidate
// whose config does not parse stays in its list (compile_one records why).
std::vector<PreparedCandidate> take_uncompiled(std::vector<RankedList>& lists, const ResolvedProblem& p,
                                               const DeviceInfo& dev, int top_k);

// Loads a candidate compiled by compile_one onto the current GPU, from its parsed config and compiled artifact.
std::unique_ptr<Executable> load_prepared(const ResolvedProblem& p, const PreparedCandidate& pc);

}  // namespace gemmtune
