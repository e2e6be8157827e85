#pragma once
// Benchmark suites (bench/suites/*.json), read like a cache file (src/core/input.h): bounded in size and nesting.
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "cli_problem.h"
#include "core/input.h"
#include "core/text.h"
#include "tuner/serialize.h"

namespace gemmtune::cli {

struct SuiteShape {
  std::string name;
  Problem problem;  // resolved and checked
};

// One shape of a suite as problem JSON, the schema of the C ABI and the caches (tuner/serialize.h, which reads it):
// "name" beside the problem's keys, and the keys a shape leaves out taken from `base`. The shorter keys of hand-written
// suites are mapped here, the one place that reads them: an operand as "dtype:layout" ("A": "bf16:row"), "lda" ..
// "ldd", "align_a" .. "align_d", "masked_m" (M_max of a masked grouped problem) and "groups" without "grouping"
// (contiguous, or masked with "masked_m"). Throws UsageError or detail::InputError naming `where`.
inline nlohmann::json shape_problem_json(const nlohmann::json& s, nlohmann::json j, const std::string& where) {
  const detail::Fields e(s, where);
  e.only({"name", "m", "n", "k", "batch", "A", "B", "C", "D", "accum", "alpha", "beta", "epilogue", "scaling",
          "fp8_accum", "amax", "grouping", "groups", "masked_m", "lda", "ldb", "ldc", "ldd", "align_a", "align_b", "align_c",
          "align_d"});
  auto bad = [&](const std::string& why) { return UsageError(fmt::format("{}: {}", where, why)); };
  for (const char* x : {"A", "B", "D", "C"}) {
    if (!e.has(x)) {
      if (x[0] == 'C') j["C"]["dtype"] = j["D"]["dtype"], j["C"]["layout"] = j["D"]["layout"];  // C as D
      continue;
    }
    if (!e.at(x).is_string()) {
      j[x].update(e.at(x));  // the problem JSON's operand object, checked by problem_from_json
      continue;
    }
    const OperandSpec o = parse_operand(fmt::format("{}: \"{}\"", where, x), e.string(x),
                                        *parse_layout(j[x]["layout"].get<std::string>()));
    j[x]["dtype"] = dtype_name(o.dtype), j[x]["layout"] = layout_name(o.layout);
  }
  for (const Which w : kOperands) {
    const std::string lw(which_lower(w)), x(which_name(w));
    if (e.has(("ld" + lw).c_str())) j[x]["ld"] = e.at(("ld" + lw).c_str());
    if (e.has(("align_" + lw).c_str())) j[x]["align"] = e.at(("align_" + lw).c_str());
  }
  for (const char* key : {"m", "n", "k", "batch", "accum", "alpha", "beta", "epilogue", "scaling", "fp8_accum", "amax",
                          "grouping", "groups"})
    if (e.has(key)) j[key] = e.at(key);
  if (e.has("masked_m")) {
    if (e.has("m"))
      throw bad("\"m\" and \"masked_m\" together: a masked grouped GEMM gives its rows per group with \"masked_m\" "
                "(M_max), a contiguous one its total rows with \"m\"");
    if (!e.has("groups")) throw bad("\"masked_m\" needs \"groups\" (the number of matrices of M_max rows)");
    j["m"] = e.at("masked_m");
  }
  if (e.has("groups") && !e.has("grouping")) j["grouping"] = e.has("masked_m") ? "masked" : "contiguous";
  return j;
}

// {"name": ..., "dtype": "bf16", "A": "bf16:row", "B": "bf16:col", "D": "bf16:row", "shapes": [<shape>, ...]}: each
// shape a problem (shape_problem_json), the suite's dtypes its default operands. Every field typed and an unknown
// key an error, since a typo such as "ldb " would otherwise silently mean the default. `path` names the suite in
// messages and gives its default name. Throws UsageError or detail::InputError.
inline std::pair<std::string, std::vector<SuiteShape>> parse_suite(std::string_view text, const std::string& path) {
  const std::string what = fmt::format("--suite '{}'", detail::printable(path));
  const nlohmann::json j = detail::parse_json(text, what);
  const detail::Fields top(j, what);
  top.only({"name", "description", "dtype", "A", "B", "D", "shapes"});
  if (!top.has("shapes") || !top.at("shapes").is_array())
    throw UsageError(what + ": expected an object with a \"shapes\" array");
  std::string suite_name = top.string("name", std::filesystem::path(path).stem().string());
  top.string("description", "");
  const std::string dt = top.string("dtype", "bf16");
  const OperandSpec a = parse_operand(what + " \"A\"", top.string("A", dt + ":row"), Layout::row);
  const OperandSpec b = parse_operand(what + " \"B\"", top.string("B", dt + ":col"), Layout::col);
  const OperandSpec d = parse_operand(what + " \"D\"", top.string("D", dt + ":row"), Layout::row);
  Problem defaults = Problem::make(1, 1, 1, a.dtype, d.dtype, a.layout, b.layout);
  defaults.b.dtype = b.dtype;
  defaults.d.layout = d.layout;
  nlohmann::json base = to_json(defaults);
  for (const char* key : {"m", "n", "k"}) base.erase(key);  // every shape gives its own
  for (const char* x : {"A", "B", "C", "D"}) base[x]["ld"] = 0, base[x]["batch_stride"] = -1;  // packed
  std::vector<SuiteShape> shapes;
  size_t i = 0;
  for (const nlohmann::json& s : top.at("shapes")) {
    std::string where = fmt::format("{} shape #{}", what, i++);
    SuiteShape sh;
    // The name as text that is safe to print (escape sequences and NULs of a hostile suite become '?'), since
    // every message about the shape starts with it.
    if (s.is_object() && s.contains("name") && s["name"].is_string() && !s["name"].get<std::string>().empty())
      where = fmt::format("{} shape '{}'", what, brief(detail::printable(s["name"].get<std::string>())));
    sh.name = detail::Fields(s, where).string("name", "");
    const nlohmann::json pj = shape_problem_json(s, base, where);
    try {
      sh.problem = problem_from_json(pj);
    } catch (const Error& e) {
      std::string why = user_message(e.what());
      for (const std::string pre : {"problem JSON: ", "problem JSON "})
        if (why.starts_with(pre)) why = why.substr(pre.size());
      throw UsageError(fmt::format("{}: {}", where, why));
    }
    // The problem's own rules answer, before any GPU time is spent.
    if (const std::string why = sh.problem.resolve().check(); !why.empty())
      throw UsageError(fmt::format("{}: {}", where, user_message(why)));
    const Problem& p = sh.problem;
    if (sh.name.empty())
      sh.name = p.grouping == Grouping::masked ? fmt::format("{}x{}x{}_g{}_masked", p.m, p.n, p.k, p.groups)
                : p.grouped()                  ? fmt::format("{}x{}x{}_g{}", p.m, p.n, p.k, p.groups)
                                               : fmt::format("{}x{}x{}", p.m, p.n, p.k);
    shapes.push_back(std::move(sh));
  }
  if (shapes.empty()) throw UsageError(what + ": no shapes");
  return {suite_name, shapes};
}

inline std::pair<std::string, std::vector<SuiteShape>> load_suite(const std::string& path) {
  const std::string what = fmt::format("--suite '{}'", detail::printable(path));
  // Follow::user: a suite the user names may be a symlink (a shared suites directory), unlike a cache entry.
  const detail::FileRead f = detail::read_regular_file(path, std::size_t(64) << 20, detail::Follow::user);
  if (f.status == detail::FileRead::missing) throw UsageError(what + ": cannot open (no such file)");
  if (f.status == detail::FileRead::rejected) throw UsageError(what + ": cannot open (" + f.why + ")");
  return parse_suite(f.data, path);
}

}  // namespace gemmtune::cli
