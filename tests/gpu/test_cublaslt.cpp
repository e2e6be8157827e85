// cuBLASLt backend on the GPU: every enumerated candidate (and `default`) against a double-precision CPU reference,
// with fresh random inputs and NaN-poisoned outputs, over layouts, ragged shapes, batches, beta and dtypes.
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cublaslt/cublaslt_backend.h"
#include "backends/cublaslt/cublaslt_config.h"
#include "cuda/driver.h"
#include "cuda/memory.h"
#include "gemmtune/errors.h"
#include "gpu_test_util.h"

namespace gemmtune {
namespace {

constexpr double kTolerance = 1e-2;

struct Shape {
  int64_t m, n, k;
};
const Shape kShapes[] = {{1, 1, 1}, {17, 33, 65}, {127, 255, 129}, {256, 512, 1000}};
const std::pair<DType, DType> kDtypes[] = {
    {DType::bf16, DType::bf16}, {DType::bf16, DType::f32}, {DType::f16, DType::f16}, {DType::f16, DType::f32}};

// variant 0: batch 1, beta 0, packed, C pointer null.
// variant 1: batch 3, alpha 0.75, beta 0.5, every ld padded by 8 elements and every batch stride by 24.
Problem make_problem(const Shape& s, DType in, DType out, Layout la, Layout lb, Layout ld, int variant) {
  Problem p;
  p.m = s.m, p.n = s.n, p.k = s.k;
  p.a = {in, la, 0, -1};
  p.b = {in, lb, 0, -1};
  p.c = {out, ld, 0, -1};
  p.d = {out, ld, 0, -1};
  if (variant == 1) {
    p.batch = 3;
    p.alpha = 0.75f;
    p.beta = 0.5f;
    for (char w : {'A', 'B', 'C', 'D'}) {
      Operand& o = const_cast<Operand&>(p.operand(w));
      const int64_t rows = Problem::rows_of(w, p), cols = Problem::cols_of(w, p);
      o.ld = (o.layout == Layout::row ? cols : rows) + 8;
      o.batch_stride = o.ld * (o.layout == Layout::row ? rows : cols) + 24;
    }
  }
  p.resolve();
  return p;
}

class Runner {
 public:
  explicit Runner(const Problem& p) : p_(p), rng_(std::random_device{}()) {
    a_ = test::random_operand(p_, 'A', rng_);
    b_ = test::random_operand(p_, 'B', rng_);
    if (p_.beta != 0.0f) c_ = test::random_operand(p_, 'C', rng_);
    ref_ = test::reference_d(p_, a_, b_, c_);
    da_ = cuda::DeviceBuffer(a_.size());
    db_ = cuda::DeviceBuffer(b_.size());
    da_.upload(a_.data(), a_.size());
    db_.upload(b_.data(), b_.size());
    if (!c_.empty()) {
      dc_ = cuda::DeviceBuffer(c_.size());
      dc_.upload(c_.data(), c_.size());
    }
    dd_ = cuda::DeviceBuffer(test::span_bytes(p_, 'D'));
  }

  // Runs one candidate on poisoned D; "" when correct, else what went wrong.
  std::string check(const Backend& be, const Candidate& cand) {
    const std::vector<uint8_t> poison = test::poisoned_operand(p_, 'D');
    dd_.upload(poison.data(), poison.size());
    try {
      const std::string why = be.validate(p_, cand, current_device());
      if (!why.empty()) return "validate: " + why;
      CompileResult cr = be.compile(p_, cand, current_device());
      auto exe = be.load(p_, cand, cr);
      if (!(exe->candidate() == cand)) return "executable reports candidate " + exe->candidate().str();
      GemmArgs args;
      args.a = da_.get();
      args.b = db_.get();
      args.c = c_.empty() ? nullptr : dc_.get();
      args.d = dd_.get();
      cuda::StreamOwner stream;
      exe->launch(args, stream.get());
      // Twice: a second launch must give the same result (no state left from the first, e.g. split-K workspace).
      exe->launch(args, stream.get());
      stream.sync();
    } catch (const Error& e) {
      return std::string("threw: ") + e.what();
    }
    std::vector<uint8_t> d(poison.size());
    dd_.download(d.data(), d.size());
    const double err = test::normalized_error(p_, d, ref_);
    std::ostringstream os;
    if (!(err <= kTolerance)) os << "normalized error " << err << " > " << kTolerance << " (NaN = unwritten/non-finite)";
    if (int64_t n = test::written_outside(p_, d); n != 0) os << (os.str().empty() ? "" : "; ") << n << " bytes written outside D";
    return os.str();
  }

 private:
  Problem p_;
  std::mt19937_64 rng_;
  std::vector<uint8_t> a_, b_, c_;
  std::vector<double> ref_;
  cuda::DeviceBuffer da_, db_, dc_, dd_;
};

using Param = std::tuple<int /*shape*/, int /*dtypes*/, int /*layouts: bits A,B,D; 1 = col*/>;

class CublasLtGpu : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    if (!gpu_available()) GTEST_SKIP() << "no GPU";
    cuda::ensure_context();
  }
};

TEST_P(CublasLtGpu, EveryCandidateMatchesReference) {
  const auto [si, di, li] = GetParam();
  const Layout la = li & 1 ? Layout::col : Layout::row, lb = li & 2 ? Layout::col : Layout::row,
               ld = li & 4 ? Layout::col : Layout::row;
  auto be = make_cublaslt_backend();
  for (int variant : {0, 1}) {
    const Problem p = make_problem(kShapes[si], kDtypes[di].first, kDtypes[di].second, la, lb, ld, variant);
    ASSERT_EQ(be->supports(p, current_device()), "") << p.str();
    const std::vector<Candidate> cands = be->enumerate(p, current_device());
    ASSERT_FALSE(cands.empty()) << "no candidates for " << p.str();
    EXPECT_EQ(cands.front().config, cublaslt::kDefaultConfig) << p.str();
    Runner run(p);
    int failed = 0;
    for (const Candidate& c : cands) {
      EXPECT_EQ(c.backend, "cublaslt");
      if (!cublaslt::is_default_config(c.config)) {
        // Canonical: what enumerate prints parses back to the same string.
        EXPECT_EQ(cublaslt::AlgoConfig::parse(c.config).str(), c.config);
      }
      const std::string why = run.check(*be, c);
      if (!why.empty()) {
        ++failed;
        ADD_FAILURE() << "problem " << p.str() << "\n  candidate " << c.str() << "\n  " << why;
      }
    }
    // Distinct candidates only.
    for (size_t i = 0; i < cands.size(); ++i)
      for (size_t j = i + 1; j < cands.size(); ++j) EXPECT_NE(cands[i], cands[j]) << cands[i].str();
    if (failed) ADD_FAILURE() << failed << " of " << cands.size() << " candidates failed for " << p.str();
  }
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto [si, di, li] = info.param;
  const Shape& s = kShapes[si];
  std::string name = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + "_" +
                     std::string(dtype_name(kDtypes[di].first)) + "to" + std::string(dtype_name(kDtypes[di].second)) +
                     "_";
  for (int bit = 0; bit < 3; ++bit) name += (li >> bit) & 1 ? 'c' : 'r';  // A, B, D layouts
  return name;
}

INSTANTIATE_TEST_SUITE_P(All, CublasLtGpu,
                         ::testing::Combine(::testing::Range(0, 4), ::testing::Range(0, 4), ::testing::Range(0, 8)),
                         param_name);

// The heuristic's algorithms, printed and parsed back, rebuild to something cuBLASLt accepts; a junk config is refused
// by validate() with a reason, and load() throws.
TEST(CublasLtGpuConfig, ValidateAndLoadRefuseBadAlgorithms) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  auto be = make_cublaslt_backend();
  Problem p = Problem::make(512, 512, 512, DType::bf16, DType::bf16);
  p.resolve();
  const DeviceInfo& dev = current_device();
  const auto cands = be->enumerate(p, dev);
  ASSERT_GE(cands.size(), 2u) << "expected several algorithms for 512^3 bf16";
  for (const auto& c : cands) EXPECT_EQ(be->validate(p, c, dev), "") << c.str();
  const Candidate bad{"cublaslt", "algo=99999,tile=8x8,stages=16x1,splitk=1,red=0,swizzle=0,custom=0,cluster=auto,inner=0"};
  EXPECT_NE(be->validate(p, bad, dev), "");
  EXPECT_THROW(be->load(p, bad, CompileResult{}), Error);
  EXPECT_THROW(be->compile(p, Candidate{"cublaslt", "algo=1"}, dev), Error);
}

}  // namespace
}  // namespace gemmtune
