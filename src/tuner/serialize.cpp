#include "tuner/serialize.h"

#include "gemmtune/errors.h"

namespace gemmtune {

namespace {
nlohmann::json op_json(const Operand& o) {
  return {{"dtype", dtype_name(o.dtype)}, {"layout", layout_name(o.layout)}, {"ld", o.ld}, {"batch_stride", o.batch_stride}};
}
Operand op_from(const nlohmann::json& j) {
  Operand o;
  auto t = parse_dtype(j.at("dtype").get<std::string>());
  auto l = parse_layout(j.at("layout").get<std::string>());
  if (!t || !l) throw Error("bad operand in JSON: " + j.dump());
  o.dtype = *t, o.layout = *l;
  o.ld = j.at("ld").get<int64_t>();
  o.batch_stride = j.at("batch_stride").get<int64_t>();
  return o;
}
}  // namespace

nlohmann::json to_json(const Problem& p) {
  return {{"m", p.m}, {"n", p.n}, {"k", p.k}, {"batch", p.batch}, {"A", op_json(p.a)}, {"B", op_json(p.b)},
          {"C", op_json(p.c)}, {"D", op_json(p.d)}, {"accum", dtype_name(p.accum)}, {"alpha", p.alpha},
          {"beta", p.beta}, {"epilogue", p.epilogue.key()}};
}

Problem problem_from_json(const nlohmann::json& j) {
  try {
    Problem p;
    p.m = j.at("m").get<int64_t>();
    p.n = j.at("n").get<int64_t>();
    p.k = j.at("k").get<int64_t>();
    p.batch = j.at("batch").get<int64_t>();
    p.a = op_from(j.at("A"));
    p.b = op_from(j.at("B"));
    p.c = op_from(j.at("C"));
    p.d = op_from(j.at("D"));
    auto acc = parse_dtype(j.at("accum").get<std::string>());
    if (!acc) throw Error("bad accum");
    p.accum = *acc;
    p.alpha = j.at("alpha").get<float>();
    p.beta = j.at("beta").get<float>();
    p.epilogue = parse_epilogue(j.at("epilogue").get<std::string>());
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("malformed problem JSON: ") + e.what());
  }
}

nlohmann::json to_json(const CandidateResult& r) {
  return {{"backend", r.candidate.backend}, {"config", r.candidate.config}, {"status", to_string(r.status)},
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
          {"smem_per_block_optin", d.smem_per_block_optin}, {"driver_version", d.driver_version}, {"real", d.real}};
}

}  // namespace gemmtune
