// sm90 rules: hard validity only (what the kernels cannot run, what the device cannot hold); one function serves
// enumeration, validate() and the errors of --config. Whether a valid config spills is the compile's to report.
#include <cstdlib>

#include "backends/sm90/sm90_config.h"

#include "core/env.h"

namespace gemmtune::sm90 {
namespace {

// Chains the fused epilogue (kernels/epilogue/epilogue_fused_store.cuh) cannot take; the rest is shape/config.
std::string epilogue_reason(const Problem& p) {
  const EpiOp* g = p.epilogue.find(EpiOpKind::glu);
  if (!g) return "";
  const std::string pre = "sm90: epilogue '" + p.epilogue.key() + "': ";
  if (p.d.layout != Layout::row)
    return pre + "a GLU with column-major D is not fused (the kernel computes Dᵀ, so gate and up columns would sit in "
                 "different threads' rows); use a row-major D or the cuBLASLt epi=separate candidate";
  if (g->glu == GluLayout::interleaved && (g->glu_block % 8 != 0 || g->glu_block > 128))
    return pre + "GLU interleave" + std::to_string(g->glu_block) +
           ": the block must be a multiple of 8 columns and at most 128 (gate and up in one thread's wgmma fragment)";
  return "";
}

// A's or B's part (`nm`: the user's name): TMA loads an operand whose base pointer, pitch and batch stride are
// multiples of 16 bytes, the load=cp mainloop one whose are multiples of 4 (cp.async pieces of 4, 8 or 16 bytes).
std::string ab_reason(const std::string& nm, const OperandDesc& o, int64_t batch) {
  if (batch > 1 && o.batch_stride <= 0)
    return "sm90: " + nm + " batch_stride must be > 0 with batch > 1 (broadcast operands are not supported)";
  if (tma_ok(o) || o.access >= 4) return "";
  const int64_t es = elem_size(o.type);
  std::string why;
  if (o.align % 4 != 0)
    why = std::string(1, char(nm[0] - 32)) + "'s base pointer is declared " + std::to_string(o.align) + "-byte aligned (align=" +
          std::to_string(o.align) + ")";
  else if ((o.ld * es) % 4 != 0)
    why = "ld" + nm + "=" + std::to_string(o.ld) + " (" + std::to_string(o.ld * es) + " bytes) is odd in elements";
  else
    why = nm + " batch_stride=" + std::to_string(o.batch_stride) + " (" + std::to_string(o.batch_stride * es) +
          " bytes) is odd in elements";
  return "sm90: " + why + ": neither TMA (16 bytes) nor cp.async (4-byte pieces) can load it; the pad-and-run path "
         "copies such an operand to an aligned workspace";
}

// The fp8 problems the sm90 kernels take: both inputs fp8 (any pairing of e4m3 / e5m2), a 16-bit or f32 D, tensor,
// row or block scaling; block scaling with a row-major D (the block scales' layouts are A's and B's own, so the
// transposed view of a column-major D would read them crosswise).
std::string fp8_reason(const Problem& p, const KernelView& v) {
  if (!is_fp8(p.a.dtype) || !is_fp8(p.b.dtype))
    return "sm90: a " + std::string(dtype_name(p.a.dtype)) + " A with an " + std::string(dtype_name(p.b.dtype)) +
           " B (weight-only fp8) is not supported: wgmma's k32 forms take fp8 on both sides (the gemv backend takes "
           "skinny ones: M or N up to 16)";
  if (p.epilogue.has_glu()) return "sm90: a GLU epilogue with fp8 inputs is not supported";
  if (p.d.dtype == DType::e4m3) {
    // The e4m3 D is staged and TMA-stored like a 16-bit one, in bytes; the bounds-checked copy-out paths and the
    // fused chain's store move 2- and 4-byte elements.
    if (!p.epilogue.empty())
      return "sm90: an e4m3 D with a fused epilogue ('" + p.epilogue.key() + "') is not supported; cuBLASLt or a "
             "bf16 D takes it";
    if (!d_tma_store(v) || epi_direct(p, v))
      return "sm90: an e4m3 D needs rows TMA can store whole: ldd, batch stride and N multiples of 16 elements and a "
             "16-byte aligned pointer (" + store_path(p, v) + ")";
  } else if (is_fp8(p.d.dtype)) {
    return "sm90: D must be bf16, f16, f32 or e4m3";
  }
  if (p.scaling == Scaling::block && p.d.layout != Layout::row)
    return "sm90: block scaling needs a row-major D (a column-major D is solved transposed)";
  return "";
}

// Grouped GEMMs (kernels/scheduler/group_tiles.cuh): the kernel computes the groups' row-major D as it is (a
// column-major D would be solved transposed, turning the grouped rows into columns), loads A and B by TMA, and copies
// D out of the staging strips with a per-group row bound.
std::string grouped_reason(const Problem& p) {
  if (!p.grouped()) return "";
  const std::string pre = "sm90: grouped (" + std::string(grouping_name(p.grouping)) + "): ";
  if (p.d.layout != Layout::row) return pre + "D must be row-major (groups split D's rows)";
  if (p.beta != 0.0f && p.c.layout != Layout::row) return pre + "C must be row-major like D";
  if (p.d.dtype == DType::e4m3) return pre + "an e4m3 D is not supported (bf16, f16 or f32)";
  if (p.groups > gt_sm90::kMaxGroups)
    return pre + "at most " + std::to_string(gt_sm90::kMaxGroups) + " groups (the kernel's tile prefix lives in "
           "shared memory), got " + std::to_string(p.groups);
  if (p.count(Which::B) > 1 && p.b.batch_stride <= 0)
    return pre + "B's batch_stride must be > 0 (one weight matrix per group; a shared B is a plain GEMM)";
  // The contiguous walk has M / BM + G slots of up to 256 rows: int32 row coordinates.
  if (p.grouping == Grouping::contiguous && p.m + 256 * p.groups >= (int64_t(1) << 31))
    return pre + "M + 256 * groups must be below 2^31";
  return "";
}

}  // namespace

std::string fp8_path(const Problem& p) {
  if (!is_fp8(p.a.dtype) || !is_fp8(p.b.dtype)) return "";
  const std::string types = std::string(dtype_name(p.a.dtype)) + " x " + std::string(dtype_name(p.b.dtype));
  const std::string d8 = p.d.dtype == DType::e4m3
                             ? std::string("; e4m3 D: saturate(v * scale_d)") + (p.amax ? ", amax by atomicMax" : "")
                             : "";
  if (p.scaling == Scaling::block)
    return "; fp8 " + types + ": block scales applied as each 128-K block is promoted into fp32 accumulators "
           "(acc=promote)" + d8;
  return "; fp8 " + types + ": " + std::string(scaling_name(p.scaling)) + " scales applied to the fp32 accumulators "
         "before alpha, beta and the epilogue; " +
         (p.fp8_accum == Fp8Accum::fast ? "acc=fast (fp8_accum=fast: K accumulated in the tensor core)"
                                        : "acc=promote (fp8_accum=exact: fp32 promotion every 128 K)") + d8;
}

// problem_reason with the problem's kernel view (swap=0).
static std::string problem_reason(const Problem& p, const KernelView& v, const DeviceInfo& dev) {
  if (dev.real && (dev.cc_major != 9 || dev.cc_minor != 0))
    return "sm90: needs compute capability 9.0 (Hopper), device is " + dev.arch();
  if (std::string r = epilogue_reason(p); !r.empty()) return r;
  if (std::string r = grouped_reason(p); !r.empty()) return r;
  const bool fp8 = is_fp8(p.a.dtype) || is_fp8(p.b.dtype);
  if (fp8) {
    if (std::string r = fp8_reason(p, v); !r.empty()) return r;
  } else if (p.a.dtype != p.b.dtype || (p.a.dtype != DType::bf16 && p.a.dtype != DType::f16)) {
    return "sm90: A and B must both be bf16 or both f16";
  }
  auto out_ok = [](DType t) { return t == DType::bf16 || t == DType::f16 || t == DType::f32; };
  if (!out_ok(p.d.dtype) && !(fp8 && p.d.dtype == DType::e4m3)) return "sm90: D must be bf16, f16 or f32";
  if (p.beta != 0.0f && !out_ok(p.c.dtype)) return "sm90: C must be bf16, f16 or f32";
  // A and B: TMA, or cp.async (load=cp), in the user's names (a transposed view loads B as its A). D takes any pitch,
  // batch stride and alignment: what TMA cannot store the consumer threads copy out (d_tma_store, store_path).
  if (std::string r = ab_reason(v.transposed ? "b" : "a", v.a, v.batch); !r.empty()) return r;
  if (std::string r = ab_reason(v.transposed ? "a" : "b", v.b, v.batch); !r.empty()) return r;
  if (p.grouped() && needs_cp(v))
    return "sm90: grouped GEMMs load A and B by TMA only: their base pointers, pitches and batch strides must be "
           "multiples of 16 bytes (" + load_path(p, v) + ")";
  if (fp8 && needs_cp(v))
    return "sm90: fp8 A and B are loaded by TMA only (load=cp copies 16-bit elements): their base pointers, pitches "
           "and batch strides must be multiples of 16 bytes (" + load_path(p, v) + ")";
  if (fp8 && (v.a_mn || v.b_mn)) return "sm90: fp8 operands must be K-major (row-major A, col-major B)";
  return "";
}

std::string problem_reason(const ResolvedProblem& p, const DeviceInfo& dev) {
  return problem_reason(p, kernel_view(p), dev);
}

bool epi_direct(const Problem& p, const KernelView& v) {
  if (v.swap) return false;  // EpilogueTransposedStore bounds-checks every element: no edge copy
  const int64_t n_out = p.epilogue.has_glu() ? v.n / 2 : v.n;
  return (n_out * elem_size(v.d.type)) % 16 != 0;
}
std::string store_path(const Problem& p, const KernelView& v) {
  if (v.swap) return "D: element stores from registers (swap=1: D column-major in the kernel)";
  if (v.grouped != 0)
    return "D: staged, bounds-checked 16-byte stores (a grouped tile's rows end at its group's last row); the " +
           std::string(grouping_name(p.grouping)) + " groups' sizes are read on the device as the persistent kernel "
           "walks (group, tile)";
  const int64_t es = elem_size(v.d.type);
  if (d_tma_store(v)) {
    if (!epi_direct(p, v)) return "D: TMA store";
    const int64_t n_out = p.epilogue.has_glu() ? v.n / 2 : v.n;
    return "D: TMA store, edge strips bounds-checked (rows of " + std::to_string(n_out) + " elements are not a multiple "
           "of 16 bytes)";
  }
  const std::string per = " is not a multiple of " + std::to_string(16 / es) + " elements";
  std::string why;
  if ((v.d.ld * es) % 16 != 0)
    why = "ldd=" + std::to_string(v.d.ld) + per;
  else if (v.batch > 1 && (v.d.batch_stride * es) % 16 != 0)
    why = "D batch_stride=" + std::to_string(v.d.batch_stride) + per;
  else if (v.d.align < 16)
    why = "D's pointer is declared " + std::to_string(v.d.align) + "-byte aligned";
  else
    why = "D's strides exceed TMA's 2^40 bytes";
  return "D: staged, bounds-checked 16-byte stores (" + why + ")";
}

std::string config_reason(const Config& c, const Analysis& an, const DeviceInfo& dev) {
  const Problem& p = an.problem;
  if (std::string r = problem_reason(p, an.view(false), dev); !r.empty()) return r;
  const std::string cs = " (config " + c.str() + ")";
  const bool fp8 = is_fp8(p.a.dtype);
  if (!fp8 && c.bk != 64) return "sm90: tile K must be 64 (128 bytes of a 16-bit type)" + cs;
  if (fp8 && c.bk != 128) return "sm90: tile K must be 128 with fp8 inputs (128 bytes of an 8-bit type)" + cs;
  if (!fp8 && c.acc != Accum::none) return "sm90: acc= (fast / promote) applies to fp8 inputs only" + cs;
  if (fp8 && c.acc == Accum::none) return "sm90: fp8 inputs need acc=fast or acc=promote" + cs;
  if (fp8 && (c.acc == Accum::fast) != (p.fp8_accum == Fp8Accum::fast))
    return (p.fp8_accum == Fp8Accum::fast
                ? "sm90: acc=promote is not the problem's fp8_accum=fast (K accumulated in the tensor core): use acc=fast"
                : "sm90: acc=fast is not the problem's fp8_accum=exact (fp32 promotion every 128 K): use acc=promote") +
           cs;
  if (p.scaling == Scaling::block && c.swap)
    return "sm90: block scaling takes no swap=1 (the block scales are A's and B's own layouts)" + cs;
  if (c.group < 1 || c.group > 64) return "sm90: group must be in [1, 64]" + cs;
  if (p.grouped() && c.swap) return "sm90: grouped GEMMs take no swap=1 (groups split D's rows)" + cs;
  if (c.swap) {
    if (p.epilogue.has_glu())
      return "sm90: swap=1 takes no GLU (its gate and up columns would sit in different threads); a config without "
             "swap does" + cs;
    if (c.epi_warp) return "sm90: swap=1 has no epilogue strips to store per warp (epi=warp)" + cs;
    if (p.d.dtype == DType::e4m3) return "sm90: swap=1 stores 16-bit and f32 elements only (D is e4m3)" + cs;
    if (c.bn % 16 != 0) return "sm90: swap=1 needs tile N a multiple of 16" + cs;
  }
  const KernelView& v = an.view(c.swap);
  if (c.cp && !needs_cp(v)) return "sm90: load=cp: TMA loads A and B of this problem (" + load_path(p, v) + ")" + cs;
  if (!c.cp && needs_cp(v)) return "sm90: TMA cannot load A or B (" + load_path(p, v) + "): needs load=cp" + cs;
  // The kernel's own rules (tile, schedule, stages, cluster, tile order, load=cp, accumulators): one function for
  // the kernels' static_assert and this.
  if (const char* why = gt_sm90::spec_error(spec(c, v))) return "sm90: " + std::string(why) + cs;
  if (c.bn % 16 != 0) {
    // Tile N = 8 (mod 16) makes narrow epilogue strips; of the unswizzled ones only the 112-byte strips of tile N 168
    // are verified on the GPU (and the 32-byte swizzled ones of f32 D).
    const int eb = epi_narrow_bytes(c.bn, v.d.type);
    if (eb != 32 && eb != 112)
      return "sm90: tile N=" + std::to_string(c.bn) + ": its D rows (" + std::to_string(c.bn * elem_size(v.d.type)) +
             " bytes) split into " + std::to_string(eb) + "-byte epilogue strips; take a multiple of 16, or 168" + cs;
  }
  if (const EpiOp* g = p.epilogue.find(EpiOpKind::glu)) {
    const int blk = g->glu == GluLayout::interleaved ? static_cast<int>(g->glu_block) : c.bn / 2;
    if (c.bn % (2 * blk) != 0 || blk % 8 != 0)
      return "sm90: GLU " + std::string(g->glu == GluLayout::interleaved ? "interleave" + std::to_string(blk) : "halves") +
             " needs tile N a multiple of " + std::to_string(2 * blk) + " with a block of 8k columns" + cs;
    if ((c.bn / 2 * elem_size(v.d.type)) % 32 != 0)
      return "sm90: GLU output tile N/2=" + std::to_string(c.bn / 2) + " must be a multiple of 32 bytes of D" + cs;
    if (g->glu == GluLayout::halves && v.b_mn && c.bn % 128 != 0)
      return "sm90: GLU halves with N-major B needs tile N a multiple of 128" + cs;
    if (c.epi_warp)
      return "sm90: epi=warp (warp pieces of the GEMM tile's strips) does not take a GLU's half-width output" +
             cs;
  }
  const gt_sm90::Plan pl = plan(c, v);
  const int smem = pl.smem_bytes;
  const int smem_max = dev.smem_per_block_optin > 0 ? dev.smem_per_block_optin : gt_sm90::kSmemPerBlock;
  if (smem > smem_max)
    return "sm90: needs " + std::to_string(smem) + " bytes of shared memory, the device allows " +
           std::to_string(smem_max) + cs;
  // Debugging switch: GEMMTUNE_SM90_PINGPONG_MULTITILE=0 limits ping-pong to one tile per CTA, which takes the
  // mainloop ordering barrier between a CTA's tiles (Sm90Gpu.ManyTilesPerCta) out of the picture.
  if (c.pingpong && env::get("GEMMTUNE_SM90_PINGPONG_MULTITILE") == "0") {
    const int sms = sm_count(dev);
    if (cluster_tiles(c, v) > sms / (c.cm * c.cn) / 2)
      return "sm90: ping-pong limited to one tile per CTA (GEMMTUNE_SM90_PINGPONG_MULTITILE=0)" + cs;
  }
  return "";
}
}  // namespace gemmtune::sm90
