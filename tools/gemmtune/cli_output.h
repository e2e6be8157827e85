#pragma once
// Tables, JSON records and version/clock information printed by the CLI.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backends/cublaslt/cublaslt_backend.h"
#include "core/env.h"
#include "cli_problem.h"
#include "gemmtune/gemm.h"
#include "jit/jit.h"
#include "tuner/serialize.h"

namespace gemmtune::cli {

using nlohmann::json;

// A plain aligned text table: columns padded to their widest cell; right-aligned when `right[i]`.
struct Table {
  std::vector<std::string> header;
  std::vector<bool> right;
  std::vector<std::vector<std::string>> rows;

  void print(std::FILE* f) const {
    std::vector<size_t> w(header.size(), 0);
    for (size_t i = 0; i < header.size(); ++i) w[i] = header[i].size();
    for (const auto& r : rows)
      for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
    auto line = [&](const std::vector<std::string>& r) {
      std::string s;
      for (size_t i = 0; i < header.size(); ++i) {
        const std::string cell = i < r.size() ? r[i] : "";
        bool last = i + 1 == header.size();
        if (i < right.size() && right[i])
          s += fmt::format("{:>{}}", cell, w[i]);
        else
          s += last ? cell : fmt::format("{:<{}}", cell, w[i]);
        if (!last) s += "  ";
      }
      while (!s.empty() && s.back() == ' ') s.pop_back();
      std::fprintf(f, "%s\n", s.c_str());
    };
    line(header);
    for (const auto& r : rows) line(r);
  }
};

inline std::string fmt_num(double v, int prec, bool valid = true) {
  if (!valid || !std::isfinite(v)) return "-";
  return fmt::format("{:.{}f}", v, prec);
}
inline std::string fmt_err(double e) { return e < 0 ? "-" : fmt::format("{:.1e}", e); }
inline std::string fmt_int(int v) { return v < 0 ? "-" : std::to_string(v); }

// The problem JSON of the C ABI and the caches, with its CLI form and cache key for readers of the report.
inline json problem_json(const Problem& p) {
  json j = to_json(p);
  j["str"] = p.str();
  j["key"] = p.key();
  return j;
}

// Results sorted for display: ok by median time, then everything else in the order tried.
inline std::vector<CandidateResult> sorted_results(std::vector<CandidateResult> v) {
  std::stable_sort(v.begin(), v.end(), [](const CandidateResult& a, const CandidateResult& b) {
    bool ao = a.status == Status::ok, bo = b.status == Status::ok;
    if (ao != bo) return ao;
    return ao && a.us_median < b.us_median;
  });
  return v;
}

inline Table results_table(const std::vector<CandidateResult>& results) {
  Table t{{"", "backend", "config", "compile ms", "us", "TFLOP/s", "GB/s", "error", "status"},
          {false, false, false, true, true, true, true, true, false},
          {}};
  for (const auto& r : sorted_results(results)) {
    bool ok = r.status == Status::ok;
    std::string status = to_string(r.status);
    if (!r.reason.empty()) status += ": " + first_line(r.reason);
    std::string cms = r.compile_ms > 0 ? fmt_num(r.compile_ms, 1) + (r.compile_cache_hit ? " (hit)" : "") : "-";
    t.rows.push_back({r.winner ? "*" : "", r.candidate.backend, r.candidate.config, cms,
                      fmt_num(r.us_median, 2, ok), fmt_num(r.tflops, 1, ok), fmt_num(r.gbps, 0, ok), fmt_err(r.error),
                      status});
  }
  return t;
}

// cuBLASLt's version as "major.minor.patch" ("" when it cannot be read); needs no GPU.
inline std::string lt_version() {
  try {
    return gemmtune::cublaslt_version();
  } catch (...) {
    return "";
  }
}

inline std::string nvrtc_version_or_empty() {
  try {
    return jit::nvrtc_version();
  } catch (...) {
    return "";
  }
}

// SM/memory clocks, power and temperature from nvidia-smi (null when it is not there): BENCHMARKING.md asks for
// clocks read before and after a benchmark.
inline json read_clocks() {
  std::string dev;
  try {
    dev = std::to_string(env::integer("GEMMTUNE_DEVICE", 0, 0, 1023));
  } catch (const Error&) {
    return nullptr;  // the tune said why already
  }
  std::string cmd = "nvidia-smi -i " + dev +
                    " --query-gpu=clocks.sm,clocks.mem,clocks.max.sm,power.draw,temperature.gpu "
                    "--format=csv,noheader,nounits 2>/dev/null";
  std::FILE* f = popen(cmd.c_str(), "r");
  if (!f) return nullptr;
  char buf[512];
  std::string out;
  while (std::fgets(buf, sizeof buf, f)) out += buf;
  if (pclose(f) != 0 || out.empty()) return nullptr;
  auto v = split(first_line(out), ',');
  if (v.size() < 5) return nullptr;
  return json{{"sm_mhz", v[0]}, {"mem_mhz", v[1]}, {"max_sm_mhz", v[2]}, {"power_w", v[3]}, {"temp_c", v[4]}};
}

inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Error("cannot open '" + path + "' for writing");
  f << text;
  if (!f) throw Error("cannot write '" + path + "'");
}

}  // namespace gemmtune::cli
