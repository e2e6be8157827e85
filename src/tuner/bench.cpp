#include "gemmtune/bench.h"
#include "gemmtune/progress.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "core/clock.h"
#include "gemmtune/errors.h"
#include "jit/thread_pool.h"
#include "tuner/pipeline.h"

namespace gemmtune {

namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

}  // namespace

CompileReport compile_candidates(const Problem& p0, const DeviceInfo& dev, const CompileOptions& o) {
  const ResolvedProblem p = resolve(p0);
  CompileReport rep;
  rep.problem = p;
  rep.device = dev;

  std::vector<RankedList> lists;
  size_t planned = 1;
  if (!o.only) {
    // Only backends that compile by default (cuBLASLt has nothing to compile but a separate epilogue; pad compiles
    // its copy kernel and its inner candidate's).
    lists = enumerate_ranked(p, dev, o.backends.empty() ? std::vector<std::string>{"sm90", "gemv", "pad"} : o.backends);
    for (const RankedList& l : lists)
      if (o.progress && !l.note().empty())
        o.progress({.kind = ProgressKind::note, .backend = l.backend->name(), .text = l.note()});
    planned = top_candidates(lists, o.top_k).size();
    if (planned == 0) throw Error("no candidates to compile for " + p->str());
  }
  rep.threads = std::min<int>(o.threads > 0 ? o.threads : jit::default_compile_threads(), int(planned));

  auto to_compiled = [](const PreparedCandidate& pc) {
    CompiledCandidate c;
    c.result = pc.result;
    if (c.result.status == Status::pending) c.result.status = Status::ok;
    if (pc.compiled) c.compiled = pc.compiled->compiled, c.log = pc.compiled->log;
    c.wall_ms = pc.compile_wall_ms;
    if (c.result.compile_ms <= 0) c.result.compile_ms = c.wall_ms;
    return c;
  };
  size_t done = 0;
  const auto on_done = [&](const PreparedCandidate& pc) {
    ++done;
    if (o.progress)
      o.progress({.kind = ProgressKind::compiled, .result = to_compiled(pc).result, .count = done,
                  .total = std::max(planned, done)});
  };
  const CompileFn compile = [&](PreparedCandidate& pc) {
    compile_one(p, dev, pc);
    if (pc.compiled) pc.compiled->artifact.reset();  // the cubin is not loaded here; free it early
  };

  const auto t0 = std::chrono::steady_clock::now();
  std::vector<PreparedCandidate> pcs;
  if (o.only) {
    pcs.push_back(make_prepared(*o.only));
    compile_all(pcs, rep.threads, compile, on_done);
  } else {
    pcs = prepare_ranked(lists, o.top_k, rep.threads, compile, on_done);
  }
  rep.wall_ms = ms_since(t0);
  for (const auto& pc : pcs) rep.candidates.push_back(to_compiled(pc));
  return rep;
}

ShapeBench bench_problem(const Problem& p, const TuneOptions& opts) {
  ShapeBench sb;
  // fp8: cuBLASLt in the problem's accumulation mode, the one every candidate of the tune runs.
  const std::string algo = !p.fp8_product()                  ? "default"
                           : p.fp8_accum == Fp8Accum::fast ? "default,fast_accum=1"
                                                             : "default,fast_accum=0";
  sb.reference = Candidate{"cublaslt", algo};
  try {
    if (!p.epilogue.empty()) {
      sb.reference.config = algo + ",epi=fused";
      if (auto lt = find_backend("cublaslt"); !lt || !lt->validate(resolve(p), sb.reference, current_device()).empty())
        sb.reference.config = algo + ",epi=separate";
    }
    sb.tune = Tuner(opts).tune(p);
    if (!sb.tune.winner) throw Error("no candidate worked");
    // Side by side in one process: the winner, cuBLASLt's reference, the best of every other backend.
    std::vector<Candidate> cands{*sb.tune.winner};
    auto add = [&](const Candidate& c) {
      if (std::find(cands.begin(), cands.end(), c) == cands.end()) cands.push_back(c);
    };
    add(sb.reference);
    if (!p.epilogue.empty()) add({"cublaslt", algo + ",epi=separate"});
    std::map<std::string, const CandidateResult*> best;
    for (const auto& r : sb.tune.results) {
      if (r.status != Status::ok || r.candidate.backend == sb.tune.winner->backend) continue;
      auto& b = best[r.candidate.backend];
      if (!b || r.us_median < b->us_median) b = &r;
    }
    for (const auto& [name, r] : best) add(r->candidate);
    sb.compare = compare(p, cands, opts);
    const CandidateResult* win = sb.winner();
    if (!win || win->status != Status::ok)
      sb.status = "winner failed in compare: " +
                  (win ? std::string(to_string(win->status)) + " " + first_line(win->reason) : "missing");
  } catch (const NoGpuError&) {
    throw;
  } catch (const Error& e) {
    sb.status = first_line(e.what());
  }
  return sb;
}

}  // namespace gemmtune
