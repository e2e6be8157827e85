// cuBLASLt backend on the GPU: every enumerated candidate (and `default`) against a double-precision CPU reference,
// with fresh random inputs and NaN-poisoned outputs, over layouts, ragged shapes, batches, beta and dtypes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
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
    for (Which w : kOperands) {
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
    a_ = test::random_operand(p_, Which::A, rng_);
    b_ = test::random_operand(p_, Which::B, rng_);
    if (p_.beta != 0.0f) c_ = test::random_operand(p_, Which::C, rng_);
    ref_ = test::reference_d(p_, a_, b_, c_);
    da_ = cuda::DeviceBuffer(a_.size());
    db_ = cuda::DeviceBuffer(b_.size());
    da_.upload(a_.data(), a_.size());
    db_.upload(b_.data(), b_.size());
    if (!c_.empty()) {
      dc_ = cuda::DeviceBuffer(c_.size());
      dc_.upload(c_.data(), c_.size());
    }
    dd_ = cuda::DeviceBuffer(test::span_bytes(p_, Which::D));
  }

  // Runs one candidate on poisoned D; "" when correct, else what went wrong.
  std::string check(const Backend& be, const Candidate& cand) {
    const std::vector<uint8_t> poison = test::poisoned_operand(p_, Which::D);
    dd_.upload(poison.data(), poison.size());
    try {
      const std::string why = be.validate(resolve(p_), cand, current_device());
      if (!why.empty()) return "validate: " + why;
      CompileResult cr = be.compile(resolve(p_), cand, current_device());
      auto exe = be.load(resolve(p_), cand, cr);
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
    ASSERT_EQ(be->supports(resolve(p), current_device()), "") << p.str();
    const std::vector<Candidate> cands = be->enumerate(resolve(p), current_device());
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
  const auto cands = be->enumerate(resolve(p), dev);
  ASSERT_GE(cands.size(), 2u) << "expected several algorithms for 512^3 bf16";
  for (const auto& c : cands) EXPECT_EQ(be->validate(resolve(p), c, dev), "") << c.str();
  const Candidate bad{"cublaslt", "algo=99999,tile=8x8,stages=16x1,splitk=1,red=0,swizzle=0,custom=0,cluster=auto,inner=0"};
  EXPECT_NE(be->validate(resolve(p), bad, dev), "");
  EXPECT_THROW(be->load(resolve(p), bad, CompileResult{}), Error);
  EXPECT_THROW(be->compile(resolve(p), Candidate{"cublaslt", "algo=1"}, dev), Error);
}

// ---- fp8 ----
// Every candidate of a few fp8 problems per scaling mode and output dtype against a double-precision reference of
// the dequantized inputs: random fp8 codes of moderate magnitude, random scales in [0.5, 2), NaN-poisoned D and amax.
// An e4m3 D is checked against saturate(v * scale_d), with scale_d chosen so that some values saturate.

// The value of an fp8 code (OCP e4m3: bias 7, no infinities, S.1111.111 NaN; e5m2: bias 15, IEEE-like).
double fp8_value(DType t, uint8_t code) {
  const double sign = code & 0x80 ? -1.0 : 1.0;
  if (t == DType::e4m3) {
    const int e = (code >> 3) & 0xF, m = code & 7;
    if (e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
    return sign * (e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7));
  }
  const int e = (code >> 2) & 0x1F, m = code & 3;
  if (e == 31) return m ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  return sign * (e == 0 ? std::ldexp(m / 4.0, -14) : std::ldexp(1.0 + m / 4.0, e - 15));
}

// A random code with |value| in [1/8, 16): exponents 4..10 (e4m3) or 12..18 (e5m2), any mantissa and sign.
uint8_t random_fp8(DType t, std::mt19937_64& rng) {
  const uint32_t r = static_cast<uint32_t>(rng());
  const uint32_t sign = (r & 1u) << 7;
  if (t == DType::e4m3) return static_cast<uint8_t>(sign | ((4 + (r >> 1) % 7) << 3) | ((r >> 8) & 7u));
  return static_cast<uint8_t>(sign | ((12 + (r >> 1) % 7) << 2) | ((r >> 8) & 3u));
}

struct Fp8Case {
  const char* name;
  int64_t m, n, k;
  Scaling scaling;
  DType a, b, d;
  Layout ld = Layout::row;
  int64_t batch = 1;
  const char* epilogue = "";  // fused in cuBLASLt: "bias" (bf16 or f16, per column n) and/or relu
  bool amax = false;
};

const Fp8Case kFp8Cases[] = {
    {"tensor_bf16", 200, 384, 512, Scaling::tensor, DType::e4m3, DType::e4m3, DType::bf16},
    {"tensor_f16_e5m2xe4m3", 200, 384, 512, Scaling::tensor, DType::e5m2, DType::e4m3, DType::f16},
    {"tensor_f32_e4m3xe5m2", 200, 384, 512, Scaling::tensor, DType::e4m3, DType::e5m2, DType::f32},
    {"tensor_e4m3_amax", 200, 384, 512, Scaling::tensor, DType::e4m3, DType::e4m3, DType::e4m3, Layout::row, 1, "",
     true},
    {"tensor_bf16_M1", 1, 256, 512, Scaling::tensor, DType::e4m3, DType::e4m3, DType::bf16},
    {"row_bf16_M3", 3, 256, 512, Scaling::row, DType::e4m3, DType::e4m3, DType::bf16},
    {"tensor_bf16_colD_batch3", 128, 256, 256, Scaling::tensor, DType::e4m3, DType::e4m3, DType::bf16, Layout::col,
     3},
    {"row_bf16", 200, 384, 512, Scaling::row, DType::e4m3, DType::e4m3, DType::bf16},
    {"row_f16", 200, 384, 512, Scaling::row, DType::e4m3, DType::e4m3, DType::f16},
    {"row_f32_e5m2xe4m3", 200, 384, 512, Scaling::row, DType::e5m2, DType::e4m3, DType::f32},
    {"row_bf16_colD", 128, 384, 512, Scaling::row, DType::e4m3, DType::e4m3, DType::bf16, Layout::col},
    {"row_bf16_bias_relu", 200, 384, 512, Scaling::row, DType::e4m3, DType::e4m3, DType::bf16, Layout::row, 1,
     "bias,relu"},
    {"block_bf16", 200, 384, 512, Scaling::block, DType::e4m3, DType::e4m3, DType::bf16},
    {"block_f16", 200, 384, 1024, Scaling::block, DType::e4m3, DType::e4m3, DType::f16},
    {"block_f32_e4m3xe5m2", 200, 384, 512, Scaling::block, DType::e4m3, DType::e5m2, DType::f32},
    {"block_bf16_raggedK_oneNblock", 96, 128, 400, Scaling::block, DType::e4m3, DType::e4m3, DType::bf16},
    {"block_bf16_colD", 128, 384, 512, Scaling::block, DType::e4m3, DType::e4m3, DType::bf16, Layout::col},
};

class CublasLtFp8Gpu : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (!gpu_available()) GTEST_SKIP() << "no GPU";
    cuda::ensure_context();
  }
};

// Each case in each accumulation mode (param = 2 * case + fast); block scaling is exact only.
TEST_P(CublasLtFp8Gpu, EveryCandidateMatchesReference) {
  const Fp8Case& tc = kFp8Cases[GetParam() / 2];
  const bool fast_mode = GetParam() % 2 == 1;
  if (fast_mode && tc.scaling == Scaling::block) GTEST_SKIP() << "block scaling accumulates exactly";
  Problem p;
  p.fp8_accum = fast_mode ? Fp8Accum::fast : Fp8Accum::exact;
  p.m = tc.m, p.n = tc.n, p.k = tc.k, p.batch = tc.batch;
  p.a = {tc.a, Layout::row, 0, -1};
  p.b = {tc.b, Layout::col, 0, -1};
  p.c = p.d = {tc.d, tc.ld, 0, -1};
  p.scaling = tc.scaling;
  p.amax = tc.amax;
  p.alpha = tc.batch > 1 ? 0.5f : 1.0f;
  if (*tc.epilogue) p.epilogue = parse_epilogue(tc.epilogue);
  p.resolve();
  auto be = make_cublaslt_backend();
  ASSERT_EQ(be->supports(resolve(p), current_device()), "") << p.str();
  const std::vector<Candidate> cands = be->enumerate(resolve(p), current_device());
  ASSERT_FALSE(cands.empty()) << "no candidates for " << p.str();
  // Only the problem's accumulation mode is listed.
  const std::string mode = fast_mode ? "fast_accum=1" : "fast_accum=0";
  EXPECT_EQ(cands.front().config.rfind("default," + mode, 0), 0u) << cands.front().str();
  for (const Candidate& c : cands) EXPECT_NE(c.config.find(mode), std::string::npos) << c.str() << " for " << p.str();
  for (size_t i = 0; i < cands.size(); ++i)
    for (size_t j = i + 1; j < cands.size(); ++j) EXPECT_NE(cands[i], cands[j]) << cands[i].str();

  std::mt19937_64 rng(std::random_device{}());
  std::uniform_real_distribution<float> scale_dist(0.5f, 2.0f);
  const int64_t M = p.m, N = p.n, K = p.k, KB = (K + kScaleBlock - 1) / kScaleBlock;
  std::vector<uint8_t> a(test::span_bytes(p, Which::A)), b(test::span_bytes(p, Which::B));
  for (auto& x : a) x = random_fp8(p.a.dtype, rng);
  for (auto& x : b) x = random_fp8(p.b.dtype, rng);
  std::vector<float> sa(p.scale_len(Which::A)), sb(p.scale_len(Which::B));
  for (auto& x : sa) x = scale_dist(rng);
  for (auto& x : sb) x = scale_dist(rng);
  auto scale_a = [&](int64_t m, int64_t k) {
    return p.scaling == Scaling::tensor ? sa[0] : p.scaling == Scaling::row ? sa[m] : sa[(k / kScaleBlock) * M + m];
  };
  auto scale_b = [&](int64_t k, int64_t n) {
    return p.scaling == Scaling::tensor ? sb[0] : p.scaling == Scaling::row ? sb[n] : sb[(n / kScaleBlock) * KB + k / kScaleBlock];
  };
  // The fused bias (one value per column n), in the dtype the problem gives it.
  const DType bias_t = p.epilogue_dtype(EpiOpKind::bias_col);
  std::vector<uint8_t> bias;
  if (p.epilogue.has(EpiOpKind::bias_col)) bias = test::random_vector(bias_t, N, rng);

  std::vector<double> ref(size_t(p.batch * M * N));
  double vmax = 0;
  for (int64_t bi = 0; bi < p.batch; ++bi)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += fp8_value(p.a.dtype, a[test::elem_offset(p.a, bi, m, k)]) * scale_a(m, k) *
                 fp8_value(p.b.dtype, b[test::elem_offset(p.b, bi, k, n)]) * scale_b(k, n);
        double v = p.alpha * acc;
        if (!bias.empty()) v += test::load_elem(bias_t, bias.data(), n);
        if (p.epilogue.has(EpiOpKind::act)) v = std::max(v, 0.0);  // relu, the only activation used here
        ref[(bi * M + m) * N + n] = v;
        vmax = std::max(vmax, std::fabs(v));
      }
  // An e4m3 D: scale_d puts the largest |v| at 1.25 x 448, so the top values saturate.
  const float sd = static_cast<float>(448.0 * 1.25 / vmax);
  const bool d8 = p.d.dtype == DType::e4m3;
  if (d8)
    for (double& v : ref) v = std::clamp(v * sd, -448.0, 448.0);

  cuda::DeviceBuffer da(a.size()), db(b.size()), dd(test::span_bytes(p, Which::D));
  cuda::DeviceBuffer dsa(sa.size() * 4), dsb(sb.size() * 4), dsd(4), damax(4), dbias(bias.size());
  da.upload(a.data(), a.size());
  db.upload(b.data(), b.size());
  dsa.upload(sa.data(), sa.size() * 4);
  dsb.upload(sb.data(), sb.size() * 4);
  dsd.upload(&sd, 4);
  if (!bias.empty()) dbias.upload(bias.data(), bias.size());
  const std::vector<uint8_t> poison(dd.bytes(), 0xFF);  // NaN in every dtype, e4m3 included
  const float nan = std::numeric_limits<float>::quiet_NaN();

  int failed = 0;
  for (const Candidate& cand : cands) {
    dd.upload(poison.data(), poison.size());
    damax.upload(&nan, 4);
    std::string why;
    try {
      if (why = be->validate(resolve(p), cand, current_device()); why.empty()) {
        auto exe = be->load(resolve(p), cand, be->compile(resolve(p), cand, current_device()));
        GemmArgs args;
        args.a = da.get();
        args.b = db.get();
        args.d = dd.get();
        args.scale_a = static_cast<const float*>(dsa.get());
        args.scale_b = static_cast<const float*>(dsb.get());
        if (d8) args.scale_d = static_cast<const float*>(dsd.get());
        if (p.amax) args.amax = static_cast<float*>(damax.get());
        if (!bias.empty()) args.bias = dbias.get();
        cuda::StreamOwner stream;
        exe->launch(args, stream.get());
        exe->launch(args, stream.get());  // amax is this launch's, not accumulated over launches
        stream.sync();
      }
    } catch (const Error& e) {
      why = std::string("threw: ") + e.what();
    }
    if (why.empty()) {
      std::vector<uint8_t> d(dd.bytes());
      dd.download(d.data(), d.size());
      double err2 = 0, ref2 = 0;
      int64_t bad_sat = 0;
      for (int64_t bi = 0; bi < p.batch; ++bi)
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            const int64_t off = test::elem_offset(p.d, bi, m, n);
            const double r = ref[(bi * M + m) * N + n];
            const double got = d8 ? fp8_value(DType::e4m3, d[off]) : test::load_elem(p.d.dtype, d.data(), off);
            err2 += (got - r) * (got - r);
            ref2 += r * r;
            if (d8 && std::fabs(r) == 448.0 && std::fabs(got) != 448.0) ++bad_sat;  // saturated, not NaN
          }
      const double err = std::sqrt(err2 / ref2), tol = d8 ? 0.05 : kTolerance;
      std::ostringstream os;
      if (!(err <= tol)) os << "normalized error " << err << " > " << tol << " (NaN = unwritten/non-finite); ";
      if (bad_sat) os << bad_sat << " saturated values not stored as +-448; ";
      if (p.amax) {
        float amax = nan;
        damax.download(&amax, 4);
        if (!(std::fabs(amax - vmax) <= 1e-2 * vmax)) os << "amax " << amax << ", expected " << vmax << "; ";
      }
      if (int64_t n = test::written_outside(p, d); n != 0) os << n << " bytes written outside D; ";
      why = os.str();
    }
    if (!why.empty()) {
      ++failed;
      ADD_FAILURE() << "problem " << p.str() << "\n  candidate " << cand.str() << "\n  " << why;
    }
  }
  if (failed) ADD_FAILURE() << failed << " of " << cands.size() << " candidates failed for " << p.str();
}

INSTANTIATE_TEST_SUITE_P(All, CublasLtFp8Gpu, ::testing::Range(0, 2 * int(std::size(kFp8Cases))),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(kFp8Cases[info.param / 2].name) + (info.param % 2 ? "_fast" : "");
                         });

}  // namespace
}  // namespace gemmtune
