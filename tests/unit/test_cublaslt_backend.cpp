// cuBLASLt backend without a GPU: which problems it takes (and why not), the config string, and NoGpuError.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "backends/cublaslt/cublaslt_backend.h"
#include "backends/cublaslt/cublaslt_config.h"
#include "gemmtune/errors.h"

namespace gemmtune {
namespace {

using cublaslt::AlgoConfig;

DeviceInfo sm90() {
  DeviceInfo d;
  d.name = "assumed H100";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  return d;
}

Problem make(int64_t m, int64_t n, int64_t k, DType in, DType out, Layout la = Layout::row, Layout lb = Layout::col,
             Layout ld = Layout::row, int64_t batch = 1) {
  Problem p;
  p.m = m, p.n = n, p.k = k, p.batch = batch;
  p.a = {in, la, 0, -1};
  p.b = {in, lb, 0, -1};
  p.c = {out, ld, 0, -1};
  p.d = {out, ld, 0, -1};
  return p;
}

// Asserts that the reason is non-empty and mentions `needle`.
std::string supports_reason(const Backend& be, const Problem& p, const DeviceInfo& dev) {
  return be.supports(resolve(p), dev);
}

// A problem gemmtune itself refuses (Problem::check()): resolve() names it, before any backend sees the problem.
void expect_refused(const Problem& p, const std::string& needle) {
  try {
    (void)resolve(p);
    ADD_FAILURE() << "resolve() took " << p.str();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

void expect_reason(const std::string& reason, const std::string& needle) {
  EXPECT_FALSE(reason.empty()) << "expected unsupported (" << needle << ")";
  EXPECT_NE(reason.find(needle), std::string::npos) << "reason: " << reason;
  EXPECT_EQ(reason.rfind("cublaslt:", 0), 0u) << "reason should name the backend: " << reason;
}

TEST(CublasLtSupports, AcceptsTheUsualProblems) {
  auto be = make_cublaslt_backend();
  EXPECT_EQ(be->name(), "cublaslt");
  for (DType in : {DType::bf16, DType::f16})
    for (DType out : {in, DType::f32})
      for (Layout la : {Layout::row, Layout::col})
        for (Layout lb : {Layout::row, Layout::col})
          for (Layout ld : {Layout::row, Layout::col}) {
            Problem p = make(17, 33, 65, in, out, la, lb, ld, 3);
            p.beta = 0.5f;
            EXPECT_EQ(supports_reason(*be, p, sm90()), "") << p.m;
          }
}

// cuBLASLt has no grouped matmul with the group sizes on the device: a grouped problem run as one GEMM would be
// wrong, so it is refused with that reason, in every form and before any other rule.
TEST(CublasLtSupports, RefusesGroupedProblems) {
  auto be = make_cublaslt_backend();
  for (Grouping g : {Grouping::contiguous, Grouping::masked})
    for (DType in : {DType::bf16, DType::e4m3}) {
      Problem p = make(256, 512, 256, in, DType::bf16);
      if (is_fp8(in)) p.scaling = Scaling::row;
      p.grouping = g;
      p.groups = 8;
      p.resolve();
      ASSERT_EQ(p.check(), "") << p.str();
      const std::string why = supports_reason(*be, p, sm90());
      expect_reason(why, "grouped GEMMs (grouping=" + std::string(grouping_name(g)) + ") are not supported");
      EXPECT_NE(why.find("group sizes live on the device"), std::string::npos) << why;
      EXPECT_EQ(why.find('\n'), std::string::npos) << why;  // one line for `gemmtune list`'s note
    }
}

TEST(CublasLtSupports, RejectsDtypeCombosWithReasons) {
  auto be = make_cublaslt_backend();
  const DeviceInfo dev = sm90();
  {
    Problem p = make(64, 64, 64, DType::bf16, DType::bf16);
    p.b.dtype = DType::f16;
    expect_refused(p, "same dtype");
  }
  expect_reason(supports_reason(*be, make(64, 64, 64, DType::bf16, DType::f16), dev), "D must be bf16 or f32");
  expect_reason(supports_reason(*be, make(64, 64, 64, DType::f16, DType::bf16), dev), "D must be f16 or f32");
  expect_refused(make(64, 64, 64, DType::e4m3, DType::bf16), "need a scaling");
  EXPECT_EQ(supports_reason(*be, make(64, 64, 64, DType::f32, DType::f32), dev), "");  // SGEMM, CUBLAS_COMPUTE_32F
  expect_reason(supports_reason(*be, make(64, 64, 64, DType::f32, DType::bf16), dev), "with f32 inputs D must be f32");
  {
    Problem p = make(64, 64, 64, DType::bf16, DType::f32);
    p.beta = 1.0f;
    p.c.dtype = DType::bf16;
    expect_refused(p, "C and D must have the same dtype");
    p.beta = 0.0f;  // C is not read: its dtype does not matter
    EXPECT_EQ(supports_reason(*be, p, dev), "");
  }
  {
    Problem p = make(64, 64, 64, DType::bf16, DType::bf16);
    p.beta = 1.0f;
    p.c.layout = Layout::col;
    expect_reason(supports_reason(*be, p, dev), "C must have D's layout");
  }
  {
    Problem p = make(64, 64, 64, DType::bf16, DType::bf16);
    p.accum = DType::f16;
    expect_refused(p, "accumulator must be f32");
  }
}

TEST(CublasLtSupports, RejectsOtherThings) {
  auto be = make_cublaslt_backend();
  const DeviceInfo dev = sm90();
  {
    Problem p = make(64, 64, 64, DType::bf16, DType::bf16);
    p.epilogue = parse_epilogue("relu");
    p.beta = 1.0f;
    p.c.dtype = DType::f32;  // C's dtype differs from D's: rejected before the epilogue is looked at
    expect_refused(p, "C and D must have the same dtype");
  }
  {
    Problem p = make(64, 32, 16, DType::bf16, DType::bf16, Layout::row);
    p.a.ld = 8;  // row-major A is M x K: ld must be >= K
    expect_refused(p, "lda=8 is too small");
  }
  {
    Problem p = make(64, 32, 16, DType::bf16, DType::bf16, Layout::row, Layout::col, Layout::col, 2);
    p.d.ld = 64;
    p.d.batch_stride = 64;  // D col-major 64 x 32 needs >= 64*32 per batch
    expect_refused(p, "overlap");
  }
  {
    DeviceInfo old = sm90();
    old.cc_major = 7;
    expect_reason(supports_reason(*be, make(64, 64, 64, DType::bf16, DType::bf16), old), "sm_80");
  }
  {
    Problem p = make(64, 64, 64, DType::bf16, DType::bf16);
    Candidate c{"cublaslt", "algo=1,tile=nonsense"};
    EXPECT_NE(be->validate(resolve(p), c, dev), "");
    EXPECT_EQ(be->validate(resolve(p), Candidate{"cublaslt", "default"}, dev), "");
  }
}

// ---- fp8 ----

// A packed fp8 problem in the main layout (A row-major, B col-major, D row-major).
Problem fp8(int64_t m, int64_t n, int64_t k, Scaling sc, DType out = DType::bf16, DType a = DType::e4m3,
            DType b = DType::e4m3) {
  Problem p = make(m, n, k, a, out);
  p.b.dtype = b;
  p.scaling = sc;
  return p;
}

TEST(CublasLtFp8, AcceptsEveryScalingAndOutput) {
  auto be = make_cublaslt_backend();
  const DeviceInfo dev = sm90();
  for (Scaling sc : {Scaling::tensor, Scaling::row, Scaling::block})
    for (DType out : {DType::bf16, DType::f16, DType::f32, DType::e4m3})
      for (auto [a, b] : {std::pair{DType::e4m3, DType::e4m3}, {DType::e4m3, DType::e5m2}, {DType::e5m2, DType::e4m3}})
        for (Layout ld : {Layout::row, Layout::col}) {
          Problem p = fp8(256, 384, 512, sc, out, a, b);
          p.c.layout = p.d.layout = ld;
          p.amax = out == DType::e4m3;
          // An e4m3 D takes tensor scaling only (the heuristic answers INVALID_VALUE for the others).
          if (out == DType::e4m3 && sc != Scaling::tensor) {
            expect_reason(supports_reason(*be, p, dev), "an e4m3 D takes tensor scaling only");
            continue;
          }
          EXPECT_EQ(supports_reason(*be, p, dev), "") << p.str();
          EXPECT_NE(be->path(resolve(p), dev), "") << p.str();
        }
  Problem batched = fp8(64, 64, 64, Scaling::tensor);
  batched.batch = 3;
  EXPECT_EQ(supports_reason(*be, batched, dev), "");
  EXPECT_EQ(be->path(resolve(fp8(64, 64, 128, Scaling::row)), dev), "e4m3 x e4m3, row scales (OUTER_VEC_32F)");
  EXPECT_EQ(be->path(resolve(fp8(64, 64, 128, Scaling::block)), dev),
            "e4m3 x e4m3, block scales (A VEC128_32F, B BLK128x128_32F)");
  Problem d8 = fp8(64, 64, 128, Scaling::tensor, DType::e4m3);
  d8.amax = true;
  EXPECT_EQ(be->path(resolve(d8), dev), "e4m3 x e4m3, tensor scales (SCALAR_32F), D scaled by scale_d, amax");
  EXPECT_EQ(be->path(resolve(make(64, 64, 64, DType::bf16, DType::bf16)), dev), "");
}

TEST(CublasLtFp8, RefusesWithReasons) {
  auto be = make_cublaslt_backend();
  const DeviceInfo dev = sm90();
  expect_reason(supports_reason(*be, fp8(64, 64, 128, Scaling::tensor, DType::bf16, DType::e5m2, DType::e5m2), dev),
                "no e5m2 x e5m2");
  {
    Problem p = fp8(64, 64, 128, Scaling::row, DType::bf16, DType::bf16);  // weight-only fp8
    expect_reason(supports_reason(*be, p, dev), "fp8 A and B only");
    p.a.dtype = DType::f16;
    expect_reason(supports_reason(*be, p, dev), "no 16-bit x fp8");
  }
  {
    // The K-major rule is the problem's own (Problem::check_scaled).
    Problem p = fp8(64, 64, 128, Scaling::tensor);
    p.b.layout = Layout::row;
    expect_refused(p, "col-major");
  }
  {
    Problem p = fp8(64, 64, 136, Scaling::tensor);  // lda = ldb = 136 bytes
    expect_reason(supports_reason(*be, p, dev), "A (e4m3) has lda=136 = 136 bytes, align=16: 8-byte aligned");
    p.k = 144;
    EXPECT_EQ(supports_reason(*be, p, dev), "");
    p.a.align = 8;
    expect_reason(supports_reason(*be, p, dev), "align=8");
  }
  {
    Problem p = fp8(64, 60, 128, Scaling::tensor);  // ldd = 60 bf16 = 120 bytes
    expect_reason(supports_reason(*be, p, dev), "D (bf16) has ldd=60 = 120 bytes");
    p.d.dtype = p.c.dtype = DType::f32;  // 240 bytes
    EXPECT_EQ(supports_reason(*be, p, dev), "");
  }
  {
    DeviceInfo ada = sm90();
    ada.cc_minor = 0, ada.cc_major = 8;
    expect_reason(supports_reason(*be, fp8(64, 64, 128, Scaling::tensor), ada), "sm_89");
    ada.cc_minor = 9;
    EXPECT_EQ(supports_reason(*be, fp8(64, 64, 128, Scaling::tensor), ada), "");
    expect_reason(supports_reason(*be, fp8(64, 64, 128, Scaling::row), ada), "sm_90 only");
    DeviceInfo bw = sm90();
    bw.cc_major = 10;
    expect_reason(supports_reason(*be, fp8(64, 64, 128, Scaling::block), bw), "sm_90 only");
  }
}

// cuBLASLt's 128x128 B scales have a pitch of ceil(K/128) rounded up to 4; gemmtune's are packed.
TEST(CublasLtFp8, BlockScalingNeedsThePitchesToAgree) {
  auto be = make_cublaslt_backend();
  const DeviceInfo dev = sm90();
  EXPECT_EQ(supports_reason(*be, fp8(256, 384, 512, Scaling::block), dev), "");   // ceil(K/128) = 4
  EXPECT_EQ(supports_reason(*be, fp8(256, 384, 1024, Scaling::block), dev), "");  // 8
  EXPECT_EQ(supports_reason(*be, fp8(256, 384, 400, Scaling::block), dev), "");   // ceil(400/128) = 4 (ragged K)
  expect_reason(supports_reason(*be, fp8(256, 384, 640, Scaling::block), dev), "pitch of ceil(K/128) rounded up");  // 5
  expect_reason(supports_reason(*be, fp8(256, 256, 128, Scaling::block), dev),
                "needs ceil(K/128) % 4 == 0 or N <= 128");
  EXPECT_EQ(supports_reason(*be, fp8(256, 128, 640, Scaling::block), dev), "");  // one block of columns: no pitch
  EXPECT_EQ(supports_reason(*be, fp8(256, 112, 128, Scaling::block), dev), "");
  EXPECT_EQ(supports_reason(*be, fp8(256, 256, 640, Scaling::row), dev), "");  // only block scaling has the pitch
  expect_reason(supports_reason(*be, fp8(99, 384, 512, Scaling::block), dev), "needs M a multiple of 4");
}

TEST(CublasLtFp8, EpiloguesAndOutputScale) {
  auto be = make_cublaslt_backend();
  const DeviceInfo dev = sm90();
  {
    Problem p = fp8(64, 64, 128, Scaling::tensor, DType::e4m3);
    p.amax = true;
    p.epilogue = parse_epilogue("bias,gelu_tanh");  // fused in cuBLASLt: scale_d and amax apply after it
    EXPECT_EQ(supports_reason(*be, p, dev), "");
    EXPECT_EQ(be->validate(resolve(p), Candidate{"cublaslt", "default,fast_accum=0,epi=fused"}, dev), "");
    expect_reason(be->validate(resolve(p), Candidate{"cublaslt", "default,fast_accum=0,epi=separate"}, dev),
                  "cannot produce an e4m3 D");
    p.epilogue = parse_epilogue("silu");  // not fusable: with an e4m3 D refused outright
    expect_reason(supports_reason(*be, p, dev), "needs the chain fused in cuBLASLt");
    p.d.dtype = p.c.dtype = DType::bf16;
    p.amax = false;
    EXPECT_EQ(supports_reason(*be, p, dev), "");  // a 16-bit D takes the separate pass
    EXPECT_EQ(be->validate(resolve(p), Candidate{"cublaslt", "default,fast_accum=0,epi=separate"}, dev), "");
  }
  {
    // cuBLASLt's fp8 bias dtype: D's for a 16-bit D, bf16 for an f32 D.
    Problem p = fp8(64, 64, 128, Scaling::tensor, DType::f32);
    p.epilogue = parse_epilogue("bias");  // an f32 bias (D's dtype): not cuBLASLt's
    expect_reason(be->validate(resolve(p), Candidate{"cublaslt", "default,epi=fused"}, dev),
                  "a fused bias must be bf16");
    EXPECT_EQ(be->validate(resolve(p), Candidate{"cublaslt", "default,epi=separate"}, dev), "");
    p.epilogue = parse_epilogue("bias:bf16");
    EXPECT_EQ(be->validate(resolve(p), Candidate{"cublaslt", "default,epi=fused"}, dev), "");
  }
}

// fast_accum is the problem's fp8_accum (exact: 0 or absent, fast: 1); a config of the other mode is refused, naming
// both.
TEST(CublasLtFp8, FastAccumInTheConfig) {
  auto be = make_cublaslt_backend();
  const DeviceInfo dev = sm90();
  const Problem row = fp8(64, 64, 128, Scaling::row);
  for (const char* cfg : {"default", "default,fast_accum=0"})
    EXPECT_EQ(be->validate(resolve(row), Candidate{"cublaslt", cfg}, dev), "") << cfg;
  expect_reason(be->validate(resolve(row), Candidate{"cublaslt", "default,fast_accum=1"}, dev),
                "fast_accum=1 is not the problem's fp8_accum=exact");
  Problem fast = row;
  fast.fp8_accum = Fp8Accum::fast;
  EXPECT_EQ(be->validate(resolve(fast), Candidate{"cublaslt", "default,fast_accum=1"}, dev), "");
  for (const char* cfg : {"default", "default,fast_accum=0"})
    expect_reason(be->validate(resolve(fast), Candidate{"cublaslt", cfg}, dev),
                  "fast_accum=0 is not the problem's fp8_accum=fast");
  const Problem block = fp8(64, 64, 128, Scaling::block);
  EXPECT_EQ(be->validate(resolve(block), Candidate{"cublaslt", "default,fast_accum=0"}, dev), "");
  expect_reason(be->validate(resolve(block), Candidate{"cublaslt", "default,fast_accum=1"}, dev),
                "not the problem's fp8_accum=exact");
  expect_reason(be->validate(resolve(make(64, 64, 64, DType::bf16, DType::bf16)),
                             Candidate{"cublaslt", "default,fast_accum=0"}, dev),
                "fast_accum applies to fp8 inputs");
  EXPECT_THROW(be->parse(Candidate{"cublaslt", "default,fast_accum=2"}), Error);
  EXPECT_THROW(be->parse(Candidate{"cublaslt", "default,epi=fused,fast_accum=1"}), Error);  // out of order
}

// What cuBLASLt is given: fp8 runs in its "TN" form for either D layout, and each scale pointer goes with its operand
// through the swap of a row-major D.
TEST(CublasLtFp8, DescriptorMapping) {
  auto field = [](const std::string& s, const std::string& key) {
    const size_t at = s.find(" " + key + "=");
    if (at == std::string::npos) return std::string("<missing ") + key + " in " + s + ">";
    const size_t b = at + key.size() + 2;
    return s.substr(b, s.find(' ', b) - b);
  };
  {
    Problem p = fp8(100, 384, 512, Scaling::row);
    p.fp8_accum = Fp8Accum::fast;
    const std::string m = cublaslt_mapping(p, "default,fast_accum=1");
    EXPECT_EQ(field(" " + m, "swapped"), "1") << m;
    EXPECT_EQ(field(m, "transa"), "T") << m;
    EXPECT_EQ(field(m, "transb"), "N") << m;
    EXPECT_EQ(field(m, "A"), "e4m3:512x384:ld512") << m;  // our B (K x N, col-major)
    EXPECT_EQ(field(m, "B"), "e4m3:512x100:ld512") << m;  // our A (M x K row-major = K x M col-major)
    EXPECT_EQ(field(m, "D"), "bf16:384x100:ld384") << m;  // Dᵀ
    EXPECT_EQ(field(m, "scale_mode_a"), "OUTER_VEC_32F(scale_b)") << m;  // N values, one per row of Dᵀ
    EXPECT_EQ(field(m, "scale_mode_b"), "OUTER_VEC_32F(scale_a)") << m;  // M values, one per column of Dᵀ
    EXPECT_EQ(field(m, "fast_accum"), "1") << m;
  }
  {
    Problem p = fp8(128, 384, 512, Scaling::row);
    p.c.layout = p.d.layout = Layout::col;
    const std::string m = cublaslt_mapping(p, "default,fast_accum=0");
    EXPECT_EQ(field(" " + m, "swapped"), "0") << m;
    EXPECT_EQ(field(m, "transa"), "T") << m;
    EXPECT_EQ(field(m, "transb"), "N") << m;
    EXPECT_EQ(field(m, "A"), "e4m3:512x128:ld512") << m;
    EXPECT_EQ(field(m, "scale_mode_a"), "OUTER_VEC_32F(scale_a)") << m;
    EXPECT_EQ(field(m, "scale_mode_b"), "OUTER_VEC_32F(scale_b)") << m;
    EXPECT_EQ(field(m, "fast_accum"), "0") << m;
  }
  {
    const std::string m = cublaslt_mapping(fp8(256, 384, 512, Scaling::block, DType::bf16, DType::e5m2), "default");
    EXPECT_EQ(field(m, "A"), "e4m3:512x384:ld512") << m;
    EXPECT_EQ(field(m, "B"), "e5m2:512x256:ld512") << m;
    EXPECT_EQ(field(m, "scale_mode_a"), "BLK128x128_32F(scale_b)") << m;
    EXPECT_EQ(field(m, "scale_mode_b"), "VEC128_32F(scale_a)") << m;
    EXPECT_EQ(field(m, "fast_accum"), "0") << m;
  }
  {
    Problem p = fp8(64, 64, 128, Scaling::tensor, DType::e4m3);
    p.amax = true;
    p.epilogue = parse_epilogue("bias:f16,relu");
    p.fp8_accum = Fp8Accum::fast;
    const std::string m = cublaslt_mapping(p, "default,fast_accum=1,epi=fused");
    EXPECT_EQ(field(m, "C"), "f16:64x64:ld64(null)") << m;  // an e4m3 D's C is 16-bit and not read
    EXPECT_EQ(field(m, "D"), "e4m3:64x64:ld64") << m;
    EXPECT_EQ(field(m, "d_scale"), "1") << m;
    EXPECT_EQ(field(m, "amax"), "1") << m;
    EXPECT_EQ(field(m, "bias"), "f16") << m;
    EXPECT_EQ(field(m, "scale_mode_a"), "SCALAR_32F(scale_b)") << m;
  }
  {
    // 16-bit problems map as before: no fp8 fields.
    const std::string m = cublaslt_mapping(make(64, 32, 16, DType::bf16, DType::bf16), "default");
    EXPECT_EQ(m.find("scale_mode"), std::string::npos) << m;
    EXPECT_EQ(field(m, "A"), "bf16:16x32:ld16") << m;
  }
  EXPECT_THROW(cublaslt_mapping(fp8(64, 64, 128, Scaling::block), "default,fast_accum=1"), Error);
  EXPECT_THROW(cublaslt_mapping(fp8(64, 64, 128, Scaling::none), "default"), Error);
}

TEST(CublasLtConfig, CandidateConfigRoundTrip) {
  using cublaslt::CandidateConfig;
  using cublaslt::EpiMode;
  const std::string algo = "algo=66,tile=128x256,stages=64x4,splitk=1,red=0,swizzle=0,custom=0,cluster=2x1x1,inner=0";
  for (const std::string& a : {std::string("default"), algo})
    for (std::optional<bool> fa : {std::optional<bool>{}, std::optional<bool>{false}, std::optional<bool>{true}})
      for (EpiMode e : {EpiMode::none, EpiMode::fused, EpiMode::separate}) {
        const CandidateConfig c{a, fa, e};
        const std::string s = c.str();
        EXPECT_EQ(CandidateConfig::parse(s), c) << s;
        EXPECT_EQ(CandidateConfig::parse(s).str(), s);
      }
  EXPECT_EQ((CandidateConfig{"default", true, EpiMode::fused}.str()), "default,fast_accum=1,epi=fused");
  EXPECT_EQ((CandidateConfig{algo, false, EpiMode::none}.str()), algo + ",fast_accum=0");
  EXPECT_EQ(CandidateConfig::parse("default").str(), "default");
  for (const char* bad : {"default,fast_accum=", "default,fast_accum=yes", "default,epi=fused,fast_accum=0",
                          "default,epi=fusedd", "default,fast_accum=1,fast_accum=1", "default,epi=fused,epi=fused",
                          "fast_accum=1"})
    EXPECT_THROW(CandidateConfig::parse(bad), Error) << bad;
}

TEST(CublasLtConfig, PrintParseRoundTrip) {
  AlgoConfig c;
  c.algo = 66;
  c.tile = 1;      // CUBLASLT_MATMUL_TILE_8x8
  c.stages = 16;   // CUBLASLT_MATMUL_STAGES_64x4
  c.splitk = 4;
  c.reduction = 2;
  c.swizzle = 1;
  c.custom = 3;
  c.cluster = 3;   // CUBLASLT_CLUSTER_SHAPE_2x1x1
  c.inner = 4;
  const std::string s = c.str();
  EXPECT_EQ(s, "algo=66,tile=8x8,stages=64x4,splitk=4,red=2,swizzle=1,custom=3,cluster=2x1x1,inner=4");
  EXPECT_EQ(AlgoConfig::parse(s), c);
  EXPECT_EQ(AlgoConfig::parse(s).str(), s);

  AlgoConfig z;  // all defaults: undefined tile/stages, automatic cluster
  EXPECT_EQ(z.str(), "algo=0,tile=undef,stages=undef,splitk=1,red=0,swizzle=0,custom=0,cluster=auto,inner=0");
  EXPECT_EQ(AlgoConfig::parse(z.str()), z);

  // Every known id round-trips through its name; unknown ids print as #id.
  for (uint32_t id = 0; id < 2000; ++id) {
    AlgoConfig t;
    t.tile = id;
    t.stages = id;
    t.cluster = static_cast<uint16_t>(id);
    EXPECT_EQ(AlgoConfig::parse(t.str()), t) << t.str();
  }
  AlgoConfig u;
  u.tile = 999999;
  EXPECT_EQ(u.str(), "algo=0,tile=#999999,stages=undef,splitk=1,red=0,swizzle=0,custom=0,cluster=auto,inner=0");
}

TEST(CublasLtConfig, ParseAcceptsAnyOrderAndRejectsJunk) {
  const AlgoConfig c =
      AlgoConfig::parse("inner=0,cluster=1x2x1,custom=0,swizzle=0,red=0,splitk=1,stages=#16,tile=128x256,algo=71");
  EXPECT_EQ(c.str(), "algo=71,tile=128x256,stages=64x4,splitk=1,red=0,swizzle=0,custom=0,cluster=1x2x1,inner=0");
  EXPECT_EQ(AlgoConfig::parse("algo=71,tile=24,stages=16,splitk=1,red=0,swizzle=0,custom=0,cluster=5,inner=0"),
            AlgoConfig::parse("algo=71,tile=#24,stages=64x4,splitk=1,red=0,swizzle=0,custom=0,cluster=1x2x1,inner=0"));
  const std::string good = "algo=1,tile=8x8,stages=64x4,splitk=1,red=0,swizzle=0,custom=0,cluster=auto,inner=0";
  for (const char* bad : {
           "",
           "default",
           "algo=1",                                                                                        // missing
           "algo=1,tile=8x8,stages=64x4,splitk=1,red=0,swizzle=0,custom=0,cluster=auto,inner=0,algo=2",     // twice
           "algo=1,tile=8x8,stages=64x4,splitk=1,red=0,swizzle=0,custom=0,cluster=auto,inner=0,foo=1",      // unknown
           "algo=x,tile=8x8,stages=64x4,splitk=1,red=0,swizzle=0,custom=0,cluster=auto,inner=0",            // NaN
           "algo=1,tile=9x9,stages=64x4,splitk=1,red=0,swizzle=0,custom=0,cluster=auto,inner=0",            // no name
           "algo=1,tile=8x8,stages=64x4,splitk=0,red=0,swizzle=0,custom=0,cluster=auto,inner=0",            // splitk
           "algo=1,tile=8x8,stages=64x4,splitk=1,red=0,swizzle=0,custom=0,cluster=auto,inner=70000",        // range
           "algo=1,tile=8x8,stages=64x4,splitk=1,red=-1,swizzle=0,custom=0,cluster=auto,inner=0",           // range
           "algo=1,tile=8x8,stages=64x4,splitk=1,red=0,swizzle=0,custom=0,cluster=auto,inner=0,",           // trailing
       })
    EXPECT_THROW(AlgoConfig::parse(bad), Error) << bad;
  EXPECT_NO_THROW(AlgoConfig::parse(good));
}

TEST(CublasLtEnumerate, WithoutGpuThrowsNoGpuError) {
  if (gpu_available()) GTEST_SKIP() << "a GPU is present";
  auto be = make_cublaslt_backend();
  EXPECT_THROW(be->enumerate(resolve(make(256, 256, 256, DType::bf16, DType::bf16)), sm90()), NoGpuError);
  // An unsupported problem needs no GPU: it simply has no candidates.
  const Problem grouped = Problem::make_grouped(Grouping::contiguous, 4, 256, 256, 256, DType::bf16, DType::bf16);
  EXPECT_TRUE(be->enumerate(resolve(grouped), sm90()).empty());
}

TEST(CublasLtVersion, IsDotted) {
  const std::string v = cublaslt_version();
  EXPECT_EQ(std::count(v.begin(), v.end(), '.'), 2) << v;
  EXPECT_NE(v.substr(0, 2), "0.") << v;
}

}  // namespace
}  // namespace gemmtune
