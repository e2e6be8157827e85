// gemv heuristics: the cost model that ranks configs and the enumeration order (its priors as tables of rows).
#include <algorithm>
#include <cmath>
#include <tuple>

#include "backends/gemv/gemv_config.h"

namespace gemmtune::gemv {
namespace {

// The Hopper numbers of the cost model (H100 / H200 SXM): an SM's registers and shared memory, the DRAM rate it is
// fitted to, the bytes in flight an SM needs to cover DRAM latency at that rate, the SM clock.
constexpr double kRegsPerSm = 65536.0, kSmemPerSm = 233472.0;  // 64K registers, 228 KB
constexpr double kDramBytesPerS = 4.0e12, kInflightPerSm = 49152.0, kClockHz = 1.7e9;
// A K split within the CTA costs its meeting and the CTA's slowest warp: 2% a slice (mma=1 at 8x28672x4096: ksplit 1
// ran 62.4 us, 2 and 8 the model's picks 68-71).
constexpr double kKSliceCost = 0.02;

}  // namespace

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
  const double cap = c.occ > 1 ? std::floor(kRegsPerSm / (c.occ * 32.0 * c.warps) / 8) * 8 : 255.0;
  const double regs = std::min(cap, c.ring ? 42.0 + 38 * mb + 4 * mb * nb
                                    : c.mma ? 40.0 + 8.0 * c.unroll * (2 * mb + nb) + 4 * mb * nb
                                            : 54.0 + 4.2 * nr * c.unroll + nr * t + 5.3 * t);
  const double res_by_regs = std::floor(kRegsPerSm / (std::ceil(regs / 8) * 8 * 32 * c.warps));
  const double res_by_smem =
      c.ring ? std::floor(kSmemPerSm / (ring_bytes(c, p) + static_smem(c, p) + 1024)) : 32.0;
  const double resident = std::max(1.0, std::min({64.0 / c.warps, res_by_regs, res_by_smem, 32.0}));
  // Loads in flight: a lane's slice of K runs in rounds of `unroll` chunks (mma=1: 64-k steps, two 16-byte loads per
  // row and lane each, of 16 rows), then one at a time.
  const double lane_chunks =
      std::max(1.0, std::ceil(v.k / (c.mma ? double(mma_step_k(c, p)) : 256.0) / c.ksplit / c.csplit));
  const double rounds = std::floor(lane_chunks / c.unroll) + std::fmod(lane_chunks, c.unroll);
  const double per_round = lane_chunks / rounds;
  const double ctas_per_sm = std::min(resident, ctas / sms);
  const double inflight = c.ring ? ctas_per_sm * c.warps * (c.ring - 1) * mb * 2048.0
                                 : ctas_per_sm * c.warps * (c.mma ? 4 * mb : nr) * per_round * 512.0;
  const double mlp = std::min(1.0, inflight / kInflightPerSm);
  const double per_sm = ctas / sms;
  const double imbalance = per_sm <= resident ? std::ceil(per_sm) / per_sm : 1.0 + 1.0 / std::ceil(per_sm / resident);
  const double w_bytes = static_cast<double>(v.r) * v.k * dtype_size(w_dtype(c, p)) * v.batch;
  const double mem_us =
      w_bytes / (kDramBytesPerS * mlp) * 1e6 * std::min(imbalance, 2.0) * (1 + kKSliceCost * (c.ksplit - 1));
  // Warp instructions: per 8-element W chunk 8 FMAs a vector, W's unpack, the vectors' loads and unpacks per row;
  // per warp the reductions (5 shuffles a sum), shared memory and the epilogue.
  const double issue = sms * 4 * kClockHz;
  const double chunks = static_cast<double>(v.r) * v.k / 8.0 * v.batch;
  // With mma=1 per 32 k and m-block: two W loads, 2 n-blocks' mmas, the vectors' loads shared by the m-blocks.
  // (The CUDA-core kernel measured about twice its instruction count in issue slots: 8 vectors at 8x28672x4096 ran
  // 100-135 us, the count says 55.)
  // An fp8 weight's widening: per lane and 16 bytes 8 cvt to f16, 3 more instructions a pair to bf16.
  const double widen = is_fp8(w_dtype(c, p)) ? w_bytes / 512.0 * (mma_dtype(p) == DType::bf16 ? 32 : 8) : 0.0;
  const double alu_us = c.mma ? (chunks / 64.0 * (2 + 2 * nb + nb / mb + 2) + widen) / issue * 1e6
                              : 2 * chunks * (8 * t + 8 + 9 * t / nr) / 32 / issue * 1e6;
  const double warp_us = ctas * c.warps * (c.mma ? 8 * mb * nb * (c.ksplit + 1) + 60 : nr * t * 6 + 60) / issue * 1e6;
  // A K split across CTAs writes and reads its partials through L2 and ends with the last CTA's pass over them.
  const double split_us = c.csplit > 1 ? 1.0 + csplit_ws_floats(c, p) * 4.0 * 2 / kDramBytesPerS * 1e6 : 0.0;
  return std::max(mem_us, alu_us) + warp_us + split_us + 3.0 + (c.ksplit > 1 ? 0.3 : 0.0);
}

namespace {

// Enumeration priors, as data: each row a rule read off measurements, with its evidence. enumerate_configs walks the
// product of the config fields, and these tables decide which configs it lists, how they are compiled, and which
// head the list; the cost model (estimate_cost) orders the rest. Adding a rule is adding a row.
struct ConfigRow {
  const char* what;    // the configs, in words
  const char* source;  // the evidence
  bool (*match)(const Config& c, const Problem& p, const View& v);
};

// Configs of the product that are not listed.
const ConfigRow kNotListed[] = {
    {"the CUDA-core kernel with one chunk in flight", "the kernel is built for 2-8 chunks a lane in flight",
     [](const Config& c, const Problem&, const View&) { return !c.mma && c.unroll == 1; }},
    {"a ring with two m-blocks",
     "H200: 8 stages and two m-blocks with a ring lost to 4 stages and one m-block in every whole list "
     "(docs/PERFORMANCE.md)",
     [](const Config& c, const Problem& p, const View&) {
       return c.ring != 0 && c.rows != (p.epilogue.has_glu() ? 8 : 16);
     }},
    {"block scaling with two m-blocks",
     "ptxas, sm_90a, 16x4096x4104 e4m3 block: 253-255 registers and 48-144 bytes of spills for every such config (the "
     "per-block partial sums and scales beside the loads)",
     [](const Config& c, const Problem& p, const View&) {
       return p.scaling == Scaling::block && c.rows != (p.epilogue.has_glu() ? 8 : 16);
     }},
};

// Configs compiled for 3 CTAs an SM (occ=3: __launch_bounds__'s minimum blocks), so that 24 warps an SM stream the
// weights instead of 16.
const ConfigRow kOcc3[] = {
    {"mma, loads straight into registers, 1-2 steps in flight, one m-block, 8 warps splitting K 4-8 ways, one n-block "
     "(up to 8 vectors)",
     "80 registers, no spills (4 steps, two m-blocks or ksplit 1: some spill; 100-128 registers and 2 CTAs "
     "otherwise); H200 default / occ=3: 8x4096x14336 42.3 / 33.8 us, 4x4096x14336 35.5 / 33.2, 8x28672x4096 85.4 / "
     "62.0; 16 vectors 2-19% slower at 3 CTAs, a ring level, ksplit 1 -4% to +6% (docs/PERFORMANCE.md); fp8 "
     "(ptxas, sm_90a): block scaling spills 8-104 bytes at 80 registers, and so does an fp8 weight beside 16-bit "
     "vectors (24-80 bytes: 1x4096x4096 bf16 x e4m3 with bias,gelu_tanh, 8x14336x4096 f16 x e4m3 with a GLU), and "
     "an fp8 weight read by 2-byte loads with two steps in flight (8 bytes: 3x777x4098 with C)",
     [](const Config& c, const Problem& p, const View& v) {
       return c.mma && c.ring == 0 && c.warps == 8 && c.ksplit >= 4 && c.unroll <= 2 &&
              c.rows == (p.epilogue.has_glu() ? 8 : 16) && v.t <= 8 && p.scaling != Scaling::block &&
              x_chunk_loads(c, p) == 1 && (!is_fp8(w_dtype(c, p)) || c.unroll == 1 || load_bytes(p) > 2);
     }},
};

bool any_row(const auto& table, const Config& c, const Problem& p, const View& v) {
  for (const ConfigRow& r : table)
    if (r.match(c, p, v)) return true;
  return false;
}

// The families of the list's head: the kernel (0: CUDA cores, 1: mma, 2: mma with a ring), ksplit, and for the
// CUDA-core kernel below 4 vectors its rows per warp (which K split and how many rows a warp takes turned on the
// problem and the GPU there).
using Family = std::tuple<int, int, int>;
Family family(const Config& c, const View& v) {
  const bool few = !c.mma && v.t < 4;
  return {c.ring ? 2 : c.mma ? 1 : 0, c.ksplit, few ? c.rows : 0};
}

// The head of the list, row by row: each row takes, from the configs no earlier row took, the cheapest matching
// config that `prefer` accepts, else the cheapest matching one (`per_family`: one such config of each family that no
// earlier per_family row headed, in the order of their cheapest configs). The rest follow by cost. The tuner times the first 8, and which family wins turns on how many warps
// an SM holds and what the K slices cost, which the model reads only roughly (on the H200 at 4096 weight rows ksplit 8
// of the mma kernel was fastest, at 28672 ksplit 1; the model alone put the winner 8th-60th at some problems).
// Heads never split K across CTAs: the model rates those twins too well (8x6144x4096: four of them pushed the winning
// ring config out of the first 8; at 8x4096x14336 the best of them ran level with the best plain config, at
// 16x4096x14336 4% faster: docs/PERFORMANCE.md), so they come after the heads, by cost.
struct HeadRow {
  const char* what;
  const char* source;
  bool (*match)(const Config& c, const View& v);
  bool per_family;                // one head per family (else one head for the row)
  bool (*prefer)(const Config&);  // nullptr: the cheapest
};
const HeadRow kHead[] = {
    {"from 3 vectors, an occ=3 config with ksplit 8, two steps in flight if listed",
     "H200 rank survey, every candidate timed side by side at nine problems with 4-8 vectors (N = 4096-28672, K = "
     "4096-14336): an occ=3 config of ksplit 8 or 4 was the fastest gemv config at every one (the model, fitted before "
     "occ, ranked it 22nd-59th); H100 at 3 vectors: fastest at two of four problems, within 1.7% at the others; "
     "unroll 2 the faster at eight of the nine (docs/PERFORMANCE.md)",
     [](const Config& c, const View& v) { return c.occ == 3 && c.ksplit == 8 && v.t >= 3; }, false,
     [](const Config& c) { return c.unroll == 2; }},
    {"from 3 vectors, an occ=3 config with ksplit 4, two steps in flight if listed", "as the row above",
     [](const Config& c, const View& v) { return c.occ == 3 && c.ksplit == 4 && v.t >= 3; }, false,
     [](const Config& c) { return c.unroll == 2; }},
    {"below 4 vectors, the CUDA-core kernel with at most 4 chunks in flight, per (ksplit, rows per warp)",
     "rank surveys on the H100 and the H200, twelve 1-2-vector problems (N = 1024-128256, K = 4096-14336): a "
     "CUDA-core config was the fastest at all, the mma kernel's best 0.5-20% behind; one head per ksplit put the "
     "fastest 14th-70th; unroll 8 was never the fastest (0.2-9% behind); at eight held-out 1-2-vector problems the "
     "first 8 lost 0-1.3% to the fastest gemv config (docs/PERFORMANCE.md)",
     [](const Config& c, const View& v) { return !c.mma && v.t < 4 && c.unroll <= 4; }, true, nullptr},
    {"the best of each (kernel, ksplit) family", "the same surveys: the cost model orders configs within a family",
     [](const Config&, const View&) { return true; }, true, nullptr},
};

}  // namespace

std::vector<Config> enumerate_configs(const Problem& p, const DeviceInfo& dev) {
  std::vector<Config> out;
  if (!problem_reason(p, dev).empty()) return out;
  // The CUDA-core kernel: 1-4 output rows per warp, 2-8 chunks in flight; mma=1: one or two m-blocks, 1-8 steps
  // in registers or, with one m-block, a ring of 4 stages; mma=1 also with K split across 2-8 CTAs where the row
  // groups are few (below).
  const int mrows = p.epilogue.has_glu() ? 8 : 16;
  const int64_t sms = dev.sm_count > 0 ? dev.sm_count : 132;
  const View views[2] = {make_view(p, false), make_view(p, true)};
  for (bool mma : {false, true})
    for (bool vec_m : {true, false})
      for (int warps : {4, 8})
        for (int rows : mma ? std::vector<int>{mrows, 2 * mrows} : std::vector<int>{1, 2, 4})
          for (int ksplit : {1, 2, 4, 8})
            for (int ring : mma ? std::vector<int>{0, 4} : std::vector<int>{0})
              for (int unroll : {1, 2, 4, 8}) {
                const View& v = views[vec_m];
                Config c{vec_m, warps, rows, ksplit, unroll, mma, ring};
                if (any_row(kOcc3, c, p, v)) c.occ = 3;
                if (any_row(kNotListed, c, p, v) || !config_reason(c, p, dev).empty()) continue;
                out.push_back(c);
                // K split across CTAs where the row groups alone leave SMs without two CTAs (e.g. 4096 weight rows
                // in 16-row groups): the fewest CTAs per group (2, 4, 8) that give ~2 (1.9) an SM, every warp keeping
                // 4+ steps of 64 k. From 4 vectors: below, the CUDA-core kernel wins and keeps its places in the head.
                constexpr int64_t kCsplitMinVectors = 4, kCsplitMinSteps = 4;
                const int64_t ctas = grid_x(c, v) * p.batch;
                if (!mma || v.t < kCsplitMinVectors || 10 * ctas >= 19 * sms) continue;
                for (int cs : {2, 4, 8}) {
                  if (10 * ctas * cs < 19 * sms && cs < 8) continue;
                  Config s = c;
                  s.csplit = cs;
                  if (p.k / mma_step_k(c, p) / (int64_t(ksplit) * cs) >= kCsplitMinSteps &&
                      config_reason(s, p, dev).empty())
                    out.push_back(s);
                  break;
                }
              }
  std::vector<std::pair<double, size_t>> ranked;
  for (size_t i = 0; i < out.size(); ++i) ranked.push_back({estimate_cost(out[i], p, dev), i});
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Config> sorted;
  std::vector<bool> taken(out.size(), false);
  std::vector<Family> headed;  // families that per_family rows have headed
  for (const HeadRow& row : kHead) {
    std::vector<std::pair<Family, size_t>> picks;  // the row's heads, in the order of their families' cheapest configs
    for (const auto& [cost, i] : ranked) {
      const Config& c = out[i];
      const View& v = views[c.vec_m];
      if (taken[i] || c.csplit != 1 || !row.match(c, v)) continue;
      const Family f = row.per_family ? family(c, v) : Family{-1, -1, -1};
      if (row.per_family && std::find(headed.begin(), headed.end(), f) != headed.end()) continue;
      const auto it = std::find_if(picks.begin(), picks.end(), [&](const auto& pk) { return pk.first == f; });
      if (it == picks.end())
        picks.push_back({f, i});
      else if (row.prefer && row.prefer(c) && !row.prefer(out[it->second]))
        it->second = i;
    }
    for (const auto& [f, i] : picks) {
      if (row.per_family) headed.push_back(f);
      sorted.push_back(out[i]);
      taken[i] = true;
    }
  }
  for (const auto& [cost, i] : ranked)
    if (!taken[i]) sorted.push_back(out[i]);
  return sorted;
}
}  // namespace gemmtune::gemv
