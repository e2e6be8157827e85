#pragma once
// The interface every backend implements. One-way flow:
//   ResolvedProblem -> analyze() -> enumerate() -> Candidate -> parse() -> compile() (no GPU needed) -> load() (GPU)
//   -> Executable::launch()
// A backend sees only resolved problems (gemmtune/problem.h: resolved and checked once, upstream). Its analysis of
// the problem is derived once (analyze()) and a candidate's config string is parsed once (parse()); validate, compile
// and load read both, which the candidate pipeline (tuner/pipeline.h) carries from stage to stage.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gemmtune/candidate.h"
#include "gemmtune/device.h"
#include "gemmtune/errors.h"
#include "gemmtune/problem.h"
#include "gemmtune/types.h"

namespace gemmtune {

// What compiling a candidate produced. For backends that do not compile (cuBLASLt), compiled=false.
struct CompileResult {
  bool compiled = false;   // a real compilation (or a cache hit of one) happened
  bool cache_hit = false;  // served from the kernel cache (memory or disk)
  double compile_ms = 0;   // wall time of this call
  int registers = -1;      // per thread, from the ptxas report; -1 = not applicable
  int spill_bytes = -1;    // spill stores + loads bytes
  int smem_bytes = -1;     // static + dynamic shared memory per block
  std::string log;         // compiler log (warnings)
  std::shared_ptr<const void> artifact;  // backend-private (e.g. the cubin); handed back to load()
};

// A loaded, launchable candidate. launch() is asynchronous on `stream` and throws gemmtune::Error on a launch error.
class Executable {
 public:
  virtual ~Executable() = default;
  virtual void launch(const GemmArgs& args, Stream stream) = 0;
  virtual const Candidate& candidate() const = 0;
};

// A backend's own value (a parsed config, an analysis) behind a backend-neutral base, so that it travels through the
// candidate pipeline and only its backend looks inside.
template <class Base, class T>
struct Held final : Base {
  explicit Held(T v) : value(std::move(v)) {}
  T value;
};

// The `T` inside `b`; throws gemmtune::Error when `b` is another backend's.
template <class T, class Base>
const T& held_value(const Base& b, const std::string& backend, const char* what) {
  if (const auto* h = dynamic_cast<const Held<Base, T>*>(&b)) return h->value;
  throw Error(backend + ": handed the " + what + " of another backend");
}

// A candidate's config as its backend parsed it (Backend::parse).
struct BackendConfig { virtual ~BackendConfig() = default; };
template <class Config>
using BackendConfigOf = Held<BackendConfig, Config>;
template <class Config>
const Config& config_of(const BackendConfig& parsed, const std::string& backend) {
  return held_value<Config>(parsed, backend, "parsed config");
}

// What a backend derives from a resolved problem once (Backend::analyze: sm90's kernel views of both orientations),
// carried by the pipeline with every candidate so that no stage derives it again. By default empty.
struct BackendAnalysis { virtual ~BackendAnalysis() = default; };
template <class Analysis>
using BackendAnalysisOf = Held<BackendAnalysis, Analysis>;
template <class Analysis>
const Analysis& analysis_of(const BackendAnalysis& an, const std::string& backend) {
  return held_value<Analysis>(an, backend, "analysis");
}

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;

  // "" when this backend can be used in this process, else why not: an optional backend whose dependency is missing
  // (Triton not importable, no CUTLASS headers or nvcc) says so here, e.g. "python3 -c 'import triton' failed: ...".
  // The first call probes (starts a Python interpreter, nvcc --version: 0.1-1 s), so it is made only where a candidate
  // of this backend is needed: its enumeration for a problem it supports (enumerate_ranked, a wrapping backend's
  // enumerate), the compile or is_compiled of one of its candidates, and `gemmtune version`. Never for the backends a
  // tune merely names (its result-cache key), nor for a cached winner of another backend. The answer is cached for
  // the process (thread-safe: compiles run in parallel); an unavailable backend has no candidates and compiles none.
  virtual std::string unavailable() const { return ""; }

  // What a tuning result of this backend depends on besides the problem and the device: its name and the versions of
  // the compiler or library that makes its kernels, e.g. "cublaslt@13.1.0". Part of the result cache's key (a new
  // cuBLASLt or NVRTC retunes). It must not probe: a warm tune computes it for every enabled backend.
  virtual std::string fingerprint() const { return name(); }

  // True for a backend whose compile() takes tens of seconds a candidate (nvcc). The tuner then times only its
  // candidates that is_compiled() already (built ahead by `gemmtune compile`), and names the others as skipped,
  // unless TuneOptions::wait_compile.
  virtual bool slow_compile() const { return false; }
  // Whether compile() of this candidate would be answered by a cache, without compiling. Always true for a backend
  // whose compiles are fast.
  virtual bool is_compiled(const ResolvedProblem& p, const BackendAnalysis& an, const Candidate& c,
                           const BackendConfig& cfg, const DeviceInfo& dev) const {
    (void)p, (void)an, (void)c, (void)cfg, (void)dev;
    return true;
  }

  // "" when this backend can run the problem at all, else the reason (e.g. "sm90: lda*2 bytes not 16-byte aligned").
  // From the problem and device alone: no probe of unavailable(), which enumerate_ranked asks next.
  virtual std::string supports(const ResolvedProblem& p, const DeviceInfo& dev) const = 0;
  // What the stages below read about the problem, derived once (the default: nothing). Throws nothing.
  virtual std::shared_ptr<const BackendAnalysis> analyze(const ResolvedProblem&) const {
    return std::make_shared<const BackendAnalysis>();
  }
  // How this backend runs a supported problem, one phrase for `list`: the path each operand takes where there is a
  // choice (e.g. "A, B: TMA; D: staged 16-byte stores (ldd=50257 is not a multiple of 8 elements)"). "" = nothing to say.
  virtual std::string path(const ResolvedProblem& p, const BackendAnalysis& an, const DeviceInfo& dev) const {
    (void)p, (void)an, (void)dev;
    return "";
  }
  // Candidates for the problem, best first by this backend's heuristic. Empty when supports() fails.
  // Backends that need the GPU to enumerate (cuBLASLt heuristics) throw NoGpuError without one.
  virtual std::vector<Candidate> enumerate(const ResolvedProblem& p, const BackendAnalysis& an,
                                           const DeviceInfo& dev) const = 0;
  // The candidate's config, parsed once for the stages below. Throws gemmtune::Error with the reason on a malformed
  // config line or a candidate of another backend.
  virtual std::shared_ptr<const BackendConfig> parse(const Candidate& c) const = 0;
  // The reason validate() gives for a candidate that parse() rejected with `error`: the error itself, unless the
  // backend names a problem it cannot run first (cuBLASLt).
  virtual std::string parse_error_reason(const ResolvedProblem& p, const DeviceInfo& dev,
                                         const std::string& error) const {
    (void)p, (void)dev;
    return error;
  }

  // The stages, on `an` = analyze(p) and `cfg` = parse(c). The candidate comes along for its printed form (errors,
  // kernel names). "" when the candidate is valid for the problem, else why not. The same function prunes
  // enumerate().
  virtual std::string validate(const ResolvedProblem& p, const BackendAnalysis& an, const Candidate& c,
                               const BackendConfig& cfg, const DeviceInfo& dev) const = 0;
  // Compile without a GPU where possible. Throws gemmtune::Error (with the compiler log) on failure.
  virtual CompileResult compile(const ResolvedProblem& p, const BackendAnalysis& an, const Candidate& c,
                                const BackendConfig& cfg, const DeviceInfo& dev) const = 0;
  // Load onto the current GPU. `compiled` is what compile() returned for the same (p, c).
  virtual std::unique_ptr<Executable> load(const ResolvedProblem& p, const BackendAnalysis& an, const Candidate& c,
                                           const BackendConfig& cfg, const CompileResult& compiled) const = 0;

  // The same stages for a single call (the CLI's --config check, tests): each analyzes the problem and parses the
  // config string, then runs the stage above. A pipeline does both once and passes them.
  std::string path(const ResolvedProblem& p, const DeviceInfo& dev) const { return path(p, *analyze(p), dev); }
  std::vector<Candidate> enumerate(const ResolvedProblem& p, const DeviceInfo& dev) const {
    return enumerate(p, *analyze(p), dev);
  }
  std::string validate(const ResolvedProblem& p, const Candidate& c, const DeviceInfo& dev) const {
    std::shared_ptr<const BackendConfig> cfg;
    try {
      cfg = parse(c);
    } catch (const Error& e) {
      return parse_error_reason(p, dev, e.what());
    }
    return validate(p, *analyze(p), c, *cfg, dev);
  }
  CompileResult compile(const ResolvedProblem& p, const Candidate& c, const DeviceInfo& dev) const {
    return compile(p, *analyze(p), c, *parse(c), dev);
  }
  std::unique_ptr<Executable> load(const ResolvedProblem& p, const Candidate& c, const CompileResult& compiled) const {
    return load(p, *analyze(p), c, *parse(c), compiled);
  }
};

// The registry: all backends compiled into the library, in a fixed order.
const std::vector<std::shared_ptr<Backend>>& all_backends();
std::shared_ptr<Backend> find_backend(const std::string& name);  // nullptr if unknown

}  // namespace gemmtune
