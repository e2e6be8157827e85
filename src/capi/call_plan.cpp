#include "capi/call_plan.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/input.h"
#include "gemmtune/problem.h"
#include "tuner/serialize.h"

namespace gemmtune {
namespace {

using nlohmann::json;
using Dims = std::vector<int64_t>;
using detail::InputError;

constexpr int kMaxDims = 8;
constexpr int64_t kMaxSize = int64_t(1) << 31;   // a size (a GEMM's dims are < 2^31)
constexpr int64_t kMaxElems = int64_t(1) << 40;  // a tensor's elements, a stride

// Python's tuple spelling, which the binding's users read: (300, 64), (300,), ().
std::string tup(const Dims& d) {
  std::string s = "(";
  for (size_t i = 0; i < d.size(); ++i) s.append(i ? ", " : "").append(std::to_string(d[i]));
  return s + (d.size() == 1 ? ",)" : ")");
}

Dims packed(const Dims& shape) {
  Dims s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * std::max<int64_t>(shape[i], 1);
  return s;
}

struct Tensor {
  Dims shape, strides;
  std::string dtype;  // as given
  int align = 16;

  int dim() const { return int(shape.size()); }
  int64_t size(int i) const { return shape[i < 0 ? i + dim() : i]; }
  int64_t stride(int i) const { return strides[i < 0 ? i + dim() : i]; }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return n;
  }
  // Whether the strides are `want`'s, ignoring dims of size 1 (whose stride means nothing).
  bool strided_as(const Dims& want) const {
    for (int i = 0; i < dim(); ++i)
      if (shape[i] != 1 && strides[i] != want[i]) return false;
    return true;
  }
  bool contiguous() const { return strided_as(packed(shape)); }
};

// gemmtune's dtype of a name in gemmtune's or torch's spelling ("torch.float8_e4m3fn").
std::optional<DType> dtype_of(std::string name) {
  if (name.starts_with("torch.")) name = name.substr(6);
  static const std::map<std::string, DType> torch_names = {{"bfloat16", DType::bf16}, {"float16", DType::f16},
                                                           {"float32", DType::f32}, {"float8_e4m3fn", DType::e4m3},
                                                           {"float8_e5m2", DType::e5m2}};
  if (auto it = torch_names.find(name); it != torch_names.end()) return it->second;
  return parse_dtype(name);
}
bool is_int32(std::string name) {
  if (name.starts_with("torch.")) name = name.substr(6);
  return name == "int32" || name == "i32";
}
bool fp8(const std::optional<DType>& t) { return t && (*t == DType::e4m3 || *t == DType::e5m2); }
bool half(const std::optional<DType>& t) { return t && (*t == DType::bf16 || *t == DType::f16); }
bool out_kind(const std::optional<DType>& t) { return t && (half(t) || *t == DType::f32); }

// A matrix (or a batch of them) as the GEMM reads it: `batch` matrices bs apart, rows x cols with strides (s0, s1).
struct Mat {
  int64_t batch = 1, rows = 0, cols = 0, bs = 0, s0 = 0, s1 = 0;
};

Mat mat_of(const Tensor& t) {
  Mat m{1, t.size(-2), t.size(-1), 0, t.stride(-2), t.stride(-1)};
  if (t.dim() == 3) m.batch = t.size(0), m.bs = m.batch > 1 ? t.stride(0) : 0;
  return m;
}

// (layout, ld) of a matrix, or none when it has no usable unit stride. The stride of a size-1 dim means nothing: it
// is normalized, and the ld of a single row (column) is padded to 16 bytes when the batch stride leaves room, so a
// vector counts as aligned.
std::optional<std::pair<Layout, int64_t>> layout_of(const Mat& m, int64_t es, int64_t batch) {
  const int64_t q = std::max<int64_t>(1, 16 / es);
  const auto pad = [&](int64_t n) {
    const int64_t p = (n + q - 1) / q * q;
    return batch <= 1 || m.bs == 0 || m.bs >= p ? p : n;
  };
  const bool row_ok = (m.cols == 1 || m.s1 == 1) && (m.rows == 1 || m.s0 >= std::max<int64_t>(m.cols, 1));
  const bool col_ok = (m.rows == 1 || m.s0 == 1) && (m.cols == 1 || m.s1 >= std::max<int64_t>(m.rows, 1));
  if (row_ok && (!col_ok || m.cols >= m.rows)) return std::pair{Layout::row, m.rows > 1 ? m.s0 : pad(m.cols)};
  if (col_ok) return std::pair{Layout::col, m.cols > 1 ? m.s1 : pad(m.rows)};
  return std::nullopt;
}

// The Operand of a matrix, and whether it must be copied (packed, row-major, 16-byte aligned) to be read: when it has
// no unit stride, or its address is not a multiple of its element (nor of 2 bytes).
std::pair<Operand, bool> operand_of(const Mat& m, int align, DType t, int64_t batch) {
  const int64_t es = int64_t(dtype_size(t));
  const auto lay = layout_of(m, es, batch);
  if (!lay || align < std::max<int64_t>(2, es)) {
    Mat p{m.batch, m.rows, m.cols, m.rows * m.cols, m.cols, 1};
    const int64_t ld = m.rows > 1 ? m.cols : layout_of(p, es, batch)->second;
    return {Operand{t, Layout::row, ld, m.batch > 1 ? m.rows * m.cols : 0, 16}, true};
  }
  return {Operand{t, lay->first, lay->second, m.bs, align}, false};
}

// x (..., K) as an (M, K) matrix without a copy, when its leading dims collapse into one stride.
std::optional<Mat> flatten(const Tensor& t) {
  const int64_t cols = t.size(-1);
  int64_t rows = 1, s0 = 0;
  bool first = true;
  for (int i = t.dim() - 2; i >= 0; --i) {
    if (t.shape[i] == 1) continue;
    if (first) {
      s0 = t.strides[i], first = false;
    } else if (int64_t want; __builtin_mul_overflow(s0, rows, &want) || t.strides[i] != want) {
      return std::nullopt;
    }
    rows *= t.shape[i];
  }
  if (first) s0 = std::max<int64_t>(cols, 1);
  return Mat{1, rows, cols, 0, s0, t.stride(-1)};
}

class Planner {
 public:
  explicit Planner(const json& call) {
    const detail::Fields f(call, "call");
    f.only({"op", "kind", "tensors", "epilogue", "alpha", "beta", "scaling", "fp8_accum", "out_dtype"});
    op_ = f.string("op", "gemmtune");
    kind_ = f.string("kind");
    if (std::find_if(std::begin(kCallKinds), std::end(kCallKinds), [&](const char* k) { return kind_ == k; }) ==
        std::end(kCallKinds))
      throw InputError("call: unknown \"kind\" '" + kind_ + "'");
    epi_ = f.string("epilogue", "none");
    alpha_ = f.number("alpha", 1.0);
    beta_ = f.number("beta", 0.0);
    if (f.has("scaling") && !f.at("scaling").is_null()) scaling_ = f.string("scaling");
    if (f.has("out_dtype") && !f.at("out_dtype").is_null()) out_dtype_ = f.string("out_dtype");
    const std::string fa = f.string("fp8_accum", "exact");
    const std::optional<Fp8Accum> accum = parse_fp8_accum(fa);
    if (!accum) throw InputError("call: \"fp8_accum\" must be exact or fast, got '" + fa + "'");
    fp8_accum_ = *accum;
    if (f.has("tensors"))
      for (const auto& [name, j] : f.at("tensors").items()) {
        if (j.is_null()) continue;
        static const char* known[] = {"a", "b", "out", "c", "bias", "residual", "row_scale", "col_scale",
                                      "scale_a", "scale_b", "scale_d", "amax", "offs"};
        if (std::find(std::begin(known), std::end(known), name) == std::end(known))
          throw InputError("call: unknown tensor '" + name + "'");
        t_[name] = tensor_of(j, "call tensor '" + name + "'");
      }
  }

  json plan() {
    if (!has("a") || !has("b")) throw InputError("call: tensors 'a' and 'b' are required");
    return kind_.find("grouped") != std::string::npos ? grouped() : plain();
  }

 private:
  static Tensor tensor_of(const json& j, const std::string& where) {
    const detail::Fields f(j, where);
    f.only({"shape", "strides", "dtype", "align"});
    Tensor t;
    t.shape = f.at("shape").get<Dims>();
    t.strides = f.at("strides").get<Dims>();
    t.dtype = f.string("dtype");
    const int64_t align = f.integer("align", 16);
    if (t.shape.size() != t.strides.size() || t.shape.size() > size_t(kMaxDims))
      throw InputError(where + ": shape and strides must have one entry per dim (at most 8)");
    // Bounded so that no product of sizes and strides below overflows: a GEMM's dims are < 2^31 anyway.
    int64_t numel = 1;
    for (size_t i = 0; i < t.shape.size(); ++i)
      if (t.shape[i] < 0 || t.shape[i] >= kMaxSize || t.strides[i] <= -kMaxElems || t.strides[i] >= kMaxElems ||
          __builtin_mul_overflow(numel, t.shape[i], &numel) || numel >= kMaxElems)
        throw InputError(where + ": a size or stride is out of range (sizes below 2^31, strides and elements below "
                         "2^40)");
    if (align < 1) throw InputError(where + ": \"align\" must be >= 1");
    t.align = int(std::min<int64_t>(align & -align, 16));
    return t;
  }

  [[noreturn]] void refuse(const std::string& why) const { throw InputError(op_ + ": " + why); }
  void need(bool ok, const std::string& why) const {
    if (!ok) refuse(why);
  }
  bool has(const char* name) const { return t_.count(name) != 0; }
  const Tensor& t(const char* name) const {
    static const Tensor none;
    auto it = t_.find(name);
    return it == t_.end() ? none : it->second;
  }
  std::string quoted_epi() const { return "'" + epi_ + "'"; }

  void copy(const std::string& name, const Dims& shape, const Dims& strides) {
    copies_[name] = json{{"shape", shape}, {"strides", strides}};
  }
  void copy_packed(const std::string& name) { copy(name, t(name.c_str()).shape, packed(t(name.c_str()).shape)); }

  // The chain with a given bias first unless it names one, each tensor's dtype filled in, every tensor it reads
  // given and every given one read. Grouped calls take a bias only.
  Epilogue chain(bool grouped, int64_t n) {
    Epilogue e;
    try {
      e = parse_epilogue(epi_);
    } catch (const Error& err) {
      refuse(err.what());
    }
    if (grouped)
      for (const EpiOp& o : e.ops)
        if (o.kind == EpiOpKind::residual || o.kind == EpiOpKind::row_scale || o.kind == EpiOpKind::col_scale ||
            o.kind == EpiOpKind::bias_row)
          refuse("the epilogue " + quoted_epi() + " has '" + o.key() +
                 "', which reads a tensor the grouped ops do not take (their one epilogue tensor is a bias shared by "
                 "every group): residual, row_scale, col_scale, bias_row are not supported here; apply it in torch "
                 "on the output");
    if (has("bias") && !e.has(EpiOpKind::bias_col) && !e.has(EpiOpKind::bias_row)) {
      EpiOp bias;
      bias.kind = EpiOpKind::bias_col;
      e.ops.insert(e.ops.begin(), bias);
    }
    need(!e.has_glu() || n % 2 == 0,
         "the epilogue " + quoted_epi() + " has a GLU, which needs an even N (got N=" + std::to_string(n) + ")");
    std::vector<std::string> used;
    for (EpiOp& o : e.ops) {
      const char* arg = o.kind == EpiOpKind::bias_col || o.kind == EpiOpKind::bias_row ? "bias"
                        : o.kind == EpiOpKind::row_scale                               ? "row_scale"
                        : o.kind == EpiOpKind::col_scale                               ? "col_scale"
                        : o.kind == EpiOpKind::residual                                ? "residual"
                                                                                       : nullptr;
      if (!arg) continue;
      const std::string name = o.key().substr(0, o.key().find(':'));
      if (!has(arg)) {
        std::string hint;
        if (grouped) hint = kind_ == "grouped_masked" ? " (grouped_mm_masked takes none: drop 'bias' from the chain)"
                                                      : " (pass bias, (N,))";
        refuse("the epilogue " + quoted_epi() + " has '" + name + "' but no " + arg + " tensor was given" + hint);
      }
      used.push_back(arg);
      const Tensor& v = t(arg);
      const auto dt = dtype_of(v.dtype);
      need(out_kind(dt), std::string(arg) + " has dtype " + v.dtype + "; epilogue tensors are bfloat16, float16 or "
           "float32");
      if (o.dtype && *o.dtype != *dt)
        refuse("the epilogue names '" + o.key() + "' but " + arg + " has dtype " + v.dtype + ": make them agree");
      o.dtype = dt;
    }
    for (const auto& [name, v] : t_) {
      const bool epi_arg = name == "bias" || name == "residual" || name == "row_scale" || name == "col_scale";
      if (epi_arg && std::find(used.begin(), used.end(), name) == used.end())
        refuse(name + " was given but the epilogue " + quoted_epi() + " has no op that reads it (add '" + name +
               "' to the chain)");
    }
    return e;
  }

  void check_out(const Dims& shape) const {
    int64_t n = 1;
    for (int64_t d : shape)
      need(!__builtin_mul_overflow(n, d, &n) && n < kMaxElems, "the output " + tup(shape) + " has too many elements");
  }
  // `from`: per output dim, the input dim it is ([name, dim]) or half of (a GLU's N: [name, dim, 2]).
  void out_json(const Dims& shape, const Dims& strides, DType dt, const json& from) {
    check_out(shape);
    res_["out"] = {{"shape", shape}, {"strides", strides}, {"dtype", dtype_name(dt)}, {"from", from}};
  }
  static json dim_of(const char* name, int dim, bool half = false) {
    return half ? json::array({name, dim, 2}) : json::array({name, dim});
  }

  // The Problem checked, and the answer of a call that launches.
  json finish(Problem& p) {
    p.fp8_accum = fp8_accum_;
    p.resolve();
    if (const std::string why = p.check(); !why.empty()) refuse(why);
    res_["empty"] = false;
    res_["problem"] = to_json(p);
    res_["str"] = p.str();
    res_["key"] = p.key();
    res_["scaling"] = scaling_name(p.scaling);
    res_["epilogue"] = p.epilogue.key();
    res_["copies"] = copies_;
    res_["unused"] = unused_;
    return res_;
  }

  json empty() {
    res_["empty"] = true;
    return res_;
  }

  // ---- mm, bmm, linear, scaled_mm, gemm ----

  std::string input_dtype_refusal(const std::string& name, const Tensor& x) const {
    const auto dt = dtype_of(x.dtype);
    std::string hint = dt && *dt == DType::f32 ? "cast it to bfloat16 or float16 (or run under torch.autocast('cuda'))"
                       : fp8(dt)               ? "float8 inputs go through gemmtune.scaled_mm"
                                               : "use bfloat16, float16 or float8 (e4m3fn / e5m2) inputs";
    return name + " has dtype " + x.dtype + ", which " + op_ + " does not take as an input: " + hint;
  }

  json plain() {
    const bool linear = kind_ == "linear", scaled = kind_ == "scaled_mm";
    const std::string na = linear ? "x" : "a", nb = linear ? "weight" : "b";
    need(!has("offs"), "offs belongs to the grouped ops");
    const Tensor &a = t("a"), &b = t("b");
    Mat ma, mb;
    Dims lead;  // linear: x's leading dims
    if (linear) {
      need(!has("out"), "out is not taken in the linear form");
      need(a.dim() >= 1, "x must have at least one dim (..., K)");
      need(b.dim() == 2, "weight must be 2-D (N, K) as nn.Linear's, got " + tup(b.shape));
      need(a.size(-1) == b.size(1), "x is " + tup(a.shape) + " and weight is " + tup(b.shape) + ": K differs (" +
                                        std::to_string(a.size(-1)) + " vs " + std::to_string(b.size(1)) + ")");
      lead.assign(a.shape.begin(), a.shape.end() - 1);
      const auto flat = flatten(a);
      int64_t rows = 1;
      for (int64_t d : lead) rows *= d;
      ma = flat ? *flat : Mat{1, rows, a.size(-1), 0, a.size(-1), 1};
      if (!flat) copy_packed("a");
      mb = Mat{1, b.size(1), b.size(0), 0, b.stride(1), b.stride(0)};
    } else {
      const int lo = kind_ == "bmm" ? 3 : 2, hi = kind_ == "bmm" || kind_ == "gemm" ? 3 : 2;
      const std::string dims = kind_ == "bmm" ? "3-D" : kind_ == "gemm" ? "2-D or 3-D" : "2-D";
      need(a.dim() >= lo && a.dim() <= hi && b.dim() >= lo && b.dim() <= hi,
           "a and b must be " + dims + ", got " + tup(a.shape) + " and " + tup(b.shape));
      ma = mat_of(a), mb = mat_of(b);
      need(ma.cols == mb.rows, "a is " + tup(a.shape) + " and b is " + tup(b.shape) + ": the inner dims (K) differ (" +
                                   std::to_string(ma.cols) + " vs " + std::to_string(mb.rows) + ")");
      if (kind_ == "bmm")
        need(ma.batch == mb.batch, "batch sizes differ: a " + tup(a.shape) + ", b " + tup(b.shape) +
                                       " (expand the shared one: a stride-0 batch is read without a copy)");
      need(ma.batch == mb.batch || ma.batch == 1 || mb.batch == 1,
           "batch sizes differ (a " + std::to_string(ma.batch) + ", b " + std::to_string(mb.batch) +
               ") and neither is 1");
    }
    const auto ta = dtype_of(a.dtype), tb = dtype_of(b.dtype);
    const bool any_fp8 = fp8(ta) || fp8(tb);
    if (scaled) {
      need(fp8(ta) && fp8(tb), "a and b must be float8 (e4m3fn / e5m2), got " + a.dtype + " and " + b.dtype);
    } else {
      const bool fp8_ok = kind_ == "gemm";
      need(half(ta) || (fp8_ok && fp8(ta)), input_dtype_refusal(na, a));
      need(half(tb) || (fp8_ok && fp8(tb)), input_dtype_refusal(nb, b));
    }
    const int64_t M = ma.rows, K = ma.cols, N = mb.cols, batch = std::max(ma.batch, mb.batch);
    const bool batched = a.dim() == 3 || (!linear && b.dim() == 3);
    Epilogue e = chain(false, N);
    const int64_t n_out = e.has_glu() ? N / 2 : N;

    // D's dtype and shape.
    std::optional<DType> td;
    if (has("out")) {
      if (out_dtype_)
        need(dtype_of(*out_dtype_) == dtype_of(t("out").dtype),
             "out has dtype " + t("out").dtype + " but out_dtype is " + *out_dtype_);
      td = dtype_of(t("out").dtype);
    } else if (out_dtype_) {
      td = dtype_of(*out_dtype_);
    } else {
      td = scaled ? ta : any_fp8 ? DType::bf16 : ta;
    }
    const std::string td_name = has("out") ? t("out").dtype : out_dtype_.value_or(a.dtype);
    need(out_kind(td) || (td && *td == DType::e4m3),
         "output dtype " + td_name + " is not one gemmtune writes (bfloat16, float16, float32, float8_e4m3fn)");
    Dims out_shape = linear ? lead : batched ? Dims{batch, M} : Dims{M};
    out_shape.push_back(n_out);
    json from = json::array();
    if (linear) {
      for (int i = 0; i + 1 < a.dim(); ++i) from.push_back(dim_of("a", i));
    } else {
      if (batched) from.push_back(a.dim() == 3 && a.size(0) == batch ? dim_of("a", 0) : dim_of("b", 0));
      from.push_back(dim_of("a", a.dim() - 2));
    }
    from.push_back(linear ? dim_of("b", 0, e.has_glu()) : dim_of("b", b.dim() - 1, e.has_glu()));
    if (has("out")) need(t("out").shape == out_shape, "out has shape " + tup(t("out").shape) + ", the result is " +
                                                          tup(out_shape));
    if (linear && has("residual"))
      need(t("residual").shape == out_shape, "residual has shape " + tup(t("residual").shape) +
                                                 ", it must have the output's shape " + tup(out_shape));
    check_out(out_shape);
    Dims out_strides = packed(out_shape);
    out_json(out_shape, out_strides, *td, from);
    if (M == 0 || N == 0 || batch == 0) return empty();
    need(K > 0, "K is 0 (" + na + " is " + tup(a.shape) + ", " + nb + " is " + tup(b.shape) +
                    "); gemmtune needs K >= 1");

    Problem p;
    p.m = M, p.n = N, p.k = K, p.batch = batch;
    bool cp;
    std::tie(p.a, cp) = operand_of(ma, copies_.contains("a") ? 16 : a.align, *ta, batch);
    if (cp && !copies_.contains("a")) copy_packed("a");
    std::tie(p.b, cp) = operand_of(mb, b.align, *tb, batch);
    if (cp) copy_packed("b");
    // D: the given out when it is a usable matrix, else a packed row-major tensor (copied into out after the run).
    bool direct = false;
    if (has("out")) {
      const auto [od, ocp] = operand_of(mat_of(t("out")), t("out").align, *td, batch);
      direct = !ocp && (batch == 1 || od.batch_stride != 0);
      if (direct) p.d = od, out_strides = t("out").strides, out_json(out_shape, out_strides, *td, from);
    }
    res_["out_direct"] = direct;
    if (!direct) {
      Mat pd{batch, M, n_out, M * n_out, n_out, 1};
      p.d = Operand{*td, Layout::row, M > 1 ? n_out : layout_of(pd, int64_t(dtype_size(*td)), batch)->second,
                    batch > 1 ? M * n_out : 0, 16};
    }
    // C: read only when beta != 0 (as torch.addmm).
    p.beta = float(beta_), p.alpha = float(alpha_);
    if (beta_ != 0.0) {
      need(has("c"), "beta=" + json(beta_).dump() + " needs c (the matrix added as beta * c)");
      need(!e.has_glu(), "a GLU epilogue needs beta == 0 (its output has N/2 columns)");
      const Tensor& c = t("c");
      need(c.dim() == 2 || c.dim() == 3, "c must be 2-D (rows, cols) or 3-D (batch, rows, cols), got shape " +
                                             tup(c.shape));
      need(c.size(-2) == M && c.size(-1) == N && (c.dim() == 2 || c.size(0) == 1 || c.size(0) == batch),
           "c has shape " + tup(c.shape) + ", it must be (" + std::to_string(M) + ", " + std::to_string(N) +
               ") or (batch, " + std::to_string(M) + ", " + std::to_string(N) + ")");
      const auto tc = dtype_of(c.dtype);
      need(out_kind(tc), "c has dtype " + c.dtype + ", which gemmtune does not take as C: use bfloat16, float16 or "
           "float32");
      std::tie(p.c, cp) = operand_of(mat_of(c), c.align, *tc, batch);
      if (cp) copy_packed("c");
    } else {
      p.c = Operand{*td, Layout::row, p.d.ld, p.d.batch_stride, 16};
    }
    // The residual is shaped like D, with D's strides: one laid out otherwise is copied into D's layout.
    if (has("residual")) {
      const Tensor& r = t("residual");
      need(r.shape == out_shape, "residual has shape " + tup(r.shape) + ", it must have the output's shape " +
                                     tup(out_shape));
      if (!r.strided_as(out_strides) || r.align < 16) copy("residual", out_shape, out_strides);
    }
    // Vectors: one non-1 dim at most, contiguous, 16-byte aligned.
    for (const char* name : {"bias", "row_scale", "col_scale"}) {
      if (!has(name)) continue;
      const Tensor& v = t(name);
      need(std::count_if(v.shape.begin(), v.shape.end(), [](int64_t s) { return s != 1; }) <= 1,
           std::string(name) + " must be a vector, got shape " + tup(v.shape));
      if (!v.contiguous() || v.align < 16) copy(name, Dims{v.numel()}, Dims{1});
    }
    p.epilogue = e;
    p.amax = has("amax");
    if (any_fp8) {
      p.scaling = scaled ? torch_scales(M, N, K) : flat_scales(M, N, K, fp8(ta));
      if (scaled && scaling_)
        need(parse_scaling(*scaling_) == p.scaling, "scaling '" + *scaling_ + "' was asked for, but the scales' "
             "shapes say " + std::string(scaling_name(p.scaling)));
    } else {
      need((!scaling_ || *scaling_ == "none") && !has("scale_a") && !has("scale_b"),
           "scales and scaling apply to float8 inputs (a is " + a.dtype + ", b is " + b.dtype + ")");
    }
    for (const char* name : {"scale_d", "amax"}) {
      if (!has(name) || (name == std::string("scale_d") && scaled && *td != DType::e4m3)) continue;
      const Tensor& s = t(name);
      need(dtype_of(s.dtype) == DType::f32 && s.numel() == 1,
           std::string(name) + " must be a float32 tensor of one element (got " + s.dtype + ", " +
               std::to_string(s.numel()) + " elements)");
    }
    // As torch._scaled_mm: scale_result scales an fp8 result only.
    if (scaled && has("scale_d") && *td != DType::e4m3) unused_.push_back("scale_d");
    json out = finish(p);
    for (auto [name, k] : {std::pair{"bias", p.epilogue.has(EpiOpKind::bias_row) ? EpiOpKind::bias_row
                                                                                 : EpiOpKind::bias_col},
                           {"row_scale", EpiOpKind::row_scale}, {"col_scale", EpiOpKind::col_scale}})
      if (has(name)) {
        const std::string why = p.check_epilogue_vector(k, t(name).numel());
        need(why.empty(), why);
      }
    if (any_fp8)
      for (auto [name, which] : {std::pair{"scale_a", Which::A}, {"scale_b", Which::B}}) {
        const int64_t want = p.scale_len(which);
        const std::string sc(scaling_name(p.scaling));
        if (!has(name))
          need(which == Which::A && !fp8(ta), std::string(name) + " is required with " + sc + " scaling (" +
                                             std::to_string(want) + " float32 values)");
        else
          need(t(name).numel() == want, std::string(name) + " has " + std::to_string(t(name).numel()) + " elements, " +
                                            sc + " scaling needs " + std::to_string(want));
      }
    return out;
  }

  void need_f32_scales(const char* word) const {
    for (const char* name : {"scale_a", "scale_b"})
      if (has(name))
        need(dtype_of(t(name).dtype) == DType::f32,
             std::string(name) + " has dtype " + t(name).dtype + "; " + word + " float32 scales");
  }

  // fp8 scales as gemmtune's flat vectors: the scaling as given, or the one their lengths say.
  Scaling flat_scales(int64_t M, int64_t N, int64_t K, bool a_fp8) {
    Scaling sc;
    if (scaling_) {
      const auto s = parse_scaling(*scaling_);
      need(s.has_value(), "unknown scaling '" + *scaling_ + "' (none, tensor, row, block)");
      sc = *s;
    } else {
      need(has("scale_b"), "float8 inputs need scale_b (and scale_a for a float8 a)");
      const int64_t na = has("scale_a") ? t("scale_a").numel() : 1, nb = t("scale_b").numel();
      const int64_t kb = (K + kScaleBlock - 1) / kScaleBlock, nbk = (N + kScaleBlock - 1) / kScaleBlock;
      if (na == 1 && nb == 1)
        sc = Scaling::tensor;
      else if ((na == M || !a_fp8) && nb == N)
        sc = Scaling::row;
      else if (na == M * kb && nb == nbk * kb)
        sc = Scaling::block;
      else
        refuse("scale_a has " + std::to_string(na) + " and scale_b " + std::to_string(nb) +
               " elements, which is no scaling gemmtune knows for M=" + std::to_string(M) + ", N=" + std::to_string(N) +
               ", K=" + std::to_string(K) + ": tensor (1, 1), row (" + std::to_string(M) + ", " + std::to_string(N) +
               ") or block (" + std::to_string(M * kb) + ", " + std::to_string(nbk * kb) + ")");
    }
    need_f32_scales("fp8 scales are");
    for (const char* name : {"scale_a", "scale_b"})
      if (has(name) && (!t(name).contiguous() || t(name).align < 4)) copy(name, Dims{t(name).numel()}, Dims{1});
    return sc;
  }

  // torch._scaled_mm's scales: one element each (tensor), (M, 1) and (1, N) (row), or (M, Kb) and (Kb, Nb) read
  // through their transposes (block: gemmtune reads scale_a[kb * M + m] and scale_b[nb * Kb + kb]).
  Scaling torch_scales(int64_t M, int64_t N, int64_t K) {
    need(has("scale_a") && has("scale_b"), "scale_a and scale_b are required");
    need_f32_scales("gemmtune takes");
    const Tensor &sa = t("scale_a"), &sb = t("scale_b");
    const int64_t kb = (K + kScaleBlock - 1) / kScaleBlock, nb = (N + kScaleBlock - 1) / kScaleBlock;
    if (sa.numel() == 1 && sb.numel() == 1) return Scaling::tensor;
    need(sa.dim() == 2 && sb.dim() == 2, "row-wise and block-wise scales are 2-D, got scale_a " + tup(sa.shape) +
                                             " and scale_b " + tup(sb.shape));
    if (sa.shape == Dims{M, 1} && sb.shape == Dims{1, N}) {
      for (const char* name : {"scale_a", "scale_b"})
        if (!t(name).contiguous() || t(name).align < 4) copy(name, t(name).shape, packed(t(name).shape));
      return Scaling::row;
    }
    if (sa.shape == Dims{M, kb} && sb.shape == Dims{kb, nb}) {
      if (!sa.strided_as({1, M}) || sa.align < 4) copy("scale_a", sa.shape, {1, M});
      if (!sb.strided_as({1, kb}) || sb.align < 4) copy("scale_b", sb.shape, {1, kb});
      return Scaling::block;
    }
    const auto s = [](int64_t x, int64_t y) { return tup({x, y}); };
    refuse("scale_a " + tup(sa.shape) + " with scale_b " + tup(sb.shape) + " is no scaling gemmtune supports for M=" +
           std::to_string(M) + ", N=" + std::to_string(N) + ", K=" + std::to_string(K) +
           ": tensor-wise (one element each), row-wise (" + s(M, 1) + ", " + s(1, N) +
           ") or block-wise 1x128 A with 128x128 B (" + s(M, kb) + ", " + s(kb, nb) + ")");
  }

  // ---- grouped_mm, grouped_mm_masked, scaled_grouped_mm ----

  void check_offs(const std::string& name, int64_t groups) const {
    const Tensor& o = t("offs");
    need(is_int32(o.dtype), name + " has dtype " + o.dtype + "; it must be torch.int32");
    need(o.dim() == 1, name + " must be 1-D (G,), got shape " + tup(o.shape));
    need(o.size(0) == groups, name + " has " + std::to_string(o.size(0)) + " elements but mat_b holds " +
                                  std::to_string(groups) + " groups (one per group)");
    need(o.size(0) <= 1 || o.stride(0) == 1, name + " must be contiguous (stride 1), got stride " +
                                                  std::to_string(o.stride(0)) + ": pass " + name + ".contiguous()");
  }

  json grouped() {
    const Tensor &a = t("a"), &b = t("b");
    const bool masked = kind_ == "grouped_masked", scaled = kind_ == "scaled_grouped";
    need(!has("scale_d"), "scale_result is not supported (as in torch._scaled_grouped_mm): the output is bfloat16, "
         "float16 or float32");
    for (const char* name : {"out", "c", "residual", "row_scale", "col_scale", "amax"})
      need(!has(name), std::string("the grouped ops take no ") + name + " tensor");
    const std::string sa_ = tup(a.shape), sb_ = tup(b.shape);
    // The form: contiguous (2-D a, offs), masked (3-D a, counts) or batched (3-D a, no offs).
    need(a.dim() >= 2 && a.dim() <= 3 && b.dim() >= 2 && b.dim() <= 3,
         "mat_a and mat_b must be 2-D or 3-D, got " + sa_ + " and " + sb_);
    if (masked) need(a.dim() == 3 && b.dim() == 3, "the masked form takes a (G, M_max, K) and b (G, K, N), got " +
                                                       sa_ + " and " + sb_);
    need(b.dim() == 3 || a.dim() == 3,
         "mat_a " + sa_ + " and mat_b " + sb_ + " are both 2-D: that is the K-grouped form (groups over the "
         "contraction dim, the weight gradient dW_g = dY_g^T X_g), which gemmtune does not compute; use "
         "torch._grouped_mm for it");
    need(b.dim() == 3, "mat_a " + sa_ + " is 3-D and mat_b " + sb_ + " is 2-D: that is the N-grouped form (groups "
         "over B's columns), which gemmtune does not compute; use torch._grouped_mm for it");
    const bool contiguous = a.dim() == 2;
    if (contiguous)
      need(has("offs"), "mat_a " + sa_ + " is 2-D and mat_b " + sb_ + " is 3-D: the contiguous form needs offs "
           "(int32 (G,) cumulative row ends)");
    else if (!masked)
      need(!has("offs"), "mat_a " + sa_ + " and mat_b " + sb_ + " are 3-D: a batched GEMM, which takes no offs (pass "
           "2-D mat_a for the contiguous form, or use grouped_mm_masked for per-group counts)");
    const auto ta = dtype_of(a.dtype), tb = dtype_of(b.dtype);
    if (scaled) {
      need(has("scale_a") && has("scale_b"), "give both scale_a and scale_b");
      need(fp8(ta) && fp8(tb), "mat_a and mat_b must be float8 (e4m3fn / e5m2), got " + a.dtype + " and " + b.dtype);
    } else {
      for (auto [name, x, dt] : {std::tuple{"mat_a", &a, ta}, {"mat_b", &b, tb}})
        need(half(dt), std::string(name) + " has dtype " + x->dtype + "; " + op_ +
                           " takes bfloat16 or float16 inputs" +
                           (dt && *dt == DType::f32 ? " (cast it, or run under torch.autocast('cuda'))"
                            : fp8(dt)               ? " (float8 inputs go through scaled_grouped_mm)"
                                                    : ""));
      need(ta == tb, "mat_a is " + a.dtype + " and mat_b is " + b.dtype + ": give them one dtype");
    }
    const int64_t groups = b.size(0), k = a.size(-1), n = b.size(-1);
    need(k == b.size(-2), "mat_a is " + sa_ + " and mat_b is " + sb_ + ": the contraction dims (K) differ (" +
                              std::to_string(k) + " vs " + std::to_string(b.size(-2)) + ")");
    int64_t m;
    if (contiguous) {
      m = a.size(0);
      check_offs("offs", groups);
    } else {
      need(a.size(0) == groups, "mat_a holds " + std::to_string(a.size(0)) + " groups and mat_b " +
                                    std::to_string(groups) + ": they must match");
      m = a.size(1);
      if (masked) check_offs("counts", groups);
    }
    const auto td = out_dtype_ ? dtype_of(*out_dtype_) : scaled ? DType::bf16 : ta;
    need(out_kind(td), "out_dtype " + out_dtype_.value_or("") + " is not one gemmtune writes here (bfloat16, float16, "
         "float32)");
    Epilogue e = chain(true, n);
    const int64_t n_out = e.has_glu() ? n / 2 : n;
    if (has("bias")) {
      const int glu = e.glu_index();
      const auto at = std::find_if(e.ops.begin(), e.ops.end(), [](const EpiOp& o) {
        return o.kind == EpiOpKind::bias_col;
      });
      const bool after = glu >= 0 && at - e.ops.begin() > glu;
      const int64_t n_bias = after ? n_out : n;
      need(t("bias").dim() == 1 && t("bias").size(0) == n_bias,
           "bias has shape " + tup(t("bias").shape) + "; gemmtune adds one bias of " + std::to_string(n_bias) +
               " values" + (after ? " (the bias follows the GLU: N/2 values)" : "") +
               " shared by every group (per-group biases are not supported: add them in torch)");
      if (t("bias").stride(0) != 1 || t("bias").align < 16) copy_packed("bias");
    }
    const Scaling sc = scaled ? grouped_scales(contiguous, m, n, k, groups) : Scaling::none;
    // The output as torch._grouped_mm allocates it: row-major, its pitch padded to 16 bytes.
    const int64_t q = std::max<int64_t>(1, 16 / int64_t(dtype_size(*td)));
    const int64_t ld = (n_out + q - 1) / q * q;
    const json n_from = dim_of("b", 2, e.has_glu());
    if (contiguous)
      out_json({m, n_out}, {ld, 1}, *td, json::array({dim_of("a", 0), n_from}));
    else
      out_json({groups, m, n_out}, {m * ld, ld, 1}, *td, json::array({dim_of("b", 0), dim_of("a", 1), n_from}));
    if (m == 0 || n == 0 || groups == 0) return empty();
    need(k >= 1, "K is 0 (mat_a " + sa_ + ", mat_b " + sb_ + "); gemmtune needs K >= 1");

    Problem p;
    const int64_t batch = contiguous ? 1 : groups;
    p.m = m, p.n = n, p.k = k, p.batch = batch;
    bool cp;
    std::tie(p.a, cp) = operand_of(mat_of(a), a.align, *ta, batch);
    if (cp) copy_packed("a");
    // B holds G matrices even when A holds one: its batch stride is read from the tensor (0 for an expanded one).
    std::tie(p.b, cp) = operand_of(mat_of(b), b.align, *tb, groups);
    if (cp) copy_packed("b");
    p.d = Operand{*td, Layout::row, ld, batch > 1 ? m * ld : 0, 16};
    p.c = p.d;
    p.epilogue = e;
    p.scaling = sc;
    p.grouping = contiguous ? Grouping::contiguous : masked ? Grouping::masked : Grouping::none;
    p.groups = p.grouping == Grouping::none ? 1 : groups;
    json out = finish(p);
    if (sc != Scaling::none)
      for (auto [name, which] : {std::pair{"scale_a", Which::A}, {"scale_b", Which::B}})
        need(t(name).numel() == p.scale_len(which),
             std::string(name) + " has " + std::to_string(t(name).numel()) + " elements, " +
                 std::string(scaling_name(sc)) + " scaling of " + p.str() + " needs " +
                 std::to_string(p.scale_len(which)));
    return out;
  }

  // torch._scaled_grouped_mm's scales: row-wise, or block-wise 1x128 A and 128x128 B per group, read in gemmtune's
  // order (A's (.., M, Kb) through its transpose, each group's B (Kb, Nb) likewise).
  Scaling grouped_scales(bool contiguous, int64_t m, int64_t n, int64_t k, int64_t groups) {
    need_f32_scales("gemmtune takes");
    const Tensor &sa = t("scale_a"), &sb = t("scale_b");
    const int64_t kb = (k + kScaleBlock - 1) / kScaleBlock, nb = (n + kScaleBlock - 1) / kScaleBlock;
    const Dims row_a = contiguous ? Dims{m} : Dims{groups, m}, row_b{groups, n};
    const Dims block_a = contiguous ? Dims{m, kb} : Dims{groups, m, kb}, block_b{groups, kb, nb};
    if (sa.shape == row_a && sb.shape == row_b) {
      for (const char* name : {"scale_a", "scale_b"})
        if (!t(name).contiguous() || t(name).align < 4) copy_packed(name);
      return Scaling::row;
    }
    if (sa.shape == block_a && sb.shape == block_b) {
      const Dims want_a = contiguous ? Dims{1, m} : Dims{m * kb, 1, m};
      const Dims want_b{kb * nb, 1, kb};
      if (!sa.strided_as(want_a) || sa.align < 4) copy("scale_a", sa.shape, want_a);
      if (!sb.strided_as(want_b) || sb.align < 4) copy("scale_b", sb.shape, want_b);
      return Scaling::block;
    }
    refuse("scale_a " + tup(sa.shape) + " with scale_b " + tup(sb.shape) +
           " is no scaling gemmtune takes here (M=" + std::to_string(m) + ", N=" + std::to_string(n) +
           ", K=" + std::to_string(k) + ", G=" + std::to_string(groups) + "): row-wise (scale_a " + tup(row_a) +
           ", scale_b " + tup(row_b) + ") or block-wise 1x128 A with 128x128 B per group (scale_a " + tup(block_a) +
           ", scale_b " + tup(block_b) + ")");
  }

  std::string op_, kind_, epi_;
  double alpha_ = 1.0, beta_ = 0.0;
  std::optional<std::string> scaling_, out_dtype_;
  Fp8Accum fp8_accum_ = Fp8Accum::exact;
  std::map<std::string, Tensor> t_;
  json res_ = {{"out_direct", false}}, copies_ = json::object(), unused_ = json::array();
};

}  // namespace

json plan_call(const json& call) { return Planner(call).plan(); }

}  // namespace gemmtune
