// The gemv backend: enumerate / validate via gemv_config, JIT unit generation, NVRTC compile, load and launch.
#include "backends/gemv/gemv_backend.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <tuple>

#include "backends/config_fields.h"
#include "backends/gemv/gemv_config.h"
#include "backends/jit_backend.h"
#include "backends/stream_scratch.h"
#include "core/check.h"
#include "core/epilogue_codegen.h"
#include "cuda/driver.h"
#include "gemmtune/errors.h"
#include "jit/jit.h"
#include "core/dtype_code.h"
#include "gemv/gemv_params.cuh"  // kernels/: the kernels' parameter struct

namespace gemmtune {
namespace {

using gemv::Config;

std::string jit_source(const Config& c, const Problem& p, const gemv::View& v, const std::string& name) {
  auto tf = [](bool x) { return x ? "true" : "false"; };
  const bool fused = !p.epilogue.empty();
  const bool has_c = p.beta != 0.0f;
  const bool fp8 = is_fp8(p.a.dtype) || is_fp8(p.b.dtype);
  // The CUDA-core kernel takes `rows` output rows per warp; the mma one m-blocks of 16 weight rows.
  const int rows = c.mma ? c.rows / (p.epilogue.has_glu() ? 8 : 16) : c.rows;
  std::string s;
  if (fused) s += "#include \"epilogue/epilogue_ops.cuh\"\n";
  s += c.mma ? "#include \"gemv/gemv_mma.cuh\"\n" : "#include \"gemv/gemv_kmajor.cuh\"\n";
  s += "// " + c.str() + "\n";
  s += std::string("using G = gt_gemv::") + (c.mma ? "GemvMma<" : "Gemv<") + std::to_string(v.t) + ", " +
       std::to_string(kernel_dtype_code(fp8 ? gemv::mma_dtype(p) : p.a.dtype)) + ", " +
       std::to_string(gemv::load_bytes(p)) + ", " +
       std::to_string(kernel_dtype_code(p.d.dtype)) + ", " +
       std::to_string(has_c ? epi::dtype_code(p.c.dtype) : 0) + ", " + tf(has_c) + ", " + std::to_string(c.warps) +
       ", " + std::to_string(rows) + ", " + std::to_string(c.ksplit) + ", " + std::to_string(c.unroll) + ", " +
       (c.mma ? std::to_string(c.ring) + ", " + std::to_string(c.csplit) + ", " : std::string()) + tf(c.vec_m) + ", " +
       tf(p.alpha == 1.0f) + ", " +
       (fused ? epi::chain_type(p) : std::string("gt_gemv::Plain")) +
       // fp8: the weights' and the vectors' element types, the scaling (1 tensor, 2 row, 3 block), amax.
       (fp8 ? ", " + std::to_string(kernel_dtype_code(gemv::w_dtype(c, p))) + ", " +
                  std::to_string(kernel_dtype_code(gemv::x_dtype(c, p))) + ", " +
                  std::to_string(static_cast<int>(p.scaling)) + ", " + tf(p.amax)
            : std::string()) +
       ">;\n";
  s += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(32 * c.warps) + ", " +
       std::to_string(c.occ) + ") " + name +
       "(const gt_gemv::GemvParams p, const G::Params ep) {\n  G::run(p, ep);\n}\n";
  return s;
}

// The unit of a candidate: its source with a placeholder name, then named by the hash of that source.
std::pair<std::string, std::string> unit(const Config& c, const Problem& p) {
  const gemv::View v = gemv::make_view(p, c.vec_m);
  const std::string name = jit_kernel_name("gt_gemv", jit_source(c, p, v, "KERNEL"));
  return {jit_source(c, p, v, name), name};
}

class GemvExecutable final : public Executable {
 public:
  GemvExecutable(const Problem& p, const Candidate& cand, const Config& cfg, std::shared_ptr<const jit::Cubin> cubin)
      : cand_(cand), cfg_(cfg), view_(gemv::make_view(p, cfg_.vec_m)), problem_(p),
        cubin_(std::move(cubin)) {
    cuda::ensure_context();
    fn_ = jit::load(*cubin_);
    grid_x_ = static_cast<unsigned>(gemv::grid_x(cfg_, view_));
    smem_ = static_cast<unsigned>(gemv::ring_bytes(cfg_, p));
    load_bytes_ = static_cast<unsigned>(gemv::load_bytes(p));
    fp8_ = is_fp8(p.a.dtype) || is_fp8(p.b.dtype);
    // Any ring: the 48 KiB a kernel gets without this attribute count its static shared memory (the K slices'
    // buffer) too, so 48 KiB of ring beside it failed to launch (ring=3 with 8 warps splitting K,
    // docs/PERFORMANCE.md); config_reason has checked the sum against the device's opt-in limit.
    if (smem_ > 0)
      GT_CU(cuFuncSetAttribute(fn_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(smem_)));
    if (cfg_.csplit > 1) {
      // The K split across CTAs: partials and counts per stream (kernels/gemv/gemv_mma.cuh gather_split); the first
      // stream's are made here, so that the usual single-stream use never allocates in launch().
      scratch_ = StreamScratch("gemv: a csplit executable", cand_.str(),
                               static_cast<size_t>(gemv::csplit_ws_floats(cfg_, p)) * sizeof(float),
                               static_cast<size_t>(gemv::csplit_counts(cfg_, p)));
      scratch_.make_first();
    }
    // Everything but the pointers is fixed per problem: set once, the launches fill in w, x, d, c.
    params_.ldw = view_.ldw;
    params_.w_batch = view_.w_batch;
    params_.ldx = view_.ldx;
    params_.x_batch = view_.x_batch;
    params_.d_t = view_.d_t;
    params_.d_r = view_.d_r;
    params_.d_batch = view_.d_batch;
    params_.c_t = view_.c_t;
    params_.c_r = view_.c_r;
    params_.c_batch = view_.c_batch;
    params_.alpha = p.alpha;
    params_.beta = p.beta;
    params_.rows = static_cast<int>(view_.r_out);
    params_.k = static_cast<int>(view_.k);
  }

  const Candidate& candidate() const override { return cand_; }

  void launch(const GemmArgs& args, Stream stream) override {
    auto aligned = [](const void* ptr, uintptr_t a) { return (reinterpret_cast<uintptr_t>(ptr) % a) == 0; };
    GT_REQUIRE(args.a && args.b && args.d, "gemv: A, B and D pointers must be non-null");
    const std::string width = std::to_string(load_bytes_) + "-byte";
    GT_REQUIRE(aligned(args.a, load_bytes_),
               "gemv: A pointer is not " + width + " aligned (" + width + " loads) (" + cand_.str() + ")");
    GT_REQUIRE(aligned(args.b, load_bytes_),
               "gemv: B pointer is not " + width + " aligned (" + width + " loads) (" + cand_.str() + ")");
    GT_REQUIRE(aligned(args.d, dtype_size(problem_.d.dtype)), "gemv: D pointer is not element-aligned");
    const bool has_c = problem_.beta != 0.0f;
    if (has_c) {
      GT_REQUIRE(args.c, "gemv: C pointer is null but beta != 0");
      GT_REQUIRE(aligned(args.c, dtype_size(problem_.c.dtype)), "gemv: C pointer is not element-aligned");
    }
    if (fp8_) {
      // Scales (fp32): B's always; A's too when A is fp8 (a 16-bit A's may be null: 1); block scaling reads both.
      GT_REQUIRE(args.scale_b, "gemv: scale_b is null (fp8 B, scaling=" +
                                   std::string(scaling_name(problem_.scaling)) + ")");
      GT_REQUIRE(args.scale_a || !is_fp8(problem_.a.dtype),
                 "gemv: scale_a is null (fp8 A, scaling=" + std::string(scaling_name(problem_.scaling)) + ")");
      if (problem_.d.dtype == DType::e4m3) GT_REQUIRE(args.scale_d, "gemv: scale_d is null (e4m3 D)");
      if (problem_.amax) GT_REQUIRE(args.amax, "gemv: amax is null (the problem asks for amax)");
    }
    gt_gemv::GemvParams hp = params_;
    if (fp8_) {
      hp.sw = view_.w_is_b ? args.scale_b : args.scale_a;
      hp.sx = view_.w_is_b ? args.scale_a : args.scale_b;
      hp.sd = args.scale_d;
      hp.amax = args.amax;
    }
    hp.w = view_.w_is_b ? args.b : args.a;
    hp.x = view_.w_is_b ? args.a : args.b;
    hp.d = args.d;
    hp.c = has_c ? args.c : nullptr;
    epi::EpiParams ep;
    if (!problem_.epilogue.empty()) {
      ep = epi::make_params(problem_, args);  // throws naming a missing operand
      GT_REQUIRE(epi::operands_aligned(problem_, ep),
                 "gemv: an epilogue operand pointer is not element-aligned (" + cand_.str() + ")");
    }
    std::unique_lock<std::mutex> lk(mu_, std::defer_lock);
    if (cfg_.csplit > 1) {
      lk.lock();  // the per-stream scratch (launches on one stream run in order; the kernel zeroes its counts)
      const StreamScratch::Buffers s = scratch_.get(reinterpret_cast<CUstream>(stream));
      hp.ws = static_cast<float*>(s.ws);
      hp.cnt = s.zeros;
    }
    // amax is written with atomic maxima over the CTAs' outputs: zeroed on the stream first.
    if (problem_.amax)
      GT_CU(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(args.amax), 0, 1, reinterpret_cast<CUstream>(stream)));
    void* kargs[2] = {&hp, &ep};
    GT_CU(cuLaunchKernel(fn_, grid_x_, static_cast<unsigned>(view_.batch), static_cast<unsigned>(cfg_.csplit),
                         32u * cfg_.warps, 1, 1, smem_, reinterpret_cast<CUstream>(stream), kargs, nullptr));
  }

 private:
  Candidate cand_;
  Config cfg_;
  gemv::View view_;
  Problem problem_;
  std::shared_ptr<const jit::Cubin> cubin_;
  CUfunction fn_ = nullptr;
  unsigned grid_x_ = 1;
  unsigned smem_ = 0;  // the ring (dynamic shared memory)
  unsigned load_bytes_ = 16;  // the kernel's load width (VB): A and B pointers must be aligned to it
  bool fp8_ = false;          // fp8 inputs: scale pointers (and an e4m3 D's scale_d / amax)
  gt_gemv::GemvParams params_{};  // the launch parameters but the pointers
  std::mutex mu_;            // csplit > 1: scratch_
  StreamScratch scratch_;    // csplit > 1: the partials and counts of each stream launched on
};

class GemvBackend final : public Backend {
 public:
  std::string name() const override { return "gemv"; }
  std::string fingerprint() const override { return name() + "@nvrtc" + jit::nvrtc_version(); }

  std::string supports(const ResolvedProblem& p, const DeviceInfo& dev) const override {
    return gemv::problem_reason(p, dev);
  }
  std::string path(const ResolvedProblem& p, const BackendAnalysis&, const DeviceInfo&) const override {
    return gemv::load_path(p);
  }


  std::vector<Candidate> enumerate(const ResolvedProblem& p, const BackendAnalysis&,
                                   const DeviceInfo& dev) const override {
    return config::candidates("gemv", gemv::enumerate_configs(p, dev));
  }

  std::shared_ptr<const BackendConfig> parse(const Candidate& c) const override {
    return config::parse_candidate<Config>("gemv", c);
  }

  using Backend::compile, Backend::enumerate, Backend::load, Backend::path, Backend::validate;  // single calls

  std::string validate(const ResolvedProblem& p, const BackendAnalysis& an, const Candidate& c,
                       const BackendConfig& parsed, const DeviceInfo& dev) const override {
    return config::validate_canonical("gemv", c, config_of<Config>(parsed, "gemv"),
                              [&](const Config& cfg) { return gemv::config_reason(cfg, p, dev); });
  }

  CompileResult compile(const ResolvedProblem& p, const BackendAnalysis& an, const Candidate& c,
                        const BackendConfig& parsed, const DeviceInfo& dev) const override {
    const auto t0 = std::chrono::steady_clock::now();
    if (std::string r = validate(p, an, c, parsed, dev); !r.empty()) GT_THROW(r);
    const Config& cfg = config_of<Config>(parsed, "gemv");
    JitUnit u;
    std::tie(u.source, u.name) = unit(cfg, p);
    u.arch = jit_arch(dev);
    u.dynamic_smem = gemv::ring_bytes(cfg, p);
    return compile_jit_unit(u, c.str() + " for " + p->str(), t0);
  }

  std::unique_ptr<Executable> load(const ResolvedProblem& p, const BackendAnalysis& an, const Candidate& c,
                                   const BackendConfig& parsed, const CompileResult& compiled) const override {
    return std::make_unique<GemvExecutable>(p, c, config_of<Config>(parsed, "gemv"), jit_cubin(compiled, "gemv", c));
  }
};

}  // namespace

std::shared_ptr<Backend> make_gemv_backend() { return std::make_shared<GemvBackend>(); }

std::string gemv_jit_source(const Problem& p, const std::string& config) {
  return unit(Config::parse(config), p).first;
}

}  // namespace gemmtune
