// sm90 config: the canonical line (parse / print), the kernel view of a problem, and the kernel's spec and plan
// (kernels/sm90/sm90_spec.cuh: derived once, read by the kernels too).
#include "backends/sm90/sm90_config.h"

#include "backends/config_fields.h"
#include "core/dtype_code.h"

#include <sstream>

namespace gemmtune::sm90 {
namespace {

int scale_code(Scaling s) {
  switch (s) {
    case Scaling::tensor: return gt_sm90::kScaleTensor;
    case Scaling::row: return gt_sm90::kScaleRow;
    case Scaling::block: return gt_sm90::kScaleBlock;
    default: return gt_sm90::kScaleNone;
  }
}

// Operand `w` of a resolved problem.
OperandDesc desc_of(const ResolvedProblem& p, Which w) {
  const Operand& o = p.operand(w);
  OperandDesc d;
  d.type = kernel_dtype_code(o.dtype);
  d.row_major = o.layout == Layout::row;
  d.ld = o.ld;
  // 0 broadcasts one matrix to every batch: the epilogue's plain loads take it for C, TMA does not for A and B
  // (problem_reason refuses those). B of a contiguous grouped problem holds one matrix per group (count).
  d.batch_stride = p.count(w) == 1 ? 0 : o.batch_stride;
  d.align = o.align;
  d.access = p.access_bytes(w);
  return d;
}

using config::Form;
// The config line's fields, in print order; a knob is one row here plus its member in Config.
const config::Fields<Config>& fields() {
  static const config::Fields<Config> f{
      "sm90",
      {config::dims<&Config::bm, &Config::bn, &Config::bk>("tile", "MxNxK", Form::printed),
       config::integer<&Config::stages>("stages", Form::printed),
       config::dims<&Config::cm, &Config::cn>("cluster", "MxN", Form::printed),
       config::choice<&Config::pingpong>("sched", Form::printed, {{"coop", false}, {"pingpong", true}}),
       config::choice<&Config::raster_n>("raster", Form::printed, {{"m", false}, {"n", true}}),
       config::integer<&Config::group>("group", Form::printed),
       config::choice<&Config::tiles>(
           "tiles", Form::optional,
           {{"static", TileOrder::static_order}, {"dynamic", TileOrder::dynamic}, {"gpc", TileOrder::gpc}}),
       config::choice<&Config::sk>("tail", Form::optional, {{"dp", false}, {"sk", true}}),
       config::choice<&Config::epi_warp>("epi", Form::optional, {{"warpgroup", false}, {"warp", true}}),
       config::choice<&Config::swap>("swap", Form::optional, {{"0", false}, {"1", true}}),
       config::choice<&Config::cp>("load", Form::optional, {{"tma", false}, {"cp", true}}),
       config::choice<&Config::acc>("acc", Form::optional, {{"fast", Accum::fast}, {"promote", Accum::promote}})}};
  return f;
}
}  // namespace

std::string Config::str() const { return fields().str(*this); }
Config Config::parse(const std::string& s) { return fields().parse(s); }

KernelView kernel_view(const ResolvedProblem& p, bool swap) {
  KernelView u;
  u.m = p->m;
  u.n = p->n;
  u.k = p->k;
  u.batch = p->batch;
  u.a = desc_of(p, Which::A);
  u.b = desc_of(p, Which::B);
  u.c = desc_of(p, Which::C);
  u.d = desc_of(p, Which::D);
  u.has_c = p.has_c();
  u.scale = scale_code(p->scaling);
  u.grouped = p->grouping == Grouping::contiguous ? 1 : p->grouping == Grouping::masked ? 2 : 0;
  u.groups = p->groups;
  return orient(u, swap);
}
gt_sm90::Spec spec(const Config& c, const KernelView& v) {
  gt_sm90::Spec s;
  s.bm = c.bm;
  s.bn = c.bn;
  s.stages = c.stages;
  s.cm = c.cm;
  s.cn = c.cn;
  s.a_mn = v.a_mn;
  s.b_mn = v.b_mn;
  s.in = v.a.type;
  s.out = v.d.type;
  s.ct = v.has_c ? v.c.type : 0;
  s.has_c = v.has_c;
  s.pingpong = c.pingpong;
  s.dynamic = c.dynamic();
  s.sk = c.sk;
  s.epi_warp = c.epi_warp;
  s.grouped = v.grouped;
  if (gt::dtype_code_fp8(v.a.type)) {
    if (v.b.type != v.a.type) s.in_b = v.b.type;
    s.scale = v.scale;
    s.promote = c.acc == Accum::promote;
  }
  if (c.cp) {  // cp.async for what TMA cannot load
    s.cp_a = tma_ok(v.a) ? 0 : v.a.access;
    s.cp_b = tma_ok(v.b) ? 0 : v.b.access;
  }
  return s;
}

bool needs_cp(const KernelView& v) { return !tma_ok(v.a) || !tma_ok(v.b); }

std::string load_path([[maybe_unused]] const Problem& p, const KernelView& v) {
  if (!needs_cp(v)) return "A, B: TMA";
  // The user's names: a transposed view loads the user's B as its A.
  auto phrase = [&](const char* nm, const OperandDesc& o) {
    if (tma_ok(o)) return std::string(nm) + ": TMA";
    const int64_t es = elem_size(o.type);
    const int w = o.access;
    std::string why;
    if (o.align < 16)
      why = "align=" + std::to_string(o.align);
    else if ((o.ld * es) % 16 != 0)
      why = std::string("ld") + static_cast<char>(nm[0] - 'A' + 'a') + "=" + std::to_string(o.ld) + " is " +
            std::to_string(o.ld * es) + " bytes";
    else
      why = "batch stride " + std::to_string(o.batch_stride) + " is " + std::to_string(o.batch_stride * es) + " bytes";
    if (w < 4) return std::string(nm) + ": not loadable (" + why + "; pad-and-run)";
    return std::string(nm) + ": cp.async " + std::to_string(w) + "-byte (" + why + ")";
  };
  const OperandDesc& ua = v.transposed ? v.b : v.a;
  const OperandDesc& ub = v.transposed ? v.a : v.b;
  return phrase("A", ua) + "; " + phrase("B", ub);
}

std::string spec_literal(const gt_sm90::Spec& s) {
  auto tf = [](bool x) { return x ? "true" : "false"; };
  std::ostringstream os;
  os << "gt_sm90::Spec{.bm = " << s.bm << ", .bn = " << s.bn << ", .stages = " << s.stages << ", .cm = " << s.cm
     << ", .cn = " << s.cn << ", .a_mn = " << tf(s.a_mn) << ", .b_mn = " << tf(s.b_mn) << ", .in = " << s.in
     << ", .out = " << s.out << ", .ct = " << s.ct << ", .has_c = " << tf(s.has_c) << ", .pingpong = "
     << tf(s.pingpong) << ", .dynamic = " << tf(s.dynamic) << ", .sk = " << tf(s.sk) << ", .epi_warp = "
     << tf(s.epi_warp);
  // load=cp only (both 0, TMA loads, are not printed); either may be 0 beside the other.
  if (s.cp_a > 0 || s.cp_b > 0) os << ", .cp_a = " << s.cp_a << ", .cp_b = " << s.cp_b;
  // fp8 only (the 16-bit defaults are not printed, so 16-bit units keep their text and cache keys)
  if (s.in_b != 0) os << ", .in_b = " << s.in_b;
  if (s.scale != gt_sm90::kScaleNone) os << ", .scale = " << s.scale << ", .promote = " << tf(s.promote);
  if (s.grouped != 0) os << ", .grouped = " << s.grouped;
  os << "}";
  return os.str();
}

gt_sm90::Plan plan(const Config& c, const KernelView& v) { return gt_sm90::derive(spec(c, v)); }

gt_sm90::Plan plan(const Config& c, int out_type, int grouped) { return plan(c, view_of(out_type, grouped)); }

KernelView view_of(int out_type, int grouped) {
  KernelView v;
  v.d.type = out_type;
  v.grouped = grouped;
  return v;
}

}  // namespace gemmtune::sm90
