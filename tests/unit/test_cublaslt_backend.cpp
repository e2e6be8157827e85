// cuBLASLt backend without a GPU: which problems it takes (and why not), the config string, and NoGpuError.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

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
            EXPECT_EQ(be->supports(p, sm90()), "") << p.m;
          }
}

TEST(CublasLtSupports, RejectsDtypeCombosWithReasons) {
  auto be = make_cublaslt_backend();
  const DeviceInfo dev = sm90();
  {
    Problem p = make(64, 64, 64, DType::bf16, DType::bf16);
    p.b.dtype = DType::f16;
    expect_reason(be->supports(p, dev), "same dtype");
  }
  expect_reason(be->supports(make(64, 64, 64, DType::bf16, DType::f16), dev), "D must be bf16 or f32");
  expect_reason(be->supports(make(64, 64, 64, DType::f16, DType::bf16), dev), "D must be f16 or f32");
  expect_reason(be->supports(make(64, 64, 64, DType::e4m3, DType::bf16), dev), "need a scaling");  // Problem's rule
  EXPECT_EQ(be->supports(make(64, 64, 64, DType::f32, DType::f32), dev), "");  // SGEMM, CUBLAS_COMPUTE_32F
  expect_reason(be->supports(make(64, 64, 64, DType::f32, DType::bf16), dev), "with f32 inputs D must be f32");
  {
    Problem p = make(64, 64, 64, DType::bf16, DType::f32);
    p.beta = 1.0f;
    p.c.dtype = DType::bf16;
    expect_reason(be->supports(p, dev), "C must have D's dtype");
    p.beta = 0.0f;  // C is not read: its dtype does not matter
    EXPECT_EQ(be->supports(p, dev), "");
  }
  {
    Problem p = make(64, 64, 64, DType::bf16, DType::bf16);
    p.beta = 1.0f;
    p.c.layout = Layout::col;
    expect_reason(be->supports(p, dev), "C must have D's layout");
  }
  {
    Problem p = make(64, 64, 64, DType::bf16, DType::bf16);
    p.accum = DType::f16;
    expect_reason(be->supports(p, dev), "fp32 accumulation");
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
    expect_reason(be->supports(p, dev), "C must have D's dtype");
  }
  {
    Problem p = make(64, 32, 16, DType::bf16, DType::bf16, Layout::row);
    p.a.ld = 8;  // row-major A is M x K: ld must be >= K
    expect_reason(be->supports(p, dev), "lda=8 is too small");
  }
  {
    Problem p = make(64, 32, 16, DType::bf16, DType::bf16, Layout::row, Layout::col, Layout::col, 2);
    p.d.ld = 64;
    p.d.batch_stride = 64;  // D col-major 64 x 32 needs >= 64*32 per batch
    expect_reason(be->supports(p, dev), "overlap");
  }
  {
    DeviceInfo old = sm90();
    old.cc_major = 7;
    expect_reason(be->supports(make(64, 64, 64, DType::bf16, DType::bf16), old), "sm_80");
  }
  {
    Problem p = make(64, 64, 64, DType::bf16, DType::bf16);
    Candidate c{"cublaslt", "algo=1,tile=nonsense"};
    EXPECT_NE(be->validate(p, c, dev), "");
    EXPECT_EQ(be->validate(p, Candidate{"cublaslt", "default"}, dev), "");
  }
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
  EXPECT_EQ(cublaslt::tile_name(999999), "#999999");
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
  EXPECT_THROW(be->enumerate(make(256, 256, 256, DType::bf16, DType::bf16), sm90()), NoGpuError);
  // An unsupported problem needs no GPU: it simply has no candidates.
  EXPECT_TRUE(be->enumerate(make(256, 256, 256, DType::e5m2, DType::bf16), sm90()).empty());
}

TEST(CublasLtVersion, IsDotted) {
  const std::string v = cublaslt_version();
  EXPECT_EQ(std::count(v.begin(), v.end(), '.'), 2) << v;
  EXPECT_NE(v.substr(0, 2), "0.") << v;
}

}  // namespace
}  // namespace gemmtune
