#include <gtest/gtest.h>

#include "gemmtune/gemm.h"

using namespace gemmtune;

namespace {
Problem tn(int64_t m, int64_t n, int64_t k) { return Problem::make(m, n, k, DType::bf16, DType::bf16); }
void expect_reason(const Problem& p, const std::string& needle) {
  const std::string why = p.check();
  EXPECT_NE(why.find(needle), std::string::npos) << "reason was: '" << why << "', expected to mention '" << needle << "'";
}
}  // namespace

TEST(Problem, MakeResolvesPackedLayouts) {
  Problem p = Problem::make(100, 200, 300, DType::f16, DType::f32, Layout::col, Layout::row, 3);
  EXPECT_EQ(p.check(), "");
  EXPECT_EQ(p.a.ld, 100);  // col-major M x K
  EXPECT_EQ(p.b.ld, 200);  // row-major K x N
  EXPECT_EQ(p.d.ld, 200);
  EXPECT_EQ(p.a.batch_stride, 100 * 300);
  EXPECT_EQ(p.d.batch_stride, 100 * 200);
  EXPECT_DOUBLE_EQ(p.flops(), 2.0 * 100 * 200 * 300 * 3);
}

TEST(Problem, RejectsBadShapesWithReasons) {
  expect_reason(tn(0, 4, 4), "M, N, K must be >= 1");
  expect_reason(tn(4, -1, 4), "M, N, K must be >= 1");
  Problem b = tn(4, 4, 4);
  b.batch = 0;
  expect_reason(b, "batch must be >= 1");
}

TEST(Problem, RejectsSmallLeadingDimension) {
  Problem p = tn(64, 64, 128);
  p.a.ld = 100;  // row-major A needs ld >= K = 128
  expect_reason(p, "lda=100 is too small for row-major A (64x128): need >= 128");
  Problem q = tn(64, 64, 128);
  q.b.ld = 64;  // col-major B (K x N) needs ld >= K
  expect_reason(q, "ldb=64 is too small for col-major B");
}

TEST(Problem, RejectsDtypeCombinations) {
  Problem p = tn(8, 8, 8);
  p.b.dtype = DType::f16;
  expect_reason(p, "A and B must have the same dtype");
  Problem q = tn(8, 8, 8);
  q.a.dtype = q.b.dtype = DType::e4m3;
  expect_reason(q, "fp8");
  Problem r = tn(8, 8, 8);
  r.beta = 1.0f;
  r.c.dtype = DType::f32;
  expect_reason(r, "C and D must have the same dtype");
  Problem s = tn(8, 8, 8);
  s.accum = DType::bf16;
  expect_reason(s, "accumulator must be f32");
}

TEST(Problem, RejectsOverlappingOutputBatches) {
  Problem p = Problem::make(16, 16, 16, DType::bf16, DType::bf16, Layout::row, Layout::col, 4);
  p.d.batch_stride = 100;  // each batch of D needs 256 elements
  expect_reason(p, "D batch stride 100 makes batches overlap");
  Problem q = Problem::make(16, 16, 16, DType::bf16, DType::bf16, Layout::row, Layout::col, 4);
  q.b.batch_stride = 0;  // broadcast weights: fine
  EXPECT_EQ(q.check(), "");
}

TEST(Problem, EpilogueChecked) {
  Problem p = tn(8, 8, 8);
  p.epilogue = parse_epilogue("bias,gelu_tanh");
  EXPECT_EQ(p.check(), "");
  p.epilogue = parse_epilogue("silu_glu");
  p.n = 7;
  p.resolve();
  expect_reason(p, "a GLU needs an even N");
  EXPECT_THROW(p.validate(), Error);
  EXPECT_THROW(parse_epilogue("bias,,relu"), Error);
}

TEST(Problem, KeyIsCanonical) {
  Problem a = tn(128, 256, 512), b = tn(128, 256, 512);
  EXPECT_EQ(a.key(), b.key());
  b.alpha = 2.0f;  // alpha is a run-time argument
  EXPECT_EQ(a.key(), b.key());
  b.beta = 1.0f;  // beta != 0 reads C: a different problem class
  EXPECT_NE(a.key(), b.key());
  Problem c = tn(128, 256, 512);
  c.a.ld = 520;
  EXPECT_NE(a.key(), c.key());
  Problem d = Problem::make(128, 256, 512, DType::bf16, DType::bf16, Layout::row, Layout::row);
  EXPECT_NE(a.key(), d.key());
  EXPECT_EQ(a.key().find('/'), std::string::npos);  // no paths
}

TEST(Problem, StrNamesNonDefaultFields) {
  Problem p = Problem::make(4, 8, 16, DType::f16, DType::f32, Layout::col, Layout::row, 2);
  p.a.ld = 8;
  p.beta = 0.5f;
  p.c.dtype = DType::f32;
  const std::string s = p.str();
  EXPECT_NE(s.find("--m=4 --n=8 --k=16 --batch=2"), std::string::npos) << s;
  EXPECT_NE(s.find("--A=f16:col --lda=8"), std::string::npos) << s;
  EXPECT_NE(s.find("--beta=0.5"), std::string::npos) << s;
}

TEST(Types, ParseNames) {
  EXPECT_EQ(parse_dtype("bf16"), DType::bf16);
  EXPECT_EQ(parse_dtype("FP16"), DType::f16);
  EXPECT_EQ(parse_dtype("float"), DType::f32);
  EXPECT_FALSE(parse_dtype("int8"));
  EXPECT_EQ(parse_layout("column"), Layout::col);
  EXPECT_EQ(parse_layout("row"), Layout::row);
  EXPECT_FALSE(parse_layout("diag"));
}

TEST(Candidate, ParseRoundTrip) {
  Candidate c = Candidate::parse("sm90:tile=128x256x64,stages=4");
  EXPECT_EQ(c.backend, "sm90");
  EXPECT_EQ(c.config, "tile=128x256x64,stages=4");
  EXPECT_EQ(Candidate::parse(c.str()), c);
  EXPECT_THROW(Candidate::parse("no-colon"), Error);
  EXPECT_THROW(Candidate::parse(":x"), Error);
  EXPECT_THROW(Candidate::parse("sm90:"), Error);
}

// Sizes near INT64_MAX: every product and sum in check()/resolve() is checked, so an impossible problem is refused
// instead of wrapping to a small or negative number that passes.
TEST(ProblemHostile, HugeLeadingDimensionIsRefused) {
  Problem p = tn(16, 64, 64);
  p.a.ld = int64_t(1) << 62;  // A would span 15 * 2^62 elements
  expect_reason(p, "A spans more than 2^62 bytes");
  Problem q = tn(3, 64, 64);
  q.a.ld = INT64_MAX;
  expect_reason(q, "A spans more than 2^62 bytes");
  Problem r = tn(16, 64, 64);
  r.d.ld = int64_t(1) << 61;  // 2^61 * 15 elements * 2 bytes
  expect_reason(r, "D spans");
}

TEST(ProblemHostile, PackedBatchStrideOverflowIsRefused) {
  Problem p = Problem::make(4, 64, 64, DType::bf16, DType::bf16, Layout::row, Layout::col, 2);
  p.d.ld = int64_t(1) << 62;
  p.d.batch_stride = -1;
  p.resolve();
  // ld * 4 rows wraps to 0: every batch would write the same D.
  EXPECT_NE(p.d.batch_stride, 0);
  expect_reason(p, "D: the packed batch stride");
  EXPECT_NE(p.str().find("--ldd="), std::string::npos);  // str() of an invalid problem must not overflow either
}

TEST(ProblemHostile, HugeBatchStrideIsRefused) {
  Problem p = Problem::make(16, 16, 16, DType::bf16, DType::bf16, Layout::row, Layout::col, 3);
  p.a.batch_stride = INT64_MAX / 2;
  expect_reason(p, "A spans more than 2^62 bytes");
}

TEST(ProblemHostile, GluInterleaveNearInt64MaxIsRefused) {
  Problem p = tn(16, 64, 64);
  p.epilogue = parse_epilogue("swiglu:interleave9223372036854775807");
  expect_reason(p, "wider than N/2=32");
  p.epilogue = parse_epilogue("swiglu:interleave4611686018427387904");  // 2*B = 2^63 wraps negative
  expect_reason(p, "wider than N/2");
  p.epilogue = parse_epilogue("swiglu:interleave16");
  EXPECT_EQ(p.check(), "");
}

TEST(ProblemHostile, StrPrintsFloatsThatRoundTrip) {
  Problem p = tn(16, 16, 16);
  p.beta = 1e-7f;
  p.alpha = 0.1f;
  const std::string s = p.str();
  EXPECT_NE(s.find("--beta=1e-07"), std::string::npos) << s;
  EXPECT_NE(s.find("--alpha=0.1"), std::string::npos) << s;
  for (const char* opt : {"--alpha=", "--beta="}) {
    const size_t at = s.find(opt) + std::string(opt).size();
    const float back = std::stof(s.substr(at, s.find(' ', at) - at));
    EXPECT_EQ(back, std::string(opt) == "--beta=" ? p.beta : p.alpha) << s;
  }
}

TEST(Problem, AlignIsPartOfTheProblem) {
  Problem p = tn(128, 256, 512);
  const std::string key16 = p.key();
  p.d.align = 2;
  EXPECT_NE(p.key(), key16);  // a kernel chosen for 16-byte pointers may not take a sliced view's
  EXPECT_NE(p.key().find(":al2"), std::string::npos) << p.key();
  EXPECT_NE(p.str().find("--align-d=2"), std::string::npos) << p.str();
  EXPECT_EQ(p.check(), "");
  p.d.align = 3;
  EXPECT_NE(p.check().find("align=3 must be 2, 4, 8 or 16"), std::string::npos) << p.check();
  p.d.align = 2;
  p.d.dtype = DType::f32;
  EXPECT_NE(p.check().find("less than its element size"), std::string::npos) << p.check();
}
