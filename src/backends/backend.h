#pragma once
// The interface every backend implements. One-way flow:
//   Problem -> enumerate() -> Candidate -> parse() -> compile() (no GPU needed) -> load() (GPU) -> Executable::launch()
// A candidate's config string is parsed once (parse()); validate, compile and load read the parsed config, which the
// candidate pipeline (tuner/pipeline.h) carries from stage to stage.
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

// A candidate's config as its backend parsed it: each backend derives its holder from this (BackendConfigOf below),
// so that a parsed config travels through backend-neutral code and only its backend looks inside.
class BackendConfig {
 public:
  virtual ~BackendConfig() = default;
};

// The holder of one backend's parsed config type.
template <class Config>
struct BackendConfigOf final : BackendConfig {
  explicit BackendConfigOf(Config c) : config(std::move(c)) {}
  Config config;
};

// The `Config` inside `parsed`; throws gemmtune::Error when `parsed` is another backend's.
template <class Config>
const Config& config_of(const BackendConfig& parsed, const std::string& backend) {
  if (const auto* h = dynamic_cast<const BackendConfigOf<Config>*>(&parsed)) return h->config;
  throw Error(backend + ": handed the parsed config of another backend");
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
  virtual bool is_compiled(const Problem& p, const Candidate& c, const BackendConfig& cfg,
                           const DeviceInfo& dev) const {
    (void)p, (void)c, (void)cfg, (void)dev;
    return true;
  }

  // "" when this backend can run the problem at all, else the reason (e.g. "sm90: lda*2 bytes not 16-byte aligned").
  // From the problem and device alone: no probe of unavailable(), which enumerate_ranked asks next.
  virtual std::string supports(const Problem& p, const DeviceInfo& dev) const = 0;
  // How this backend runs a supported problem, one phrase for `list`: the path each operand takes where there is a
  // choice (e.g. "A, B: TMA; D: staged 16-byte stores (ldd=50257 is not a multiple of 8 elements)"). "" = nothing to say.
  virtual std::string path(const Problem& p, const DeviceInfo& dev) const {
    (void)p, (void)dev;
    return "";
  }
  // Candidates for the problem, best first by this backend's heuristic. Empty when supports() fails.
  // Backends that need the GPU to enumerate (cuBLASLt heuristics) throw NoGpuError without one.
  virtual std::vector<Candidate> enumerate(const Problem& p, const DeviceInfo& dev) const = 0;
  // The candidate's config, parsed once for the stages below. Throws gemmtune::Error with the reason on a malformed
  // config line or a candidate of another backend.
  virtual std::shared_ptr<const BackendConfig> parse(const Candidate& c) const = 0;
  // The reason validate() gives for a candidate that parse() rejected with `error`: the error itself, unless the
  // backend names a problem it cannot run first (cuBLASLt).
  virtual std::string parse_error_reason(const Problem& p, const DeviceInfo& dev, const std::string& error) const {
    (void)p, (void)dev;
    return error;
  }

  // The stages, on `cfg` = parse(c). The candidate comes along for its printed form (errors, kernel names).
  // "" when the candidate is valid for the problem, else why not. The same function prunes enumerate().
  virtual std::string validate(const Problem& p, const Candidate& c, const BackendConfig& cfg,
                               const DeviceInfo& dev) const = 0;
  // Compile without a GPU where possible. Throws gemmtune::Error (with the compiler log) on failure.
  virtual CompileResult compile(const Problem& p, const Candidate& c, const BackendConfig& cfg,
                                const DeviceInfo& dev) const = 0;
  // Load onto the current GPU. `compiled` is what compile() returned for the same (p, c).
  virtual std::unique_ptr<Executable> load(const Problem& p, const Candidate& c, const BackendConfig& cfg,
                                           const CompileResult& compiled) const = 0;

  // The same stages on the config string: each parses it, then runs the stage above. For a single call (the CLI's
  // --config check, tests); a pipeline parses once and passes the parsed config.
  std::string validate(const Problem& p, const Candidate& c, const DeviceInfo& dev) const {
    std::shared_ptr<const BackendConfig> cfg;
    try {
      cfg = parse(c);
    } catch (const Error& e) {
      return parse_error_reason(p, dev, e.what());
    }
    return validate(p, c, *cfg, dev);
  }
  CompileResult compile(const Problem& p, const Candidate& c, const DeviceInfo& dev) const {
    return compile(p, c, *parse(c), dev);
  }
  std::unique_ptr<Executable> load(const Problem& p, const Candidate& c, const CompileResult& compiled) const {
    return load(p, c, *parse(c), compiled);
  }
};

// The registry: all backends compiled into the library, in a fixed order.
const std::vector<std::shared_ptr<Backend>>& all_backends();
std::shared_ptr<Backend> find_backend(const std::string& name);  // nullptr if unknown

}  // namespace gemmtune
