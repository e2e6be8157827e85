// sm90 backend on the GPU: many shapes (ragged, tiny), every A/B/D layout, bf16/f16 in, bf16/f16/f32 out, batch > 1,
// beta != 0, several configs per schedule and cluster shape. Fresh random inputs, D poisoned with NaN (padding
// included: writes outside M x N fail too), normalized error vs a double CPU reference, fail above 1e-2.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "backends/sm90/sm90_backend.h"
#include "backends/sm90/sm90_cluster_order.h"
#include "cuda/memory.h"
#include "gemmtune/device.h"
#include "gemmtune/errors.h"
#include "gpu_jobs.h"
#include "gpu_test_util.h"

namespace gemmtune {
namespace {

using test::load_elem;

struct Case {
  int64_t m, n, k, batch;
  DType in, out;
  Layout a, b, d;
  bool beta;
};

int64_t pad8(int64_t x, int64_t extra) { return (x + 7) / 8 * 8 + extra; }

// alpha 0.75, or 1 (the kernels specialise alpha == 1 at compile time) with `alpha_one`.
Problem make_problem(const Case& c, int64_t extra, bool alpha_one = false) {
  Problem p = Problem::make(c.m, c.n, c.k, c.in, c.out, c.a, c.b, c.batch);
  p.d.layout = c.d;
  p.c = p.d;
  p.alpha = alpha_one ? 1.0f : 0.75f;
  p.beta = c.beta ? -1.25f : 0.0f;
  // TMA needs 16-byte row pitches: pad every leading dimension to a multiple of 8 elements (+ extra).
  p.a.ld = pad8(c.a == Layout::row ? c.k : c.m, extra);
  p.b.ld = pad8(c.b == Layout::row ? c.n : c.k, extra);
  p.d.ld = pad8(c.d == Layout::row ? c.n : c.m, extra);
  p.c.ld = p.d.ld;
  for (Operand* o : {&p.a, &p.b, &p.c, &p.d}) o->batch_stride = -1;
  p.resolve();
  for (Operand* o : {&p.a, &p.b, &p.c, &p.d}) o->batch_stride += c.batch > 1 ? 8 * extra : 0;
  return p;
}

// Runs one (problem, config) `launches` times, D poisoned again before each launch, alternating two streams (the
// dynamic tile order keeps a counter pair per stream that each launch must leave at zero); returns "" or a failure
// description of the last launch's D.
std::string run_one(const Problem& p, const std::string& config, std::mt19937_64& rng, int launches = 1) {
  auto be = make_sm90_backend();
  const DeviceInfo& dev = current_device();
  const Candidate cand{"sm90", config};
  if (std::string r = be->validate(resolve(p), cand, dev); !r.empty()) return "SKIP " + r;
  const CompileResult cr = be->compile(resolve(p), cand, dev);
  if (cr.spill_bytes > 0) return test::spill_skip(cr);
  auto exe = be->load(resolve(p), cand, cr);
  auto ha = test::random_operand(p, Which::A, rng), hb = test::random_operand(p, Which::B, rng);
  std::vector<uint8_t> hc;
  if (p.beta != 0.0f) hc = test::random_operand(p, Which::C, rng);
  auto hd = test::poisoned_operand(p, Which::D);
  cuda::DeviceBuffer da(ha.size()), db(hb.size()), dd(hd.size()), dc(hc.size());
  da.upload(ha.data(), ha.size());
  db.upload(hb.data(), hb.size());
  if (!hc.empty()) dc.upload(hc.data(), hc.size());
  cuda::StreamOwner s[2];
  for (int i = 0; i < launches; ++i) {
    dd.upload(hd.data(), hd.size());
    exe->launch({da.get(), db.get(), hc.empty() ? nullptr : dc.get(), dd.get()}, s[(i / 2) % 2].get());
    s[(i / 2) % 2].sync();
  }
  dd.download(hd.data(), hd.size());
  const auto ref = test::reference_d(p, ha, hb, hc);
  double num = 0, den = 0;
  int64_t nan = 0, outside = 0;
  std::vector<char> inside(hd.size() / dtype_size(p.d.dtype), 0);
  for (int64_t bi = 0; bi < p.batch; ++bi)
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        const int64_t off = test::elem_offset(p.d, bi, i, j);
        inside[off] = 1;
        const double o = load_elem(p.d.dtype, hd.data(), off), r = ref[(bi * p.m + i) * p.n + j];
        if (std::isnan(o)) ++nan;
        num += (o - r) * (o - r);
        den += r * r;
      }
  for (size_t i = 0; i < inside.size(); ++i)
    if (!inside[i] && !std::isnan(load_elem(p.d.dtype, hd.data(), i))) ++outside;
  const double err = std::sqrt(num / (den > 0 ? den : 1.0));
  if (nan || outside || !(err < 1e-2))
    return "err=" + std::to_string(err) + " nan=" + std::to_string(nan) + " writes-outside=" + std::to_string(outside);
  return "";
}

// Runs every (config, shape) pair, the problem built by `problem_of(v, shape)` from a running index v (which rotates
// layouts, dtypes and beta); prints the pairs the config cannot run; returns how many ran.
template <class ProblemOf>
int run_matrix(const std::vector<const char*>& configs, const std::vector<std::array<int64_t, 4>>& shapes,
               ProblemOf problem_of, int launches = 1) {
  std::mt19937_64 rng(std::random_device{}());
  int ran = 0, v = 0;
  for (const char* cfg : configs)
    for (const auto& sh : shapes) {
      const Problem p = problem_of(v++, sh);
      const std::string r = run_one(p, cfg, rng, launches);
      if (r.rfind("SKIP", 0) == 0) {
        std::printf("skip %s | %s: %s\n", p.str().c_str(), cfg, r.c_str());
        continue;
      }
      ++ran;
      EXPECT_EQ(r, "") << "sm90:" << cfg << " on " << p.str();
    }
  return ran;
}

// The problem of run v on shape sh for the tile-order tests: input and output dtypes, the three layouts, beta and
// alpha == 1 rotate with v; leading dimensions padded to 16 bytes only.
Problem rotating_problem(int v, const std::array<int64_t, 4>& sh) {
  const Layout L[2] = {Layout::row, Layout::col};
  const Case c{sh[0], sh[1], sh[2], sh[3], (v % 2) ? DType::f16 : DType::bf16, (v % 3) == 2 ? DType::f32 : DType::bf16,
               L[v % 2], L[(v / 2) % 2], L[(v / 4) % 2], (v % 4) == 1};
  return make_problem(c, 0, (v % 5) == 2);
}

const std::vector<const char*> kConfigs = {
    "tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=m,group=8",
    "tile=128x128x64,stages=5,cluster=1x1,sched=coop,raster=n,group=4",
    "tile=256x128x64,stages=4,cluster=1x1,sched=coop,raster=m,group=8",
    "tile=128x192x64,stages=4,cluster=1x1,sched=coop,raster=m,group=8",
    "tile=128x208x64,stages=4,cluster=1x1,sched=coop,raster=m,group=8",
    "tile=128x96x64,stages=6,cluster=1x1,sched=coop,raster=n,group=8",
    "tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8",
    "tile=128x256x64,stages=4,cluster=1x2,sched=coop,raster=n,group=8",
    "tile=128x128x64,stages=5,cluster=1x1,sched=pingpong,raster=m,group=8",
    "tile=64x256x64,stages=4,cluster=1x1,sched=pingpong,raster=m,group=8",
    "tile=128x192x64,stages=4,cluster=2x1,sched=pingpong,raster=m,group=8",
    "tile=128x128x64,stages=5,cluster=1x2,sched=pingpong,raster=n,group=8",
    // 2x2 clusters (A and B both multicast), 192 accumulators in the cooperative schedule, 32-byte epilogue strips.
    "tile=128x256x64,stages=4,cluster=2x2,sched=coop,raster=m,group=8",
    "tile=64x128x64,stages=7,cluster=2x2,sched=pingpong,raster=n,group=4",
    "tile=256x192x64,stages=3,cluster=1x1,sched=coop,raster=m,group=8",
    "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=7",
    "tile=128x240x64,stages=4,cluster=1x2,sched=coop,raster=n,group=4",
    "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=7,tiles=dynamic",
    "tile=128x256x64,stages=4,cluster=1x2,sched=coop,raster=n,group=4,tiles=dynamic",
    // Tile N = 168: unswizzled 112-byte epilogue strips (32-byte swizzled ones with f32 D); on 2 CTAs along M, B in
    // two 88-row parts (8 rows of padding).
    "tile=128x168x64,stages=5,cluster=1x2,sched=pingpong,raster=m,group=8",
    "tile=128x168x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8",
    "tile=256x168x64,stages=3,cluster=2x1,sched=coop,raster=m,group=4",
    "tile=128x168x64,stages=5,cluster=1x1,sched=coop,raster=m,group=8",
    "tile=256x168x64,stages=3,cluster=1x1,sched=coop,raster=n,group=4",
    "tile=64x168x64,stages=6,cluster=1x2,sched=pingpong,raster=n,group=4",
};

TEST(Sm90Gpu, ShapesLayoutsDtypesConfigs) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  if (current_device().cc_major != 9) GTEST_SKIP() << "not Hopper";
  const Layout L[2] = {Layout::row, Layout::col};
  const DType outs[3] = {DType::bf16, DType::f16, DType::f32};
  const int ran = run_matrix(
      kConfigs,
      {{1, 1, 1, 1}, {17, 33, 65, 1}, {127, 255, 129, 1}, {256, 512, 192, 1}, {300, 520, 1000, 3}, {64, 64, 64, 2}},
      [&](int v, const std::array<int64_t, 4>& sh) {
        // Rotate through layouts, dtypes and beta so every config sees several of each.
        const Case c{sh[0], sh[1], sh[2], sh[3], (v % 2) ? DType::f16 : DType::bf16, outs[v % 3], L[v % 2],
                     L[(v / 2) % 2], L[(v / 4) % 2], (v % 3) == 1};
        return make_problem(c, (v % 2) * 8, (v % 5) == 3);
      });
  EXPECT_GT(ran, 40);
}

// epi=warp: each warp stages and TMA-stores its own 16-row (or, where 32 KB of buffers do not fit beside the ring,
// 8-row: 128x144 with 6 stages) pieces from two buffers of its own (no warpgroup barrier), in 128-byte strips and a
// tail strip through a second D map. Every tail: none (128x128, 128x192, 128x256), 64-byte (128x160) and 32-byte
// swizzled (128x144, 128x208; f16), unswizzled 96 (176, 240) and 80 bytes (168) with x4 + x2 stmatrix, a row shorter
// than 128 bytes as one strip (64x16), f32 D (176: 5 strips + 64), the 4-byte stores (f32 D, C, the stream-K tail),
// the bounds-checked edge copy (odd N, on full and tail strips), MN-major operands, batches, several tiles per CTA.
TEST(Sm90Gpu, WarpStrips) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  if (current_device().cc_major != 9) GTEST_SKIP() << "not Hopper";
  const std::vector<const char*> configs = {
      "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=8,epi=warp",
      "tile=128x168x64,stages=5,cluster=1x2,sched=pingpong,raster=n,group=8,tiles=gpc,epi=warp",
      "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=4,epi=warp",
      "tile=128x160x64,stages=5,cluster=1x1,sched=pingpong,raster=n,group=8,epi=warp",
      "tile=128x144x64,stages=5,cluster=1x1,sched=pingpong,raster=m,group=8,tiles=dynamic,epi=warp",
      "tile=128x144x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=8,epi=warp",
      "tile=64x16x64,stages=7,cluster=1x1,sched=pingpong,raster=m,group=8,epi=warp",
      "tile=128x256x64,stages=4,cluster=1x2,sched=coop,raster=m,group=8,epi=warp",
      "tile=256x128x64,stages=4,cluster=2x1,sched=coop,raster=n,group=4,epi=warp",
      "tile=128x240x64,stages=4,cluster=1x1,sched=coop,raster=m,group=8,epi=warp",
      "tile=128x208x64,stages=4,cluster=1x1,sched=coop,raster=n,group=8,epi=warp",
      "tile=128x192x64,stages=4,cluster=2x1,sched=pingpong,raster=n,group=8,tail=sk,epi=warp",
      "tile=128x128x64,stages=6,cluster=1x1,sched=coop,raster=m,group=4,tail=sk,epi=warp",
  };
  // Per config, one problem kind per shape (v is the shape index), so that the wide tiles (which refuse C, f32 D and the
  // edge copy for lack of registers, and MN-major B unless N % 64 == 0) still run two or three of them:
  // 1x1x1 bf16; 17x33x65 f16 with C, MN-major A and B (edge copy); 300x521x1000x3 f32 D (edge copy);
  // 1920x2000x200x2 bf16 alpha 1; 2048x1536x520 f16 with a column-major D.
  const std::vector<std::array<int64_t, 4>> shapes = {
      {1, 1, 1, 1}, {17, 33, 65, 1}, {300, 521, 1000, 3}, {1920, 2000, 200, 2}, {2048, 1536, 520, 1}};
  for (const char* cfg : configs) {
    const int ran = run_matrix({cfg}, shapes, [&](int v, const std::array<int64_t, 4>& sh) {
      const int kind = v;  // run_matrix counts v from 0 per call: the shape's index
      const Layout A = kind == 1 ? Layout::col : Layout::row, B = kind == 1 ? Layout::row : Layout::col;
      const DType in = kind == 1 || kind == 4 ? DType::f16 : DType::bf16;
      const DType out = kind == 2 ? DType::f32 : in;
      const Case c{sh[0], sh[1], sh[2], sh[3], in, out, A, B, kind == 4 ? Layout::col : Layout::row, kind == 1};
      return make_problem(c, kind == 1 ? 8 : 0, kind == 3);
    });
    EXPECT_GE(ran, 2) << cfg;
  }
}

// Several tiles per CTA (per consumer warpgroup with ping-pong): the ring wraps across tiles, including tiles with
// fewer k-blocks than stages (k = 64: one k-block per tile) and ragged M/N/K, with and without clusters.
TEST(Sm90Gpu, ManyTilesPerCta) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  if (current_device().cc_major != 9) GTEST_SKIP() << "not Hopper";
  const std::vector<const char*> configs = {
      "tile=128x128x64,stages=5,cluster=1x1,sched=pingpong,raster=m,group=8",
      "tile=64x256x64,stages=4,cluster=1x1,sched=pingpong,raster=n,group=8",
      "tile=64x128x64,stages=7,cluster=1x1,sched=pingpong,raster=m,group=4",
      "tile=128x192x64,stages=4,cluster=2x1,sched=pingpong,raster=m,group=8",
      "tile=128x128x64,stages=5,cluster=1x2,sched=pingpong,raster=n,group=8",
      "tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8",
      "tile=256x128x64,stages=4,cluster=1x2,sched=coop,raster=n,group=8",
      "tile=128x128x64,stages=6,cluster=1x1,sched=coop,raster=m,group=8",
      "tile=128x256x64,stages=4,cluster=2x2,sched=coop,raster=n,group=4",
      "tile=128x176x64,stages=5,cluster=2x2,sched=pingpong,raster=m,group=8",
      "tile=256x192x64,stages=3,cluster=1x2,sched=coop,raster=m,group=8",
      "tile=128x168x64,stages=5,cluster=1x1,sched=pingpong,raster=n,group=8",
      "tile=128x168x64,stages=5,cluster=2x2,sched=pingpong,raster=n,group=4",
  };
  const Layout L[2] = {Layout::row, Layout::col};
  const int ran = run_matrix(configs, {{2048, 2048, 64, 2}, {1920, 2000, 200, 2}, {4096, 1024, 136, 1}},
                             [&](int v, const std::array<int64_t, 4>& sh) {
                               const Case c{sh[0], sh[1], sh[2], sh[3], DType::bf16,
                                            (v % 3) == 2 ? DType::f32 : DType::bf16, L[v % 2], L[(v / 2) % 2],
                                            Layout::row, (v % 4) == 1};
                               return make_problem(c, 0);
                             });
  EXPECT_GT(ran, 16);
}

// Both tile orders over five launches per case on two streams (D poisoned before each): the dynamic order (tiles
// taken from a global counter, published through the cluster's tile ring) in every schedule and cluster shape, with
// several tiles per CTA and tiny / ragged problems (fewer tiles than clusters); a counter pair not reset to zero by
// the previous launch on its stream shows as unwritten tiles. The static order is the control.
TEST(Sm90Gpu, TileOrdersRepeatedLaunches) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  if (current_device().cc_major != 9) GTEST_SKIP() << "not Hopper";
  const std::vector<const char*> configs = {
      "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=7,tiles=dynamic",
      "tile=128x128x64,stages=6,cluster=1x2,sched=pingpong,raster=n,group=4,tiles=dynamic",
      "tile=64x256x64,stages=4,cluster=1x1,sched=pingpong,raster=m,group=8,tiles=dynamic",
      "tile=128x176x64,stages=5,cluster=2x2,sched=pingpong,raster=n,group=8,tiles=dynamic",
      "tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8,tiles=dynamic",
      "tile=256x128x64,stages=4,cluster=1x2,sched=coop,raster=n,group=4,tiles=dynamic",
      "tile=128x128x64,stages=6,cluster=1x1,sched=coop,raster=m,group=2,tiles=dynamic",
      "tile=128x256x64,stages=4,cluster=2x2,sched=coop,raster=n,group=4,tiles=dynamic",
      "tile=128x128x64,stages=6,cluster=1x2,sched=pingpong,raster=n,group=4",
      "tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8",
      // GPC-major cluster ids: full grids (the large shapes) and partial ones (the small).
      "tile=128x112x64,stages=7,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc",
      "tile=128x176x64,stages=5,cluster=1x2,sched=pingpong,raster=m,group=8,tiles=gpc",
      "tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=m,group=16,tiles=gpc",
      "tile=256x128x64,stages=4,cluster=2x1,sched=coop,raster=n,group=4,tiles=gpc",
      "tile=128x168x64,stages=5,cluster=1x2,sched=pingpong,raster=m,group=8,tiles=gpc",
      "tile=128x168x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc",
  };
  const int ran = run_matrix(
      configs,
      {{1, 1, 1, 1}, {17, 33, 65, 1}, {300, 520, 1000, 3}, {2048, 2048, 64, 2}, {1920, 2000, 200, 2},
       {4096, 1024, 136, 1}},
      rotating_problem,
      5);
  EXPECT_GT(ran, 40);
}

// The stream-K tail (tail=sk): shapes whose last round of cluster tiles is partial on 66 / 132 clusters, so the last
// round and a half is split by k-blocks between neighbouring clusters (heads write partials, tails add them). Ragged
// K (200, 520), one k-block (64: whole tiles only), batches, every layout, f32 out and beta, repeated launches on two
// streams (each stream has its own scratch; the flags must be back to zero after every launch). Small shapes (one
// round) run the plain walk of the same kernel.
TEST(Sm90Gpu, StreamKTail) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  if (current_device().cc_major != 9) GTEST_SKIP() << "not Hopper";
  const std::vector<const char*> configs = {
      "tile=128x128x64,stages=6,cluster=1x1,sched=coop,raster=m,group=4,tail=sk",
      "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc,tail=sk",
      "tile=256x128x64,stages=4,cluster=1x2,sched=coop,raster=n,group=4,tail=sk",
      "tile=64x128x64,stages=7,cluster=1x1,sched=pingpong,raster=m,group=8,tail=sk",
      "tile=128x192x64,stages=4,cluster=2x1,sched=pingpong,raster=n,group=8,tail=sk",
      "tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8,tail=sk",
      "tile=128x168x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc,tail=sk",
  };
  const int ran = run_matrix(
      configs, {{1536, 1536, 520, 1}, {2048, 2304, 200, 1}, {640, 1792, 64, 3}, {300, 520, 1000, 3}},
      rotating_problem,
      5);
  EXPECT_GT(ran, 16);
}

// Split mode of tail=sk: fewer cluster tiles than clusters, so every tile's k-blocks are shared out over the grid
// (sk_clusters: shares of >= 8 k-blocks) and a tile's tail adds the partials of up to ~8 clusters (M = 16, K = 14336
// in 64x256 1x2: 8 cluster tiles over 66 clusters). Skinny M and N, ragged K, batches, every layout, f32 out and beta
// (rotating_problem), five launches on two streams (flags back to zero after each).
TEST(Sm90Gpu, StreamKSplit) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  if (current_device().cc_major != 9) GTEST_SKIP() << "not Hopper";
  const std::vector<const char*> configs = {
      "tile=64x128x64,stages=7,cluster=1x1,sched=pingpong,raster=m,group=8,tail=sk",
      "tile=64x256x64,stages=4,cluster=1x2,sched=pingpong,raster=m,group=1,tiles=gpc,tail=sk",
      "tile=64x192x64,stages=6,cluster=1x2,sched=pingpong,raster=n,group=3,tail=sk",
      "tile=128x128x64,stages=6,cluster=1x2,sched=pingpong,raster=m,group=1,tiles=gpc,tail=sk",
      "tile=128x112x64,stages=6,cluster=1x2,sched=pingpong,raster=n,group=6,tail=sk,epi=warp",
      "tile=128x128x64,stages=6,cluster=1x1,sched=coop,raster=m,group=4,tail=sk",
      "tile=256x128x64,stages=4,cluster=1x2,sched=coop,raster=n,group=4,tail=sk",
  };
  const int ran = run_matrix(
      configs,
      {{16, 4096, 14336, 1}, {128, 6144, 4096, 1}, {1, 640, 8200, 1}, {37, 1000, 3000, 2}, {200, 64, 20000, 1},
       {130, 384, 1100, 3}},
      rotating_problem,
      5);
  EXPECT_GT(ran, 30);
}

// swap=1: the other orientation (decode sizes: the wide side on the wgmma M side, the few rows on tile N 16-64), D
// stored transposed straight from the registers (EpilogueTransposedStore), deep rings, split mode; every layout (a
// col-major D then runs the untransposed view), f32 D, C with beta, batches, ragged M / N / K. And rings deeper than
// 7 stages without swap.
TEST(Sm90Gpu, Swap) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  if (current_device().cc_major != 9) GTEST_SKIP() << "not Hopper";
  const std::vector<const char*> configs = {
      "tile=128x16x64,stages=12,cluster=1x1,sched=pingpong,raster=m,group=4,swap=1",
      "tile=64x16x64,stages=16,cluster=2x1,sched=pingpong,raster=m,group=3,tail=sk,swap=1",
      "tile=128x32x64,stages=10,cluster=2x1,sched=coop,raster=m,group=3,tail=sk,swap=1",
      "tile=256x48x64,stages=5,cluster=1x1,sched=coop,raster=m,group=5,swap=1",
      "tile=128x64x64,stages=8,cluster=1x1,sched=pingpong,raster=m,group=8,tail=sk,swap=1",
      "tile=64x32x64,stages=16,cluster=1x1,sched=pingpong,raster=m,group=8,swap=1",
      "tile=64x64x64,stages=12,cluster=1x2,sched=pingpong,raster=m,group=1,tiles=gpc,tail=sk",
      "tile=64x128x64,stages=8,cluster=1x1,sched=pingpong,raster=m,group=8",
  };
  const int ran = run_matrix(configs,
                             {{16, 4096, 14336, 1}, {1, 640, 8200, 1}, {37, 1000, 3000, 2}, {5, 333, 77, 3},
                              {64, 2048, 520, 1}, {200, 96, 1500, 1}, {48, 4096, 4096, 1}},
                             rotating_problem, 3);
  EXPECT_GT(ran, 30);  // an N-major kernel B (activations column-major under swap) needs tile N 64: skipped
}

// The probes behind tiles=gpc: every SM in some group, no group larger than a GPC can be (18 SMs on the H100/H200),
// and a full grid of 2-CTA clusters placed on distinct, real SMs; the order built from them is a permutation.
TEST(Sm90Gpu, GpcProbe) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  if (current_device().cc_major != 9) GTEST_SKIP() << "not Hopper";
  const int sms = current_device().sm_count;
  const std::vector<int>& group = sm90::device_sm_groups();
  ASSERT_EQ(static_cast<int>(group.size()), sms);
  std::map<int, int> size;
  for (int g : group) {
    ASSERT_GE(g, 0);
    ++size[g];
  }
  for (const auto& [g, n] : size) EXPECT_LE(n, 18) << "group " << g;
  EXPECT_LT(size.size(), static_cast<size_t>(sms)) << "no SMs were joined: the cluster probes found nothing";
  const std::vector<int> placement = sm90::probe_placement(2, sms / 2, 200 * 1024);
  ASSERT_EQ(static_cast<int>(placement.size()), sms / 2);
  std::set<int> distinct;
  for (int s : placement) {
    EXPECT_GE(s, 0);
    EXPECT_LT(s, sms);
    distinct.insert(s);
  }
  EXPECT_EQ(static_cast<int>(distinct.size()), sms / 2) << "a full grid of 2-CTA clusters shares an SM";
  std::vector<int> order = sm90::gpc_major_order(placement, group);
  std::sort(order.begin(), order.end());
  for (int i = 0; i < sms / 2; ++i) EXPECT_EQ(order[i], i);
}

// One C for every batch (C batch stride 0, beta != 0): read through the epilogue's plain loads with a zero batch
// offset. (The kernel view used to turn stride 0 into a packed stride and read past C.) Broadcast A / B are refused
// (tests/unit/test_sm90_compile.cpp, Sm90Config.Reasons).
TEST(Sm90Gpu, BroadcastC) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  if (current_device().cc_major != 9) GTEST_SKIP() << "not Hopper";
  std::mt19937_64 rng(std::random_device{}());
  int ran = 0;
  for (const char* cfg : {"tile=128x128x64,stages=5,cluster=1x1,sched=coop,raster=n,group=4",
                          "tile=64x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8"})
    for (Layout d : {Layout::row, Layout::col})
      for (DType out : {DType::bf16, DType::f32}) {
        Problem p = make_problem({300, 264, 200, 3, DType::bf16, out, Layout::row, Layout::col, d, true}, 8);
        p.c.batch_stride = 0;
        ASSERT_EQ(p.check(), "");
        const std::string r = run_one(p, cfg, rng);
        EXPECT_EQ(r, "") << cfg << " D " << layout_name(d) << " " << dtype_name(out);
        ran += r.rfind("SKIP", 0) != 0;
      }
  EXPECT_EQ(ran, 8);
}

TEST(Sm90Gpu, MisalignedPointerThrows) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  if (current_device().cc_major != 9) GTEST_SKIP() << "not Hopper";
  Problem p = Problem::make(128, 128, 128, DType::bf16, DType::bf16);
  p.resolve();
  auto be = make_sm90_backend();
  const Candidate cand{"sm90", "tile=128x128x64,stages=4,cluster=1x1,sched=coop,raster=m,group=8"};
  auto exe = be->load(resolve(p), cand, be->compile(resolve(p), cand, current_device()));
  cuda::DeviceBuffer a(128 * 128 * 2 + 64), b(128 * 128 * 2), d(128 * 128 * 2);
  const GemmArgs bad{static_cast<char*>(a.get()) + 2, b.get(), nullptr, d.get()};
  EXPECT_THROW(exe->launch(bad, nullptr), Error);
}

}  // namespace
}  // namespace gemmtune
