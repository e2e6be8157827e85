// The sm90 backend: enumerate/validate via sm90_config, JIT unit generation, NVRTC compile, load and launch.
#include "backends/sm90/sm90_backend.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "backends/sm90/sm90_cluster_order.h"
#include "backends/sm90/sm90_config.h"
#include "backends/sm90/sm90_plan.h"
#include "backends/config_fields.h"
#include "backends/jit_backend.h"
#include "backends/stream_scratch.h"
#include "core/check.h"
#include "core/epilogue_codegen.h"
#include "cuda/driver.h"
#include "cuda/memory.h"
#include "gemmtune/errors.h"
#include "jit/jit.h"

#include "core/env.h"

namespace gemmtune {
namespace {

using sm90::Config;
using sm90::KernelView;

// The compile-time problem class: what the kernel template is specialised on besides the config.
std::string problem_class(const KernelView& v) {
  return std::string("amn=") + (v.a_mn ? "1" : "0") + ",bmn=" + (v.b_mn ? "1" : "0") + ",in=" + std::to_string(v.a.type) +
         ",out=" + std::to_string(v.d.type) + ",ct=" + std::to_string(v.has_c ? v.c.type : 0) +
         ",c=" + (v.has_c ? "1" : "0") +
         (v.scale != gt_sm90::kScaleNone ? ",inb=" + std::to_string(v.b.type) + ",sc=" + std::to_string(v.scale) : "");
}

// The fused epilogue's compile-time part: "" for the plain problem (EpilogueTmaStore, the unchanged fast path), else
// the chain's type and whether kernel rows are D's columns (col-major D solved transposed).
std::string epilogue_class(const Problem& p, const KernelView& v) {
  if (p.epilogue.empty()) return "";
  return epi::chain_type(p) + (v.transposed ? ", true" : ", false");
}

// Compile-time epilogue flags (kernels/epilogue/epilogue_tma_store.cuh: kEpiDirect, kEpiVecC, kEpiVecOps, kEpiNoTmaD),
// from the kernel view: the edge path exists only where TMA stores cannot clip exactly, the copy-out of every strip
// only where TMA cannot store D at all, pair loads only where every pair is contiguous and aligned to two elements
// (even pitch, batch stride and first column, and a pointer declared that aligned). Emitted into the unit (so part of
// the kernel cache key) as an expression of the flag names.
struct EpiFlags {
  bool direct = false, vec_c = false, vec_ops = false, alpha_one = false, no_tma_d = false;
  std::string expr() const {
    std::string s;
    auto add = [&](bool on, const char* n) {
      if (on) s += (s.empty() ? "" : " | ") + std::string("gt_sm90::") + n;
    };
    add(direct, "kEpiDirect");
    add(vec_c, "kEpiVecC");
    add(vec_ops, "kEpiVecOps");
    add(alpha_one, "kEpiAlphaOne");
    add(no_tma_d, "kEpiNoTmaD");
    return s.empty() ? "0" : s;
  }
};

EpiFlags epi_flags(const Problem& p, const KernelView& v) {
  EpiFlags f;
  f.alpha_one = p.alpha == 1.0f;
  if (v.swap) return f;  // EpilogueTransposedStore stores every element on its own: no edge path, no pair loads
  const int64_t n_out = p.epilogue.has_glu() ? v.n / 2 : v.n;
  f.no_tma_d = !sm90::d_tma_store(v);
  f.direct = !f.no_tma_d && sm90::epi_direct(p, v);
  // Pairs (col even, col + 1) of an operand with pitch `ld` and batch stride `bs` start at an even element when both
  // are even; the pointer must then be aligned to two elements (declared so here, checked at launch).
  const auto pairs = [&](const sm90::OperandDesc& o, int es) {
    return o.ld % 2 == 0 && (v.batch == 1 || o.batch_stride % 2 == 0) && o.align % (2 * es) == 0;
  };
  f.vec_c = v.has_c && v.c.row_major && v.n % 2 == 0 && pairs(v.c, sm90::elem_size(v.c.type));
  // The residual is D-shaped (D's ld and batch stride; its pointer taken as aligned like D's).
  const EpiOp* res = p.epilogue.find(EpiOpKind::residual);
  f.vec_ops = !p.epilogue.empty() && n_out % 2 == 0 &&
              (!res || pairs(v.d, static_cast<int>(dtype_size(p.epilogue_dtype(EpiOpKind::residual)))));
  return f;
}

// The part of a config its kernel is compiled from: the tile walk (raster, group, tiles=gpc) is a launch parameter.
Config kernel_config(Config c) {
  if (c.gpc()) c.tiles = sm90::TileOrder::static_order;
  c.raster_n = false;
  c.group = 1;
  return c;
}

std::string kernel_name(const Config& c, const KernelView& v, const std::string& epi_class) {
  // load=cp: the piece widths follow from the problem (sm90::spec), so they name the kernel too.
  const gt_sm90::Spec s = sm90::spec(c, v);
  const std::string cp = c.cp ? ",cp=" + std::to_string(s.cp_a) + "/" + std::to_string(s.cp_b) : "";
  return jit_kernel_name(c.pingpong ? "gt_sm90_pp" : "gt_sm90_coop",
                         c.str() + "|" + problem_class(v) + cp + (epi_class.empty() ? "" : "|" + epi_class));
}

std::string jit_source(const Config& c, const KernelView& v, const std::string& epi_class, const EpiFlags& flags,
                       const std::string& name) {
  // The epilogue: its headers and type. A fused swap unit includes the chain types first (epilogue_transposed_store.cuh
  // does not, so that plain swap units skip them); epi_class is "<chain type>, <kernel rows are D's columns>".
  const bool fused = !epi_class.empty();
  std::string headers, epi;
  if (c.swap) {
    headers = std::string(fused ? "#include \"epilogue/epilogue_ops.cuh\"\n" : "") +
              "#include \"epilogue/epilogue_transposed_store.cuh\"\n";
    epi = "gt_sm90::EpilogueTransposedStore<Cfg, " + flags.expr() + (fused ? ", " + epi_class : "") + ">";
  } else if (fused) {
    headers = "#include \"epilogue/epilogue_fused_store.cuh\"\n";
    epi = "gt_sm90::EpilogueFused<Cfg, " + epi_class + ", " + flags.expr() + ">";
  } else {
    epi = "gt_sm90::EpilogueTmaStore<Cfg, " + flags.expr() + ">";
  }
  std::string s;
  if (c.acc != sm90::Accum::none) s += "#include \"ptx/wgmma_f8.cuh\"\n";  // fp8: the k32 wgmma forms
  s += c.pingpong ? "#include \"sm90/sm90_gemm_pingpong.cuh\"\n" : "#include \"sm90/sm90_gemm_coop.cuh\"\n";
  s += headers;
  s += "// " + c.str() + " | " + problem_class(v) + " (the tile walk is a launch parameter)\n";
  s += "using Cfg = gt_sm90::GemmConfig<" + sm90::spec_literal(sm90::spec(c, v)) + ">;\n";
  const std::string fn = std::string("gt_sm90::") + (c.pingpong ? "gemm_pingpong" : "gemm_coop");
  s += "extern \"C\" __global__ void __launch_bounds__(384, 1) " + name +
       "(const __grid_constant__ gt_sm90::TmaDesc ta, const __grid_constant__ gt_sm90::TmaDesc tb,\n"
       "    const __grid_constant__ gt_sm90::TmaDesc td, const __grid_constant__ gt_sm90::TmaDesc tdt,\n"
       "    const gt_sm90::GemmParams p";
  s += fused ? ", const gemmtune_epi::EpiParams ep) {\n" : ") {\n";
  s += "  using Epi = " + epi + ";\n";
  s += "  " + fn + "<Cfg, Epi>(ta, tb, td, tdt, p" + (fused ? ", ep" : "") + ");\n}\n";
  return s;
}

class Sm90Executable final : public Executable {
 public:
  Sm90Executable(const Problem& p, const KernelView& view, const Candidate& cand, const Config& cfg,
                 std::shared_ptr<const jit::Cubin> cubin)
      : cand_(cand), cfg_(cfg), view_(view),
        plan_(sm90::plan(cfg_, view_)), flags_(epi_flags(p, view_)), alpha_(p.alpha), beta_(p.beta), problem_(p),
        cubin_(std::move(cubin)) {
    cuda::ensure_context();
    fn_ = jit::load(*cubin_);
    smem_ = plan_.smem_bytes;
    GT_CU(cuFuncSetAttribute(fn_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem_));
    CUdevice dev;
    GT_CU(cuCtxGetDevice(&dev));
    int sms = 0;
    GT_CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    const int cs = cfg_.cm * cfg_.cn;
    int max_clusters = sms / cs;
    if (cs > 1) {
      CUlaunchAttribute attr;
      const CUlaunchConfig lc = sm90::cluster_launch(attr, cs * max_clusters, cs, 384, smem_);
      int n = 0;
      GT_CU(cuOccupancyMaxActiveClusters(&n, fn_, &lc));
      GT_REQUIRE(n > 0, "sm90: no " + std::to_string(cs) + "-CTA cluster of this kernel fits on the device (" +
                            cand_.str() + ")");
      max_clusters = n;
    }
    const int64_t ctiles = sm90::cluster_tiles(cfg_, view_);
    // The stream-K share arithmetic is 32-bit (kernels/sm90/sm90_shape.cuh sk_unit): beyond that K the plain walk runs.
    const int64_t kblocks = (view_.k + plan_.bk - 1) / plan_.bk;
    const bool sk = cfg_.sk && static_cast<uint64_t>(kblocks) * 2 * max_clusters < (uint64_t(1) << 32);
    grid_ = static_cast<unsigned>(
        (sk ? sm90::sk_clusters(ctiles, kblocks, max_clusters) : std::min<int64_t>(ctiles, max_clusters)) * cs);
    if (cfg_.dynamic()) {
      // One {next, done} counter pair per stream (kernels/sm90/sm90_tile_stream.cuh): zero now, reset to zero by
      // each launch's last cluster. Allocated here so that launch() never allocates (it may be graph-captured).
      counters_ = StreamScratch::zeroed_ints(StreamScratch::kMaxStreams * 2);
      scratch_ = StreamScratch(kScratchWho, cand_.str(), 0, 0);
    }
    if (sk && sm90::sk_tail(ctiles, grid_ / cs, kblocks)) {
      // The stream-K tail's partials and flags, per stream like the counters (flags zero between launches; two
      // launches on different streams may overlap). The first stream's scratch is allocated here, so that the usual
      // single-stream use never allocates in launch(); another stream's first launch allocates its own.
      const int parts = sm90::sk_parts(cs, cfg_.pingpong), slots = static_cast<int>(grid_) / cs;
      sk_floats_ = sm90::sk_ws_floats(slots, parts, plan_.acc_regs);
      scratch_ = StreamScratch(kScratchWho, cand_.str(), sk_floats_ * sizeof(float),
                               static_cast<size_t>(slots) * parts);
      scratch_.make_first();
    }
    if (cfg_.gpc()) {
      // GPC-major cluster ids for this grid (sm90_cluster_order.h): where the grid lands (one probe launch, cached
      // per grid shape) and which SMs share a GPC (probe launches once per device).
      const std::vector<int> order = sm90::gpc_major_order(
          sm90::probe_placement(cs, static_cast<int>(grid_) / cs, smem_), sm90::device_sm_groups());
      order_ = cuda::DeviceBuffer(order.size() * sizeof(int));
      order_.upload(order.data(), order.size() * sizeof(int));
    }
    if (env::flag("GEMMTUNE_SM90_VERBOSE"))
      std::fprintf(stderr, "sm90: %s: %d SMs, max active %d-CTA clusters %d, %lld cluster tiles, grid %u, smem %d\n",
                   cand_.str().c_str(), sms, cs, max_clusters, static_cast<long long>(ctiles), grid_, smem_);
  }

  const Candidate& candidate() const override { return cand_; }

  // A GLU writes D with n_out = N/2 columns in BN/2-column strips; :halves loads B in two boxes of <= BN/2 rows per
  // tile (gate half, up half). encode_maps() made the plain maps; these replace B's (halves) and D's.
  void encode_glu_maps(const GemmArgs& args) {
    const auto enc = cuda::cu().cuTensorMapEncodeTiled;
    const KernelView& v = view_;
    const EpiOp* g = problem_.epilogue.find(EpiOpKind::glu);
    CUresult r = CUDA_SUCCESS;
    if (g->glu == GluLayout::halves && !v.b_mn && plan_.cp_b == 0)  // B through cp.async: no map
      r = sm90::encode_3d(enc, &maps_[1], args.b, v.b.type, v.k, v.n, v.b_count(), v.b.ld, v.b.batch_stride, plan_.bk,
                          std::min(plan_.b_box_rows, cfg_.bn / 2), CU_TENSOR_MAP_SWIZZLE_128B);
    if (r == CUDA_SUCCESS && sm90::d_tma_store(v)) {
      const int eb = sm90::epi_narrow_bytes(cfg_.bn / 2, v.d.type);
      r = sm90::encode_3d(enc, &maps_[2], args.d, v.d.type, v.n / 2, v.m, v.batch, v.d.ld, v.d.batch_stride,
                          eb / sm90::elem_size(v.d.type), 64, sm90::epi_swizzle(eb));
    }
    if (r != CUDA_SUCCESS)
      GT_THROW("sm90: cuTensorMapEncodeTiled (GLU maps) failed: " + cuda::error_string(r) + " (" + cand_.str() + ")");
  }

  void launch(const GemmArgs& args, Stream stream) override {
    auto aligned = [](const void* ptr, uintptr_t a) { return (reinterpret_cast<uintptr_t>(ptr) % a) == 0; };
    GT_REQUIRE(args.a && args.b && args.d, "sm90: A, B and D pointers must be non-null");
    {
      // TMA needs 16-byte aligned operands; load=cp loads the others in cp.async pieces of the width their declared
      // alignment, pitch and batch stride allow (Plan::cp_a / cp_b of the kernel view; 0: by TMA).
      const int ka = view_.transposed ? plan_.cp_b : plan_.cp_a, kb = view_.transposed ? plan_.cp_a : plan_.cp_b;
      auto check = [&](const void* ptr, int w, const char* nm) {
        const std::string how = w > 0 ? std::to_string(w) + "-byte cp.async" : "TMA";
        GT_REQUIRE(aligned(ptr, w > 0 ? w : 16), std::string("sm90: ") + nm + " pointer is not " +
                                                     std::to_string(w > 0 ? w : 16) + "-byte aligned (this kernel loads " +
                                                     nm + " with " + how + ") (" + cand_.str() + ")");
      };
      check(args.a, ka, "A");
      check(args.b, kb, "B");
    }
    // D: 16 bytes for its tensor map; stored without TMA (swap=1, kEpiNoTmaD), one element.
    if (sm90::d_tma_store(view_))
      GT_REQUIRE(aligned(args.d, 16), "sm90: D pointer is not 16-byte aligned (this kernel TMA-stores D) (" +
                                          cand_.str() + ")");
    else
      GT_REQUIRE(aligned(args.d, sm90::elem_size(view_.d.type)),
                 "sm90: D pointer is not element-aligned (" + cand_.str() + ")");
    if (view_.has_c) {
      GT_REQUIRE(args.c, "sm90: C pointer is null but beta != 0");
      GT_REQUIRE(aligned(args.c, sm90::elem_size(view_.c.type) * (flags_.vec_c ? 2 : 1)),
                 (flags_.vec_c ? "sm90: C pointer is not aligned to two elements (this kernel reads C in pairs)"
                               : "sm90: C pointer is not element-aligned") + std::string(" (") + cand_.str() + ")");
    }
    std::lock_guard<std::mutex> lk(mu_);
    // Tensor maps depend on the pointers: encoded per new pointer triple (host-only, ~1 us), reused otherwise.
    if (args.a != last_a_ || args.b != last_b_ || args.d != last_d_) {
      const CUresult r =
          sm90::encode_maps(cuda::cu().cuTensorMapEncodeTiled, view_, plan_, args.a, args.b, args.d, maps_);
      if (r != CUDA_SUCCESS)
        GT_THROW("sm90: cuTensorMapEncodeTiled failed: " + cuda::error_string(r) + " (" + cand_.str() + ")");
      if (problem_.epilogue.has_glu()) encode_glu_maps(args);
      last_a_ = args.a;
      last_b_ = args.b;
      last_d_ = args.d;
    }
    gt_sm90::GemmParams params = sm90::make_params(view_, alpha_, beta_, args.c, args.d);
    if (plan_.cp) sm90::set_cp_operands(params, view_, args.a, args.b);
    if (view_.scale != gt_sm90::kScaleNone) {
      // The view's row and column scales: A's and B's, swapped with the operands of a transposed view.
      GT_REQUIRE(args.scale_a && args.scale_b, "sm90: fp8 inputs need scale_a and scale_b (" + cand_.str() + ")");
      params.sr = view_.transposed ? args.scale_b : args.scale_a;
      params.sc = view_.transposed ? args.scale_a : args.scale_b;
    }
    if (view_.grouped != 0) {
      GT_REQUIRE(args.group_rows, "sm90: a grouped problem needs GemmArgs::group_rows (" + cand_.str() + ")");
      GT_REQUIRE(aligned(args.group_rows, 4), "sm90: group_rows is not 4-byte aligned (" + cand_.str() + ")");
      params.group_rows = args.group_rows;
      // Per-group scale offsets (kernels/sm90/sm90_fp8.cuh group_sr / group_sc): A's scales follow its rows as
      // stored (global rows for contiguous; G x M for masked), B's are per group.
      if (view_.scale == gt_sm90::kScaleRow || view_.scale == gt_sm90::kScaleBlock) {
        params.sr_group = view_.grouped == 2 ? problem_.scale_len(Which::A) / problem_.groups : 0;
        params.sc_group = problem_.scale_len(Which::B) / problem_.groups;
      }
    }
    if (view_.d.type == gt::kE4M3) {
      params.scale_d = args.scale_d;  // null: 1
      if (problem_.amax) {
        // The kernel raises amax with atomicMax from every warp that stores D: it starts from zero on the stream.
        GT_REQUIRE(args.amax, "sm90: the problem asks for amax but GemmArgs::amax is null (" + cand_.str() + ")");
        params.amax = args.amax;
        GT_CU(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(args.amax), 0u, 1, reinterpret_cast<CUstream>(stream)));
      }
    }
    if (cfg_.dynamic()) params.tiles = counters_for(reinterpret_cast<CUstream>(stream));
    if (cfg_.gpc()) params.order = static_cast<const int*>(order_.get());
    params.raster_n = cfg_.raster_n ? 1 : 0;
    params.group = cfg_.group;
    if (sk_floats_ > 0) {
      const StreamScratch::Buffers s = scratch_.get(reinterpret_cast<CUstream>(stream));
      params.sk_ws = static_cast<float*>(s.ws);
      params.sk_flags = s.zeros;
    }
    epi::EpiParams ep;
    if (!problem_.epilogue.empty()) {
      ep = epi::make_params(problem_, args);  // throws naming a missing operand
      GT_REQUIRE(epi::operands_aligned(problem_, ep, flags_.vec_ops ? 2 : 1),
                 std::string("sm90: an epilogue operand pointer is not ") +
                     (flags_.vec_ops ? "aligned to two elements (this kernel reads operands in pairs)"
                                     : "element-aligned") + " (" + cand_.str() + ")");
    }
    void* kargs[6] = {&maps_[0], &maps_[1], &maps_[2], &maps_[3], &params, &ep};
    CUlaunchAttribute attr;
    const CUlaunchConfig lc =
        sm90::cluster_launch(attr, grid_, cfg_.cm * cfg_.cn, 384, smem_, reinterpret_cast<CUstream>(stream));
    GT_CU(cuLaunchKernelEx(&lc, fn_, kargs, nullptr));
  }

 private:
  static constexpr const char* kScratchWho = "sm90: a tiles=dynamic or tail=sk executable";

  // The dynamic tile order's counters for `s` (mu_ held): one {next, done} pair per stream.
  int* counters_for(CUstream s) { return static_cast<int*>(counters_.get()) + 2 * scratch_.index(s); }

  Candidate cand_;
  Config cfg_;
  KernelView view_;
  gt_sm90::Plan plan_;  // the kernel's plan: shared memory, TMA boxes, epilogue strips
  EpiFlags flags_;
  float alpha_, beta_;
  Problem problem_;  // the epilogue's parameters (epi::make_params) come from it
  std::shared_ptr<const jit::Cubin> cubin_;
  CUfunction fn_ = nullptr;
  int smem_ = 0;
  unsigned grid_ = 1;
  std::mutex mu_;
  const void* last_a_ = nullptr;
  const void* last_b_ = nullptr;
  const void* last_d_ = nullptr;
  CUtensorMap maps_[4]{};  // A, B, D, D's tail strips (sm90::encode_maps; zero for an operand load=cp reads)
  cuda::DeviceBuffer counters_;          // tiles=dynamic only: a pair per stream of scratch_
  cuda::DeviceBuffer order_;             // tiles=gpc only: the cluster id permutation
  StreamScratch scratch_;                // tiles=dynamic / tail=sk: the streams launched on; tail=sk: partials, flags
  size_t sk_floats_ = 0;                 // > 0: the stream-K tail runs
};

class Sm90Backend final : public Backend {
 public:
  std::string name() const override { return "sm90"; }
  std::string fingerprint() const override { return name() + "@nvrtc" + jit::nvrtc_version(); }

  std::string supports(const ResolvedProblem& p, const DeviceInfo& dev) const override {
    return sm90::problem_reason(p, dev);
  }

  std::shared_ptr<const BackendAnalysis> analyze(const ResolvedProblem& p) const override {
    return std::make_shared<const BackendAnalysisOf<sm90::Analysis>>(sm90::Analysis(p));
  }

  std::string path(const ResolvedProblem& p, const BackendAnalysis& an, const DeviceInfo&) const override {
    const KernelView& v = analysis_of<sm90::Analysis>(an, "sm90").view(false);
    return sm90::load_path(p, v) + "; " + sm90::store_path(p, v) + sm90::fp8_path(p);
  }

  std::vector<Candidate> enumerate(const ResolvedProblem&, const BackendAnalysis& an,
                                   const DeviceInfo& dev) const override {
    return config::candidates("sm90", sm90::enumerate_configs(analysis_of<sm90::Analysis>(an, "sm90"), dev));
  }

  std::shared_ptr<const BackendConfig> parse(const Candidate& c) const override {
    return config::parse_candidate<Config>("sm90", c);
  }

  using Backend::compile, Backend::enumerate, Backend::load, Backend::path, Backend::validate;  // single calls

  std::string validate(const ResolvedProblem&, const BackendAnalysis& an, const Candidate& c,
                       const BackendConfig& parsed, const DeviceInfo& dev) const override {
    const sm90::Analysis& a = analysis_of<sm90::Analysis>(an, "sm90");
    return config::validate_canonical("sm90", c, config_of<Config>(parsed, "sm90"),
                              [&](const Config& cfg) { return sm90::config_reason(cfg, a, dev); });
  }

  CompileResult compile(const ResolvedProblem& p, const BackendAnalysis& an, const Candidate& c,
                        const BackendConfig& parsed, const DeviceInfo& dev) const override {
    const auto t0 = std::chrono::steady_clock::now();
    if (std::string r = validate(p, an, c, parsed, dev); !r.empty()) GT_THROW(r);
    // The kernel is named and generated from the config without its walk: tiles=gpc is a host table
    // (GemmParams::order) and raster / group are run-time parameters (GemmParams::raster_n, group), so configs that
    // differ only in those share one compile (a gpc twin and its static sibling, the band widths of one tile).
    Config cfg = kernel_config(config_of<Config>(parsed, "sm90"));
    const KernelView& v = analysis_of<sm90::Analysis>(an, "sm90").view(cfg.swap);
    const std::string ec = epilogue_class(p, v);
    const EpiFlags flags = epi_flags(p, v);
    JitUnit u;
    u.name = kernel_name(cfg, v, ec + "|" + flags.expr());
    u.source = jit_source(cfg, v, ec, flags, u.name);
    u.flags = {"-std=c++20"};  // GemmConfig takes the Spec as a class-type template parameter
    u.dynamic_smem = sm90::plan(cfg, v).smem_bytes;
    return compile_jit_unit(u, c.str() + " for " + p->str(), t0);
  }

  std::unique_ptr<Executable> load(const ResolvedProblem& p, const BackendAnalysis& an, const Candidate& c,
                                   const BackendConfig& parsed, const CompileResult& compiled) const override {
    const Config& cfg = config_of<Config>(parsed, "sm90");
    return std::make_unique<Sm90Executable>(p, analysis_of<sm90::Analysis>(an, "sm90").view(cfg.swap), c, cfg,
                                            jit_cubin(compiled, "sm90", c));
  }
};

}  // namespace

std::shared_ptr<Backend> make_sm90_backend() { return std::make_shared<Sm90Backend>(); }

}  // namespace gemmtune
