// The cutlass backend: enumerate / validate via cutlass_config, the generated unit, nvcc into a cached shared object,
// load (dlopen) and launch through the object's C entry points.
#include "backends/cutlass/cutlass_backend.h"

#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>

#include "backends/config_fields.h"
#include "backends/cutlass/cutlass_abi.h"
#include "backends/cutlass/cutlass_codegen.h"
#include "backends/cutlass/cutlass_config.h"
#include "backends/cutlass/cutlass_nvcc.h"
#include "backends/stream_scratch.h"
#include "core/check.h"
#include "core/clock.h"
#include "cuda/driver.h"
#include "gemmtune/errors.h"

namespace gemmtune {
namespace {

using cutlass_be::Config;
constexpr const char* kName = "cutlass";

// What compile() hands to load(): the loaded object.
struct Artifact {
  std::shared_ptr<const cutlass_be::SharedObject> so;
};

class CutlassExecutable final : public Executable {
 public:
  CutlassExecutable(const Problem& p, const Candidate& cand, std::shared_ptr<const cutlass_be::SharedObject> so)
      : cand_(cand), problem_(p), so_(std::move(so)) {
    cuda::ensure_context();  // the primary context, which the CUDA runtime inside the object uses as well
    const std::string want = cutlass_be::unit_ident(cutlass_be::Config::parse(cand.config), p);
    GT_REQUIRE(want == so_->ident(), "cutlass: loaded object was built for '" + std::string(so_->ident()) +
                                         "', expected '" + want + "'");
    std::memset(&base_, 0, sizeof base_);
    base_.m = p.m, base_.n = p.n, base_.k = p.k, base_.l = p.batch;
    base_.lda = p.a.ld, base_.ldb = p.b.ld, base_.ldc = p.beta != 0.0f ? p.c.ld : p.d.ld, base_.ldd = p.d.ld;
    // One batch: no batch stride (CUTLASS checks every stride's TMA alignment, a meaningless one included).
    if (p.batch > 1) {
      base_.bsa = p.a.batch_stride, base_.bsb = p.b.batch_stride;
      base_.bsc = p.beta != 0.0f ? p.c.batch_stride : p.d.batch_stride, base_.bsd = p.d.batch_stride;
    }
    base_.alpha = p.alpha, base_.beta = p.beta;
    base_.sm_count = current_device().sm_count;
    // CUTLASS's own check of the shapes and strides, once (pointers do not enter it).
    if (const char* e = so_->check(&base_)) GT_THROW("cutlass: can_implement refused " + cand_.str() + ": " + e);
    scratch_ = StreamScratch("cutlass: an executable", cand_.str(), so_->workspace(&base_), 0);
    scratch_.make_first();
  }
  ~CutlassExecutable() override {
    for (auto& e : params_) so_->destroy(e.handle);
  }

  const Candidate& candidate() const override { return cand_; }

  void launch(const GemmArgs& args, Stream stream) override {
    cuda::ensure_context();  // the CUDA runtime in the object launches on the thread's current (primary) context
    auto aligned16 = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
    GT_REQUIRE(args.a && args.b && args.d, "cutlass: A, B and D pointers must be non-null");
    GT_REQUIRE(aligned16(args.a) && aligned16(args.b) && aligned16(args.d),
               "cutlass: A, B and D pointers must be 16-byte aligned (TMA) (" + cand_.str() + ")");
    GtCutlassArgs x = base_;
    x.a = args.a, x.b = args.b, x.d = args.d;
    if (problem_.beta != 0.0f) {
      GT_REQUIRE(args.c, "cutlass: C pointer is null but beta != 0");
      GT_REQUIRE(aligned16(args.c), "cutlass: the C pointer must be 16-byte aligned (TMA) (" + cand_.str() + ")");
      x.c = args.c;
    }
    if (problem_.scaling != Scaling::none) {
      // fp8: the dequantization scales (fp32; one each with tensor scaling, M and N with row scaling).
      GT_REQUIRE(args.scale_a && args.scale_b, "cutlass: scale_a and scale_b must be non-null (fp8 inputs, scaling=" +
                                                   std::string(scaling_name(problem_.scaling)) + ")");
      x.scale_a = args.scale_a, x.scale_b = args.scale_b;
    }
    for (const EpiOp& op : problem_.epilogue.ops) {
      const size_t es = dtype_size(problem_.epilogue_dtype(op.kind));
      auto need = [&](const void* ptr, const char* what) {
        GT_REQUIRE(ptr, std::string("cutlass: the epilogue has ") + op.key() + " but GemmArgs::" + what + " is null");
        GT_REQUIRE(reinterpret_cast<uintptr_t>(ptr) % es == 0,
                   std::string("cutlass: GemmArgs::") + what + " is not element-aligned");
        return ptr;
      };
      if (op.kind == EpiOpKind::bias_col || op.kind == EpiOpKind::bias_row) x.bias = need(args.bias, "bias");
      if (op.kind == EpiOpKind::row_scale) x.row_scale = need(args.row_scale, "row_scale");
      if (op.kind == EpiOpKind::col_scale) x.col_scale = need(args.col_scale, "col_scale");
      if (op.kind == EpiOpKind::residual) {
        x.residual = need(args.residual, "residual");
        GT_REQUIRE(aligned16(args.residual),
                   "cutlass: the residual pointer must be 16-byte aligned (TMA) (" + cand_.str() + ")");
      }
    }
    std::lock_guard<std::mutex> lk(mu_);
    x.workspace = scratch_.get(reinterpret_cast<CUstream>(stream)).ws;
    void* h = params_for(x, stream);
    if (const char* e = so_->run(h, stream)) GT_THROW("cutlass: launch failed: " + std::string(e) + " (" + cand_.str() + ")");
  }

 private:
  // The kernel's Params (TMA descriptors, scheduler) for one argument set, built on first use and kept: the tuner's
  // timing loops cycle through a few buffer sets, and encoding the descriptors costs microseconds a call.
  struct Entry {
    GtCutlassArgs args;
    void* handle;
  };
  static constexpr size_t kMaxParams = 32;
  void* params_for(const GtCutlassArgs& x, Stream stream) {
    for (auto& e : params_)
      if (std::memcmp(&e.args, &x, sizeof x) == 0) return e.handle;
    if (params_.size() == kMaxParams) {
      so_->destroy(params_.front().handle);
      params_.pop_front();
    }
    void* h = so_->create();
    GT_REQUIRE(h, "cutlass: out of host memory");
    if (const char* e = so_->init(h, &x, stream)) {
      so_->destroy(h);
      GT_THROW("cutlass: initialize failed: " + std::string(e) + " (" + cand_.str() + ")");
    }
    params_.push_back({x, h});
    return h;
  }

  Candidate cand_;
  Problem problem_;
  std::shared_ptr<const cutlass_be::SharedObject> so_;
  GtCutlassArgs base_;  // everything but the pointers
  std::mutex mu_;
  StreamScratch scratch_;
  std::deque<Entry> params_;
};

class CutlassBackend final : public Backend {
 public:
  std::string name() const override { return kName; }

  std::string unavailable() const override { return cutlass_be::toolchain_error(); }
  bool slow_compile() const override { return true; }
  bool is_compiled(const ResolvedProblem& p, const BackendAnalysis& an, const Candidate& c,
                   const BackendConfig& parsed, const DeviceInfo& dev) const override {
    if (!unavailable().empty() || !validate(p, an, c, parsed, dev).empty()) return true;  // nothing to compile
    return cutlass_be::is_built(cutlass_be::unit_key(source(p, parsed)));
  }

  // The problem alone: the toolchain is looked for (Python, nvcc --version) only for a problem that has candidates.
  std::string supports(const ResolvedProblem& p, const DeviceInfo& dev) const override {
    return cutlass_be::problem_reason(p, dev);
  }

  std::vector<Candidate> enumerate(const ResolvedProblem& p, const BackendAnalysis&,
                                   const DeviceInfo& dev) const override {
    // Unavailable: no candidates, so that a wrapping backend (pad) does not list any either.
    if (!unavailable().empty()) return {};
    return config::candidates(kName, cutlass_be::enumerate_configs(p, dev));
  }

  std::shared_ptr<const BackendConfig> parse(const Candidate& c) const override {
    return config::parse_candidate<Config>(kName, c);
  }

  using Backend::compile, Backend::enumerate, Backend::load, Backend::path, Backend::validate;  // single calls

  std::string validate(const ResolvedProblem& p, const BackendAnalysis& an, const Candidate& c,
                       const BackendConfig& parsed, const DeviceInfo& dev) const override {
    return config::validate_canonical(kName, c, config_of<Config>(parsed, kName),
                              [&](const Config& cfg) { return cutlass_be::config_reason(cfg, p, dev); });
  }

  CompileResult compile(const ResolvedProblem& p, const BackendAnalysis& an, const Candidate& c,
                        const BackendConfig& parsed, const DeviceInfo& dev) const override {
    const auto t0 = Clock::now();
    if (std::string r = validate(p, an, c, parsed, dev); !r.empty()) GT_THROW(r);
    const Config& cfg = config_of<Config>(parsed, kName);
    const cutlass_be::BuildResult b = cutlass_be::build(source(p, parsed), cutlass_be::unit_ident(cfg, p));
    CompileResult r;
    r.compiled = true;
    r.cache_hit = b.cache_hit;
    // A build's own nvcc time, not the wait for an nvcc slot (cutlass_nvcc.h) that a parallel compile may add.
    r.compile_ms = b.cache_hit ? ms_since(t0) : b.nvcc_ms;
    r.log = b.log;
    cutlass_be::ptxas_resources(b.log, r.registers, r.spill_bytes);
    r.artifact = std::make_shared<const Artifact>(Artifact{b.so});
    return r;
  }

  std::unique_ptr<Executable> load(const ResolvedProblem& p, const BackendAnalysis& an, const Candidate& c,
                                   const BackendConfig& parsed, const CompileResult& compiled) const override {
    (void)parsed;
    auto a = std::static_pointer_cast<const Artifact>(compiled.artifact);
    GT_REQUIRE(a && a->so, "cutlass: load of " + c.str() + " without its compiled object");
    return std::make_unique<CutlassExecutable>(p, c, a->so);
  }

 private:
  static std::string source(const Problem& p, const BackendConfig& parsed) {
    return cutlass_be::generate_unit(config_of<Config>(parsed, kName), p);
  }
};

}  // namespace

std::shared_ptr<Backend> make_cutlass_backend() { return std::make_shared<CutlassBackend>(); }

std::string cutlass_unit_source(const Problem& p, const std::string& config) {
  const Config c = Config::parse(config);
  if (std::string r = cutlass_be::problem_reason(p, DeviceInfo::assumed_sm90()); !r.empty()) GT_THROW(r);
  return cutlass_be::generate_unit(c, p);
}

}  // namespace gemmtune
