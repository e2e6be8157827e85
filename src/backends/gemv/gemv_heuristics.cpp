// gemv heuristics: the cost model that ranks configs and the enumeration order.
#include <algorithm>
#include <cmath>
#include <tuple>

#include "backends/gemv/gemv_config.h"

namespace gemmtune::gemv {

double estimate_cost(const Config& c, const Problem& p, const DeviceInfo& dev) {
  // Fitted to every config of ten decode problems timed side by side on the H200 (docs/PERFORMANCE.md): the
  // model's top 8 held a config within 1.4% of the best measured at each.
  const View v = make_view(p, c.vec_m);
  const double t = static_cast<double>(v.t);
  // W rows per warp; with mma=1 m-blocks of 16 rows and n-blocks of 8 vectors.
  const double mb = c.mma ? c.rows / (p.epilogue.has_glu() ? 8 : 16) : 0, nb = std::ceil(t / 8);
  const double nr = c.mma ? 16 * mb : w_rows(c, p);
  const double sms = dev.sm_count > 0 ? dev.sm_count : 132;
  const double ctas = static_cast<double>(grid_x(c, v)) * v.batch * c.csplit;
  // Registers per thread (ptxas, sm_90a; CUDA-core kernel fitted over 280 configs: mean error 11).
  // (A ring holds no weights in registers: its copy addresses, the fragments of one step and the vectors'; ptxas:
  // 88 with one m-block, 126 with two, at 16 vectors.)
  // occ > 1 caps them at what occ CTAs an SM leave (__launch_bounds__; ptxas rounds to 8).
  const double cap = c.occ > 1 ? std::floor(65536.0 / (c.occ * 32.0 * c.warps) / 8) * 8 : 255.0;
  const double regs = std::min(cap, c.ring ? 42.0 + 38 * mb + 4 * mb * nb
                                    : c.mma ? 40.0 + 8.0 * c.unroll * (2 * mb + nb) + 4 * mb * nb
                                            : 54.0 + 4.2 * nr * c.unroll + nr * t + 5.3 * t);
  const double res_by_regs = std::floor(65536.0 / (std::ceil(regs / 8) * 8 * 32 * c.warps));
  const double res_by_smem =
      c.ring ? std::floor(233472.0 / (ring_bytes(c, p) + static_smem(c, p) + 1024)) : 32.0;  // 228 KB an SM
  const double resident = std::max(1.0, std::min({64.0 / c.warps, res_by_regs, res_by_smem, 32.0}));
  // Loads in flight: a lane's slice of K runs in rounds of `unroll` chunks (mma=1: 64-k steps, two 16-byte loads per
  // row and lane each, of 16 rows), then one at a time.
  const double lane_chunks = std::max(1.0, std::ceil(v.k / (c.mma ? 64.0 : 256.0) / c.ksplit / c.csplit));
  const double rounds = std::floor(lane_chunks / c.unroll) + std::fmod(lane_chunks, c.unroll);
  const double per_round = lane_chunks / rounds;
  const double ctas_per_sm = std::min(resident, ctas / sms);
  const double inflight = c.ring ? ctas_per_sm * c.warps * (c.ring - 1) * mb * 2048.0
                                 : ctas_per_sm * c.warps * (c.mma ? 4 * mb : nr) * per_round * 512.0;
  const double mlp = std::min(1.0, inflight / 49152.0);  // ~48 KB per SM cover the latency at the DRAM rate
  const double per_sm = ctas / sms;
  const double imbalance = per_sm <= resident ? std::ceil(per_sm) / per_sm : 1.0 + 1.0 / std::ceil(per_sm / resident);
  const double w_bytes = static_cast<double>(v.r) * v.k * 2 * v.batch;
  // K slices cost their meeting and the CTA's slowest warp: 2% a slice (mma=1 at 8x28672x4096: ksplit 1 ran 62.4 us,
  // 2 and 8 the model's picks 68-71).
  const double mem_us = w_bytes / (4.0e12 * mlp) * 1e6 * std::min(imbalance, 2.0) * (1 + 0.02 * (c.ksplit - 1));
  // Warp instructions: per 8-element W chunk 8 FMAs a vector, W's unpack, the vectors' loads and unpacks per row;
  // per warp the reductions (5 shuffles a sum), shared memory and the epilogue.
  const double issue = sms * 4 * 1.7e9;
  const double chunks = static_cast<double>(v.r) * v.k / 8.0 * v.batch;
  // With mma=1 per 32 k and m-block: two W loads, 2 n-blocks' mmas, the vectors' loads shared by the m-blocks.
  // (The CUDA-core kernel measured about twice its instruction count in issue slots: 8 vectors at 8x28672x4096 ran
  // 100-135 us, the count says 55.)
  const double alu_us = c.mma ? chunks / 64.0 * (2 + 2 * nb + nb / mb + 2) / issue * 1e6
                              : 2 * chunks * (8 * t + 8 + 9 * t / nr) / 32 / issue * 1e6;
  const double warp_us = ctas * c.warps * (c.mma ? 8 * mb * nb * (c.ksplit + 1) + 60 : nr * t * 6 + 60) / issue * 1e6;
  // A K split across CTAs writes and reads its partials through L2 and ends with the last CTA's pass over them.
  const double split_us = c.csplit > 1 ? 1.0 + csplit_ws_floats(c, p) * 4.0 * 2 / 4.0e12 * 1e6 : 0.0;
  return std::max(mem_us, alu_us) + warp_us + split_us + 3.0 + (c.ksplit > 1 ? 0.3 : 0.0);
}

std::vector<Config> enumerate_configs(const Problem& p, const DeviceInfo& dev) {
  std::vector<Config> out;
  if (!problem_reason(p, dev).empty()) return out;
  // The CUDA-core kernel: 1-4 output rows per warp, 2-8 chunks in flight; mma=1: one or two m-blocks, 1-8 steps
  // in registers or, with one m-block, a ring of 4 stages (on the H200 8 stages and two m-blocks with a ring lost to
  // 4 stages and one m-block in every whole list of docs/PERFORMANCE.md); mma=1 also with K split across 2-8 CTAs
  // where the row groups are few (docs/PERFORMANCE.md).
  const int mrows = p.epilogue.has_glu() ? 8 : 16;
  const int64_t sms = dev.sm_count > 0 ? dev.sm_count : 132;
  for (bool mma : {false, true})
    for (bool vec_m : {true, false})
      for (int warps : {4, 8})
        for (int rows : mma ? std::vector<int>{mrows, 2 * mrows} : std::vector<int>{1, 2, 4})
          for (int ksplit : {1, 2, 4, 8})
            for (int ring : mma ? std::vector<int>{0, 4} : std::vector<int>{0})
              for (int unroll : {1, 2, 4, 8}) {
                const View v = make_view(p, vec_m);
                Config c{vec_m, warps, rows, ksplit, unroll, mma, ring};
                // One n-block of vectors (T <= 8), one m-block, loads straight into registers (1-2 steps), 8 warps
                // splitting K 4-8 ways: compiled for 3 CTAs an SM (80 registers, no spills; with 4 steps in flight,
                // two m-blocks or ksplit 1 some spill; 100-128 registers and 2 CTAs otherwise), so that 24
                // warps an SM stream the weights instead of 16. On the H200 (docs/PERFORMANCE.md), side by side,
                // default / occ=3: 8x4096x14336 42.3 / 33.8 us (ksplit 8, unroll 2), 42.1 / 35.6, 38.0 / 36.5
                // (ksplit 4); 4x4096x14336 35.5 / 33.2, 35.7 / 34.6, 37.6 / 36.8; 8x28672x4096 85.4 / 62.0, 85.0 /
                // 64.4, 78.6 / 61.6 (cuBLASLt 34.4, 34.7, 62.4). Not with 16 vectors (two n-blocks: 2-19% slower
                // at 3 CTAs), a ring (level), or ksplit 1 (-4% to +6%).
                if (mma && ring == 0 && warps == 8 && ksplit >= 4 && unroll <= 2 && rows == mrows && v.t <= 8)
                  c.occ = 3;
                if (!((mma || unroll > 1) && (ring == 0 || rows == mrows) && config_reason(c, p, dev).empty()))
                  continue;
                out.push_back(c);
                // K split across CTAs where the row groups alone leave SMs without two CTAs (e.g. 4096 weight rows
                // in 16-row groups): the fewest CTAs per group (2, 4, 8) that give ~2 an SM, every warp keeping 4+
                // steps of 64 k. From 4 vectors: below, the CUDA-core kernel wins and keeps its places in the head.
                const int64_t ctas = grid_x(c, v) * p.batch;
                if (!mma || v.t < 4 || 10 * ctas >= 19 * sms) continue;
                for (int cs : {2, 4, 8}) {
                  if (10 * ctas * cs < 19 * sms && cs < 8) continue;
                  Config s = c;
                  s.csplit = cs;
                  if (p.k / 64 / (int64_t(ksplit) * cs) >= 4 && config_reason(s, p, dev).empty()) out.push_back(s);
                  break;
                }
              }
  std::vector<std::pair<double, size_t>> ranked;
  for (size_t i = 0; i < out.size(); ++i) ranked.push_back({estimate_cost(out[i], p, dev), i});
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // The head of the list holds the best of each (kernel, ksplit) family, best family first, then the rest by cost:
  // which family wins turns on how many warps an SM holds and what the K slices cost, which the model reads only
  // roughly (on the H200, at 4096 weight rows ksplit 8 of the mma kernel was fastest, at 28672 ksplit 1; the model
  // alone put the winner 8th-60th at some problems), and the tuner times the first 8. Heads are configs without a
  // K split across CTAs: the model rates those twins too well (8x6144x4096: four of them pushed the winning ring
  // config out of the first 8; at 8x4096x14336 the best of them ran level with the best plain config, at
  // 16x4096x14336 4% faster: docs/PERFORMANCE.md), so they come after the heads, by cost.
  std::vector<Config> sorted;
  std::vector<bool> taken(out.size(), false);
  // From 3 vectors, an occ=3 config of each K split (8, 4) goes first: on the H200 one of them was the
  // fastest gemv config at every problem with 4-8 vectors of a rank survey (every candidate timed side by side, nine
  // problems: N = 4096-28672, K = 4096-14336), which the model, fitted before occ, ranked 22nd-59th
  // (docs/PERFORMANCE.md); on the H100 at 3 vectors it was the fastest at two of four problems and within 1.7% at
  // the others. Below 3 vectors the CUDA-core kernel won.
  // Two steps in flight: unroll 2 was the faster of the two at eight of those nine problems.
  for (int ks : {8, 4}) {
    size_t pick = out.size();
    for (const auto& [cost, i] : ranked)
      if (out[i].occ == 3 && out[i].ksplit == ks && out[i].csplit == 1 && make_view(p, out[i].vec_m).t >= 3 &&
          (pick == out.size() || (out[i].unroll == 2 && out[pick].unroll != 2)))
        pick = i;
    if (pick < out.size()) {
      sorted.push_back(out[pick]);
      taken[pick] = true;
    }
  }
  // Below 4 vectors the CUDA-core kernel's heads come next, one per (ksplit, rows per warp) family, each with at most
  // 4 chunks in flight: at all twelve 1-2-vector problems of two rank surveys (the H100 and the H200; N = 1024-
  // 128256, K = 4096-14336) a CUDA-core config was the fastest, the mma kernel's best 0.5-20% behind; which K split
  // and how many rows a warp takes turned on the problem and the GPU (one head per ksplit put the fastest 14th-70th),
  // and unroll 8, the model's pick in many families, was never the fastest (0.2-9% behind). At eight 1-2-vector
  // problems surveyed afterwards the first 8 lost 0-1.3% to the fastest gemv config (one head per ksplit: 0.2-7.1%;
  // docs/PERFORMANCE.md).
  std::vector<std::tuple<int, int, int>> families;  // (CUDA cores / mma / mma with a ring, ksplit, rows below 4)
  for (bool cuda_core_heads : {true, false})
    for (const auto& [cost, i] : ranked) {
      const Config& c = out[i];
      if (taken[i] || c.csplit != 1) continue;
      const bool few = !c.mma && make_view(p, c.vec_m).t < 4;
      if (cuda_core_heads && !(few && c.unroll <= 4)) continue;
      const std::tuple<int, int, int> f{c.ring ? 2 : c.mma ? 1 : 0, c.ksplit, few ? c.rows : 0};
      if (std::find(families.begin(), families.end(), f) != families.end()) continue;
      families.push_back(f);
      sorted.push_back(c);
      taken[i] = true;
    }
  for (const auto& [cost, i] : ranked)
    if (!taken[i]) sorted.push_back(out[i]);
  return sorted;
}
}  // namespace gemmtune::gemv
