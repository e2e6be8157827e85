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

namespace gemmtune::cli {

struct SuiteShape {
  std::string name;
  ProblemArgs args;
};

// {"name": ..., "dtype": "bf16", "shapes": [{"name", "m", "n", "k", "A", "B", "C", "D", "batch", "lda", ...}]}
// A grouped shape has "groups" and either "m" (the total rows: contiguous) or "masked_m" (masked), as on the CLI.
// Every field typed and an unknown key an error, since a typo such as "ldb " would otherwise silently mean the
// default. `path` names the suite in messages and gives its default name. Throws UsageError or detail::InputError.
inline std::pair<std::string, std::vector<SuiteShape>> parse_suite(std::string_view text, const std::string& path) {
  const std::string what = fmt::format("--suite '{}'", detail::printable(path));
  const nlohmann::json j = detail::parse_json(text, what);
  const detail::Fields top(j, what);
  top.only({"name", "description", "dtype", "A", "B", "D", "shapes"});
  if (!top.has("shapes") || !top.at("shapes").is_array())
    throw UsageError(what + ": expected an object with a \"shapes\" array");
  std::string suite_name = top.string("name", std::filesystem::path(path).stem().string());
  top.string("description", "");
  std::string dt = top.string("dtype", "bf16");
  std::string dA = top.string("A", dt + ":row"), dB = top.string("B", dt + ":col"), dD = top.string("D", dt + ":row");
  std::vector<SuiteShape> shapes;
  size_t i = 0;
  for (const nlohmann::json& s : top.at("shapes")) {
    std::string where = fmt::format("{} shape #{}", what, i++);
    SuiteShape sh;
    // The name as text that is safe to print (escape sequences and NULs of a hostile suite become '?'), since
    // every message about the shape starts with it.
    if (s.is_object() && s.contains("name") && s["name"].is_string() && !s["name"].get<std::string>().empty())
      where = fmt::format("{} shape '{}'", what, brief(detail::printable(s["name"].get<std::string>())));
    const detail::Fields e(s, where);
    e.only({"name", "m", "masked_m", "groups", "n", "k", "batch", "A", "B", "C", "D", "lda", "ldb", "ldc", "ldd",
            "align_a", "align_b", "align_c", "align_d", "alpha", "beta", "epilogue", "scaling", "amax"});
    sh.name = e.string("name", "");
    ProblemArgs& a = sh.args;
    a.given_m = e.has("m");
    a.given_masked_m = e.has("masked_m");
    a.given_groups = e.has("groups");
    a.given_batch = e.has("batch");
    a.m = e.integer("m", 0);
    a.masked_m = e.integer("masked_m", 0);
    a.groups = e.integer("groups", 1);
    a.n = e.integer("n");
    a.k = e.integer("k");
    a.batch = e.integer("batch", 1);
    a.A = e.string("A", dA);
    a.B = e.string("B", dB);
    a.D = e.string("D", dD);
    a.C = e.string("C", "");
    a.lda = e.integer("lda", 0);
    a.ldb = e.integer("ldb", 0);
    a.ldc = e.integer("ldc", 0);
    a.ldd = e.integer("ldd", 0);
    a.align[0] = e.integer("align_a", 16);
    a.align[1] = e.integer("align_b", 16);
    a.align[2] = e.integer("align_c", 16);
    a.align[3] = e.integer("align_d", 16);
    for (auto [key, dst, fallback] : {std::tuple{"alpha", &a.alpha, 1.0}, {"beta", &a.beta, 0.0}}) {
      *dst = e.number(key, fallback);
      float f;
      if (const std::string why = detail::to_fp32(*dst, f); !why.empty())
        throw UsageError(fmt::format("{}: \"{}\" {}", where, key, why));
    }
    a.epilogue = e.string("epilogue", "");
    a.scaling = e.string("scaling", "none");
    a.amax = e.boolean("amax", false);
    if (sh.name.empty())
      sh.name = a.given_masked_m ? fmt::format("{}x{}x{}_g{}_masked", a.masked_m, a.n, a.k, a.groups)
                : a.given_groups ? fmt::format("{}x{}x{}_g{}", a.m, a.n, a.k, a.groups)
                                 : fmt::format("{}x{}x{}", a.m, a.n, a.k);
    a.build(where);  // reject a bad suite before any GPU time is spent
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
