// sm90 backend without a GPU: config round trip, validity reasons, enumeration, and NVRTC compilation of the
// enumerated candidates (each compiles; spilling ones are reported, the pipeline skips them). The whole list of the 4096^3 bf16 TN problem always compiles; for the other
// problems a representative subset (the top of the ranking plus every schedule/cluster shape) keeps CI short, and
// GEMMTUNE_SM90_COMPILE_ALL=1 compiles their whole lists too.
#include <gtest/gtest.h>

#include "jit/thread_pool.h"
#include "unit/compile_each.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include "backends/sm90/sm90_backend.h"
#include "backends/sm90/sm90_cluster_order.h"
#include "backends/sm90/sm90_config.h"
#include "jit/jit.h"
#include "gemmtune/epilogue.h"
#include "gemmtune/errors.h"

namespace gemmtune {
namespace {

// The kernel cache key of a compile (same key = same unit).
std::string key(const CompileResult& r) { return std::static_pointer_cast<const jit::Cubin>(r.artifact)->key; }

TEST(Sm90Config, RoundTrip) {
  const std::string s = "tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8";
  EXPECT_EQ(sm90::Config::parse(s).str(), s);
  const std::string p = "tile=64x192x64,stages=5,cluster=1x2,sched=pingpong,raster=n,group=16";
  EXPECT_EQ(sm90::Config::parse(p).str(), p);
  EXPECT_THROW(sm90::Config::parse("tile=128x256,stages=4"), Error);
  EXPECT_THROW(sm90::Config::parse("bogus=1"), Error);
  // The tile order: static is the default and is not printed; dynamic is.
  const std::string d = "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=7,tiles=dynamic";
  EXPECT_TRUE(sm90::Config::parse(d).dynamic());
  EXPECT_EQ(sm90::Config::parse(d).str(), d);
  EXPECT_EQ(sm90::Config::parse(s + ",tiles=static").str(), s);
  EXPECT_THROW(sm90::Config::parse(s + ",tiles=random"), Error);
  // Its tile ring takes shared memory (the plan GemmConfig reads).
  EXPECT_EQ(sm90::plan(sm90::Config::parse(d), 0).smem_bytes,
            sm90::plan(sm90::Config::parse(d.substr(0, d.size() - 14)), 0).smem_bytes + 20 * sm90::kTileSlots);
}

TEST(Sm90Config, GpcOrder) {
  const std::string s = "tile=128x112x64,stages=7,cluster=2x1,sched=pingpong,raster=n,group=8";
  const sm90::Config g = sm90::Config::parse(s + ",tiles=gpc");
  EXPECT_TRUE(g.gpc());
  EXPECT_FALSE(g.dynamic());
  EXPECT_EQ(g.str(), s + ",tiles=gpc");
  EXPECT_EQ(sm90::plan(g, 0).smem_bytes, sm90::plan(sm90::Config::parse(s), 0).smem_bytes);  // the static kernel
  Problem q = Problem::make(4096, 4096, 4096, DType::bf16, DType::bf16);
  q.resolve();
  // The gpc twin runs the static kernel, and the walk (raster, group) is a launch parameter: configs that differ
  // only there compile one source (same cache key: the second and third compiles are cache hits); another tile not.
  auto be = make_sm90_backend();
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  const CompileResult a = be->compile(resolve(q), {"sm90", s}, dev);
  const CompileResult b = be->compile(resolve(q), {"sm90", s + ",tiles=gpc"}, dev);
  const CompileResult c =
      be->compile(resolve(q), {"sm90", "tile=128x112x64,stages=7,cluster=2x1,sched=pingpong,raster=m,group=3"}, dev);
  const CompileResult d =
      be->compile(resolve(q), {"sm90", "tile=128x96x64,stages=7,cluster=2x1,sched=pingpong,raster=n,group=8"}, dev);
  EXPECT_TRUE(a.compiled && b.compiled && c.compiled && d.compiled);
  EXPECT_TRUE(b.cache_hit);
  EXPECT_TRUE(c.cache_hit);
  EXPECT_EQ(key(a), key(b));
  EXPECT_EQ(key(a), key(c));
  EXPECT_NE(key(a), key(d));
}

TEST(Sm90Config, StreamKTail) {
  const std::string s = "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc";
  const sm90::Config c = sm90::Config::parse(s + ",tail=sk");
  EXPECT_TRUE(c.sk && c.gpc());
  EXPECT_EQ(c.str(), s + ",tail=sk");
  EXPECT_EQ(sm90::Config::parse(s + ",tail=dp").str(), s);
  EXPECT_THROW(sm90::Config::parse(s + ",tail=splitk"), Error);
  Problem q = Problem::make(4096, 4096, 4096, DType::bf16, DType::bf16);
  q.resolve();
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  sm90::Config d = sm90::Config::parse("tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tail=sk");
  EXPECT_EQ(sm90::config_reason(d, sm90::Analysis(resolve(q)), dev), "");
  d.tiles = sm90::TileOrder::dynamic;
  EXPECT_NE(sm90::config_reason(d, sm90::Analysis(resolve(q)), dev).find("stream-K tail"), std::string::npos);
  // When the units run: a partial last round after full ones, or fewer tiles than clusters (split mode).
  EXPECT_TRUE(sm90::sk_tail(512, 66, 64));    // 7 rounds + 50
  EXPECT_FALSE(sm90::sk_tail(528, 66, 64));   // 8 whole rounds
  EXPECT_TRUE(sm90::sk_tail(40, 66, 64));     // split: 40 tiles over 66 clusters
  EXPECT_FALSE(sm90::sk_tail(40, 66, 1));     // split with empty shares: the plain walk
  EXPECT_TRUE(sm90::sk_tail(67, 66, 1));
  // The stream-K kernel is its own compile (a template flag), unlike the walk knobs.
  auto be = make_sm90_backend();
  const CompileResult a = be->compile(resolve(q), {"sm90", s}, dev);
  const CompileResult b = be->compile(resolve(q), {"sm90", s + ",tail=sk"}, dev);
  EXPECT_EQ(b.spill_bytes, 0);
  EXPECT_NE(key(a), key(b));
}

// The stream-K units every cluster derives (kernels/sm90/sm90_shape.cuh sk_unit, the kernels' own function): each
// k-block of each tile is computed once, each tile stored once (by a whole unit or a tail), and a tail adds exactly the
// partials of its tile, written by clusters before it as their first stream-K unit; the ring positions run on. Tails after
// whole rounds (one partial each) and split mode (fewer tiles than clusters: several partials per tile) alike.
// swap=1: parsed and printed last; the view takes the other orientation (D column-major in it); refused with a fused
// chain, with epi=warp and at a tile N off the wgmma's steps of 16; the enumerator lists swap configs for problems of
// at most 64 rows (first up to 48), none for wide ones, and never a split twin of one.
TEST(Sm90Config, Swap) {
  const std::string s = "tile=64x16x64,stages=16,cluster=1x1,sched=pingpong,raster=m,group=6";
  EXPECT_FALSE(sm90::Config::parse(s).swap);
  EXPECT_TRUE(sm90::Config::parse(s + ",swap=1").swap);
  EXPECT_EQ(sm90::Config::parse(s + ",swap=1").str(), s + ",swap=1");
  EXPECT_EQ(sm90::Config::parse(s + ",swap=0").str(), s);
  EXPECT_EQ(sm90::Config::parse(s + ",tail=sk,swap=1").str(), s + ",tail=sk,swap=1");
  EXPECT_THROW(sm90::Config::parse(s + ",swap=yes"), Error);

  Problem p = Problem::make(16, 4096, 14336, DType::bf16, DType::bf16);
  p.resolve();
  const sm90::KernelView v = sm90::kernel_view(resolve(p)), w = sm90::kernel_view(resolve(p), true);
  EXPECT_EQ(v.m, 16);
  EXPECT_TRUE(v.d.row_major);
  EXPECT_FALSE(v.transposed);
  EXPECT_EQ(w.m, 4096);  // the weights on the kernel's M side
  EXPECT_EQ(w.n, 16);
  EXPECT_FALSE(w.d.row_major);
  EXPECT_TRUE(w.transposed && w.swap);
  EXPECT_FALSE(w.a_mn || w.b_mn);  // W (N x K row-major) and the activations (M x K row-major) both K-major
  Problem q = p;  // a col-major D: the usual view is already the transposed one, swap takes the other
  q.d.layout = Layout::col;
  q.d.ld = 0;
  q.resolve();
  EXPECT_EQ(sm90::kernel_view(resolve(q)).m, 4096);
  EXPECT_EQ(sm90::kernel_view(resolve(q), true).m, 16);
  EXPECT_FALSE(sm90::kernel_view(resolve(q), true).transposed);

  auto be = make_sm90_backend();
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  EXPECT_EQ(be->validate(resolve(p), {"sm90", s + ",swap=1"}, dev), "");
  EXPECT_EQ(be->validate(resolve(p), {"sm90", s + ",tail=sk,swap=1"}, dev), "");
  EXPECT_NE(be->validate(resolve(p),
                         {"sm90", "tile=64x24x64,stages=16,cluster=1x1,sched=pingpong,raster=m,group=6,swap=1"}, dev)
                .find("multiple of 16"),
            std::string::npos);
  EXPECT_NE(be->validate(resolve(p), {"sm90", s + ",epi=warp,swap=1"}, dev).find("epi=warp"), std::string::npos);
  Problem e = p;  // a fused chain is applied per element with D's coordinates; a GLU is refused
  e.epilogue = parse_epilogue("bias,residual");
  EXPECT_EQ(be->validate(resolve(e), {"sm90", s + ",swap=1"}, dev), "");
  e.epilogue = parse_epilogue("silu_glu");
  e.resolve();
  EXPECT_NE(be->validate(resolve(e), {"sm90", s + ",swap=1"}, dev).find("takes no GLU"), std::string::npos);
  Problem mn = p;  // column-major activations: an N-major kernel B needs tile N 64
  mn.a.layout = Layout::col;
  mn.a.ld = 0;
  mn.resolve();
  EXPECT_NE(be->validate(resolve(mn), {"sm90", s + ",swap=1"}, dev).find("multiple of 64"), std::string::npos);

  const auto list = sm90::enumerate_configs(sm90::Analysis(resolve(p)), dev);
  ASSERT_GE(list.size(), 8u);
  for (size_t i = 0; i < 8; ++i) EXPECT_TRUE(list[i].swap) << i << ": " << list[i].str();
  for (const auto& c : list) EXPECT_FALSE(c.swap && c.sk) << c.str();
  for (const auto& c : list)
    if (c.swap) EXPECT_EQ(c.bn, 16) << c.str();
  Problem m64 = Problem::make(64, 8192, 8192, DType::bf16, DType::bf16);
  m64.resolve();
  const auto l64 = sm90::enumerate_configs(sm90::Analysis(resolve(m64)), dev);
  EXPECT_TRUE(std::any_of(l64.begin(), l64.end(), [](const sm90::Config& c) { return c.swap && c.bn == 64; }));
  EXPECT_FALSE(l64.front().swap && l64[1].swap && l64[2].swap && l64[3].swap);  // mixed by the estimate
  Problem wide = Problem::make(2048, 4096, 4096, DType::bf16, DType::bf16);
  wide.resolve();
  for (const auto& c : sm90::enumerate_configs(sm90::Analysis(resolve(wide)), dev)) EXPECT_FALSE(c.swap) << c.str();
  // A col-major D at M = 16: the usual view has the tokens on its N already, so the decode tiles come without swap
  // (the TMA epilogue), first.
  const auto lq = sm90::enumerate_configs(sm90::Analysis(resolve(q)), dev);
  ASSERT_GE(lq.size(), 8u);
  for (size_t i = 0; i < 8; ++i) EXPECT_TRUE(!lq[i].swap && lq[i].bn == 16) << i << ": " << lq[i].str();
  for (const auto& c : lq) EXPECT_FALSE(c.swap) << c.str();
}

TEST(Sm90Config, StreamKUnitsCoverEveryKBlockOnce) {
  struct Case {
    int total, clusters, k;
  };
  int split_tails_with_several_parts = 0;
  for (const Case& cs : {Case{512, 66, 64}, Case{67, 66, 30}, Case{70, 66, 1}, Case{48, 66, 64}, Case{24, 66, 64},
                         Case{48, 132, 10}, Case{7, 66, 9}, Case{5, 132, 224}, Case{3, 66, 1}, Case{130, 132, 2},
                         Case{1, 66, 64}, Case{61, 64, 8}}) {
    const std::string name = std::to_string(cs.total) + " tiles, " + std::to_string(cs.clusters) + " clusters, K " +
                             std::to_string(cs.k);
    if (!gt_sm90::sk_runs(cs.total, cs.clusters, cs.k)) {  // fewer k-blocks than clusters: the plain walk
      EXPECT_LT(cs.total * cs.k, cs.clusters) << name;
      continue;
    }
    std::vector<std::vector<int>> covered(cs.total, std::vector<int>(cs.k, 0));
    std::vector<int> stores(cs.total, 0);
    std::vector<int> head_tile(cs.clusters, -1);  // the tile whose partial cluster c wrote (its first unit)
    struct Tail {
      int c, t, slot, parts;
    };
    std::vector<Tail> tails;
    const int rounds = cs.total / cs.clusters;
    for (int c = 0; c < cs.clusters; ++c) {
      unsigned pos = 0;
      bool seen_other = false;
      for (int j = 0;; ++j) {
        gt_sm90::Unit u{c + j * cs.clusters, 0, cs.k, pos, gt_sm90::kWhole, 0};  // the plain walk's unit
        if (j >= rounds - 1) u = gt_sm90::sk_unit(cs.total, cs.clusters, static_cast<unsigned>(c), cs.k, j);
        if (u.t >= cs.total) break;
        ASSERT_LT(u.k0, u.k1) << name;
        ASSERT_TRUE(u.k0 >= 0 && u.k1 <= cs.k) << name;
        EXPECT_EQ(u.pos, pos) << name << " cluster " << c << " unit " << j;
        pos += static_cast<unsigned>(u.k1 - u.k0);
        for (int kb = u.k0; kb < u.k1; ++kb) ++covered[u.t][kb];
        if (u.kind == gt_sm90::kHead) {
          EXPECT_FALSE(seen_other) << name << ": cluster " << c << " writes its partial after another unit";
          EXPECT_EQ(u.slot, c) << name;
          EXPECT_EQ(head_tile[c], -1) << name << ": two partials in cluster " << c;
          head_tile[c] = u.t;
        } else {
          ++stores[u.t];
          EXPECT_EQ(u.k1, cs.k) << name << ": a storing unit ends the tile";
          if (u.kind == gt_sm90::kTail) tails.push_back({c, u.t, u.slot, u.parts});
          else EXPECT_EQ(u.k0, 0) << name;
        }
        seen_other = seen_other || (u.kind != gt_sm90::kHead && j >= rounds - 1);  // among the stream-K units
      }
    }
    for (int t = 0; t < cs.total; ++t) {
      EXPECT_EQ(stores[t], 1) << name << " tile " << t;
      for (int kb = 0; kb < cs.k; ++kb) ASSERT_EQ(covered[t][kb], 1) << name << " tile " << t << " k-block " << kb;
    }
    int heads = 0;
    for (int h : head_tile) heads += h >= 0;
    int consumed = 0;
    for (const Tail& tl : tails) {
      EXPECT_EQ(tl.slot, tl.c - 1) << name;
      ASSERT_GE(tl.parts, 1) << name;
      ASSERT_GE(tl.slot - tl.parts + 1, 0) << name;
      for (int q = 0; q < tl.parts; ++q) EXPECT_EQ(head_tile[tl.slot - q], tl.t) << name << " tail of tile " << tl.t;
      consumed += tl.parts;
      if (rounds >= 1) EXPECT_EQ(tl.parts, 1) << name;
      split_tails_with_several_parts += tl.parts > 1;
    }
    EXPECT_EQ(consumed, heads) << name << ": every partial is added once";
  }
  EXPECT_GT(split_tails_with_several_parts, 0);
  // The grid of a tail=sk config: all clusters with enough tiles; split mode keeps shares of >= 8 k-blocks.
  EXPECT_EQ(sm90::sk_clusters(512, 64, 66), 66);
  EXPECT_EQ(sm90::sk_clusters(48, 64, 66), 66);   // 3072 k-blocks: every cluster
  EXPECT_EQ(sm90::sk_clusters(4, 32, 66), 16);    // 128 k-blocks: 16 shares of 8
  EXPECT_EQ(sm90::sk_clusters(40, 1, 66), 40);    // K = 64: one cluster per tile, the plain walk
  EXPECT_FALSE(sm90::sk_tail(40, 40, 64));
}

TEST(Sm90Enumerate, StreamKTwinsWhereTheLastRoundIsPartial) {
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  // 2048 x 28672 x 4096 in 128x192 2x1 tiles: 1200 cluster tiles on 66 clusters = 18 rounds + 12 tiles: a nearly empty
  // last round, so tail twins, ranked by their shorter estimate, each better than the 8th plain config.
  Problem p = Problem::make(2048, 28672, 4096, DType::bf16, DType::bf16);
  p.resolve();
  const auto all = sm90::enumerate_configs(sm90::Analysis(resolve(p)), dev);
  int sk = 0;
  for (const sm90::Config& c : all)
    if (c.sk) {
      ++sk;
      sm90::Config plain = c;
      plain.sk = false;
      EXPECT_LT(sm90::estimate_cost(c, sm90::Analysis(resolve(p)), dev),
                0.98 * sm90::estimate_cost(plain, sm90::Analysis(resolve(p)), dev))
          << c.str();
      EXPECT_NE(std::find(all.begin(), all.end(), plain), all.end()) << c.str();
    }
  EXPECT_GT(sk, 0);
  EXPECT_LE(sk, 16);
  // 4096^3 in 128x128 2x1: 7 rounds + 50 of 66: the tail round is mostly full, the estimate keeps the plain walk (the
  // H200 measured the two within 0.1%).
  Problem q = Problem::make(4096, 4096, 4096, DType::bf16, DType::bf16);
  q.resolve();
  sm90::Config pp = sm90::Config::parse("tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8");
  sm90::Config pps = pp;
  pps.sk = true;
  EXPECT_GT(sm90::estimate_cost(pps, sm90::Analysis(resolve(q)), dev),
            0.98 * sm90::estimate_cost(pp, sm90::Analysis(resolve(q)), dev));
  // Short K: no twins below 24 k-blocks (their fixup measured +1 to +14% at K = 512-1040), whatever the rounds.
  for (int64_t k : {512, 1000, 1472}) {
    Problem s = Problem::make(2048, 28672, k, DType::bf16, DType::bf16);
    s.resolve();
    for (const sm90::Config& c : sm90::enumerate_configs(sm90::Analysis(resolve(s)), dev))
      EXPECT_FALSE(c.sk) << "k=" << k << " " << c.str();
  }
  // 4096 x 4224 x 4096: 128x128 1x1 tiles make 32 x 33 = 1056 = 8 whole rounds on 132 SMs; twins only where the
  // config has a tail.
  Problem e = Problem::make(4096, 4224, 4096, DType::bf16, DType::bf16);
  e.resolve();
  for (const sm90::Config& c : sm90::enumerate_configs(sm90::Analysis(resolve(e)), dev)) {
    if (!c.sk) continue;
    EXPECT_TRUE(
        sm90::sk_tail(sm90::cluster_tiles(c, sm90::kernel_view(resolve(e))), 132 / (c.cm * c.cn), (e.k + 63) / 64))
        << c.str();
  }
}

// alpha == 1 is specialised at compile time (no multiply, a cheaper compile): another kernel than alpha = 0.75, both
// without spills.
TEST(Sm90Config, AlphaOneIsItsOwnKernel) {
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  auto be = make_sm90_backend();
  const Candidate c{"sm90", "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=7"};
  Problem one = Problem::make(4096, 4096, 4096, DType::bf16, DType::bf16);
  one.resolve();
  Problem other = one;
  other.alpha = 0.75f;
  const CompileResult a = be->compile(resolve(one), c, dev), b = be->compile(resolve(other), c, dev);
  EXPECT_EQ(a.spill_bytes, 0);
  EXPECT_EQ(b.spill_bytes, 0);
  EXPECT_NE(key(a), key(b));
}

TEST(Sm90ClusterOrder, GroupsAndPermutation) {
  // SMs 0-3 and 4-5 were seen in clusters together; 6 and 7 never: four groups.
  const std::vector<int> group = sm90::group_sms(8, {{0, 1}, {2, 3}, {1, 2}, {4, 5}, {9, -1}});
  EXPECT_EQ(group, (std::vector<int>{0, 0, 0, 0, 1, 1, 2, 3}));
  // A grid whose clusters landed on SMs 4, 0, 6, 2, 5: GPC-major ranks, blockIdx order inside a group.
  const std::vector<int> order = sm90::gpc_major_order({4, 0, 6, 2, 5}, group);
  EXPECT_EQ(order, (std::vector<int>{2, 0, 4, 1, 3}));
  // Always a permutation of [0, n), whatever the placement (repeated SMs, SMs outside the map).
  for (const auto& placement : {std::vector<int>{7, 7, 7}, std::vector<int>{40, 3, 1, 100, 3}, std::vector<int>{}}) {
    std::vector<int> o = sm90::gpc_major_order(placement, group);
    std::sort(o.begin(), o.end());
    for (size_t i = 0; i < o.size(); ++i) EXPECT_EQ(o[i], static_cast<int>(i));
  }
}

TEST(Sm90Enumerate, GpcTwinsWalkTheNonMulticastOperand) {
  Problem p = Problem::make(4096, 4096, 4096, DType::bf16, DType::bf16);
  p.resolve();
  int twins = 0;
  for (const sm90::Config& c : sm90::enumerate_configs(sm90::Analysis(resolve(p)), DeviceInfo::assumed_sm90())) {
    if (!c.gpc()) continue;
    ++twins;
    EXPECT_TRUE(c.pingpong) << c.str();
    EXPECT_NE(c.cm, c.cn) << c.str();
    EXPECT_EQ(c.raster_n, c.cm == 2) << c.str();
  }
  EXPECT_GT(twins, 20);
}

TEST(Sm90Config, Reasons) {
  auto be = make_sm90_backend();
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  Problem p = Problem::make(4096, 4096, 4101, DType::bf16, DType::bf16);
  p.resolve();
  const std::string r = be->supports(resolve(p), dev);
  EXPECT_NE(r.find("lda=4101 (8202 bytes) is odd in elements"), std::string::npos) << r;
  EXPECT_NE(r.find("pad-and-run"), std::string::npos) << r;
  EXPECT_TRUE(be->enumerate(resolve(p), dev).empty());
  Problem q = Problem::make(4096, 4096, 4096, DType::bf16, DType::bf16);
  q.resolve();
  EXPECT_EQ(be->supports(resolve(q), dev), "");
  EXPECT_NE(be->validate(resolve(q), {"sm90", "tile=128x256x64,stages=7,cluster=1x1,sched=coop,raster=m,group=8"}, dev),
            "");
  EXPECT_NE(be->validate(resolve(q), {"sm90", "tile=64x256x64,stages=4,cluster=1x1,sched=coop,raster=m,group=8"}, dev),
            "");
  EXPECT_EQ(be->validate(resolve(q), {"sm90", "tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8"}, dev),
            "");
  {  // Register pressure is no validity rule: tail=sk with a C input in a 1x1 cluster, ping-pong tail=sk at 176
     // accumulators in a 1x2 cluster are valid (the compile reports any spills; the ranking lists them last).
    Problem c = q;
    c.c = c.d;
    c.beta = 0.5f;
    c.resolve();
    const std::string t11 = "tile=128x128x64,stages=6,cluster=1x1,sched=pingpong,raster=n,group=8,tail=sk";
    EXPECT_EQ(be->validate(resolve(c), {"sm90", t11}, dev), "");
    EXPECT_EQ(be->validate(resolve(q), {"sm90", t11}, dev), "");
    const std::string p176 = "tile=128x176x64,stages=5,cluster=1x2,sched=pingpong,raster=n,group=5,tail=sk";
    EXPECT_EQ(be->validate(resolve(q), {"sm90", p176}, dev), "");
    // Past the 192 accumulators a consumer warpgroup can hold, a config is invalid.
    const std::string r = be->validate(resolve(q),
                                       {"sm90",
                                        "tile=128x208x64,stages=4,cluster=1x1,sched=pingpong,raster=m,"
                                        "group=8"},
                                       dev);
    EXPECT_NE(r.find("accumulator registers per thread exceed the 192"), std::string::npos) << r;
  }
  Problem e = q;
  e.epilogue = parse_epilogue("relu");
  EXPECT_EQ(be->supports(resolve(e), dev), "");                         // fused (tests/unit/test_sm90_epilogue.cpp)
  Problem g = Problem::make(256, 4104, 256, DType::bf16, DType::bf16);  // N a multiple of 2 x 12
  g.epilogue = parse_epilogue("silu_glu:interleave12");
  EXPECT_NE(be->supports(resolve(g), dev).find("multiple of 8"), std::string::npos) << be->supports(resolve(g), dev);
  // Batch strides: packed (resolve's default) is taken; 0 broadcasts an operand to every batch: for A and B (TMA) a
  // reason, not a packed stride read past the operand (the kernel view used to take 0 for "packed"); C keeps it.
  Problem b = Problem::make(256, 256, 256, DType::bf16, DType::bf16, Layout::row, Layout::col, 3);
  b.resolve();
  EXPECT_EQ(be->supports(resolve(b), dev), "");
  for (Which w : {Which::A, Which::B}) {
    Problem x = b;
    (w == Which::A ? x.a : x.b).batch_stride = 0;
    EXPECT_NE(be->supports(resolve(x), dev).find("broadcast operands are not supported"), std::string::npos)
        << be->supports(resolve(x), dev);
    EXPECT_TRUE(be->enumerate(resolve(x), dev).empty());
  }
  Problem c = b;  // one C for every batch: read through plain loads with a zero batch stride, not through TMA
  c.beta = 0.5f;
  c.c.batch_stride = 0;
  EXPECT_EQ(sm90::kernel_view(resolve(c)).c.batch_stride, 0);
  c.c.batch_stride = -1;
  c.resolve();
  EXPECT_EQ(sm90::kernel_view(resolve(c)).c.batch_stride, 256 * 256);
}

// load=cp: A and B that TMA cannot load (a pitch, batch stride or base pointer off 16 bytes) go through the cp.async
// producer in the widest pieces their alignment allows, the other operand by TMA; such problems list only load=cp
// configs (1x1 clusters), and problems TMA can load list none.
TEST(Sm90Config, LoadCp) {
  auto be = make_sm90_backend();
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  const std::string s = "tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=m,group=8";
  EXPECT_EQ(sm90::Config::parse(s + ",load=cp").str(), s + ",load=cp");
  EXPECT_TRUE(sm90::Config::parse(s + ",load=cp").cp);
  EXPECT_EQ(sm90::Config::parse(s + ",load=tma").str(), s);
  EXPECT_THROW(sm90::Config::parse(s + ",load=ldg"), Error);
  auto problem = [](int64_t m, int64_t n, int64_t k, Layout a, Layout b) {
    Problem p = Problem::make(m, n, k, DType::bf16, DType::bf16, a, b);
    p.resolve();
    return p;
  };
  const Problem k4100 = problem(2048, 4096, 4100, Layout::row, Layout::col);
  EXPECT_EQ(be->supports(resolve(k4100), dev), "");
  // An M-major A that TMA loads beside a B that needs cp.async: taken, load=cp only, the cp.async piece width in B's
  // field of the kernel's spec alone.
  Problem mixed = problem(301, 250, 700, Layout::col, Layout::col);
  mixed.a.ld = 304;
  EXPECT_EQ(be->supports(resolve(mixed), dev), "");
  for (const Candidate& c : be->enumerate(resolve(mixed), dev))
    EXPECT_NE(c.config.find("load=cp"), std::string::npos) << c.str();
  const std::string r = be->validate(resolve(k4100), {"sm90", s}, dev);
  EXPECT_NE(r.find("needs load=cp"), std::string::npos) << r;
  EXPECT_EQ(be->validate(resolve(k4100), {"sm90", s + ",load=cp"}, dev), "");
  const std::string c21 = "tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8,load=cp";
  EXPECT_NE(be->validate(resolve(k4100), {"sm90", c21}, dev).find("cluster 1x1"), std::string::npos);
  EXPECT_NE(be->validate(resolve(k4100), {"sm90", s + ",tiles=dynamic,load=cp"}, dev).find("static"),
            std::string::npos);
  const auto list = be->enumerate(resolve(k4100), dev);
  ASSERT_FALSE(list.empty());
  for (const Candidate& c : list) {
    const sm90::Config cfg = sm90::Config::parse(c.config);
    EXPECT_TRUE(cfg.cp && cfg.cm * cfg.cn == 1 && !cfg.dynamic()) << c.str();
    EXPECT_EQ(be->validate(resolve(k4100), c, dev), "") << c.str();
  }
  const Problem k4096 = problem(2048, 4096, 4096, Layout::row, Layout::col);
  for (const Candidate& c : be->enumerate(resolve(k4096), dev))
    EXPECT_FALSE(sm90::Config::parse(c.config).cp) << c.str();
  EXPECT_EQ(sm90::load_path(k4096, sm90::kernel_view(resolve(k4096))), "A, B: TMA");
  EXPECT_EQ(sm90::load_path(k4100, sm90::kernel_view(resolve(k4100))),
            "A: cp.async 8-byte (lda=4100 is 8200 bytes); B: cp.async 8-byte (ldb=4100 is 8200 bytes)");
  EXPECT_NE(be->validate(resolve(k4096), {"sm90", s + ",load=cp"}, dev).find("TMA loads A and B"), std::string::npos);
  // The widths: the gcd of pitch, batch stride and pointer alignment, at most 16; 0 where TMA loads the operand.
  const sm90::Config cp = sm90::Config::parse(s + ",load=cp");
  auto widths = [&](const Problem& p) {
    const gt_sm90::Spec sp = sm90::spec(cp, sm90::kernel_view(resolve(p)));
    return std::to_string(sp.cp_a) + "/" + std::to_string(sp.cp_b);
  };
  EXPECT_EQ(widths(k4100), "8/8");
  EXPECT_EQ(widths(problem(2048, 4096, 4098, Layout::row, Layout::col)), "4/4");
  EXPECT_EQ(widths(k4096), "0/0");
  Problem al = k4096;
  al.a.align = 4;
  al.b.align = 8;
  EXPECT_EQ(widths(al), "4/8");
  EXPECT_EQ(sm90::load_path(al, sm90::kernel_view(resolve(al))),
            "A: cp.async 4-byte (align=4); B: cp.async 8-byte (align=8)");
  // Row-major B with N = 4094 (N-major, pitch 4 (mod 16) bytes); a col-major D swaps the roles (the kernel's A is
  // the user's B): the names stay the user's.
  Problem nb = problem(1024, 4094, 4096, Layout::row, Layout::row);
  EXPECT_EQ(widths(nb), "0/4");
  nb.d.layout = Layout::col;
  nb.d.ld = 0;
  nb.c = nb.d;
  nb.resolve();
  EXPECT_EQ(widths(nb), "4/0");
  EXPECT_EQ(sm90::load_path(nb, sm90::kernel_view(resolve(nb))), "A: TMA; B: cp.async 4-byte (ldb=4094 is 8188 bytes)");
  // Odd pitches in elements, 2-byte aligned pointers and batch strides: refused, pointing at pad-and-run.
  const Problem odd = problem(1024, 4095, 4096, Layout::row, Layout::row);
  EXPECT_NE(be->supports(resolve(odd), dev).find("ldb=4095 (8190 bytes) is odd in elements"), std::string::npos)
      << be->supports(resolve(odd), dev);
  Problem a2 = k4096;
  a2.a.align = 2;
  EXPECT_NE(be->supports(resolve(a2), dev).find("2-byte aligned"), std::string::npos) << be->supports(resolve(a2), dev);
  Problem bs = Problem::make(256, 256, 256, DType::bf16, DType::bf16, Layout::row, Layout::col, 3);
  bs.resolve();
  bs.b.batch_stride += 4;
  EXPECT_EQ(be->supports(resolve(bs), dev), "");
  EXPECT_EQ(widths(bs), "0/8");
  bs.b.batch_stride += 1;
  EXPECT_NE(be->supports(resolve(bs), dev).find("batch_stride"), std::string::npos) << be->supports(resolve(bs), dev);
}

// Epilogue strips: rows that 64/128-byte strips do not divide go out in wide unswizzled strips (16 x odd bytes, at most
// 256) when one buffer per consumer fits beside the stage ring (two when they fit), else in the narrow ones.
TEST(Sm90Config, WideEpilogueStrips) {
  EXPECT_EQ(gt_sm90::epi_wide_bytes(352), 176);  // 16-bit 176 columns
  EXPECT_EQ(gt_sm90::epi_wide_bytes(288), 144);
  EXPECT_EQ(gt_sm90::epi_wide_bytes(336), 112);  // 168: 336 = 21 x 16 is over 256
  EXPECT_EQ(gt_sm90::epi_wide_bytes(256), 16);
  EXPECT_EQ(gt_sm90::epi_wide_bytes(8), 0);
  auto cfg = [](const char* s) { return sm90::Config::parse(s); };
  const sm90::Config p176 = cfg("tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8");
  EXPECT_EQ(sm90::plan(p176, sm90::kBF16).epi_strip_bytes, 176);
  EXPECT_EQ(sm90::plan(p176, sm90::kBF16).epi_bufs, 1);  // two would take a stage
  EXPECT_LE(sm90::plan(p176, sm90::kBF16).smem_bytes, gt_sm90::kSmemPerBlock);
  sm90::Config p176s4 = p176;
  p176s4.stages = 4;
  EXPECT_EQ(sm90::plan(p176s4, sm90::kBF16).epi_bufs, 2);
  EXPECT_EQ(sm90::plan(p176s4, sm90::kBF16).smem_bytes - sm90::plan(p176, sm90::kBF16).smem_bytes,
            -(128 + 176) * 128 - 16 + 2 * 64 * 176);
  EXPECT_EQ(sm90::plan(cfg("tile=128x144x64,stages=6,cluster=1x1,sched=pingpong,raster=m,group=8"), sm90::kF16).epi_strip_bytes, 144);
  // 128x208 with 5 stages: not even one 208-byte buffer per consumer fits: 32-byte strips as before.
  const sm90::Config c208 = cfg("tile=128x208x64,stages=5,cluster=1x1,sched=coop,raster=m,group=8");
  EXPECT_EQ(sm90::plan(c208, sm90::kBF16).epi_strip_bytes, 32);
  EXPECT_EQ(sm90::plan(c208, sm90::kBF16).epi_bufs, 2);
  EXPECT_EQ(sm90::plan(cfg("tile=128x192x64,stages=4,cluster=1x1,sched=coop,raster=m,group=8"), sm90::kBF16).epi_strip_bytes, 128);
  EXPECT_EQ(sm90::plan(p176, sm90::kF32).epi_strip_bytes, 64);  // 704-byte rows: 64-byte swizzled strips
  // f32 D: no wide strips (a strip holds whole 8-column groups: 112 bytes would be 28 columns).
  EXPECT_EQ(gt_sm90::epi_wide_bytes(672, 4), 0);
  const sm90::Config p168 = cfg("tile=128x168x64,stages=5,cluster=2x1,sched=coop,raster=n,group=8");
  EXPECT_EQ(sm90::plan(p168, sm90::kF32).epi_strip_bytes, 32);
  EXPECT_EQ(sm90::plan(p168, sm90::kF32).epi_bufs, 2);
  EXPECT_EQ(sm90::plan(p168, sm90::kBF16).epi_strip_bytes, 112);
  // The deepest ring that fits is what it was with 32-byte strips.
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  EXPECT_EQ(sm90::max_stages(p176, sm90::view_of(sm90::kBF16), dev), 5);
  // Compiles without spills.
  Problem q = Problem::make(8192, 6144, 4096, DType::bf16, DType::bf16);
  q.resolve();
  auto be = make_sm90_backend();
  const CompileResult r = be->compile(resolve(q), {"sm90", p176.str()}, dev);
  EXPECT_TRUE(r.compiled);
  EXPECT_EQ(r.spill_bytes, 0) << r.log;
  EXPECT_GE(r.smem_bytes, sm90::plan(p176, sm90::kBF16).smem_bytes);
}

// epi=warp (each warp TMA-stores its own pieces): parsed and printed, chosen by the enumerator exactly for the
// ping-pong configs whose warpgroup strips are wide with room for one buffer or 64 bytes, refused with a GLU, and the
// GPU test's configs (tests/gpu/test_sm90_gemm.cpp WarpStrips) compile on its plain and f32 / C problems, ten of
// them at least without spills.
TEST(Sm90Config, EpiWarp) {
  const std::string s = "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=8";
  EXPECT_FALSE(sm90::Config::parse(s).epi_warp);
  EXPECT_TRUE(sm90::Config::parse(s + ",epi=warp").epi_warp);
  EXPECT_EQ(sm90::Config::parse(s + ",epi=warp").str(), s + ",epi=warp");
  EXPECT_EQ(sm90::Config::parse(s + ",epi=warpgroup").str(), s);
  EXPECT_THROW(sm90::Config::parse(s + ",epi=thread"), Error);
  // Warp pieces: 128-byte strips and the rest of the row as a tail strip with a map of its own (every store on
  // 32-byte sectors), from two buffers per warp of 16 rows where they fit beside the ring (16 KB per consumer instead
  // of 128x176's one 11 KB strip), else of 8 rows.
  const sm90::Config w176 = sm90::Config::parse(s + ",epi=warp");
  EXPECT_EQ(sm90::plan(w176, 0).epi_rows, 16);
  EXPECT_EQ(sm90::plan(w176, sm90::kBF16).smem_bytes,
            sm90::plan(sm90::Config::parse(s), sm90::kBF16).smem_bytes - 2 * 64 * 176 + 2 * 16 * 1024);
  EXPECT_LE(sm90::plan(w176, sm90::kBF16).smem_bytes, gt_sm90::kSmemPerBlock);
  const sm90::Config w144 =
      sm90::Config::parse("tile=128x144x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=8,epi=warp");
  EXPECT_EQ(sm90::plan(w144, 0).epi_rows, 8);  // six stages of 128x144 leave room for 16 KB of warp buffers, not 32
  EXPECT_LE(sm90::plan(w144, sm90::kBF16).smem_bytes, gt_sm90::kSmemPerBlock);
  // The enumerator's deepest ring for warp pieces is the deepest with 16-row pieces: 5 stages (6 without epi=warp).
  sm90::Config wg144 = w144;
  wg144.epi_warp = false;
  EXPECT_EQ(sm90::max_stages(wg144, sm90::view_of(sm90::kBF16), DeviceInfo::assumed_sm90()), 6);
  EXPECT_EQ(sm90::max_stages(w144, sm90::view_of(sm90::kBF16), DeviceInfo::assumed_sm90()), 5);
  EXPECT_EQ(sm90::plan(sm90::Config::parse(s), 0).epi_rows, 64);
  EXPECT_EQ(sm90::plan(w176, sm90::kBF16).epi_strip_bytes, 128);
  EXPECT_EQ(sm90::plan(w176, sm90::kBF16).epi_tail_bytes, 96);   // 352 = 128 + 128 + 96
  EXPECT_EQ(sm90::plan(w176, sm90::kF32).epi_tail_bytes, 64);    // 704 = 5 x 128 + 64
  EXPECT_EQ(sm90::plan(sm90::Config::parse(s), sm90::kBF16).epi_tail_bytes, 0);  // the warpgroup form: no tail
  auto warp_cfg = [](int bm, int bn) {
    sm90::Config c =
        sm90::Config::parse("tile=128x128x64,stages=4,cluster=1x1,sched=pingpong,raster=m,group=8,epi=warp");
    c.bm = bm;
    c.bn = bn;
    return c;
  };
  EXPECT_EQ(sm90::plan(warp_cfg(128, 168), sm90::kBF16).epi_tail_bytes, 80);
  EXPECT_EQ(sm90::plan(warp_cfg(128, 192), sm90::kBF16).epi_tail_bytes, 0);
  EXPECT_EQ(sm90::plan(warp_cfg(128, 144), sm90::kF16).epi_tail_bytes, 32);
  // A row shorter than 128 bytes is one strip, through D's own map.
  EXPECT_EQ(sm90::plan(warp_cfg(64, 16), sm90::kBF16).epi_strip_bytes, 32);
  EXPECT_EQ(sm90::plan(warp_cfg(64, 16), sm90::kBF16).epi_tail_bytes, 0);
  EXPECT_EQ(sm90::plan(warp_cfg(64, 48), sm90::kBF16).epi_strip_bytes, 96);
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  Problem p = Problem::make(8192, 6144, 512, DType::bf16, DType::bf16);
  p.resolve();
  int warp = 0;
  for (const sm90::Config& c : sm90::enumerate_configs(sm90::Analysis(resolve(p)), dev)) {
    sm90::Config wg = c;
    wg.epi_warp = false;  // the warpgroup form's strips at its deepest ring decide
    wg.stages = sm90::max_stages(wg, sm90::view_of(sm90::kBF16), dev);
    if (c.epi_warp) EXPECT_EQ(sm90::plan(c, 0).epi_rows, 16) << c.str();  // a stage fewer where 16-row pieces need it
    EXPECT_EQ(c.epi_warp,
              c.pingpong && (sm90::plan(wg, sm90::kBF16).epi_bufs == 1 || sm90::plan(wg, sm90::kBF16).epi_strip_bytes == 64))
        << c.str();
    if (c.pingpong && c.bm == 128 && (c.bn == 176 || c.bn == 160)) EXPECT_TRUE(c.epi_warp) << c.str();
    if (c.bn == 192 || c.bn == 128) EXPECT_FALSE(c.epi_warp) << c.str();
    warp += c.epi_warp;
  }
  EXPECT_GT(warp, 0);
  Problem g = Problem::make(2048, 4096, 512, DType::bf16, DType::bf16);
  g.epilogue = parse_epilogue("silu_glu");
  g.resolve();
  EXPECT_NE(sm90::config_reason(sm90::Config::parse("tile=128x128x64,stages=6,cluster=1x1,sched=pingpong,raster=m,"
                                                    "group=8,epi=warp"),
                                sm90::Analysis(resolve(g)), dev)
                .find("epi=warp"),
            std::string::npos);
  for (const sm90::Config& c : sm90::enumerate_configs(sm90::Analysis(resolve(g)), dev))
    EXPECT_FALSE(c.epi_warp) << c.str();

  auto be = make_sm90_backend();
  Problem plain = Problem::make(1920, 2000, 200, DType::bf16, DType::bf16);
  plain.resolve();
  Problem f32c = Problem::make(304, 520, 1000, DType::f16, DType::f32, Layout::col, Layout::row, 3);
  f32c.beta = 0.5f;
  f32c.resolve();
  int compiled = 0;
  for (const char* cfg : {"tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=8,epi=warp",
                          "tile=128x168x64,stages=5,cluster=1x2,sched=pingpong,raster=n,group=8,tiles=gpc,epi=warp",
                          "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=4,epi=warp",
                          "tile=128x144x64,stages=5,cluster=1x1,sched=pingpong,raster=m,group=8,tiles=dynamic,epi=warp",
                          "tile=128x144x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=8,epi=warp",
                          "tile=64x16x64,stages=7,cluster=1x1,sched=pingpong,raster=m,group=8,epi=warp",
                          "tile=128x256x64,stages=4,cluster=1x2,sched=coop,raster=m,group=8,epi=warp",
                          "tile=128x240x64,stages=4,cluster=1x1,sched=coop,raster=m,group=8,epi=warp",
                          "tile=128x192x64,stages=4,cluster=2x1,sched=pingpong,raster=n,group=8,tail=sk,epi=warp"})
    for (const Problem* q : {&plain, &f32c}) {
      const Candidate cand{"sm90", cfg};
      if (!be->validate(resolve(*q), cand, dev).empty()) continue;
      const CompileResult r = be->compile(resolve(*q), cand, dev);
      EXPECT_TRUE(r.compiled) << cfg << " for " << q->str();
      // The 192-accumulator tiles spill with f32 D and C; the pipeline skips those compiles.
      if (r.spill_bytes > 0) std::printf("  spills %d bytes: %s for %s\n", r.spill_bytes, cfg, q->str().c_str());
      compiled += r.spill_bytes == 0;
    }
  EXPECT_GE(compiled, 10);
}

TEST(Sm90Config, RowsOffTheLines) {
  // Where rows start against the L2's 128-byte lines and 32-byte sectors: base, pitch and (with batches) the batch
  // stride all count.
  EXPECT_EQ(sm90::row_grid_class(0, 2048, 1, 0), 0);
  EXPECT_EQ(sm90::row_grid_class(0, 2000, 1, 0), 2);  // K = 1000 16-bit elements
  EXPECT_EQ(sm90::row_grid_class(0, 2016, 1, 0), 1);  // on sectors, off lines
  EXPECT_EQ(sm90::row_grid_class(256, 2048, 1, 0), 0);
  EXPECT_EQ(sm90::row_grid_class(64, 2048, 1, 0), 1);   // a base 64 bytes into a line
  EXPECT_EQ(sm90::row_grid_class(0, 2048, 1, 1000), 0);  // one batch: the stride is never used
  EXPECT_EQ(sm90::row_grid_class(0, 2048, 4, 2048 * 100 + 16), 2);
  EXPECT_EQ(sm90::row_grid_class(0, 2048, 4, 0), 0);  // broadcast
  EXPECT_EQ(sm90::l2_promotion(0), CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
  EXPECT_EQ(sm90::l2_promotion(1), CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
  EXPECT_EQ(sm90::l2_promotion(2), CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
  // The ranking charges rows off the lines, the tiles that read the most operand bytes per MMA clock the most:
  // the same 4096x4096x1000 problem with rows 2000 bytes apart against rows padded to 2048.
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  Problem off = Problem::make(4096, 4096, 1000, DType::bf16, DType::bf16);
  Problem on = off;
  on.a.ld = on.b.ld = 1024;
  off.resolve();
  on.resolve();
  ASSERT_EQ(off.a.ld, 1000);
  const sm90::Config pp = sm90::Config::parse("tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=6");
  const sm90::Config coop = sm90::Config::parse("tile=256x128x64,stages=4,cluster=1x2,sched=coop,raster=m,group=8");
  const double pp_ratio = sm90::estimate_cost(pp, sm90::Analysis(resolve(off)), dev) /
                          sm90::estimate_cost(pp, sm90::Analysis(resolve(on)), dev);
  const double coop_ratio = sm90::estimate_cost(coop, sm90::Analysis(resolve(off)), dev) /
                            sm90::estimate_cost(coop, sm90::Analysis(resolve(on)), dev);
  EXPECT_GT(coop_ratio, 1.03);
  EXPECT_GT(pp_ratio, coop_ratio + 0.1);
  // Rows on sectors but off lines (2016 bytes) cost less than rows off sectors.
  Problem half = on;
  half.a.ld = half.b.ld = 1008;
  EXPECT_LT(sm90::estimate_cost(pp, sm90::Analysis(resolve(half)), dev),
            sm90::estimate_cost(pp, sm90::Analysis(resolve(off)), dev));
  EXPECT_GT(sm90::estimate_cost(pp, sm90::Analysis(resolve(half)), dev),
            sm90::estimate_cost(pp, sm90::Analysis(resolve(on)), dev));
}

// The default top 8 holds the candidates measured fastest when every candidate was timed (H200, docs/PERFORMANCE.md,
// ranking): at short K the five-strip ping-pong 128x160 (ranked 17th-49th while the model charged ping-pong strips), with
// rows 2000 bytes apart ping-pong 128x192 2x1 (the 128-row ping-pong tiles ranked above it lost 8-30% there).
TEST(Sm90Enumerate, TopEightHoldsTheMeasuredBest) {
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  auto top8_has = [&](int64_t m, int64_t n, int64_t k, const std::string& cfg) {
    Problem p = Problem::make(m, n, k, DType::bf16, DType::bf16);
    p.resolve();
    const auto all = sm90::enumerate_configs(sm90::Analysis(resolve(p)), dev);
    const sm90::Config want = sm90::Config::parse(cfg);
    const auto it = std::find(all.begin(), all.end(), want);
    return it != all.end() && it - all.begin() < 8;
  };
  // (128x160 stores per warp, epi=warp: measured faster than its warpgroup form at these shapes.)
  EXPECT_TRUE(
      top8_has(4096, 8192, 512, "tile=128x160x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=10,epi=warp"));
  EXPECT_TRUE(
      top8_has(4096, 14336, 1024, "tile=128x160x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=10,epi=warp"));
  EXPECT_TRUE(top8_has(6000, 6000, 1000, "tile=128x192x64,stages=4,cluster=2x1,sched=pingpong,raster=m,group=7"));
  EXPECT_TRUE(top8_has(4096, 4096, 1000, "tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8"));
}

// Tile N = 8 (mod 16): 168 splits 16-bit D rows into three unswizzled 112-byte strips; on two CTAs along M its B parts
// are rounded up to whole 8-row atoms; N whose rows split into narrower strips are refused.
TEST(Sm90Config, TileN168) {
  EXPECT_EQ(sm90::epi_narrow_bytes(168, sm90::kBF16), 112);
  EXPECT_EQ(sm90::epi_narrow_bytes(200, sm90::kF16), 80);
  EXPECT_EQ(sm90::epi_narrow_bytes(216, sm90::kBF16), 48);
  EXPECT_EQ(sm90::epi_narrow_bytes(136, sm90::kBF16), 16);
  EXPECT_EQ(sm90::epi_narrow_bytes(168, sm90::kF32), 32);   // 672-byte rows: 32-byte swizzled strips
  EXPECT_EQ(sm90::epi_narrow_bytes(176, sm90::kBF16), 32);
  EXPECT_EQ(sm90::epi_narrow_bytes(192, sm90::kBF16), 128);
  EXPECT_EQ(sm90::epi_swizzle(112), CU_TENSOR_MAP_SWIZZLE_NONE);
  EXPECT_EQ(sm90::epi_swizzle(64), CU_TENSOR_MAP_SWIZZLE_64B);
  auto be = make_sm90_backend();
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  Problem q = Problem::make(8192, 28672, 4096, DType::bf16, DType::bf16);
  q.resolve();
  EXPECT_EQ(
      be->validate(resolve(q), {"sm90", "tile=128x168x64,stages=5,cluster=1x2,sched=pingpong,raster=m,group=8"}, dev),
      "");
  EXPECT_EQ(be->validate(resolve(q), {"sm90", "tile=256x168x64,stages=3,cluster=1x1,sched=coop,raster=m,group=8"}, dev),
            "");
  // On two CTAs along M, B's parts are rounded up to 88 rows: 176 rows of B per stage.
  EXPECT_EQ(
      be->validate(resolve(q), {"sm90", "tile=128x168x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=8"}, dev),
      "");
  sm90::Config c2 = sm90::Config::parse("tile=128x168x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=8");
  sm90::Config c1 = c2;
  c1.cm = 1;
  EXPECT_EQ(sm90::plan(c2, sm90::kBF16).smem_bytes - sm90::plan(c1, sm90::kBF16).smem_bytes, 5 * 8 * 128);
  const std::string r3 =
      be->validate(resolve(q), {"sm90", "tile=128x136x64,stages=5,cluster=1x1,sched=pingpong,raster=m,group=8"}, dev);
  EXPECT_NE(r3.find("16-byte epilogue strips"), std::string::npos) << r3;
  const std::string r4 =
      be->validate(resolve(q), {"sm90", "tile=128x216x64,stages=4,cluster=1x1,sched=coop,raster=m,group=8"}, dev);
  EXPECT_NE(r4.find("48-byte epilogue strips"), std::string::npos) << r4;
  EXPECT_NE(
      be->validate(resolve(q), {"sm90", "tile=128x164x64,stages=5,cluster=1x1,sched=pingpong,raster=m,group=8"}, dev)
          .find("multiple of 8"),
      std::string::npos);
  Problem g = q;
  g.epilogue = parse_epilogue("silu_glu");
  EXPECT_NE(be->validate(resolve(g), {"sm90", "tile=128x168x64,stages=5,cluster=1x1,sched=coop,raster=m,group=8"}, dev),
            "");
  int n168 = 0, n168_2x1 = 0;
  for (const sm90::Config& c : sm90::enumerate_configs(sm90::Analysis(resolve(q)), dev)) {
    if (c.bn % 16 == 0) continue;
    EXPECT_EQ(c.bn, 168) << c.str();
    ++n168;
    n168_2x1 += c.cm == 2;
  }
  EXPECT_GE(n168, 8);
  EXPECT_GE(n168_2x1, 3);
}

// The plan is one constexpr derivation from the spec: GemmConfig (NVRTC) and the host read the same numbers.
TEST(Sm90Config, PlanDerivedOnce) {
  constexpr gt_sm90::Spec s{.bm = 128, .bn = 176, .stages = 5, .cm = 2, .cn = 1, .pingpong = true};
  constexpr gt_sm90::Plan pl = gt_sm90::derive(s);
  static_assert(pl.smem_bytes <= gt_sm90::kSmemPerBlock, "the plan is a constant expression");
  EXPECT_EQ(pl.acc_regs, 176);
  EXPECT_EQ(pl.epi_bytes, 176);  // one wide unswizzled strip per buffer, one buffer
  EXPECT_EQ(pl.epi_bufs, 1);
  EXPECT_EQ(pl.b_box_rows, 88);  // tile N 176 split over 2 CTAs along M
  const sm90::Config c = sm90::Config::parse("tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=8");
  EXPECT_EQ(sm90::plan(c, sm90::kBF16).smem_bytes, pl.smem_bytes);
  const std::string lit = sm90::spec_literal(s);
  EXPECT_EQ(lit.rfind("gt_sm90::Spec{.bm = 128, .bn = 176, .stages = 5, .cm = 2, .cn = 1,", 0), 0u) << lit;
  EXPECT_NE(lit.find(".pingpong = true"), std::string::npos) << lit;
}

// The JIT unit's literal carries every field of the spec the host derived its plan from: a field left out compiles a
// kernel of another plan than the host launches (a cp.async-loaded B beside a TMA-loaded A lost its cp_b and the
// kernel issued TMA loads through a map the host never encoded: an illegal instruction on the GPU).
TEST(Sm90Config, LiteralCarriesEveryFieldSet) {
  struct Case {
    gt_sm90::Spec s;
    const char* text;
  };
  const Case cases[] = {
      {{.cp_b = 8}, ".cp_a = 0, .cp_b = 8"},
      {{.cp_a = 4}, ".cp_a = 4, .cp_b = 0"},
      {{.cp_a = 16, .cp_b = 4}, ".cp_a = 16, .cp_b = 4"},
      {{.a_mn = true}, ".a_mn = true"},
      {{.b_mn = true}, ".b_mn = true"},
      {{.has_c = true}, ".has_c = true"},
      {{.dynamic = true}, ".dynamic = true"},
      {{.sk = true}, ".sk = true"},
      {{.epi_warp = true}, ".epi_warp = true"},
      {{.in_b = 4}, ".in_b = 4"},
      {{.scale = gt_sm90::kScaleBlock, .promote = true}, ".scale = 3, .promote = true"},
      {{.grouped = 2}, ".grouped = 2"},
  };
  for (const Case& c : cases) {
    const std::string lit = sm90::spec_literal(c.s);
    EXPECT_NE(lit.find(c.text), std::string::npos) << lit;
  }
  EXPECT_EQ(sm90::spec_literal(gt_sm90::Spec{}).find(".cp_a"), std::string::npos) << "TMA loads print no cp fields";
}

// Register pressure is a ranking prior, not a validity rule: with f32 D, tiles over 128 accumulators are valid and
// listed after every other config, so the tuner's top k is unchanged by them.
TEST(Sm90Enumerate, SpillPriorListedLast) {
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  Problem p = Problem::make(4096, 4096, 4096, DType::bf16, DType::f32);
  p.resolve();
  bool late = false;
  for (const sm90::Config& c : sm90::enumerate_configs(sm90::Analysis(resolve(p)), dev)) {
    if (sm90::plan(c, sm90::kF32).acc_regs > 128)
      late = true;
    else
      EXPECT_FALSE(late) << c.str() << " after a config of the spill prior";
  }
  EXPECT_TRUE(late);
  EXPECT_EQ(sm90::config_reason(sm90::Config::parse("tile=128x192x64,stages=4,cluster=2x1,sched=pingpong,raster=m,"
                                                    "group=8"),
                                sm90::Analysis(resolve(p)), dev),
            "");
}

TEST(Sm90Enumerate, BestFirstAndValid) {
  auto be = make_sm90_backend();
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  Problem p = Problem::make(8192, 8192, 8192, DType::bf16, DType::bf16);
  p.resolve();
  const auto cands = be->enumerate(resolve(p), dev);
  ASSERT_FALSE(cands.empty());
  std::set<std::string> seen;
  for (const auto& c : cands) {
    EXPECT_EQ(be->validate(resolve(p), c, dev), "") << c.str();
    EXPECT_TRUE(seen.insert(c.config).second) << "duplicate " << c.str();
  }
  std::printf("8192^3 bf16: %zu candidates, first %s\n", cands.size(), cands.front().str().c_str());
}

struct Layouts {
  DType in, out;
  Layout a, b, d;
};

void compile_all(const Layouts& l, int64_t m, int64_t n, int64_t k, bool beta, const char* chain = "none",
                 bool whole_list = false, bool pad_ld = false, const char* only = nullptr) {
  auto be = make_sm90_backend();
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  Problem p = Problem::make(m, n, k, l.in, l.out, l.a, l.b);
  p.d.layout = l.d;
  p.c.layout = l.d;
  p.c.dtype = l.out;
  p.c.ld = p.d.ld = 0;  // packed for their layout
  if (beta) p.beta = 0.5f;
  p.epilogue = parse_epilogue(chain);
  p.resolve();
  if (pad_ld) {  // ragged shapes keep TMA-legal (16-byte) leading dimensions, as callers' padded tensors do
    for (Operand* o : {&p.a, &p.b, &p.c, &p.d}) o->ld = (o->ld + 7) / 8 * 8, o->batch_stride = -1;
    p.resolve();
  }
  auto cands = be->enumerate(resolve(p), dev);
  if (only)  // the configs holding this text
    cands.erase(std::remove_if(cands.begin(), cands.end(),
                               [&](const Candidate& c) { return c.config.find(only) == std::string::npos; }),
                cands.end());
  ASSERT_FALSE(cands.empty()) << p.str();
  const char* all = std::getenv("GEMMTUNE_SM90_COMPILE_ALL");
  if (!whole_list && !(all && *all && std::string(all) != "0")) {
    // Subset: the top 4 plus the best of each (sched, cluster) family.
    std::vector<Candidate> sub(cands.begin(), cands.begin() + std::min<size_t>(4, cands.size()));
    std::set<std::string> fam;
    for (const auto& c : cands) {
      const auto cfg = sm90::Config::parse(c.config);
      const std::string f = std::to_string(cfg.pingpong) + std::to_string(cfg.cm) + std::to_string(cfg.cn);
      if (fam.insert(f).second && std::find(sub.begin(), sub.end(), c) == sub.end()) sub.push_back(c);
    }
    cands = sub;
  }
  // Compiled on every core (as the tuner does); results checked on this thread.
  const auto [res, err] = test::compile_each(*be, p, cands, dev);
  // Spills are not ruled out up front (the pipeline rejects a spilling compile and takes the next candidate), so
  // every config must compile and the list must hold configs that compile clean: the best one among them at least.
  std::vector<double> ms;
  size_t clean = 0;
  for (size_t i = 0; i < cands.size(); ++i) {
    const Candidate& c = cands[i];
    const CompileResult& r = res[i];
    ASSERT_EQ(err[i], "") << c.str() << " for " << p.str();
    EXPECT_TRUE(r.compiled);
    EXPECT_GT(r.registers, 0) << c.str();
    if (r.spill_bytes == 0) ++clean;
    if (r.spill_bytes > 0) std::printf("  spills %d bytes: %s\n", r.spill_bytes, c.str().c_str());
    if (!r.cache_hit) ms.push_back(r.compile_ms);
  }
  EXPECT_GT(clean, 0u) << p.str();
  std::sort(ms.begin(), ms.end());
  std::printf("%s: %zu candidates compiled (%zu without spills), median %.0f ms (uncached %zu)\n", p.str().c_str(),
              cands.size(), clean, ms.empty() ? 0.0 : ms[ms.size() / 2], ms.size());
}

// Every config the enumerator emits for a 4096^3 bf16 problem compiles.
TEST(Sm90Compile, Bf16TN_WholeList) { compile_all({DType::bf16, DType::bf16, Layout::row, Layout::col, Layout::row}, 4096, 4096, 4096, false, "none", true); }
TEST(Sm90Compile, F16NN_F32Out) { compile_all({DType::f16, DType::f32, Layout::col, Layout::row, Layout::row}, 4096, 4096, 4096, false); }
TEST(Sm90Compile, Bf16NT_ColD_Beta) { compile_all({DType::bf16, DType::f16, Layout::col, Layout::row, Layout::col}, 2048, 1024, 512, true); }
// Ragged N (D rows not a multiple of 16 bytes: the epilogue's edge copy), with and without C: every emitted config
// compiles (the edge copy needs registers of its own: the larger tiles spill here, and the pipeline skips them).
TEST(Sm90Compile, RaggedN_ColC_Beta_WholeList) { compile_all({DType::f16, DType::f16, Layout::col, Layout::row, Layout::col}, 17, 33, 65, true, "none", true, true); }
TEST(Sm90Compile, RaggedN_RowC_Beta_WholeList) { compile_all({DType::f16, DType::f16, Layout::col, Layout::row, Layout::row}, 17, 33, 65, true, "none", true, true); }
// Decode shapes: the split twins (tail=sk on fewer tiles than clusters, from 128 k-blocks) appear in no list above.
TEST(Sm90Compile, Decode_SplitTwins) {
  compile_all({DType::bf16, DType::bf16, Layout::row, Layout::col, Layout::row}, 16, 4096, 14336, false, "none", true,
              false, "tail=sk");
  compile_all({DType::f16, DType::f32, Layout::row, Layout::col, Layout::row}, 37, 1000, 9000, true, "none", true,
              true, "tail=sk");
}
// And their swap=1 configs (tile N 16-48, rings of up to 16 stages, the transposed store), with C and f32 D too.
TEST(Sm90Compile, Decode_Swap) {
  compile_all({DType::bf16, DType::bf16, Layout::row, Layout::col, Layout::row}, 16, 4096, 14336, false, "none", true,
              false, "swap=1");
  compile_all({DType::f16, DType::f32, Layout::row, Layout::col, Layout::row}, 37, 1000, 9000, true, "none", true,
              true, "swap=1");
  compile_all({DType::bf16, DType::bf16, Layout::row, Layout::col, Layout::row}, 5, 333, 77, false, "none", true,
              true, "swap=1");
  compile_all({DType::bf16, DType::bf16, Layout::row, Layout::col, Layout::row}, 16, 4096, 14336, false,
              "bias,residual", true, false, "swap=1");
  compile_all({DType::bf16, DType::f32, Layout::row, Layout::col, Layout::row}, 7, 1000, 3000, true,
              "row_scale,col_scale,gelu_erf,residual:f32", true, true, "swap=1");
}
// The same tiles without swap where the few rows are the kernel's N already (a col-major D): the TMA epilogue's
// 32- / 64- / 96-byte rows, deep rings.
TEST(Sm90Compile, Decode_ColD) {
  for (int64_t m : {16, 32, 48})
    compile_all({DType::bf16, DType::bf16, Layout::row, Layout::col, Layout::col}, m, 4096, 14336, false, "none", true,
                false, "x64,stages=1");
  compile_all({DType::f16, DType::f32, Layout::row, Layout::col, Layout::col}, 16, 1000, 9000, true, "none", true,
              true, "x64,stages=1");
}
TEST(Sm90Compile, RaggedM_ColD_WholeList) { compile_all({DType::bf16, DType::bf16, Layout::row, Layout::row, Layout::col}, 1, 1, 1, false, "none", true, true); }
// Explicit configs of the GPU tile-order matrix (tests/gpu/test_sm90_gemm.cpp ManyTilesPerCta) and neighbours, on
// that matrix's heaviest epilogue: an element-wise C, alpha != 1, MN-major A and B. Stage counts below the
// enumerator's own are not in the whole lists above; the GPU test runs these, so they must compile clean.
TEST(Sm90Compile, GpuMatrixConfigs_RowC_Alpha) {
  auto be = make_sm90_backend();
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  Problem p = Problem::make(1920, 2000, 200, DType::bf16, DType::bf16, Layout::col, Layout::row, 2);
  p.c = p.d;
  p.alpha = 0.75f;
  p.beta = -1.25f;
  p.resolve();
  const std::vector<std::string> configs = {
      "tile=128x128x64,stages=5,cluster=1x1,sched=pingpong,raster=m,group=8",
      "tile=128x128x64,stages=5,cluster=1x2,sched=pingpong,raster=n,group=8",
      "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8",
      "tile=64x256x64,stages=4,cluster=1x1,sched=pingpong,raster=n,group=8",
      "tile=64x128x64,stages=7,cluster=1x1,sched=pingpong,raster=m,group=4",
      "tile=256x128x64,stages=4,cluster=1x2,sched=coop,raster=n,group=8",
      "tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8",
  };
  std::vector<CompileResult> res(configs.size());
  std::vector<std::string> err(configs.size());
  jit::parallel_for(configs.size(), 0, [&](size_t i) {
    const Candidate c{"sm90", configs[i]};
    try {
      err[i] = be->validate(resolve(p), c, dev);
      if (err[i].empty()) res[i] = be->compile(resolve(p), c, dev);
    } catch (const std::exception& e) {
      err[i] = e.what();
    }
  });
  for (size_t i = 0; i < configs.size(); ++i) {
    ASSERT_EQ(err[i], "") << configs[i] << " for " << p.str();
    EXPECT_EQ(res[i].spill_bytes, 0) << configs[i] << " for " << p.str() << "\n" << res[i].log;
  }
}

// Fused epilogue chains: the configs the enumerator emits with a chain compile, the best of them clean.
TEST(Sm90Compile, Bf16TN_BiasGelu) { compile_all({DType::bf16, DType::bf16, Layout::row, Layout::col, Layout::row}, 4096, 4096, 4096, false, "bias,gelu_tanh"); }
TEST(Sm90Compile, Bf16TN_SwiGluHalves) { compile_all({DType::bf16, DType::bf16, Layout::row, Layout::col, Layout::row}, 4096, 8192, 4096, false, "silu_glu"); }
TEST(Sm90Compile, Bf16NT_ColD_BiasResidual_Beta) { compile_all({DType::bf16, DType::f32, Layout::col, Layout::row, Layout::col}, 2048, 1024, 512, true, "bias,residual"); }


// load=cp: both schedules, K-major and MN-major A and B, 4/8-byte pieces and one operand by TMA, with C and with
// fused chains compile without spills (the producer warpgroup keeps its 40 registers with 128 threads loading).
TEST(Sm90Compile, LoadCp_Forms) {
  auto be = make_sm90_backend();
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  struct Form {
    Layout a, b;
    int64_t k, lda_extra, ldb_extra;
    bool beta;
    const char* chain;
  };
  const std::vector<Form> forms = {
      {Layout::row, Layout::col, 4100, 0, 0, false, "none"},            // 8-byte A and B
      {Layout::row, Layout::col, 4098, 0, 0, true, "none"},             // 4-byte, C
      {Layout::col, Layout::row, 1000, 2, 4, false, "none"},            // MN-major: 4-byte A, 8-byte B
      {Layout::col, Layout::col, 1000, 2, 2, false, "bias,gelu_tanh"},  // 4-byte A and B, a chain
      {Layout::row, Layout::row, 1000, 4, 6, true, "bias,residual"},    // 8-byte A, 4-byte B, C and a residual
      {Layout::row, Layout::col, 4100, 0, 0, false, "silu_glu"},        // GLU halves from B's two places
      {Layout::row, Layout::col, 4096, 2, 0, false, "silu_glu"},        // 4-byte A, B's halves by TMA
      {Layout::col, Layout::row, 4096, 2, 2, false, "none"},            // 4-byte M-major A and N-major B
  };
  // Both schedules; with C or a chain the tiles of at most 64 accumulators (larger ones spill in the TMA form too
  // there: kSpillPrior).
  const std::vector<std::string> wide = {
      "tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=m,group=8,load=cp",
      "tile=128x128x64,stages=5,cluster=1x1,sched=pingpong,raster=m,group=8,load=cp",
  };
  const std::vector<std::string> narrow = {
      "tile=128x128x64,stages=5,cluster=1x1,sched=coop,raster=m,group=8,load=cp",
      "tile=64x128x64,stages=6,cluster=1x1,sched=pingpong,raster=m,group=8,load=cp",
  };
  struct Job {
    Problem p;
    std::string cfg, err;
    CompileResult r;
  };
  std::vector<Job> jobs;
  for (const Form& f : forms)
    for (const std::string& cfg : (f.beta || std::string(f.chain) != "none" ? narrow : wide)) {
      Problem p = Problem::make(1024, 1024, f.k, DType::bf16, DType::bf16, f.a, f.b);
      if (f.beta) p.beta = 0.5f;
      p.epilogue = parse_epilogue(f.chain);
      p.a.ld = (f.a == Layout::row ? f.k : 1024) + f.lda_extra;
      p.b.ld = (f.b == Layout::row ? 1024 : f.k) + f.ldb_extra;
      p.resolve();
      jobs.push_back({p, cfg, "", {}});
    }
  // A sliced A (8-byte aligned pointer) beside a TMA B, with a stream-K tail.
  Problem al = Problem::make(512, 512, 2048, DType::bf16, DType::bf16);
  al.a.align = 8;
  al.resolve();
  jobs.push_back({al, "tile=128x128x64,stages=5,cluster=1x1,sched=coop,raster=m,group=8,tail=sk,load=cp", "", {}});
  jit::parallel_for(jobs.size(), 0, [&](size_t i) {
    const Candidate c{"sm90", jobs[i].cfg};
    try {
      jobs[i].err = be->validate(resolve(jobs[i].p), c, dev);
      if (jobs[i].err.empty()) jobs[i].r = be->compile(resolve(jobs[i].p), c, dev);
    } catch (const std::exception& e) {
      jobs[i].err = e.what();
    }
  });
  for (const Job& j : jobs) {
    ASSERT_EQ(j.err, "") << j.cfg << " for " << j.p.str();
    EXPECT_TRUE(j.r.compiled);
    EXPECT_EQ(j.r.spill_bytes, 0) << j.cfg << " for " << j.p.str() << " ("
                                  << sm90::load_path(j.p, sm90::kernel_view(resolve(j.p))) << ")\n"
                                  << j.r.log;
  }
}

}  // namespace
}  // namespace gemmtune
