#include "tuner/serialize.h"

#include <cmath>
#include <limits>

#include "core/input.h"
#include "gemmtune/errors.h"

namespace gemmtune {

namespace {
nlohmann::json op_json(const Operand& o) {
  return {{"dtype", dtype_name(o.dtype)}, {"layout", layout_name(o.layout)}, {"ld", o.ld},
          {"batch_stride", o.batch_stride}, {"align", o.align}};
}
Operand op_from(const nlohmann::json& j, const std::string& where) {
  const detail::Fields f(j, where);
  Operand o;
  auto t = parse_dtype(f.string("dtype"));
  auto l = parse_layout(f.string("layout"));
  if (!t || !l) throw detail::InputError(where + ": bad dtype or layout " + detail::json_brief(j));
  o.dtype = *t, o.layout = *l;
  o.ld = f.integer("ld");
  o.batch_stride = f.integer("batch_stride");
  // Range-checked before the narrowing to int: 2^32 + 16 must not become 16.
  const int64_t align = f.integer("align", 16);
  if (align != 2 && align != 4 && align != 8 && align != 16)
    throw detail::InputError(where + ": \"align\" must be 2, 4, 8 or 16 (got " + std::to_string(align) + ")");
  o.align = int(align);
  return o;
}
}  // namespace

nlohmann::json to_json(const Problem& p) {
  nlohmann::json j = {{"m", p.m}, {"n", p.n}, {"k", p.k}, {"batch", p.batch}, {"A", op_json(p.a)},
                      {"B", op_json(p.b)}, {"C", op_json(p.c)}, {"D", op_json(p.d)}, {"accum", dtype_name(p.accum)},
                      {"alpha", p.alpha}, {"beta", p.beta}, {"epilogue", p.epilogue.key()},
                      {"scaling", scaling_name(p.scaling)}, {"amax", p.amax},
                      {"grouping", grouping_name(p.grouping)}, {"groups", p.groups}};
  if (p.fp8_product()) j["fp8_accum"] = fp8_accum_name(p.fp8_accum);  // the other problems have one mode
  return j;
}

Problem problem_from_json(const nlohmann::json& j) {
  // Typed field by field (no nlohmann get<int64_t>, which converts 1e300 or 16.5 without a word).
  const detail::Fields f(j, "problem JSON");
  Problem p;
  p.m = f.integer("m");
  p.n = f.integer("n");
  p.k = f.integer("k");
  p.batch = f.integer("batch");
  p.a = op_from(f.at("A"), "problem JSON A");
  p.b = op_from(f.at("B"), "problem JSON B");
  p.c = op_from(f.at("C"), "problem JSON C");
  p.d = op_from(f.at("D"), "problem JSON D");
  auto acc = parse_dtype(f.string("accum"));
  if (!acc) throw detail::InputError("problem JSON: bad \"accum\"");
  p.accum = *acc;
  for (auto [key, dst] : {std::pair{"alpha", &p.alpha}, {"beta", &p.beta}})
    if (const std::string why = detail::to_fp32(f.number(key), *dst); !why.empty())
      throw detail::InputError("problem JSON: \"" + std::string(key) + "\" " + why);
  p.epilogue = parse_epilogue(f.string("epilogue"));
  const std::optional<Scaling> sc = parse_scaling(f.string("scaling", "none"));
  if (!sc) throw detail::InputError("problem JSON: \"scaling\" must be none, tensor, row or block");
  p.scaling = *sc;
  p.amax = f.boolean("amax", false);
  const std::optional<Grouping> gr = parse_grouping(f.string("grouping", "none"));
  if (!gr) throw detail::InputError("problem JSON: bad \"grouping\" (none, contiguous or masked)");
  p.grouping = *gr;
  p.groups = f.integer("groups", 1);
  const std::optional<Fp8Accum> fa = parse_fp8_accum(f.string("fp8_accum", "exact"));
  if (!fa) throw detail::InputError("problem JSON: \"fp8_accum\" must be exact or fast");
  p.fp8_accum = *fa;
  return p;
}

nlohmann::json to_json(const CandidateResult& r) {
  return {{"backend", r.candidate.backend}, {"config", r.candidate.config}, {"candidate", r.candidate.str()},
          {"status", to_string(r.status)},
          {"reason", r.reason}, {"compile_ms", r.compile_ms}, {"compile_cache_hit", r.compile_cache_hit},
          {"registers", r.registers}, {"spill_bytes", r.spill_bytes}, {"smem_bytes", r.smem_bytes},
          {"error", r.error}, {"us_median", r.us_median}, {"us_min", r.us_min}, {"us_max", r.us_max},
          {"timed_iters", r.timed_iters}, {"tflops", r.tflops}, {"gbps", r.gbps}, {"winner", r.winner}};
}

CandidateResult result_from_json(const nlohmann::json& j) {
  CandidateResult r;
  try {
    r.candidate = {j.at("backend").get<std::string>(), j.at("config").get<std::string>()};
    const std::string status = j.at("status").get<std::string>();
    const std::optional<Status> st = status_from_string(status);
    if (!st) throw Error("unknown candidate status '" + status + "' in JSON");
    r.status = *st;
    r.reason = j.value("reason", "");
    r.compile_ms = j.value("compile_ms", 0.0);
    r.compile_cache_hit = j.value("compile_cache_hit", false);
    r.registers = j.value("registers", -1);
    r.spill_bytes = j.value("spill_bytes", -1);
    r.smem_bytes = j.value("smem_bytes", -1);
    r.error = j.value("error", -1.0);
    r.us_median = j.value("us_median", 0.0);
    r.us_min = j.value("us_min", 0.0);
    r.us_max = j.value("us_max", 0.0);
    r.timed_iters = j.value("timed_iters", 0);
    r.tflops = j.value("tflops", 0.0);
    r.gbps = j.value("gbps", 0.0);
    r.winner = j.value("winner", false);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("malformed candidate result JSON: ") + e.what());
  }
  return r;
}

nlohmann::json to_json(const DeviceInfo& d) {
  return {{"name", d.name}, {"arch", d.arch()}, {"sm_count", d.sm_count}, {"l2_bytes", d.l2_bytes},
          {"smem_per_block_optin", d.smem_per_block_optin}, {"global_mem_bytes", d.global_mem_bytes},
          {"driver_version", d.driver_version}, {"real", d.real}};
}

nlohmann::json to_json(const ProgressEvent& e) {
  nlohmann::json j = {{"kind", to_string(e.kind)}, {"line", to_string(e)}};
  if (!e.backend.empty()) j["backend"] = e.backend;
  if (e.result) j["result"] = to_json(*e.result);
  if (e.count || e.total) j["count"] = e.count, j["total"] = e.total;
  if (e.kind == ProgressKind::compile_summary) j["ms"] = e.ms;
  if (e.kind == ProgressKind::evaluating) j["isolated"] = e.isolated;
  if (!e.text.empty()) j["text"] = e.text;
  return j;
}

}  // namespace gemmtune
