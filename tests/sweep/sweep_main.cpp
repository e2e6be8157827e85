// gemmtune_sweep: every candidate of every backend on every problem class of tests/sweep/sweep_classes.h, compiled,
// verified against the reference and checked for writes outside D, as CUTLASS's testbed sweeps its kernels. The
// tuner does the work (Tuner::tune with top_k = 0: all candidates, isolation = process: a crash, hang or sticky error
// is recorded against its candidate and the sweep goes on, short timings); this program picks the classes, sorts each
// candidate's fate into passed / refused / crashed / wrong / out-of-bounds / failed and writes the tables.
//
//   gemmtune_sweep [--shard i/n] [--filter REGEX] [--backends a,b] [--cutlass-classes SPEC] [--json FILE]
//                  [--markdown FILE] [--verbose] [--progress] [--threads N] [--max-candidate-s S] [--no-prebuild]
//   gemmtune_sweep --compile-only [...]          compile every candidate, run none (no GPU needed): compile errors
//                                                and the tables, on any host
//   gemmtune_sweep --list [...]                  classes and candidate counts per backend (no GPU needed)
//   gemmtune_sweep --merge IN.json... [--json FILE] [--markdown FILE]   shards' JSON into one table
//
// Exit status: 0 when nothing crashed, computed a wrong result, wrote out of bounds or failed, and every refusal has
// a reason; 1 otherwise; 2 on bad arguments; 3 when there is no GPU (the reason on stderr).
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/backend.h"
#include "backends/cublaslt/cublaslt_backend.h"
#include "backends/cutlass/cutlass_codegen.h"
#include "backends/cutlass/cutlass_config.h"
#include "backends/cutlass/cutlass_nvcc.h"
#include "gemmtune/device.h"
#include "gemmtune/errors.h"
#include "gemmtune/progress.h"
#include "gemmtune/tuner.h"
#include "jit/jit.h"
#include "sweep/sweep_classes.h"
#include "tuner/pipeline.h"
#include "tuner/worker_client.h"

using nlohmann::json;
using namespace gemmtune;
using sweep::SweepClass;

namespace {

// ---------------------------------------------------------------------------------------------------------------
// What the sweep costs, for --list's estimate: seconds of one compile on one core (NVRTC for sm90, gemv and the pad
// backend's inner kernels; the Triton helper; nvcc for CUTLASS), and of one candidate's verification and short timing
// in the worker (GPU, one candidate at a time per process).
// A class's own cost: the worker's start, its CUDA context, inputs and the reference GEMM. cuBLASLt enumerates only on
// a GPU: without one, the estimate takes its most (kCublasLtMax: the heuristic's 32 algorithms and the default) for
// each class it does not refuse.
constexpr double kNvrtcS = 0.3, kTritonS = 1.0, kNvccS = 40.0, kVerifyS = 0.03, kClassS = 1.0;
constexpr int kCublasLtMax = 33;

// The classes whose CUTLASS candidates are swept by default. A CUTLASS kernel is ~40 s of nvcc, and the kernels of
// every class CUTLASS takes (130 distinct ones: a kernel depends on the config, dtypes, layouts, whether C is read,
// the scaling and the epilogue; shapes, leading dimensions and alignments are run-time arguments) would be ~5.4 min
// of the sweep's ~8 on a 16-core host by themselves. These 9 classes need 58 (~2.5 min): the bf16 y = x W^T family
// on six shapes (baseline, M = 1, 4095, 4097 with K = 40, K = 8, batches: 22 kernels, mostly shared), C read on
// padded pitches, a fused bias + gelu_tanh (gemmtune's own epilogue visitor trees), and fp8 (e5m2 x e4m3, row
// scales, ragged K). Left out (the tables say so): A and B row/row and col/row, column-major D, B row-major with
// K < 64, row/col scales + silu, sigmoid + residual, batched e5m2 with an f32 D. --cutlass-classes all sweeps every
// class (~1 min more for every 24 kernels).
const std::vector<std::string> kCutlassSubset = {
    "layout_rc", "m1_decode", "m4095", "m4097_k40", "k8", "batch3", "pitch16_padded", "epi_bias_gelu_tanh",
    "fp8_e5m2_row",
};

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string cuda_version_str(int v) {  // 13000 -> "13.0"
  if (v <= 0) return "unknown";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// ---------------------------------------------------------------------------------------------------------------
// Verdicts

enum class Verdict { passed, refused, crashed, wrong, oob, failed };
constexpr const char* kVerdictNames[] = {"passed", "refused", "crashed", "wrong", "oob", "failed"};
constexpr int kVerdicts = 6;

// The verification reports writes outside D's logical elements (guard regions, the gaps of its pitch, rows of no
// group) with "outside" in its reason; every other wrong result is a wrong value (reads of the NaN-poisoned guards
// of the inputs show up there as NaN outputs).
Verdict verdict_of(const CandidateResult& r) {
  switch (r.status) {
    case Status::ok: return Verdict::passed;
    case Status::unsupported:
    case Status::spills:
    case Status::needs_gpu: return r.reason.empty() ? Verdict::failed : Verdict::refused;
    case Status::crashed:
    case Status::timeout: return Verdict::crashed;
    case Status::wrong_result:
      return r.reason.find("outside") != std::string::npos ? Verdict::oob : Verdict::wrong;
    case Status::compile_error:
    case Status::load_error:
    case Status::launch_error:
    case Status::skipped:
    case Status::pending: return Verdict::failed;
  }
  return Verdict::failed;
}

// The reason shown for a candidate: its own, or, for a refusal without one, what makes it a failure.
std::string reason_of(const CandidateResult& r) {
  if (r.reason.empty() &&
      (r.status == Status::unsupported || r.status == Status::spills || r.status == Status::needs_gpu))
    return std::string("refused (") + to_string(r.status) + ") without a reason";
  return r.reason;
}

// ---------------------------------------------------------------------------------------------------------------
// Options

struct Options {
  bool list = false, verbose = false, progress = false, prebuild = true, compile_only = false;
  int shard = 0, shards = 1;
  std::string filter;
  std::vector<std::string> backends;  // empty: every available backend
  std::string cutlass_classes = "subset";
  std::string json_path, markdown_path;
  std::vector<std::string> merge;  // --merge inputs
  bool merging = false;
  int threads = 0;
  // A verification this long is a timeout (the worker is given 10 s more before it counts as hung). The classes are
  // small: a correct candidate verifies in milliseconds, and each hang costs this much.
  double max_candidate_s = 10;
};

[[noreturn]] void usage_error(const std::string& why) {
  std::fprintf(stderr, "error: %s\n", why.c_str());
  std::fprintf(stderr,
               "usage: gemmtune_sweep [--list] [--shard i/n] [--filter REGEX] [--backends a,b] [--cutlass-classes "
               "subset|all|none|N|name,...]\n"
               "                      [--json FILE] [--markdown FILE] [--verbose] [--progress] [--threads N] "
               "[--max-candidate-s S] [--no-prebuild] [--compile-only]\n"
               "       gemmtune_sweep --merge IN.json... [--json FILE] [--markdown FILE]\n");
  std::exit(2);
}

Options parse_args(int argc, char** argv) {
  Options o;
  auto value = [&](int& i) -> std::string {
    if (i + 1 >= argc) usage_error(std::string(argv[i]) + " needs a value");
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--list") o.list = true;
    else if (a == "--verbose" || a == "-v") o.verbose = true;
    else if (a == "--progress") o.progress = true;
    else if (a == "--no-prebuild") o.prebuild = false;
    else if (a == "--compile-only") o.compile_only = true;
    else if (a == "--filter") o.filter = value(i);
    else if (a == "--backends") o.backends = split(value(i), ',');
    else if (a == "--cutlass-classes") o.cutlass_classes = value(i);
    else if (a == "--json") o.json_path = value(i);
    else if (a == "--markdown") o.markdown_path = value(i);
    else if (a == "--threads") o.threads = std::atoi(value(i).c_str());
    else if (a == "--max-candidate-s") o.max_candidate_s = std::atof(value(i).c_str());
    else if (a == "--shard") {
      const std::string v = value(i);
      int si = -1, sn = 0;
      char extra = 0;
      if (std::sscanf(v.c_str(), "%d/%d%c", &si, &sn, &extra) != 2 || sn < 1 || si < 0 || si >= sn)
        usage_error("--shard '" + v + "': expected i/n with 0 <= i < n");
      o.shard = si, o.shards = sn;
    } else if (a == "--merge") {
      o.merging = true;
      while (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) o.merge.push_back(argv[++i]);
    } else if (a == "--help" || a == "-h") {
      std::printf("see the comment at the top of tests/sweep/sweep_main.cpp and docs/TESTING.md\n");
      std::exit(0);
    } else {
      usage_error("unknown argument '" + a + "'");
    }
  }
  if (o.merging && o.merge.empty()) usage_error("--merge needs the shards' JSON files");
  if (o.threads <= 0) o.threads = int(std::max(1u, std::thread::hardware_concurrency()));
  return o;
}

// The classes of this run: --filter, then --shard over the whole table's indices (so the shards of one filter
// partition it whatever the filter).
std::vector<std::pair<size_t, SweepClass>> selected_classes(const Options& o) {
  std::optional<std::regex> re;
  if (!o.filter.empty()) {
    try {
      re.emplace(o.filter, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      usage_error("--filter '" + o.filter + "': " + e.what());
    }
  }
  std::vector<std::pair<size_t, SweepClass>> out;
  const auto all = sweep::sweep_classes();
  for (size_t i = 0; i < all.size(); ++i) {
    if (int(i % size_t(o.shards)) != o.shard) continue;
    if (re && !std::regex_search(all[i].name, *re)) continue;
    out.emplace_back(i, all[i]);
  }
  return out;
}

// The backends of this run: --backends as given (unknown: an error), else every compiled-in backend available here.
// Unavailable ones are reported, not swept.
struct BackendSet {
  std::vector<std::string> names;
  std::vector<std::pair<std::string, std::string>> unavailable;  // name, why
};

BackendSet backend_set(const Options& o) {
  BackendSet s;
  try {
    for (const auto& b : enabled_backends(o.backends)) {
      const std::string why = b->unavailable();
      if (why.empty() || !o.backends.empty()) s.names.push_back(b->name());
      if (!why.empty()) s.unavailable.emplace_back(b->name(), first_line(why));
    }
  } catch (const Error& e) {
    usage_error(std::string("--backends: ") + e.what());
  }
  return s;
}

// Whether CUTLASS is swept on class `name` under --cutlass-classes.
bool cutlass_on(const Options& o, const std::string& name) {
  const std::string& s = o.cutlass_classes;
  if (s == "all") return true;
  if (s == "none") return false;
  if (s == "subset") return std::find(kCutlassSubset.begin(), kCutlassSubset.end(), name) != kCutlassSubset.end();
  if (!s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    const size_t n = size_t(std::atol(s.c_str()));
    const auto end = kCutlassSubset.begin() + std::ptrdiff_t(std::min(n, kCutlassSubset.size()));
    return std::find(kCutlassSubset.begin(), end, name) != end;
  }
  const auto names = split(s, ',');
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string cutlass_scope(const Options& o) {
  const std::string& s = o.cutlass_classes;
  if (s == "all") return "all classes";
  if (s == "none") return "no class";
  if (s == "subset") return "the default subset (" + join(kCutlassSubset, ", ") + ")";
  return "--cutlass-classes " + s;
}

// ---------------------------------------------------------------------------------------------------------------
// --list: the classes and how many candidates each backend enumerates for them (backends that need a GPU to
// enumerate say so without one), with the sweep's estimated cost.

int run_list(const Options& o) {
  const auto classes = selected_classes(o);
  const BackendSet bs = backend_set(o);
  const bool gpu = gpu_available();
  const DeviceInfo dev = gpu ? current_device() : DeviceInfo::assumed_sm90();
  std::printf("%zu classes (of %zu); device: %s\n", classes.size(), sweep::sweep_classes().size(),
              gpu ? dev.name.c_str() : "none (an assumed H100 SXM: backends that enumerate only on a GPU show '?')");
  for (const auto& [name, why] : bs.unavailable) std::printf("unavailable: %s: %s\n", name.c_str(), why.c_str());
  std::printf("\n%-28s", "class");
  for (const auto& b : bs.names) std::printf(" %8s", b.c_str());
  std::printf(" %8s  problem\n", "total");
  std::map<std::string, long> totals;
  long total_all = 0, cutlass_swept = 0, cublaslt_guess = 0;
  std::set<std::string> cutlass_units, cutlass_units_swept;
  std::map<std::string, int> cutlass_new;  // per class: CUTLASS kernels no earlier class has
  for (const auto& [idx, c] : classes) {
    std::printf("%-28s", c.name.c_str());
    long row = 0;
    for (const auto& b : bs.names) {
      std::vector<RankedList> lists;
      try {
        lists = enumerate_ranked(resolve(c.problem), dev, {b});
      } catch (const std::exception& e) {
        std::printf(" %8s", "err");
        std::fprintf(stderr, "%s: %s: %s\n", c.name.c_str(), b.c_str(), e.what());
        continue;
      }
      const RankedList& l = lists.front();
      if (l.needs_gpu) {
        std::printf(" %8s", "?");
        cublaslt_guess += kCublasLtMax;
        continue;
      }
      if (!l.skipped.empty()) {
        std::printf(" %8s", "-");
        continue;
      }
      const bool swept = b != "cutlass" || cutlass_on(o, c.name);
      std::printf(" %7zu%s", l.ranked.size(), swept ? " " : "*");
      if (swept) totals[b] += long(l.ranked.size()), row += long(l.ranked.size());
      if (b == "cutlass") {
        // Kernels are shared between classes whose generated source is the same (nvcc's cache then serves them).
        for (const Candidate& cand : l.ranked) {
          try {
            const std::string key =
                cutlass_be::unit_key(cutlass_be::generate_unit(cutlass_be::Config::parse(cand.config), c.problem));
            const bool fresh = cutlass_units.insert(key).second;
            if (swept) cutlass_units_swept.insert(key);
            if (fresh) ++cutlass_new[c.name];
          } catch (const std::exception&) {
          }
        }
        if (swept) cutlass_swept += long(l.ranked.size());
      }
    }
    total_all += row;
    std::printf(" %8ld  %s\n", row, c.problem.str().c_str());
  }
  std::printf("%-28s", "total (swept)");
  for (const auto& b : bs.names) std::printf(" %8ld", totals[b]);
  std::printf(" %8ld\n", total_all);
  std::printf("\n'-': the backend refuses the class; '?': it enumerates only on a GPU; '*': CUTLASS not swept on the "
              "class by default (--cutlass-classes: %s)\n",
              cutlass_scope(o).c_str());
  if (!cutlass_units.empty())
    std::printf("cutlass: %zu distinct kernels over the listed classes, %zu of them in the swept classes (%ld "
                "candidates)\n",
                cutlass_units.size(), cutlass_units_swept.size(), cutlass_swept);

  if (o.verbose && !cutlass_new.empty()) {
    std::printf("cutlass kernels new in each class (in table order; the rest are shared with earlier classes):\n");
    for (const auto& [idx, c] : classes)
      if (cutlass_new.count(c.name))
        std::printf("  %-28s %3d%s\n", c.name.c_str(), cutlass_new[c.name],
                    cutlass_on(o, c.name) ? "" : "  (not swept)");
  }

  // The estimate, for a host of H cores: compiles in parallel (NVRTC, Triton, nvcc), verification one candidate at a
  // time per process.
  const int cores = 16;
  const double nvrtc = double(totals["sm90"] + totals["gemv"] + totals["pad"]) * kNvrtcS / cores;
  const double triton = double(totals["triton"]) * kTritonS / cores;
  const double nvcc = double(cutlass_units_swept.size()) * kNvccS / cores;
  const double verify = double(total_all + cublaslt_guess) * kVerifyS + double(classes.size()) * kClassS;
  std::printf("estimate on a %d-core GPU host, every kernel compiled cold: NVRTC %.0f s (%.1f s a kernel on a core), "
              "Triton %.0f s (%.1f s), nvcc %.0f s (%.0f s), verification %.0f s (%.2f s a candidate, %.1f s a class; "
              "%s): %.1f min\n",
              cores, nvrtc, kNvrtcS, triton, kTritonS, nvcc, kNvccS, verify, kVerifyS, kClassS,
              cublaslt_guess ? ("cublaslt counted as " + std::to_string(kCublasLtMax) + " a class it may take, " +
                                std::to_string(cublaslt_guess) + " in all")
                                   .c_str()
                             : "cublaslt as listed",
              (nvrtc + triton + nvcc + verify) / 60);
  return 0;
}

// ---------------------------------------------------------------------------------------------------------------
// The run

// One class's outcome.
struct ClassRun {
  size_t index = 0;
  SweepClass cls;
  std::vector<CandidateResult> results;
  std::vector<std::pair<std::string, std::string>> backend_refusals;  // backend, reason (whole class)
  std::vector<std::pair<std::string, std::string>> not_swept;         // backend, why (this sweep left it out)
  std::string error;                                                  // the tune threw (a failure of the class)
  double wall_s = 0;
};


// A class's run record, and the backends it runs (CUTLASS only on the classes of this sweep's subset: the others are
// noted as not swept).
std::vector<std::string> start_run(const Options& o, size_t index, const SweepClass& c,
                                   const std::vector<std::string>& backends, ClassRun& run) {
  run.index = index, run.cls = c;
  std::vector<std::string> names;
  for (const auto& b : backends) {
    if (b == "cutlass" && !cutlass_on(o, c.name)) {
      run.not_swept.emplace_back(b, "outside the CUTLASS classes of this sweep (" + cutlass_scope(o) + ")");
      continue;
    }
    names.push_back(b);
  }
  return names;
}

ClassRun run_class(const Options& o, size_t index, const SweepClass& c, const std::vector<std::string>& backends) {
  ClassRun run;
  const std::vector<std::string> names = start_run(o, index, c, backends, run);
  TuneOptions t;
  t.backends = names;
  t.top_k = 0;
  t.use_cache = false;
  t.isolation = Isolation::process;
  t.wait_compile = true;
  t.min_time_ms = 1, t.min_iters = 3, t.warmup_iters = 1, t.settle_ms = 0;
  t.compile_threads = o.threads;
  t.max_candidate_s = o.max_candidate_s;
  std::mutex mu;
  t.progress = [&](const ProgressEvent& e) {
    std::lock_guard<std::mutex> lk(mu);
    if (o.progress) std::fprintf(stderr, "  [%s] %s\n", c.name.c_str(), to_string(e).c_str());
    if (e.kind == ProgressKind::backend_skipped) run.backend_refusals.emplace_back(e.backend, e.text);
  };
  const auto t0 = std::chrono::steady_clock::now();
  if (names.empty()) {
    run.error = "no backend to sweep";
  } else {
    try {
      const TuneReport rep = Tuner(t).tune(c.problem);
      run.results = rep.results;
    } catch (const NoGpuError&) {
      throw;
    } catch (const std::exception& e) {
      // Every backend refusing the class is not a failure of a kernel: its refusals are listed. Anything else is.
      const std::string what = e.what();
      if (!(what.rfind("no backend supports this problem", 0) == 0 && run.backend_refusals.size() == names.size()))
        run.error = first_line(what);
    }
  }
  run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return run;
}

// Compiles every candidate of every class of this run at once, before any class is tuned, into the kernel caches
// (NVRTC's and Triton's on disk, CUTLASS's objects): the tune of each class then finds them built. Compiled class by
// class, each tune's compile phase would be as long as its slowest kernel (a CUTLASS class: one round of ~40 s nvcc
// jobs on a 16-core host, cores idle meanwhile) and the GPU idle during it; all at once, the cores stay busy and a
// CUTLASS kernel that several classes share is built once. Failures are not reported here: the tune compiles the
// candidate again and records its fate.
void prebuild(const Options& o, const std::vector<std::pair<size_t, SweepClass>>& classes,
              const std::vector<std::string>& backends, const DeviceInfo& dev) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<PreparedCandidate> cands;
  std::vector<const Problem*> problem_of;
  std::set<std::string> cutlass_keys;
  size_t shared = 0;
  for (const auto& [idx, c] : classes) {
    std::vector<std::string> names;
    for (const auto& b : backends)
      if (b != "cutlass" || cutlass_on(o, c.name)) names.push_back(b);
    std::vector<RankedList> lists;
    try {
      lists = enumerate_ranked(resolve(c.problem), dev, names);
    } catch (const std::exception&) {
      continue;  // the tune reports it
    }
    for (const RankedList& l : lists) {
      for (const Candidate& cand : l.ranked) {
        if (l.backend->name() == "cutlass") {
          try {
            const std::string key =
                cutlass_be::unit_key(cutlass_be::generate_unit(cutlass_be::Config::parse(cand.config), c.problem));
            if (!cutlass_keys.insert(key).second) {
              ++shared;
              continue;
            }
          } catch (const std::exception&) {
            continue;  // a config that does not parse: the tune says so
          }
        }
        PreparedCandidate pc;
        pc.result.candidate = cand;
        pc.backend = l.backend;
        pc.analysis = l.analysis;
        cands.push_back(std::move(pc));
        problem_of.push_back(&c.problem);
      }
    }
  }
  // The slow compiles first, so that the long nvcc jobs overlap the many short ones instead of trailing them.
  std::vector<size_t> order(cands.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_partition(order.begin(), order.end(), [&](size_t i) { return cands[i].backend->slow_compile(); });
  std::vector<PreparedCandidate> sorted;
  std::vector<const Problem*> sorted_problem;
  for (size_t i : order) sorted.push_back(std::move(cands[i])), sorted_problem.push_back(problem_of[i]);
  std::printf("prebuild: compiling %zu candidates of %zu classes on %d threads (%zu CUTLASS kernels, %zu more shared "
              "between classes)\n",
              sorted.size(), classes.size(), o.threads, cutlass_keys.size(), shared);
  std::fflush(stdout);
  compile_all(sorted, o.threads, [&](PreparedCandidate& pc) {
    compile_one(resolve(*sorted_problem[size_t(&pc - sorted.data())]), dev, pc);
  });
  size_t failed = 0;
  for (const auto& pc : sorted) failed += pc.status() != Status::pending;
  std::printf("prebuild: done in %.0f s (%zu did not compile clean: the tunes below say why)\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), failed);
  std::fflush(stdout);
}

// --compile-only: the candidates of a class compiled as the tune would (parse, validate, compile), none run. A
// candidate that compiled clean counts as passed; the tables say that nothing was verified.
ClassRun compile_class(const Options& o, size_t index, const SweepClass& c, const std::vector<std::string>& backends,
                       const DeviceInfo& dev) {
  ClassRun run;
  const std::vector<std::string> names = start_run(o, index, c, backends, run);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    std::vector<PreparedCandidate> cands;
    for (const RankedList& l : enumerate_ranked(resolve(c.problem), dev, names)) {
      if (!l.skipped.empty()) {
        run.backend_refusals.emplace_back(l.backend->name(), l.skipped);
        continue;
      }
      for (const Candidate& cand : l.ranked) {
        PreparedCandidate pc;
        pc.result.candidate = cand;
        pc.backend = l.backend;
        cands.push_back(std::move(pc));
      }
    }
    compile_all(cands, o.threads, [&](PreparedCandidate& pc) { compile_one(resolve(c.problem), dev, pc); });
    for (auto& pc : cands) {
      if (pc.result.status == Status::pending) pc.result.status = Status::ok;
      run.results.push_back(pc.result);
    }
  } catch (const std::exception& e) {
    run.error = first_line(e.what());
  }
  run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return run;
}

// ---------------------------------------------------------------------------------------------------------------
// JSON: the one format the console summary, the markdown and --merge read.

json result_json(const CandidateResult& r) {
  return {{"candidate", r.candidate.str()},
          {"backend", r.candidate.backend},
          {"status", to_string(r.status)},
          {"verdict", kVerdictNames[int(verdict_of(r))]},
          {"reason", reason_of(r)},
          {"error", r.error},
          {"compile_ms", r.compile_ms},
          {"compile_cache_hit", r.compile_cache_hit},
          {"registers", r.registers},
          {"spill_bytes", r.spill_bytes},
          {"smem_bytes", r.smem_bytes},
          {"us_median", r.us_median}};
}

json pairs_json(const std::vector<std::pair<std::string, std::string>>& v) {
  json a = json::array();
  for (const auto& [b, why] : v) a.push_back({{"backend", b}, {"reason", why}});
  return a;
}

json class_json(const ClassRun& run) {
  json counts;
  for (const char* v : kVerdictNames) counts[v] = 0;
  json results = json::array();
  for (const auto& r : run.results) {
    results.push_back(result_json(r));
    counts[kVerdictNames[int(verdict_of(r))]] = counts[kVerdictNames[int(verdict_of(r))]].get<int>() + 1;
  }
  if (!run.error.empty()) counts["failed"] = counts["failed"].get<int>() + 1;
  return {{"index", run.index},
          {"name", run.cls.name},
          {"problem", run.cls.problem.str()},
          {"why", run.cls.why},
          {"candidates", run.results.size()},
          {"counts", counts},
          {"backend_refusals", pairs_json(run.backend_refusals)},
          {"not_swept", pairs_json(run.not_swept)},
          {"error", run.error},
          {"wall_s", run.wall_s},
          {"results", results}};
}

bool class_passes(const json& c) {
  const json& n = c["counts"];
  return n["crashed"] == 0 && n["wrong"] == 0 && n["oob"] == 0 && n["failed"] == 0;
}

// ---------------------------------------------------------------------------------------------------------------
// Console

void print_header() {
  std::printf("%-28s %10s %7s %7s %7s %6s %4s %6s %7s\n", "class", "candidates", "passed", "refused", "crashed",
              "wrong", "oob", "failed", "wall_s");
}

void print_class(const json& c, bool verbose) {
  const json& n = c["counts"];
  std::printf("%-28s %10d %7d %7d %7d %6d %4d %6d %7.1f\n", c["name"].get<std::string>().c_str(),
              c["candidates"].get<int>(), n["passed"].get<int>(), n["refused"].get<int>(), n["crashed"].get<int>(),
              n["wrong"].get<int>(), n["oob"].get<int>(), n["failed"].get<int>(), c["wall_s"].get<double>());
  if (!c["error"].get<std::string>().empty())
    std::printf("    FAILED  class: %s\n", c["error"].get<std::string>().c_str());
  std::map<std::string, int> refusals;
  for (const auto& r : c["results"]) {
    const std::string v = r["verdict"];
    const std::string line = r["candidate"].get<std::string>() + ": " + first_line(r["reason"].get<std::string>());
    if (v == "refused") {
      if (verbose) std::printf("    refused %s (%s)\n", line.c_str(), r["status"].get<std::string>().c_str());
      ++refusals[r["backend"].get<std::string>() + " " + r["status"].get<std::string>() + ": " +
                 first_line(r["reason"].get<std::string>())];
    } else if (v != "passed") {
      std::printf("    %-7s %s [%s]\n", v.c_str(), line.c_str(), r["status"].get<std::string>().c_str());
    }
  }
  for (const auto& b : c["backend_refusals"])
    std::printf("    refused whole class: %s: %s\n", b["backend"].get<std::string>().c_str(),
                first_line(b["reason"].get<std::string>()).c_str());
  for (const auto& b : c["not_swept"])
    std::printf("    not swept: %s: %s\n", b["backend"].get<std::string>().c_str(),
                b["reason"].get<std::string>().c_str());
  if (!verbose)
    for (const auto& [why, count] : refusals) std::printf("    refused %4dx %s\n", count, why.c_str());
  std::fflush(stdout);
}

// ---------------------------------------------------------------------------------------------------------------
// Markdown (docs/TESTING.md's "Last sweep")

std::string md_escape(std::string s) {
  std::string out;
  for (char ch : first_line(s)) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
  if (out.size() > 240) out = out.substr(0, 237) + "...";
  return out;
}

std::string markdown(const json& doc) {
  const json& m = doc["meta"];
  std::ostringstream md;
  md << "Sweep of " << m["started_at"].get<std::string>() << " on " << m["gpu"].get<std::string>() << " ("
     << m["arch"].get<std::string>() << ", " << m["sm_count"].get<int>() << " SMs), driver "
     << m["driver"].get<std::string>() << ", CUDA toolkit " << m["cuda_toolkit"].get<std::string>() << ", NVRTC "
     << m["nvrtc"].get<std::string>() << ", cuBLASLt " << m["cublaslt"].get<std::string>() << ", gemmtune "
     << m["gemmtune"].get<std::string>() << ".\n\n";
  if (m.value("mode", "verify") == "compile-only")
    md << "- **Compile-only**: every candidate was compiled, none was run or verified; passed = compiled clean.\n";
  md << "- Backends swept: " << join(m["backends"].get<std::vector<std::string>>(), ", ") << ".\n";
  for (const auto& u : m["unavailable"])
    md << "- Not swept, unavailable on the host: " << u["backend"].get<std::string>() << " ("
       << md_escape(u["reason"].get<std::string>()) << ").\n";
  const auto swept = m["backends"].get<std::vector<std::string>>();
  if (std::find(swept.begin(), swept.end(), "cutlass") != swept.end())
    md << "- CUTLASS swept on " << m["cutlass_classes"].get<std::string>() << "; the other classes ran without it.\n";
  md << "- Shards: " << m["shards"].get<std::string>()
     << (m["filter"].get<std::string>().empty() ? "" : "; filter `" + m["filter"].get<std::string>() + "`")
     << (m.value("mode", "verify") == "compile-only"
             ? ". Every candidate of each backend (top_k 0), compiled.\n"
             : ". Every candidate of each backend (top_k 0), verified in a worker process, timing cut short.\n");
  md << "- Verdicts: passed (verified); refused (the backend rejects the candidate for the problem, or it spills, "
        "with its reason); crashed (crashed or timed out); wrong (wrong values, NaN outputs included); oob (wrote "
        "outside D's elements); failed (compile, load or launch error, skipped, or a refusal without a reason). "
        "\"backends refusing\" lists the backends that take no candidate of the class.\n\n";

  md << "| class | problem | candidates | passed | refused | crashed | wrong | oob | failed | backends refusing |\n";
  md << "|---|---|--:|--:|--:|--:|--:|--:|--:|---|\n";
  long tot[kVerdicts] = {};
  long cands = 0;
  for (const auto& c : doc["classes"]) {
    const json& n = c["counts"];
    std::vector<std::string> refusing;
    for (const auto& b : c["backend_refusals"]) refusing.push_back(b["backend"]);
    for (const auto& b : c["not_swept"]) refusing.push_back(b["backend"].get<std::string>() + " (not swept)");
    md << "| " << c["name"].get<std::string>() << " | `" << md_escape(c["problem"]) << "` | "
       << c["candidates"].get<int>();
    for (int v = 0; v < kVerdicts; ++v) {
      md << " | " << n[kVerdictNames[v]].get<int>();
      tot[v] += n[kVerdictNames[v]].get<int>();
    }
    cands += c["candidates"].get<int>();
    md << " | " << join(refusing, ", ") << " |\n";
  }
  md << "| **total** | " << doc["classes"].size() << " classes | " << cands;
  for (int v = 0; v < kVerdicts; ++v) md << " | " << tot[v];
  md << " | |\n\n";

  // Everything that is not passed or refused, in full.
  std::vector<std::string> bad;
  for (const auto& c : doc["classes"]) {
    if (!c["error"].get<std::string>().empty())
      bad.push_back("- " + c["name"].get<std::string>() + ": the class failed: " + md_escape(c["error"]));
    for (const auto& r : c["results"]) {
      const std::string v = r["verdict"];
      if (v == "passed" || v == "refused") continue;
      bad.push_back("- " + c["name"].get<std::string>() + " `" + r["candidate"].get<std::string>() + "`: " + v + " (" +
                    r["status"].get<std::string>() + "): " + md_escape(r["reason"]));
    }
  }
  md << "Not passing: " << (bad.empty() ? "none." : std::to_string(bad.size()) + ".") << "\n\n";
  for (const auto& b : bad) md << b << "\n";
  if (!bad.empty()) md << "\n";

  // Refusals over the whole sweep, by backend and reason.
  std::map<std::string, long> refusals;
  for (const auto& c : doc["classes"]) {
    for (const auto& r : c["results"])
      if (r["verdict"] == "refused")
        ++refusals[r["backend"].get<std::string>() + "|" + r["status"].get<std::string>() + ": " +
                   md_escape(r["reason"])];
    for (const auto& b : c["backend_refusals"])
      ++refusals[b["backend"].get<std::string>() + "|whole class: " + md_escape(b["reason"])];
  }
  if (!refusals.empty()) {
    std::vector<std::pair<long, std::string>> sorted;
    for (const auto& [k, n] : refusals) sorted.emplace_back(n, k);
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
      return a.first > b.first || (a.first == b.first && a.second < b.second);
    });
    constexpr size_t kShown = 40;
    md << "<details><summary>Refusal reasons (" << sorted.size() << " distinct)</summary>\n\n";
    md << "| backend | count | reason |\n|---|--:|---|\n";
    for (size_t i = 0; i < std::min(sorted.size(), kShown); ++i) {
      const std::string& k = sorted[i].second;
      md << "| " << k.substr(0, k.find('|')) << " | " << sorted[i].first << " | " << k.substr(k.find('|') + 1)
         << " |\n";
    }
    if (sorted.size() > kShown) md << "\n" << sorted.size() - kShown << " more in the JSON.\n";
    md << "\n</details>\n";
  }
  return md.str();
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  f.close();
  if (!f) {
    std::fprintf(stderr, "error: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

bool write_outputs(const Options& o, const json& doc) {
  bool ok = true;
  if (!o.json_path.empty()) ok &= write_file(o.json_path, doc.dump(1) + "\n");
  if (!o.markdown_path.empty()) ok &= write_file(o.markdown_path, markdown(doc));
  return ok;
}

int exit_status(const json& doc) {
  for (const auto& c : doc["classes"])
    if (!class_passes(c)) return 1;
  return 0;
}

// ---------------------------------------------------------------------------------------------------------------

int run_merge(const Options& o) {
  json doc;
  std::vector<std::string> shards;
  for (const auto& path : o.merge) {
    std::ifstream f(path);
    json part;
    try {
      if (!f) throw std::runtime_error("cannot open");
      part = json::parse(f);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s: %s\n", path.c_str(), e.what());
      return 2;
    }
    if (doc.is_null()) {
      doc = part;
      doc["classes"] = json::array();
    }
    shards.push_back(part["meta"]["shards"].get<std::string>());
    // The earliest start names the sweep.
    if (part["meta"]["started_at"].get<std::string>() < doc["meta"]["started_at"].get<std::string>())
      doc["meta"]["started_at"] = part["meta"]["started_at"];
    for (const auto& c : part["classes"]) doc["classes"].push_back(c);
  }
  std::sort(doc["classes"].begin(), doc["classes"].end(),
            [](const json& a, const json& b) { return a["index"].get<size_t>() < b["index"].get<size_t>(); });
  doc["meta"]["shards"] = join(shards, ", ");
  print_header();
  for (const auto& c : doc["classes"]) print_class(c, o.verbose);
  if (!write_outputs(o, doc)) return 1;
  return exit_status(doc);
}

int run_sweep(const Options& o) {
  // No GPU: say why and stop before anything is compiled (--compile-only: the assumed H100 stands in).
  DeviceInfo dev;
  try {
    dev = o.compile_only && !gpu_available() ? DeviceInfo::assumed_sm90() : current_device();
  } catch (const NoGpuError& e) {
    std::fprintf(stderr, "error: no GPU: %s\n", e.what());
    return 3;
  }
  // Isolation is the point: without the worker the tuner would verify in this process, and the first kernel that
  // takes the context down would end the sweep.
  if (!o.compile_only && !find_worker()) {
    std::fprintf(stderr, "error: gemmtune-worker not found (set GEMMTUNE_WORKER or build it next to the library)\n");
    return 1;
  }
  const auto classes = selected_classes(o);
  const BackendSet bs = backend_set(o);
  json doc;
  json& m = doc["meta"];
  m["started_at"] = utc_now();
  m["mode"] = o.compile_only ? "compile-only" : "verify";
  m["gpu"] = dev.real ? dev.name : "no GPU (compile-only; " + dev.name + ")";
  m["arch"] = dev.arch();
  m["sm_count"] = dev.sm_count;
  m["driver"] = cuda_version_str(dev.driver_version);
  m["cuda_toolkit"] = cuda_version_str(CUDA_VERSION);
  m["nvrtc"] = [] {
    try {
      return jit::nvrtc_version();
    } catch (const std::exception&) {
      return std::string("unknown");
    }
  }();
  m["cublaslt"] = cublaslt_version();
  m["gemmtune"] = version();
  m["backends"] = bs.names;
  m["unavailable"] = pairs_json(bs.unavailable);
  m["cutlass_classes"] = cutlass_scope(o);
  m["shards"] = std::to_string(o.shard) + "/" + std::to_string(o.shards);
  m["filter"] = o.filter;
  m["threads"] = o.threads;
  doc["classes"] = json::array();

  std::printf("sweep: %zu classes, backends %s, on %s (driver %s)\n", classes.size(), join(bs.names, ",").c_str(),
              dev.name.c_str(), m["driver"].get<std::string>().c_str());
  for (const auto& [name, why] : bs.unavailable)
    std::printf("not swept (unavailable): %s: %s\n", name.c_str(), why.c_str());
  if (o.prebuild && !o.compile_only) prebuild(o, classes, bs.names, dev);
  print_header();
  int status = 0;
  for (const auto& [idx, c] : classes) {
    ClassRun run;
    try {
      run = o.compile_only ? compile_class(o, idx, c, bs.names, dev) : run_class(o, idx, c, bs.names);
    } catch (const NoGpuError& e) {
      std::fprintf(stderr, "error: no GPU: %s\n", e.what());
      return 3;
    }
    json cj = class_json(run);
    print_class(cj, o.verbose);
    if (!class_passes(cj)) status = 1;
    doc["classes"].push_back(std::move(cj));
    // Written after every class: a sweep cut short by its time limit still leaves what it did.
    write_outputs(o, doc);
  }
  m["finished_at"] = utc_now();
  if (!write_outputs(o, doc)) return 1;
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_args(argc, argv);
  try {
    if (o.merging) return run_merge(o);
    if (o.list) return run_list(o);
    return run_sweep(o);
  } catch (const NoGpuError& e) {
    std::fprintf(stderr, "error: no GPU: %s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
