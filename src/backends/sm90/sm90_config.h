#pragma once
// The sm90 backend's config: one canonical, parseable line, e.g.
//   tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8[,tiles=dynamic|gpc][,tail=sk][,epi=warp][,swap=1]
//   [,load=cp][,acc=fast|promote]
// In layers: config (parse / print, sm90_config.cpp), rules (the single validity function used by enumerate(),
// validate() and error messages, sm90_rules.cpp), plan (derived once from the kernel's spec,
// kernels/sm90/sm90_spec.cuh, which the kernels read too), heuristics (cost model and enumeration order,
// sm90_heuristics.cpp).
#include <string>
#include <vector>

#include "backends/sm90/sm90_plan.h"
#include "gemmtune/device.h"
#include "gemmtune/problem.h"

namespace gemmtune::sm90 {

// Which cluster takes which tile: static (cluster c takes tiles c, c + clusters, ...; omitted from the string),
// "tiles=dynamic" (from a global counter as the clusters need them: its own kernel), or "tiles=gpc" (the static kernel
// with GPC-major cluster ids, sm90_cluster_order.h: a host table, the same kernel as static).
enum class TileOrder { static_order, dynamic, gpc };

// How an fp8 kernel accumulates K ("acc=", fp8 configs only): fast = all of K in the tensor core (cuBLASLt's
// FAST_ACCUM), promote = each 128-K block's products added into fp32 accumulators on the CUDA cores (the block
// scales' path; full fp32 accumulation for tensor / row scaling). It follows the problem's fp8_accum (fast: acc=fast,
// exact: acc=promote); config_reason refuses the other. 16-bit configs: none (not printed).
enum class Accum { none, fast, promote };

struct Config {
  int bm = 128, bn = 256, bk = 64;
  int stages = 4;
  int cm = 1, cn = 1;
  bool pingpong = false;
  bool raster_n = false;  // false: "m", true: "n"
  int group = 8;
  TileOrder tiles = TileOrder::static_order;
  bool sk = false;        // "tail=sk": the last round and a half of tiles shared out by k-blocks (stream-K tail);
                          // with fewer tiles than clusters, all tiles split over the clusters (split mode)
  bool epi_warp = false;  // "epi=warp": each warp TMA-stores its own epilogue pieces (GemmConfig::kEpiWarp)
  bool swap = false;      // "swap=1": the other orientation (kernel M = the problem's N; decode sizes: the weights on
                          // the wgmma M side, the tokens on N), D stored transposed (EpilogueTransposedStore)
  bool cp = false;        // "load=cp": the operands TMA cannot describe (A, B or both) loaded with cp.async by the
                          // producer warpgroup; the piece widths follow from the problem (OperandDesc::access)
  Accum acc = Accum::none;  // "acc=fast|promote": fp8 inputs (tile K 128)

  bool dynamic() const { return tiles == TileOrder::dynamic; }
  bool gpc() const { return tiles == TileOrder::gpc; }

  std::string str() const;
  static Config parse(const std::string& s);  // throws gemmtune::Error naming the bad field
  bool operator==(const Config&) const = default;
};

// ---- config ----
// Kernel view of a problem (col-major D rewritten as the transposed problem; `swap`: the other orientation, see
// orient()). Throws nothing; see problem_reason().
KernelView kernel_view(const ResolvedProblem& p, bool swap = false);
// What sm90 derives from a problem once (Backend::analyze), read by the rules, the heuristics and the stages: its
// kernel view in each orientation (config swap=0 / swap=1).
struct Analysis {
  explicit Analysis(const ResolvedProblem& p) : problem(p), views{kernel_view(p, false), kernel_view(p, true)} {}
  ResolvedProblem problem;
  KernelView views[2];
  const KernelView& view(bool swap) const { return views[swap ? 1 : 0]; }
};
// ---- loads ----
// Whether TMA can load an operand: tma_ok (sm90_plan.h). Otherwise load=cp copies it in cp.async pieces of
// OperandDesc::access bytes; below 4 (a pitch odd in elements, a 2-byte aligned pointer) cp.async cannot load it.
// True when TMA cannot load A or B of the view: only load=cp configs run it.
bool needs_cp(const KernelView& v);
// One phrase for `list`: how A and B are loaded and why, e.g. "A, B: TMA" or
// "A: cp.async 8-byte (lda=4100 is 8200 bytes); B: TMA".
std::string load_path(const Problem& p, const KernelView& v);
// ---- rules ----
// True when D's rows (in the kernel view, after a GLU) are not a multiple of 16 bytes, so the epilogue needs its
// bounds-checked edge copy (TMA stores clip at 16-byte granularity); never with swap (no TMA store). Decides the
// kEpiDirect flag of a TMA-stored D (d_tma_store; otherwise every strip is copied out: kEpiNoTmaD), and the spill
// prior of the ranking.
bool epi_direct(const Problem& p, const KernelView& v);
// How the epilogue writes D for the view, one phrase for `list`: "D: TMA store", or the staged bounds-checked stores
// and why (e.g. "ldd=50257 is not a multiple of 8 elements"), or swap=1's element stores.
std::string store_path(const Problem& p, const KernelView& v);
// "" when the sm90 kernels can run the problem with some config, else "sm90: <why>".
std::string problem_reason(const ResolvedProblem& p, const DeviceInfo& dev);
// fp8 inputs: "; fp8 <A> x <B>: <how the scales apply and K accumulates>" for `path`; "" otherwise.
std::string fp8_path(const Problem& p);
// "" when `c` is valid for `p` on `dev`, else "sm90: <why>" (includes problem_reason).
std::string config_reason(const Config& c, const Analysis& an, const DeviceInfo& dev);
// ---- plan ----
// The kernel's compile-time spec for the problem's kernel view (kernels/sm90/sm90_spec.cuh; tiles=gpc is the static
// kernel) and the plan derived from it: shared memory, TMA boxes, epilogue strips, accumulator registers.
gt_sm90::Spec spec(const Config& c, const KernelView& v);
gt_sm90::Plan plan(const Config& c, const KernelView& v);
// The plan of a view with K-major operands, no scaling and D of `out_type`: every number but the MN-major operands'
// box rows, which no shared-memory size depends on.
gt_sm90::Plan plan(const Config& c, int out_type, int grouped = 0);
// That view (K-major operands, no scaling, D of `out_type`).
KernelView view_of(int out_type, int grouped = 0);
// The spec as the JIT unit's template argument: a designated initializer naming every field.
std::string spec_literal(const gt_sm90::Spec& s);
// ---- heuristics ----
// The device's SMs, or the H100/H200's 132 where the device info has none (enumeration without a GPU).
inline int sm_count(const DeviceInfo& dev) { return dev.sm_count > 0 ? dev.sm_count : 132; }
// Cluster tiles of the problem (the tile scheduler's `total`). A grouped problem's depend on its group sizes, known
// on the device only (kernels/scheduler/group_tiles.cuh): its bound, M / BM + G tile rows for contiguous groups.
inline int64_t cluster_tiles(const Config& c, const KernelView& v) {
  auto cdiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  const int64_t m = v.grouped == 1 ? (v.m / c.bm + v.groups) * c.bm : v.m;
  return cdiv(cdiv(m, c.bm), c.cm) * cdiv(cdiv(v.n, c.bn), c.cn) * v.batch;
}
// The most ring stages (<= 7; decode tiles — swap=1 or tile N < 64 — <= 16) whose shared memory fits on the device;
// with epi=warp, with room for 16-row pieces; a grouped view's tile prefix and a block scaled one's scale slots
// included.
int max_stages(const Config& c, const KernelView& v, const DeviceInfo& dev);
// Estimated relative run time (lower is better) for ranking.
double estimate_cost(const Config& c, const Analysis& an, const DeviceInfo& dev);
// Valid configs for the problem, best first.
std::vector<Config> enumerate_configs(const Analysis& an, const DeviceInfo& dev);

}  // namespace gemmtune::sm90
