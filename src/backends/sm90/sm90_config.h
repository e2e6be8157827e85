#pragma once
// The sm90 backend's config: one canonical, parseable line, e.g.
//   tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8[,tiles=dynamic|gpc][,tail=sk][,epi=warp][,swap=1]
// and the single validity function used by enumerate() (pruning), validate() and error messages.
#include <string>
#include <vector>

#include "backends/sm90/sm90_plan.h"
#include "gemmtune/device.h"
#include "gemmtune/problem.h"

namespace gemmtune::sm90 {

struct Config {
  int bm = 128, bn = 256, bk = 64;
  int stages = 4;
  int cm = 1, cn = 1;
  bool pingpong = false;
  bool raster_n = false;  // false: "m", true: "n"
  int group = 8;
  bool dynamic = false;   // tile order: static (omitted from the string), "tiles=dynamic" or "tiles=gpc"
  bool gpc = false;       // static order with GPC-major cluster ids (sm90_cluster_order.h); same kernel as static
  bool sk = false;        // "tail=sk": the last round and a half of tiles shared out by k-blocks (stream-K tail);
                          // with fewer tiles than clusters, all tiles split over the clusters (split mode)
  bool epi_warp = false;  // "epi=warp": each warp TMA-stores its own epilogue pieces (GemmConfig::kEpiWarp)
  bool swap = false;      // "swap=1": the other orientation (kernel M = the problem's N; decode sizes: the weights on
                          // the wgmma M side, the tokens on N), D stored transposed (EpilogueTransposedStore)

  std::string str() const;
  static Config parse(const std::string& s);  // throws gemmtune::Error naming the bad field
  bool operator==(const Config&) const = default;
};

// Kernel view of a problem (col-major D rewritten as the transposed problem; `swap`: the other orientation, see
// make_kernel_view). Throws nothing; see problem_reason().
KernelView kernel_view(const Problem& p, bool swap = false);
// True when D's rows (in the kernel view, after a GLU) are not a multiple of 16 bytes, so the epilogue needs its
// bounds-checked edge copy (TMA stores clip at 16-byte granularity); never with swap (no TMA store). Decides the
// kEpiDirect flag and the register budget of a config.
bool epi_direct(const Problem& p, const KernelView& v);
// "" when the sm90 kernels can run the problem with some config, else "sm90: <why>".
std::string problem_reason(const Problem& p, const DeviceInfo& dev);
// "" when `c` is valid for `p` on `dev`, else "sm90: <why>" (includes problem_reason).
std::string config_reason(const Config& c, const Problem& p, const DeviceInfo& dev);
// Dynamic shared memory of the config's kernel (mirrors GemmConfig::kSmemBytes).
int smem_bytes(const Config& c, int out_type);
// The config's epilogue strip width in bytes — the D map's box — and strip buffers per consumer warpgroup of the
// warpgroup form (GemmConfig::kEpiBytes, kEpiBufs: gt_sm90::epi_strip_bytes, epi_buffers); with epi=warp 128-byte
// strips (or the whole row when it is shorter) and the tail strip of epi_tail_bytes (GemmConfig::kEpiTailBytes, the
// tail D map's box; 0: none).
int epi_bytes(const Config& c, int out_type);
int epi_tail_bytes(const Config& c, int out_type);
int epi_buffers(const Config& c, int out_type);
// Rows of one epilogue store, the D maps' box rows (GemmConfig::kEpiRows: 64, or a warp's 16 or 8 with epi=warp).
int epi_rows(const Config& c);
// m64 wgmma slabs per consumer warpgroup and fp32 accumulator registers per thread (mirror GemmConfig::kSlabs,
// kAccRegs).
inline int slabs(const Config& c) { return (c.pingpong ? c.bm : c.bm / 2) / 64; }
inline int acc_regs(const Config& c) { return slabs(c) * c.bn / 2; }
// Cluster tiles of the problem (the tile scheduler's `total`).
inline int64_t cluster_tiles(const Config& c, const KernelView& v) {
  auto cdiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  return cdiv(cdiv(v.m, c.bm), c.cm) * cdiv(cdiv(v.n, c.bn), c.cn) * v.batch;
}
// The most ring stages (<= 7; decode tiles — swap=1 or tile N < 64 — <= 16) whose shared memory fits on the device;
// with epi=warp, with room for 16-row pieces.
int max_stages(const Config& c, int out_type, const DeviceInfo& dev);
// Estimated relative run time (lower is better) for ranking.
double estimate_cost(const Config& c, const Problem& p, const DeviceInfo& dev);
// Valid configs for the problem, best first.
std::vector<Config> enumerate_configs(const Problem& p, const DeviceInfo& dev);

}  // namespace gemmtune::sm90
