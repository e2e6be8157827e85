// cutlass unit generation: the instantiation text of a config for a problem.
#include "backends/cutlass/cutlass_codegen.h"

#include "backends/cutlass/cutlass_abi.h"
#include "core/check.h"

namespace gemmtune::cutlass_be {
namespace {

std::string element(DType t) {
  switch (t) {
    case DType::bf16: return "cutlass::bfloat16_t";
    case DType::f16: return "cutlass::half_t";
    case DType::f32: return "float";
    case DType::e4m3: return "cutlass::float_e4m3_t";
    case DType::e5m2: return "cutlass::float_e5m2_t";
    default: GT_THROW("cutlass: no CUTLASS element type for " + std::string(dtype_name(t)));
  }
}

// The CUTLASS 2.x layout tag of an operand as CUTLASS 3 builders take it: A is M x K, B is K x N, C/D are M x N,
// each row- or column-major as stored.
std::string layout_tag(Layout l) { return l == Layout::row ? "cutlass::layout::RowMajor" : "cutlass::layout::ColumnMajor"; }

// The (rows, cols, batch) stride of an operand in CUTLASS 3's stride types: A (M,K,L), B (N,K,L), C/D (M,N,L). The
// static unit stride sits on the contiguous mode.
std::string stride_expr(Which which, Layout l, const std::string& ld, const std::string& bs) {
  // For B, CUTLASS's first mode is N: a column-major B (K contiguous) has its unit stride on mode 1 (K).
  const bool unit_first = which == Which::B ? l == Layout::row : l == Layout::col;
  return unit_first ? "cute::make_stride(cute::Int<1>{}, x." + ld + ", x." + bs + ")"
                    : "cute::make_stride(x." + ld + ", cute::Int<1>{}, x." + bs + ")";
}

std::string activation_fn(Activation a) {
  switch (a) {
    case Activation::relu: return "cutlass::epilogue::thread::ReLu";
    // GELU_taylor is the tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): our gelu_tanh.
    case Activation::gelu_tanh: return "cutlass::epilogue::thread::GELU_taylor";
    case Activation::gelu_erf: return "cutlass::epilogue::thread::GELU";
    case Activation::silu: return "cutlass::epilogue::thread::SiLu";
    case Activation::sigmoid: return "cutlass::epilogue::thread::Sigmoid";
  }
  return "";
}

}  // namespace

std::string unit_ident(const Config& c, const Problem& p) {
  // Only what the instantiation depends on: shapes, leading dimensions, strides and alpha/beta's values are run-time
  // arguments, so every shape of a model with the same types, layouts and chain shares one object.
  auto op = [](const Operand& o) { return std::string(dtype_name(o.dtype)) + ":" + std::string(layout_name(o.layout)); };
  return c.str() + " | A=" + op(p.a) + " B=" + op(p.b) + " C=" + (p.beta != 0.0f ? op(p.c) : std::string("none")) +
         " D=" + op(p.d) + " scaling=" + std::string(scaling_name(p.scaling)) +
         " epilogue=" + p.epilogue.with_defaults(p.d.dtype, p.d.layout).key() +
         (p.fp8_product() && p.fp8_accum == Fp8Accum::fast ? " fp8_accum=fast" : "");
}

FusionCode generate_fusion(const Problem& p) {
  // The chain in our order (src/tuner/reference.cpp): v = alpha * acc (+ beta * C), then each op on v. Every node
  // computes in fp32; the root converts to D's element type.
  FusionCode f;
  const std::string RN = "cutlass::FloatRoundStyle::round_to_nearest";
  const size_t nodes = p.epilogue.ops.size() + 1;
  size_t i = 0;
  auto out_of = [&](size_t node) { return node + 1 == nodes ? std::string("ED") : std::string("float"); };
  auto compute = [&](const std::string& fn, size_t node) {
    return "fu::Sm90Compute<" + fn + ", " + out_of(node) + ", float, " + RN + ">";
  };
  std::string prev = "N0";
  // The scaled product alpha * acc, dequantized (fp8): tensor scaling folds scale_a[0] and scale_b[0] into alpha
  // (a scalar broadcast reading the two pointers and multiplying), row scaling multiplies by scale_b[n] (a row
  // vector) and scale_a[m] (a column vector). Named `last`; its outermost node converts to D's type when it is the
  // root (no C, no chain).
  const bool alpha_root = p.beta == 0.0f && p.epilogue.ops.empty();
  auto alpha_term = [&](const std::string& last) {
    const std::string outer = alpha_root ? compute("cutlass::multiplies", 0)
                                         : "fu::Sm90Compute<cutlass::multiplies, float, float, " + RN + ">";
    const std::string inner = "fu::Sm90Compute<cutlass::multiplies, float, float, " + RN + ">";
    if (p.scaling == Scaling::tensor) {
      f.types += "using " + last + " = fu::Sm90EVT<" + outer +
                 ", fu::Sm90ScalarBroadcast<float, cute::Stride<cute::_0, cute::_0, cute::_0>, 3>, fu::Sm90AccFetch>;\n";
      return std::string("{{{x.alpha, 1.0f, 1.0f}, {nullptr, x.scale_a, x.scale_b}}, {}, {}}");
    }
    if (p.scaling == Scaling::row) {
      f.types += "using NAcc = fu::Sm90EVT<" + inner + ", fu::Sm90ScalarBroadcast<float>, fu::Sm90AccFetch>;\n";
      f.types += "using NScaleB = fu::Sm90EVT<" + inner +
                 ", NAcc, fu::Sm90RowBroadcast<0, TileShape, float, float, cute::Stride<cute::_0, cute::_1, "
                 "cute::_0>, 1>>;\n";
      f.types += "using " + last + " = fu::Sm90EVT<" + outer +
                 ", NScaleB, fu::Sm90ColBroadcast<0, TileShape, float, float, cute::Stride<cute::_1, cute::_0, "
                 "cute::_0>, 1>>;\n";
      return std::string("{{{{{x.alpha}}, {}, {}}, {x.scale_b}, {}}, {x.scale_a}, {}}");
    }
    f.types += "using " + last + " = fu::Sm90EVT<" + outer + ", fu::Sm90ScalarBroadcast<float>, fu::Sm90AccFetch>;\n";
    return std::string("{{{x.alpha}}, {}, {}}");
  };
  if (p.beta != 0.0f) {
    const std::string alpha_args = alpha_term("NAlpha");
    f.types += "using N0 = fu::Sm90EVT<" + compute("cutlass::homogeneous_multiply_add", i) +
               ", fu::Sm90ScalarBroadcast<float>, fu::Sm90SrcFetch<EC>, NAlpha>;\n";
    f.args = "{{{x.beta}}, {}, " + alpha_args + ", {}}";
  } else {
    f.args = alpha_term("N0");
  }
  for (const EpiOp& op : p.epilogue.ops) {
    ++i;
    std::string name = "N";
    name += std::to_string(i);
    std::string node, leaf_args;
    // Vectors: a row vector (N values, one per column) is CUTLASS's RowBroadcast, a column vector (M values) its
    // ColBroadcast; both shared by every batch (batch stride 0). Alignment 1: any N or M and any element offset.
    auto vec = [&](bool per_col, const char* ptr) {
      const std::string t = element(p.epilogue_dtype(op.kind));
      leaf_args = std::string("{static_cast<const ") + t + "*>(x." + ptr + ")}";
      return per_col ? "fu::Sm90RowBroadcast<0, TileShape, " + t + ", float, cute::Stride<cute::_0, cute::_1, "
                                                                    "cute::_0>, 1>"
                     : "fu::Sm90ColBroadcast<0, TileShape, " + t + ", float, cute::Stride<cute::_1, cute::_0, "
                                                                    "cute::_0>, 1>";
    };
    switch (op.kind) {
      case EpiOpKind::bias_col:
        node = compute("cutlass::plus", i) + ", " + prev + ", " + vec(true, "bias");
        break;
      case EpiOpKind::bias_row:
        node = compute("cutlass::plus", i) + ", " + prev + ", " + vec(false, "bias");
        break;
      case EpiOpKind::row_scale:
        node = compute("cutlass::multiplies", i) + ", " + prev + ", " + vec(false, "row_scale");
        break;
      case EpiOpKind::col_scale:
        node = compute("cutlass::multiplies", i) + ", " + prev + ", " + vec(true, "col_scale");
        break;
      case EpiOpKind::act:
        node = compute(activation_fn(op.act), i) + ", " + prev;
        break;
      case EpiOpKind::residual: {
        // An M x N operand in D's layout, ld and batch stride, loaded by TMA through shared memory like C (its
        // stages, shared-memory layout and copy come from the epilogue's own descriptor).
        const std::string t = element(p.epilogue_dtype(op.kind));
        f.types += "using ResDesc = cutlass::epilogue::collective::detail::AuxLoadDescriptor<EpiDesc, LD, " + t + ">;\n";
        node = compute("cutlass::plus", i) + ", " + prev +
               ", fu::Sm90AuxLoad<ResDesc::Stages, typename EpiDesc::EpilogueTile, " + t +
               ", typename ResDesc::Stride, typename ResDesc::SmemLayoutAtom, typename ResDesc::CopyOpS2R>";
        leaf_args = "{static_cast<const " + t + "*>(x.residual), " + t + "(0), " +
                    stride_expr(Which::D, p.d.layout, "ldd", "bsd") + "}";
        break;
      }
      default:
        GT_THROW("cutlass: epilogue op " + op.key() + " has no CUTLASS form");
    }
    f.types += "using " + name + " = fu::Sm90EVT<" + node + ">;\n";
    std::string args = "{";
    args += f.args;
    if (!leaf_args.empty()) args += ", " + leaf_args;
    args += ", {}}";
    f.args = std::move(args);
    prev = name;
  }
  f.types += "using Fusion = " + prev + ";\n";
  return f;
}

std::string generate_unit(const Config& c, const Problem& p) {
  const bool has_c = p.beta != 0.0f;
  const bool coop = c.sched == Sched::coop;
  const FusionCode f = generate_fusion(p);
  auto align = [](DType t) { return std::to_string(16 / dtype_size(t)); };
  std::string s;
  s += "// gemmtune cutlass unit: " + unit_ident(c, p) + "\n";
  s += R"(#include <cuda_runtime.h>
#include <cstddef>
#include <cstdint>
#include <new>
#include <cutlass/cutlass.h>
#include <cute/tensor.hpp>
#include <cutlass/epilogue/thread/activation.h>
#include <cutlass/gemm/dispatch_policy.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/epilogue/fusion/sm90_visitor_tma_warpspecialized.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>

namespace fu = cutlass::epilogue::fusion;
)";
  s += "extern \"C\" {\n" + std::string(kArgsStructText) + ";\n}\n";
  s += "using TileShape = cute::Shape<cute::_" + std::to_string(c.tile_m) + ", cute::_" + std::to_string(c.tile_n) +
       ", cute::_" + std::to_string(c.tile_k) + ">;\n";
  s += "using ClusterShape = cute::Shape<cute::_" + std::to_string(c.cluster_m) + ", cute::_" +
       std::to_string(c.cluster_n) + ", cute::_1>;\n";
  s += "using EA = " + element(p.a.dtype) + ";\nusing LA = " + layout_tag(p.a.layout) + ";\n";
  s += "using EB = " + element(p.b.dtype) + ";\nusing LB = " + layout_tag(p.b.layout) + ";\n";
  // Without beta, C is void: the epilogue never reads it.
  s += "using EC = " + (has_c ? element(p.c.dtype) : std::string("void")) + ";\nusing LC = " +
       layout_tag(has_c ? p.c.layout : p.d.layout) + ";\n";
  s += "using ED = " + element(p.d.dtype) + ";\nusing LD = " + layout_tag(p.d.layout) + ";\n";
  s += std::string("using EpiSchedule = ") +
       (coop ? "cutlass::epilogue::TmaWarpSpecializedCooperative" : "cutlass::epilogue::TmaWarpSpecialized") + ";\n";
  s += "using EpiDesc = cutlass::epilogue::collective::detail::EpilogueDescriptor<TileShape, "
       "cutlass::epilogue::collective::EpilogueTileAuto, EC, ED, EpiSchedule>;\n";
  s += f.types;
  s += "using Epi = typename cutlass::epilogue::collective::CollectiveBuilder<\n"
       "    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,\n"
       "    cutlass::epilogue::collective::EpilogueTileAuto, float, float, EC, LC, " +
       (has_c ? align(p.c.dtype) : align(p.d.dtype)) + ", ED, LD, " + align(p.d.dtype) +
       ", EpiSchedule, Fusion>::CollectiveOp;\n";
  s += "using Main = typename cutlass::gemm::collective::CollectiveBuilder<\n"
       "    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, EA, LA, " +
       align(p.a.dtype) + ", EB, LB, " + align(p.b.dtype) +
       ", float, TileShape, ClusterShape,\n"
       "    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename "
       "Epi::SharedStorage))>,\n    " +
       (coop ? "cutlass::gemm::KernelTmaWarpSpecializedCooperative" : "cutlass::gemm::KernelTmaWarpSpecializedPingpong") +
       // fp8: these schedules promote the tensor core's sums into fp32 every 4 wgmma k-steps (128 K: CUTLASS's
       // mma_promotion_interval), fp8_accum=exact; the FP8FastAccum ones accumulate all of K in the tensor core.
       (p.fp8_product() && p.fp8_accum == Fp8Accum::fast ? "FP8FastAccum" : "") + ">::CollectiveOp;\n";
  s += "using Kernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, Main, Epi>;\n";
  s += "using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;\n\n";
  s += "static typename Gemm::Arguments make_args(const GtCutlassArgs& x) {\n"
       "  typename Gemm::Arguments a{};\n"
       "  a.mode = cutlass::gemm::GemmUniversalMode::kGemm;\n"
       "  a.problem_shape = {int(x.m), int(x.n), int(x.k), int(x.l)};\n"
       "  a.mainloop.ptr_A = static_cast<const EA*>(x.a);\n"
       "  a.mainloop.dA = " + stride_expr(Which::A, p.a.layout, "lda", "bsa") + ";\n"
       "  a.mainloop.ptr_B = static_cast<const EB*>(x.b);\n"
       "  a.mainloop.dB = " + stride_expr(Which::B, p.b.layout, "ldb", "bsb") + ";\n";
  if (has_c) s += "  a.epilogue.ptr_C = static_cast<const EC*>(x.c);\n";
  s += "  a.epilogue.dC = " + stride_expr(Which::C, has_c ? p.c.layout : p.d.layout, "ldc", "bsc") + ";\n"
       "  a.epilogue.ptr_D = static_cast<ED*>(x.d);\n"
       "  a.epilogue.dD = " + stride_expr(Which::D, p.d.layout, "ldd", "bsd") + ";\n"
       "  a.epilogue.thread = " + f.args + ";\n"
       "  int dev = 0;\n"
       "  cudaGetDevice(&dev);\n"
       "  a.hw_info.device_id = dev;\n"
       "  a.hw_info.sm_count = x.sm_count;\n"
       "  return a;\n"
       "}\n\n";
  s += R"(static const char* status_error(cutlass::Status s) {
  if (s == cutlass::Status::kSuccess) return nullptr;
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? cutlassGetStatusString(s) : cudaGetErrorString(e);
}

extern "C" {
__attribute__((visibility("default"))) const char* gt_cutlass_ident() {
  return ")" + unit_ident(c, p) + R"(";
}
__attribute__((visibility("default"))) size_t gt_cutlass_args_size() { return sizeof(GtCutlassArgs); }
__attribute__((visibility("default"))) const char* gt_cutlass_check(const GtCutlassArgs* x) {
  return status_error(Gemm::can_implement(make_args(*x)));
}
__attribute__((visibility("default"))) size_t gt_cutlass_workspace(const GtCutlassArgs* x) {
  return Gemm::get_workspace_size(make_args(*x));
}
__attribute__((visibility("default"))) void* gt_cutlass_create() { return new (std::nothrow) Gemm(); }
__attribute__((visibility("default"))) void gt_cutlass_destroy(void* h) { delete static_cast<Gemm*>(h); }
__attribute__((visibility("default"))) const char* gt_cutlass_init(void* h, const GtCutlassArgs* x, void* stream) {
  return status_error(static_cast<Gemm*>(h)->initialize(make_args(*x), x->workspace,
                                                        static_cast<cudaStream_t>(stream)));
}
__attribute__((visibility("default"))) const char* gt_cutlass_run(void* h, void* stream) {
  const char* err = status_error(static_cast<Gemm*>(h)->run(static_cast<cudaStream_t>(stream)));
  if (err) return err;
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? nullptr : cudaGetErrorString(e);
}
}
)";
  return s;
}

}  // namespace gemmtune::cutlass_be
