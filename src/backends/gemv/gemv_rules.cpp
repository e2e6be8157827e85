// gemv rules: the single validity function of enumerate(), validate() and the errors of --config.
#include "backends/gemv/gemv_config.h"

namespace gemmtune::gemv {
namespace {

bool out_type_ok(DType t) { return t == DType::bf16 || t == DType::f16 || t == DType::f32; }

// What limits the loads of one operand: the widest power of two <= 16 that divides its pitch, batch stride and base
// alignment, and the first of them to limit it (empty at 16).
struct Limit {
  int bytes = 16;
  std::string why;
};
int pow2_part(int64_t x) {  // the largest power of two dividing x, capped at 16 (x = 0: 16)
  int b = 16;
  while (b > 1 && x % b != 0) b /= 2;
  return b;
}
Limit operand_limit(const Problem& p, const char* name, const Operand& o) {
  const int64_t es = static_cast<int64_t>(dtype_size(o.dtype));
  Limit l;
  auto take = [&](int b, const std::string& why) {
    if (b < l.bytes) l = {b, why};
  };
  take(pow2_part(o.ld * es), std::string("ld") + name + "=" + std::to_string(o.ld) + ": " +
                                 std::to_string(o.ld * es) + " bytes");
  if (p.batch > 1)
    take(pow2_part(o.batch_stride * es), std::string(name) + " batch_stride=" + std::to_string(o.batch_stride) +
                                             ": " + std::to_string(o.batch_stride * es) + " bytes");
  take(pow2_part(o.align), std::string(name) + "'s pointer " + std::to_string(o.align) + "-byte aligned");
  return l;
}
Limit problem_limit(const Problem& p) {
  const Limit a = operand_limit(p, "a", p.a), b = operand_limit(p, "b", p.b);
  return b.bytes < a.bytes ? b : a;
}

}  // namespace

int load_bytes(const Problem& p) { return problem_limit(p).bytes; }

std::string load_path(const Problem& p) {
  const Limit l = problem_limit(p);
  std::string s = "rows by " + std::to_string(l.bytes) + "-byte loads";
  if (!l.why.empty()) s += " (" + l.why + ")";
  return s;
}

std::string problem_reason(const Problem& p, const DeviceInfo& dev) {
  // The kernels know nothing of group_rows: a grouped problem here would be computed as one GEMM, wrongly.
  if (p.grouped())
    return "gemv: grouped GEMMs are not supported (grouping=" + std::string(grouping_name(p.grouping)) + ")";
  if (dev.real && dev.cc_major < 8) return "gemv: needs compute capability 8.0 or newer, device is " + dev.arch();
  const bool fp8 = is_fp8(p.a.dtype) || is_fp8(p.b.dtype);
  if (!fp8) {
    if (p.a.dtype != p.b.dtype || (p.a.dtype != DType::bf16 && p.a.dtype != DType::f16))
      return "gemv: A and B must both be bf16 or both f16 (or fp8 B with an fp8, bf16 or f16 A)";
    if (!out_type_ok(p.d.dtype)) return "gemv: D must be bf16, f16 or f32";
  } else {
    if (!is_fp8(p.b.dtype) || !(is_fp8(p.a.dtype) || p.a.dtype == DType::bf16 || p.a.dtype == DType::f16))
      return "gemv: fp8 takes an e4m3/e5m2 B with an e4m3/e5m2, bf16 or f16 A, got A " +
             std::string(dtype_name(p.a.dtype)) + ", B " + std::string(dtype_name(p.b.dtype));
    if (dev.real && (dev.cc_major < 8 || (dev.cc_major == 8 && dev.cc_minor < 9)))
      return "gemv: fp8 inputs need compute capability 8.9 or newer (cvt from e4m3/e5m2), device is " + dev.arch();
    if (p.scaling == Scaling::none) return "gemv: fp8 inputs need a scaling (tensor, row or block)";
    // The kernels widen fp8 to 16 bits and accumulate in fp32 (mma.sync m16n8k16): the exact mode only.
    if (p.fp8_accum == Fp8Accum::fast)
      return "gemv: fp8_accum=fast is not served: the kernels widen fp8 to 16 bits and accumulate in fp32 "
             "(fp8_accum=exact)";
    if (!out_type_ok(p.d.dtype) && p.d.dtype != DType::e4m3) return "gemv: D must be bf16, f16, f32 or e4m3";
    if (load_bytes(p) < 2)
      return "gemv: fp8 rows must start on even bytes (the kernels load 2 bytes or more at a time), got " +
             problem_limit(p).why;
  }
  if (p.beta != 0.0f && !out_type_ok(p.c.dtype)) return "gemv: C must be bf16, f16 or f32";
  if (p.m > kMaxVectors && p.n > kMaxVectors)
    return "gemv: needs M <= " + std::to_string(kMaxVectors) + " or N <= " + std::to_string(kMaxVectors) +
           " (the vectors), got M=" + std::to_string(p.m) + ", N=" + std::to_string(p.n);
  if (p.epilogue.has_glu() && p.m > kMaxVectors)
    return "gemv: a GLU pairs B's columns (the weights' rows), so the vectors must be A's rows: needs M <= " +
           std::to_string(kMaxVectors) + ", got M=" + std::to_string(p.m);
  if (p.a.layout != Layout::row || p.b.layout != Layout::col)
    return "gemv: A must be row-major and B column-major (both K-contiguous, as x·Wᵀ with W stored [N, K] like "
           "torch.nn.Linear's weight), got A " + std::string(layout_name(p.a.layout)) + ", B " +
           std::string(layout_name(p.b.layout));
  if (p.batch > 65535) return "gemv: batch must be <= 65535 (grid y)";
  return "";
}

std::string config_reason(const Config& c, const Problem& p, const DeviceInfo& dev) {
  if (std::string r = problem_reason(p, dev); !r.empty()) return r;
  const std::string pre = "gemv: config " + c.str() + ": ";
  if (c.warps != 4 && c.warps != 8 && c.warps != 16) return pre + "warps must be 4, 8 or 16";
  const bool glu = p.epilogue.has_glu();
  if (c.mma) {
    const int mrows = glu ? 8 : 16;  // output rows of a 16-row m-block
    if (c.rows != mrows && c.rows != 2 * mrows)
      return pre + "with mma=1 rows must be " + std::to_string(mrows) + " or " + std::to_string(2 * mrows) +
             (glu ? " (m-blocks of 8 gate and 8 up rows)" : " (m-blocks of 16 rows)");
  } else if (c.rows < 1 || c.rows > 4) {
    return pre + "rows must be 1-4 (16 or 32 with mma=1)";
  }
  if (c.ksplit < 1 || c.ksplit > c.warps || c.warps % c.ksplit != 0)
    return pre + "ksplit must divide warps";
  if (c.unroll != 1 && c.unroll != 2 && c.unroll != 4 && c.unroll != 8) return pre + "unroll must be 1, 2, 4 or 8";
  const int64_t t = c.vec_m ? p.m : p.n;
  if (t > max_vectors(c))
    return pre + "vec=" + (c.vec_m ? "m" : "n") + " needs " + (c.vec_m ? "M" : "N") + " <= " +
           std::to_string(max_vectors(c)) + (c.mma ? "" : " (16 with mma=1)") + " (got " + std::to_string(t) + ")";
  if (glu && !c.vec_m) return pre + "a GLU pairs B's columns (the weights' rows): it needs vec=m";
  if (!c.mma && (is_fp8(p.a.dtype) || is_fp8(p.b.dtype)))
    return pre + "fp8 operands need mma=1 (the CUDA-core kernel takes 16-bit ones)";
  if (c.ring != 0) {
    if (!c.mma) return pre + "ring needs mma=1";
    if (c.ring < 2 || c.ring > 8) return pre + "ring must be 0 or 2-8 stages";
    if (c.unroll != 1) return pre + "with a ring unroll must be 1 (the ring holds the steps in flight)";
    if (load_bytes(p) < 16)
      return pre + "a ring copies 16-byte chunks (cp.async), the problem allows " + load_path(p);
    const int64_t smem = ring_bytes(c, p) + static_smem(c, p);
    const int64_t cap = dev.smem_per_block_optin > 0 ? dev.smem_per_block_optin : 232448;  // 227 KiB (sm_90)
    if (smem > cap)
      return pre + "the ring and the K-split buffer need " + std::to_string(smem) + " bytes of shared memory, more "
             "than the " + std::to_string(cap) + " a CTA can have";
  }
  if (c.csplit != 1) {
    if (c.csplit != 2 && c.csplit != 4 && c.csplit != 8) return pre + "csplit must be 1, 2, 4 or 8";
    if (!c.mma) return pre + "csplit (K split across CTAs) needs mma=1";
  }
  // Divided, not multiplied: occ is any int from the config line, and occ * warps could overflow.
  if (c.occ < 1 || c.occ > 64 / c.warps)
    return pre + "occ (CTAs per SM) must be 1-" + std::to_string(64 / c.warps) + " with " + std::to_string(c.warps) +
           " warps (64 warps per SM)";
  if (c.mma) {
    // 16-byte registers: per step and half, two per m-block and the vectors' chunk per n-block (32 bytes, two,
    // with an fp8 weight beside 16-bit vectors).
    const int64_t loads = 2 * c.unroll * (2 * (c.rows / (glu ? 8 : 16)) + (t + 7) / 8 * x_chunk_loads(c, p));
    if (loads > 24) return pre + "2 x unroll x (2 x m-blocks + n-blocks) must be <= 24 (registers for the loads)";
  } else {
    const int nr = w_rows(c, p);
    if (nr * c.unroll > 16) return pre + "rows x unroll (x 2 with a GLU) must be <= 16 (registers for the loads)";
    if (nr * t > 32) return pre + "rows x vectors (x 2 with a GLU) must be <= 32 (accumulator registers)";
  }
  if (grid_x(c, make_view(p, c.vec_m)) >= (int64_t(1) << 31)) return pre + "too many CTAs for the grid";
  return "";
}
}  // namespace gemmtune::gemv
