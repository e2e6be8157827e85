#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <set>

#include "gemmtune/gemm.h"
#include "tuner/serialize.h"

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

// ---- scaled fp8 problems ----

namespace {
// fp8 A (row-major) x fp8 B (col-major), D `out`: the layout rule's case.
Problem fp8(int64_t m, int64_t n, int64_t k, Scaling sc, DType out = DType::bf16) {
  Problem p = Problem::make(m, n, k, DType::e4m3, out);
  p.scaling = sc;
  return p;
}
}  // namespace

TEST(ProblemFp8, AcceptedForms) {
  for (Scaling sc : {Scaling::tensor, Scaling::row, Scaling::block})
    for (DType out : {DType::bf16, DType::f16, DType::f32, DType::e4m3}) EXPECT_EQ(fp8(64, 64, 128, sc, out).check(), "");
  Problem e5 = fp8(64, 64, 128, Scaling::row);
  e5.a.dtype = DType::e5m2;
  EXPECT_EQ(e5.check(), "");
  e5.b.dtype = DType::e5m2;
  EXPECT_EQ(e5.check(), "");
  Problem amax = fp8(64, 64, 128, Scaling::block, DType::e4m3);
  amax.amax = true;
  EXPECT_EQ(amax.check(), "");
  // Weight-only fp8: a 16-bit A with an e4m3 B, tensor or row scaling.
  for (DType a : {DType::bf16, DType::f16})
    for (Scaling sc : {Scaling::tensor, Scaling::row}) {
      Problem w = fp8(4, 64, 128, sc);
      w.a.dtype = a;
      w.resolve();
      EXPECT_EQ(w.check(), "") << w.str();
    }
  Problem batched = Problem::make(64, 64, 128, DType::e4m3, DType::bf16, Layout::row, Layout::col, 3);
  batched.scaling = Scaling::tensor;
  EXPECT_EQ(batched.check(), "");
}

TEST(ProblemFp8, RefusedFormsSayWhy) {
  expect_reason(fp8(64, 64, 128, Scaling::none), "fp8 inputs need a scaling (tensor, row or block)");
  Problem bf = tn(64, 64, 128);
  bf.scaling = Scaling::row;
  expect_reason(bf, "scaling=row applies to fp8 (e4m3/e5m2) inputs, A and B are bf16");
  Problem a_col = Problem::make(64, 64, 128, DType::e4m3, DType::bf16, Layout::col, Layout::col);
  a_col.scaling = Scaling::tensor;
  expect_reason(a_col, "fp8 A must be row-major");
  Problem b_row = Problem::make(64, 64, 128, DType::e4m3, DType::bf16, Layout::row, Layout::row);
  b_row.scaling = Scaling::tensor;
  expect_reason(b_row, "fp8 B must be col-major");
  Problem d5 = fp8(64, 64, 128, Scaling::tensor);
  d5.d.dtype = d5.c.dtype = DType::e5m2;
  expect_reason(d5, "D=e5m2 is not supported");
  Problem beta = fp8(64, 64, 128, Scaling::tensor, DType::e4m3);
  beta.beta = 1.0f;
  expect_reason(beta, "beta*C with an e4m3 D is not supported");
  Problem amax_bf16 = fp8(64, 64, 128, Scaling::tensor);
  amax_bf16.amax = true;
  expect_reason(amax_bf16, "amax is the statistic of an e4m3 D (D is bf16)");
  Problem amax_nofp8 = tn(64, 64, 128);
  amax_nofp8.amax = true;
  expect_reason(amax_nofp8, "amax is the statistic of an e4m3 D");
  Problem block16 = fp8(4, 64, 128, Scaling::block);
  block16.a.dtype = DType::bf16;
  block16.resolve();
  expect_reason(block16, "scaling=block needs fp8 A and B");
  Problem batched = Problem::make(64, 64, 128, DType::e4m3, DType::bf16, Layout::row, Layout::col, 2);
  batched.scaling = Scaling::row;
  expect_reason(batched, "scaling=row takes one matrix (batch=1)");
  Problem fp8_a_only = fp8(64, 64, 128, Scaling::tensor);
  fp8_a_only.b.dtype = DType::bf16;
  expect_reason(fp8_a_only, "an fp8 A needs an fp8 B");
  Problem f32_a = fp8(64, 64, 128, Scaling::tensor);
  f32_a.a.dtype = DType::f32;
  f32_a.resolve();
  expect_reason(f32_a, "A=f32 with an fp8 B");
  Problem d8 = tn(64, 64, 128);
  d8.d.dtype = DType::e4m3;
  expect_reason(d8, "an fp8 D needs fp8 inputs");
  // Refusals go through validate() as one Error naming the problem.
  try {
    b_row.validate();
    ADD_FAILURE() << "validate() took a row-major fp8 B";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--scaling=tensor"), std::string::npos) << e.what();
  }
}

TEST(ProblemFp8, KeyAndStrCarryScalingAndAmax) {
  Problem p = fp8(64, 96, 128, Scaling::row, DType::e4m3);
  p.amax = true;
  const std::string key = p.key(), str = p.str();
  EXPECT_NE(key.find(":sc=row"), std::string::npos) << key;
  EXPECT_NE(key.find(":amax"), std::string::npos) << key;
  EXPECT_NE(key.find("e4m3"), std::string::npos) << key;
  EXPECT_NE(str.find(" --scaling=row"), std::string::npos) << str;
  EXPECT_NE(str.find(" --amax"), std::string::npos) << str;
  EXPECT_NE(str.find("--A=e4m3:row"), std::string::npos) << str;
  // Every scaling (and amax) gives its own key: a kernel tuned for one must not answer for another.
  std::set<std::string> keys;
  for (Scaling sc : {Scaling::tensor, Scaling::row, Scaling::block}) {
    Problem q = fp8(64, 96, 128, sc, DType::e4m3);
    keys.insert(q.key());
    q.amax = true;
    keys.insert(q.key());
  }
  EXPECT_EQ(keys.size(), 6u);
  // No scaling, no amax: the 16-bit key and str() say nothing of them.
  EXPECT_EQ(tn(64, 96, 128).key().find(":sc="), std::string::npos);
  EXPECT_EQ(tn(64, 96, 128).str().find("--scaling"), std::string::npos);
  EXPECT_EQ(tn(64, 96, 128).str().find("--amax"), std::string::npos);
}

TEST(ProblemFp8, ScalingNames) {
  for (Scaling sc : {Scaling::none, Scaling::tensor, Scaling::row, Scaling::block})
    EXPECT_EQ(parse_scaling(scaling_name(sc)), sc);
  EXPECT_EQ(parse_scaling("Tensorwise"), Scaling::tensor);
  EXPECT_EQ(parse_scaling("rowwise"), Scaling::row);
  EXPECT_EQ(parse_scaling("BLOCKWISE"), Scaling::block);
  EXPECT_EQ(parse_scaling("rows"), std::nullopt);
  EXPECT_EQ(parse_scaling(""), std::nullopt);
  EXPECT_EQ(parse_dtype("e4m3"), DType::e4m3);
  EXPECT_EQ(parse_dtype("e5m2"), DType::e5m2);
  EXPECT_EQ(dtype_size(DType::e4m3), 1u);
  EXPECT_EQ(dtype_size(DType::e5m2), 1u);
  EXPECT_TRUE(is_fp8(DType::e4m3) && is_fp8(DType::e5m2));
  EXPECT_FALSE(is_fp8(DType::bf16) || is_fp8(DType::f16) || is_fp8(DType::f32));
}

// The accumulation mode of fp8 A and B is part of the problem: named, checked, in the key, str() and the JSON.
TEST(ProblemFp8, AccumulationMode) {
  for (Fp8Accum a : {Fp8Accum::exact, Fp8Accum::fast}) EXPECT_EQ(parse_fp8_accum(fp8_accum_name(a)), a);
  EXPECT_EQ(parse_fp8_accum("FAST"), Fp8Accum::fast);
  EXPECT_EQ(parse_fp8_accum("promote"), std::nullopt);
  EXPECT_EQ(Problem{}.fp8_accum, Fp8Accum::exact);  // torch._scaled_mm's default (use_fast_accum=False)

  Problem exact = fp8(64, 96, 128, Scaling::row), fast = exact;
  fast.fp8_accum = Fp8Accum::fast;
  ASSERT_EQ(exact.check(), "");
  ASSERT_EQ(fast.check(), "");
  // Both modes in the key, so that neither answers for the other (nor an entry keyed before the mode existed).
  EXPECT_NE(exact.key().find(":fp8acc=exact"), std::string::npos) << exact.key();
  EXPECT_NE(fast.key().find(":fp8acc=fast"), std::string::npos) << fast.key();
  EXPECT_NE(exact.key(), fast.key());
  EXPECT_EQ(exact.str().find("--fp8-accum"), std::string::npos) << exact.str();  // the default is not printed
  EXPECT_NE(fast.str().find(" --fp8-accum=fast"), std::string::npos) << fast.str();
  // A 16-bit problem and a weight-only one (16-bit A, fp8 B) accumulate in fp32: exact only, nothing in their key.
  Problem bf = tn(64, 96, 128);
  EXPECT_EQ(bf.key().find("fp8acc"), std::string::npos) << bf.key();
  bf.fp8_accum = Fp8Accum::fast;
  expect_reason(bf, "fp8_accum=fast applies to fp8 A and B");
  Problem wo = Problem::make(16, 4096, 4096, DType::bf16, DType::bf16);
  wo.b.dtype = DType::e4m3;
  wo.scaling = Scaling::row;
  ASSERT_EQ(wo.check(), "");
  EXPECT_EQ(wo.key().find("fp8acc"), std::string::npos) << wo.key();
  wo.fp8_accum = Fp8Accum::fast;
  expect_reason(wo, "A=bf16 x B=e4m3 accumulates in fp32");
  // Block scales multiply each 128-K block's partial sum: a block-scaled GEMM is exact by definition.
  Problem bl = fp8(64, 96, 128, Scaling::block);
  ASSERT_EQ(bl.check(), "");
  bl.fp8_accum = Fp8Accum::fast;
  expect_reason(bl, "fp8_accum=fast with scaling=block");

  // JSON: written for fp8 A and B only; a document without it reads as exact; a bad value names the field.
  const nlohmann::json j = to_json(fast);
  EXPECT_EQ(j.at("fp8_accum"), "fast");
  EXPECT_EQ(problem_from_json(j), fast);
  EXPECT_EQ(problem_from_json(to_json(exact)), exact);
  EXPECT_FALSE(to_json(tn(64, 96, 128)).contains("fp8_accum"));
  nlohmann::json old = j;
  old.erase("fp8_accum");
  EXPECT_EQ(problem_from_json(old), exact);
  nlohmann::json bad = j;
  bad["fp8_accum"] = "fastest";
  try {
    problem_from_json(bad);
    ADD_FAILURE() << "fp8_accum=fastest was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fp8_accum"), std::string::npos) << e.what();
  }
}

TEST(ProblemFp8, ScaleLengths) {
  EXPECT_EQ(kScaleBlock, 128);
  const Problem none = tn(200, 328, 400);
  EXPECT_EQ(none.scale_len(Which::A), 0);
  EXPECT_EQ(none.scale_len(Which::B), 0);
  const Problem t = fp8(200, 328, 400, Scaling::tensor);
  EXPECT_EQ(t.scale_len(Which::A), 1);
  EXPECT_EQ(t.scale_len(Which::B), 1);
  const Problem r = fp8(200, 328, 400, Scaling::row);
  EXPECT_EQ(r.scale_len(Which::A), 200);  // per row of A
  EXPECT_EQ(r.scale_len(Which::B), 328);  // per column of B (output channel)
  // Block: A is M x ceil(K/128), B ceil(N/128) x ceil(K/128); ragged K and N round up.
  const Problem b = fp8(200, 328, 400, Scaling::block);
  EXPECT_EQ(b.scale_len(Which::A), 200 * 4);
  EXPECT_EQ(b.scale_len(Which::B), 3 * 4);
  const Problem exact = fp8(256, 256, 512, Scaling::block);
  EXPECT_EQ(exact.scale_len(Which::A), 256 * 4);
  EXPECT_EQ(exact.scale_len(Which::B), 2 * 4);
  const Problem tiny = fp8(1, 16, 16, Scaling::block);
  EXPECT_EQ(tiny.scale_len(Which::A), 1);
  EXPECT_EQ(tiny.scale_len(Which::B), 1);
  const Problem edge = fp8(1, 129, 129, Scaling::block);
  EXPECT_EQ(edge.scale_len(Which::A), 2);
  EXPECT_EQ(edge.scale_len(Which::B), 2 * 2);
}

TEST(ProblemFp8, EpilogueOperandsDefaultToBf16ForAnFp8D) {
  Problem p = fp8(64, 96, 128, Scaling::row, DType::e4m3);
  p.epilogue = parse_epilogue("bias,row_scale:f32,residual");
  EXPECT_EQ(p.check(), "");
  EXPECT_EQ(p.epilogue_default_dtype(), DType::bf16);
  EXPECT_EQ(p.epilogue_dtype(EpiOpKind::bias_col), DType::bf16);
  EXPECT_EQ(p.epilogue_dtype(EpiOpKind::residual), DType::bf16);
  EXPECT_EQ(p.epilogue_dtype(EpiOpKind::row_scale), DType::f32);  // its own dtype wins
  EXPECT_NE(p.key().find("bias:bf16"), std::string::npos) << p.key();
  EXPECT_NE(p.key().find("residual:bf16"), std::string::npos) << p.key();
  // A 16-bit D keeps D's dtype.
  Problem q = fp8(64, 96, 128, Scaling::row, DType::f16);
  q.epilogue = parse_epilogue("bias");
  EXPECT_EQ(q.epilogue_default_dtype(), DType::f16);
  EXPECT_EQ(q.epilogue_dtype(EpiOpKind::bias_col), DType::f16);
}

TEST(ProblemFp8, MinBytesCountsOneBytePerElementAndTheScales) {
  const Problem p = fp8(256, 512, 1024, Scaling::row, DType::bf16);
  EXPECT_DOUBLE_EQ(p.min_bytes(), 256.0 * 1024 + 1024.0 * 512 + 2.0 * 256 * 512 + 4.0 * (256 + 512));
}

TEST(ProblemFp8, JsonRoundTripKeepsScalingAmaxAndAlign) {
  Problem p = fp8(200, 328, 400, Scaling::block, DType::e4m3);
  p.amax = true;
  p.b.align = 8;
  p.d.align = 4;
  p.epilogue = parse_epilogue("bias");
  ASSERT_EQ(p.check(), "");
  const nlohmann::json j = to_json(p);
  EXPECT_EQ(j.at("scaling"), "block");
  EXPECT_EQ(j.at("amax"), true);
  const Problem back = problem_from_json(j);
  EXPECT_EQ(back, p);
  EXPECT_EQ(back.key(), p.key());
  // Through text, as the worker and the result cache store it.
  EXPECT_EQ(problem_from_json(nlohmann::json::parse(j.dump())), p);
  for (Scaling sc : {Scaling::none, Scaling::tensor, Scaling::row}) {
    Problem q = sc == Scaling::none ? tn(64, 64, 64) : fp8(64, 64, 64, sc);
    EXPECT_EQ(problem_from_json(to_json(q)), q) << q.str();
  }
  // A document without the keys (written before scaled problems) reads as unscaled.
  nlohmann::json old = to_json(tn(64, 64, 64));
  old.erase("scaling");
  old.erase("amax");
  EXPECT_EQ(problem_from_json(old), tn(64, 64, 64));
  // Bad values are errors that name the field.
  nlohmann::json bad = j;
  bad["scaling"] = "rows";
  EXPECT_THROW(problem_from_json(bad), Error);
  bad = j;
  bad["amax"] = "yes";
  try {
    problem_from_json(bad);
    ADD_FAILURE() << "a string amax was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("amax"), std::string::npos) << e.what();
  }
}

namespace {
// A grouped problem as a caller builds it: shapes and dtypes, then the grouping, then resolve().
Problem grouped(Grouping g, int64_t m, int64_t n, int64_t k, int64_t groups, DType in = DType::bf16) {
  Problem p = Problem::make(m, n, k, in, DType::bf16);
  p.grouping = g;
  p.groups = groups;
  if (is_fp8(in)) p.scaling = Scaling::row;
  p.a.batch_stride = p.b.batch_stride = p.c.batch_stride = p.d.batch_stride = -1;  // repacked for the grouping
  p.resolve();
  return p;
}
}  // namespace

TEST(ProblemGrouped, ResolveAndCount) {
  const Problem c = grouped(Grouping::contiguous, 5000, 512, 256, 8);
  EXPECT_EQ(c.check(), "");
  EXPECT_TRUE(c.grouped());
  EXPECT_EQ(c.batch, 1);
  EXPECT_EQ(c.count(Which::A), 1);
  EXPECT_EQ(c.count(Which::B), 8);  // one weight per group
  EXPECT_EQ(c.count(Which::C), 1);
  EXPECT_EQ(c.count(Which::D), 1);
  EXPECT_EQ(c.a.batch_stride, 0);
  EXPECT_EQ(c.b.batch_stride, 256 * 512);
  EXPECT_DOUBLE_EQ(c.flops(), 2.0 * 5000 * 512 * 256);

  const Problem m = grouped(Grouping::masked, 64, 512, 256, 4);
  EXPECT_EQ(m.check(), "");
  EXPECT_EQ(m.batch, 4);  // resolve(): one matrix per group
  for (Which w : kOperands) EXPECT_EQ(m.count(w), 4) << which_name(w);
  EXPECT_EQ(m.a.batch_stride, 64 * 256);
  EXPECT_EQ(m.d.batch_stride, 64 * 512);
  EXPECT_DOUBLE_EQ(m.flops(), 2.0 * 64 * 512 * 256 * 4);

  // make_grouped builds the same packed problems in one call.
  EXPECT_EQ(Problem::make_grouped(Grouping::contiguous, 8, 5000, 512, 256, DType::bf16, DType::bf16), c);
  EXPECT_EQ(Problem::make_grouped(Grouping::masked, 4, 64, 512, 256, DType::bf16, DType::bf16), m);

  const Problem plain = tn(64, 64, 64);
  EXPECT_FALSE(plain.grouped());
  EXPECT_EQ(plain.count(Which::B), 1);
}

TEST(ProblemGrouped, CheckGroupingSaysWhy) {
  Problem p = tn(64, 64, 64);
  p.groups = 4;  // no grouping
  EXPECT_EQ(p.check_grouping(), "groups=4 needs a grouping (contiguous or masked)");
  expect_reason(p, "groups=4 needs a grouping");
  for (int64_t g : {int64_t(0), int64_t(-3), int64_t(1) << 31}) {
    Problem q = grouped(Grouping::contiguous, 64, 64, 64, 1);
    q.groups = g;
    EXPECT_EQ(q.check_grouping(), "groups must be in [1, 2^31) (got " + std::to_string(g) + ")");
  }
  Problem c = grouped(Grouping::contiguous, 64, 64, 64, 4);
  c.batch = 2;
  EXPECT_EQ(c.check_grouping(),
            "a contiguous grouped GEMM takes one A of M (total) rows: batch must be 1 (got 2)");
  Problem m = grouped(Grouping::masked, 64, 64, 64, 4);
  m.batch = 3;
  EXPECT_EQ(m.check_grouping(),
            "a masked grouped GEMM holds one matrix per group: batch must equal groups=4 (got 3; Problem::resolve() "
            "sets it)");
  expect_reason(m, "batch must equal groups=4");
  // A grouped fp8 problem takes row and block scaling (one matrix of A per group or all rows in one).
  for (Scaling sc : {Scaling::tensor, Scaling::row, Scaling::block})
    for (Grouping g : {Grouping::contiguous, Grouping::masked}) {
      Problem f = grouped(g, 256, 256, 256, 4, DType::e4m3);
      f.scaling = sc;
      EXPECT_EQ(f.check(), "") << f.str();
    }
  EXPECT_EQ(grouping_name(Grouping::masked), "masked");
  EXPECT_EQ(parse_grouping("contiguous"), Grouping::contiguous);
  EXPECT_EQ(parse_grouping("none"), Grouping::none);
  EXPECT_FALSE(parse_grouping("ragged"));
}

TEST(ProblemGrouped, KeyBucketsContiguousM) {
  const Problem a = grouped(Grouping::contiguous, 5000, 4096, 7168, 32);
  const Problem b = grouped(Grouping::contiguous, 8192, 4096, 7168, 32);
  EXPECT_EQ(a.key(), b.key());  // one tuning per power-of-two bucket of token counts
  EXPECT_NE(a.key().find("gemm:m8192:"), std::string::npos) << a.key();
  EXPECT_NE(a.key().find(":grp=contiguous32"), std::string::npos) << a.key();
  EXPECT_NE(a.key(), grouped(Grouping::contiguous, 8193, 4096, 7168, 32).key());
  EXPECT_NE(a.key(), grouped(Grouping::contiguous, 4096, 4096, 7168, 32).key());
  EXPECT_NE(a.key(), grouped(Grouping::contiguous, 5000, 4096, 7168, 16).key());
  EXPECT_EQ(grouped(Grouping::contiguous, 1, 64, 64, 2).key().rfind("gemm:m1:", 0), 0u);
  // Masked: M is M_max, fixed by the caller's buffers; no bucketing.
  EXPECT_NE(grouped(Grouping::masked, 100, 4096, 7168, 32).key(), grouped(Grouping::masked, 128, 4096, 7168, 32).key());
  // A grouped problem never shares a key with the plain GEMM of the same shape.
  EXPECT_NE(grouped(Grouping::contiguous, 8192, 4096, 7168, 1).key(), tn(8192, 4096, 7168).key());
  EXPECT_NE(grouped(Grouping::masked, 64, 64, 64, 4).key(),
            Problem::make(64, 64, 64, DType::bf16, DType::bf16, Layout::row, Layout::col, 4).key());
}

TEST(ProblemGrouped, ScaleLengthsPerGroup) {
  // Contiguous: A's scales follow its M rows, B's are per group.
  Problem c = grouped(Grouping::contiguous, 200, 328, 400, 8, DType::e4m3);
  EXPECT_EQ(c.scale_len(Which::A), 200);
  EXPECT_EQ(c.scale_len(Which::B), 8 * 328);
  c.scaling = Scaling::block;
  EXPECT_EQ(c.scale_len(Which::A), 200 * 4);
  EXPECT_EQ(c.scale_len(Which::B), 8 * 3 * 4);
  c.scaling = Scaling::tensor;
  EXPECT_EQ(c.scale_len(Which::A), 1);
  EXPECT_EQ(c.scale_len(Which::B), 1);
  // Masked: G matrices of A (M_max rows each) and of B.
  Problem m = grouped(Grouping::masked, 64, 328, 400, 4, DType::e4m3);
  EXPECT_EQ(m.scale_len(Which::A), 4 * 64);
  EXPECT_EQ(m.scale_len(Which::B), 4 * 328);
  m.scaling = Scaling::block;
  EXPECT_EQ(m.scale_len(Which::A), 4 * 64 * 4);
  EXPECT_EQ(m.scale_len(Which::B), 4 * 3 * 4);
}

TEST(ProblemGrouped, MinBytesCountsEveryWeight) {
  const Problem c = grouped(Grouping::contiguous, 1000, 512, 256, 8);
  EXPECT_DOUBLE_EQ(c.min_bytes(), 2.0 * (1000.0 * 256 + 8.0 * 256 * 512 + 1000.0 * 512));
  const Problem m = grouped(Grouping::masked, 64, 512, 256, 8);
  EXPECT_DOUBLE_EQ(m.min_bytes(), 2.0 * 8 * (64.0 * 256 + 256.0 * 512 + 64.0 * 512));
  const Problem f = grouped(Grouping::contiguous, 1000, 512, 256, 8, DType::e4m3);
  EXPECT_DOUBLE_EQ(f.min_bytes(), 1000.0 * 256 + 8.0 * 256 * 512 + 2.0 * 1000 * 512 + 4.0 * (1000 + 8 * 512));
}

TEST(ProblemGrouped, StrAndJsonRoundTrip) {
  const Problem c = grouped(Grouping::contiguous, 5000, 4096, 7168, 32);
  EXPECT_EQ(c.str().rfind("--m=5000 --n=4096 --k=7168 --groups=32 --A=", 0), 0u) << c.str();
  const Problem m = grouped(Grouping::masked, 128, 4096, 7168, 16);
  EXPECT_EQ(m.str().rfind("--masked-m=128 --n=4096 --k=7168 --groups=16 --A=", 0), 0u) << m.str();
  Problem s = grouped(Grouping::contiguous, 64, 128, 256, 4);
  s.b.batch_stride = 0;  // one weight shared by every group
  EXPECT_NE(s.str().find("--batch-stride-b=0"), std::string::npos) << s.str();
  for (const Problem& p : {c, m, s}) {
    const nlohmann::json j = to_json(p);
    EXPECT_EQ(j.at("grouping"), grouping_name(p.grouping));
    EXPECT_EQ(j.at("groups"), p.groups);
    EXPECT_EQ(problem_from_json(nlohmann::json::parse(j.dump())), p) << p.str();
  }
  // A document without the keys reads as ungrouped; a bad grouping names the field.
  nlohmann::json old = to_json(tn(64, 64, 64));
  old.erase("grouping");
  old.erase("groups");
  EXPECT_EQ(problem_from_json(old), tn(64, 64, 64));
  nlohmann::json bad = to_json(c);
  bad["grouping"] = "ragged";
  try {
    problem_from_json(bad);
    ADD_FAILURE() << "grouping=ragged was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("grouping"), std::string::npos) << e.what();
  }
}

// resolve(): the packed strides filled in, the problem checked once, and the facts every stage reads derived from
// the resolved problem; a refused problem is an Error naming why, so no ResolvedProblem of it exists.
TEST(ResolvedProblem, ResolvesChecksAndDerivesOnce) {
  Problem p = Problem::make(100, 96, 40, DType::bf16, DType::bf16, Layout::col, Layout::row, 3);
  p.a.ld = 0;
  p.a.batch_stride = -1;
  p.d.ld = 100;  // padded D rows: 200 bytes, so 8-byte accesses
  p.d.batch_stride = -1;
  p.epilogue = parse_epilogue("silu_glu");
  const ResolvedProblem r = resolve(p);
  Problem q = p;
  q.resolve();
  EXPECT_EQ(r.problem(), q);
  EXPECT_EQ(r.key(), q.key());
  EXPECT_EQ(r.n_out(), 48);
  EXPECT_FALSE(r.has_c());
  for (Which w : kOperands) {
    EXPECT_EQ(r.rows(w), Problem::rows_of(w, q)) << which_name(w);
    EXPECT_EQ(r.cols(w), Problem::cols_of(w, q)) << which_name(w);
    EXPECT_EQ(r.count(w), q.count(w)) << which_name(w);
    EXPECT_EQ(r.access_bytes(w), q.access_bytes(w)) << which_name(w);
    EXPECT_EQ(r.scale_len(w), q.scale_len(w)) << which_name(w);
  }
  EXPECT_EQ(r.access_bytes(Which::D), 8);
  EXPECT_EQ(r->a.ld, 100);  // col-major A (M x K): packed ld = M

  Problem bad = p;
  bad.d.ld = 10;
  try {
    (void)resolve(bad);
    FAIL() << "resolve() took a problem check() refuses";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ldd=10 is too small"), std::string::npos) << e.what();
  }
}

TEST(Which, NamesTheFourOperands) {
  std::string names, lower;
  for (Which w : kOperands) names += which_name(w), lower += which_lower(w);
  EXPECT_EQ(names, "ABCD");
  EXPECT_EQ(lower, "abcd");
}
