#include "gemmtune/problem.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "core/checked.h"
#include "gemmtune/errors.h"

namespace gemmtune {

namespace {
std::string op_str(Which which, const Operand& o) {
  return which_name(which) + ("=" + std::string(dtype_name(o.dtype))) + ":" + std::string(layout_name(o.layout));
}

// Shortest text that reads back as the same float (str() must paste back: 1e-7 is not 0.000000).
std::string float_str(float v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

// Elements between consecutive batches of a packed operand: ld times the extent along the strided dimension.
std::optional<int64_t> packed_batch_stride(const Operand& o, int64_t rows, int64_t cols) {
  return detail::checked_mul(o.ld, o.layout == Layout::row ? rows : cols);
}
}  // namespace

Problem Problem::make(int64_t m, int64_t n, int64_t k, DType in, DType out, Layout la, Layout lb, int64_t batch) {
  Problem p;
  p.m = m, p.n = n, p.k = k, p.batch = batch;
  p.a = {in, la, 0, -1};
  p.b = {in, lb, 0, -1};
  p.c = {out, Layout::row, 0, -1};
  p.d = {out, Layout::row, 0, -1};
  p.resolve();
  return p;
}

Problem Problem::make_grouped(Grouping grouping, int64_t groups, int64_t m, int64_t n, int64_t k, DType in, DType out,
                              Layout la, Layout lb) {
  Problem p = make(m, n, k, in, out, la, lb);
  p.grouping = grouping;
  p.groups = groups;
  for (Operand* o : {&p.a, &p.b, &p.c, &p.d}) o->batch_stride = -1;  // packed again, now over the groups
  p.resolve();
  return p;
}

int64_t Problem::rows_of(Which w, const Problem& p) { return w == Which::B ? p.k : p.m; }

int64_t Problem::cols_of(Which w, const Problem& p) { return w == Which::A ? p.k : w == Which::D ? p.n_out() : p.n; }

int64_t Problem::n_out() const { return epilogue.has_glu() ? n / 2 : n; }

int64_t Problem::epilogue_vector_len(EpiOpKind kind) const {
  const int glu_at = epilogue.glu_index();
  for (size_t i = 0; i < epilogue.ops.size(); ++i) {
    if (epilogue.ops[i].kind != kind) continue;
    switch (kind) {
      case EpiOpKind::bias_row:
      case EpiOpKind::row_scale: return m;
      case EpiOpKind::bias_col:
      case EpiOpKind::col_scale: return glu_at >= 0 && int(i) > glu_at ? n / 2 : n;
      default: return 0;
    }
  }
  return 0;
}

std::string Problem::check_epilogue_vector(EpiOpKind kind, int64_t len) const {
  const int64_t need = epilogue_vector_len(kind);
  EpiOp op;
  op.kind = kind;
  const std::string name = op.key();
  if (need == 0) return "epilogue '" + epilogue.key() + "' has no " + name + " (got a vector of " + std::to_string(len) + ")";
  if (len == need) return "";
  const bool per_row = kind == EpiOpKind::bias_row || kind == EpiOpKind::row_scale;
  const bool after_glu = epilogue.has_glu() && need != n;
  return "epilogue '" + epilogue.key() + "': " + name + " has " + std::to_string(len) + " elements, needs " +
         std::to_string(need) +
         (per_row ? " (M, one per row)"
                  : after_glu ? " (N/2, one per column of D after the GLU)" : " (N, one per column of the GEMM)");
}

DType Problem::epilogue_dtype(EpiOpKind kind) const {
  const EpiOp* op = epilogue.find(kind);
  return op && op->dtype ? *op->dtype : epilogue_default_dtype();
}

DType Problem::epilogue_default_dtype() const { return is_fp8(d.dtype) ? DType::bf16 : d.dtype; }

int64_t Problem::scale_len(Which which) const {
  const int64_t kb = (k + kScaleBlock - 1) / kScaleBlock;
  switch (scaling) {
    case Scaling::none: return 0;
    case Scaling::tensor: return 1;
    case Scaling::row: return count(which) * (which == Which::A ? m : n);
    case Scaling::block: return count(which) * (which == Which::A ? m : (n + kScaleBlock - 1) / kScaleBlock) * kb;
  }
  return 0;
}

int64_t Problem::count(Which w) const { return grouping == Grouping::contiguous && w == Which::B ? groups : batch; }

const Operand& Problem::operand(Which w) const { return w == Which::A ? a : w == Which::B ? b : w == Which::C ? c : d; }

Problem& Problem::resolve() {
  if (grouping == Grouping::masked && batch == 1) batch = groups;
  for (Which w : kOperands) {
    Operand& o = const_cast<Operand&>(operand(w));
    const int64_t rows = rows_of(w, *this), cols = cols_of(w, *this);
    if (o.ld == 0) o.ld = o.layout == Layout::row ? std::max<int64_t>(cols, 1) : std::max<int64_t>(rows, 1);
    // A packed stride that overflows stays unresolved (-1): check() then names the overflow.
    // Only -1 means packed: another negative stride is the caller's error, which check() names (not a silent packed).
    if (o.batch_stride == -1 && count(w) <= 1) o.batch_stride = 0;
    if (o.batch_stride == -1)
      if (auto bs = packed_batch_stride(o, rows, cols)) o.batch_stride = *bs;
  }
  return *this;
}

std::string Problem::check() const {
  if (m < 1 || n < 1 || k < 1)
    return "M, N, K must be >= 1 (got M=" + std::to_string(m) + " N=" + std::to_string(n) + " K=" + std::to_string(k) + ")";
  if (batch < 1) return "batch must be >= 1 (got " + std::to_string(batch) + ")";
  // Before the size limits: a masked problem's batch is its groups, which the message then names.
  if (std::string why = check_grouping(); !why.empty()) return why;
  constexpr int64_t kMaxDim = int64_t(1) << 31;
  if (m >= kMaxDim || n >= kMaxDim || k >= kMaxDim || batch >= kMaxDim)
    return "M, N, K and batch must each be < 2^31";
  if (accum != DType::f32) return "accumulator must be f32 (got " + std::string(dtype_name(accum)) + ")";
  if (std::string why = check_scaled(); !why.empty()) return why;
  if (beta != 0.0f && c.dtype != d.dtype)
    return "C and D must have the same dtype (got C=" + std::string(dtype_name(c.dtype)) + ", D=" +
           std::string(dtype_name(d.dtype)) + ")";
  if (!std::isfinite(alpha) || !std::isfinite(beta)) return "alpha and beta must be finite";
  if (std::string why = check_epilogue(); !why.empty()) return why;
  for (Which w : kOperands)
    if (operand(w).batch_stride < -1)
      return std::string(which_name(w)) + ": batch_stride=" + std::to_string(operand(w).batch_stride) +
             " must be >= 0 (or -1: packed)";
  for (Which w : kOperands) {
    if (w == Which::C && beta == 0.0f) continue;  // C is not read
    const Operand& o = operand(w);
    const int64_t rows = rows_of(w, *this), cols = cols_of(w, *this);
    const int64_t min_ld = o.layout == Layout::row ? cols : rows;
    const std::string name(which_name(w));
    const std::string shape = std::to_string(rows) + "x" + std::to_string(cols);
    const int es = static_cast<int>(dtype_size(o.dtype));
    if (o.align != 2 && o.align != 4 && o.align != 8 && o.align != 16)
      return name + ": align=" + std::to_string(o.align) + " must be 2, 4, 8 or 16 (bytes the base pointer is a "
             "multiple of)";
    if (o.align < es)
      return name + ": align=" + std::to_string(o.align) + " is less than its element size (" + std::to_string(es) +
             " bytes of " + std::string(dtype_name(o.dtype)) + ")";
    if (o.ld < min_ld)
      return std::string("ld") + which_lower(w) + "=" + std::to_string(o.ld) + " is too small for " +
             std::string(layout_name(o.layout)) + "-major " + name + " (" + shape + "): need >= " +
             std::to_string(min_ld);
    const int64_t count_w = count(w);
    if (o.batch_stride < 0) {
      if (count_w > 1 && o.ld > 0 && !packed_batch_stride(o, rows, cols))
        return name + ": the packed batch stride (ld " + std::to_string(o.ld) + " x " +
               std::to_string(o.layout == Layout::row ? rows : cols) + ") overflows 64 bits";
      return name + ": batch stride is unresolved (call Problem::resolve())";
    }
    // Elements one batch spans, and the elements and bytes all batches span: checked, since ld and the batch stride
    // are user values that can be near INT64_MAX.
    using detail::checked_add, detail::checked_mul;
    const std::optional<int64_t> footprint =
        checked_add(checked_mul(o.ld, o.layout == Layout::row ? rows - 1 : cols - 1), min_ld);
    const std::optional<int64_t> bytes = checked_mul(
        checked_add(checked_mul(o.batch_stride, count_w - 1), footprint), int64_t(dtype_size(o.dtype)));
    if (!bytes || *bytes > (int64_t(1) << 62)) return name + " spans more than 2^62 bytes";
    if (w == Which::D && batch > 1 && o.batch_stride < *footprint)
      return "D batch stride " + std::to_string(o.batch_stride) + " makes batches overlap (each needs " +
             std::to_string(*footprint) + " elements)";
  }
  return "";
}

std::string Problem::check_grouping() const {
  const std::string g = std::to_string(groups);
  if (grouping == Grouping::none)
    return groups == 1 ? "" : "groups=" + g + " needs a grouping (contiguous or masked)";
  if (groups < 1 || groups >= (int64_t(1) << 31)) return "groups must be in [1, 2^31) (got " + g + ")";
  if (grouping == Grouping::contiguous && batch != 1)
    return "a contiguous grouped GEMM takes one A of M (total) rows: batch must be 1 (got " + std::to_string(batch) +
           ")";
  if (grouping == Grouping::masked && batch != groups)
    return "a masked grouped GEMM holds one matrix per group: batch must equal groups=" + g + " (got " +
           std::to_string(batch) + "; Problem::resolve() sets it)";
  return "";
}

std::string Problem::check_scaled() const {
  const bool fa = is_fp8(a.dtype), fb = is_fp8(b.dtype);
  const std::string sc(scaling_name(scaling));
  if (fp8_accum == Fp8Accum::fast && !fp8_product())
    return "fp8_accum=fast applies to fp8 A and B (the fp8 tensor-core product); A=" +
           std::string(dtype_name(a.dtype)) + " x B=" + std::string(dtype_name(b.dtype)) + " accumulates in fp32";
  if (!fa && !fb) {
    if (a.dtype != b.dtype)
      return "A and B must have the same dtype (got A=" + std::string(dtype_name(a.dtype)) + ", B=" +
             std::string(dtype_name(b.dtype)) + "; an fp8 B may go with a bf16 or f16 A)";
    if (scaling != Scaling::none)
      return "scaling=" + sc + " applies to fp8 (e4m3/e5m2) inputs, A and B are " + std::string(dtype_name(a.dtype));
    if (is_fp8(d.dtype)) return "an fp8 D needs fp8 inputs (A and B are " + std::string(dtype_name(a.dtype)) + ")";
    if (amax) return "amax is the statistic of an e4m3 D (D is " + std::string(dtype_name(d.dtype)) + ")";
    return "";
  }
  if (!fb)
    return "A=" + std::string(dtype_name(a.dtype)) + " with B=" + std::string(dtype_name(b.dtype)) +
           ": an fp8 A needs an fp8 B (weight-only fp8 is a 16-bit A with an fp8 B)";
  if (!fa && a.dtype == DType::f32) return "A=f32 with an fp8 B: A must be fp8, bf16 or f16";
  if (scaling == Scaling::none)
    return "fp8 inputs need a scaling (tensor, row or block): A and B are dequantized by fp32 scales";
  if (!fa && scaling == Scaling::block)
    return "scaling=block needs fp8 A and B (a " + std::string(dtype_name(a.dtype)) +
           " A has no K-block scales): use tensor or row scaling of B";
  if (scaling == Scaling::block && fp8_accum == Fp8Accum::fast)
    return "fp8_accum=fast with scaling=block: block scales multiply each 128-K block's partial sum, which is "
           "promoted into fp32 there, so a block-scaled GEMM accumulates exactly (fp8_accum=exact)";
  if (batch > 1 && !grouped() && scaling != Scaling::tensor)
    return "scaling=" + sc + " takes one matrix (batch=1); batched fp8 GEMMs take tensor scaling";
  // The tensor cores read 8-bit operands K-major only (wgmma, cuBLASLt's fp8 "TN" rule).
  if (fa && a.layout != Layout::row)
    return "fp8 A must be row-major (K contiguous, the tensor cores read 8-bit operands K-major): got col-major A; "
           "store A transposed (x.contiguous()) or quantize it row-major";
  if (b.layout != Layout::col)
    return "fp8 B must be col-major (K contiguous, B = W^T for a row-major weight W of N x K): got row-major B; "
           "quantize the weight as N x K row-major";
  if (d.dtype == DType::e5m2)
    return "D=e5m2 is not supported: fp8 outputs are e4m3 (with scale_d), or use bf16, f16 or f32";
  if (d.dtype != DType::e4m3 && amax)
    return "amax is the statistic of an e4m3 D (D is " + std::string(dtype_name(d.dtype)) + ")";
  if (d.dtype == DType::e4m3 && beta != 0.0f)
    return "beta*C with an e4m3 D is not supported: add C as a bf16 residual in the epilogue";
  return "";
}

std::string Problem::check_epilogue() const {
  if (epilogue.empty()) return "";
  if (std::string why = epilogue.check(); !why.empty()) return why;
  const std::string pre = "epilogue '" + epilogue.key() + "': ";
  if (const EpiOp* g = epilogue.find(EpiOpKind::glu)) {
    if (n % 2 != 0) return pre + "a GLU needs an even N (gate and up halves), got N=" + std::to_string(n);
    // A block wider than N/2 can never divide N: said first, so that 2*B is only computed where it cannot overflow.
    if (g->glu == GluLayout::interleaved && g->glu_block > n / 2)
      return pre + "GLU interleave" + std::to_string(g->glu_block) + " is wider than N/2=" + std::to_string(n / 2) +
             " (gate and up blocks must both fit in N)";
    if (g->glu == GluLayout::interleaved && n % (2 * g->glu_block) != 0)
      return pre + "GLU interleave" + std::to_string(g->glu_block) + " needs N divisible by 2*" +
             std::to_string(g->glu_block) + "=" + std::to_string(2 * g->glu_block) + ", got N=" + std::to_string(n);
    if (beta != 0.0f)
      return pre + "beta*C with a GLU is not supported (C would be M x N, D M x N/2): add it as a residual after "
                   "the GLU";
  }
  if (const EpiOp* r = epilogue.find(EpiOpKind::residual); r && r->layout && *r->layout != d.layout)
    return pre + "the residual must have D's layout (" + std::string(layout_name(d.layout)) + "-major), got " +
           std::string(layout_name(*r->layout)) + "-major";
  return "";
}

void Problem::validate() const {
  const std::string why = check();
  if (!why.empty()) throw Error("invalid problem (" + str() + "): " + why);
}

std::string Problem::key() const {
  // A contiguous grouped problem's M is the capacity and changes with every batch of tokens: its key holds M rounded
  // up to a power of two, so one tuning serves a bucket of token counts (its kernels take M at run time).
  int64_t key_m = m;
  if (grouping == Grouping::contiguous)
    for (key_m = 1; key_m < m; key_m *= 2) {
    }
  std::string s = "gemm:m" + std::to_string(key_m) + ":n" + std::to_string(n) + ":k" + std::to_string(k) + ":b" +
                  std::to_string(batch);
  if (grouped()) s.append(":grp=").append(grouping_name(grouping)).append(std::to_string(groups));
  for (Which w : kOperands) {
    if (w == Which::C && beta == 0.0f) continue;
    const Operand& o = operand(w);
    // Appended piecewise: GCC 12's -Wrestrict misfires on `":" + std::string(...)`.
    s.append(":").append(op_str(w, o)).append(":ld").append(std::to_string(o.ld));
    if (count(w) > 1) s.append(":bs").append(std::to_string(o.batch_stride));
    if (o.align != 16) s.append(":al").append(std::to_string(o.align));
  }
  s += ":acc" + std::string(dtype_name(accum));
  s += beta == 0.0f ? ":beta0" : ":beta1";
  s += ":ep=";
  s += epilogue.with_defaults(epilogue_default_dtype(), d.layout).key();
  if (scaling != Scaling::none) s.append(":sc=").append(scaling_name(scaling));
  if (amax) s += ":amax";
  // Both modes named, the default too, so that an fp8 key without a mode matches neither.
  if (fp8_product()) s.append(":fp8acc=").append(fp8_accum_name(fp8_accum));
  return s;
}

std::string Problem::str() const {
  std::string s = std::string(grouping == Grouping::masked ? "--masked-m=" : "--m=") + std::to_string(m) +
                  " --n=" + std::to_string(n) + " --k=" + std::to_string(k);
  if (grouped()) s += " --groups=" + std::to_string(groups);
  if (batch != 1 && grouping != Grouping::masked) s += " --batch=" + std::to_string(batch);
  for (Which w : kOperands) {
    if (w == Which::C && beta == 0.0f) continue;
    const Operand& o = operand(w);
    s += " --" + op_str(w, o);
    const int64_t rows = rows_of(w, *this), cols = cols_of(w, *this);
    const int64_t packed_ld = o.layout == Layout::row ? cols : rows;
    const std::string lw(which_lower(w));
    if (o.ld != packed_ld) s += " --ld" + lw + "=" + std::to_string(o.ld);
    if (count(w) > 1 && std::optional<int64_t>(o.batch_stride) != packed_batch_stride(o, rows, cols))
      s += " --batch-stride-" + lw + "=" + std::to_string(o.batch_stride);
    if (o.align != 16) s += " --align-" + lw + "=" + std::to_string(o.align);
  }
  if (alpha != 1.0f) s += " --alpha=" + float_str(alpha);
  if (beta != 0.0f) s += " --beta=" + float_str(beta);
  if (!epilogue.empty()) s += " --epilogue=" + epilogue.key();
  if (scaling != Scaling::none) s.append(" --scaling=").append(scaling_name(scaling));
  if (amax) s += " --amax";
  if (fp8_accum != Fp8Accum::exact) s.append(" --fp8-accum=").append(fp8_accum_name(fp8_accum));
  return s;
}

ResolvedProblem resolve(const Problem& p) {
  ResolvedProblem r;
  r.p_ = p;
  r.p_.resolve().validate();
  r.key_ = r.p_.key(), r.n_out_ = r.p_.n_out();
  for (Which w : kOperands)
    r.ops_[static_cast<int>(w)] = {Problem::rows_of(w, r.p_), Problem::cols_of(w, r.p_), r.p_.count(w),
                                   r.p_.scale_len(w), r.p_.access_bytes(w)};
  return r;
}

int Problem::access_bytes(Which which) const {
  const Operand& o = operand(which);
  const uint64_t es = dtype_size(o.dtype);
  const uint64_t bits = static_cast<uint64_t>(o.align) | (static_cast<uint64_t>(o.ld) * es) |
                        (count(which) > 1 ? static_cast<uint64_t>(o.batch_stride) * es : 0) | 16u;
  return static_cast<int>(bits & (~bits + 1));  // the lowest set bit
}

double Problem::flops() const { return 2.0 * double(m) * double(n) * double(k) * double(batch); }

double Problem::min_bytes() const {
  double bytes = double(batch) * (double(m) * double(k) * dtype_size(a.dtype) +
                                  double(m) * double(n_out()) * dtype_size(d.dtype)) +
                 double(count(Which::B)) * double(k) * double(n) * dtype_size(b.dtype);
  if (beta != 0.0f) bytes += double(batch) * double(m) * double(n) * dtype_size(c.dtype);
  for (EpiOpKind k : {EpiOpKind::bias_col, EpiOpKind::bias_row, EpiOpKind::row_scale, EpiOpKind::col_scale})
    bytes += double(epilogue_vector_len(k)) * dtype_size(epilogue_dtype(k));
  if (epilogue.has(EpiOpKind::residual))
    bytes += double(batch) * double(m) * double(n_out()) * dtype_size(epilogue_dtype(EpiOpKind::residual));
  bytes += 4.0 * double(scale_len(Which::A) + scale_len(Which::B));
  return bytes;
}

}  // namespace gemmtune
