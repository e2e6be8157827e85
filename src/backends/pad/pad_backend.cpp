// The pad backend: enumerate by wrapping the other backends' candidates for the padded problem, validate / compile /
// load by delegating to the inner backend, and an executable that copies, then launches the inner executable.
#include "backends/pad/pad_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "backends/config_fields.h"
#include "backends/jit_backend.h"
#include "backends/pad/pad_config.h"
#include "backends/stream_scratch.h"
#include "common/pad_copy_params.cuh"  // kernels/: the copy's parameters
#include "core/check.h"
#include "core/clock.h"
#include "cuda/driver.h"
#include "gemmtune/errors.h"
#include "jit/jit.h"

namespace gemmtune {
namespace {

using pad::Config;
using pad::Copy;

constexpr const char* kName = "pad";

// How many of each inner backend's candidates pad wraps, in that backend's rank order. The copy costs the same
// whichever kernel runs after it, so the few best-ranked kernels of each backend are the ones worth its time;
// cuBLASLt's default is its own heuristic's pick; triton's masked template reads unaligned operands itself, so a copy
// in front of it buys nothing. Backends not listed: kInnerTakeOther.
constexpr struct {
  const char* backend;
  size_t take;
} kInnerTake[] = {{"sm90", 4}, {"gemv", 2}, {"cublaslt", 1}, {"triton", 0}};
constexpr size_t kInnerTakeOther = 2;

size_t inner_take(const std::string& backend) {
  for (const auto& e : kInnerTake)
    if (backend == e.backend) return e.take;
  return kInnerTakeOther;
}

// The copied operands of a problem: those not aligned.
std::pair<bool, bool> unaligned(const Problem& p) { return {!pad::aligned(p, Which::A), !pad::aligned(p, Which::B)}; }

// pad's analysis of a problem: for each choice of copied operands (A, B, both), the padded problem the inner kernel
// runs and each inner backend's analysis of it (in the order of PadBackend::inner_).
struct Padded {
  ResolvedProblem problem;
  std::vector<std::shared_ptr<const BackendAnalysis>> inner;
};
struct Analysis {
  std::vector<Padded> padded;
  const Padded& of(bool a, bool b) const { return padded[a && b ? 2 : b ? 1 : 0]; }
};

// A pad candidate's config as parse() made it: the pad part, the inner backend (its index in inner_ and Padded::inner).
struct Parsed {
  Config cfg;
  std::shared_ptr<const Backend> inner;
  size_t inner_index = 0;
  std::shared_ptr<const BackendConfig> inner_cfg;
};

// What compile() hands load(): the inner backend's compile of the padded problem and the copy kernels.
struct Artifact {
  CompileResult inner;
  std::shared_ptr<const jit::Cubin> copy_a, copy_b;  // null for an operand not copied
};

class PadExecutable final : public Executable {
 public:
  PadExecutable(const Problem& p, const Candidate& cand, const Config& cfg, std::unique_ptr<Executable> inner,
                const Artifact& art)
      : cand_(cand), inner_(std::move(inner)) {
    cuda::ensure_context();
    const std::shared_ptr<const jit::Cubin> cubins[2] = {art.copy_a, art.copy_b};
    const bool on[2] = {cfg.a, cfg.b};
    for (int i = 0; i < 2; ++i) {
      if (!on[i]) continue;
      GT_REQUIRE(cubins[i], "pad: load() needs the CompileResult of compile() (" + cand_.str() + ")");
      Op& o = ops_[i];
      o.on = true;
      o.copy = pad::copy_of(p, i == 0 ? Which::A : Which::B);
      o.align = (i == 0 ? p.a : p.b).align;
      o.launch = pad::copy_launch(o.copy);
      o.offset = i == 0 ? 0 : pad::b_offset(p, cfg.a);
      o.cubin = cubins[i];
      o.fn = jit::load(*o.cubin);
    }
    // The copies of each stream launched on; the first stream's are made here, so that the usual single-stream use
    // never allocates in launch() (which may be captured into a CUDA graph).
    scratch_ = StreamScratch("pad: an executable", cand_.str(),
                             static_cast<size_t>(pad::workspace_bytes(p, cfg.a, cfg.b)), 0);
    scratch_.make_first();
  }

  const Candidate& candidate() const override { return cand_; }

  void launch(const GemmArgs& args, Stream stream) override {
    GT_REQUIRE(args.a && args.b && args.d, "pad: A, B and D pointers must be non-null");
    const void* src[2] = {args.a, args.b};
    // The copy reads with loads as wide as the declared alignment allows (Gemm::run checks it too; a caller that
    // launches directly may not have).
    for (int i = 0; i < 2; ++i)
      if (ops_[i].on && reinterpret_cast<uintptr_t>(src[i]) % static_cast<uintptr_t>(ops_[i].align) != 0)
        GT_THROW(std::string("pad: the ") + "AB"[i] + " pointer is not " + std::to_string(ops_[i].align) +
                 "-byte aligned, as the problem declares (" + cand_.str() + ")");
    std::lock_guard<std::mutex> lk(mu_);  // the per-stream workspace; the copies and the GEMM of a stream in order
    const CUstream s = reinterpret_cast<CUstream>(stream);
    char* ws = static_cast<char*>(scratch_.get(s).ws);
    GemmArgs inner = args;
    for (int i = 0; i < 2; ++i) {
      const Op& o = ops_[i];
      if (!o.on) continue;
      gt_pad::PadCopyParams cp{};
      cp.src = src[i];
      cp.dst = ws + o.offset;
      cp.src_ld = o.copy.src_ld, cp.src_bs = o.copy.src_bs;
      cp.dst_ld = o.copy.dst_ld, cp.dst_bs = o.copy.dst_bs;
      cp.inner = o.copy.inner, cp.lines = o.copy.lines, cp.chunks = o.copy.chunks, cp.batch = o.copy.batch;
      cp.lane_bits = o.launch.lane_bits;
      void* kargs[1] = {&cp};
      GT_CU(cuLaunchKernel(o.fn, o.launch.grid[0], o.launch.grid[1], o.launch.grid[2], gt_pad::kPadCopyThreads, 1, 1,
                           0, s, kargs, nullptr));
      (i == 0 ? inner.a : inner.b) = cp.dst;
    }
    inner_->launch(inner, stream);
  }

 private:
  struct Op {
    bool on = false;
    Copy copy;
    pad::CopyLaunch launch;
    int align = 16;      // bytes the source pointer is declared a multiple of
    int64_t offset = 0;  // of the copy in a stream's workspace
    std::shared_ptr<const jit::Cubin> cubin;
    CUfunction fn = nullptr;
  };

  Candidate cand_;
  std::unique_ptr<Executable> inner_;  // loaded for the padded problem
  Op ops_[2];                          // A, B
  std::mutex mu_;
  StreamScratch scratch_;
};

class PadBackend final : public Backend {
 public:
  explicit PadBackend(std::vector<std::shared_ptr<Backend>> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return kName; }
  // Its copy kernels come from NVRTC; the kernels it wraps are their own backends' (each in the key when enabled).
  std::string fingerprint() const override { return name() + "@nvrtc" + jit::nvrtc_version(); }

  std::string supports(const ResolvedProblem& p, const DeviceInfo& dev) const override {
    return pad::problem_reason(p, dev);
  }

  std::shared_ptr<const BackendAnalysis> analyze(const ResolvedProblem& p) const override {
    Analysis an;
    for (auto [a, b] : {std::pair{true, false}, std::pair{false, true}, std::pair{true, true}}) {
      Padded q{resolve(pad::padded_problem(p, a, b)), {}};
      for (const auto& inner : inner_) q.inner.push_back(inner->analyze(q.problem));
      an.padded.push_back(std::move(q));
    }
    return std::make_shared<const BackendAnalysisOf<Analysis>>(std::move(an));
  }

  std::string path(const ResolvedProblem& p, const BackendAnalysis&, const DeviceInfo&) const override {
    return pad::path(p);
  }

  std::vector<Candidate> enumerate(const ResolvedProblem& p, const BackendAnalysis& an,
                                   const DeviceInfo& dev) const override {
    if (!pad::problem_reason(p, dev).empty()) return {};
    const auto [a, b] = unaligned(p);
    const Padded& q = analysis_of<Analysis>(an, kName).of(a, b);
    std::vector<std::vector<Candidate>> per;
    std::string no_gpu;
    for (size_t i = 0; i < inner_.size(); ++i) {
      const auto& inner = inner_[i];
      if (!inner->supports(q.problem, dev).empty()) continue;
      std::vector<Candidate> r;
      try {
        r = inner->enumerate(q.problem, *q.inner[i], dev);
      } catch (const NoGpuError& e) {
        if (dev.real) throw;
        no_gpu = e.what();
        continue;
      }
      r.resize(std::min(r.size(), inner_take(inner->name())));
      per.push_back(std::move(r));
    }
    // Best first across backends: every backend's first, then every second, ... so that a top-k keeps each one's best.
    std::vector<Candidate> out;
    for (size_t rank = 0;; ++rank) {
      bool any = false;
      for (const auto& r : per) {
        if (rank >= r.size()) continue;
        any = true;
        Config c;
        c.a = a, c.b = b, c.inner = r[rank];
        out.push_back(Candidate{kName, c.str()});
      }
      if (!any) break;
    }
    if (out.empty() && !no_gpu.empty()) throw NoGpuError("pad: " + no_gpu);
    return out;
  }

  std::shared_ptr<const BackendConfig> parse(const Candidate& c) const override {
    if (c.backend != kName) throw Error("pad: candidate is for backend '" + c.backend + "'");
    Parsed r;
    r.cfg = Config::parse(c.config);
    for (size_t i = 0; i < inner_.size(); ++i)
      if (inner_[i]->name() == r.cfg.inner.backend) r.inner = inner_[i], r.inner_index = i;
    if (!r.inner) throw Error("pad: config '" + c.config + "': unknown inner backend '" + r.cfg.inner.backend + "'");
    try {
      r.inner_cfg = r.inner->parse(r.cfg.inner);
    } catch (const Error& e) {
      throw Error("pad: config '" + c.config + "': inner candidate: " + e.what());
    }
    return std::make_shared<const BackendConfigOf<Parsed>>(std::move(r));
  }

  // A problem with nothing to pad is named before anything about the config, as validate() does.
  std::string parse_error_reason(const ResolvedProblem& p, const DeviceInfo& dev,
                                 const std::string& error) const override {
    if (std::string why = pad::problem_reason(p, dev); !why.empty()) return why;
    return error;
  }

  using Backend::compile, Backend::enumerate, Backend::load, Backend::path, Backend::validate;  // single calls

  std::string validate(const ResolvedProblem& p, const BackendAnalysis& an, const Candidate& c,
                       const BackendConfig& parsed, const DeviceInfo& dev) const override {
    if (std::string why = pad::problem_reason(p, dev); !why.empty()) return why;
    const Parsed& r = config_of<Parsed>(parsed, kName);
    for (Which w : {Which::A, Which::B})
      if ((w == Which::A ? r.cfg.a : r.cfg.b) && pad::aligned(p, w))
        return std::string("pad: the config copies ") + which_name(w) + ", which is aligned already (nothing to pad)";
    const Padded& q = analysis_of<Analysis>(an, kName).of(r.cfg.a, r.cfg.b);
    if (std::string why = r.inner->validate(q.problem, *q.inner[r.inner_index], r.cfg.inner, *r.inner_cfg, dev);
        !why.empty())
      return "pad: on the padded problem: " + why;
    return config::canonical_reason(kName, c.config, r.cfg.str());
  }

  // A wrapped candidate compiles as slowly as its inner backend: pad is a slow-compile backend when any backend it
  // wraps is one, and a candidate of it is compiled when its inner kernel is (the copies are NVRTC-fast).
  bool slow_compile() const override {
    for (const auto& b : inner_)
      if (b->slow_compile()) return true;
    return false;
  }
  bool is_compiled(const ResolvedProblem& p, const BackendAnalysis& an, const Candidate& c,
                   const BackendConfig& parsed, const DeviceInfo& dev) const override {
    (void)c;
    const Parsed& r = config_of<Parsed>(parsed, kName);
    const Padded& q = analysis_of<Analysis>(an, kName).of(r.cfg.a, r.cfg.b);
    return r.inner->is_compiled(q.problem, *q.inner[r.inner_index], r.cfg.inner, *r.inner_cfg, dev);
  }

  CompileResult compile(const ResolvedProblem& p, const BackendAnalysis& an, const Candidate& c,
                        const BackendConfig& parsed, const DeviceInfo& dev) const override {
    const auto t0 = std::chrono::steady_clock::now();
    if (std::string why = validate(p, an, c, parsed, dev); !why.empty()) GT_THROW(why);
    const Parsed& r = config_of<Parsed>(parsed, kName);
    const Padded& q = analysis_of<Analysis>(an, kName).of(r.cfg.a, r.cfg.b);
    auto art = std::make_shared<Artifact>();
    art->inner = r.inner->compile(q.problem, *q.inner[r.inner_index], r.cfg.inner, *r.inner_cfg, dev);
    // The report is the inner kernel's (registers, shared memory, spills: what ranks and rejects a GEMM), with the
    // copies' logs and cache hits added.
    CompileResult out = art->inner;
    out.compiled = true;
    out.cache_hit = !art->inner.compiled || art->inner.cache_hit;
    const std::string context = c.str() + " for " + p->str();
    for (Which w : {Which::A, Which::B}) {
      if (!(w == Which::A ? r.cfg.a : r.cfg.b)) continue;
      auto cubin = compile_jit_cubin(pad::copy_unit(pad::copy_of(p, w), dev), context);
      out.cache_hit = out.cache_hit && cubin->cache_hit;
      if (cubin->spill_bytes > 0) out.spill_bytes = std::max(out.spill_bytes, 0) + cubin->spill_bytes;
      if (!cubin->log.empty()) out.log += (out.log.empty() ? "" : "\n") + cubin->log;
      (w == Which::A ? art->copy_a : art->copy_b) = std::move(cubin);
    }
    out.artifact = std::static_pointer_cast<const void>(std::shared_ptr<const Artifact>(std::move(art)));
    out.compile_ms = ms_since(t0);
    return out;
  }

  std::unique_ptr<Executable> load(const ResolvedProblem& p, const BackendAnalysis& an, const Candidate& c,
                                   const BackendConfig& parsed, const CompileResult& compiled) const override {
    const Parsed& r = config_of<Parsed>(parsed, kName);
    GT_REQUIRE(compiled.artifact, "pad: load() needs the CompileResult of compile() (" + c.str() + ")");
    const auto& art = *std::static_pointer_cast<const Artifact>(compiled.artifact);
    const Padded& q = analysis_of<Analysis>(an, kName).of(r.cfg.a, r.cfg.b);
    std::unique_ptr<Executable> inner = r.inner->load(q.problem, *q.inner[r.inner_index], r.cfg.inner, *r.inner_cfg,
                                                      art.inner);
    return std::make_unique<PadExecutable>(p, c, r.cfg, std::move(inner), art);
  }

 private:
  std::vector<std::shared_ptr<Backend>> inner_;  // the backends whose candidates it wraps (the registry's others)
};

}  // namespace

std::shared_ptr<Backend> make_pad_backend(std::vector<std::shared_ptr<Backend>> inner) {
  return std::make_shared<PadBackend>(std::move(inner));
}

namespace pad {

JitUnit copy_unit(const Copy& c, const DeviceInfo& dev) {
  auto source = [&](const std::string& name) {
    return "#include \"common/pad_copy.cuh\"\n"
           "extern \"C\" __global__ void __launch_bounds__(" +
           std::to_string(gt_pad::kPadCopyThreads) + ") " + name + "(const gt_pad::PadCopyParams p) {\n" +
           "  gt_pad::pad_copy<" + std::to_string(c.elem_bytes) + ", " + std::to_string(c.load_bytes) + ">(p);\n}\n";
  };
  JitUnit u;
  u.name = jit_kernel_name("gt_pad_copy", source("KERNEL"));
  u.source = source(u.name);
  u.arch = jit_arch(dev);
  return u;
}

std::string path(const ResolvedProblem& p) {
  if (std::string why = problem_reason(p, DeviceInfo{}); !why.empty()) return why;
  std::string what;
  for (Which w : {Which::A, Which::B})
    if (!aligned(p, w))
      what += (what.empty() ? "" : " and ") + std::string(which_name(w)) + " (" + misalignment(p, w) + ")";
  return "copies " + what + " into a 16-byte pitched workspace per stream, then runs the aligned kernel";
}

}  // namespace pad

}  // namespace gemmtune
