#include "backends/cublaslt/cublaslt_executable.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>

#include "backends/cublaslt/cublaslt_algos.h"
#include "backends/cublaslt/cublaslt_library.h"
#include "backends/stream_scratch.h"
#include "core/check.h"
#include "core/epilogue_codegen.h"
#include "core/fnv.h"
#include "cuda/driver.h"

namespace gemmtune::cublaslt {
namespace {

constexpr uint32_t kBiasAlignment = 16;  // a fused bias pointer's alignment the heuristic may rely on (checked at launch)

// The separate elementwise epilogue kernel: its NVRTC unit, named after the chain (FNV-1a of the source's chain type).
struct EwUnit {
  std::string source, name;
};
EwUnit elementwise_unit(const Problem& p) {
  const std::string chain = epi::chain_type(p) + std::string(dtype_name(p.d.dtype));
  EwUnit u;
  u.name = "gt_epi_ew_" + detail::hex64(detail::fnv1a64(chain));
  u.source = epi::elementwise_source(p, p.d.dtype, u.name);
  return u;
}

class LtExecutable final : public Executable {
 public:
  LtExecutable(const Problem& p, const Candidate& c, const LtConfig& cfg, std::shared_ptr<const jit::Cubin> ew)
      : cand_(c), split_(cfg.split), lp_(map_problem(p, split_.epi, split_.fast_accum.value_or(false))), descs_(lp_) {
    if (is_default_config(split_.algo)) {
      auto res = heuristic(descs_, 1);
      if (res.empty()) GT_THROW("cublaslt: the heuristic returns no algorithm for " + p.str());
      algo_ = res[0].algo;
    } else {
      if (!cfg.algo) throw Error(cfg.algo_error);
      if (std::string why = algo_from_config(*cfg.algo, lp_, algo_); !why.empty()) GT_THROW(why + " [" + c.str() + "]");
    }
    Checked ck = check_algo(algo_, descs_);
    if (!ck.reason.empty()) GT_THROW(ck.reason + " [" + c.str() + "]");
    std::memcpy(align_, ck.align, sizeof(align_));
    ws_size_ = ck.workspace;
    if (ws_size_ > 0) {
      // A workspace per stream: cuBLASLt's algorithms use it as scratch during the launch, so launches on two
      // streams must not share one. The first stream's is made here (no allocation in the usual launch).
      ws_ = StreamScratch("cublaslt: an executable with a workspace", c.str(), ws_size_, 0);
      ws_.make_first();
    }
    c_ld_ = lp_.c.ld, c_stride_ = lp_.c.stride;
    d_ld_ = lp_.d.ld, d_stride_ = lp_.d.stride;
    if (split_.epi == EpiMode::separate) {
      const Problem q = intermediate_problem(p);
      // The intermediate is per stream too: launches on two streams must not write one buffer.
      mid_ = StreamScratch("cublaslt: a GEMM + elementwise executable", c.str(),
                           size_t(q.d.batch_stride * (q.batch - 1) + q.m * q.n) * dtype_size(q.d.dtype), 0);
      mid_.make_first();
      if (!ew) ew = compile_elementwise(p, c);
      ew_cubin_ = ew;
      ew_fn_ = jit::load(*ew);
      ew_.in_ld = q.d.ld, ew_.in_bs = q.d.batch_stride, ew_.in_row = q.d.layout == Layout::row;
      ew_.out_ld = p.d.ld, ew_.out_bs = p.d.batch_stride, ew_.out_row = p.d.layout == Layout::row;
      ew_.m = p.m, ew_.n_out = p.n_out(), ew_.batch = p.batch;
    }
    p_ = p;
  }

  void launch(const GemmArgs& args, Stream stream) override {
    GT_REQUIRE(args.a && args.b && args.d, "cublaslt: A, B and D pointers must be set");
    // One launch at a time: the pointers of the bias and the fp8 scales are attributes of the shared matmul
    // descriptor, read when cublasLtMatmul enqueues, and the per-stream buffers are looked up here.
    std::lock_guard<std::mutex> lk(mu_);
    void* mid = split_.epi == EpiMode::separate ? mid_.get(reinterpret_cast<CUstream>(stream)).ws : nullptr;
    void* d = mid ? mid : args.d;
    const void* a = lp_.swapped ? args.b : args.a;
    const void* b = lp_.swapped ? args.a : args.b;
    const void* c = d;
    if (!lp_.c_is_d) {
      GT_REQUIRE(args.c, "cublaslt: C pointer must be set when beta != 0");
      c = args.c;
      // In place (C == D), cuBLASLt needs identical C and D layouts.
      GT_REQUIRE(c != d || (c_ld_ == d_ld_ && c_stride_ == d_stride_),
                 "cublaslt: C == D (in place) needs C and D with the same ld and batch stride");
    }
    const void* ptrs[4] = {a, b, c, d};
    for (int i = 0; i < 4; ++i)
      if (reinterpret_cast<uintptr_t>(ptrs[i]) % align_[i] != 0)
        GT_THROW(std::string("cublaslt: ") + "ABCD"[i] + " pointer (cuBLASLt operand order) not " +
                 std::to_string(align_[i]) + "-byte aligned, as " + cand_.str() + " needs");
    if (lp_.fp8) set_fp8_pointers(args, stream);
    if (lp_.c_null) c = nullptr;
    if (lp_.bias) {
      GT_REQUIRE(args.bias, "cublaslt: epilogue '" + p_.epilogue.key() + "' needs GemmArgs::bias (null)");
      GT_REQUIRE(reinterpret_cast<uintptr_t>(args.bias) % kBiasAlignment == 0,
                 "cublaslt: a fused bias must be " + std::to_string(kBiasAlignment) + "-byte aligned");
      GT_LT(lt().cublasLtMatmulDescSetAttribute(descs_.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &args.bias,
                                           sizeof(args.bias)));
    }
    void* ws = ws_size_ > 0 ? ws_.get(reinterpret_cast<CUstream>(stream)).ws : nullptr;
    GT_LT(lt().cublasLtMatmul(lt_handle(), descs_.op, &lp_.alpha, a, descs_.a, b, descs_.b, &lp_.beta, c, descs_.c, d,
                         descs_.d, &algo_, ws, ws_size_, reinterpret_cast<cudaStream_t>(stream)));
    if (mid) launch_elementwise(args, mid, stream);
  }

  const Candidate& candidate() const override { return cand_; }

 private:
  // The scale pointers follow their operands through the swap (see scale_modes()); amax is zeroed on the stream first,
  // so that its value is this launch's whether or not cuBLASLt's kernels start from zero themselves.
  void set_fp8_pointers(const GemmArgs& args, Stream stream) {
    GT_REQUIRE(args.scale_a && args.scale_b, "cublaslt: an fp8 GEMM needs GemmArgs::scale_a and scale_b (" +
                                                 std::string(scaling_name(p_.scaling)) + " scaling)");
    const float* sa = lp_.swapped ? args.scale_b : args.scale_a;
    const float* sb = lp_.swapped ? args.scale_a : args.scale_b;
    GT_LT(lt().cublasLtMatmulDescSetAttribute(descs_.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof(sa)));
    GT_LT(lt().cublasLtMatmulDescSetAttribute(descs_.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof(sb)));
    if (lp_.d_scale) {
      GT_REQUIRE(args.scale_d, "cublaslt: an e4m3 D needs GemmArgs::scale_d");
      GT_LT(lt().cublasLtMatmulDescSetAttribute(descs_.op, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &args.scale_d,
                                           sizeof(args.scale_d)));
    }
    if (lp_.amax) {
      GT_REQUIRE(args.amax, "cublaslt: a problem with amax needs GemmArgs::amax");
      GT_LT(lt().cublasLtMatmulDescSetAttribute(descs_.op, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, &args.amax,
                                           sizeof(args.amax)));
      GT_CU(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(args.amax), 0, 1, reinterpret_cast<CUstream>(stream)));
    }
  }

  void launch_elementwise(const GemmArgs& args, void* mid, Stream stream) {
    epi::EwParams e = ew_;
    e.in = mid;
    e.out = args.d;
    epi::EpiParams ep = epi::make_params(p_, args);
    const int64_t inner = e.out_row ? e.n_out : e.m, outer = e.out_row ? e.m : e.n_out;
    const unsigned gx = unsigned(std::min<int64_t>((inner + 255) / 256, 1024));
    const unsigned gy = unsigned(std::min<int64_t>(outer, 65535));
    const unsigned gz = unsigned(std::min<int64_t>(e.batch, 65535));
    void* params[] = {&e, &ep};
    GT_CU(cuLaunchKernel(ew_fn_, gx, gy, gz, 256, 1, 1, 0, reinterpret_cast<CUstream>(stream), params, nullptr));
  }

  Candidate cand_;
  CandidateConfig split_;
  LtProblem lp_;
  LtDescs descs_;
  cublasLtMatmulAlgo_t algo_{};
  uint32_t align_[4] = {1, 1, 1, 1};
  StreamScratch ws_;  // the workspace of each stream launched on (ws_size_ > 0)
  std::mutex mu_;
  size_t ws_size_ = 0;
  int64_t c_ld_ = 0, c_stride_ = 0, d_ld_ = 0, d_stride_ = 0;
  Problem p_;
  // separate epilogue
  StreamScratch mid_;  // the GEMM's M x N output, per stream (the separate epilogue's input)
  std::shared_ptr<const jit::Cubin> ew_cubin_;
  CUfunction ew_fn_ = nullptr;
  epi::EwParams ew_;
};

}  // namespace

std::shared_ptr<const jit::Cubin> compile_elementwise(const Problem& p, const Candidate& c) {
  const EwUnit u = elementwise_unit(p);
  return jit::compile(u.source, u.name, {}, c.str());
}

std::unique_ptr<Executable> make_executable(const Problem& p, const Candidate& c, const LtConfig& cfg,
                                            std::shared_ptr<const jit::Cubin> ew) {
  return std::make_unique<LtExecutable>(p, c, cfg, std::move(ew));
}

}  // namespace gemmtune::cublaslt
