// sm90 heuristics: the cost model that ranks configs and the enumeration order; the priors of both (efficiency
// factors, register pressure, epi=warp, twins, the front of the list) as tables of rows with their evidence.
#include <algorithm>
#include <cmath>

#include "backends/sm90/sm90_config.h"

namespace gemmtune::sm90 {
namespace {

// The decode tiles of enumerate_configs: swap=1, or tile N < 64, which only they use.
bool decode_tile(const Config& c) { return c.swap || c.bn < 64; }

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The epilogue copies strips out with bounds checks: every strip of a D that TMA cannot store (kEpiNoTmaD), or the
// edge strips of a ragged D row (kEpiDirect). swap=1 stores from registers and has neither.
bool copies_out(const Problem& p, const KernelView& v) { return !v.swap && (!d_tma_store(v) || epi_direct(p, v)); }

// Per-config efficiency factors of the cost model, as data: a row's factor multiplies the cost of the configs it
// matches, in table order, on top of the waves-and-clocks formula of estimate_cost. Adding a measured penalty is
// adding a row.
struct FactorRow {
  const char* what;    // the configs, in words
  const char* source;  // the evidence
  double factor;
  bool (*match)(const Config& c, const gt_sm90::Plan& pl);
};

// On the MMA clocks of a k-block.
const FactorRow kMmaFactor[] = {
    {"tile N below 128, or 128-wide ping-pong outside the gpc walk",
     "thin tiles L2-bound at 5-7% slower per MMA clock (H200); the 128-wide ping-pong gap is L2 merging, which the gpc "
     "order closes: ping-pong 128x128 2x1 gpc ran level with the best wide tile at 8192^3 (1625 vs 1640 us) and with "
     "cuBLAS's 112x128 at 4096^3",
     1.03, [](const Config& c, const gt_sm90::Plan&) { return c.bn < 128 || (c.bn == 128 && c.pingpong && !c.gpc()); }},
    {"64-row ping-pong (one slab)", "64x256 2x1 ~5% behind at the same waves", 1.05,
     [](const Config& c, const gt_sm90::Plan& pl) { return c.pingpong && pl.slabs == 1; }},
};

// On a whole k-block (MMA clocks and the per-k overhead).
const FactorRow kKBlockFactor[] = {
    {"2x2 clusters", "10-40% behind 1x1 on every large shape measured (not enumerated; --config takes them)", 1.15,
     [](const Config& c, const gt_sm90::Plan&) { return c.cm * c.cn == 4; }},
    {"1x2 clusters", "0-2% behind 1x1 / 2x1", 1.01,
     [](const Config& c, const gt_sm90::Plan&) { return c.cm * c.cn != 4 && c.cn > 1; }},
    {"rings of fewer than 4 stages", "256x192 with 3 stages: ~3% behind at the same wave count", 1.03,
     [](const Config& c, const gt_sm90::Plan&) { return c.stages < 4; }},
    {"load=cp (cp.async by the producer warpgroup)",
     "a prior, not measured: enumerated only where TMA cannot load A or B, so it orders nothing against TMA configs",
     1.10, [](const Config&, const gt_sm90::Plan& pl) { return pl.cp; }},
};

double apply_factors(double x, const auto& table, const Config& c, const gt_sm90::Plan& pl) {
  for (const FactorRow& r : table)
    if (r.match(c, pl)) x *= r.factor;
  return x;
}

}  // namespace

// Ranking model, in SM clock cycles: waves of tiles x k-blocks x MMA clocks per k-block, times a per-config
// efficiency measured on the H200 (side-by-side runs, 6 large shapes, 14 configs each,
// interleaved; docs/PERFORMANCE.md). What the data says:
//   - a persistent CTA (cluster) runs ceil(cluster tiles / clusters) tiles one after another; this wave count explains
//     most differences between good configs (4096^3: ping-pong 128x192 needs 6 waves of 0.75 the work = 4.5 against
//     coop 128x256's 4, and ran 17% slower; at 8192^3 21 x 0.75 = 15.75 against 16, and ran 3% faster);
//   - per MMA clock, every wgmma N >= 128 runs at the same rate (within ~2%); thin tiles lose through L2 bytes;
//   - the coop epilogue is not overlapped (2-7% of a K = 4096 tile, by strip count); ping-pong hides it;
//   - 2x1 / 1x2 clusters: within 1% of 1x1 (ping-pong 2x1 0-4% ahead); 2x2: 10-40% behind (not enumerated).
// A term for L2 bytes per MMA clock keeps thin tiles (64-row ping-pong, 64/96/128-wide coop) from looking free.
double estimate_cost(const Config& c, const Analysis& an, const DeviceInfo& dev) {
  constexpr double kMacPerClk = 2048.0, kPerKOverhead = 16.0, kEpiBytesPerClk = 32.0;
  const KernelView& v = an.view(c.swap);
  const int sms = sm_count(dev);
  const int cs = c.cm * c.cn;
  const int64_t ctiles = cluster_tiles(c, v);
  const int64_t clusters = std::max<int64_t>(1, std::min<int64_t>(ctiles, sms / cs));
  const double rounds = std::ceil(static_cast<double>(ctiles) / static_cast<double>(clusters));
  const gt_sm90::Plan pl = plan(c, v);
  // A k-block is a stage: 64 K-elements of a 16-bit type, 128 of fp8 (whose k32 wgmma runs at twice the MACs per
  // clock, so a stage takes the MMA clocks of a 16-bit one).
  const double kblocks = static_cast<double>(cdiv(v.k, pl.bk));
  const int slabs = pl.slabs;
  // Per MMA clock every wgmma N >= 128 runs at the same rate (with a ring walk free of divisions; one with a division
  // made the 5-stage N = 160/176/208 configs 4-8% slow); the measured exceptions are the rows of kMmaFactor.
  double eff = apply_factors(1.0, kMmaFactor, c, pl);
  const double mma = static_cast<double>(c.bm) * c.bn * 64.0 / kMacPerClk;
  // L2 bytes per MMA clock beyond ~50 cost ~0.8% each (128x128 coop 1x1 at 64: +16%; 128x96 at 75: +30%; 128x64 at
  // 96: +60%; multicast halves the shared operand's share).
  // tiles=gpc: the clusters of a GPC take neighbouring tiles, and the operand they share without multicast (A when
  // the walk is along N, B along M) is read ~once per GPC: measured L2 reads -19% to -35% (docs/PERFORMANCE.md);
  // charged as a quarter less of that operand's bytes. A multicast operand is not merged further (a 2x1 walking M
  // merged less than the static order).
  // a_rows / b_rows: the rows of A and B a CTA loads per k-block (a multicast operand split among the cluster CTAs).
  const double a_rows = static_cast<double>(c.bm) / c.cn, b_rows = static_cast<double>(c.bn) / c.cm;
  const double a_share = c.gpc() && c.raster_n && c.cn == 1 ? 0.75 : 1.0;
  const double b_share = c.gpc() && !c.raster_n && c.cm == 1 ? 0.75 : 1.0;
  const double l2_per_clk = (a_share * a_rows + b_share * b_rows) * 128.0 / mma;
  eff *= 1.0 + 0.008 * std::max(0.0, l2_per_clk - 50.0);
  // Rows off the L2's 128-byte lines (row_grid_class: a pitch or batch stride that is not a multiple of 128 bytes)
  // cost every tile; off the 32-byte sectors too, the more the more operand bytes a tile reads per MMA clock (H200,
  // 128-byte promotion, against K = 1024 at 4096x4096xK, docs/PERFORMANCE.md): rows 2000 / 2064 bytes apart (off the
  // sectors): coop 128x256 2x1 and 256x128 / 256x192 1x2 +6%, ping-pong 128x192 2x1 +7%, 128x176 2x1 +12%, 128x128 2x1
  // +27%; rows 2080 / 2112 / 2016 bytes apart (on the sectors): +3-8% whatever the tile. Charged per operand by its
  // share of the bytes, without the gpc walk's shares (the coalescer's merging did not show there).
  {
    const double l2_raw = (a_rows + b_rows) * 128.0 / mma;
    const double sector_cost = 0.06 + 0.016 * std::max(0.0, l2_raw - 35.0), line_cost = 0.05;
    const auto cost = [&](const OperandDesc& o) {
      const int cls = row_grid_class(0, o.ld * elem_size(o.type), v.batch, o.batch_stride * elem_size(o.type));
      return cls == 0 ? 0.0 : cls == 1 ? line_cost : sector_cost;
    };
    eff *= 1.0 + (cost(v.a) * a_rows + cost(v.b) * b_rows) / (a_rows + b_rows);
  }
  double per_k = apply_factors(mma * eff + kPerKOverhead, kKBlockFactor, c, pl);
  // Fewer stages than fit: shallower prefetch (enumerate() only emits the deepest ring; explicit configs may differ).
  const int deepest = max_stages(c, v, dev);
  if (c.stages < deepest) per_k *= 1.0 + 0.05 * (deepest - c.stages);
  // Epilogue: registers -> shared memory -> TMA store in 64-row strips (epi_bytes: 64/128-byte swizzled, wide
  // unswizzled, or 32-byte), each strip a barrier round trip: not overlapped with the next tile's MMAs in the
  // cooperative schedule (coop 128x176 2x1 with eleven 32-byte strips per slab ran 7% behind ping-pong 128x176 2x1 at
  // 8192x6144x4096, ~4000 clocks per tile; with two 176-byte strips 3.5%); ping-pong hides most of it.
  const double osz = elem_size(v.d.type);
  double epi = static_cast<double>(c.bm) * c.bn * osz / kEpiBytesPerClk;
  // In ping-pong the strips' barrier round trips overlap the other consumer's MMAs: only the bytes are charged. (With
  // 400 clocks a strip too, the five-strip 128x160 ranked 17th-49th at K = 512-1024 where it was the fastest or within
  // 0.3% of it: every candidate timed at 33 problems, docs/PERFORMANCE.md.)
  if (!c.pingpong)
    epi += 400.0 * slabs *
           static_cast<int>(c.bn * osz / pl.epi_strip_bytes + (pl.epi_tail_bytes > 0 ? 1 : 0));
  if (v.has_c) epi *= 1.5;
  // A D that TMA cannot store (d_tma_store) is copied out of the strips by the consumer threads, whose store
  // instructions and waits replace the asynchronous bulk store: charged as half as much again.
  if (!c.swap && !d_tma_store(v)) epi *= 1.5;
  if (c.pingpong) epi *= 0.1;
  double compute = rounds * (kblocks * per_k + epi);
  // tail=sk: the last round and a half is shared out by k-blocks, so the rounds are R + r / C instead of R + 1, less
  // a penalty measured on the H200 (docs/PERFORMANCE.md): after their uneven head units the clusters no longer walk
  // K in step, so neighbouring tiles stop sharing their operand reads in L2, and the partials go through L2 twice.
  // Interleaved against the plain walk: 8192^3 ping-pong 128x128 2x1 (R = 31, r / C = 0.03) -2.6%; 4096^3 (R = 7,
  // 0.76) -0.1%; 2048x4096x4096 (R = 3, 0.88) +3.2%; 2048x4096x14336 +10% (ping-pong) and +27% (coop 128x256, R = 1):
  // about a quarter of a round up to K = 8192, growing beyond (~0.55 at K = 14336).
  if (c.sk && sk_tail(ctiles, clusters, static_cast<int64_t>(kblocks))) {
    const double sk_rounds = static_cast<double>(ctiles) / static_cast<double>(clusters) +
                             0.25 * std::pow(std::max(1.0, kblocks / 128.0), 1.5);
    compute = sk_rounds * (kblocks * per_k + epi);
  }
  // Small-M / small-N problems stream an operand from DRAM whatever the tile: floor at the unique bytes over
  // ~2800 bytes per clock (4.8 TB/s at ~1.7 GHz). Among configs at the floor the compute estimate still orders them.
  const double bytes = (static_cast<double>(v.m) * v.k + static_cast<double>(v.k) * v.n) * elem_size(v.a.type) +
                       static_cast<double>(v.m) * v.n * osz * (v.has_c ? 2.0 : 1.0);
  double dram = bytes * v.batch / 2800.0;
  // tail=sk with fewer tiles than clusters (split mode, sk_clusters): every cluster the grid can hold takes an equal
  // share of the tiles' k-blocks, so the MMA work spreads over them, and more SMs stream the operands: charged as DRAM
  // bandwidth growing with the CTAs that stream, ~60 bytes per clock each up to the 2800, against the plain walk's
  // CTAs; each cluster writes or adds about two fp32 partial tiles through L2 (~64 bytes per clock), and the split
  // costs ~10k clocks besides (H200, docs/PERFORMANCE.md: at M = 16 / 128 and K = 4096, six split twins of 24-96
  // CTA grids against their plain configs: -8% to +17%, none faster than the best plain config; at K = 14336 grids of
  // 16-32 CTAs ran 19-43% faster split).
  if (const int64_t split = c.sk ? sk_clusters(ctiles, static_cast<int64_t>(kblocks), sms / cs) : 0; ctiles < split) {
    const auto streaming = [&](double ctas) { return std::min(1.0, ctas * 60.0 / 2800.0); };
    compute = static_cast<double>(ctiles) * kblocks / static_cast<double>(split) * per_k + epi +
              2.0 * c.bm * c.bn * 4.0 / 64.0 + 10000.0;
    dram *= streaming(static_cast<double>(clusters) * cs) / streaming(static_cast<double>(split) * cs);
  }
  return std::max(compute, dram) + 0.1 * compute;
}

namespace {

// Ranking prior: register pressure. Valid configs whose compile spilled registers in the surveys behind these rows
// (ptxas for sm_90a, the whole lists of tests/unit/test_sm90_compile.cpp and the configs of tests/gpu) are listed after
// every other config, so that the tuner's top k holds configs that compile clean; a spilling compile is skipped by the
// pipeline in any case. Some rows are conservative for today's compiler (ping-pong 128x160 with f32 D compiles clean),
// so these configs stay listed, and a GPU survey that times them decides whether a row stays.
struct SpillPriorRow {
  const char* what;    // the configs, in words
  const char* source;  // the evidence
  bool (*match)(const Config& c, const Problem& p, const KernelView& v, int acc);
};
const SpillPriorRow kSpillPrior[] = {
    {"an e4m3 D with row scaling at tile N 256",
     "coop 128x256 and ping-pong 64x256 (1x1, 2x1, 1x2) at 4096^3: 64-180 bytes (Sm90Fp8Compile.E4M3Out_Row); their "
     "bf16-D twins and the 128-accumulator 256x128 / ping-pong 128x128 compile clean",
     [](const Config& c, const Problem& p, const KernelView& v, int) {
       return v.d.type == gt::kE4M3 && p.scaling == Scaling::row && c.bn >= 256;
     }},
    {"accumulators over 128 with a C input, f32 D or a fused epilogue (192 only for the plain 16-bit store)",
     "f32 D at 192 accumulators: 20 bytes spilled",
     [](const Config&, const Problem& p, const KernelView& v, int acc) {
       return acc > 128 && (v.has_c || v.d.type == kF32 || !p.epilogue.empty());
     }},
    {"the bounds-checked copy of a ragged D row (not a multiple of 16 bytes) or of a D that TMA cannot store, over 128 "
     "accumulators, or 64 with a C input",
     "128 accumulators with C: 32-88 bytes; 192: 172 bytes (tests/gpu/test_sm90_gemm.cpp configs); coop 256x128 with "
     "C and an odd ldd: 376-464 bytes",
     [](const Config&, const Problem& p, const KernelView& v, int acc) {
       return copies_out(p, v) && acc > (v.has_c ? 64 : 128);
     }},
    {"ping-pong with a fused residual and a bounds-checked copy, or over 96 accumulators",
     "ping-pong residual chains: spills above 96 accumulators and with the edge copy",
     [](const Config& c, const Problem& p, const KernelView& v, int acc) {
       return c.pingpong && p.epilogue.has(EpiOpKind::residual) && (copies_out(p, v) || acc > 96);
     }},
    {"ping-pong with a fused chain and a D that TMA cannot store (every strip copied out) at 128+ accumulators",
     "128x128 1x1 / 1x2 / 2x1 with bias,gelu_tanh at the LM head (ldd = 50257): 48-64 bytes; without a chain clean",
     [](const Config& c, const Problem& p, const KernelView& v, int acc) {
       return c.pingpong && !p.epilogue.empty() && !v.swap && !d_tma_store(v) && acc >= 128;
     }},
    {"ping-pong tail=sk with a fused epilogue", "128x128 2x1: 20-884 bytes",
     [](const Config& c, const Problem& p, const KernelView&, int) {
       return c.sk && c.pingpong && !p.epilogue.empty();
     }},
    {"ping-pong 2x1 tail=sk epi=warp at tile N 112 / 128", "48 bytes (1x2, 1x1 and the warpgroup form clean)",
     [](const Config& c, const Problem&, const KernelView&, int) {
       return c.sk && c.pingpong && c.epi_warp && c.cm == 2 && c.cn == 1 && (c.bn == 112 || c.bn == 128);
     }},
    {"ping-pong tail=sk at 160+ accumulators except 2x1 with a K-major A",
     "16-48 bytes: 128x160 1x1, 128x168 1x2 epi=warp, 128x176 1x2, 128x192 1x1 at 4096x4096x14336; 2x1 M-major A",
     [](const Config& c, const Problem&, const KernelView& v, int acc) {
       return c.sk && c.pingpong && acc >= 160 && (c.cm != 2 || c.cn != 1 || v.a_mn);
     }},
    {"load=cp with tail=sk at 192 accumulators",
     "24 bytes: coop 256x192 at 2048x4096x4100 (its TMA twin and load=cp without the tail clean; the whole load=cp "
     "lists of that problem with K-major and M-major A otherwise clean)",
     [](const Config& c, const Problem&, const KernelView&, int acc) { return c.cp && c.sk && acc >= 192; }},
    {"tail=sk with a C input in a 1x1 cluster at 112+ accumulators",
     "16 bytes: ping-pong 128x128, coop 128x224 / 128x240 (Sm90Compile.Decode_SplitTwins lists)",
     [](const Config& c, const Problem&, const KernelView& v, int acc) {
       return c.sk && v.has_c && c.cm * c.cn == 1 && acc >= 112;
     }},
};

bool spill_prior(const Config& c, const Problem& p, const KernelView& v) {
  const int acc = plan(c, v).acc_regs;
  for (const SpillPriorRow& r : kSpillPrior)
    if (r.match(c, p, v, acc)) return true;
  return false;
}

// Configs that store their epilogue per warp (epi=warp): 128-byte strips and a tail, 16-row pieces from two buffers
// per warp (sm90_shape.cuh: epi_warp_rows), instead of the warpgroup's strips. Measured side by side on the H200
// (docs/PERFORMANCE.md), warp against warpgroup at 8192x6144x512 / 4096x8192x512 / 8192x6144x1024 / 8192x6144x4096 /
// 8192^3. Not for the other ping-pong tiles (128x192 +0.7 / +0.9 / +0.2 / +0.1 / 0%, 128x128 and 128x168 level to
// +0.4%), nor in the cooperative schedule (both consumers storing at once: 8-row warp pieces 1.5-10% slower, 16-row
// ones up to 4%), nor with a GLU. `pl` is the plan of the warpgroup store.
struct EpiWarpRow {
  const char* what;
  const char* source;
  bool (*match)(const Config& c, const Problem& p, const gt_sm90::Plan& pl);
};
const EpiWarpRow kEpiWarp[] = {
    {"ping-pong with wide unswizzled strips and room for one buffer only (each strip waits for the previous store)",
     "128x176 at 5 stages (4 strips of 11 KB a tile) -3.2 / -3.4 / -0.8 / -0.3 / -0.2%; 128x144 at 6 (8-row pieces) "
     "-1.7 / -1.6 / -0.1 / 0 / 0%; K = 512-4096: 128x112 -1.9 to -4.1%, 128x96 -0.2 to -1.3%, 128x80 -0.4 to -3.8%",
     [](const Config& c, const Problem& p, const gt_sm90::Plan& pl) {
       return c.pingpong && !p.epilogue.has_glu() && pl.epi_bufs == 1;
     }},
    {"ping-pong with 64-byte strips", "128x160 (5 strips a slab) -1.2 / -1.2 / -0.8 / -0.2 / +0.3%",
     [](const Config& c, const Problem& p, const gt_sm90::Plan& pl) {
       return c.pingpong && !p.epilogue.has_glu() && pl.epi_strip_bytes == 64;
     }},
};

bool epi_warp_prior(const Config& c, const Problem& p, const KernelView& v) {
  const gt_sm90::Plan pl = plan(c, v);
  for (const EpiWarpRow& r : kEpiWarp)
    if (r.match(c, p, pl)) return true;
  return false;
}

// The front of the list: where a row's problems match, its configs go first, in their estimated order (after those of
// earlier rows), so that the tuner's top 8 times them all whatever the cost model says.
struct FrontRow {
  const char* what;
  const char* source;
  bool (*problem)(const KernelView& v);  // the kernel view without swap
  bool (*match)(const Config& c);
};
const FrontRow kFront[] = {
    {"the decode tiles (swap=1 or tile N < 64) with at most 48 rows on one side and more on the other",
     "the cost model reads every config of such a problem as streaming at the DRAM floor, but on the H200 the best "
     "decode tile beat the best other config at every such problem measured, by 0.8% (16x28672x4096) to 46% "
     "(16x4096x4096), and tied at 64 rows (39.8 against 39.7 us at 64x8192x8192), where the estimate alone orders "
     "them (docs/PERFORMANCE.md)",
     [](const KernelView& v) { return (v.m <= 48 && v.n > v.m) || (v.n <= 48 && v.m > v.n); }, decode_tile},
};

}  // namespace

// Tiles per band of the grouped raster: the clusters in flight at once cover G cluster tiles along the grouped
// dimension and P/G along the other, so a wave touches G*ext_g + (P/G)*ext_o rows of A and B; minimal at
// G = sqrt(P * ext_o / ext_g). With 128x256 tiles this is 16 for raster m (8: 8 x 16.5 tiles read 26% more
// operand rows per wave than 16 x 8) and 8 for raster n.
// The largest useful band width: the cluster tiles along the grouped dimension (at most 64).
static int max_group(const Config& c, const KernelView& v) {
  const int64_t tiles_g = c.raster_n ? cdiv(cdiv(v.n, c.bn), c.cn) : cdiv(cdiv(v.m, c.bm), c.cm);
  return static_cast<int>(std::min<int64_t>(tiles_g, 64));
}

static int band_group(const Config& c, const KernelView& v, const DeviceInfo& dev) {
  const int sms = sm_count(dev);
  const int cs = c.cm * c.cn;
  const double inflight = sms / cs;
  const double ext_g = c.raster_n ? c.bn * c.cn : c.bm * c.cm, ext_o = c.raster_n ? c.bm * c.cm : c.bn * c.cn;
  const int g = static_cast<int>(std::lround(std::sqrt(inflight * ext_o / ext_g)));
  return std::clamp<int>(g, 1, max_group(c, v));
}

namespace {

// Twins: a listed config that a row matches is followed by the row's variant of it (where valid), ranked by cost with
// the rest. Each twin takes a timing slot of the tuner's top k, so a row names the configs where its variant won.
struct TwinRow {
  const char* what;
  const char* source;
  bool (*match)(const Config& c);
  Config (*make)(Config c, const KernelView& v);
};
const TwinRow kTwins[] = {
    {"ping-pong 2x1 / 1x2: a GPC-major twin (tiles=gpc, sm90_cluster_order.h) walking the direction in which "
     "neighbouring tiles share the operand that is not multicast (2x1 multicasts B: raster n shares A; 1x2: raster m "
     "shares B), the read the L2 coalescer merges between the clusters of a GPC; it runs the static kernel of its "
     "raster and band (the order is a host table), so it shares the compile with that static config where both are "
     "listed",
     "ping-pong 128x128 / 128x112 2x1 4-13% faster than static, wide ping-pong tiles within 1%; cooperative 128x256 2x1 "
     "10-12% slower and 1x1 configs unchanged, so those get none (docs/PERFORMANCE.md)",
     [](const Config& c) { return c.pingpong && c.cm != c.cn; },
     [](Config g, const KernelView& v) {
       g.tiles = TileOrder::gpc;
       g.raster_n = g.cm == 2;
       // Band width = the clusters of one GPC (16 SMs on most Hopper GPCs / cluster size), so that a GPC's
       // consecutive ids fall in one band row and share its operand: 4096^3 ping-pong 128x112 2x1 ran 181.6 us with
       // group 8 and 208.3 with band_group's 12 (group 4 was worse too, docs/PERFORMANCE.md).
       g.group = std::clamp(16 / (g.cm * g.cn), 1, max_group(g, v));
       return g;
     }},
};

}  // namespace

int max_stages(const Config& c, const KernelView& v, const DeviceInfo& dev) {
  const int limit = dev.smem_per_block_optin > 0 ? dev.smem_per_block_optin : gt_sm90::kSmemPerBlock;
  Config t = c;
  // With warp pieces, the deepest ring that leaves room for 16-row pieces: ping-pong 128x144 2x1 with 5 stages and
  // 16-row pieces against 6 stages and 8-row pieces, side by side on the H200 (docs/PERFORMANCE.md): -4.0% at
  // 4096x8192x512, -4.9% at 8192x6144x512, -0.4% at K = 1024, -0.1 to -0.5% at K = 4096-14336.
  // The decode tiles (a stage of 10-18 KB): up to 16 stages (11, 12 and 16 measured, docs/PERFORMANCE.md).
  const int deepest = decode_tile(c) ? 16 : 7;
  if (c.epi_warp)
    for (t.stages = deepest; t.stages > 2; --t.stages)
      if (const gt_sm90::Plan pl = plan(t, v); pl.smem_bytes <= limit && pl.epi_rows == 16) return t.stages;
  for (t.stages = deepest; t.stages > 2; --t.stages)
    if (plan(t, v).smem_bytes <= limit) break;
  return t.stages;
}

// acc=promote against the cost model (which knows only the tensor core's clocks): each k-block's fp32 adds on the
// CUDA cores, and the wait for the tensor core at every promotion where one temporary accumulator set is all that
// fits (kPromoteBufs in sm90_fp8.cuh: more than 64 accumulator registers per thread); with two, a consumer's next
// k-block runs during a promotion and only every fourth waits.
double promote_factor(const Config& c, const Analysis& an) {
  if (c.acc != Accum::promote) return 1.0;
  return 3 * plan(c, an.view(c.swap)).acc_regs <= 192 ? 1.1 : 1.2;
}

// fp8 inputs: a short list (the wgmma k32 wrappers exist for the tile N of gt_sm90::kF8TileN: ptx/wgmma_f8.cuh).
// Starting points for 8-bit operands, whose 128-K stage rows make a stage as many bytes as a 16-bit one of half the
// MMA work: 128x128 / 128x256 / 256x128 / 128x192 coop and 64x128 / 64x256 / 128x128 ping-pong tiles in 1x1, 2x1
// and 1x2 clusters with the deepest ring that fits, each with the problem's accumulation: acc=fast (fp8_accum=fast)
// or acc=promote (fp8_accum=exact, block scaling's only mode). The 128x144 and 128x160 coop tiles (valid with
// --config) are not listed: block-scaled they ran 2-14% behind 128x128 or 128x192 on every shape measured
// (docs/PERFORMANCE.md). Decode sizes (at most 64 rows on one side) add the decode tiles of the 16-bit list (swap=1
// where the few rows are the view's M; not with block scales). Ranked by the 16-bit cost model times promote_factor:
// the tiles whose consumers keep two temporaries (128x128 coop) before those with one (128x192 coop).
std::vector<Config> enumerate_fp8(const Analysis& an, const DeviceInfo& dev) {
  const Problem& p = an.problem;
  const KernelView& v = an.view(false);
  const bool block = p.scaling == Scaling::block;
  struct Tile { int bm, bn; bool pp; };
  const Tile wide[] = {{128, 128, false}, {128, 256, false}, {256, 128, false}, {128, 192, false},
                       {64, 128, true},   {64, 256, true},   {128, 128, true},  {128, 64, true}};
  std::vector<Config> cands;
  auto add = [&](Config c, const KernelView& w) {
    c.bk = 128;
    c.raster_n = w.n > w.m;
    c.group = band_group(c, w, dev);
    c.stages = max_stages(c, w, dev);
    c.acc = p.fp8_accum == Fp8Accum::fast ? Accum::fast : Accum::promote;
    if (config_reason(c, an, dev).empty() && std::find(cands.begin(), cands.end(), c) == cands.end())
      cands.push_back(c);
  };
  for (const Tile& t : wide)
    for (auto [cm, cn] : {std::pair{1, 1}, std::pair{2, 1}, std::pair{1, 2}}) {
      Config c;
      c.bm = t.bm, c.bn = t.bn, c.pingpong = t.pp, c.cm = cm, c.cn = cn;
      if (cdiv(v.m, c.bm) < cm || cdiv(v.n, c.bn) < cn) continue;
      add(c, v);
    }
  const bool decode_swap = v.m <= 64 && v.n > v.m && !block, decode_plain = v.n <= 64 && v.m > v.n;
  if (decode_swap || decode_plain) {
    const KernelView& w = an.view(decode_swap);
    const int bn = static_cast<int>(std::min<int64_t>(64, cdiv(w.n, 16) * 16));
    for (const Tile t : {Tile{64, bn, true}, Tile{128, bn, true}, Tile{128, bn, false}})
      for (auto [cm, cn] : {std::pair{1, 1}, std::pair{2, 1}}) {
        Config c;
        c.bm = t.bm, c.bn = t.bn, c.pingpong = t.pp, c.cm = cm, c.cn = cn;
        c.swap = decode_swap;
        if (cdiv(w.m, c.bm) < cm) continue;
        add(c, w);
      }
  }
  // Configs of the spill prior go after all others, each part in its estimated order (as in enumerate_configs).
  std::vector<std::pair<double, size_t>> order, late;
  for (size_t i = 0; i < cands.size(); ++i) {
    const Config& c = cands[i];
    const double cost = estimate_cost(c, an, dev) * promote_factor(c, an);
    (spill_prior(c, p, an.view(c.swap)) ? late : order).push_back({cost, i});
  }
  auto by_cost = [](const auto& a, const auto& b) { return a.first < b.first; };
  std::stable_sort(order.begin(), order.end(), by_cost);
  std::stable_sort(late.begin(), late.end(), by_cost);
  std::vector<Config> ranked;
  for (const auto& o : order) ranked.push_back(cands[o.second]);
  for (const FrontRow& r : kFront)
    if (r.problem(v)) std::stable_partition(ranked.begin(), ranked.end(), r.match);
  for (const auto& o : late) ranked.push_back(cands[o.second]);
  return ranked;
}

std::vector<Config> enumerate_configs(const Analysis& an, const DeviceInfo& dev) {
  const Problem& p = an.problem;
  std::vector<Config> out;
  std::vector<Config> late;  // valid configs of the spill prior (kSpillPrior): listed after all others
  if (!problem_reason(an.problem, dev).empty()) return out;
  if (is_fp8(p.a.dtype)) return enumerate_fp8(an, dev);
  const KernelView& v = an.view(false);
  struct Tile {
    int bm, bn;
    bool pp;
    Config config(int cm, int cn) const {
      Config c;
      c.bm = bm, c.bn = bn, c.pingpong = pp, c.cm = cm, c.cn = cn;
      return c;
    }
  };
  std::vector<Tile> tiles;
  // Every tile N in steps of 16 (the wgmma N, 16-byte TMA boxes and 32-byte epilogue strips allow it) lets a tile
  // count fill whole waves of the 132 SMs: N = 6144 in 176-wide tiles, 8192 in 144-wide ones. Tiles narrower than
  // 128 fill waves too (4096 in 112: 8.97 waves) but run 5-7% slower per MMA clock (L2-bound, H200);
  // estimate_cost charges that, so they rank below the wide tiles on large problems.
  // Tile N 168 too: cuBLASLt runs 168-wide tiles at several transformer shapes (N = 28672: 170.7 tiles against 162.9
  // at 176, which leave 5216 = 79 x 66 + 2 cluster tiles at 128x176 2x1; docs/PERFORMANCE.md). On 2 CTAs along M
  // its B parts are 88 rows (8 rows of padding per stage). The other N = 8 (mod 16) split 16-bit D rows into strips
  // of 16-80 bytes, which config_reason refuses.
  auto widths = [](int hi) {
    std::vector<int> w;
    for (int bn = 64; bn <= hi; bn += 16) w.push_back(bn);
    if (hi >= 168) w.insert(std::upper_bound(w.begin(), w.end(), 168), 168);
    return w;
  };
  for (int bn : widths(256)) tiles.push_back({128, bn, false});
  for (int bn : widths(192)) tiles.push_back({256, bn, false});
  for (int bn : {64, 128, 192, 256}) tiles.push_back({64, bn, true});
  for (int bn : widths(192)) tiles.push_back({128, bn, true});
  const bool raster_n = v.n > v.m;
  // Where TMA cannot load A or B, the load=cp configs (1x1 clusters only: cp.async does not multicast).
  const bool cp = needs_cp(v);
  for (const Tile& t : tiles)
    // 2x2 clusters are valid (--config) but were 10-40% behind 1x1 on every large shape measured: not enumerated.
    for (auto [cm, cn] : {std::pair{1, 1}, std::pair{2, 1}, std::pair{1, 2}}) {
      if (cp && cm * cn != 1) continue;
      Config c = t.config(cm, cn);
      c.cp = cp;
      // A cluster wider than the tile grid only adds CTAs that compute zeros.
      if (cdiv(v.m, c.bm) < cm || cdiv(v.n, c.bn) < cn) continue;
      c.raster_n = raster_n;
      c.group = band_group(c, v, dev);
      // The deepest ring that fits: shallower ones never won a sweep (explicit --config still takes any).
      c.stages = max_stages(c, v, dev);
      // Ping-pong tiles whose warpgroup strips are short of 128-byte strips in two buffers store per warp (kEpiWarp).
      c.epi_warp = epi_warp_prior(c, p, v);
      if (c.epi_warp) c.stages = max_stages(c, v, dev);  // room for 16-row pieces: 128x144 5 stages, 128x96 6
      if (!config_reason(c, an, dev).empty()) continue;
      if (spill_prior(c, p, v)) {
        late.push_back(c);
        continue;
      }
      out.push_back(c);
      for (const TwinRow& t : kTwins)
        if (t.match(c))
          if (const Config g = t.make(c, v); config_reason(g, an, dev).empty()) out.push_back(g);
    }
  // Decode sizes: with at most 64 rows on one side and more on the other, tiles whose N covers the few rows (rounded
  // up to 16) and whose M runs along the wide side, with rings of up to 16 stages (a 128x16 stage holds 18 KB). When
  // the few rows are the kernel view's N already (a column-major D at small M, a row-major one at small N) that is the
  // usual kernel; when they are its M, swap=1 takes the other orientation and stores D transposed. Without it a
  // 64-row tile computes 48 rows of zeros per 16 tokens and its A stage takes ring space the weights could use.
  // Measured on the H200 (docs/PERFORMANCE.md): 16x4096x14336 34.1 us against 40.3 for the best config without
  // these tiles (cuBLASLt 35.5), 16x4096x4096 14.0 against 20.5 (15.9), 1x4096x14336 34.0 against 41.4 (34.8).
  const bool decode_swap = v.m <= 64 && v.n > v.m, decode_plain = v.n <= 64 && v.m > v.n;
  if (decode_swap || decode_plain) {
    const KernelView& w = an.view(decode_swap);
    const int bn = static_cast<int>(std::min<int64_t>(64, cdiv(w.n, 16) * 16));
    for (const Tile t : {Tile{64, bn, true}, Tile{128, bn, true}, Tile{128, bn, false}, Tile{256, bn, false}})
      for (auto [cm, cn] : {std::pair{1, 1}, std::pair{2, 1}}) {
        if (cp && cm * cn != 1) continue;
        Config c = t.config(cm, cn);
        c.swap = decode_swap;
        c.cp = cp;
        if (cdiv(w.m, c.bm) < cm) continue;
        c.raster_n = w.n > w.m;
        c.group = band_group(c, w, dev);
        c.stages = max_stages(c, w, dev);
        // (tile N 64 without swap may already be listed: the same ring depth where shared memory stops it at 7)
        if (config_reason(c, an, dev).empty() && std::find(out.begin(), out.end(), c) == out.end() &&
            std::find(late.begin(), late.end(), c) == late.end())
          (spill_prior(c, p, w) ? late : out).push_back(c);
      }
  }
  // One cost per config (the comparator would re-derive the kernel view and ring depth O(n log n) times).
  std::vector<std::pair<double, size_t>> order;
  for (size_t i = 0; i < out.size(); ++i) order.push_back({estimate_cost(out[i], an, dev), i});
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // Stream-K tails (tail=sk) for configs whose last round is partial enough that the estimate gains 2% or more and
  // that then rank among the best 8 plain configs (the tuner's default top k): each is its own kernel, compiling in
  // about twice the time of its plain sibling, so only twins the tuner would time are listed. (At 8192^3 the ranking
  // puts ping-pong 128x128 2x1 33rd, yet its tail twin ran 1.4% ahead of the best plain config: docs/PERFORMANCE.md.
  // Listing twins down to rank 24 lists it, but the default top 8 does not time it either.)
  // Not below 24 k-blocks: with so few, a split tile's fixup (partials through L2, the wait for the neighbour) weighs
  // a fixed ~5-10k clocks against tiles of 6-25k, and the twins measured +6.5 to +14% at K = 512 and -1 to +4% at
  // K = 1000-1040 against their plain configs, -3 to -6% from K = 2000 on (H200, every candidate timed at 16
  // problems, docs/PERFORMANCE.md).
  // Split twins (fewer tiles than clusters) only from 128 k-blocks: at K = 4096 no split twin measured beat the best
  // plain config, at K = 14336 they did (docs/PERFORMANCE.md).
  constexpr size_t kSkRank = 8;
  constexpr int64_t kSkMinKBlocks = 24, kSkSplitMinKBlocks = 128;
  const size_t n_static = order.size();
  const int sms = sm_count(dev);
  if (n_static > 0 && cdiv(v.k, 64) >= kSkMinKBlocks) {
    const double bar = order[std::min(kSkRank, n_static) - 1].first;
    for (size_t i = 0; i < n_static; ++i) {
      Config s = out[order[i].second];
      if (decode_tile(s)) continue;  // 64-row decode tiles with 16 stages streamed as fast unsplit
      s.sk = true;
      if (cluster_tiles(s, v) < sms / (s.cm * s.cn) && cdiv(v.k, 64) < kSkSplitMinKBlocks) continue;
      if (!config_reason(s, an, dev).empty()) continue;
      const double cost = estimate_cost(s, an, dev);
      if (cost > 0.98 * order[i].first || cost > bar) continue;
      if (spill_prior(s, p, v)) {
        late.push_back(s);
        continue;
      }
      out.push_back(s);
      order.push_back({cost, out.size() - 1});
    }
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Config> ranked;
  for (const auto& o : order) ranked.push_back(out[o.second]);
  // The rows of kFront (decode tiles first up to 48 rows).
  auto front = ranked.begin();
  for (const FrontRow& r : kFront)
    if (r.problem(v)) front = std::stable_partition(front, ranked.end(), r.match);
  // Then the configs of the spill prior, in their estimated order.
  std::vector<std::pair<double, size_t>> late_order;
  for (size_t i = 0; i < late.size(); ++i) late_order.push_back({estimate_cost(late[i], an, dev), i});
  std::stable_sort(late_order.begin(), late_order.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& o : late_order) ranked.push_back(late[o.second]);
  return ranked;
}
}  // namespace gemmtune::sm90
