#include "core/epilogue_codegen.h"

#include "core/dtype_code.h"

#include <cstdint>
#include <utility>

#include "core/check.h"
#include "gemmtune/errors.h"

namespace gemmtune::epi {

namespace {

std::string act_type(Activation a) {
  switch (a) {
    case Activation::relu: return "gemmtune_epi::Relu";
    case Activation::gelu_tanh: return "gemmtune_epi::GeluTanh";
    case Activation::gelu_erf: return "gemmtune_epi::GeluErf";
    case Activation::silu: return "gemmtune_epi::Silu";
    case Activation::sigmoid: return "gemmtune_epi::Sigmoid";
  }
  return "";
}

std::string op_type(const Problem& p, const EpiOp& op) {
  const std::string t = std::to_string(dtype_code(op.dtype ? *op.dtype : p.epilogue_default_dtype()));
  switch (op.kind) {
    case EpiOpKind::bias_col: return "gemmtune_epi::BiasCol<" + t + ">";
    case EpiOpKind::bias_row: return "gemmtune_epi::BiasRow<" + t + ">";
    case EpiOpKind::row_scale: return "gemmtune_epi::RowScale<" + t + ">";
    case EpiOpKind::col_scale: return "gemmtune_epi::ColScale<" + t + ">";
    case EpiOpKind::residual:
      return "gemmtune_epi::Residual<" + t + ", " + ((op.layout ? *op.layout : p.d.layout) == Layout::row ? "1" : "0") +
             ">";
    case EpiOpKind::act: return "gemmtune_epi::Activate<" + act_type(op.act) + ">";
    case EpiOpKind::glu: break;
  }
  GT_THROW("epilogue codegen: a GLU is not a plain op");
}

std::string ops_type(const Problem& p, size_t begin, size_t end) {
  std::string s = "gemmtune_epi::Ops<";
  for (size_t i = begin; i < end; ++i) {
    if (i > begin) s += ", ";
    s += op_type(p, p.epilogue.ops[i]);
  }
  return s + ">";
}

}  // namespace

int dtype_code(DType t) {
  if (is_fp8(t)) GT_THROW("epilogue: unsupported dtype " + std::string(dtype_name(t)));
  return kernel_dtype_code(t);
}

std::string chain_type(const Problem& p) {
  const auto& ops = p.epilogue.ops;
  const int g = p.epilogue.glu_index();
  if (g < 0) return "gemmtune_epi::Epi<" + ops_type(p, 0, ops.size()) + ", gemmtune_epi::NoGlu, gemmtune_epi::Ops<>>";
  const EpiOp& glu = ops[size_t(g)];
  const std::string glu_t = "gemmtune_epi::Glu<" + act_type(glu.act) + ", " +
                            std::to_string(glu.glu == GluLayout::interleaved ? glu.glu_block : 0) + ">";
  return "gemmtune_epi::Epi<" + ops_type(p, 0, size_t(g)) + ", " + glu_t + ", " + ops_type(p, size_t(g) + 1, ops.size()) +
         ">";
}

EpiParams make_params(const Problem& p, const GemmArgs& args) {
  EpiParams e;
  const Epilogue& ep = p.epilogue;
  auto need = [&](const void* ptr, const char* what) {
    if (!ptr) GT_THROW(std::string("epilogue '") + ep.key() + "' needs GemmArgs::" + what + " (null)");
    return ptr;
  };
  if (ep.has(EpiOpKind::bias_col) || ep.has(EpiOpKind::bias_row)) e.bias = need(args.bias, "bias");
  if (ep.has(EpiOpKind::residual)) e.residual = need(args.residual, "residual");
  if (ep.has(EpiOpKind::row_scale)) e.row_scale = need(args.row_scale, "row_scale");
  if (ep.has(EpiOpKind::col_scale)) e.col_scale = need(args.col_scale, "col_scale");
  e.res_ld = p.d.ld;
  e.res_bs = p.d.batch_stride;
  e.res_row = p.d.layout == Layout::row;
  e.glu_half = p.n / 2;
  return e;
}

bool operands_aligned(const Problem& p, const EpiParams& e, int elems) {
  const std::pair<const void*, EpiOpKind> ops[] = {
      {e.bias, p.epilogue.has(EpiOpKind::bias_row) ? EpiOpKind::bias_row : EpiOpKind::bias_col},
      {e.residual, EpiOpKind::residual}, {e.row_scale, EpiOpKind::row_scale}, {e.col_scale, EpiOpKind::col_scale}};
  for (const auto& [q, kind] : ops)
    if (q && reinterpret_cast<uintptr_t>(q) % (dtype_size(p.epilogue_dtype(kind)) * elems) != 0) return false;
  return true;
}

std::string elementwise_source(const Problem& p, DType in, const std::string& kernel_name) {
  return "#include \"epilogue/elementwise.cuh\"\n"
         "extern \"C\" __global__ void __launch_bounds__(256) " +
         kernel_name +
         "(gemmtune_epi::EwParams e, gemmtune_epi::EpiParams p) {\n"
         "  gemmtune_epi::elementwise<" +
         chain_type(p) + ", " + std::to_string(dtype_code(in)) + ", " + std::to_string(dtype_code(p.d.dtype)) +
         ">(e, p);\n}\n";
}

}  // namespace gemmtune::epi
