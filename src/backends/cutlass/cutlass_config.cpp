// cutlass config: the canonical line, the rules (one validity function for enumerate, validate and error messages)
// and the wave-quantization ranking.
#include "backends/cutlass/cutlass_config.h"

#include <algorithm>
#include <cmath>

#include "backends/config_fields.h"

namespace gemmtune::cutlass_be {
namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The shapes enumerated, as a table (priors as data): CUTLASS's own sm90 profiler list for 16-bit inputs, less the
// ones that spill or rarely win. The K tile is k_tile(): 128 bytes of a row, one TMA swizzle atom.
struct Shape {
  Sched sched;
  int m, n;
};
constexpr Shape kShapes[] = {
    {Sched::coop, 128, 256}, {Sched::coop, 256, 128}, {Sched::coop, 128, 128}, {Sched::coop, 128, 64},
    {Sched::pingpong, 64, 128}, {Sched::pingpong, 128, 128}, {Sched::pingpong, 64, 256}, {Sched::pingpong, 128, 64},
    {Sched::pingpong, 64, 64},
};
constexpr int kClusters[][2] = {{1, 1}, {2, 1}, {1, 2}};

// The element count of 16 bytes of `t`: TMA's alignment of every row start and of the contiguous extent.
int64_t tma_elems(DType t) { return 16 / static_cast<int64_t>(dtype_size(t)); }

// "" or why operand `which` cannot go through TMA: 16-byte aligned base, ld and batch stride (access_bytes), and a
// contiguous extent that is a multiple of 16 bytes (CUTLASS's can_implement checks that too).
std::string tma_reason(const Problem& p, Which which) {
  const Operand& o = p.operand(which);
  const std::string name(which_name(which));
  if (p.access_bytes(which) < 16)
    return "cutlass: " + name + " is not 16-byte aligned (base align " + std::to_string(o.align) + ", ld" +
           std::string(which_lower(which)) + "=" + std::to_string(o.ld) +
           " elements): TMA needs 16-byte aligned rows";
  const int64_t extent = o.layout == Layout::row ? Problem::cols_of(which, p) : Problem::rows_of(which, p);
  if (extent % tma_elems(o.dtype) != 0)
    return "cutlass: " + name + "'s contiguous extent (" + std::to_string(extent) + " elements) is not a multiple of " +
           std::to_string(tma_elems(o.dtype)) + " (16 bytes, TMA)";
  if (p.batch > 1 && o.batch_stride == 0)
    return "cutlass: " + name + " is broadcast over the batch (batch stride 0), which the kernels do not take";
  return "";
}

bool is_16bit(DType t) { return t == DType::bf16 || t == DType::f16; }

using config::Form;
const config::Fields<Config>& fields() {
  static const config::Fields<Config> f{
      "cutlass",
      {config::choice<&Config::sched>("sched", Form::required, {{"coop", Sched::coop}, {"pingpong", Sched::pingpong}}),
       config::dims<&Config::tile_m, &Config::tile_n, &Config::tile_k>("tile", "", Form::required, 1),
       config::dims<&Config::cluster_m, &Config::cluster_n>("cluster", "", Form::required, 1)}};
  return f;
}

}  // namespace

std::string Config::str() const { return fields().str(*this); }
Config Config::parse(const std::string& s) { return fields().parse(s); }

int k_tile(const Problem& p) { return is_fp8(p.a.dtype) ? 128 : 64; }

std::string problem_reason(const Problem& p, const DeviceInfo& dev) {
  if (dev.cc_major != 9 || dev.cc_minor != 0)
    return "cutlass: the kernels are built for sm_90a (Hopper); this device is " + dev.arch();
  if (p.grouped()) return "cutlass: grouped problems are not supported";
  const bool fp8 = is_fp8(p.a.dtype) && is_fp8(p.b.dtype);
  if (!fp8 && (!is_16bit(p.a.dtype) || p.b.dtype != p.a.dtype))
    return "cutlass: A and B must both be bf16, both f16 or both fp8 (got " + std::string(dtype_name(p.a.dtype)) +
           " x " + std::string(dtype_name(p.b.dtype)) + ")";
  if (fp8) {
    // fp8 WGMMA reads both operands K-major from shared memory, which TMA fills as stored.
    if (p.a.layout != Layout::row || p.b.layout != Layout::col)
      return "cutlass: fp8 inputs need K-major operands: A row-major and B column-major";
    if (p.scaling != Scaling::tensor && p.scaling != Scaling::row)
      return "cutlass: fp8 scaling '" + std::string(scaling_name(p.scaling)) + "' is not supported (tensor or row)";
    if (p.amax) return "cutlass: amax is not supported";
  }
  if (!is_16bit(p.d.dtype) && p.d.dtype != DType::f32)
    return "cutlass: D must be bf16, f16 or f32 (got " + std::string(dtype_name(p.d.dtype)) + ")";
  const bool has_c = p.beta != 0.0f;
  if (has_c) {
    if (p.c.layout != p.d.layout) return "cutlass: C must have D's layout";
    if (!is_16bit(p.c.dtype) && p.c.dtype != DType::f32)
      return "cutlass: C must be bf16, f16 or f32 (got " + std::string(dtype_name(p.c.dtype)) + ")";
  }
  for (Which w : kOperands)
    if (std::string r = w == Which::C && !has_c ? "" : tma_reason(p, w); !r.empty()) return r;
  for (const EpiOp& op : p.epilogue.ops)
    if (op.kind == EpiOpKind::glu) return "cutlass: gated linear units (" + op.key() + ") are not supported";
  if (p.epilogue.has(EpiOpKind::residual)) {
    // The residual is read like C (TMA, D's layout, ld and batch stride) in its own dtype.
    const int64_t rs = static_cast<int64_t>(dtype_size(p.epilogue_dtype(EpiOpKind::residual)));
    const int64_t extent = p.d.layout == Layout::row ? p.n_out() : p.m;
    if ((p.d.ld * rs) % 16 != 0 || (p.batch > 1 && (p.d.batch_stride * rs) % 16 != 0) || (extent * rs) % 16 != 0)
      return "cutlass: the residual (" + std::string(dtype_name(p.epilogue_dtype(EpiOpKind::residual))) +
             ", D's ld " + std::to_string(p.d.ld) + ") is not 16-byte aligned per row: TMA needs it";
  }
  return "";
}

std::string config_reason(const Config& c, const Problem& p, const DeviceInfo& dev) {
  if (std::string r = problem_reason(p, dev); !r.empty()) return r;
  const std::string cfg = " (" + c.str() + ")";
  if (c.tile_k != k_tile(p))
    return "cutlass: the K tile must be " + std::to_string(k_tile(p)) + " for " +
           std::string(dtype_name(p.a.dtype)) + " inputs (128 bytes)" + cfg;
  if (c.tile_m != 64 && c.tile_m != 128 && c.tile_m != 256) return "cutlass: the M tile must be 64, 128 or 256" + cfg;
  if (c.tile_n != 64 && c.tile_n != 128 && c.tile_n != 256) return "cutlass: the N tile must be 64, 128 or 256" + cfg;
  if (c.tile_m * c.tile_n > 128 * 256) return "cutlass: tiles above 128x256 outputs do not fit the registers" + cfg;
  if (c.sched == Sched::coop && c.tile_m < 128)
    return "cutlass: the cooperative schedule splits the M tile over two warpgroups: it needs M tile >= 128" + cfg;
  if (c.sched == Sched::pingpong && c.tile_m > 128)
    return "cutlass: the ping-pong schedule takes M tiles of 64 or 128" + cfg;
  const bool cl_ok = (c.cluster_m == 1 && c.cluster_n == 1) || (c.cluster_m == 2 && c.cluster_n == 1) ||
                     (c.cluster_m == 1 && c.cluster_n == 2);
  if (!cl_ok) return "cutlass: the cluster must be 1x1, 2x1 or 1x2" + cfg;
  return "";
}

double estimate_cost(const Config& c, const Problem& p, const DeviceInfo& dev) {
  const int sms = std::max(1, dev.sm_count);
  const int64_t tiles = cdiv(p.m, c.tile_m) * cdiv(p.n, c.tile_n) * p.batch;
  // Wave quantization: the persistent scheduler runs tiles in waves of one tile per SM (clusters round the SMs
  // down to a multiple of their size).
  const int slots = sms / (c.cluster_m * c.cluster_n) * (c.cluster_m * c.cluster_n);
  const double waves = std::ceil(static_cast<double>(tiles) / slots);
  // A tile's time: its MMA work over the rate its shape sustains; the rate grows with the tile's arithmetic intensity
  // (m*n / (m+n) outputs per loaded element) until the tensor cores bound it.
  const double work = double(c.tile_m) * c.tile_n * p.k;
  const double intensity = double(c.tile_m) * c.tile_n / (c.tile_m + c.tile_n);
  double rate = std::min(intensity, 64.0);
  if (c.cluster_m * c.cluster_n > 1) rate *= 1.03;  // multicast halves one operand's L2 traffic
  if (c.sched == Sched::pingpong) rate *= 1.02;     // one warpgroup's epilogue hides behind the other's mainloop
  return waves * work / rate;
}

std::vector<Config> enumerate_configs(const Problem& p, const DeviceInfo& dev) {
  std::vector<std::pair<double, Config>> scored;
  if (!problem_reason(p, dev).empty()) return {};
  for (const Shape& s : kShapes)
    for (const auto& cl : kClusters) {
      Config c;
      c.sched = s.sched, c.tile_m = s.m, c.tile_n = s.n, c.tile_k = k_tile(p), c.cluster_m = cl[0], c.cluster_n = cl[1];
      if (!config_reason(c, p, dev).empty()) continue;
      // A cluster along a dimension with a single tile multicasts to nobody.
      if (c.cluster_m > 1 && cdiv(p.m, c.tile_m) < 2) continue;
      if (c.cluster_n > 1 && cdiv(p.n, c.tile_n) < 2) continue;
      scored.emplace_back(estimate_cost(c, p, dev), c);
    }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Config> out;
  for (size_t i = 0; i < scored.size() && i < kMaxConfigs; ++i) out.push_back(scored[i].second);
  return out;
}

}  // namespace gemmtune::cutlass_be
