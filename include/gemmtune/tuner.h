#pragma once
// The autotuner: enumerate -> rank -> compile (parallel) -> verify once -> time -> pick -> persist.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gemmtune/candidate.h"
#include "gemmtune/device.h"
#include "gemmtune/problem.h"

namespace gemmtune {

struct ProgressEvent;  // gemmtune/progress.h

enum class Isolation {
  process,     // verify and time in a worker process (gemmtune-worker): a crashing candidate cannot kill the tuner
  in_process,  // everything in this process: faster start, but a sticky CUDA error ends the tuning
};

struct TuneOptions {
  std::vector<std::string> backends;        // empty = all compiled-in backends
  int top_k = 8;                            // per backend, after ranking (cuBLASLt: heuristic results asked for);
                                            // a candidate that spills gives its slot to the next one in rank order
  std::vector<Candidate> only;              // tune exactly these candidates (CLI --config, repeatable); with
                                            // several, all of them are also timed side by side (interleaved)
  bool use_cache = true;                    // read and write the result cache
  bool force = false;                       // ignore a cached result (still writes it)
  Isolation isolation = Isolation::process;
  int compile_threads = 0;                  // 0 = hardware concurrency
  bool wait_compile = false;                // compile the candidates of slow-compile backends (cutlass: nvcc, tens
                                            // of seconds each) that are not built yet; false: time only those built
                                            // ahead (`gemmtune compile`), report the others as skipped
  double min_time_ms = 100;                 // timing: at least this long ...
  int min_iters = 100;                      // ... and at least this many timed runs (median reported)
  int warmup_iters = 10;
  double settle_ms = 300;                   // run the first timed candidate this long before timing anything, so
                                            // the power-limited GPU reaches its steady clocks (0 = off)
  double max_candidate_s = 30;              // a candidate whose verification exceeds this is a timeout
  bool interleave = true;                   // time the verified candidates side by side, interleaved round by
                                            // round (each gets ~min_time_ms); false: each on its own, in turn
  double tolerance = 1e-2;                  // normalized error above this fails verification
  std::function<void(const ProgressEvent&)> progress;  // progress events (gemmtune/progress.h); the CLI prints
                                                       // their text on stderr
};

// The fate of one candidate during tuning.
struct CandidateResult {
  Candidate candidate;
  Status status = Status::pending;
  std::string reason;  // for anything but ok
  double compile_ms = 0;
  bool compile_cache_hit = false;
  int registers = -1, spill_bytes = -1, smem_bytes = -1;
  double error = -1;               // normalized error vs the reference; -1 = not verified
  // per call, microseconds; a grouped problem's us_median is the mean over the tuner's routings (uniform, skewed,
  // sparse: src/tuner/routing.h) of each routing's median, its rates those of the mean routed call
  double us_median = 0, us_min = 0, us_max = 0;
  int timed_iters = 0;
  double tflops = 0, gbps = 0;
  bool winner = false;
};

struct TuneReport {
  Problem problem;
  DeviceInfo device;
  std::vector<CandidateResult> results;  // in the order they were tried
  std::optional<Candidate> winner;
  bool cache_hit = false;                // answered from the result cache
  double wall_ms = 0;
  std::string cache_key;
};

// A tuned, loaded GEMM for one problem: run() launches the winner.
class Gemm {
 public:
  Gemm();
  ~Gemm();
  Gemm(Gemm&&) noexcept;
  Gemm& operator=(Gemm&&) noexcept;
  // Launches asynchronously on `stream` (nullptr = legacy default stream). Throws gemmtune::Error on bad args.
  void run(const GemmArgs& args, Stream stream = nullptr) const;
  const Candidate& candidate() const;
  const Problem& problem() const;

 private:
  struct Impl;
  explicit Gemm(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  friend class Tuner;
};

class Tuner {
 public:
  explicit Tuner(TuneOptions opts = {});
  // Tunes the problem (or answers from the cache) and reports every candidate's fate.
  TuneReport tune(const Problem& p);
  // tune() when needed, then compiles/loads the winner. Throws if no candidate works.
  Gemm select(const Problem& p);
  // Loads exactly this candidate for the problem, no tuning.
  static Gemm load(const Problem& p, const Candidate& c);
  const TuneOptions& options() const { return opts_; }

 private:
  TuneOptions opts_;
};

// Lists candidates (all enabled backends, each ranked best first; at most `top_k` per backend, 0 = all) without
// compiling or running them. Without a GPU (dev.real false) a backend that needs one to enumerate is left out.
std::vector<Candidate> list_candidates(const Problem& p, const DeviceInfo& dev,
                                       const std::vector<std::string>& backends = {}, int top_k = 0);

// Times the given candidates side by side in this process, as the tuner times its candidates: same inputs, rotating
// buffer sets (cold L2), the clocks settled first, rounds interleaved (c0, c1, ..., c0, c1, ...), median per
// candidate. Each candidate is compiled and verified first; failures are recorded in its result, not thrown. Used by
// `gemmtune bench` to compare a winner with cuBLASLt's default.
std::vector<CandidateResult> compare(const Problem& p, const std::vector<Candidate>& cands, const TuneOptions& opts = {});

std::string version();  // gemmtune version, e.g. "0.1.0"

}  // namespace gemmtune
