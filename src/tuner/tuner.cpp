#include "gemmtune/tuner.h"
#include "gemmtune/progress.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>

#include "backends/backend.h"
#include "core/clock.h"
#include "gemmtune/errors.h"
#include "tuner/evaluate.h"
#include "tuner/pipeline.h"
#include "tuner/result_cache.h"
#include "tuner/select.h"
#include "tuner/serialize.h"
#include "tuner/worker_client.h"

namespace gemmtune {

std::string version() { return GEMMTUNE_VERSION; }

// ---------------------------------------------------------------------------------------------------------------
struct Gemm::Impl {
  Problem problem;
  Candidate candidate;
  std::unique_ptr<Executable> exe;
};

Gemm::Gemm() = default;
Gemm::~Gemm() = default;
Gemm::Gemm(Gemm&&) noexcept = default;
Gemm& Gemm::operator=(Gemm&&) noexcept = default;
Gemm::Gemm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

void Gemm::run(const GemmArgs& args, Stream stream) const {
  if (!impl_) throw Error("Gemm::run on an empty Gemm (use Tuner::select or Tuner::load)");
  if (!args.a || !args.b || !args.d) throw Error("Gemm::run: A, B and D pointers must not be null");
  const Problem& p = impl_->problem;
  if (p.beta != 0.0f && !args.c) throw Error("Gemm::run: C is null but beta != 0");
  if (p.grouped() && !args.group_rows)
    throw Error("Gemm::run: a grouped problem (grouping=" + std::string(grouping_name(p.grouping)) + ", groups=" +
                std::to_string(p.groups) + ") needs GemmArgs::group_rows (" + std::to_string(p.groups) + " int32 " +
                (p.grouping == Grouping::contiguous ? "cumulative row ends" : "row counts") + " on the device)");
  if (p.scaling != Scaling::none) {
    if (!args.scale_b || (!args.scale_a && is_fp8(p.a.dtype)))
      throw Error("Gemm::run: scaling=" + std::string(scaling_name(p.scaling)) + " needs GemmArgs::scale_a and scale_b (" +
                  std::to_string(p.scale_len(Which::A)) + " and " + std::to_string(p.scale_len(Which::B)) +
                  " fp32 values)");
    if (is_fp8(p.d.dtype) && !args.scale_d) throw Error("Gemm::run: an e4m3 D needs GemmArgs::scale_d (one fp32)");
    if (p.amax && !args.amax) throw Error("Gemm::run: the problem has amax but GemmArgs::amax is null");
  }
  // The kernel was chosen for pointers of the problem's alignment (Operand::align): a less aligned one would fault
  // or read the wrong bytes in a vectorised or TMA kernel.
  const std::pair<Which, const void*> ptrs[] = {
      {Which::A, args.a}, {Which::B, args.b}, {Which::C, args.c}, {Which::D, args.d}};
  for (const auto& [w, ptr] : ptrs) {
    if (w == Which::C && p.beta == 0.0f) continue;
    const uintptr_t al = static_cast<uintptr_t>(p.operand(w).align);
    const uintptr_t u = reinterpret_cast<uintptr_t>(ptr);
    if (u % al != 0) {
      const uintptr_t has = u & (~u + 1);  // the largest power of two dividing the address
      const std::string name(which_name(w));
      throw Error("Gemm::run: the " + name + " pointer is " + std::to_string(has) +
                  "-byte aligned, but the problem declares align=" + std::to_string(al) + " for " + name +
                  " (Operand::align): select a Gemm for a problem with align=" + std::to_string(has) +
                  (has == 1 ? " (odd addresses are not element-aligned: not supported)" : ""));
    }
  }
  impl_->exe->launch(args, stream);
}
const Candidate& Gemm::candidate() const {
  if (!impl_) throw Error("empty Gemm");
  return impl_->candidate;
}
const Problem& Gemm::problem() const {
  if (!impl_) throw Error("empty Gemm");
  return impl_->problem;
}

// ---------------------------------------------------------------------------------------------------------------
namespace {

// The problem, the device, this library's version and each enabled backend's fingerprint (Backend::fingerprint:
// the versions its kernels depend on), in name order.
std::string cache_key(const Problem& p, const DeviceInfo& dev, const std::vector<std::shared_ptr<Backend>>& backends) {
  std::set<std::string> fps;
  for (const auto& b : backends) fps.insert(b->fingerprint());
  std::string bs;
  for (const auto& f : fps) bs += (bs.empty() ? "" : ",") + f;
  return p.key() + "|" + dev.key() + "|gemmtune" + version() + "|backends=" + bs;
}

void progress(const TuneOptions& o, const ProgressEvent& e) {
  if (o.progress) o.progress(e);
}
void warn(const TuneOptions& o, const std::string& text) { progress(o, {.kind = ProgressKind::warning, .text = text}); }

// A cached record that no longer stands (not an error: the tune runs again).
struct StaleEntry {
  std::string why;
};

// "" when the cached record's skipped candidates (those a tune without wait_compile left out as not compiled yet)
// leave its winner standing: none were skipped, or none of them is compiled now and this tune does not wait for
// them. Else why the record is stale.
std::string stale_skipped(const nlohmann::json& rec, const ResolvedProblem& p, const DeviceInfo& dev,
                          const std::vector<std::shared_ptr<Backend>>& backends, bool wait_compile) {
  auto it = rec.find("skipped");
  if (it == rec.end() || !it->is_array() || it->empty()) return "";
  if (wait_compile)
    return "it skipped " + std::to_string(it->size()) + " candidates not compiled then, and this tune waits for them";
  for (const auto& s : *it) {
    if (!s.is_string()) continue;
    try {
      const Candidate c = Candidate::parse(s.get<std::string>());
      for (const auto& b : backends)
        if (b->name() == c.backend && b->unavailable().empty() &&
            b->is_compiled(p, *b->analyze(p), c, *b->parse(c), dev))
          return c.str() + ", skipped as not compiled then, is compiled now";
    } catch (const Error&) {
      // A name this version does not parse: nothing of it can have been compiled.
    }
  }
  return "";
}

// Pending candidates of an explicit list; an unknown backend is an error, as for TuneOptions::backends.
std::vector<PreparedCandidate> prepared_list(const std::vector<Candidate>& cs) {
  std::vector<PreparedCandidate> out;
  for (const Candidate& c : cs) {
    out.push_back(make_prepared(c));
    if (!out.back().backend) enabled_backends({c.backend});  // throws the "unknown backend" message
  }
  return out;
}

std::vector<CandidateResult> results_of(const std::vector<PreparedCandidate>& cands) {
  std::vector<CandidateResult> out;
  for (const auto& c : cands) out.push_back(c.result);
  return out;
}

// Times the candidates again side by side, as the first timing does with TuneOptions::interleave (the same
// evaluate(): verification, the clocks settled, interleaved rounds), isolated as the options say.
void time_interleaved(const ResolvedProblem& p, std::vector<PreparedCandidate>& cands, const TuneOptions& o) {
  TuneOptions so = o;
  so.interleave = true;
  evaluate_candidates(p, cands, so);
}

// The kRunoffMin fastest and the contenders within `kRunoffBand` of the kRunoffMin-th fastest (at most kRunoffMax) are
// timed again side by side, interleaved on the same buffers, and their numbers are replaced by that runoff's: a
// second, longer look at the close ones (first timings and runoff numbers differed by 0.9% median, 3.6% at most on
// the H200). With TuneOptions::interleave off the first timings were taken one after another, each in another power
// state of the GPU (up to 15% off); then an explicit list of candidates (several --config) is timed side by side
// whole here. With it on, such a list was timed side by side whole already: no runoff. The runoff verifies them again
// and is isolated like the first timings: a candidate that fails there (a crash, a wrong result on other inputs) is
// out, with that failure as its result; when the runoff itself cannot run, the first timings stand. Returns the
// indices of the candidates it re-timed (empty when none ran): the winner is picked among them.
std::vector<size_t> runoff(const ResolvedProblem& p, std::vector<PreparedCandidate>& cands, const TuneOptions& o) {
  const bool whole_list = o.only.size() > 1;
  if (whole_list && o.interleave) return {};
  const std::vector<size_t> top = runoff_members(results_of(cands), whole_list);
  if (top.empty()) return {};
  std::vector<PreparedCandidate> rr;
  for (size_t i : top) {
    rr.push_back(cands[i]);  // shares the compiled artifact
    rr.back().result.status = Status::pending;
  }
  TuneOptions ro = o;
  ro.progress = nullptr;  // its lines are the summary below
  try {
    time_interleaved(p, rr, ro);
  } catch (const std::exception& e) {
    warn(o, std::string("runoff failed, keeping the first timings (") + e.what() + ")");
    return {};
  }
  progress(o, {.kind = ProgressKind::runoff, .count = top.size()});
  std::vector<size_t> raced;
  for (size_t j = 0; j < top.size(); ++j) {
    const CandidateResult& t = rr[j].result;
    CandidateResult& r = cands[top[j]].result;
    if (t.status != Status::ok) {
      r.status = t.status, r.reason = "in the runoff: " + t.reason;
      progress(o, {.kind = ProgressKind::runoff_result, .result = r});
      continue;
    }
    raced.push_back(top[j]);
    r.us_median = t.us_median, r.us_min = t.us_min, r.us_max = t.us_max;
    r.timed_iters = t.timed_iters, r.tflops = t.tflops, r.gbps = t.gbps;
    progress(o, {.kind = ProgressKind::runoff_result, .result = r});
  }
  return raced;
}

}  // namespace

std::vector<size_t> runoff_members(const std::vector<CandidateResult>& results, bool whole_list) {
  const double kRunoffBand = whole_list ? 1e30 : 1.08;
  const size_t kRunoffMax = whole_list ? results.size() : 6;
  // The fastest few take part whatever their gap: a first timing can be optimistic for a kernel (one at a time,
  // cuBLASLt's default algorithm timed 10-18% faster back to back than interleaved on the H200), and an outlier alone
  // in the band would otherwise win on that number; the band is measured from the 4th fastest for the same reason
  // (anchored to the fastest, an optimistic outlier there left a contender out of the runoff that then lost to the
  // outlier's one-at-a-time number although it ran faster side by side).
  constexpr size_t kRunoffMin = 4;
  std::vector<size_t> ok;
  for (size_t i = 0; i < results.size(); ++i)
    if (results[i].status == Status::ok) ok.push_back(i);
  std::sort(ok.begin(), ok.end(), [&](size_t a, size_t b) { return results[a].us_median < results[b].us_median; });
  std::vector<size_t> top;
  if (ok.empty()) return top;
  const double ref = results[ok[std::min(kRunoffMin, ok.size()) - 1]].us_median;
  for (size_t i : ok)
    if (top.size() < kRunoffMin || (top.size() < kRunoffMax && results[i].us_median <= kRunoffBand * ref))
      top.push_back(i);
  if (top.size() < 2) top.clear();
  return top;
}

int pick_winner(const std::vector<CandidateResult>& results, const std::vector<size_t>& raced) {
  int best = -1;
  for (size_t i = 0; i < results.size(); ++i) {
    const CandidateResult& r = results[i];
    if (!raced.empty() && std::find(raced.begin(), raced.end(), i) == raced.end()) continue;
    if (r.status == Status::ok && (best < 0 || r.us_median < results[static_cast<size_t>(best)].us_median))
      best = static_cast<int>(i);
  }
  return best;
}

// ---------------------------------------------------------------------------------------------------------------
std::vector<Candidate> list_candidates(const Problem& p, const DeviceInfo& dev, const std::vector<std::string>& names,
                                       int top_k) {
  return top_candidates(enumerate_ranked(resolve(p), dev, names), top_k);
}

Tuner::Tuner(TuneOptions opts) : opts_(std::move(opts)) {}

TuneReport Tuner::tune(const Problem& p0) {
  const auto t0 = std::chrono::steady_clock::now();
  auto wall = [&] { return ms_since(t0); };
  const ResolvedProblem p = resolve(p0);
  TuneReport rep;
  rep.problem = p;
  const auto backends = enabled_backends(opts_.backends);
  rep.device = current_device();
  const DeviceInfo& dev = rep.device;
  rep.cache_key = cache_key(p, dev, backends);
  ResultCache cache;

  if (opts_.use_cache && !opts_.force && opts_.only.empty()) {
    if (auto e = cache.get(rep.cache_key)) {
      try {
        rep.winner = Candidate::parse(e->record.at("winner").get<std::string>());
        // A cache file is input from disk (possibly another machine's): its winner must still be one this problem's
        // backends accept, as select() and --config demand of any candidate.
        const Backend* b = nullptr;
        for (const auto& be : backends)
          if (be->name() == rep.winner->backend) b = be.get();
        if (!b) throw Error("backend '" + rep.winner->backend + "' of " + rep.winner->str() + " is not enabled");
        if (std::string why = b->validate(p, *rep.winner, dev); !why.empty())
          throw Error(rep.winner->str() + " is not valid here: " + why);
        // A tune that skipped candidates not compiled yet (a slow-compile backend, no --wait-compile) stored them
        // by name. Its winner stands only until one of them is compiled (a later `gemmtune compile`, or another
        // problem's tune with --wait-compile) or this tune waits for them: then the record is stale, and the retune
        // stores the list of what it skipped then (empty once all are built), so each record is retuned at most
        // once per new build.
        if (const std::string stale = stale_skipped(e->record, p, dev, backends, opts_.wait_compile); !stale.empty())
          throw StaleEntry{stale};
        for (const auto& r : e->record.value("results", nlohmann::json::array())) rep.results.push_back(result_from_json(r));
        rep.cache_hit = true;
        rep.wall_ms = wall();
        CandidateResult cached;
        cached.candidate = *rep.winner;
        progress(opts_, {.kind = ProgressKind::cache_hit, .result = cached});
        return rep;
      } catch (const StaleEntry& st) {
        progress(opts_, {.kind = ProgressKind::cache_stale, .text = st.why});
        rep.results.clear();
        rep.winner.reset();
      } catch (const std::exception& ex) {
        warn(opts_, std::string("unusable cache entry, retuning (") + ex.what() + ")");
        rep.results.clear();
        rep.winner.reset();
      }
    }
  }

  // Enumerate and compile in parallel: top_k per backend, best first by each backend's heuristic, a candidate that
  // fails to compile replaced by the next in rank order.
  const CompileFn compile = [&](PreparedCandidate& pc) { compile_one(p, dev, pc); };
  std::vector<PreparedCandidate> cands;
  std::string refusals;  // each backend's reason, for the error when none takes the problem
  std::vector<PreparedCandidate> not_built;  // slow-compile candidates skipped as not compiled yet
  const auto tc = std::chrono::steady_clock::now();
  if (!opts_.only.empty()) {
    cands = prepared_list(opts_.only);
    compile_all(cands, opts_.compile_threads, compile);
  } else {
    std::vector<RankedList> lists = enumerate_ranked(p, dev, opts_.backends);
    for (const RankedList& l : lists) {
      if (!l.skipped.empty()) {
        progress(opts_, {.kind = ProgressKind::backend_skipped, .backend = l.backend->name(), .text = l.skipped});
        refusals += "; " + l.skipped;
        continue;
      }
      const size_t n = opts_.top_k > 0 ? std::min(l.ranked.size(), size_t(opts_.top_k)) : l.ranked.size();
      progress(opts_, {.kind = ProgressKind::backend_planned, .backend = l.backend->name(), .count = n,
                       .total = l.ranked.size()});
    }
    // Slow-compile backends (nvcc): unless waiting, only what is built already is timed; the rest is reported.
    if (!opts_.wait_compile) not_built = take_uncompiled(lists, p, dev, opts_.top_k);
    for (const RankedList& l : lists) {
      size_t n = 0;
      for (const auto& pc : not_built) n += pc.backend == l.backend;
      if (n > 0)
        progress(opts_, {.kind = ProgressKind::not_compiled, .backend = l.backend->name(), .count = n,
                         .total = l.ranked.size()});
    }
    // A line per slow compile as it finishes (nvcc: tens of seconds each). Cache hits and the fast compiles of a
    // backend that is slow only for some candidates (pad wrapping sm90) would only be noise; a failure is not.
    const auto done = [&](const PreparedCandidate& pc) {
      if (!pc.backend || !pc.backend->slow_compile()) return;
      if (pc.status() == Status::pending && pc.result.compile_ms < 1000) return;
      progress(opts_, {.kind = ProgressKind::compiled, .result = pc.result});
    };
    cands = prepare_ranked(lists, opts_.top_k, opts_.compile_threads, compile, done);
  }
  if (cands.empty() && !not_built.empty())
    throw Error("no candidate to time for " + p->str() + ": " + std::to_string(not_built.size()) + " " +
                not_built.front().backend->name() + " candidates " + kNotCompiledReason + refusals);
  if (cands.empty()) throw Error("no backend supports this problem (" + p->str() + ")" + refusals);
  {
    size_t failed = 0;
    for (const auto& c : cands) failed += c.status() != Status::pending;
    progress(opts_,
             {.kind = ProgressKind::compile_summary, .count = failed, .total = cands.size(), .ms = ms_since(tc)});
    for (const auto& c : cands)
      if (c.status() != Status::pending) progress(opts_, {.kind = ProgressKind::candidate_failed, .result = c.result});
  }

  // Verify and time.
  progress(opts_, {.kind = ProgressKind::evaluating, .isolated = opts_.isolation == Isolation::process});
  evaluate_candidates(p, cands, opts_);

  const std::vector<size_t> raced = runoff(p, cands, opts_);
  rep.results = results_of(cands);
  for (const auto& pc : not_built) rep.results.push_back(pc.result);
  std::vector<CandidateResult>& results = rep.results;

  // Pick: among the runoff's candidates when one ran (numbers taken side by side), else among all.
  const int bi = pick_winner(results, raced);
  CandidateResult* best = bi >= 0 ? &results[static_cast<size_t>(bi)] : nullptr;
  if (best) {
    best->winner = true;
    rep.winner = best->candidate;
    if (opts_.use_cache && opts_.only.empty()) {
      nlohmann::json rec = {{"problem", to_json(p)}, {"problem_str", p->str()}, {"device", to_json(dev)},
                            {"winner", best->candidate.str()}, {"us", best->us_median},
                            {"gemmtune", version()}, {"results", nlohmann::json::array()}};
      for (const auto& r : results) rec["results"].push_back(to_json(r));
      rec["skipped"] = nlohmann::json::array();
      for (const auto& pc : not_built) rec["skipped"].push_back(pc.candidate().str());
      try {
        cache.put({rep.cache_key, rec});
      } catch (const Error& e) {
        warn(opts_, std::string("result not cached: ") + e.what());
      }
    }
  }
  rep.wall_ms = wall();
  return rep;
}

Gemm Tuner::load(const Problem& p0, const Candidate& c) {
  const ResolvedProblem p = resolve(p0);
  PreparedCandidate pc = prepared_list({c}).front();
  compile_one(p, current_device(), pc);
  // A candidate that spills is slow, not wrong: the caller named it, so it loads.
  switch (pc.status()) {
    case Status::pending:
    case Status::spills: break;
    case Status::unsupported: throw Error("candidate " + c.str() + " cannot run this problem: " + pc.result.reason);
    case Status::needs_gpu: throw NoGpuError(pc.result.reason);
    default: throw Error(pc.result.reason);
  }
  auto impl = std::make_unique<Gemm::Impl>();
  impl->problem = p;
  impl->candidate = c;
  impl->exe = load_prepared(p, pc);
  return Gemm(std::move(impl));
}

Gemm Tuner::select(const Problem& p) {
  TuneReport rep = tune(p);
  if (!rep.winner) {
    std::string why;
    for (const auto& r : rep.results) why += "\n  " + r.candidate.str() + ": " + to_string(r.status) + " " + r.reason;
    throw Error("no candidate works for " + rep.problem.str() + why);
  }
  return load(rep.problem, *rep.winner);
}

std::vector<CandidateResult> compare(const Problem& p0, const std::vector<Candidate>& cands, const TuneOptions& o) {
  const ResolvedProblem p = resolve(p0);
  const DeviceInfo& dev = current_device();
  std::vector<PreparedCandidate> pcs = prepared_list(cands);
  compile_all(pcs, o.compile_threads, [&](PreparedCandidate& pc) { compile_one(p, dev, pc); });
  time_interleaved(p, pcs, o);
  return results_of(pcs);
}

}  // namespace gemmtune
