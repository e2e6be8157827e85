// cublaslt rules: which problems cuBLASLt runs and which config suffixes fit a problem (cublaslt_problem.h).
#include "backends/cublaslt/cublaslt_problem.h"

namespace gemmtune::cublaslt {
namespace {

// The fp8 part of problem_reason: cuBLASLt's fp8 rules, on top of gemmtune's own (Problem::check(), passed).
std::string fp8_reason(const Problem& p, const DeviceInfo& dev) {
  const std::string pre = "cublaslt: ";
  if (dev.cc_major != 0 && dev.cc_major * 10 + dev.cc_minor < 89)
    return pre + "fp8 needs sm_89 or newer (fp8 tensor cores), got " + dev.arch();
  if (dev.cc_major != 0 && p.scaling != Scaling::tensor && !(dev.cc_major == 9 && dev.cc_minor == 0))
    return pre + "scaling=" + std::string(scaling_name(p.scaling)) +
           " uses cuBLASLt scale modes that exist on sm_90 only (OUTER_VEC_32F, VEC128_32F/BLK128x128_32F), got " +
           dev.arch();
  if (!is_fp8(p.a.dtype))
    return pre + "A=" + dn(p.a.dtype) + " with B=" + dn(p.b.dtype) +
           ": cuBLASLt's fp8 matmul takes fp8 A and B only (no 16-bit x fp8 kernel); the gemv backend takes "
           "skinny weight-only fp8 problems";
  if (p.a.dtype == DType::e5m2 && p.b.dtype == DType::e5m2)
    return pre + "A=e5m2 with B=e5m2: cuBLASLt has no e5m2 x e5m2 matmul (one of A, B must be e4m3)";
  if (p.beta != 0.0f && p.c.layout != p.d.layout)
    return pre + "C must have D's layout when beta != 0 (cuBLASLt has no transpose for C), got C=" +
           std::string(layout_name(p.c.layout)) + " D=" + std::string(layout_name(p.d.layout));
  // cuBLASLt's fp8 kernels need every matrix's pointer and leading dimension 16-byte aligned.
  for (Which w : kOperands) {
    if (w == Which::C && p.beta == 0.0f) continue;
    if (const int acc = p.access_bytes(w); acc < 16) {
      const Operand& o = p.operand(w);
      return pre + "cuBLASLt's fp8 matmul needs 16-byte aligned rows of every matrix: " + which_name(w) + " (" +
             dn(o.dtype) + ") has ld" + which_lower(w) + "=" + std::to_string(o.ld) + " = " +
             std::to_string(o.ld * int64_t(dtype_size(o.dtype))) + " bytes, align=" + std::to_string(o.align) +
             (p.batch > 1 ? ", batch stride " + std::to_string(o.batch_stride) : "") + ": " + std::to_string(acc) +
             "-byte aligned";
    }
  }
  if (p.scaling == Scaling::block) {
    // cuBLASLt's BLK128x128_32F tensor has a pitch of ceil(K/128) rounded up to a multiple of 4 floats (16 bytes)
    // between consecutive 128-column blocks of N; gemmtune's scale_b is packed (pitch ceil(K/128)). They agree when
    // the pitch needs no rounding or when there is one block of columns.
    const int64_t kb = (p.k + kScaleBlock - 1) / kScaleBlock, nb = (p.n + kScaleBlock - 1) / kScaleBlock;
    if (kb % 4 != 0 && nb > 1)
      return pre + "scaling=block: cuBLASLt reads B's 128x128 block scales with a pitch of ceil(K/128) rounded up to "
                   "a multiple of 4 (" + std::to_string((kb + 3) / 4 * 4) + " floats per 128 columns of N), gemmtune's "
                   "scale_b is packed (pitch ceil(K/128)=" + std::to_string(kb) +
             "): needs ceil(K/128) % 4 == 0 or N <= 128";
  }
  // Measured on sm_90 with CUDA 13.0: the heuristic answers CUBLAS_STATUS_INVALID_VALUE for an fp8 D with outer-vector
  // or block scales, and no algorithm for block scales when M is not a multiple of 4 (A's VEC128 scale columns).
  if (p.d.dtype == DType::e4m3 && p.scaling != Scaling::tensor)
    return pre + "an e4m3 D takes tensor scaling only in cuBLASLt (scaling=" + std::string(scaling_name(p.scaling)) +
           " with an fp8 D is not supported there)";
  if (p.scaling == Scaling::block && p.m % 4 != 0)
    return pre + "scaling=block needs M a multiple of 4 in cuBLASLt (M=" + std::to_string(p.m) + ")";
  if (p.d.dtype == DType::e4m3 && !p.epilogue.empty()) {
    cublasLtEpilogue_t ep;
    if (std::string why = native_epilogue(p, ep); !why.empty())
      return pre + "an e4m3 D with epilogue '" + p.epilogue.key() + "' needs the chain fused in cuBLASLt (" + why +
             "): the separate elementwise pass does not apply scale_d, saturation or amax";
  }
  return "";
}

}  // namespace

std::string problem_reason(const ResolvedProblem& rp, const DeviceInfo& dev) {
  const Problem& p = rp;
  const std::string pre = "cublaslt: ";
  if (dev.cc_major != 0 && dev.cc_major < 8) return pre + "needs sm_80 or newer for bf16/f16 tensor cores, got " + dev.arch();
  // A plain or batched matmul here would ignore the groups and compute a wrong answer. cuBLASLt's batches (strided or
  // pointer-array) share one shape, and cublasGemmGroupedBatchedEx reads the group sizes on the host.
  if (p.grouped())
    return pre + "grouped GEMMs (grouping=" + std::string(grouping_name(p.grouping)) +
           ") are not supported: cuBLASLt has no grouped matmul whose group sizes live on the device";
  const DType in = p.a.dtype;
  if (fp8_problem(p)) return fp8_reason(p, dev);
  if (in != DType::bf16 && in != DType::f16 && in != DType::f32)
    return pre + "A must be bf16, f16 or f32, got " + dn(in);
  if (p.b.dtype != in) return pre + "A and B must have the same dtype, got A=" + dn(in) + " B=" + dn(p.b.dtype);
  // f32 inputs: full-precision SGEMM (CUBLAS_COMPUTE_32F, not TF32), D must be f32.
  if (in == DType::f32 && p.d.dtype != DType::f32)
    return pre + "with f32 inputs D must be f32 (CUBLAS_COMPUTE_32F), got " + dn(p.d.dtype);
  if (p.d.dtype != in && p.d.dtype != DType::f32)
    return pre + "with " + dn(in) + " inputs D must be " + dn(in) + " or f32 (cuBLASLt CUBLAS_COMPUTE_32F types), got " +
           dn(p.d.dtype);
  if (p.beta != 0.0f && p.c.layout != p.d.layout)
    return pre + "C must have D's layout when beta != 0 (cuBLASLt has no transpose for C), got C=" +
           std::string(layout_name(p.c.layout)) + " D=" + std::string(layout_name(p.d.layout));
  return "";
}

std::string config_reason(const Problem& p, const CandidateConfig& cfg) {
  if (cfg.fast_accum && !fp8_problem(p))
    return "cublaslt: fast_accum applies to fp8 inputs (A and B are " + dn(p.a.dtype) + "): drop ',fast_accum=" +
           (*cfg.fast_accum ? "1" : "0") + "'";
  if (const bool fast = p.fp8_accum == Fp8Accum::fast; fp8_problem(p) && cfg.fast_accum.value_or(false) != fast)
    return std::string("cublaslt: fast_accum=") + (fast ? "0" : "1") + " is not the problem's fp8_accum=" +
           std::string(fp8_accum_name(p.fp8_accum)) + ": use ',fast_accum=" + (fast ? "1" : "0") + "'";
  const EpiMode mode = cfg.epi;
  if (p.epilogue.empty())
    return mode == EpiMode::none ? "" : "cublaslt: the config has ',epi=...' but the problem has no epilogue";
  if (mode == EpiMode::none)
    return "cublaslt: epilogue '" + p.epilogue.key() + "' needs ',epi=fused' or ',epi=separate' in the config";
  cublasLtEpilogue_t ep;
  if (mode == EpiMode::fused)
    if (std::string why = native_epilogue(p, ep); !why.empty())
      return "cublaslt: epi=fused cannot run '" + p.epilogue.key() + "': " + why + " (use epi=separate)";
  if (mode == EpiMode::separate && p.d.dtype == DType::e4m3)
    return "cublaslt: epi=separate cannot produce an e4m3 D: the elementwise pass does not apply scale_d, "
           "saturation or amax (use epi=fused)";
  return "";
}

}  // namespace gemmtune::cublaslt
