// The triton backend: enumerate / validate via triton_config, compile through the helper process, load and launch.
#include "backends/triton/triton_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>

#include "backends/config_fields.h"
#include "backends/stream_scratch.h"
#include "backends/triton/triton_compile.h"
#include "backends/triton/triton_config.h"
#include "core/check.h"
#include "core/clock.h"
#include "core/epilogue_codegen.h"
#include "cuda/driver.h"
#include "gemmtune/errors.h"
#include "jit/jit.h"

namespace gemmtune {
namespace {

using triton::Config;
using triton::Template;

std::string params_str(const std::vector<triton::Param>& ps) {
  std::string s;
  for (const auto& [n, t] : ps) s += (s.empty() ? "" : ", ") + n + ":" + t;
  return s;
}

class TritonExecutable final : public Executable {
 public:
  TritonExecutable(const Problem& p, const Candidate& cand, const Config& cfg,
                   std::shared_ptr<const triton::Kernel> kernel)
      : cand_(cand), cfg_(cfg), problem_(p), kernel_(std::move(kernel)) {
    // The launch passes exactly the arguments the template declares (make_request); a kernel compiled from another
    // version of the template would read them at the wrong offsets, so the compiled list must be the same.
    const triton::Request req = triton::make_request(cfg_, p);
    if (kernel_->params != req.params)
      GT_THROW("triton: load_error: the compiled kernel takes (" + params_str(kernel_->params) +
               ") but the launch passes (" + params_str(req.params) + ") (" + cand_.str() + ")");
    GT_REQUIRE(kernel_->name == req.symbol, "triton: load_error: the compiled kernel is named '" + kernel_->name +
                                                "', the request '" + req.symbol + "' (" + cand_.str() + ")");
    GT_REQUIRE(kernel_->num_warps == cfg_.warps,
               "triton: load_error: the kernel was compiled for " + std::to_string(kernel_->num_warps) +
                   " warps, the config says " + std::to_string(cfg_.warps) + " (" + cand_.str() + ")");
    GT_REQUIRE(kernel_->num_ctas >= 1, "triton: load_error: num_ctas < 1 (" + cand_.str() + ")");
    cuda::ensure_context();
    jit::Cubin cubin;
    cubin.kernel_name = kernel_->name;
    cubin.key = "triton:" + kernel_->key;
    cubin.image = kernel_->image;
    fn_ = jit::load(cubin);
    const DeviceInfo& dev = current_device();
    if (kernel_->shared > 48 * 1024) {
      int static_smem = 0;
      GT_CU(cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn_));
      GT_REQUIRE(static_smem + kernel_->shared <= dev.smem_per_block_optin,
                 "triton: load_error: the kernel needs " + std::to_string(kernel_->shared + static_smem) +
                     " bytes of shared memory; the device allows " + std::to_string(dev.smem_per_block_optin) + " (" +
                     cand_.str() + ")");
      GT_CU(cuFuncSetAttribute(fn_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               dev.smem_per_block_optin - static_smem));
    }
    const int64_t tiles = ((p.m + cfg_.bm - 1) / cfg_.bm) * ((p.n + cfg_.bn - 1) / cfg_.bn);
    if (cfg_.tmpl == Template::tma) {
      grid_[0] = static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(tiles * p.batch, dev.sm_count)));
    } else {
      grid_[0] = static_cast<unsigned>(tiles);
      grid_[1] = static_cast<unsigned>(p.batch);
    }
    // Global scratch (the device-side TMA descriptors): `size` bytes per program, as Triton's launcher allocates.
    if (kernel_->global_scratch_size > 0) {
      const size_t progs = size_t(grid_[0]) * grid_[1] * grid_[2] * size_t(kernel_->num_ctas);
      scratch_ = StreamScratch("triton: an executable", cand_.str(),
                               progs * size_t(kernel_->global_scratch_size) + size_t(kernel_->global_scratch_align), 0);
      scratch_.make_first();
    }
    auto sbat = [&](Which w) { return p.count(w) > 1 ? p.operand(w).batch_stride : int64_t(0); };
    args_.m = static_cast<int32_t>(p.m);
    args_.n = static_cast<int32_t>(p.n);
    args_.k = static_cast<int32_t>(p.k);
    args_.batch = static_cast<int32_t>(p.batch);
    args_.lda = p.a.ld;
    args_.ldb = p.b.ld;
    args_.ldc = p.c.ld;
    args_.ldd = p.d.ld;
    args_.sbat_a = sbat(Which::A);
    args_.sbat_b = sbat(Which::B);
    args_.sbat_c = p.batch > 1 ? p.c.batch_stride : 0;
    args_.sbat_d = p.batch > 1 ? p.d.batch_stride : 0;
    args_.alpha = p.alpha;
    args_.beta = p.beta;
  }

  const Candidate& candidate() const override { return cand_; }

  void launch(const GemmArgs& args, Stream stream) override {
    auto aligned = [](const void* ptr, size_t a) { return reinterpret_cast<uintptr_t>(ptr) % a == 0; };
    // A pointer the kernel was compiled to assume 16-byte aligned (make_request's hints) must be; any must be
    // element-aligned.
    auto check = [&](const void* ptr, const Operand& o, const char* what) {
      const size_t need = std::max<size_t>(size_t(o.align % 16 == 0 ? 16 : 1), dtype_size(o.dtype));
      GT_REQUIRE(aligned(ptr, need), std::string("triton: ") + what + " pointer is not " + std::to_string(need) +
                                         "-byte aligned (its operand declares align=" + std::to_string(o.align) +
                                         ") (" + cand_.str() + ")");
    };
    GT_REQUIRE(args.a && args.b && args.d, "triton: A, B and D pointers must be non-null");
    check(args.a, problem_.a, "A");
    check(args.b, problem_.b, "B");
    check(args.d, problem_.d, "D");
    const bool has_c = problem_.beta != 0.0f;
    if (has_c) {
      GT_REQUIRE(args.c, "triton: C pointer is null but beta != 0");
      check(args.c, problem_.c, "C");
    }
    if (problem_.scaling != Scaling::none)
      GT_REQUIRE(args.scale_a && args.scale_b, "triton: scale_a and scale_b must be non-null (scaling=" +
                                                   std::string(scaling_name(problem_.scaling)) + ")");
    if (!problem_.epilogue.empty()) {
      const epi::EpiParams ep = epi::make_params(problem_, args);  // throws naming a missing operand
      GT_REQUIRE(epi::operands_aligned(problem_, ep),
                 "triton: an epilogue operand pointer is not element-aligned (" + cand_.str() + ")");
    }
    Args a = args_;
    a.a = reinterpret_cast<CUdeviceptr>(args.a);
    a.b = reinterpret_cast<CUdeviceptr>(args.b);
    a.c = has_c ? reinterpret_cast<CUdeviceptr>(args.c) : 0;
    a.d = reinterpret_cast<CUdeviceptr>(args.d);
    a.bias = reinterpret_cast<CUdeviceptr>(args.bias);
    a.res = reinterpret_cast<CUdeviceptr>(args.residual);
    a.rs = reinterpret_cast<CUdeviceptr>(args.row_scale);
    a.cs = reinterpret_cast<CUdeviceptr>(args.col_scale);
    a.sa = reinterpret_cast<CUdeviceptr>(args.scale_a);
    a.sb = reinterpret_cast<CUdeviceptr>(args.scale_b);
    std::unique_lock<std::mutex> lk(mu_, std::defer_lock);
    if (kernel_->global_scratch_size > 0) {
      lk.lock();
      const StreamScratch::Buffers s = scratch_.get(reinterpret_cast<CUstream>(stream));
      const uintptr_t al = uintptr_t(std::max(kernel_->global_scratch_align, 1));
      a.global_scratch = (reinterpret_cast<uintptr_t>(s.ws) + al - 1) / al * al;
    }
    // Triton's launcher order: the non-constexpr arguments, then global_scratch and profile_scratch.
    void* params[] = {&a.a,      &a.b,      &a.c,      &a.d,      &a.bias,  &a.res,    &a.rs,    &a.cs,
                      &a.sa,     &a.sb,     &a.m,      &a.n,      &a.k,     &a.batch,  &a.lda,   &a.ldb,
                      &a.ldc,    &a.ldd,    &a.sbat_a, &a.sbat_b, &a.sbat_c, &a.sbat_d, &a.alpha, &a.beta,
                      &a.global_scratch, &a.profile_scratch};
    static_assert(sizeof(params) / sizeof(params[0]) == 26);
    CUlaunchAttribute attrs[3];
    unsigned n_attrs = 0;
    if (kernel_->num_ctas > 1) {
      attrs[n_attrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      attrs[n_attrs].value.clusterDim.x = unsigned(kernel_->num_ctas);
      attrs[n_attrs].value.clusterDim.y = 1;
      attrs[n_attrs].value.clusterDim.z = 1;
      ++n_attrs;
    }
    if (kernel_->cooperative) {
      attrs[n_attrs].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
      attrs[n_attrs].value.cooperative = 1;
      ++n_attrs;
    }
    if (kernel_->pdl) {
      attrs[n_attrs].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attrs[n_attrs].value.programmaticStreamSerializationAllowed = 1;
      ++n_attrs;
    }
    CUlaunchConfig lc{};
    lc.gridDimX = grid_[0] * unsigned(kernel_->num_ctas);
    lc.gridDimY = grid_[1];
    lc.gridDimZ = grid_[2];
    lc.blockDimX = 32u * unsigned(kernel_->num_warps);
    lc.blockDimY = lc.blockDimZ = 1;
    lc.sharedMemBytes = unsigned(kernel_->shared);
    lc.hStream = reinterpret_cast<CUstream>(stream);
    lc.attrs = n_attrs ? attrs : nullptr;
    lc.numAttrs = n_attrs;
    GT_CU(cuLaunchKernelEx(&lc, fn_, params, nullptr));
  }

 private:
  // The kernel's run-time arguments, by the types of triton::make_request's list (pointers: CUdeviceptr; i32,
  // i64; fp32 as float), then the two scratch pointers.
  struct Args {
    CUdeviceptr a = 0, b = 0, c = 0, d = 0, bias = 0, res = 0, rs = 0, cs = 0, sa = 0, sb = 0;
    int32_t m = 0, n = 0, k = 0, batch = 1;
    int64_t lda = 0, ldb = 0, ldc = 0, ldd = 0, sbat_a = 0, sbat_b = 0, sbat_c = 0, sbat_d = 0;
    float alpha = 1, beta = 0;
    CUdeviceptr global_scratch = 0, profile_scratch = 0;
  };

  Candidate cand_;
  Config cfg_;
  Problem problem_;
  std::shared_ptr<const triton::Kernel> kernel_;
  CUfunction fn_ = nullptr;
  unsigned grid_[3] = {1, 1, 1};
  Args args_;
  std::mutex mu_;
  StreamScratch scratch_;
};

class TritonBackend final : public Backend {
 public:
  std::string name() const override { return "triton"; }

  std::string unavailable() const override { return triton::probe(triton::python_exe()); }

  std::string supports(const ResolvedProblem& p, const DeviceInfo& dev) const override {
    return triton::problem_reason(p, dev);
  }
  std::string path(const ResolvedProblem& p, const BackendAnalysis&, const DeviceInfo&) const override {
    if (triton::tma_ok(p)) return "A, B: TMA (persistent template) or masked loads";
    return "A, B: masked loads (A rows on " + std::to_string(p.access_bytes(Which::A)) + "-byte, B on " +
           std::to_string(p.access_bytes(Which::B)) + "-byte boundaries: no TMA)";
  }

  std::vector<Candidate> enumerate(const ResolvedProblem& p, const BackendAnalysis&,
                                   const DeviceInfo& dev) const override {
    if (!unavailable().empty()) return {};
    return config::candidates("triton", triton::enumerate_configs(p, dev));
  }

  std::shared_ptr<const BackendConfig> parse(const Candidate& c) const override {
    return config::parse_candidate<Config>("triton", c);
  }

  using Backend::compile, Backend::enumerate, Backend::load, Backend::path, Backend::validate;  // single calls

  std::string validate(const ResolvedProblem& p, const BackendAnalysis& an, const Candidate& c,
                       const BackendConfig& parsed, const DeviceInfo& dev) const override {
    return config::validate_canonical("triton", c, config_of<Config>(parsed, "triton"),
                              [&](const Config& cfg) { return triton::config_reason(cfg, p, dev); });
  }

  CompileResult compile(const ResolvedProblem& p, const BackendAnalysis& an, const Candidate& c,
                        const BackendConfig& parsed, const DeviceInfo& dev) const override {
    const auto t0 = std::chrono::steady_clock::now();
    if (std::string r = unavailable(); !r.empty()) GT_THROW("triton: unavailable: " + r);
    if (std::string r = validate(p, an, c, parsed, dev); !r.empty()) GT_THROW(r);
    const Config& cfg = config_of<Config>(parsed, "triton");
    auto k = triton::compile(triton::make_request(cfg, p), c.str() + " for " + p->str());
    CompileResult r;
    r.compiled = true;
    r.cache_hit = k->cache_hit;
    r.smem_bytes = k->shared;  // registers and spills: Triton reports them only for a loaded kernel
    r.artifact = std::static_pointer_cast<const void>(k);
    r.compile_ms = ms_since(t0);
    return r;
  }

  std::unique_ptr<Executable> load(const ResolvedProblem& p, const BackendAnalysis& an, const Candidate& c,
                                   const BackendConfig& parsed, const CompileResult& compiled) const override {
    GT_REQUIRE(compiled.artifact, "triton: load() needs the CompileResult of compile() (" + c.str() + ")");
    return std::make_unique<TritonExecutable>(p, c, config_of<Config>(parsed, "triton"),
                                              std::static_pointer_cast<const triton::Kernel>(compiled.artifact));
  }
};

}  // namespace

std::shared_ptr<Backend> make_triton_backend() { return std::make_shared<TritonBackend>(); }

}  // namespace gemmtune
