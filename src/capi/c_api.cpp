// The C ABI (gemmtune/c_api.h): JSON in and out on the cold paths, pointers on the launch path, and every exception
// turned into a status plus a per-thread message.
#include "gemmtune/c_api.h"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "core/input.h"
#include "cuda/driver.h"
#include "gemmtune/bench.h"
#include "gemmtune/gemm.h"
#include "backends/backend.h"
#include "capi/call_plan.h"
#include "tuner/result_cache.h"
#include "tuner/serialize.h"

using nlohmann::json;

struct gt_gemm {
  gemmtune::Gemm gemm;
};

namespace gemmtune {
namespace {

thread_local std::string t_error;
thread_local int t_cuda_code = 0;
thread_local bool t_cuda_sticky = false;

int fail(gt_status s, const char* what) {
  t_error = what ? what : "unknown error";
  return s;
}

// Runs `f`, mapping what it throws onto a status. InputError and nlohmann's errors are the caller's input.
template <class F>
int guarded(F&& f) noexcept {
  try {
    f();
    return GT_OK;
  } catch (const detail::InputError& e) {
    return fail(GT_INVALID, e.what());
  } catch (const NoGpuError& e) {
    return fail(GT_NO_GPU, e.what());
  } catch (const CudaError& e) {
    t_cuda_code = e.code, t_cuda_sticky = e.sticky;
    return fail(GT_CUDA_ERROR, e.what());
  } catch (const Error& e) {
    return fail(GT_ERROR, e.what());
  } catch (const json::exception& e) {
    return fail(GT_INVALID, e.what());
  } catch (const std::bad_alloc&) {
    return fail(GT_ERROR, "out of host memory");
  } catch (const std::exception& e) {
    return fail(GT_ERROR, e.what());
  } catch (...) {
    return fail(GT_ERROR, "unknown exception");
  }
}

void put(char** out, const std::string& s) {
  if (!out) throw detail::InputError("the output pointer is null");
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (!p) throw std::bad_alloc();
  std::memcpy(p, s.c_str(), s.size() + 1);
  *out = p;
}
// Text from compilers and drivers may hold bytes that are not UTF-8: replaced, never an exception.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }
void put(char** out, const json& j) { put(out, dump(j)); }

json parse(const char* text, const char* what) {
  if (!text) throw detail::InputError(std::string(what) + " is null");
  return detail::parse_json(text, what);
}

// The problem as sent, resolved; `checked` also applies Problem::check() (an InputError naming the problem).
Problem problem_of(const char* text, bool checked = true) {
  // Everything wrong with the document is the caller's input, including an epilogue the grammar refuses.
  Problem p;
  try {
    p = problem_from_json(parse(text, "problem JSON"));
  } catch (const detail::InputError&) {
    throw;
  } catch (const Error& e) {
    throw detail::InputError(e.what());
  }
  p.resolve();
  if (checked) {
    const std::string why = p.check();
    if (!why.empty()) throw detail::InputError(why);
  }
  return p;
}

// A backend name from the caller: an unknown one is their input (as the CLI's --backends), listing the known ones.
void check_backend_name(const std::string& name, const std::string& where) {
  if (find_backend(name)) return;
  std::string known;
  for (const auto& b : all_backends()) known += (known.empty() ? "" : ", ") + b->name();
  throw detail::InputError(where + ": unknown backend '" + name + "' (known: " + known + ")");
}

// A "backend:config" line from the caller; a malformed one, or one of an unknown backend, is their input.
Candidate candidate_of(const std::string& line) {
  Candidate c;
  try {
    c = Candidate::parse(line);
  } catch (const Error& e) {
    throw detail::InputError(e.what());
  }
  check_backend_name(c.backend, "candidate '" + line + "'");
  return c;
}

json options_of(const char* text) { return text && *text ? parse(text, "options JSON") : json::object(); }

std::vector<std::string> strings(const json& j, const char* key) {
  std::vector<std::string> out;
  if (!j.contains(key)) return out;
  const json& v = j.at(key);
  if (!v.is_array()) throw detail::InputError(std::string("options: \"") + key + "\" must be a list of strings");
  for (const json& s : v) {
    if (!s.is_string()) throw detail::InputError(std::string("options: \"") + key + "\" must be a list of strings");
    out.push_back(s.get<std::string>());
  }
  return out;
}

// The "backends" option: each name known.
std::vector<std::string> backend_names(const json& j) {
  std::vector<std::string> out = strings(j, "backends");
  for (const std::string& name : out) check_backend_name(name, "options: \"backends\"");
  return out;
}

DeviceInfo device_of(const detail::Fields& f) {
  if (f.has("assume_sms")) {
    const int64_t sms = f.integer("assume_sms");
    if (sms < 1 || sms > detail::kMaxAssumedSms)
      throw detail::InputError("options: \"assume_sms\" must be in [1, " + std::to_string(detail::kMaxAssumedSms) +
                               "] (got " + std::to_string(sms) + ")");
    return DeviceInfo::assumed_sm90(int(sms));
  }
  return gpu_available() ? current_device() : DeviceInfo::assumed_sm90();
}

int int_in(const detail::Fields& f, const char* key, int fallback, int lo, int hi) {
  const int64_t v = f.integer(key, fallback);
  if (v < lo || v > hi)
    throw detail::InputError("options: \"" + std::string(key) + "\" must be in [" + std::to_string(lo) + ", " +
                             std::to_string(hi) + "] (got " + std::to_string(v) + ")");
  return int(v);
}

double positive(const detail::Fields& f, const char* key, double fallback, bool zero_ok) {
  const double v = f.number(key, fallback);
  if (!(v > 0 || (zero_ok && v == 0)) || v > detail::kMaxTimeValue)
    throw detail::InputError("options: \"" + std::string(key) + "\" must be " + (zero_ok ? ">= 0" : "> 0") +
                             " and at most 1e9");
  return v;
}

// The C callback as the library's progress function: each event as JSON (serialize.h).
std::function<void(const ProgressEvent&)> progress_of(gt_progress_fn progress, void* user) {
  if (!progress) return nullptr;
  return [progress, user](const ProgressEvent& e) { progress(dump(to_json(e)).c_str(), user); };
}

TuneOptions tune_options(const json& j, gt_progress_fn progress, void* user) {
  const detail::Fields f(j, "tune options");
  f.only({"backends", "top_k", "only", "use_cache", "force", "isolation", "compile_threads", "min_time_ms",
          "min_iters", "warmup_iters", "settle_ms", "max_candidate_s", "interleave", "tolerance", "wait_compile"});
  TuneOptions o;
  o.backends = backend_names(j);
  o.top_k = int_in(f, "top_k", o.top_k, 0, detail::kMaxTopK);
  for (const std::string& s : strings(j, "only")) o.only.push_back(candidate_of(s));
  o.use_cache = f.boolean("use_cache", o.use_cache);
  o.force = f.boolean("force", o.force);
  const std::string iso = f.string("isolation", "process");
  if (iso == "process")
    o.isolation = Isolation::process;
  else if (iso == "in_process")
    o.isolation = Isolation::in_process;
  else
    throw detail::InputError("options: \"isolation\" must be \"process\" or \"in_process\" (got \"" + iso + "\")");
  o.compile_threads = int_in(f, "compile_threads", o.compile_threads, 0, detail::kMaxThreads);
  o.min_time_ms = positive(f, "min_time_ms", o.min_time_ms, true);
  o.min_iters = int_in(f, "min_iters", o.min_iters, 1, detail::kMaxIters);
  o.warmup_iters = int_in(f, "warmup_iters", o.warmup_iters, 0, detail::kMaxIters);
  o.settle_ms = positive(f, "settle_ms", o.settle_ms, true);
  o.max_candidate_s = positive(f, "max_candidate_s", o.max_candidate_s, false);
  o.interleave = f.boolean("interleave", o.interleave);
  o.tolerance = positive(f, "tolerance", o.tolerance, false);
  o.wait_compile = f.boolean("wait_compile", o.wait_compile);
  o.progress = progress_of(progress, user);
  return o;
}

json report_json(const TuneReport& r) {
  json results = json::array();
  for (const CandidateResult& c : r.results) results.push_back(to_json(c));
  return {{"problem", to_json(r.problem)}, {"device", to_json(r.device)}, {"results", results},
          {"winner", r.winner ? json(r.winner->str()) : json(nullptr)}, {"cache_hit", r.cache_hit},
          {"wall_ms", r.wall_ms}, {"cache_key", r.cache_key}};
}

const char* epi_kind_name(EpiOpKind k) {
  switch (k) {
    case EpiOpKind::bias_col: return "bias_col";
    case EpiOpKind::bias_row: return "bias_row";
    case EpiOpKind::row_scale: return "row_scale";
    case EpiOpKind::col_scale: return "col_scale";
    default: return nullptr;
  }
}

}  // namespace
}  // namespace gemmtune

using namespace gemmtune;

extern "C" {

const char* gt_version(void) {
  static const std::string v = version();
  return v.c_str();
}

const char* gt_last_error(void) { return t_error.c_str(); }

int gt_last_cuda_error(int* sticky) {
  if (sticky) *sticky = t_cuda_sticky ? 1 : 0;
  return t_cuda_code;
}

void gt_free(char* s) { std::free(s); }

int gt_use_device(int ordinal) {
  return guarded([&] { cuda::make_current(ordinal); });
}

int gt_device(char** out_json) {
  return guarded([&] {
    const bool real = gpu_available();
    put(out_json, json{{"available", real}, {"device", to_json(real ? current_device() : DeviceInfo::assumed_sm90())}});
  });
}

int gt_problem_info(const char* problem_json, char** out_json) {
  return guarded([&] {
    const Problem p = problem_of(problem_json, false);
    json out = {{"problem", to_json(p)}, {"check", p.check()}};
    if (out["check"].get<std::string>().empty()) {
      json lens = json::object();
      for (EpiOpKind k : {EpiOpKind::bias_col, EpiOpKind::bias_row, EpiOpKind::row_scale, EpiOpKind::col_scale})
        if (p.epilogue.has(k)) lens[epi_kind_name(k)] = p.epilogue_vector_len(k);
      out.update({{"key", p.key()}, {"str", p.str()}, {"flops", p.flops()}, {"min_bytes", p.min_bytes()},
                  {"n_out", p.n_out()}, {"scale_len_a", p.scale_len(Which::A)}, {"scale_len_b", p.scale_len(Which::B)},
                  {"epilogue_vector_len", lens}});
    }
    put(out_json, out);
  });
}

int gt_call_plan(const char* call_json, char** out_json) {
  return guarded([&] { put(out_json, plan_call(parse(call_json, "call JSON"))); });
}

int gt_list(const char* problem_json, const char* options_json, char** out_json) {
  return guarded([&] {
    const Problem p = problem_of(problem_json);
    const json o = options_of(options_json);
    const detail::Fields f(o, "list options");
    f.only({"backends", "top_k", "assume_sms"});
    json out = json::array();
    for (const Candidate& c : list_candidates(p, device_of(f), backend_names(o), int_in(f, "top_k", 0, 0, detail::kMaxTopK)))
      out.push_back(c.str());
    put(out_json, out);
  });
}

int gt_compile(const char* problem_json, const char* options_json, gt_progress_fn progress, void* user,
               char** out_json) {
  return guarded([&] {
    const Problem p = problem_of(problem_json);
    const json o = options_of(options_json);
    const detail::Fields f(o, "compile options");
    f.only({"backends", "only", "top_k", "threads", "assume_sms"});
    CompileOptions co;
    co.backends = backend_names(o);
    if (f.has("only")) co.only = candidate_of(f.string("only"));
    co.top_k = int_in(f, "top_k", co.top_k, 0, detail::kMaxTopK);
    co.threads = int_in(f, "threads", 0, 0, detail::kMaxThreads);
    co.progress = progress_of(progress, user);
    const CompileReport rep = compile_candidates(p, device_of(f), co);
    json cands = json::array();
    for (const CompiledCandidate& c : rep.candidates) {
      json j = to_json(c.result);
      j["compiled"] = c.compiled;
      j["wall_ms"] = c.wall_ms;
      j["log"] = c.log;
      cands.push_back(j);
    }
    put(out_json, json{{"problem", to_json(rep.problem)}, {"device", to_json(rep.device)}, {"candidates", cands},
                       {"threads", rep.threads}, {"wall_ms", rep.wall_ms}});
  });
}

int gt_tune(const char* problem_json, const char* options_json, gt_progress_fn progress, void* user,
            char** out_json) {
  return guarded([&] {
    const Problem p = problem_of(problem_json);
    Tuner t(tune_options(options_of(options_json), progress, user));
    put(out_json, report_json(t.tune(p)));
  });
}

int gt_select(const char* problem_json, const char* options_json, gt_progress_fn progress, void* user,
              gt_gemm** out) {
  return guarded([&] {
    if (!out) throw detail::InputError("the output pointer is null");
    const Problem p = problem_of(problem_json);
    Tuner t(tune_options(options_of(options_json), progress, user));
    *out = new gt_gemm{t.select(p)};
  });
}

int gt_load(const char* problem_json, const char* candidate, gt_gemm** out) {
  return guarded([&] {
    if (!out) throw detail::InputError("the output pointer is null");
    if (!candidate) throw detail::InputError("the candidate is null");
    const Problem p = problem_of(problem_json);
    const Candidate c = candidate_of(candidate);
    // The caller's input is judged before the GPU is needed: a config its backend refuses for this problem is
    // GT_INVALID with the reason on any machine, not GT_NO_GPU on one without a GPU.
    const DeviceInfo dev = gpu_available() ? current_device() : DeviceInfo::assumed_sm90();
    std::string why;
    try {
      why = find_backend(c.backend)->validate(resolve(p), c, dev);
    } catch (const NoGpuError&) {
      // a backend that needs the GPU to judge (cuBLASLt): Tuner::load says there is none
    }
    if (!why.empty()) throw detail::InputError("candidate '" + c.str() + "': " + why);
    *out = new gt_gemm{Tuner::load(p, c)};
  });
}

int gt_bench(const char* problem_json, const char* options_json, gt_progress_fn progress, void* user,
             char** out_json) {
  return guarded([&] {
    const Problem p = problem_of(problem_json);
    const ShapeBench b = bench_problem(p, tune_options(options_of(options_json), progress, user));
    json cmp = json::array();
    for (const CandidateResult& r : b.compare) cmp.push_back(to_json(r));
    const double s = b.speedup();
    put(out_json, json{{"tune", report_json(b.tune)}, {"reference", b.reference.str()}, {"compare", cmp},
                       {"status", b.status}, {"speedup", std::isfinite(s) ? json(s) : json(nullptr)}});
  });
}

int gt_gemm_info(const gt_gemm* g, char** out_json) {
  return guarded([&] {
    if (!g) throw detail::InputError("the Gemm is null");
    put(out_json, json{{"candidate", g->gemm.candidate().str()}, {"problem", to_json(g->gemm.problem())}});
  });
}

int gt_gemm_run(const gt_gemm* g, const void* a, const void* b, const void* c, void* d, const void* bias,
                const void* residual, const void* row_scale, const void* col_scale, const float* scale_a,
                const float* scale_b, const float* scale_d, float* amax, void* stream) {
  return guarded([&] {
    if (!g) throw detail::InputError("the Gemm is null");
    if (const Problem& p = g->gemm.problem(); p.grouped())
      throw detail::InputError("gt_gemm_run: the problem is grouped (grouping=" +
                               std::string(grouping_name(p.grouping)) + "): call gt_gemm_run_args with group_rows");
    GemmArgs args{a, b, c, d, bias, residual, row_scale, col_scale, scale_a, scale_b, scale_d, amax};
    g->gemm.run(args, static_cast<Stream>(stream));
  });
}

int gt_gemm_run_args(const gt_gemm* g, const gt_gemm_args* in, void* stream) {
  return guarded([&] {
    if (!in) throw detail::InputError("gt_gemm_run_args: the arguments are null");
    const size_t size = in->size;
    const size_t min_size = offsetof(gt_gemm_args, d) + sizeof(in->d);
    if (size < min_size)
      throw detail::InputError("gt_gemm_run_args: args->size=" + std::to_string(size) + " is too small (set it to " +
                               "sizeof(gt_gemm_args), " + std::to_string(sizeof(gt_gemm_args)) + " here)");
    // A newer caller's fields that this library does not know must be unset: ignoring a set one would run a
    // different GEMM than the caller asked for.
    const auto* bytes = reinterpret_cast<const unsigned char*>(in);
    for (size_t i = sizeof(gt_gemm_args); i < size; ++i)
      if (bytes[i] != 0)
        throw detail::InputError("gt_gemm_run_args: args->size=" + std::to_string(size) + " has fields this library (" +
                                 std::to_string(sizeof(gt_gemm_args)) + " bytes) does not know set");
    // Every field after `size` is one pointer: copying whole pointers only, a shorter (older) struct is never read
    // past its size and a field it does not cover stays null.
    static_assert(offsetof(gt_gemm_args, a) == sizeof(void*) && sizeof(gt_gemm_args) % sizeof(void*) == 0);
    gt_gemm_args a{};
    std::memcpy(&a, in, std::min(size, sizeof(gt_gemm_args)) / sizeof(void*) * sizeof(void*));
    if (!g) throw detail::InputError("the Gemm is null");
    const GemmArgs args{a.a,       a.b,       a.c,       a.d,       a.bias, a.residual, a.row_scale,
                        a.col_scale, a.scale_a, a.scale_b, a.scale_d, a.amax, a.group_rows};
    g->gemm.run(args, static_cast<Stream>(stream));
  });
}

void gt_gemm_destroy(gt_gemm* g) { delete g; }

int gt_cache(const char* command, const char* arg, char** out_json) {
  return guarded([&] {
    const std::string cmd = command ? command : "";
    const ResultCache cache;
    const auto need_file = [&] {
      if (!arg || !*arg) throw detail::InputError("cache " + cmd + " needs a file name");
      return std::string(arg);
    };
    if (cmd == "dir") {
      put(out_json, json{{"dir", cache.dir()}});
    } else if (cmd == "ls") {
      json arr = json::array();
      for (const CacheEntry& e : cache.list()) arr.push_back({{"key", e.key}, {"record", e.record}});
      put(out_json, arr);
    } else if (cmd == "get") {
      if (!arg || !*arg) throw detail::InputError("cache get needs a key");
      const std::optional<CacheEntry> e = cache.get(arg);
      put(out_json, e ? json{{"key", e->key}, {"record", e->record}} : json(nullptr));
    } else if (cmd == "clear") {
      const ClearCount n = cache.clear();
      put(out_json, json{{"removed", n.entries}, {"removed_unreadable", n.other}});
    } else if (cmd == "export") {
      const std::string file = need_file();
      put(out_json, json{{"exported", cache.export_to(file)}, {"file", file}});
    } else if (cmd == "import") {
      put(out_json, json{{"imported", cache.import_from(need_file())}});
    } else {
      throw detail::InputError("unknown cache command '" + cmd + "' (dir, ls, get, clear, export, import)");
    }
  });
}

}  // extern "C"
