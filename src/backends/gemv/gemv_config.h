#pragma once
// The gemv backend's config: one canonical, parseable line, e.g.
//   vec=m,warps=8,rows=2,ksplit=4,unroll=4          (kernels/gemv/gemv_kmajor.cuh: FMAs on the CUDA cores)
//   vec=m,warps=4,rows=16,ksplit=2,unroll=4,mma=1   (kernels/gemv/gemv_mma.cuh: mma.sync on the tensor cores)
//   vec=m,warps=4,rows=16,ksplit=2,unroll=1,mma=1,ring=4   (the same, the weights through a shared-memory ring)
//   vec=m,warps=8,rows=16,ksplit=2,unroll=2,mma=1,csplit=4 (the same, K also split across 4 CTAs)
// vec: which of the problem's dimensions holds the few vectors (m: M rows of A against B's N columns as the matrix;
// n: N columns of B against A's M rows; at most 8 vectors, 16 with mma=1); warps per CTA; rows: output rows per warp
// (1-4; with mma=1 m-blocks of 16 weight rows: 16 or 32, or 8 or 16 with a GLU, whose m-blocks hold 8 gate and 8 up
// rows); ksplit: warps that share one row group's K; unroll: 16-byte chunks (mma=1: 64-k steps, two chunks) of each
// weight row a lane has in flight; ring (mma=1 only, unroll 1): stages of a per-warp cp.async ring in shared memory
// (64-k steps of the warp's weight rows; 0 = loads straight into registers); csplit (mma=1 only): CTAs that share one
// row group's K (1, 2, 4 or 8; their partial sums meet in a per-stream workspace, the last CTA stores); occ: the CTAs
// per SM the kernel is compiled for (__launch_bounds__'s minimum blocks: a register cap of 64K / (occ x threads)), so
// that more warps stream the weights (default 1: as many registers as the code wants).
// fp8 (an e4m3/e5m2 weight, the vectors fp8 or 16-bit; tensor, row or block scaling) runs on mma=1 only: the same
// config fields, the element types and the scaling go into the unit as template arguments.
// In layers: config and the launch sizes (gemv_config.cpp; the kernels' sizes: kernels/gemv/gemv_params.cuh), rules
// (the single validity function of enumerate(), validate() and error messages: gemv_rules.cpp), heuristics (cost
// model and enumeration order: gemv_heuristics.cpp).
#include <string>
#include <vector>

#include "gemmtune/device.h"
#include "gemmtune/problem.h"

namespace gemmtune::gemv {

constexpr int kMaxVectors = 16;   // mma=1; the CUDA-core kernel takes 8

struct Config {
  bool vec_m = true;
  int warps = 8;
  int rows = 2;
  int ksplit = 1;
  int unroll = 4;
  bool mma = false;
  int ring = 0;
  int csplit = 1;
  int occ = 1;

  std::string str() const;
  static Config parse(const std::string& s);  // throws gemmtune::Error naming the bad field
  bool operator==(const Config&) const = default;
};

// The problem as the kernel sees it: T vectors of K elements against R rows of W (R_out = rows after a GLU).
struct View {
  int64_t t = 0, r = 0, r_out = 0, k = 0, batch = 1;
  // Elements: W row r of batch b at w + b * w_batch + r * ldw; vector t at x + b * x_batch + t * ldx; output (t, r)
  // at d + b * d_batch + t * d_t + r * d_r (C likewise).
  int64_t ldw = 0, w_batch = 0, ldx = 0, x_batch = 0;
  int64_t d_t = 0, d_r = 0, d_batch = 0, c_t = 0, c_r = 0, c_batch = 0;
  bool w_is_b = true;  // W is the problem's B (vec=m), else its A
};
View make_view(const Problem& p, bool vec_m);

// W rows per warp (a GLU's gate and up rows per output row).
inline int w_rows(const Config& c, const Problem& p) { return p.epilogue.has_glu() ? 2 * c.rows : c.rows; }
// Vectors a config's kernel takes: 8 on the CUDA cores, 16 (two n-blocks) with mma=1.
inline int max_vectors(const Config& c) { return c.mma ? 16 : 8; }

// fp8 (kernels/gemv/gemv_mma.cuh WT / XT): the element types of the weights W and the vectors X (B and A with
// vec=m), the mma's 16-bit type (bf16 when either is bf16, else f16: fp8 widens to both exactly), and
// the 16-byte loads of the vectors per 16-byte weight chunk (2 for an fp8 W beside 16-bit vectors, else 1).
DType w_dtype(const Config& c, const Problem& p);
DType x_dtype(const Config& c, const Problem& p);
DType mma_dtype(const Problem& p);
int x_chunk_loads(const Config& c, const Problem& p);
// k values of one step of the mma kernel: 128 bytes of each weight row (64 of a 16-bit W, 128 of an fp8 one).
int mma_step_k(const Config& c, const Problem& p);

// Bytes of one global load of A and B (16, 8, 4 or 2; the kernels' VB): the widest that every row start of both
// operands is aligned to, the gcd of 16, each one's ld and (batch > 1) batch stride in bytes and its declared base
// pointer alignment (Operand::align). 16 for packed problems whose K is a multiple of 8 and 16-byte aligned pointers.
int load_bytes(const Problem& p);
// One phrase for `list`: how the kernels read the rows, and what limits the width, e.g. "rows by 16-byte loads",
// "rows by 4-byte loads (ldb=4100: 8200 bytes)".
std::string load_path(const Problem& p);

// "" when some gemv config can run the problem, else "gemv: <why>".
std::string problem_reason(const Problem& p, const DeviceInfo& dev);
// "" when `c` is valid for `p` on `dev`, else "gemv: <why>" (includes problem_reason).
std::string config_reason(const Config& c, const Problem& p, const DeviceInfo& dev);
// Static shared memory of the mma kernel: where the K slices of a row group meet (gemv_mma.cuh `red`; 0 without).
int64_t static_smem(const Config& c, const Problem& p);
// Dynamic shared memory of a CTA: the ring (0 without one).
int ring_bytes(const Config& c, const Problem& p);
// CTAs along x of the launch grid (output row groups; batches along y, the K split across CTAs along z).
int64_t grid_x(const Config& c, const View& v);
// The K split across CTAs: fp32 partials and counts per stream (0 / 0 without one).
int64_t csplit_ws_floats(const Config& c, const Problem& p);
int64_t csplit_counts(const Config& c, const Problem& p);
// Estimated relative run time (lower is better), for ranking.
double estimate_cost(const Config& c, const Problem& p, const DeviceInfo& dev);
// Valid configs for the problem, best first.
std::vector<Config> enumerate_configs(const Problem& p, const DeviceInfo& dev);

}  // namespace gemmtune::gemv
