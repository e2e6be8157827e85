#include "gemmtune/epilogue.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "gemmtune/errors.h"

namespace gemmtune {

namespace {

constexpr Activation kActs[] = {Activation::relu, Activation::gelu_tanh, Activation::gelu_erf, Activation::silu,
                                Activation::sigmoid};

std::optional<Activation> parse_act(std::string_view s) {
  for (Activation a : kActs)
    if (s == activation_name(a)) return a;
  if (s == "gelu") return Activation::gelu_erf;  // torch.nn.functional.gelu's default
  if (s == "swish") return Activation::silu;
  return std::nullopt;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) return out;
    start = p + 1;
  }
}

std::string kind_name(const EpiOp& op) {
  switch (op.kind) {
    case EpiOpKind::bias_col: return "bias";
    case EpiOpKind::bias_row: return "bias_row";
    case EpiOpKind::act: return std::string(activation_name(op.act));
    case EpiOpKind::glu: return std::string(activation_name(op.act)) + "_glu";
    case EpiOpKind::row_scale: return "row_scale";
    case EpiOpKind::col_scale: return "col_scale";
    case EpiOpKind::residual: return "residual";
  }
  return "?";
}

// The message for a chain of `n` ops past the limit; it names the count, not the chain (which may be megabytes).
std::string too_long(std::size_t n) {
  return "epilogue: a chain of " + std::to_string(n) + " ops is too long (at most " +
         std::to_string(kMaxEpilogueOps) + ")";
}

}  // namespace

std::string_view activation_name(Activation a) {
  switch (a) {
    case Activation::relu: return "relu";
    case Activation::gelu_tanh: return "gelu_tanh";
    case Activation::gelu_erf: return "gelu_erf";
    case Activation::silu: return "silu";
    case Activation::sigmoid: return "sigmoid";
  }
  return "?";
}

bool EpiOp::takes_vector() const {
  return kind == EpiOpKind::bias_col || kind == EpiOpKind::bias_row || kind == EpiOpKind::row_scale ||
         kind == EpiOpKind::col_scale;
}

std::string EpiOp::key() const {
  std::string s = kind_name(*this);
  // Appended piecewise: GCC 12's -Wrestrict misfires on `":" + std::string(...)`.
  if (dtype) s.append(":").append(dtype_name(*dtype));
  if (layout) s.append(":").append(layout_name(*layout));
  if (kind == EpiOpKind::glu && glu == GluLayout::interleaved) s.append(":interleave").append(std::to_string(glu_block));
  return s;
}

std::string Epilogue::key() const {
  if (ops.empty()) return "none";
  std::string s;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (i) s += ',';
    s += ops[i].key();
  }
  return s;
}

Epilogue Epilogue::with_defaults(DType d_dtype, Layout d_layout) const {
  Epilogue e = *this;
  for (EpiOp& op : e.ops) {
    if (op.takes_vector() || op.kind == EpiOpKind::residual)
      if (!op.dtype) op.dtype = d_dtype;
    if (op.kind == EpiOpKind::residual && !op.layout) op.layout = d_layout;
  }
  return e;
}

const EpiOp* Epilogue::find(EpiOpKind k) const {
  for (const EpiOp& op : ops)
    if (op.kind == k) return &op;
  return nullptr;
}

int Epilogue::glu_index() const {
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].kind == EpiOpKind::glu) return int(i);
  return -1;
}

std::string Epilogue::check() const {
  if (ops.size() > std::size_t(kMaxEpilogueOps)) return too_long(ops.size());
  const std::string pre = "epilogue '" + key() + "': ";
  int count[7] = {};
  const int glu_at = glu_index();
  for (size_t i = 0; i < ops.size(); ++i) {
    const EpiOp& op = ops[i];
    const int k = int(op.kind);
    ++count[k];
    const bool has_operand = op.takes_vector() || op.kind == EpiOpKind::residual;
    if (op.dtype && !has_operand) return pre + "'" + kind_name(op) + "' takes no dtype";
    if (op.dtype && *op.dtype != DType::bf16 && *op.dtype != DType::f16 && *op.dtype != DType::f32)
      return pre + "'" + kind_name(op) + "' must be bf16, f16 or f32 (got " + std::string(dtype_name(*op.dtype)) + ")";
    if (op.layout && op.kind != EpiOpKind::residual) return pre + "only the residual takes a layout";
    if (op.kind == EpiOpKind::glu && op.glu == GluLayout::interleaved && op.glu_block < 1)
      return pre + "GLU interleave block must be >= 1 (got " + std::to_string(op.glu_block) + ")";
    if (op.kind == EpiOpKind::residual && glu_at > int(i))
      return pre + "the residual must come after the GLU (it is shaped like D, M x N/2)";
  }
  if (count[int(EpiOpKind::glu)] > 1) return pre + "at most one GLU per chain";
  if (count[int(EpiOpKind::bias_col)] + count[int(EpiOpKind::bias_row)] > 1)
    return pre + "at most one bias per chain (one bias pointer)";
  for (EpiOpKind k : {EpiOpKind::row_scale, EpiOpKind::col_scale, EpiOpKind::residual})
    if (count[int(k)] > 1) {
      EpiOp op;
      op.kind = k;
      return pre + "'" + kind_name(op) + "' appears more than once (one pointer per operand)";
    }
  return "";
}

Epilogue parse_epilogue(const std::string& spec_in) {
  std::string spec;
  for (char ch : spec_in)
    if (!std::isspace(static_cast<unsigned char>(ch))) spec += char(std::tolower(static_cast<unsigned char>(ch)));
  Epilogue e;
  if (spec.empty() || spec == "none") return e;
  if (const std::size_t n = std::size_t(std::count(spec.begin(), spec.end(), ',')) + 1;
      n > std::size_t(kMaxEpilogueOps))
    throw Error(too_long(n));
  for (const std::string& item : split(spec, ',')) {
    if (item.empty()) throw Error("epilogue '" + spec_in + "': empty op in the chain");
    std::vector<std::string> parts = split(item, ':');
    const std::string& name = parts[0];
    const std::string bad = "epilogue '" + spec_in + "': ";
    EpiOp op;
    if (name == "bias" || name == "bias_col") {
      op.kind = EpiOpKind::bias_col;
    } else if (name == "bias_row") {
      op.kind = EpiOpKind::bias_row;
    } else if (name == "row_scale") {
      op.kind = EpiOpKind::row_scale;
    } else if (name == "col_scale") {
      op.kind = EpiOpKind::col_scale;
    } else if (name == "residual") {
      op.kind = EpiOpKind::residual;
    } else if (name == "swiglu") {
      op.kind = EpiOpKind::glu, op.act = Activation::silu;
    } else if (name == "glu") {
      op.kind = EpiOpKind::glu, op.act = Activation::sigmoid;
    } else if (name.size() > 4 && name.ends_with("_glu") && parse_act(name.substr(0, name.size() - 4))) {
      op.kind = EpiOpKind::glu, op.act = *parse_act(name.substr(0, name.size() - 4));
    } else if (auto a = parse_act(name)) {
      op.kind = EpiOpKind::act, op.act = *a;
    } else {
      throw Error(bad + "unknown op '" + name +
                  "' (known: bias, bias_row, relu, gelu_tanh, gelu_erf, gelu, silu, sigmoid, <act>_glu, swiglu, glu, "
                  "row_scale, col_scale, residual)");
    }
    bool glu_layout_given = false;
    for (size_t i = 1; i < parts.size(); ++i) {
      const std::string& prm = parts[i];
      // A chain of one op is its own name: "op 'x'" would only repeat it.
      const std::string where = item == spec ? bad : bad + "op '" + item + "': ";
      if (prm.empty()) throw Error(where + "empty parameter");
      if (op.kind == EpiOpKind::glu) {
        // One layout per GLU, as one dtype per operand: "halves:interleave64" is a contradiction, not "last wins".
        if (glu_layout_given && (prm == "halves" || prm.starts_with("interleave")))
          throw Error(where + "GLU layout given twice");
        glu_layout_given = true;
        if (prm == "halves") {
          op.glu = GluLayout::halves, op.glu_block = 0;
        } else if (prm.starts_with("interleave")) {
          const std::string num = prm.substr(10);
          int64_t b = 0;
          auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), b);
          if (num.empty() || ec != std::errc() || p != num.data() + num.size() || b < 1)
            throw Error(where + "'" + prm + "': expected interleave<B> with a block width B >= 1, e.g. interleave64");
          op.glu = GluLayout::interleaved, op.glu_block = b;
        } else {
          throw Error(where + "unknown GLU parameter '" + prm + "' (halves or interleave<B>)");
        }
      } else if (auto t = parse_dtype(prm); t && (op.takes_vector() || op.kind == EpiOpKind::residual)) {
        if (op.dtype) throw Error(where + "dtype given twice");
        op.dtype = *t;
      } else if (auto l = parse_layout(prm); l && op.kind == EpiOpKind::residual) {
        if (op.layout) throw Error(where + "layout given twice");
        op.layout = *l;
      } else {
        throw Error(where + "unexpected parameter '" + prm + "'" +
                    (op.kind == EpiOpKind::act ? " (activations take none)"
                     : op.kind == EpiOpKind::residual ? " (a dtype and/or a layout)"
                                                      : " (a dtype: bf16, f16, f32)"));
      }
    }
    e.ops.push_back(op);
  }
  return e;
}

}  // namespace gemmtune
