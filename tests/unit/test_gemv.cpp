// gemv backend without a GPU: config round trip, validity reasons, enumeration and ranking, and NVRTC compilation of
// every enumerated config of a few decode problems with zero spills.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "backends/gemv/gemv_backend.h"
#include "backends/gemv/gemv_config.h"
#include "gemmtune/epilogue.h"
#include "gemmtune/errors.h"
#include "jit/thread_pool.h"
#include "unit/compile_each.h"

namespace gemmtune {
namespace {

const DeviceInfo kDev = DeviceInfo::assumed_sm90();

Problem decode(int64_t m, int64_t n, int64_t k, const char* chain = "") {
  Problem p = Problem::make(m, n, k, DType::bf16, DType::bf16, Layout::row, Layout::col);
  p.epilogue = parse_epilogue(chain);
  p.resolve();
  return p;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(GemvConfig, RoundTrip) {
  for (const char* s : {"vec=m,warps=8,rows=2,ksplit=4,unroll=4", "vec=n,warps=4,rows=1,ksplit=1,unroll=8",
                        "vec=m,warps=4,rows=16,ksplit=2,unroll=4,mma=1",
                        "vec=m,warps=8,rows=32,ksplit=1,unroll=1,mma=1,ring=4",
                        "vec=m,warps=8,rows=16,ksplit=2,unroll=2,mma=1,csplit=4",
                        "vec=m,warps=4,rows=16,ksplit=1,unroll=1,mma=1,ring=4,csplit=8",
                        "vec=m,warps=8,rows=16,ksplit=8,unroll=2,mma=1,occ=3",
                        "vec=m,warps=4,rows=2,ksplit=4,unroll=4,occ=6"})
    EXPECT_EQ(gemv::Config::parse(s).str(), s);
  EXPECT_EQ(gemv::Config::parse("vec=m,warps=8,rows=16,ksplit=8,unroll=2,mma=1,occ=1").str(),
            "vec=m,warps=8,rows=16,ksplit=8,unroll=2,mma=1");
  EXPECT_EQ(gemv::Config::parse("vec=m,warps=8,rows=16,ksplit=2,unroll=2,mma=1,csplit=1").str(),
            "vec=m,warps=8,rows=16,ksplit=2,unroll=2,mma=1");
  EXPECT_EQ(gemv::Config::parse("vec=m,warps=4,rows=2,ksplit=2,unroll=4,mma=0").str(),
            "vec=m,warps=4,rows=2,ksplit=2,unroll=4");
  EXPECT_EQ(gemv::Config::parse("vec=m,warps=4,rows=16,ksplit=2,unroll=4,mma=1,ring=0").str(),
            "vec=m,warps=4,rows=16,ksplit=2,unroll=4,mma=1");
  for (const char* bad : {"vec=x,warps=8,rows=2,ksplit=4,unroll=4", "vec=m,warps=8,rows=2,ksplit=4",
                          "vec=m,warps=eight,rows=2,ksplit=4,unroll=4", "vec=m,warps=8,rows=2,ksplit=4,unroll=4,x=1",
                          "vec=m warps=8"}) {
    try {
      gemv::Config::parse(bad);
      ADD_FAILURE() << bad << " parsed";
    } catch (const Error& e) {
      EXPECT_TRUE(has(e.what(), "gemv: bad config")) << e.what();
    }
  }
}

TEST(GemvConfig, Reasons) {
  EXPECT_EQ(gemv::problem_reason(decode(1, 4096, 4096), kDev), "");
  EXPECT_EQ(gemv::problem_reason(decode(4096, 8, 4096), kDev), "");
  EXPECT_TRUE(has(gemv::problem_reason(decode(17, 4096, 4096), kDev), "needs M <= 16 or N <= 16"));
  Problem p = decode(1, 4096, 4096);
  p.b.layout = Layout::row;
  p.b.ld = 0;
  p.resolve();
  EXPECT_TRUE(has(gemv::problem_reason(p, kDev), "B column-major"));
  p = decode(1, 4096, 1000);
  p.a.ld = 1004;  // 2008 bytes: 8-byte loads
  EXPECT_EQ(gemv::problem_reason(p, kDev), "");
  EXPECT_EQ(gemv::load_path(p), "rows by 8-byte loads (lda=1004: 2008 bytes)");
  p = decode(1, 4096, 1000);
  p.a.dtype = p.b.dtype = DType::f32;
  EXPECT_TRUE(has(gemv::problem_reason(p, kDev), "bf16 or both f16"));
  p = decode(1, 64, 64);
  p.batch = 70000;
  p.a.batch_stride = p.b.batch_stride = p.d.batch_stride = -1;
  p.resolve();
  EXPECT_TRUE(has(gemv::problem_reason(p, kDev), "batch must be <= 65535"));
  DeviceInfo old = kDev;
  old.real = true;
  old.cc_major = 7;
  EXPECT_TRUE(has(gemv::problem_reason(decode(1, 64, 64), old), "compute capability 8.0"));

  const Problem q = decode(1, 4096, 4096);
  EXPECT_EQ(gemv::config_reason(gemv::Config::parse("vec=m,warps=8,rows=2,ksplit=4,unroll=4"), q, kDev), "");
  EXPECT_TRUE(has(gemv::config_reason(gemv::Config::parse("vec=n,warps=8,rows=2,ksplit=4,unroll=4"), q, kDev),
                  "vec=n needs N <= 8"));
  EXPECT_TRUE(has(gemv::config_reason(gemv::Config::parse("vec=m,warps=8,rows=2,ksplit=3,unroll=4"), q, kDev),
                  "ksplit must divide warps"));
  EXPECT_TRUE(has(gemv::config_reason(gemv::Config::parse("vec=m,warps=8,rows=4,ksplit=1,unroll=8"), q, kDev),
                  "rows x unroll"));
  EXPECT_TRUE(has(gemv::config_reason(gemv::Config::parse("vec=m,warps=8,rows=4,ksplit=1,unroll=2"),
                                      decode(8, 4096, 4096, "silu_glu"), kDev),
                  "rows x vectors"));
  // 9-16 vectors: the mma kernel only; its rows are m-blocks of 16 weight rows (8 outputs with a GLU).
  const Problem t12 = decode(12, 4096, 4096);
  EXPECT_TRUE(has(gemv::config_reason(gemv::Config::parse("vec=m,warps=8,rows=1,ksplit=1,unroll=2"), t12, kDev),
                  "needs M <= 8 (16 with mma=1)"));
  EXPECT_EQ(gemv::config_reason(gemv::Config::parse("vec=m,warps=8,rows=32,ksplit=2,unroll=2,mma=1"), t12, kDev), "");
  EXPECT_TRUE(has(gemv::config_reason(gemv::Config::parse("vec=m,warps=8,rows=8,ksplit=2,unroll=4,mma=1"), t12, kDev),
                  "rows must be 16 or 32"));
  EXPECT_EQ(gemv::config_reason(gemv::Config::parse("vec=m,warps=8,rows=8,ksplit=2,unroll=2,mma=1"),
                                decode(12, 4096, 4096, "silu_glu"), kDev),
            "");
  EXPECT_TRUE(has(gemv::config_reason(gemv::Config::parse("vec=m,warps=8,rows=32,ksplit=1,unroll=4,mma=1"), t12, kDev),
                  "must be <= 24"));
  EXPECT_TRUE(has(gemv::problem_reason(decode(64, 8, 4096, "silu_glu"), kDev), "needs M <= 16"));
  // The ring: mma=1 only, unroll 1, 2-8 stages, within a CTA's shared memory (8 warps x 8 stages x 2 m-blocks x
  // 4 KB = 256 KB is not).
  EXPECT_EQ(gemv::config_reason(gemv::Config::parse("vec=m,warps=8,rows=16,ksplit=8,unroll=1,mma=1,ring=8"), t12,
                                kDev),
            "");
  EXPECT_EQ(gemv::ring_bytes(gemv::Config::parse("vec=m,warps=8,rows=16,ksplit=8,unroll=1,mma=1,ring=8"), t12),
            8 * 8 * 2048);
  EXPECT_TRUE(has(gemv::config_reason(gemv::Config::parse("vec=m,warps=4,rows=2,ksplit=1,unroll=1,ring=4"),
                                      decode(1, 4096, 4096), kDev),
                  "ring needs mma=1"));
  EXPECT_TRUE(has(gemv::config_reason(gemv::Config::parse("vec=m,warps=4,rows=16,ksplit=1,unroll=2,mma=1,ring=4"),
                                      t12, kDev),
                  "unroll must be 1"));
  EXPECT_TRUE(has(gemv::config_reason(gemv::Config::parse("vec=m,warps=4,rows=16,ksplit=1,unroll=1,mma=1,ring=9"),
                                      t12, kDev),
                  "2-8 stages"));
  EXPECT_TRUE(has(gemv::config_reason(gemv::Config::parse("vec=m,warps=8,rows=32,ksplit=1,unroll=1,mma=1,ring=8"),
                                      t12, kDev),
                  "bytes of shared memory"));
  // The K split across CTAs: mma=1 only, 2, 4 or 8 CTAs.
  EXPECT_EQ(gemv::config_reason(gemv::Config::parse("vec=m,warps=8,rows=16,ksplit=2,unroll=2,mma=1,csplit=4"), t12,
                                kDev),
            "");
  EXPECT_TRUE(has(gemv::config_reason(gemv::Config::parse("vec=m,warps=8,rows=16,ksplit=2,unroll=2,mma=1,csplit=3"),
                                      t12, kDev),
                  "csplit must be 1, 2, 4 or 8"));
  EXPECT_TRUE(has(gemv::config_reason(gemv::Config::parse("vec=m,warps=8,rows=2,ksplit=2,unroll=2,csplit=2"),
                                      decode(4, 4096, 4096), kDev),
                  "csplit (K split across CTAs) needs mma=1"));
  // CTAs an SM the kernel is compiled for: at most 64 warps an SM.
  EXPECT_EQ(gemv::config_reason(gemv::Config::parse("vec=m,warps=8,rows=16,ksplit=8,unroll=2,mma=1,occ=8"), t12, kDev),
            "");
  EXPECT_TRUE(has(gemv::config_reason(gemv::Config::parse("vec=m,warps=8,rows=16,ksplit=8,unroll=2,mma=1,occ=9"),
                                      t12, kDev),
                  "occ (CTAs per SM) must be 1-8 with 8 warps"));
  EXPECT_TRUE(has(gemv::config_reason(gemv::Config::parse("vec=m,warps=16,rows=16,ksplit=8,unroll=2,mma=1,occ=0"),
                                      t12, kDev),
                  "must be 1-4 with 16 warps"));
  // A GLU pairs B's columns (the weights' rows): only the vec=m orientation.
  EXPECT_TRUE(has(gemv::config_reason(gemv::Config::parse("vec=n,warps=8,rows=1,ksplit=1,unroll=4"),
                                      decode(4, 8, 4096, "silu_glu"), kDev),
                  "needs vec=m"));
}

// The load width: the widest of 16, 8, 4, 2 bytes that every row start of A and B is aligned to (pitch, batch stride,
// declared pointer alignment), the one limit named in the path phrase.
// The kernels know nothing of group_rows: a grouped decode problem (a few tokens over G experts) is refused, not run
// as one GEMM, and nothing is enumerated for it.
TEST(GemvConfig, RefusesGroupedProblems) {
  for (Grouping g : {Grouping::contiguous, Grouping::masked}) {
    Problem p = decode(4, 4096, 4096);
    p.grouping = g;
    p.groups = 4;
    p.a.batch_stride = p.b.batch_stride = p.c.batch_stride = p.d.batch_stride = -1;
    p.resolve();
    ASSERT_EQ(p.check(), "") << p.str();
    EXPECT_EQ(gemv::problem_reason(p, kDev),
              "gemv: grouped GEMMs are not supported (grouping=" + std::string(grouping_name(g)) + ")");
    auto be = find_backend("gemv");
    ASSERT_TRUE(be);
    EXPECT_EQ(be->supports(resolve(p), kDev), gemv::problem_reason(p, kDev));
    EXPECT_TRUE(be->enumerate(resolve(p), kDev).empty());
  }
}

TEST(GemvConfig, LoadWidth) {
  EXPECT_EQ(gemv::load_bytes(decode(1, 4096, 4096)), 16);
  EXPECT_EQ(gemv::load_path(decode(1, 4096, 4096)), "rows by 16-byte loads");
  EXPECT_EQ(gemv::load_bytes(decode(4, 4096, 4100)), 8);     // K = 4 (mod 8), packed rows
  EXPECT_EQ(gemv::load_bytes(decode(4, 4096, 4098)), 4);     // K = 2 (mod 8)
  EXPECT_EQ(gemv::load_bytes(decode(4, 4096, 11001)), 2);    // K odd
  EXPECT_EQ(gemv::load_path(decode(1, 4096, 11001)), "rows by 2-byte loads (lda=11001: 22002 bytes)");
  Problem p = decode(1, 4096, 4096);
  p.b.ld = 4100;  // slack after each weight row
  EXPECT_EQ(gemv::load_path(p), "rows by 8-byte loads (ldb=4100: 8200 bytes)");
  p = decode(1, 4096, 4096);
  p.b.align = 4;
  EXPECT_EQ(gemv::load_path(p), "rows by 4-byte loads (b's pointer 4-byte aligned)");
  p.a.align = 2;
  EXPECT_EQ(gemv::load_bytes(p), 2);
  // A batch stride counts only with more than one batch; a broadcast (0) limits nothing.
  p = decode(2, 1024, 1024);
  p.b.batch_stride = 1024 * 1024 + 3;
  EXPECT_EQ(gemv::load_bytes(p), 16);
  p.batch = 3;
  p.a.batch_stride = 1024;
  p.d.batch_stride = 2 * 1024;
  EXPECT_EQ(gemv::load_path(p), "rows by 2-byte loads (b batch_stride=1048579: 2097158 bytes)");
  p.b.batch_stride = 0;
  EXPECT_EQ(gemv::load_bytes(p), 16);
  // Every width is served; only the ring, whose cp.async copies whole 16-byte chunks, needs 16.
  for (const Problem& q : {decode(4, 4096, 4100), decode(16, 4096, 4098), decode(12, 4096, 11001)}) {
    EXPECT_EQ(gemv::problem_reason(q, kDev), "") << q.str();
    const std::string r = gemv::config_reason(
        gemv::Config::parse("vec=m,warps=8,rows=16,ksplit=8,unroll=1,mma=1,ring=4"), q, kDev);
    EXPECT_TRUE(has(r, "a ring copies 16-byte chunks (cp.async), the problem allows rows by")) << r;
    EXPECT_EQ(gemv::config_reason(gemv::Config::parse("vec=m,warps=8,rows=16,ksplit=8,unroll=2,mma=1"), q, kDev),
              "");
  }
}

// Unaligned problems get candidates in both kernels (the mma one alone from 9 vectors), none with a ring; a problem
// that allows 16-byte loads gets exactly the list of its aligned twin.
TEST(GemvConfig, EnumerationUnaligned) {
  for (const Problem& q : {decode(1, 4096, 4100), decode(3, 4096, 11001), decode(16, 4096, 4098),
                           decode(4096, 5, 4100), decode(8, 14336, 4097, "bias,silu_glu")}) {
    const auto list = gemv::enumerate_configs(q, kDev);
    ASSERT_FALSE(list.empty()) << q.str();
    bool kinds[2] = {};
    for (const auto& c : list) {
      EXPECT_EQ(c.ring, 0) << c.str() << " on " << q.str();
      EXPECT_EQ(gemv::config_reason(c, q, kDev), "") << c.str() << " on " << q.str();
      kinds[c.mma] = true;
    }
    EXPECT_TRUE(kinds[1]) << q.str();
    EXPECT_EQ(kinds[0], std::min(q.m, q.n) <= 8) << q.str();
  }
  Problem p = decode(8, 4096, 14336);
  const auto aligned = gemv::enumerate_configs(p, kDev);
  p.a.align = p.b.align = 16;
  p.a.ld = p.b.ld = 14336 + 64;  // slack of a multiple of 16 bytes
  EXPECT_EQ(gemv::load_bytes(p), 16);
  const auto padded = gemv::enumerate_configs(p, kDev);
  ASSERT_EQ(aligned.size(), padded.size());
  for (size_t i = 0; i < aligned.size(); ++i) EXPECT_EQ(aligned[i], padded[i]) << i;
}

// The load width is a template argument of the generated unit (so part of the kernel cache key).
TEST(GemvConfig, SourceCarriesTheWidth) {
  const char* kmajor = "vec=m,warps=8,rows=2,ksplit=4,unroll=4";
  const char* mma = "vec=m,warps=8,rows=16,ksplit=8,unroll=2,mma=1";
  EXPECT_TRUE(has(gemv_jit_source(decode(1, 4096, 4096), kmajor), "gt_gemv::Gemv<1, 0, 16, 0,"));
  EXPECT_TRUE(has(gemv_jit_source(decode(1, 4096, 4100), kmajor), "gt_gemv::Gemv<1, 0, 8, 0,"));
  EXPECT_TRUE(has(gemv_jit_source(decode(1, 4096, 4098), kmajor), "gt_gemv::Gemv<1, 0, 4, 0,"));
  EXPECT_TRUE(has(gemv_jit_source(decode(1, 4096, 4097), kmajor), "gt_gemv::Gemv<1, 0, 2, 0,"));
  EXPECT_TRUE(has(gemv_jit_source(decode(12, 4096, 4096), mma), "gt_gemv::GemvMma<12, 0, 16, 0,"));
  EXPECT_TRUE(has(gemv_jit_source(decode(12, 4096, 4097), mma), "gt_gemv::GemvMma<12, 0, 2, 0,"));
  EXPECT_NE(gemv_jit_source(decode(1, 4096, 4100), kmajor), gemv_jit_source(decode(1, 4096, 4098), kmajor));
}

TEST(GemvConfig, Enumeration) {
  // Not offered where no side is skinny; offered in the orientation(s) that are.
  EXPECT_TRUE(gemv::enumerate_configs(decode(64, 4096, 4096), kDev).empty());
  const auto m1 = gemv::enumerate_configs(decode(1, 4096, 14336), kDev);
  ASSERT_FALSE(m1.empty());
  for (const auto& c : m1) EXPECT_TRUE(c.vec_m) << c.str();
  const auto n5 = gemv::enumerate_configs(decode(4096, 5, 1024), kDev);
  ASSERT_FALSE(n5.empty());
  for (const auto& c : n5) EXPECT_FALSE(c.vec_m) << c.str();
  // Both kernels are listed for a few vectors, only the mma one from 9.
  bool kinds[2] = {};
  for (const auto& c : m1) kinds[c.mma] = true;
  EXPECT_TRUE(kinds[0] && kinds[1]);
  for (const auto& c : gemv::enumerate_configs(decode(16, 4096, 4096), kDev)) EXPECT_TRUE(c.mma) << c.str();
  bool both[2] = {};
  for (const auto& c : gemv::enumerate_configs(decode(6, 8, 512), kDev)) both[c.vec_m] = true;
  EXPECT_TRUE(both[0] && both[1]);
  // Every config valid. Below 4 vectors: first the CUDA-core kernel's heads, the cheapest estimate with at most 4
  // chunks in flight of each (ksplit, rows) family, by estimate; then the heads of the mma kernel's (kernel,
  // ksplit) families, by estimate; then the rest by estimate.
  const Problem p = decode(1, 4096, 14336);
  const auto cost = [&](const gemv::Config& c) { return gemv::estimate_cost(c, p, kDev); };
  const auto family = [](const gemv::Config& c) {
    return std::tuple<int, int, int>{c.ring ? 2 : c.mma ? 1 : 0, c.ksplit, c.mma ? 0 : c.rows};
  };
  std::vector<std::tuple<int, int, int>> fams;
  for (size_t i = 0; i < m1.size(); ++i) {
    const auto& c = m1[i];
    EXPECT_EQ(gemv::config_reason(c, p, kDev), "") << c.str();
    if (std::find(fams.begin(), fams.end(), family(c)) == fams.end()) {
      EXPECT_EQ(i, fams.size()) << "family of " << c.str() << " not in the head";
      fams.push_back(family(c));
    }
  }
  ASSERT_EQ(fams.size(), 20u);  // CUDA cores: ksplit 1, 2, 4, 8 x rows 1, 2, 4; mma=1 and a ring x ksplit 1, 2, 4, 8
  for (size_t i = 0; i < fams.size(); ++i) {
    EXPECT_EQ(m1[i].mma, i >= 12) << m1[i].str() << " at " << i;
    if (i < 12) EXPECT_LE(m1[i].unroll, 4) << m1[i].str();
    if (i != 0 && i != 12) EXPECT_LE(cost(m1[i - 1]), cost(m1[i])) << m1[i].str();
    for (size_t j = fams.size(); j < m1.size(); ++j)  // each head the cheapest of its family (unroll <= 4 on cores)
      if (family(m1[j]) == fams[i] && (m1[j].mma || m1[j].unroll <= 4))
        EXPECT_LE(cost(m1[i]), cost(m1[j])) << m1[i].str() << " vs " << m1[j].str();
  }
  for (size_t i = fams.size() + 1; i < m1.size(); ++i)
    EXPECT_LE(cost(m1[i - 1]), cost(m1[i])) << m1[i].str();
  // K split across CTAs: listed where a config's row groups leave SMs without two CTAs (fewer than 1.9 x 132), from
  // 4 vectors (8 x 4096 x 14336: 256 groups of 16 rows for 8 warps splitting K, 32-128 with fewer), never below; its
  // scratch: per row group, csplit slots of the lanes' fragments, and one count.
  int splits = 0;
  for (const Problem& q : {decode(8, 4096, 14336), decode(8, 28672, 4096)})
    for (const auto& c : gemv::enumerate_configs(q, kDev)) {
      if (c.csplit == 1) continue;
      ++splits;
      EXPECT_TRUE(c.mma) << c.str();
      const int64_t ctas = gemv::grid_x(c, gemv::make_view(q, true)), groups = ctas * (c.warps / c.ksplit);
      EXPECT_LT(10 * ctas, 19 * 132) << c.str();
      EXPECT_GE(q.k / 64 / (c.ksplit * c.csplit), 4) << c.str();
      EXPECT_EQ(gemv::csplit_counts(c, q), groups) << c.str();
      EXPECT_EQ(gemv::csplit_ws_floats(c, q), groups * c.csplit * (c.rows / 16) * 1 * 4 * 32) << c.str();
    }
  EXPECT_GT(splits, 8);
  // The twins come after the family heads: the first 8 (what the tuner times by default) are plain configs.
  for (const Problem& q : {decode(8, 4096, 14336), decode(16, 4096, 14336), decode(8, 6144, 4096)}) {
    const auto list = gemv::enumerate_configs(q, kDev);
    ASSERT_GT(list.size(), 8u);
    for (size_t i = 0; i < 8; ++i) EXPECT_EQ(list[i].csplit, 1) << list[i].str() << " at " << i << " on " << q.str();
  }
  for (const Problem& q : {decode(1, 4096, 14336), decode(3, 4096, 14336)})
    for (const auto& c : gemv::enumerate_configs(q, kDev)) EXPECT_EQ(c.csplit, 1) << c.str() << " on " << q.str();
  const Problem d8 = decode(8, 4096, 14336);
  EXPECT_EQ(gemv::csplit_ws_floats(gemv::Config::parse("vec=m,warps=8,rows=16,ksplit=8,unroll=1,mma=1"), d8), 0);
  // occ=3 exactly where the rule asks for it: 8 warps of the mma kernel splitting K 4-8 ways, loads in registers
  // (1-2 steps, one m-block), at most 8 vectors (docs/PERFORMANCE.md, gemv); every listed config compiles without
  // spills (GemvCompile.EveryConfig).
  for (const Problem& q : {decode(8, 4096, 14336), decode(3, 28672, 4096), decode(16, 4096, 14336),
                           decode(8, 14336, 4096, "bias,silu_glu")}) {
    int occ3 = 0;
    for (const auto& c : gemv::enumerate_configs(q, kDev)) {
      const bool rule = c.mma && c.ring == 0 && c.warps == 8 && c.ksplit >= 4 && c.unroll <= 2 &&
                        c.rows == (q.epilogue.has_glu() ? 8 : 16) && q.m <= 8;
      EXPECT_EQ(c.occ, rule ? 3 : 1) << c.str() << " on " << q.str();
      occ3 += c.occ == 3;
    }
    EXPECT_EQ(occ3 > 0, q.m <= 8) << q.str();
  }
  // From 3 vectors two of them go first, K split 8 then 4, two steps in flight; at 3 the CUDA-core heads follow;
  // below 3 those lead.
  for (const Problem& q : {decode(8, 4096, 14336), decode(4, 28672, 4096), decode(6, 4096, 4096),
                           decode(3, 14336, 4096)}) {
    const auto list = gemv::enumerate_configs(q, kDev);
    ASSERT_GT(list.size(), 2u);
    EXPECT_EQ(list[0].str(), "vec=m,warps=8,rows=16,ksplit=8,unroll=2,mma=1,occ=3") << q.str();
    EXPECT_EQ(list[1].str(), "vec=m,warps=8,rows=16,ksplit=4,unroll=2,mma=1,occ=3") << q.str();
    if (q.m == 3) EXPECT_FALSE(list[2].mma) << list[2].str();
  }
  for (const Problem& q : {decode(2, 4096, 14336), decode(4096, 2, 4096), decode(1, 28672, 4096)}) {
    const auto list = gemv::enumerate_configs(q, kDev);
    ASSERT_GT(list.size(), 8u);
    for (size_t i = 0; i < 8; ++i) {  // what the tuner times by default
      EXPECT_FALSE(list[i].mma) << list[i].str() << " at " << i << " on " << q.str();
      EXPECT_LE(list[i].unroll, 4) << list[i].str() << " at " << i << " on " << q.str();
    }
  }
  // Few output rows and a long K: the best configs split K across warps (one CTA per row group would leave most
  // SMs idle).
  EXPECT_GT(gemv::enumerate_configs(decode(1, 256, 65536), kDev).front().ksplit, 1);
  // The registry holds it, after sm90 and before cuBLASLt.
  ASSERT_TRUE(find_backend("gemv"));
  EXPECT_EQ(find_backend("gemv")->name(), "gemv");
}

void compile_every(const Problem& p) {
  auto be = make_gemv_backend();
  const auto cands = be->enumerate(resolve(p), kDev);
  ASSERT_FALSE(cands.empty()) << p.str();
  const auto [res, err] = test::compile_each(*be, p, cands, kDev);
  for (size_t i = 0; i < cands.size(); ++i) {
    EXPECT_EQ(err[i], "") << cands[i].str();
    if (!err[i].empty()) continue;
    EXPECT_EQ(res[i].spill_bytes, 0) << cands[i].str() << " on " << p.str() << "\n" << res[i].log;
    EXPECT_GT(res[i].registers, 0);
  }
}

// Every enumerated config compiles without spills: one vector, 8 with a GLU chain, 16 (mma only, two n-blocks) with
// a chain, the other orientation with C and an f32 D.
TEST(GemvCompile, EveryConfig) {
  compile_every(decode(1, 4096, 14336));
  compile_every(decode(8, 14336, 4096, "bias,silu_glu"));
  compile_every(decode(16, 4096, 4104, "bias,gelu_tanh,residual"));  // K % 64 = 8: the ragged step
  Problem p = Problem::make(4096, 5, 1000, DType::f16, DType::f32, Layout::row, Layout::col);
  p.d.layout = p.c.layout = Layout::col;
  p.d.ld = p.c.ld = 0;  // packed again, for the column-major layout
  p.beta = 0.5f;
  p.resolve();
  compile_every(p);
}

// Kernels of every load width compile without spills: the CUDA-core and mma kernels (loads in registers, a K split
// across CTAs, a GLU chain, the other orientation with C); K = 4, 2, 1 (mod 8) and a 2-byte aligned pointer.
TEST(GemvCompile, LoadWidths) {
  auto be = make_gemv_backend();
  Problem ptr = decode(4, 4096, 4096);
  ptr.a.align = 2;
  Problem c32 = Problem::make(4096, 5, 1001, DType::f16, DType::f32, Layout::row, Layout::col);
  c32.d.layout = c32.c.layout = Layout::col;
  c32.d.ld = c32.c.ld = 0;  // packed again, for the column-major layout
  c32.beta = 0.5f;
  c32.resolve();
  const std::vector<Problem> problems = {decode(4, 4096, 4100), decode(16, 4096, 4098, "bias,gelu_tanh"),
                                         decode(8, 4096, 4097, "silu_glu"), ptr, c32};
  const std::vector<const char*> cfgs = {"vec=m,warps=8,rows=2,ksplit=4,unroll=4", "vec=n,warps=4,rows=2,ksplit=2,unroll=4",
                                         "vec=m,warps=8,rows=16,ksplit=8,unroll=2,mma=1",
                                         "vec=m,warps=8,rows=8,ksplit=8,unroll=2,mma=1",
                                         "vec=n,warps=4,rows=32,ksplit=1,unroll=1,mma=1",
                                         "vec=m,warps=8,rows=16,ksplit=2,unroll=2,mma=1,csplit=4"};
  std::vector<std::pair<const Problem*, Candidate>> jobs;
  for (const Problem& p : problems)
    for (const char* cfg : cfgs)
      if (be->validate(resolve(p), {"gemv", cfg}, kDev).empty()) jobs.push_back({&p, Candidate{"gemv", cfg}});
  EXPECT_EQ(jobs.size(), 14u);
  std::vector<CompileResult> res(jobs.size());
  std::vector<std::string> err(jobs.size());
  jit::parallel_for(jobs.size(), 0, [&](size_t i) {
    try {
      res[i] = be->compile(resolve(*jobs[i].first), jobs[i].second, kDev);
    } catch (const std::exception& e) {
      err[i] = e.what();
    }
  });
  std::vector<int> widths;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Problem& p = *jobs[i].first;
    EXPECT_EQ(err[i], "") << jobs[i].second.str() << " on " << p.str();
    if (err[i].empty())
      EXPECT_EQ(res[i].spill_bytes, 0) << jobs[i].second.str() << " on " << p.str() << "\n" << res[i].log;
    widths.push_back(gemv::load_bytes(p));
  }
  for (int w : {8, 4, 2}) EXPECT_NE(std::find(widths.begin(), widths.end(), w), widths.end()) << w;
  // Every listed config of the narrowest loads (2 bytes: 8 loads a 16-byte piece), few vectors and 16.
  compile_every(decode(3, 4096, 4097));
  compile_every(decode(16, 4096, 4097, "bias"));
}

// The GPU test's K-split configs (tests/gpu/test_gemv.cpp GemvGpu.CtaSplit) on its problem kinds compile without
// spills here, so a register change is caught without a GPU.
TEST(GemvCompile, CtaSplitConfigs) {
  auto be = make_gemv_backend();
  Problem c32 = Problem::make(5, 96, 200, DType::f16, DType::f32, Layout::row, Layout::col, 3);
  c32.d = {DType::f32, Layout::col, 0, -1};  // packed, column-major
  c32.c = c32.d;
  c32.beta = -1.25f;
  c32.resolve();
  int compiled = 0;
  for (const Problem& p : {decode(8, 4096, 14336), c32, decode(16, 1024, 4104, "bias,gelu_tanh"),
                           decode(8, 1024, 1000, "silu_glu")})
    for (const char* cfg : {"vec=m,warps=8,rows=16,ksplit=2,unroll=2,mma=1,csplit=4",
                            "vec=m,warps=4,rows=16,ksplit=1,unroll=1,mma=1,ring=4,csplit=8",
                            "vec=m,warps=4,rows=32,ksplit=2,unroll=1,mma=1,csplit=2",
                            "vec=m,warps=8,rows=16,ksplit=8,unroll=1,mma=1,ring=4,csplit=2"}) {
      const Candidate cand{"gemv", cfg};
      if (!be->validate(resolve(p), cand, kDev).empty()) continue;
      const CompileResult r = be->compile(resolve(p), cand, kDev);
      EXPECT_EQ(r.spill_bytes, 0) << cfg << " on " << p.str() << "\n" << r.log;
      ++compiled;
    }
  EXPECT_EQ(compiled, 15);
}

TEST(GemvCompile, BadCandidateIsAClearError) {
  auto be = make_gemv_backend();
  const Problem p = decode(1, 4096, 4096);
  EXPECT_TRUE(has(be->validate(resolve(p), {"gemv", "vec=m,warps=8,ksplit=1,rows=2,unroll=4"}, kDev), "not canonical"));
  // An invalid config says what is wrong with it, in whatever order its keys come.
  EXPECT_TRUE(
      has(be->validate(resolve(p), {"gemv", "vec=m,warps=8,ksplit=3,rows=2,unroll=4"}, kDev), "ksplit must divide"));
  EXPECT_TRUE(
      has(be->validate(resolve(p), {"sm90", "vec=m,warps=8,rows=2,ksplit=1,unroll=4"}, kDev), "for backend 'sm90'"));
  EXPECT_THROW(be->compile(resolve(decode(64, 64, 64)), {"gemv", "vec=m,warps=8,rows=2,ksplit=1,unroll=4"}, kDev),
               Error);
}

// occ comes from the config line as any int: a value whose product with warps overflows is refused like occ=9, not
// wrapped into an accepted one.
TEST(GemvConfig, OccOverflowIsRefused) {
  auto be = make_gemv_backend();
  const Problem p = decode(4, 64, 64);
  for (const char* occ : {"9", "2147483647", "1073741824", "0", "-1"})
    EXPECT_TRUE(
        has(be->validate(resolve(p), {"gemv", std::string("vec=m,warps=8,rows=2,ksplit=4,unroll=4,occ=") + occ}, kDev),
            "occ (CTAs per SM) must be 1-8"))
        << "occ=" << occ;
  EXPECT_EQ(be->validate(resolve(p), {"gemv", "vec=m,warps=8,rows=2,ksplit=4,unroll=4,occ=8"}, kDev), "");
}


// ---- fp8: an e4m3/e5m2 weight B with fp8 or 16-bit vectors A, tensor / row / block scaling (mma=1 only) ----

Problem fp8(int64_t m, int64_t n, int64_t k, DType a, DType b, Scaling sc, DType d = DType::bf16,
            const char* chain = "") {
  Problem p = Problem::make(m, n, k, a, d, Layout::row, Layout::col);
  p.b.dtype = b;
  p.scaling = sc;
  p.epilogue = parse_epilogue(chain);
  p.resolve();
  return p;
}
constexpr DType e4 = DType::e4m3, e5 = DType::e5m2, bf = DType::bf16, f16 = DType::f16;

TEST(GemvFp8, Reasons) {
  for (Scaling sc : {Scaling::tensor, Scaling::row, Scaling::block}) {
    const Problem p = fp8(4, 4096, 4096, e4, e4, sc);
    ASSERT_EQ(p.check(), "") << p.str();
    EXPECT_EQ(gemv::problem_reason(p, kDev), "") << p.str();
    EXPECT_EQ(gemv::problem_reason(fp8(4096, 8, 4096, e4, e4, sc), kDev), "");  // the weight is A (vec=n)
  }
  EXPECT_EQ(gemv::problem_reason(fp8(1, 4096, 4096, bf, e4, Scaling::row), kDev), "");    // weight-only
  EXPECT_EQ(gemv::problem_reason(fp8(16, 4096, 4096, f16, e5, Scaling::tensor), kDev), "");
  EXPECT_EQ(gemv::problem_reason(fp8(16, 4096, 4096, e5, e4, Scaling::tensor, DType::f32), kDev), "");
  Problem q = fp8(8, 4096, 4096, e4, e4, Scaling::row, e4);
  q.amax = true;
  ASSERT_EQ(q.check(), "");
  EXPECT_EQ(gemv::problem_reason(q, kDev), "");
  EXPECT_EQ(gemv::problem_reason(fp8(4, 4096, 4096, bf, e5, Scaling::row), kDev), "");
  Problem odd = fp8(4, 4096, 4097, e4, e4, Scaling::tensor);  // 4097-byte rows
  ASSERT_EQ(odd.check(), "");
  EXPECT_TRUE(has(gemv::problem_reason(odd, kDev), "even bytes"));
  EXPECT_EQ(gemv::problem_reason(fp8(4, 4096, 4098, e4, e4, Scaling::tensor), kDev), "");  // 2-byte loads
  DeviceInfo ampere = kDev;
  ampere.real = true;
  ampere.cc_major = 8;
  ampere.cc_minor = 0;
  EXPECT_TRUE(has(gemv::problem_reason(fp8(4, 4096, 4096, e4, e4, Scaling::tensor), ampere), "8.9"));
  const Problem t = fp8(4, 4096, 4096, e4, e4, Scaling::tensor);
  EXPECT_TRUE(has(gemv::config_reason(gemv::Config::parse("vec=m,warps=8,rows=2,ksplit=4,unroll=4"), t, kDev),
                  "fp8 operands need mma=1"));
  EXPECT_EQ(gemv::config_reason(gemv::Config::parse("vec=m,warps=8,rows=16,ksplit=4,unroll=2,mma=1"), t, kDev), "");
  // An fp8 weight beside 16-bit vectors reads 32 bytes of each vector per 16-byte weight chunk: twice the registers.
  const Problem w = fp8(16, 4096, 4096, bf, e4, Scaling::tensor);
  EXPECT_EQ(gemv::config_reason(gemv::Config::parse("vec=m,warps=8,rows=16,ksplit=4,unroll=2,mma=1"), w, kDev), "");
  EXPECT_TRUE(has(gemv::config_reason(gemv::Config::parse("vec=m,warps=8,rows=16,ksplit=4,unroll=4,mma=1"), w, kDev),
                  "must be <= 24"));
}

// Each mode enumerates mma configs only; block scaling one m-block and no 3-CTA configs (they spill); the unit names
// the weights' and vectors' types, the scaling and amax.
TEST(GemvFp8, Enumeration) {
  for (Scaling sc : {Scaling::tensor, Scaling::row, Scaling::block}) {
    for (const Problem& p : {fp8(4, 4096, 4096, e4, e4, sc), fp8(4096, 8, 4096, e4, e4, sc)}) {
      const auto list = gemv::enumerate_configs(p, kDev);
      ASSERT_FALSE(list.empty()) << p.str();
      bool csplit = false, ring = false;
      for (const auto& c : list) {
        EXPECT_TRUE(c.mma) << c.str();
        EXPECT_EQ(gemv::config_reason(c, p, kDev), "") << c.str();
        csplit |= c.csplit > 1;
        ring |= c.ring > 0;
        if (sc == Scaling::block) {
          EXPECT_EQ(c.rows, 16) << c.str();
          EXPECT_EQ(c.occ, 1) << c.str();
        }
      }
      EXPECT_TRUE(ring) << p.str();
      EXPECT_TRUE(csplit || p.m > 16) << p.str();  // 4096 rows: too few row groups without a K split
    }
  }
  EXPECT_FALSE(gemv::enumerate_configs(fp8(1, 4096, 4096, bf, e4, Scaling::row), kDev).empty());
  EXPECT_FALSE(gemv::enumerate_configs(fp8(16, 14336, 4096, f16, e4, Scaling::tensor, f16, "silu_glu"), kDev).empty());
  const char* mma = "vec=m,warps=8,rows=16,ksplit=8,unroll=2,mma=1";
  // <T, IN (the mma's type), VB, OUT, ...> then W, X, scaling, amax.
  EXPECT_TRUE(has(gemv_jit_source(fp8(4, 4096, 4096, e4, e4, Scaling::block), mma), "GemvMma<4, 1, 16, 0,"));
  EXPECT_TRUE(has(gemv_jit_source(fp8(4, 4096, 4096, e4, e4, Scaling::block), mma), "gt_gemv::Plain, 3, 3, 3, false>"));
  EXPECT_TRUE(has(gemv_jit_source(fp8(4, 4096, 4096, bf, e4, Scaling::row), mma), "GemvMma<4, 0, 16, 0,"));
  EXPECT_TRUE(has(gemv_jit_source(fp8(4, 4096, 4096, bf, e4, Scaling::row), mma), "gt_gemv::Plain, 3, 0, 2, false>"));
  EXPECT_TRUE(has(gemv_jit_source(fp8(4096, 4, 4096, bf, e4, Scaling::tensor), "vec=n,warps=8,rows=16,ksplit=8,"
                                  "unroll=2,mma=1"),
                  "gt_gemv::Plain, 0, 3, 1, false>"));  // vec=n: the weights are A
  Problem q = fp8(8, 4096, 4096, e4, e5, Scaling::tensor, e4);
  q.amax = true;
  EXPECT_TRUE(has(gemv_jit_source(q, mma), "GemvMma<8, 1, 16, 3,"));
  EXPECT_TRUE(has(gemv_jit_source(q, mma), "gt_gemv::Plain, 4, 3, 1, true>"));
  // 16-bit problems keep their units (no fp8 arguments).
  EXPECT_TRUE(has(gemv_jit_source(decode(4, 4096, 4096), mma), "gt_gemv::Plain>;"));
}

// Every enumerated fp8 config compiles for sm_90a without spills: each scaling, weight-only (bf16 and f16 vectors,
// a GLU), the weights as A (vec=n), an e4m3 D with amax, ragged K (K % 128 != 0), 2-byte loads with C.
TEST(GemvFp8Compile, EveryConfig) {
  compile_every(fp8(4, 4096, 4096, e4, e4, Scaling::block));
  compile_every(fp8(16, 4096, 4104, e4, e4, Scaling::block));
  compile_every(fp8(1, 4096, 4096, bf, e4, Scaling::row, bf, "bias,gelu_tanh"));
  compile_every(fp8(8, 14336, 4096, f16, e4, Scaling::row, f16, "silu_glu"));
  Problem q = fp8(16, 4096, 4160, e4, e5, Scaling::row, e4);
  q.amax = true;
  compile_every(q);
  compile_every(fp8(4096, 8, 4096, e4, e4, Scaling::block));
  compile_every(fp8(4096, 3, 4096, bf, e4, Scaling::tensor, DType::f32));
  compile_every(fp8(4, 4096, 4096, bf, e5, Scaling::row));
  Problem c = fp8(3, 777, 4098, e4, e4, Scaling::row, DType::f32);  // 2-byte loads, C
  c.beta = 1.0f;
  c.c = c.d;
  compile_every(c);
}

}  // namespace
}  // namespace gemmtune
