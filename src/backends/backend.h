#pragma once
// The interface every backend implements. One-way flow:
//   Problem -> enumerate() -> Candidate -> compile() (no GPU needed) -> load() (GPU) -> Executable::launch()
#include <memory>
#include <string>
#include <vector>

#include "gemmtune/candidate.h"
#include "gemmtune/device.h"
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

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;

  // "" when this backend can run the problem at all, else the reason (e.g. "sm90: lda*2 bytes not 16-byte aligned").
  virtual std::string supports(const Problem& p, const DeviceInfo& dev) const = 0;
  // Candidates for the problem, best first by this backend's heuristic. Empty when supports() fails.
  // Backends that need the GPU to enumerate (cuBLASLt heuristics) throw NoGpuError without one.
  virtual std::vector<Candidate> enumerate(const Problem& p, const DeviceInfo& dev) const = 0;
  // "" when the candidate is valid for the problem, else why not. The same function prunes enumerate().
  virtual std::string validate(const Problem& p, const Candidate& c, const DeviceInfo& dev) const = 0;
  // Compile without a GPU where possible. Throws gemmtune::Error (with the compiler log) on failure.
  virtual CompileResult compile(const Problem& p, const Candidate& c, const DeviceInfo& dev) const = 0;
  // Load onto the current GPU. `compiled` is what compile() returned for the same (p, c).
  virtual std::unique_ptr<Executable> load(const Problem& p, const Candidate& c, const CompileResult& compiled) const = 0;
};

// The registry: all backends compiled into the library, in a fixed order.
const std::vector<std::shared_ptr<Backend>>& all_backends();
std::shared_ptr<Backend> find_backend(const std::string& name);  // nullptr if unknown

}  // namespace gemmtune
