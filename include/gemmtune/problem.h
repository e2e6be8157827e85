#pragma once
// Problem: what to compute, with no pointers.
//   D[b] (M x N) = alpha * A[b] (M x K) * B[b] (K x N) + beta * C[b] (M x N),   b in [0, batch)
// then the epilogue (gemmtune/epilogue.h). Every operand has a dtype, a layout (row- or column-major), a leading
// dimension and a batch stride, all in elements. Accumulation is fp32; with fp8 A and B, Problem::fp8_accum says
// whether the tensor core may accumulate K in its own reduced precision (gemmtune/types.h Fp8Accum).
// N is always the GEMM's N (columns of B). With a gated linear unit in the epilogue D is M x N/2 (n_out()): its
// packed ld, the residual's shape and the bytes moved follow n_out(); C stays unused (a GLU needs beta == 0).
//
// Scaled (fp8) GEMMs: with e4m3/e5m2 inputs, A and B are dequantized by fp32 scales (Problem::scaling, the pointers in
// GemmArgs) following torch._scaled_mm's conventions:
//   v = alpha * sum_k (A[m,k] * sa(m,k)) * (B[k,n] * sb(k,n)) + beta * C,   then the epilogue chain,
//   tensor: sa = scale_a[0], sb = scale_b[0]
//   row:    sa = scale_a[m] (M values), sb = scale_b[n] (N values: one per output channel of W)
//   block:  sa = scale_a[(k / 128) * M + m]           (M x ceil(K/128), M contiguous: torch's "outer-dim-major")
//           sb = scale_b[(n / 128) * ceil(K/128) + k / 128]   (ceil(N/128) x ceil(K/128) blocks, K blocks contiguous)
// An e4m3 D stores saturate(v * scale_d[0]) (+-448); with Problem::amax the kernel also writes max |v| over D (before
// scale_d) to amax[0], the statistic of delayed scaling. A 16-bit A with an e4m3 B (weight-only fp8) takes tensor or
// row scaling of B; scale_a may then be null (1).
// fp8_accum (fp8 A and B only; a 16-bit product accumulates in fp32 and takes the default, exact): exact promotes
// into fp32 at least every 128 K, fast accumulates K in the tensor core. Block scaling promotes every 128-K block by
// definition (each block's scales multiply its partial sum), so it takes exact only.
//
// Grouped GEMMs (mixture-of-experts): `groups` = G GEMMs sharing N, K, dtypes, layouts, alpha/beta and the epilogue;
// group g multiplies its rows of A by its own B (B holds G matrices, batch_stride apart) into its rows of D. The row
// counts live on the device (GemmArgs::group_rows), so a new routing needs no host sync:
//   contiguous: A is one M x K matrix, C and D one M x n_out() matrix each (batch = 1); group g owns rows
//               [end[g-1], end[g]) with end = group_rows, G int32 cumulative ends (end[-1] = 0): torch._grouped_mm's
//               `offs`. M is the capacity (A's rows): rows at or past end[G-1] belong to no group, D's are not written.
//   masked:     A, C and D hold G matrices of M = M_max rows (batch = G, set by resolve()); group g computes rows
//               [0, group_rows[g]) of its matrices (DeepGEMM's masked layout: one fixed shape for CUDA graphs). D's
//               rows past the count are not written.
// Ends or counts outside [0, M] and decreasing ends are the caller's error: kernels clamp them, so a bad routing
// splits the rows wrongly but never touches memory outside the operands. The epilogue's vectors are shared by all
// groups (N values, as for batches). fp8 scales: A's follow its rows as stored (row: M values, contiguous; G x M,
// masked; block likewise per 128-K block), B's are per group: G times the ungrouped length (torch._scaled_grouped_mm).
#include <cstdint>
#include <string>

#include "gemmtune/epilogue.h"
#include "gemmtune/types.h"

namespace gemmtune {

struct Operand {
  DType dtype = DType::bf16;
  Layout layout = Layout::row;
  int64_t ld = 0;             // leading dimension in elements; 0 = packed (set by Problem::resolve)
  int64_t batch_stride = -1;  // elements between consecutive batches; -1 = packed (set by resolve);
                              // 0 broadcasts one matrix to every batch (A, B, C only)
  int align = 16;             // bytes the base pointer is a multiple of: 16 (what an allocation or a tensor at
                              // offset 0 gives), 8, 4 or 2 (a sliced view), at least the element size. Kernels that
                              // load or store 16 bytes at a time (TMA) need 16; the run checks each pointer against it
  bool operator==(const Operand&) const = default;
};

// One of the four operands of D = A * B + C.
enum class Which : uint8_t { A, B, C, D };
inline constexpr Which kOperands[] = {Which::A, Which::B, Which::C, Which::D};
constexpr const char* which_name(Which w) { return &"A\0B\0C\0D"[2 * int(w)]; }
constexpr const char* which_lower(Which w) { return &"a\0b\0c\0d"[2 * int(w)]; }  // the suffix of lda, align_a, ...

inline constexpr int64_t kScaleBlock = 128;  // K (and N, for B) extent of one block scale (Scaling::block)

struct Problem {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  Operand a, b, c, d;
  DType accum = DType::f32;
  float alpha = 1.0f;
  float beta = 0.0f;
  Epilogue epilogue;
  Scaling scaling = Scaling::none;  // required with fp8 A or B
  bool amax = false;                // e4m3 D only: also write max |v| to GemmArgs::amax
  Grouping grouping = Grouping::none;  // grouped GEMM (above); none: groups == 1
  int64_t groups = 1;                  // G
  Fp8Accum fp8_accum = Fp8Accum::exact;  // fp8 A and B: how K accumulates (above)

  bool grouped() const { return grouping != Grouping::none; }
  // A and B both fp8: the product runs on the fp8 tensor cores, and fp8_accum applies.
  bool fp8_product() const { return is_fp8(a.dtype) && is_fp8(b.dtype); }
  // Matrices operand `which` holds: batch, except B of a contiguous grouped problem (G).
  int64_t count(Which which) const;

  // A packed problem with row-major D (and C) of dtype `out`; layouts of A and B as given.
  static Problem make(int64_t m, int64_t n, int64_t k, DType in, DType out, Layout la = Layout::row,
                      Layout lb = Layout::col, int64_t batch = 1);
  // A packed grouped problem (above): `m` is the total rows (contiguous) or M_max (masked); B holds `groups` matrices.
  static Problem make_grouped(Grouping grouping, int64_t groups, int64_t m, int64_t n, int64_t k, DType in, DType out,
                              Layout la = Layout::row, Layout lb = Layout::col);

  // Fills ld / batch_stride left at 0 with the packed value. Idempotent.
  Problem& resolve();

  // "" when the problem is well formed and supported by gemmtune as a whole; otherwise one line naming the problem.
  std::string check() const;
  // The dtype and scaling part of check(): which input/output dtypes, scalings and layouts go together.
  std::string check_scaled() const;
  // The grouping part of check(): groups, batch and grouping go together.
  std::string check_grouping() const;
  // The epilogue part of check(): the chain's own rules plus its shape rules (GLU needs an even N, ...).
  std::string check_epilogue() const;
  // check() and throw gemmtune::Error when it fails.
  void validate() const;

  // Canonical key: every field that changes which kernel is fastest or correct, no pointers, no paths.
  // alpha's value is a run-time argument and is not in the key; whether beta is zero is (it decides if C is read).
  std::string key() const;
  // Human-readable one-liner, accepted back by the CLI (see tools/gemmtune).
  std::string str() const;

  // 2*M*N*K*batch (a grouped problem at full capacity: every row of A routed)
  double flops() const;
  double min_bytes() const;  // A, B, D once (+ C when beta != 0, + the epilogue's vectors and residual)

  // Columns of D: N, or N/2 with a GLU in the epilogue.
  int64_t n_out() const;
  // Elements a vector operand of the epilogue must have (bias_col/bias_row/row_scale/col_scale, by the position of
  // its op relative to a GLU); 0 when the chain has no such op.
  int64_t epilogue_vector_len(EpiOpKind kind) const;
  // "" or a clear message when a vector of `len` elements does not fit the chain (for bindings that see tensors).
  std::string check_epilogue_vector(EpiOpKind kind, int64_t len) const;
  // The dtype of the epilogue operand of that kind (its own, else D's; bf16 for an fp8 D).
  DType epilogue_dtype(EpiOpKind kind) const;
  // The dtype an epilogue operand without its own takes: D's, or bf16 when D is fp8 (a bias or residual in e4m3
  // would lose more than the GEMM's own rounding).
  DType epilogue_default_dtype() const;

  // fp32 values GemmArgs::scale_a (A) or scale_b (B) holds under this problem's scaling: 1 (tensor), M or N
  // (row), M * ceil(K/128) or ceil(N/128) * ceil(K/128) (block); 0 without scaling.
  int64_t scale_len(Which which) const;

  // The widest access, a power of two up to 16 bytes, on which every row (column) of operand `which` starts: the
  // largest power of two dividing its pointer alignment, its pitch in bytes and, with batch > 1, its batch stride in
  // bytes. 16: TMA and 16-byte loads take the operand as it is; less: the backends' narrower paths.
  int access_bytes(Which which) const;

  // Number of rows/cols of an operand as stored (e.g. A is M x K; D is M x n_out()).
  static int64_t rows_of(Which which, const Problem& p);
  static int64_t cols_of(Which which, const Problem& p);
  const Operand& operand(Which which) const;

  bool operator==(const Problem&) const = default;
};

// A problem resolved and checked, once: packed leading dimensions and batch strides filled in (Problem::resolve),
// check() passed, and the facts every stage reads derived. Only resolve() makes one, so holding one proves the problem
// valid: backends take this type only. It reads as the Problem it holds (p->m, or a `const Problem&` parameter).
class ResolvedProblem {
 public:
  const Problem& problem() const { return p_; }
  operator const Problem&() const { return p_; }  // NOLINT(google-explicit-constructor): it is that problem
  const Problem* operator->() const { return &p_; }

  const std::string& key() const { return key_; }  // Problem::key()
  int64_t n_out() const { return n_out_; }         // Problem::n_out()
  bool has_c() const { return p_.beta != 0.0f; }   // C is read
  // Problem's per-operand facts: rows_of, cols_of, count, access_bytes, scale_len.
  int64_t rows(Which w) const { return ops_[static_cast<int>(w)].rows; }
  int64_t cols(Which w) const { return ops_[static_cast<int>(w)].cols; }
  int64_t count(Which w) const { return ops_[static_cast<int>(w)].count; }
  int access_bytes(Which w) const { return ops_[static_cast<int>(w)].access; }
  int64_t scale_len(Which w) const { return ops_[static_cast<int>(w)].scale_len; }
  const Operand& operand(Which w) const { return p_.operand(w); }

 private:
  friend ResolvedProblem resolve(const Problem& p);
  ResolvedProblem() = default;
  struct Facts {
    int64_t rows = 0, cols = 0, count = 1, scale_len = 0;
    int access = 16;
  };
  Problem p_;
  std::string key_;
  int64_t n_out_ = 0;
  Facts ops_[4];
};

// `p` resolved and checked; throws gemmtune::Error with check()'s reason when the problem is refused.
ResolvedProblem resolve(const Problem& p);

// The pointers of one call.
struct GemmArgs {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;  // may be null when beta == 0
  void* d = nullptr;
  // Epilogue operands (see gemmtune/epilogue.h); each must be set when the chain has the op, else ignored.
  const void* bias = nullptr;       // bias or bias_row
  const void* residual = nullptr;   // shaped like D (same layout, ld and batch stride)
  const void* row_scale = nullptr;  // M elements
  const void* col_scale = nullptr;  // N or N/2 elements (before / after a GLU)
  // fp8 (see Problem): the dequantization scales (Problem::scale_len values each), D's output scale (an e4m3 D) and
  // the amax output (Problem::amax; written, not accumulated into). All fp32.
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
  const float* scale_d = nullptr;
  float* amax = nullptr;
  // Grouped problems (Problem::grouping): G int32 on the device, the cumulative row ends (contiguous) or the row
  // counts (masked) of the groups. Required by a grouped problem (Gemm::run throws without it); an ungrouped problem
  // ignores it.
  const int32_t* group_rows = nullptr;
};

}  // namespace gemmtune
