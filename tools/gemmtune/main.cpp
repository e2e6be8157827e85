// gemmtune: the command-line front end of the tuner (arguments modelled on cutlass_profiler).
//   gemmtune tune    --m 4096 --n 4096 --k 4096 [--A bf16:row --B bf16:col --D bf16:row] [--backends sm90,cublaslt]
//   gemmtune bench   --suite bench/suites/llama3_8b.json [--json FILE] [--csv FILE]
//   gemmtune list    --m ... --n ... --k ... [--groups G | --masked-m M_max --groups G]   (grouped GEMMs)
//   gemmtune compile --m ... --n ... --k ... [--top-k 8] [--json]       (no GPU needed)
//   gemmtune compile --suite bench/suites/llama3_8b.json --backends cutlass   (build nvcc candidates ahead)
//   gemmtune cache   ls | clear | export FILE | import FILE
//   gemmtune version
// Exit status: 0 ok, 1 gemmtune::Error (or nothing worked), 2 bad argument / impossible problem, 3 no GPU.
// See docs/CLI.md.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <tuple>
#include <nlohmann/json.hpp>

#include "backends/backend.h"
#include "cli_output.h"
#include "cli_problem.h"
#include "cli_suite.h"
#include "core/clock.h"
#include "core/input.h"
#include "core/parse_int.h"
#include "core/text.h"
#include "gemmtune/gemm.h"
#include "gemmtune/progress.h"
#include "tuner/pipeline.h"
#include "tuner/result_cache.h"

namespace gemmtune::cli {
namespace {

namespace fs = std::filesystem;

using detail::printable;

// A progress event's line on stderr.
void print_progress(const ProgressEvent& e) { std::fprintf(stderr, "%s\n", printable(to_string(e)).c_str()); }

// "error: <prefix><what>" on stderr: messages quote the user's and files' data (suite names, keys, paths), so they go
// through printable() like every other line made of untrusted text.
// Line by line: a compiler log keeps its lines.
void print_error(const std::string& prefix, const std::string& what) {
  std::string text;
  for (const std::string& line : split_lines(prefix + what)) text += (text.empty() ? "" : "\n") + printable(line);
  std::fprintf(stderr, "error: %s\n", text.c_str());
}


// `--json` with no value (or "-") means stdout; `--json FILE` writes FILE.
struct JsonOut {
  bool given = false;
  std::string path;
  bool to_stdout() const { return given && (path.empty() || path == "-"); }
  void emit(const json& j) const {
    if (!given) return;
    std::string text = j.dump(2) + "\n";
    if (to_stdout())
      std::fwrite(text.data(), 1, text.size(), stdout);
    else
      write_file(path, text);
  }
};

void add_json_option(CLI::App* app, JsonOut& out, const std::string& help) {
  app->add_option("--json", out.path, help)->expected(0, 1);
}

// --top-k and --threads of tune, bench and compile, within the C ABI's bounds.
void check_counts(int top_k, int threads) {
  if (top_k < 0 || top_k > detail::kMaxTopK)
    throw UsageError(fmt::format("--top-k must be in [0, {}] (got {}; 0 = all)", detail::kMaxTopK, top_k));
  if (threads < 0 || threads > detail::kMaxThreads)
    throw UsageError(fmt::format("--threads must be in [0, {}] (got {}; 0 = one per core)", detail::kMaxThreads,
                                 threads));
}

// Options of the tuner, shared by `tune` and `bench`.
struct TuneArgs {
  std::string backends;
  std::vector<std::string> configs;
  int top_k = 8;
  bool no_cache = false, force = false, in_process = false, quiet = false, one_at_a_time = false;
  bool wait_compile = false;
  int threads = 0;
  double min_time_ms = 100;
  int min_iters = 100;
  int warmup = 10;
  double settle_ms = 300;
  double max_candidate_s = 30;
  double tolerance = 1e-2;

  void add_to(CLI::App* app, bool with_config) {
    app->add_option("--backends", backends, "comma-separated backends (default: all), e.g. sm90,cublaslt");
    app->add_option("--top-k", top_k, "candidates per backend after ranking (default 8, 0 = all)")
        ->check(integer_in_range<int>());
    if (with_config)
      app->add_option("--config", configs,
                      "run exactly this candidate: a 'backend:config' line from list/tune; repeat it to time several "
                      "side by side (interleaved)");
    app->add_flag("--no-cache", no_cache, "neither read nor write the result cache");
    app->add_flag("--force", force, "ignore a cached result (the new one is still written)");
    app->add_flag("--in-process", in_process, "verify and time in this process instead of a worker process");
    app->add_option("--threads", threads, "compile threads (default: hardware concurrency)")
        ->check(integer_in_range<int>());
    app->add_flag("-q,--quiet", quiet, "no progress lines on stderr");
    app->add_flag("--wait-compile", wait_compile,
                  "compile the candidates of slow-compile backends (cutlass: nvcc, tens of seconds each) that are not "
                  "built yet, instead of skipping them (build them ahead with `gemmtune compile`)");
    app->add_option("--min-time-ms", min_time_ms, "time each candidate at least this long (default 100)")
        ->group("Timing");
    app->add_option("--min-iters", min_iters, "... and at least this many runs (default 100)")
        ->check(integer_in_range<int>())->group("Timing");
    app->add_option("--warmup", warmup, "warm-up runs before timing (default 10)")
        ->check(integer_in_range<int>())->group("Timing");
    app->add_option("--settle-ms", settle_ms,
                    "run the first candidate this long before timing, so the GPU's clocks settle (default 300, 0 = off)")
        ->group("Timing");
    app->add_option("--max-candidate-s", max_candidate_s, "timeout per candidate (default 30)")->group("Timing");
    app->add_flag("--one-at-a-time", one_at_a_time,
                  "time each candidate on its own right after its verification, instead of all verified candidates "
                  "side by side (interleaved)")
        ->group("Timing");
    app->add_option("--tolerance", tolerance, "max normalized error vs the reference (default 1e-2)")
        ->group("Timing");
  }

  TuneOptions options() const {
    // The bounds of the C ABI's option objects (src/core/input.h): one value, one verdict, whichever way it comes.
    check_counts(top_k, threads);
    if (min_iters <= 0 || min_iters > detail::kMaxIters)
      throw UsageError(fmt::format("--min-iters must be in [1, {}] (got {})", detail::kMaxIters, min_iters));
    if (warmup < 0 || warmup > detail::kMaxIters)
      throw UsageError(fmt::format("--warmup must be in [0, {}] (got {})", detail::kMaxIters, warmup));
    auto time_value = [](const char* name, double v, bool zero_ok) {
      if (!(v > 0 || (zero_ok && v == 0)) || !(v <= detail::kMaxTimeValue))
        throw UsageError(fmt::format("{} must be {} and at most 1e9 (got {})", name, zero_ok ? ">= 0" : "> 0", v));
    };
    time_value("--min-time-ms", min_time_ms, true);
    time_value("--settle-ms", settle_ms, true);
    time_value("--max-candidate-s", max_candidate_s, false);
    time_value("--tolerance", tolerance, false);
    TuneOptions o;
    o.backends = parse_backends(backends);
    o.top_k = top_k;
    for (const std::string& config : configs) {
      o.only.push_back(parse_config_arg(config));
      if (!o.backends.empty() &&
          std::find(o.backends.begin(), o.backends.end(), o.only.back().backend) == o.backends.end())
        throw UsageError(fmt::format("--config '{}' names backend '{}', which --backends leaves out", config,
                                     o.only.back().backend));
    }
    o.use_cache = !no_cache;
    o.force = force;
    o.isolation = in_process ? Isolation::in_process : Isolation::process;
    o.compile_threads = threads;
    o.wait_compile = wait_compile;
    o.min_time_ms = min_time_ms;
    o.min_iters = min_iters;
    o.warmup_iters = warmup;
    o.settle_ms = settle_ms;
    o.max_candidate_s = max_candidate_s;
    o.tolerance = tolerance;
    o.interleave = !one_at_a_time;
    if (!quiet) o.progress = print_progress;
    return o;
  }
};

const CandidateResult* find_result(const std::vector<CandidateResult>& v, const Candidate& c) {
  for (const auto& r : v)
    if (r.candidate == c) return &r;
  return nullptr;
}

// A --config that its backend rejects for this problem is a bad argument: say why before any GPU work.
void check_config(const Problem& p, const Candidate& c, const DeviceInfo& dev) {
  std::string why;
  try {
    why = find_backend(c.backend)->validate(resolve(p), c, dev);
  } catch (const NoGpuError&) {
    return;  // the backend needs the GPU to judge; tuning will say
  } catch (const Error& e) {
    why = e.what();
  }
  if (!why.empty()) throw UsageError(fmt::format("--config '{}': {}", c.str(), user_message(why)));
}

// ---------------------------------------------------------------------------------------------------------------
// tune

int cmd_tune(const ProblemArgs& pa, const TuneArgs& ta, const JsonOut& jo) {
  Problem p = pa.build();
  TuneOptions opts = ta.options();
  for (const Candidate& c : opts.only)
    check_config(p, c, gpu_available() ? current_device() : DeviceInfo::assumed_sm90());
  auto t0 = Clock::now();
  TuneReport rep = Tuner(opts).tune(p);
  double wall = ms_since(t0);

  std::FILE* out = jo.to_stdout() ? stderr : stdout;
  std::fprintf(out, "problem: %s\ndevice:  %s (%s, %d SMs)\n", p.str().c_str(), rep.device.name.c_str(),
               rep.device.arch().c_str(), rep.device.sm_count);
  results_table(rep.results).print(out);
  int ok = 0;
  for (const auto& r : rep.results) ok += r.status == Status::ok;
  std::string win = "none";
  if (rep.winner) {
    win = rep.winner->str();
    if (const CandidateResult* r = find_result(rep.results, *rep.winner); r && r->status == Status::ok)
      win += fmt::format("  {:.2f} us  {:.1f} TFLOP/s  {:.0f} GB/s", r->us_median, r->tflops, r->gbps);
  }
  std::fprintf(out, "winner: %s | cache %s | %d/%zu ok | wall %.0f ms\n", win.c_str(),
               rep.cache_hit ? "hit" : "miss", ok, rep.results.size(), rep.wall_ms > 0 ? rep.wall_ms : wall);
  std::fflush(out);

  json arr = json::array();
  for (const auto& r : rep.results) arr.push_back(to_json(r));
  jo.emit(arr);
  if (!rep.winner) {
    std::fprintf(stderr, "error: no candidate worked for %s\n", p.str().c_str());
    return 1;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------------------------
// bench

std::string iso_now() {
  std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// "--shard I/N": shard I (0-based) of N, as a pair; N = 1 when none was given.
std::pair<int, int> parse_shard(const std::string& v) {
  if (v.empty()) return {0, 1};
  const size_t slash = v.find('/');
  int i = -1, n = 0;
  if (slash == std::string::npos || !detail::parse_int(std::string_view(v).substr(0, slash), i, 0).empty() ||
      !detail::parse_int(std::string_view(v).substr(slash + 1), n, 1).empty() || i >= n)
    throw UsageError(fmt::format("--shard '{}': expected I/N with 0 <= I < N (e.g. 0/4)", v));
  return {i, n};
}

int cmd_bench(const std::string& suite_path, const std::string& filter, const std::string& shard, bool list_shapes,
              const TuneArgs& ta, const JsonOut& jo, const std::string& csv_path) {
  auto [suite_name, shapes] = load_suite(suite_path);
  if (!filter.empty()) {
    std::erase_if(shapes, [&](const SuiteShape& s) { return s.name.find(filter) == std::string::npos; });
    if (shapes.empty()) throw UsageError(fmt::format("--filter '{}' matches no shape of {}", filter, suite_path));
  }
  // A static shard (a Slurm array task, docs/CLI.md): every N-th shape from the I-th, after --filter.
  if (const auto [si, sn] = parse_shard(shard); sn > 1) {
    std::vector<SuiteShape> mine;
    for (size_t i = si; i < shapes.size(); i += sn) mine.push_back(std::move(shapes[i]));
    shapes = std::move(mine);
    if (shapes.empty()) throw UsageError(fmt::format("--shard {}: the suite has no shape for this shard", shard));
  }
  if (list_shapes) {  // the shapes' problems, resolved and checked, for another tool to tune (no GPU needed)
    json arr = json::array();
    for (const SuiteShape& sh : shapes) arr.push_back({{"name", sh.name}, {"problem", to_json(sh.problem)}});
    std::printf("%s\n", json{{"suite", suite_name}, {"shapes", arr}}.dump().c_str());
    return 0;
  }
  TuneOptions opts = ta.options();
  if (!opts.only.empty()) throw UsageError("bench does not take --config (it tunes every shape)");
  const DeviceInfo& dev = current_device();  // NoGpuError here: exit 3 before anything runs

  json header{{"gemmtune_bench", 1},
              {"suite", suite_name},
              {"suite_file", suite_path},
              {"gemmtune_version", version()},
              {"nvrtc_version", nvrtc_version_or_empty()},
              {"cublaslt_version", lt_version()},
              {"device", to_json(dev)},
              {"started_at", iso_now()},
              {"clocks_before", read_clocks()},
              {"options",
               {{"backends", opts.backends},
                {"top_k", opts.top_k},
                {"use_cache", opts.use_cache},
                {"force", opts.force},
                {"isolation", opts.isolation == Isolation::process ? "process" : "in_process"},
                {"min_time_ms", opts.min_time_ms},
                {"min_iters", opts.min_iters}}}};
  std::fprintf(stderr, "bench %s: %zu shapes on %s (driver %d, cuBLASLt %s, gemmtune %s)\n", suite_name.c_str(),
               shapes.size(), dev.name.c_str(), dev.driver_version, lt_version().c_str(), version().c_str());

  Table t{{"name", "M", "N", "K", "us", "TFLOP/s", "GB/s", "cuBLAS us", "x cuBLAS", "winner config"},
          {false, true, true, true, true, true, true, true, true, false},
          {}};
  std::string csv =
      "suite,gpu,name,m,n,k,batch,us,us_min,us_max,tflops,gbps,cublas_us,cublas_tflops,speedup_vs_cublas,winner,"
      "tune_cache_hit,status\n";
  json rows = json::array();
  double log_sum = 0;
  int n_ratio = 0, failures = 0;

  for (size_t i = 0; i < shapes.size(); ++i) {
    const SuiteShape& s = shapes[i];
    const Problem& p = s.problem;
    json row{{"name", s.name}, {"m", p.m}, {"n", p.n}, {"k", p.k}, {"batch", p.batch}, {"problem", problem_json(p)}};
    const ShapeBench sb = bench_problem(p, opts);
    const TuneReport& rep = sb.tune;
    const std::string& status = sb.status;
    if (!rep.cache_key.empty()) {
      row["tune"] = {{"cache_hit", rep.cache_hit}, {"wall_ms", rep.wall_ms}, {"cache_key", rep.cache_key},
                     {"winner", rep.winner ? rep.winner->str() : ""}};
      json tr = json::array();
      for (const auto& r : rep.results) tr.push_back(to_json(r));
      row["tune"]["results"] = tr;
    }
    json cj = json::array();
    for (const auto& r : sb.compare) cj.push_back(to_json(r));
    row["compare"] = cj;

    const CandidateResult* win = sb.winner();
    const CandidateResult* cub = sb.cublas();
    const bool win_ok = sb.winner_ok(), cub_ok = sb.cublas_ok();
    const double speedup = sb.speedup();
    if (std::isfinite(speedup)) {
      log_sum += std::log(speedup);
      ++n_ratio;
    }
    if (status != "ok") ++failures;
    std::string winner = rep.winner ? rep.winner->str() : "-";
    row["status"] = status;
    row["winner"] = winner;
    row["us"] = win_ok ? json(win->us_median) : json(nullptr);
    row["tflops"] = win_ok ? json(win->tflops) : json(nullptr);
    row["gbps"] = win_ok ? json(win->gbps) : json(nullptr);
    row["cublas_us"] = cub_ok ? json(cub->us_median) : json(nullptr);
    row["cublas_tflops"] = cub_ok ? json(cub->tflops) : json(nullptr);
    row["speedup_vs_cublas"] = std::isfinite(speedup) ? json(speedup) : json(nullptr);
    if (cub && !cub_ok) row["cublas_status"] = std::string(to_string(cub->status)) + " " + first_line(cub->reason);
    rows.push_back(row);

    t.rows.push_back({printable(s.name), std::to_string(p.m), std::to_string(p.n), std::to_string(p.k),
                      fmt_num(win_ok ? win->us_median : 0, 2, win_ok), fmt_num(win_ok ? win->tflops : 0, 1, win_ok),
                      fmt_num(win_ok ? win->gbps : 0, 0, win_ok), fmt_num(cub_ok ? cub->us_median : 0, 2, cub_ok),
                      fmt_num(speedup, 3), status == "ok" ? winner : winner + "  (" + status + ")"});
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_field(suite_name),
                       csv_field(dev.name), csv_field(s.name), p.m, p.n, p.k, p.batch,
                       win_ok ? fmt::format("{:.3f}", win->us_median) : "",
                       win_ok ? fmt::format("{:.3f}", win->us_min) : "",
                       win_ok ? fmt::format("{:.3f}", win->us_max) : "",
                       win_ok ? fmt::format("{:.2f}", win->tflops) : "",
                       win_ok ? fmt::format("{:.1f}", win->gbps) : "",
                       cub_ok ? fmt::format("{:.3f}", cub->us_median) : "",
                       cub_ok ? fmt::format("{:.2f}", cub->tflops) : "",
                       std::isfinite(speedup) ? fmt::format("{:.4f}", speedup) : "", csv_field(winner),
                       rep.cache_hit ? 1 : 0, csv_field(status));
    std::fprintf(stderr, "[%zu/%zu] %s %ldx%ldx%ld: %s us, %s x cuBLAS, %s%s\n", i + 1, shapes.size(),
                 printable(s.name).c_str(), long(p.m), long(p.n), long(p.k), fmt_num(win_ok ? win->us_median : 0, 2, win_ok).c_str(),
                 fmt_num(speedup, 3).c_str(), winner.c_str(), status == "ok" ? "" : ("  (" + status + ")").c_str());
  }

  double geo = n_ratio ? std::exp(log_sum / n_ratio) : NAN;
  std::FILE* out = jo.to_stdout() ? stderr : stdout;
  std::fprintf(out, "suite %s on %s (driver %d, cuBLASLt %s, gemmtune %s)\n", printable(suite_name).c_str(),
               dev.name.c_str(),
               dev.driver_version, lt_version().c_str(), version().c_str());
  t.print(out);
  std::fprintf(out, "geomean x cuBLAS: %s over %d of %zu shapes%s\n", fmt_num(geo, 3).c_str(), n_ratio,
               shapes.size(), failures ? fmt::format(" ({} failed)", failures).c_str() : "");
  std::fflush(out);

  header["clocks_after"] = read_clocks();
  header["finished_at"] = iso_now();
  header["shapes"] = rows;
  header["geomean_speedup_vs_cublas"] = std::isfinite(geo) ? json(geo) : json(nullptr);
  header["shapes_compared"] = n_ratio;
  header["failures"] = failures;
  jo.emit(header);
  if (!csv_path.empty()) write_file(csv_path, csv);
  return failures ? 1 : 0;
}

// ---------------------------------------------------------------------------------------------------------------
// list

DeviceInfo pick_device(int arch_sms, bool arch_sms_given) {
  if (arch_sms_given) {
    if (arch_sms <= 0 || arch_sms > detail::kMaxAssumedSms)
      throw UsageError(fmt::format("--arch-sms must be in [1, {}] (got {})", detail::kMaxAssumedSms, arch_sms));
    return DeviceInfo::assumed_sm90(arch_sms);
  }
  if (gpu_available()) return current_device();
  return DeviceInfo::assumed_sm90();
}

int cmd_list(const ProblemArgs& pa, const std::string& backends, int top_k, int arch_sms, bool arch_sms_given,
             const JsonOut& jo) {
  const ResolvedProblem p = resolve(pa.build());
  std::vector<std::string> chosen = parse_backends(backends);
  if (top_k < 0) throw UsageError(fmt::format("--top-k must be >= 0 (got {}; 0 = all)", top_k));
  DeviceInfo dev = pick_device(arch_sms, arch_sms_given);
  const std::vector<RankedList> lists = enumerate_ranked(p, dev, chosen);
  for (const RankedList& l : lists)
    if (!l.note().empty()) std::fprintf(stderr, "note: %s\n", l.note().c_str());
  const std::vector<Candidate> cands = top_candidates(lists, top_k);
  std::fprintf(stderr, "# %zu candidates for %s on %s\n", cands.size(), p->str().c_str(), dev.name.c_str());
  if (jo.given) {
    json arr = json::array();
    for (const auto& c : cands) arr.push_back(c.str());
    jo.emit(arr);
    if (jo.to_stdout()) return 0;
  }
  for (const auto& c : cands) std::printf("%s\n", c.str().c_str());
  return 0;
}

// ---------------------------------------------------------------------------------------------------------------
// compile

double median_of(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The compile of one problem: progress lines, the table and the summary; its JSON report into `report`.
struct CompileCounts {
  int ok = 0;      // compiled clean
  int broken = 0;  // failed for a reason other than spills (a spill is a reject, not a failure)
};
CompileCounts compile_problem(const Problem& p, const CompileOptions& co, const DeviceInfo& dev, bool verbose, std::FILE* out,
                     json& report);

int cmd_compile(const ProblemArgs& pa, const std::string& suite_path, const std::string& backends,
                const std::string& config, int top_k, int threads, int arch_sms, bool arch_sms_given, bool no_cache,
                bool quiet, bool verbose, const JsonOut& jo) {
  // The problems: the one on the command line, or every shape of a suite (to build a shape list ahead of tuning).
  std::vector<std::pair<std::string, Problem>> problems;
  if (!suite_path.empty()) {
    if (!config.empty()) throw UsageError("--config and --suite exclude each other");
    for (const SuiteShape& sh : load_suite(suite_path).second) problems.emplace_back(sh.name, sh.problem);
  } else {
    problems.emplace_back("", pa.build());
  }
  CompileOptions co;
  co.backends = parse_backends(backends);
  check_counts(top_k, threads);
  co.top_k = top_k;
  co.threads = threads;
  if (!config.empty()) co.only = parse_config_arg(config);
  DeviceInfo dev = pick_device(arch_sms, arch_sms_given);
  if (co.only) check_config(problems.front().second, *co.only, dev);

  // --no-cache: compile from scratch into a throw-away cache directory (the kernel cache has no bypass switch).
  std::string tmp_cache;
  if (no_cache) {
    std::string tmpl = (fs::temp_directory_path() / "gemmtune-compile-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw Error("cannot create a temporary cache directory");
    tmp_cache = tmpl;
    setenv("GEMMTUNE_CACHE_DIR", tmp_cache.c_str(), 1);
  }
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      if (!dir.empty()) fs::remove_all(dir, ec);
    }
  } cleanup{tmp_cache};

  // A backend left out is always said; a line per candidate as it finishes unless quiet.
  co.progress = [quiet](const ProgressEvent& e) {
    if (!quiet || e.kind == ProgressKind::note) print_progress(e);
  };
  std::FILE* out = jo.to_stdout() ? stderr : stdout;
  CompileCounts total;
  json reports = json::array();
  for (const auto& [name, p] : problems) {
    if (!name.empty()) std::fprintf(stderr, "shape %s\n", printable(name).c_str());
    json r;
    const CompileCounts c = compile_problem(p, co, dev, verbose, out, r);
    total.ok += c.ok, total.broken += c.broken;
    if (!name.empty()) r["name"] = name;
    reports.push_back(std::move(r));
  }
  jo.emit(suite_path.empty() ? reports.front() : json{{"suite", suite_path}, {"shapes", reports}});
  // A suite's shape that the backends do not take (a note says why) fails nothing; a failed compile does.
  return total.ok > 0 && total.broken == 0 ? 0 : 1;
}

CompileCounts compile_problem(const Problem& p, const CompileOptions& co, const DeviceInfo& dev, bool verbose, std::FILE* out,
                     json& report) {
  const CompileReport rep = compile_candidates(p, dev, co);

  std::vector<double> ms;
  int ok = 0, hits = 0;
  json arr = json::array();
  Table t{{"backend", "config", "compile ms", "cache", "regs", "spill B", "smem KiB", "status"},
          {false, false, true, false, true, true, true, false},
          {}};
  for (const CompiledCandidate& c : rep.candidates) {
    const CandidateResult& r = c.result;
    const bool good = r.status == Status::ok;
    const double cms = r.compile_ms;
    if (good) {
      ++ok;
      hits += r.compile_cache_hit;
      // The median is over real compiles: a hit (a unit already compiled, e.g. a tiles=gpc twin of a static
      // config) takes ~0 ms and would flatter it.
      if (!r.compile_cache_hit) ms.push_back(cms);
    }
    arr.push_back({{"candidate", r.candidate.str()},
                   {"backend", r.candidate.backend},
                   {"config", r.candidate.config},
                   {"status", to_string(r.status)},
                   {"reason", r.reason},
                   {"compile_ms", cms},
                   {"compiled", c.compiled},
                   {"cache_hit", r.compile_cache_hit},
                   {"registers", r.registers},
                   {"spill_bytes", r.spill_bytes},
                   {"smem_bytes", r.smem_bytes},
                   {"log", c.log}});
    std::string status = to_string(r.status);
    if (!r.reason.empty()) status += ": " + (verbose ? r.reason : first_line(r.reason));
    t.rows.push_back({r.candidate.backend, r.candidate.config, fmt_num(cms, 1),
                      good ? (r.compile_cache_hit ? "hit" : "miss") : "-", fmt_int(r.registers),
                      fmt_int(r.spill_bytes), r.smem_bytes < 0 ? "-" : fmt_num(r.smem_bytes / 1024.0, 1), status});
  }
  const size_t count = rep.candidates.size();
  double med = median_of(ms);
  double mn = ms.empty() ? NAN : *std::min_element(ms.begin(), ms.end());
  double mx = ms.empty() ? NAN : *std::max_element(ms.begin(), ms.end());

  std::fprintf(out, "problem: %s\ndevice:  %s (%s, %d SMs%s)\n", p.str().c_str(), dev.name.c_str(),
               dev.arch().c_str(), dev.sm_count, "");
  t.print(out);
  std::fprintf(out,
               "%zu candidates: %d ok, %zu failed, %d cache hits | compile ms over %zu compiles: median %s min %s max "
               "%s | wall %.0f ms on %d threads\n",
               count, ok, count - ok, hits, ms.size(), fmt_num(med, 1).c_str(), fmt_num(mn, 1).c_str(),
               fmt_num(mx, 1).c_str(), rep.wall_ms, rep.threads);
  std::fflush(out);

  report = json{{"problem", problem_json(p)},
               {"device", to_json(dev)},
               {"nvrtc_version", nvrtc_version_or_empty()},
               {"gemmtune_version", version()},
               {"threads", rep.threads},
               {"candidates", arr},
               {"summary",
                {{"count", count},
                 {"ok", ok},
                 {"failed", int(count) - ok},
                 {"cache_hits", hits},
                 {"compiles", ms.size()},
                 {"median_ms", std::isfinite(med) ? json(med) : json(nullptr)},
                 {"min_ms", std::isfinite(mn) ? json(mn) : json(nullptr)},
                 {"max_ms", std::isfinite(mx) ? json(mx) : json(nullptr)},
                 {"wall_ms", rep.wall_ms}}}};
  // A spilled candidate is a reject whose slot the next one in rank order took: not a failure of the run.
  int broken = 0;
  for (const CompiledCandidate& c : rep.candidates)
    broken += c.result.status != Status::ok && c.result.status != Status::spills;
  return {ok, broken};
}

// ---------------------------------------------------------------------------------------------------------------
// cache

std::string record_us(const json& rec) {
  auto it = rec.find("us");
  if (it == rec.end() || !it->is_number()) return "-";
  return fmt::format("{:.2f}", it->get<double>());
}

// Keys and winners come from cache files (possibly imported from another machine): table text goes through
// printable() (a planted escape sequence shows as '?'); the JSON output escapes them itself.
int cmd_cache_ls(const JsonOut& jo) {
  ResultCache cache;
  CacheListing listing = cache.scan();
  auto& entries = listing.entries;
  std::sort(entries.begin(), entries.end(), [](const CacheEntry& a, const CacheEntry& b) { return a.key < b.key; });
  std::FILE* out = jo.to_stdout() ? stderr : stdout;
  std::fprintf(out, "# %zu entries in %s%s\n", entries.size(), printable(cache.dir()).c_str(),
               listing.skipped ? fmt::format(" ({} unreadable or corrupt files skipped)", listing.skipped).c_str()
                               : "");
  if (!entries.empty()) {
    Table t{{"winner", "us", "key"}, {false, true, false}, {}};
    for (const auto& e : entries) {
      std::string w = e.record.is_object() && e.record.contains("winner") && e.record["winner"].is_string()
                          ? e.record["winner"].get<std::string>()
                          : "-";
      t.rows.push_back({printable(w), e.record.is_object() ? record_us(e.record) : "-", printable(e.key)});
    }
    t.print(out);
  }
  json arr = json::array();
  for (const auto& e : entries) arr.push_back({{"key", e.key}, {"record", e.record}});
  jo.emit(arr);
  return 0;
}

// ---------------------------------------------------------------------------------------------------------------
// version

std::string short_version() { return "gemmtune " + version(); }

// A toolkit library's version as the library reports it (loading it), or why it cannot be loaded; `built` (the version
// the cache keys name while the library is not loaded: the toolkit's headers) too when it differs.
std::string library_version(const std::function<std::string()>& loaded, const std::string& built) {
  try {
    const std::string v = loaded();
    return v == built ? v : v + " (built with " + built + ")";
  } catch (const std::exception& e) {
    return "unavailable (" + first_line(e.what()) + ")";
  }
}

// The diagnostic: loads NVRTC and cuBLASLt and probes every backend's dependency (Triton and CUTLASS through Python),
// which no other command does unless it needs that backend.
int cmd_version() {
  std::printf("gemmtune %s\n", version().c_str());
  std::printf("nvrtc    %s\n", library_version(jit::nvrtc_library_version, nvrtc_version_or_empty()).c_str());
  std::printf("cublaslt %s\n", library_version(cublaslt_library_version, lt_version()).c_str());
  std::vector<std::string> names, unavailable;
  for (const auto& b : all_backends()) {
    const std::string why = b->unavailable();
    (why.empty() ? names : unavailable).push_back(why.empty() ? b->name() : b->name() + ": " + first_line(why));
  }
  std::printf("backends %s\n", fmt::format("{}", fmt::join(names, ",")).c_str());
  for (const auto& u : unavailable) std::printf("         unavailable: %s\n", u.c_str());
  try {
    const DeviceInfo& d = current_device();
    std::printf("gpu      %s (%s, %d SMs, driver %d)\n", d.name.c_str(), d.arch().c_str(), d.sm_count,
                d.driver_version);
  } catch (const Error& e) {
    std::printf("gpu      none (%s)\n", first_line(e.what()).c_str());
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------------------------

int run(int argc, char** argv) {
  CLI::App app{"gemmtune: GEMM generator and autotuner for NVIDIA Hopper", "gemmtune"};
  app.set_version_flag("--version", [] { return short_version(); });
  app.require_subcommand(1, 1);
  app.fallthrough(false);

  // tune
  ProblemArgs tune_p;
  TuneArgs tune_a;
  JsonOut tune_j;
  CLI::App* tune = app.add_subcommand("tune", "tune one problem: compile, verify and time candidates, pick the fastest");
  tune_p.add_to(tune);
  tune_a.add_to(tune, true);
  add_json_option(tune, tune_j, "print the per-candidate records as a JSON array (stdout, or FILE); table -> stderr");
  // A suite on many GPUs or ranks is the Python package's (torch.distributed coordinates the processes): the pip
  // entry point `gemmtune` runs it; this binary says where to go instead of asking for --n.
  tune->add_option_function<std::string>(
      "--suite",
      [](const std::string&) {
        throw UsageError("tune --suite runs through the Python package with PyTorch installed (the pip-installed "
                         "`gemmtune tune --suite FILE`, or `python -m gemmtune.torch.tuning --suite FILE`); this "
                         "binary tunes a suite with `gemmtune bench --suite FILE [--shard I/N]`");
      },
      "a suite on every GPU or rank: see docs/CLI.md (the Python package's command)");

  // bench
  std::string suite, bench_filter, bench_shard, bench_csv;
  bool bench_list = false;
  TuneArgs bench_a;
  JsonOut bench_j;
  CLI::App* bench = app.add_subcommand("bench", "tune every shape of a suite, then time winner vs cuBLASLt side by side");
  bench->add_option("--suite", suite, "suite file, e.g. bench/suites/llama3_8b.json")->required();
  bench->add_option("--filter", bench_filter, "only shapes whose name contains this");
  bench->add_option("--shard", bench_shard,
                    "I/N: only every N-th shape from the I-th (0-based), e.g. one task of a Slurm array; the tasks' "
                    "caches merge with `gemmtune cache export` / `import`");
  bench->add_flag("--list-shapes", bench_list,
                  "print the shapes' problems as JSON ({\"suite\", \"shapes\": [{\"name\", \"problem\"}]}) and exit, "
                  "without a GPU");
  bench_a.add_to(bench, false);
  add_json_option(bench, bench_j, "write results as JSON to FILE (no FILE: stdout, table -> stderr)");
  bench->add_option("--csv", bench_csv, "write results as CSV to FILE");

  // list
  ProblemArgs list_p;
  std::string list_backends;
  int list_topk = 0, list_sms = 132;
  JsonOut list_j;
  CLI::App* list = app.add_subcommand("list", "list candidates (backend:config) for a problem without running them");
  list_p.add_to(list);
  list->add_option("--backends", list_backends, "comma-separated backends (default: all)");
  list->add_option("--top-k", list_topk, "at most this many per backend (default 0 = all)")
      ->check(integer_in_range<int>());
  CLI::Option* list_sms_opt = list->add_option("--arch-sms", list_sms, "assume an sm_90 GPU with N SMs")
      ->check(integer_in_range<int>());
  add_json_option(list, list_j, "print a JSON array of candidate lines");

  // compile
  ProblemArgs comp_p;
  std::string comp_backends, comp_config, comp_suite;
  int comp_topk = 8, comp_threads = 0, comp_sms = 132;
  bool comp_nocache = false, comp_quiet = false, comp_verbose = false;
  JsonOut comp_j;
  CLI::App* comp = app.add_subcommand("compile", "compile candidates without running them (no GPU needed)");
  comp_p.add_to(comp);
  // With --suite the shapes come from the file: --n and --k are required only without it (checked below).
  comp->get_option("--n")->required(false);
  comp->get_option("--k")->required(false);
  comp->add_option("--suite", comp_suite,
                   "compile every shape of a suite file (as `bench --suite`), e.g. to build the cutlass candidates of a "
                   "shape list ahead of tuning");
  comp->add_option("--backends", comp_backends, "backends to compile (default: sm90,gemv,pad; name triton or cutlass to build theirs)");
  comp->add_option("--config", comp_config, "compile exactly this 'backend:config'");
  comp->add_option("--top-k", comp_topk, "candidates per backend (default 8, 0 = all)")
      ->check(integer_in_range<int>());
  comp->add_option("--threads", comp_threads, "parallel compiles (default: hardware concurrency)")
      ->check(integer_in_range<int>());
  CLI::Option* comp_sms_opt =
      comp->add_option("--arch-sms", comp_sms, "assume an sm_90 GPU with N SMs even when a GPU is present")
          ->check(integer_in_range<int>());
  comp->add_flag("--no-cache", comp_nocache, "compile from scratch (throw-away kernel cache)");
  comp->add_flag("-q,--quiet", comp_quiet, "no progress lines on stderr");
  comp->add_flag("-v,--verbose", comp_verbose, "full compiler messages in the table");
  add_json_option(comp, comp_j, "print a JSON report (stdout, or FILE); table -> stderr");

  // cache
  CLI::App* cache = app.add_subcommand("cache", "inspect or move the result cache ($GEMMTUNE_CACHE_DIR)");
  cache->require_subcommand(1, 1);
  JsonOut ls_j;
  CLI::App* cache_ls = cache->add_subcommand("ls", "list entries: winner, us, key");
  cache_ls->alias("list");
  add_json_option(cache_ls, ls_j, "print entries as JSON");
  CLI::App* cache_clear = cache->add_subcommand("clear", "remove all entries");
  std::string export_file, import_file;
  CLI::App* cache_export = cache->add_subcommand("export", "write all entries to one JSON file");
  cache_export->add_option("file", export_file, "output file")->required();
  CLI::App* cache_import = cache->add_subcommand("import", "merge entries from an exported file");
  cache_import->add_option("file", import_file, "file written by 'cache export'")->required()->check(
      CLI::ExistingFile);

  CLI::App* ver = app.add_subcommand("version", "versions of gemmtune, NVRTC, cuBLASLt and the GPU");

  // Bare `--json` (no value) must still count as given: record it before parsing.
  auto json_given = [](CLI::App* sub, JsonOut& j) { j.given = sub->get_option("--json")->count() > 0; };

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    print_error("", first_line(e.what()));
    return 2;
  }

  if (tune->parsed()) {
    json_given(tune, tune_j);
    return cmd_tune(tune_p, tune_a, tune_j);
  }
  if (bench->parsed()) {
    json_given(bench, bench_j);
    return cmd_bench(suite, bench_filter, bench_shard, bench_list, bench_a, bench_j, bench_csv);
  }
  if (list->parsed()) {
    json_given(list, list_j);
    return cmd_list(list_p, list_backends, list_topk, list_sms, list_sms_opt->count() > 0, list_j);
  }
  if (comp->parsed()) {
    json_given(comp, comp_j);
    const bool shape_given = comp->get_option("--n")->count() + comp->get_option("--k")->count() +
                                 comp->get_option("--m")->count() > 0;
    if (!comp_suite.empty() && shape_given) throw UsageError("--suite and --m/--n/--k exclude each other");
    if (comp_suite.empty()) {
      if (comp->get_option("--n")->count() == 0) throw UsageError("--n is required (or --suite FILE)");
      if (comp->get_option("--k")->count() == 0) throw UsageError("--k is required (or --suite FILE)");
    }
    return cmd_compile(comp_p, comp_suite, comp_backends, comp_config, comp_topk, comp_threads, comp_sms,
                       comp_sms_opt->count() > 0, comp_nocache, comp_quiet, comp_verbose, comp_j);
  }
  if (cache->parsed()) {
    if (!ResultCache().enabled())
      throw Error("no result cache: neither GEMMTUNE_CACHE_DIR nor HOME is set (see docs/CACHE.md)");
    if (cache_ls->parsed()) {
      json_given(cache_ls, ls_j);
      return cmd_cache_ls(ls_j);
    }
    ResultCache rc;
    if (cache_clear->parsed()) {
      // Entries counted as `ls` counts them; the unreadable or corrupt files `ls` skipped, apart.
      const ClearCount n = rc.clear();
      std::printf("removed %zu entries from %s%s\n", n.entries, printable(rc.dir()).c_str(),
                  n.other ? fmt::format(" (and {} unreadable or corrupt files)", n.other).c_str() : "");
      return 0;
    }
    if (cache_export->parsed()) {
      const size_t n = rc.export_to(export_file);
      std::printf("exported %zu entries from %s to %s\n", n, printable(rc.dir()).c_str(),
                  printable(export_file).c_str());
      return 0;
    }
    if (cache_import->parsed()) {
      size_t n = rc.import_from(import_file);
      std::printf("imported %zu entries into %s\n", n, printable(rc.dir()).c_str());
      return 0;
    }
  }
  if (ver->parsed()) return cmd_version();
  return 2;
}

}  // namespace
}  // namespace gemmtune::cli

int main(int argc, char** argv) {
  using namespace gemmtune;
  try {
    return cli::run(argc, argv);
  } catch (const cli::UsageError& e) {
    cli::print_error("", e.what());
    return 2;
  } catch (const detail::InputError& e) {  // a malformed suite, export or cache file: the user's data
    cli::print_error("", e.what());
    return 2;
  } catch (const NoGpuError& e) {
    cli::print_error("no GPU: ", cli::first_line(e.what()));
    return 3;
  } catch (const Error& e) {
    cli::print_error("", e.what());
    return 1;
  } catch (const std::exception& e) {
    cli::print_error("internal: ", e.what());
    return 1;
  }
}
