#pragma once
// The cutlass backend's config: one canonical, parseable line, e.g.
//   sched=coop,tile=128x256x64,cluster=2x1
//   sched=pingpong,tile=64x128x64,cluster=1x1
//   sched=coop,tile=128x128x128,cluster=1x2     (fp8 inputs: a K tile of 128)
// sched: the CUTLASS 3.x sm90 kernel schedule, KernelTmaWarpSpecializedCooperative (two consumer warpgroups share
// one tile: M tile >= 128) or KernelTmaWarpSpecializedPingpong (each consumer warpgroup its own tile, epilogue of
// one overlapping the other's mainloop); tile: the CTA tile M x N x K; cluster: CTAs per cluster along M x N (TMA
// multicast of B along M, of A along N). Stages are CUTLASS's automatic count for the shared memory the epilogue
// leaves (StageCountAutoCarveout).
// In layers: config, rules (the one validity function of enumerate, validate and error messages) and the
// wave-quantization ranking here; the generated translation unit in cutlass_codegen; nvcc and the .so cache in
// cutlass_nvcc.
#include <string>
#include <vector>

#include "gemmtune/device.h"
#include "gemmtune/problem.h"

namespace gemmtune::cutlass_be {

enum class Sched { coop, pingpong };

struct Config {
  Sched sched = Sched::coop;
  int tile_m = 128, tile_n = 128, tile_k = 64;
  int cluster_m = 1, cluster_n = 1;

  std::string str() const;
  static Config parse(const std::string& s);  // throws gemmtune::Error naming the bad field
  bool operator==(const Config&) const = default;
};

// The K tile: 128 bytes of a row of A and B (one TMA swizzle atom), 64 elements of a 16-bit input, 128 of fp8.
int k_tile(const Problem& p);
// "" when some cutlass config can run the problem, else "cutlass: <why>".
std::string problem_reason(const Problem& p, const DeviceInfo& dev);
// "" when `c` is valid for `p`, else "cutlass: <why>" (includes problem_reason).
std::string config_reason(const Config& c, const Problem& p, const DeviceInfo& dev);
// Estimated relative run time (lower is better): wave quantization of the tiles over the SMs, the tiles' own
// efficiency and the cluster's multicast.
double estimate_cost(const Config& c, const Problem& p, const DeviceInfo& dev);
// Valid configs for the problem, best first (at most kMaxConfigs).
inline constexpr size_t kMaxConfigs = 12;
std::vector<Config> enumerate_configs(const Problem& p, const DeviceInfo& dev);

}  // namespace gemmtune::cutlass_be
