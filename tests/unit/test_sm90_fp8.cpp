// sm90 fp8 kernels without a GPU: config round trip, refusals, and NVRTC compilation of every fp8 candidate the
// heuristics enumerate for representative problems (each compiles for sm_90a without spills, and its unit names the
// fp8 wgmma forms). GPU correctness is tests/gpu/test_fp8.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "backends/sm90/sm90_backend.h"
#include "backends/sm90/sm90_config.h"
#include "gemmtune/epilogue.h"
#include "gemmtune/errors.h"
#include "jit/jit.h"
#include "jit/thread_pool.h"
#include "unit/compile_each.h"

namespace gemmtune {
namespace {

Problem fp8_problem(int64_t m, int64_t n, int64_t k, Scaling s, DType a = DType::e4m3, DType b = DType::e4m3,
                    DType out = DType::bf16, Fp8Accum acc = Fp8Accum::exact) {
  Problem p = Problem::make(m, n, k, a, out, Layout::row, Layout::col);
  p.b.dtype = b;
  p.scaling = s;
  p.fp8_accum = acc;
  p.resolve();
  return p;
}

Problem fast(Problem p) {
  p.fp8_accum = Fp8Accum::fast;
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
  EXPECT_NE(be->supports(resolve(w), dev).find("weight-only"), std::string::npos) << be->supports(resolve(w), dev);
  // An e4m3 D: plain epilogue and whole TMA-stored rows; not with a chain, a ragged N or swap=1.
  Problem d8 = fp8_problem(256, 256, 256, Scaling::tensor, DType::e4m3, DType::e4m3, DType::e4m3);
  d8.amax = true;
  EXPECT_EQ(be->supports(resolve(d8), dev), "");
  EXPECT_NE(be->path(resolve(d8), dev).find("amax"), std::string::npos) << be->path(resolve(d8), dev);
  EXPECT_NE(sm90::config_reason(sm90::Config::parse("tile=64x16x128,stages=8,cluster=1x1,sched=pingpong,raster=m,"
                                                    "group=8,swap=1,acc=fast"),
                                sm90::Analysis(resolve(d8)), dev)
                .find("swap=1"),
            std::string::npos);
  Problem d8c = d8;
  d8c.epilogue = parse_epilogue("bias");
  EXPECT_NE(be->supports(resolve(d8c), dev).find("fused epilogue"), std::string::npos)
      << be->supports(resolve(d8c), dev);
  Problem d8r = fp8_problem(256, 1000, 256, Scaling::row, DType::e4m3, DType::e4m3, DType::e4m3);
  d8r.d.ld = 1008;
  EXPECT_NE(be->supports(resolve(d8r), dev).find("TMA can store whole"), std::string::npos)
      << be->supports(resolve(d8r), dev);
  const Problem t = fp8_problem(4096, 4096, 4096, Scaling::tensor);
  EXPECT_EQ(be->supports(resolve(t), dev), "");
  EXPECT_NE(be->path(resolve(t), dev).find("acc=promote"), std::string::npos) << be->path(resolve(t), dev);
  EXPECT_NE(be->path(resolve(fast(t)), dev).find("acc=fast"), std::string::npos) << be->path(resolve(fast(t)), dev);
  const Problem bl = fp8_problem(4096, 4096, 4096, Scaling::block);
  EXPECT_NE(be->path(resolve(bl), dev).find("block scales"), std::string::npos) << be->path(resolve(bl), dev);
  auto reason = [&](const Problem& p, const std::string& cfg) {
    return sm90::config_reason(sm90::Config::parse(cfg), sm90::Analysis(resolve(p)), dev);
  };
  const std::string base = "stages=4,cluster=1x1,sched=coop,raster=m,group=8";
  EXPECT_EQ(reason(fast(t), "tile=128x256x128," + base + ",acc=fast"), "");
  // The accumulation is the problem's: a config of the other mode is refused, naming both.
  const std::string to_exact = reason(t, "tile=128x256x128," + base + ",acc=fast");
  EXPECT_NE(to_exact.find("acc=fast is not the problem's fp8_accum=exact"), std::string::npos) << to_exact;
  const std::string to_fast = reason(fast(t), "tile=128x128x128," + base + ",acc=promote");
  EXPECT_NE(to_fast.find("acc=promote is not the problem's fp8_accum=fast"), std::string::npos) << to_fast;
  EXPECT_EQ(reason(t, "tile=128x128x128," + base + ",acc=promote"), "");
  EXPECT_NE(reason(t, "tile=128x256x64," + base + ",acc=fast").find("tile K must be 128"), std::string::npos);
  EXPECT_NE(reason(t, "tile=128x256x128," + base).find("acc=fast or acc=promote"), std::string::npos);
  EXPECT_NE(reason(t, "tile=128x256x128," + base + ",acc=promote").find("two accumulator sets"), std::string::npos);
  EXPECT_NE(reason(bl, "tile=128x128x128," + base + ",acc=fast").find("fp8_accum=exact"), std::string::npos);
  EXPECT_EQ(reason(bl, "tile=128x128x128," + base + ",acc=promote"), "");
  EXPECT_NE(reason(bl, "tile=128x176x128," + base + ",acc=promote").find("at most two 128-column B scale blocks"),
            std::string::npos);
  EXPECT_NE(reason(t, "tile=128x96x128," + base + ",acc=promote").find("fp8 inputs need tile N"), std::string::npos);
  // Tile N 144, 160, 192: its 8-column groups take the first or second B block by where the tile starts
  // (promote_into).
  for (const char* tile : {"tile=128x144x128,", "tile=128x160x128,", "tile=128x192x128,"})
    EXPECT_EQ(reason(bl, tile + base + ",acc=promote"), "") << tile;
  const Problem bf = Problem::make(256, 256, 256, DType::bf16, DType::bf16, Layout::row, Layout::col);
  EXPECT_NE(reason(bf, "tile=128x128x64," + base + ",acc=fast").find("fp8 inputs only"), std::string::npos);
}

// Every candidate is of the problem's accumulation mode: exact lists acc=promote only, fast acc=fast only (block
// scaling takes exact only).
TEST(Sm90Fp8, Enumerate) {
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  auto be = make_sm90_backend();
  for (Scaling s : {Scaling::tensor, Scaling::row, Scaling::block})
    for (Fp8Accum acc : {Fp8Accum::exact, Fp8Accum::fast}) {
      if (s == Scaling::block && acc == Fp8Accum::fast) continue;
      const Problem p = fp8_problem(4096, 4096, 4096, s, DType::e4m3, DType::e4m3, DType::bf16, acc);
      const auto cands = be->enumerate(resolve(p), dev);
      ASSERT_FALSE(cands.empty()) << p.str();
      const std::string want = acc == Fp8Accum::fast ? "acc=fast" : "acc=promote";
      for (const Candidate& c : cands) {
        EXPECT_EQ(be->validate(resolve(p), c, dev), "") << c.str();
        EXPECT_NE(c.config.find(want), std::string::npos) << c.str() << " for " << p.str();
        EXPECT_NE(c.config.find("x128,"), std::string::npos) << c.str();  // tile K 128
      }
      // Block scaling: a tile whose consumers keep two temporaries (tile N 128 per 64 rows) ranks first.
      if (s == Scaling::block) EXPECT_NE(cands[0].config.find("tile=128x128x128"), std::string::npos) << cands[0].str();
    }
}

// The JIT unit of an fp8 candidate includes the k32 wgmma forms and spells the fp8 part of its spec (the input codes,
// the scaling, the accumulation); a 16-bit unit spells none of it (its text and cache key stay as they were).
TEST(Sm90Fp8, UnitNamesFp8Types) {
  const std::string dir = ::testing::TempDir() + "gemmtune_sm90_fp8_dump";
  ::setenv("GEMMTUNE_DUMP_DIR", dir.c_str(), 1);
  auto be = make_sm90_backend();
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  auto unit = [&](const Problem& p, const std::string& cfg) {
    const CompileResult r = be->compile(resolve(p), {"sm90", cfg}, dev);
    const auto cubin = std::static_pointer_cast<const jit::Cubin>(r.artifact);
    std::ifstream in(dir + "/" + cubin->kernel_name + ".cu");
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string base = "stages=6,cluster=1x1,sched=coop,raster=m,group=8";
  // block scaling: 5 stages, its scale slots take the sixth's room
  const std::string blk = unit(fp8_problem(512, 512, 512, Scaling::block, DType::e4m3, DType::e5m2),
                               "tile=128x128x128,stages=5,cluster=1x1,sched=coop,raster=m,group=8,acc=promote");
  EXPECT_NE(blk.find("#include \"ptx/wgmma_f8.cuh\""), std::string::npos) << blk;
  EXPECT_NE(blk.find(".in = 3,"), std::string::npos) << blk;
  EXPECT_NE(blk.find(".in_b = 4, .scale = 3, .promote = true"), std::string::npos) << blk;
  const std::string row =
      unit(fast(fp8_problem(512, 512, 512, Scaling::row)), "tile=128x128x128," + base + ",acc=fast");
  EXPECT_NE(row.find(".scale = 2, .promote = false"), std::string::npos) << row;
  EXPECT_EQ(row.find(".in_b"), std::string::npos) << row;
  Problem bf = Problem::make(512, 512, 512, DType::bf16, DType::bf16, Layout::row, Layout::col);
  bf.resolve();
  const std::string b16 = unit(bf, "tile=128x128x64," + base);
  EXPECT_EQ(b16.find("wgmma_f8"), std::string::npos) << b16;
  EXPECT_EQ(b16.find(".scale"), std::string::npos) << b16;
  ::unsetenv("GEMMTUNE_DUMP_DIR");
}

struct Fp8Case {
  int64_t m, n, k;
  Scaling s;
  DType a = DType::e4m3, b = DType::e4m3, out = DType::bf16;
  Fp8Accum acc = Fp8Accum::exact;
};

// Every enumerated candidate compiles for sm_90a; those that spill are the spill prior's, listed after every clean
// one (the pipeline skips a spilling compile and takes the next).
void compile_fp8(const Fp8Case& fc) {
  auto be = make_sm90_backend();
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  const Problem p = fp8_problem(fc.m, fc.n, fc.k, fc.s, fc.a, fc.b, fc.out, fc.acc);
  const auto cands = be->enumerate(resolve(p), dev);
  ASSERT_FALSE(cands.empty()) << p.str();
  const auto [res, err] = test::compile_each(*be, p, cands, dev);
  std::vector<double> ms;
  size_t clean = 0, spilled = 0;
  for (size_t i = 0; i < cands.size(); ++i) {
    ASSERT_EQ(err[i], "") << cands[i].str() << " for " << p.str();
    EXPECT_TRUE(res[i].compiled);
    EXPECT_GT(res[i].registers, 0) << cands[i].str();
    // ptxas keeps the wgmmas asynchronous: no C7514 ("wgmma.mma_async instructions are serialized"), which the
    // promoted k loop's overlapping temporaries would cause if a wgmma's registers were read across a loop back edge
    // (a cached cubin may carry no log; a fresh compile does).
    if (const auto cubin = std::static_pointer_cast<const jit::Cubin>(res[i].artifact))
      EXPECT_EQ(cubin->log.find("C7514"), std::string::npos) << cands[i].str() << "\n" << cubin->log;
    if (res[i].spill_bytes > 0) {
      ++spilled;
      std::printf("  spills %d bytes: %s\n", res[i].spill_bytes, cands[i].str().c_str());
    } else {
      EXPECT_EQ(spilled, 0u) << cands[i].str() << " compiles clean but is listed after a spilling config, for "
                             << p.str();
      ++clean;
    }
    if (!res[i].cache_hit) ms.push_back(res[i].compile_ms);
  }
  EXPECT_GT(clean, 0u) << p.str();
  std::sort(ms.begin(), ms.end());
  std::printf("%s: %zu fp8 candidates compiled, median %.0f ms (uncached %zu)\n", p.str().c_str(), cands.size(),
              ms.empty() ? 0.0 : ms[ms.size() / 2], ms.size());
}

TEST(Sm90Fp8Compile, Tensor4096) { compile_fp8({4096, 4096, 4096, Scaling::tensor}); }
TEST(Sm90Fp8Compile, Row4096) { compile_fp8({4096, 4096, 4096, Scaling::row}); }
TEST(Sm90Fp8Compile, Block4096) { compile_fp8({4096, 4096, 4096, Scaling::block}); }
TEST(Sm90Fp8Compile, RowM64_E5M2B) { compile_fp8({64, 4096, 4096, Scaling::row, DType::e4m3, DType::e5m2}); }
constexpr DType kE4 = DType::e4m3, kE5 = DType::e5m2;
TEST(Sm90Fp8Compile, Tensor4096Fast) {
  compile_fp8({4096, 4096, 4096, Scaling::tensor, kE4, kE4, DType::bf16, Fp8Accum::fast});
}
TEST(Sm90Fp8Compile, RaggedK_F32Out) { compile_fp8({1000, 1000, 1040, Scaling::tensor, kE5, kE4, DType::f32}); }
TEST(Sm90Fp8Compile, BlockRaggedK) { compile_fp8({512, 384, 1040, Scaling::block}); }
// N = 576: tiles of 192 columns start at 0, 192 (mid-block) and 384, the last one's second block past N.
TEST(Sm90Fp8Compile, BlockN576) { compile_fp8({1024, 576, 2048, Scaling::block}); }
// The coop tiles 128x144 and 128x160 (two B scale blocks per tile, split where the tile starts; valid with --config,
// not listed): each cluster shape of the listed 128x192 coop tiles, retiled, compiles without spills, block-scaled
// with every D type and fast-accumulated.
TEST(Sm90Fp8Compile, Tiles144And160NoSpills) {
  auto be = make_sm90_backend();
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  const Fp8Case cases[] = {{4096, 4096 + 48, 2048, Scaling::block},
                           {1000, 2000, 1024, Scaling::block, kE4, kE4, DType::f32},
                           {2048, 4096, 4096, Scaling::block, kE4, kE4, kE4},
                           {4096, 4096, 4096, Scaling::row, kE4, kE4, DType::bf16, Fp8Accum::fast}};
  for (const Fp8Case& fc : cases) {
    const Problem p = fp8_problem(fc.m, fc.n, fc.k, fc.s, fc.a, fc.b, fc.out, fc.acc);
    std::vector<Candidate> cands;
    const std::string wide = "tile=128x192x128,";
    for (const Candidate& c : be->enumerate(resolve(p), dev))
      if (c.config.rfind(wide, 0) == 0 && c.config.find("sched=coop") != std::string::npos)
        for (const char* tile : {"tile=128x144x128,", "tile=128x160x128,"}) {
          Candidate t = c;
          t.config = tile + c.config.substr(wide.size());
          cands.push_back(t);
        }
    EXPECT_EQ(cands.size(), 6u) << p.str();
    const auto [res, err] = test::compile_each(*be, p, cands, dev);
    for (size_t i = 0; i < cands.size(); ++i) {
      ASSERT_EQ(err[i], "") << cands[i].str() << " for " << p.str();
      EXPECT_EQ(res[i].spill_bytes, 0) << cands[i].str() << " for " << p.str();
      std::printf("%s for %s: %d registers\n", cands[i].str().c_str(), p.str().c_str(), res[i].registers);
    }
  }
}
TEST(Sm90Fp8Compile, E4M3Out_Row) { compile_fp8({4096, 4096, 4096, Scaling::row, kE4, kE4, kE4}); }
TEST(Sm90Fp8Compile, E4M3Out_Block) { compile_fp8({2048, 1024, 4096, Scaling::block, kE4, kE4, kE4}); }

}  // namespace
}  // namespace gemmtune
