// sm90 grouped GEMMs without a GPU: which configs the rules take, the kernel spec and launch geometry, and NVRTC
// compilation of the grouped kernels (contiguous and masked, both schedules, a 1x2 cluster, fused epilogues, fp8).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "backends/sm90/sm90_backend.h"
#include "backends/sm90/sm90_config.h"
#include "gemmtune/epilogue.h"
#include "unit/compile_each.h"

namespace gemmtune {
namespace {

Problem grouped(int64_t m, int64_t n, int64_t k, int64_t groups, Grouping g, DType in = DType::bf16,
                DType out = DType::bf16) {
  Problem p = Problem::make_grouped(g, groups, m, n, k, in, out);
  if (is_fp8(in)) p.scaling = Scaling::row;
  return p;
}

TEST(Sm90Grouped, EnumeratesOnlyWhatTheGroupedWalkRuns) {
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  for (Grouping g : {Grouping::contiguous, Grouping::masked}) {
    const Problem p = grouped(g == Grouping::masked ? 256 : 8192, 4096, 7168, 32, g);
    ASSERT_EQ(p.check(), "");
    const auto cfgs = sm90::enumerate_configs(sm90::Analysis(resolve(p)), dev);
    ASSERT_FALSE(cfgs.empty()) << p.str();
    for (const sm90::Config& c : cfgs) {
      EXPECT_EQ(c.cm, 1) << c.str();
      EXPECT_FALSE(c.swap || c.sk || c.dynamic() || c.cp) << c.str();
      EXPECT_EQ(sm90::spec(c, sm90::kernel_view(resolve(p))).grouped, g == Grouping::contiguous ? 1 : 2);
    }
    EXPECT_TRUE(std::any_of(cfgs.begin(), cfgs.end(), [](const sm90::Config& c) { return c.cn == 2; }));
    EXPECT_TRUE(std::any_of(cfgs.begin(), cfgs.end(), [](const sm90::Config& c) { return c.pingpong; }));
    EXPECT_TRUE(std::any_of(cfgs.begin(), cfgs.end(), [](const sm90::Config& c) { return !c.pingpong; }));
  }
}

TEST(Sm90Grouped, Reasons) {
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  Problem p = grouped(4096, 1024, 512, 8, Grouping::contiguous);
  const sm90::Config ok = sm90::Config::parse("tile=128x128x64,stages=5,cluster=1x2,sched=coop,raster=m,group=8");
  EXPECT_EQ(sm90::config_reason(ok, sm90::Analysis(resolve(p)), dev), "");
  auto reason = [&](const std::string& s) {
    return sm90::config_reason(sm90::Config::parse(s), sm90::Analysis(resolve(p)), dev);
  };
  EXPECT_NE(reason("tile=128x128x64,stages=6,cluster=2x1,sched=coop,raster=m,group=8").find("1x2"), std::string::npos);
  EXPECT_NE(reason("tile=128x128x64,stages=6,cluster=1x1,sched=coop,raster=m,group=8,tiles=dynamic").find("static"),
            std::string::npos);
  EXPECT_NE(reason("tile=128x128x64,stages=6,cluster=1x1,sched=coop,raster=m,group=8,tail=sk").find("stream-K"),
            std::string::npos);
  EXPECT_NE(reason("tile=128x64x64,stages=6,cluster=1x1,sched=pingpong,raster=m,group=8,swap=1").find("swap"),
            std::string::npos);
  // D is always copied out: the store path says so, and no D map is needed.
  EXPECT_FALSE(sm90::d_tma_store(sm90::kernel_view(resolve(p))));
  EXPECT_NE(sm90::store_path(p, sm90::kernel_view(resolve(p))).find("group"), std::string::npos);
  Problem col = p;
  col.d.layout = Layout::col;
  col.d.ld = 0;
  col.resolve();
  EXPECT_NE(sm90::problem_reason(resolve(col), dev).find("row-major"), std::string::npos);
  Problem odd = p;  // A's pitch not a multiple of 16 bytes: TMA cannot load it, and grouped kernels have no load=cp
  odd.a.ld = 516;
  EXPECT_NE(sm90::problem_reason(resolve(odd), dev).find("TMA"), std::string::npos);
  Problem f8 = grouped(4096, 1024, 512, 8, Grouping::contiguous, DType::e4m3, DType::e4m3);
  EXPECT_NE(sm90::problem_reason(resolve(f8), dev).find("e4m3 D"), std::string::npos);
}

// The grid's bound on a grouped problem's tiles (its group sizes are known on the device only): M / BM + G tile rows
// for contiguous groups (ceil per group), G x ceil(M_max / BM) for masked ones.
TEST(Sm90Grouped, TileBound) {
  const Problem p = grouped(1000, 512, 256, 7, Grouping::contiguous);
  const sm90::Config c = sm90::Config::parse("tile=128x128x64,stages=6,cluster=1x2,sched=coop,raster=m,group=8");
  EXPECT_EQ(sm90::cluster_tiles(c, sm90::kernel_view(resolve(p))), (1000 / 128 + 7) * 2);
  const Problem q = grouped(100, 512, 256, 7, Grouping::masked);
  EXPECT_EQ(sm90::cluster_tiles(c, sm90::kernel_view(resolve(q))), 1 * 2 * 7);
  // The tile prefix takes shared memory: the deepest ring of a grouped kernel is never deeper than a plain one's.
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  for (const char* s : {"tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=m,group=8",
                        "tile=128x128x64,stages=6,cluster=1x2,sched=pingpong,raster=m,group=8"}) {
    const sm90::Config k = sm90::Config::parse(s);
    EXPECT_LE(sm90::max_stages(k, sm90::view_of(sm90::kBF16, 1), dev),
              sm90::max_stages(k, sm90::view_of(sm90::kBF16), dev));
    EXPECT_EQ(sm90::plan(k, sm90::kBF16, 1).smem_bytes,
              sm90::plan(k, sm90::kBF16).smem_bytes + 4 * (gt_sm90::kMaxGroups + 1));
  }
  Problem many = grouped(100000, 512, 256, gt_sm90::kMaxGroups + 1, Grouping::contiguous);
  EXPECT_NE(sm90::problem_reason(resolve(many), dev).find("at most"), std::string::npos);
}

// Each grouped kernel form compiles: contiguous and masked, coop and ping-pong, a 1x2 cluster, fused chains (a GLU,
// beta * C with a residual), fp8 row and block scaling.
void compile_grouped(Problem p, size_t top = 3) {
  auto be = make_sm90_backend();
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  p.resolve();
  ASSERT_EQ(p.check(), "");
  auto all = be->enumerate(resolve(p), dev);
  ASSERT_FALSE(all.empty()) << p.str();
  std::vector<Candidate> cands(all.begin(), all.begin() + std::min(top, all.size()));
  std::set<std::string> fam;  // plus the best of each (schedule, cluster)
  for (const auto& c : all) {
    const auto cfg = sm90::Config::parse(c.config);
    if (fam.insert(std::to_string(cfg.pingpong) + std::to_string(cfg.cn)).second &&
        std::find(cands.begin(), cands.end(), c) == cands.end())
      cands.push_back(c);
  }
  const auto [res, err] = test::compile_each(*be, p, cands, dev);
  for (size_t i = 0; i < cands.size(); ++i) {
    ASSERT_EQ(err[i], "") << cands[i].str() << " for " << p.str();
    EXPECT_GT(res[i].registers, 0);
    if (res[i].spill_bytes > 0) std::printf("  spills %d bytes: %s\n", res[i].spill_bytes, cands[i].str().c_str());
  }
}

TEST(Sm90GroupedCompile, Contiguous) { compile_grouped(grouped(8192, 4096, 7168, 32, Grouping::contiguous)); }
TEST(Sm90GroupedCompile, Masked) { compile_grouped(grouped(128, 2048, 7168, 16, Grouping::masked), 2); }
TEST(Sm90GroupedCompile, SwiGlu) {
  Problem p = grouped(4096, 2 * 1536, 2048, 64, Grouping::contiguous);
  p.epilogue = parse_epilogue("silu_glu");
  compile_grouped(p, 2);
}
TEST(Sm90GroupedCompile, BetaResidualRowScale) {
  Problem p = grouped(4096, 1024, 512, 8, Grouping::contiguous, DType::bf16, DType::f32);
  p.beta = 0.5f;
  p.c.dtype = DType::f32;
  p.epilogue = parse_epilogue("bias,row_scale,residual");
  compile_grouped(p, 1);
}
TEST(Sm90GroupedCompile, Fp8RowAndBlock) {
  compile_grouped(grouped(8192, 4096, 7168, 32, Grouping::contiguous, DType::e4m3, DType::bf16), 2);
  Problem b = grouped(8192, 4096, 7168, 32, Grouping::contiguous, DType::e4m3, DType::bf16);
  b.scaling = Scaling::block;
  compile_grouped(b, 2);
}

}  // namespace
}  // namespace gemmtune
