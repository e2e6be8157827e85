#include "backends/cublaslt/cublaslt_backend.h"
#include "backends/jit_result.h"

#include <chrono>
#include <optional>
#include <vector>

#include "backends/cublaslt/cublaslt_algos.h"
#include "backends/cublaslt/cublaslt_config.h"
#include "backends/cublaslt/cublaslt_executable.h"
#include "backends/cublaslt/cublaslt_library.h"
#include "backends/cublaslt/cublaslt_problem.h"
#include "core/check.h"
#include "core/clock.h"
#include "gemmtune/errors.h"
#include "jit/jit.h"

namespace gemmtune {
namespace cublaslt {
namespace {

class CublasLtBackend final : public Backend {
 public:
  std::string name() const override { return kName; }
  // The algorithms are cuBLASLt's; a separate epilogue is an NVRTC kernel.
  std::string fingerprint() const override {
    return name() + "@" + cublaslt_version() + "+nvrtc" + jit::nvrtc_version();
  }

  std::string supports(const ResolvedProblem& p, const DeviceInfo& dev) const override {
    return problem_reason(p, dev);
  }

  std::string path(const ResolvedProblem& rp, const BackendAnalysis&, const DeviceInfo& dev) const override {
    const Problem& p = rp;
    if (!fp8_problem(p) || !problem_reason(rp, dev).empty()) return "";
    int32_t ma, mb;
    scale_modes(p.scaling, ma, mb);
    std::string s = dn(p.a.dtype) + " x " + dn(p.b.dtype) + ", " + std::string(scaling_name(p.scaling)) + " scales (";
    s += ma == mb ? std::string(scale_mode_name(ma)) : std::string("A ") + scale_mode_name(ma) + ", B " + scale_mode_name(mb);
    s += ")";
    if (p.d.dtype == DType::e4m3) s += p.amax ? ", D scaled by scale_d, amax" : ", D scaled by scale_d";
    return s;
  }

  std::vector<Candidate> enumerate(const ResolvedProblem& rp, const BackendAnalysis&,
                                   const DeviceInfo& dev) const override {
    const Problem& p = rp;
    if (!problem_reason(rp, dev).empty()) return {};
    (void)lt_handle();  // throws NoGpuError without a GPU: the heuristic needs the device
    // fp8: the algorithms of the problem's accumulation mode (fast_accum=1 for fp8_accum=fast, else 0).
    std::optional<bool> accum;
    if (fp8_problem(p)) accum = p.fp8_accum == Fp8Accum::fast;
    auto all = [&](EpiMode mode) { return list_algos(p, mode, accum); };
    if (p.epilogue.empty()) return all(EpiMode::none);
    cublasLtEpilogue_t ep;
    if (!native_epilogue(p, ep).empty()) return all(EpiMode::separate);
    std::vector<Candidate> out = all(EpiMode::fused);
    if (p.d.dtype != DType::e4m3)  // the unfused baseline (an e4m3 D cannot run it: see problem_reason)
      out.push_back({kName, CandidateConfig{kDefaultConfig, accum, EpiMode::separate}.str()});
    return out;
  }

  std::shared_ptr<const BackendConfig> parse(const Candidate& c) const override {
    if (c.backend != kName) throw Error("cublaslt: candidate of backend '" + c.backend + "'");
    LtConfig cfg;
    cfg.split = CandidateConfig::parse(c.config);  // throws on a bad suffix
    if (!is_default_config(cfg.split.algo)) {
      try {
        cfg.algo = AlgoConfig::parse(cfg.split.algo);
      } catch (const Error& e) {
        cfg.algo_error = e.what();
      }
    }
    return std::make_shared<const BackendConfigOf<LtConfig>>(std::move(cfg));
  }

  // A problem this backend cannot run is named before anything about the config.
  std::string parse_error_reason(const ResolvedProblem& p, const DeviceInfo& dev,
                                 const std::string& error) const override {
    if (std::string why = problem_reason(p, dev); !why.empty()) return why;
    return error;
  }

  using Backend::compile, Backend::enumerate, Backend::load, Backend::path, Backend::validate;  // single calls

  std::string validate(const ResolvedProblem& rp, const BackendAnalysis& an, const Candidate& c,
                       const BackendConfig& parsed, const DeviceInfo& dev) const override {
    const Problem& p = rp;
    if (std::string why = problem_reason(rp, dev); !why.empty()) return why;
    const LtConfig& cfg = config_of<LtConfig>(parsed, kName);
    if (std::string why = config_reason(p, cfg.split); !why.empty()) return why;
    if (is_default_config(cfg.split.algo)) return "";
    if (!cfg.algo) return cfg.algo_error;
    // Whether cuBLASLt accepts the algorithm for this problem can only be asked with a GPU; without one the syntax
    // is all we can check (load() checks again).
    if (!gpu_available()) return "";
    const LtProblem lp = map_problem(p, cfg.split.epi, cfg.split.fast_accum.value_or(false));
    LtDescs ds(lp);
    cublasLtMatmulAlgo_t algo{};
    if (std::string why = algo_from_config(*cfg.algo, lp, algo); !why.empty()) return why;
    return check_algo(algo, ds).reason;
  }

  CompileResult compile(const ResolvedProblem& rp, const BackendAnalysis& an, const Candidate& c,
                        const BackendConfig& parsed, const DeviceInfo& dev) const override {
    const auto t0 = std::chrono::steady_clock::now();
    const Problem& p = rp;
    if (std::string why = problem_reason(rp, dev); !why.empty()) GT_THROW(why);
    const LtConfig& cfg = config_of<LtConfig>(parsed, kName);
    if (std::string why = config_reason(p, cfg.split); !why.empty()) GT_THROW(why);
    if (!cfg.algo_error.empty()) throw Error(cfg.algo_error);
    CompileResult r;  // cuBLASLt kernels ship with the library; only a separate epilogue is compiled
    if (cfg.split.epi == EpiMode::separate) r = jit_compile_result(compile_elementwise(p, c));
    r.compile_ms = ms_since(t0);
    return r;
  }

  std::unique_ptr<Executable> load(const ResolvedProblem& rp, const BackendAnalysis& an, const Candidate& c,
                                   const BackendConfig& parsed, const CompileResult& compiled) const override {
    const Problem& p = rp;
    DeviceInfo dev;  // arch was checked by supports(); only the problem matters here
    if (std::string why = problem_reason(rp, dev); !why.empty()) GT_THROW(why);
    GT_REQUIRE(c.backend == kName, "cublaslt: cannot load a candidate of backend '" + c.backend + "'");
    const LtConfig& cfg = config_of<LtConfig>(parsed, kName);
    if (std::string why = config_reason(p, cfg.split); !why.empty()) GT_THROW(why);
    return make_executable(p, c, cfg, std::static_pointer_cast<const jit::Cubin>(compiled.artifact));
  }
};

}  // namespace
}  // namespace cublaslt

std::shared_ptr<Backend> make_cublaslt_backend() { return std::make_shared<cublaslt::CublasLtBackend>(); }

}  // namespace gemmtune
