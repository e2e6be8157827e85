// sm90 fp8 kernels without a GPU: config round trip, refusals, and NVRTC compilation of every fp8 candidate the
// heuristics enumerate for representative problems (each compiles for sm_90a without spills, and its unit names the
// fp8 wgmma forms). GPU correctness is tests/gpu/test_fp8.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "backends/sm90/sm90_backend.h"
#include "backends/sm90/sm90_config.h"
#include "gemmtune/errors.h"
#include "jit/thread_pool.h"

namespace gemmtune {
namespace {

Problem fp8_problem(int64_t m, int64_t n, int64_t k, Scaling s, DType a = DType::e4m3, DType b = DType::e4m3,
                    DType out = DType::bf16) {
  Problem p = Problem::make(m, n, k, a, out, Layout::row, Layout::col);
  p.b.dtype = b;
  p.scaling = s;
  p.resolve();
  return p;
}

TEST(Sm90Fp8, ConfigRoundTrip) {
  const std::string s = "tile=128x128x128,stages=6,cluster=2x1,sched=coop,raster=m,group=8,acc=promote";
  const sm90::Config c = sm90::Config::parse(s);
  EXPECT_EQ(c.acc, sm90::Accum::promote);
  EXPECT_EQ(c.bk, 128);
  EXPECT_EQ(c.str(), s);
  EXPECT_EQ(sm90::Config::parse("tile=128x256x128,stages=4,cluster=1x1,sched=coop,raster=m,group=8,acc=fast").acc,
            sm90::Accum::fast);
  EXPECT_THROW(sm90::Config::parse(s + ",acc=slow"), Error);
}

TEST(Sm90Fp8, Reasons) {
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  auto be = make_sm90_backend();
  // Weight-only (16-bit A, fp8 B), e4m3 D and a GLU are refused with what is refused.
  Problem w = fp8_problem(64, 4096, 4096, Scaling::row, DType::bf16, DType::e4m3);
  EXPECT_NE(be->supports(w, dev).find("weight-only"), std::string::npos) << be->supports(w, dev);
  Problem d8 = fp8_problem(256, 256, 256, Scaling::tensor, DType::e4m3, DType::e4m3, DType::e4m3);
  EXPECT_NE(be->supports(d8, dev).find("e4m3 D"), std::string::npos) << be->supports(d8, dev);
  const Problem t = fp8_problem(4096, 4096, 4096, Scaling::tensor);
  EXPECT_EQ(be->supports(t, dev), "");
  EXPECT_NE(be->path(t, dev).find("acc=fast"), std::string::npos) << be->path(t, dev);
  const Problem bl = fp8_problem(4096, 4096, 4096, Scaling::block);
  EXPECT_NE(be->path(bl, dev).find("block scales"), std::string::npos) << be->path(bl, dev);
  auto reason = [&](const Problem& p, const std::string& cfg) {
    return sm90::config_reason(sm90::Config::parse(cfg), p, dev);
  };
  const std::string base = "stages=4,cluster=1x1,sched=coop,raster=m,group=8";
  EXPECT_EQ(reason(t, "tile=128x256x128," + base + ",acc=fast"), "");
  EXPECT_NE(reason(t, "tile=128x256x64," + base + ",acc=fast").find("tile K must be 128"), std::string::npos);
  EXPECT_NE(reason(t, "tile=128x256x128," + base).find("acc=fast or acc=promote"), std::string::npos);
  EXPECT_NE(reason(t, "tile=128x256x128," + base + ",acc=promote").find("two accumulator sets"), std::string::npos);
  EXPECT_NE(reason(bl, "tile=128x128x128," + base + ",acc=fast").find("block scaling needs acc=promote"),
            std::string::npos);
  EXPECT_EQ(reason(bl, "tile=128x128x128," + base + ",acc=promote"), "");
  EXPECT_NE(reason(bl, "tile=128x96x128," + base + ",acc=promote").find("multiple or a divisor of 128"),
            std::string::npos);
  const Problem bf = Problem::make(256, 256, 256, DType::bf16, DType::bf16, Layout::row, Layout::col);
  EXPECT_NE(reason(bf, "tile=128x128x64," + base + ",acc=fast").find("fp8 inputs only"), std::string::npos);
}

TEST(Sm90Fp8, Enumerate) {
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  auto be = make_sm90_backend();
  for (Scaling s : {Scaling::tensor, Scaling::row, Scaling::block}) {
    const Problem p = fp8_problem(4096, 4096, 4096, s);
    const auto cands = be->enumerate(p, dev);
    ASSERT_FALSE(cands.empty()) << p.str();
    bool fast = false, promote = false;
    for (const Candidate& c : cands) {
      EXPECT_EQ(be->validate(p, c, dev), "") << c.str();
      fast = fast || c.config.find("acc=fast") != std::string::npos;
      promote = promote || c.config.find("acc=promote") != std::string::npos;
      EXPECT_NE(c.config.find("x128,"), std::string::npos) << c.str();  // tile K 128
    }
    EXPECT_EQ(fast, s != Scaling::block) << p.str();
    EXPECT_TRUE(promote) << p.str();
  }
}

struct Fp8Case {
  int64_t m, n, k;
  Scaling s;
  DType a = DType::e4m3, b = DType::e4m3, out = DType::bf16;
};

// Every enumerated candidate compiles for sm_90a without spills; the units name the fp8 wgmma forms.
void compile_fp8(const Fp8Case& fc) {
  auto be = make_sm90_backend();
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  const Problem p = fp8_problem(fc.m, fc.n, fc.k, fc.s, fc.a, fc.b, fc.out);
  const auto cands = be->enumerate(p, dev);
  ASSERT_FALSE(cands.empty()) << p.str();
  std::vector<CompileResult> res(cands.size());
  std::vector<std::string> err(cands.size());
  jit::parallel_for(cands.size(), 0, [&](size_t i) {
    try {
      res[i] = be->compile(p, cands[i], dev);
    } catch (const std::exception& e) {
      err[i] = e.what();
    }
  });
  std::vector<double> ms;
  for (size_t i = 0; i < cands.size(); ++i) {
    ASSERT_EQ(err[i], "") << cands[i].str() << " for " << p.str();
    EXPECT_TRUE(res[i].compiled);
    EXPECT_GT(res[i].registers, 0) << cands[i].str();
    EXPECT_EQ(res[i].spill_bytes, 0) << cands[i].str() << " for " << p.str();
    if (!res[i].cache_hit) ms.push_back(res[i].compile_ms);
  }
  std::sort(ms.begin(), ms.end());
  std::printf("%s: %zu fp8 candidates compiled, median %.0f ms (uncached %zu)\n", p.str().c_str(), cands.size(),
              ms.empty() ? 0.0 : ms[ms.size() / 2], ms.size());
}

TEST(Sm90Fp8Compile, Tensor4096) { compile_fp8({4096, 4096, 4096, Scaling::tensor}); }
TEST(Sm90Fp8Compile, Row4096) { compile_fp8({4096, 4096, 4096, Scaling::row}); }
TEST(Sm90Fp8Compile, Block4096) { compile_fp8({4096, 4096, 4096, Scaling::block}); }
TEST(Sm90Fp8Compile, RowM64_E5M2B) { compile_fp8({64, 4096, 4096, Scaling::row, DType::e4m3, DType::e5m2}); }
TEST(Sm90Fp8Compile, RaggedK_F32Out) { compile_fp8({1000, 1000, 1040, Scaling::tensor, DType::e5m2, DType::e4m3, DType::f32}); }
TEST(Sm90Fp8Compile, BlockRaggedK) { compile_fp8({512, 384, 1040, Scaling::block}); }

}  // namespace
}  // namespace gemmtune
