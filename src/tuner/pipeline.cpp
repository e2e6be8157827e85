#include "tuner/pipeline.h"

#include <algorithm>
#include <chrono>
#include <mutex>

#include "core/check.h"
#include "core/clock.h"
#include "gemmtune/errors.h"
#include "jit/thread_pool.h"

namespace gemmtune {

namespace {

// The spellings of the statuses: printed in tables and progress lines, stored in the result cache and sent over the
// worker protocol, so they never change.
constexpr struct {
  Status status;
  const char* name;
} kStatusNames[] = {
    {Status::pending, "pending"},
    {Status::ok, "ok"},
    {Status::unsupported, "unsupported"},
    {Status::spills, "spills"},
    {Status::compile_error, "compile_error"},
    {Status::needs_gpu, "needs_gpu"},
    {Status::load_error, "load_error"},
    {Status::launch_error, "launch_error"},
    {Status::wrong_result, "wrong_result"},
    {Status::timeout, "timeout"},
    {Status::crashed, "crashed"},
    {Status::skipped, "skipped"},
};

void record_compile(CandidateResult& r, const CompileResult& cr) {
  r.compile_ms = cr.compile_ms, r.compile_cache_hit = cr.cache_hit;
  r.registers = cr.registers, r.spill_bytes = cr.spill_bytes, r.smem_bytes = cr.smem_bytes;
}

}  // namespace

const char* to_string(Status s) {
  for (const auto& e : kStatusNames)
    if (e.status == s) return e.name;
  return "unknown";
}

std::optional<Status> status_from_string(std::string_view name) {
  for (const auto& e : kStatusNames)
    if (name == e.name) return e.status;
  return std::nullopt;
}

PreparedCandidate make_prepared(const Candidate& c) {
  PreparedCandidate pc;
  pc.result.candidate = c;
  pc.backend = find_backend(c.backend);
  if (!pc.backend) pc.result.status = Status::unsupported, pc.result.reason = "unknown backend '" + c.backend + "'";
  return pc;
}

std::vector<std::shared_ptr<Backend>> enabled_backends(const std::vector<std::string>& names) {
  if (names.empty()) return all_backends();
  std::vector<std::shared_ptr<Backend>> out;
  for (const auto& n : names) {
    auto b = find_backend(n);
    if (!b) {
      std::string known;
      for (const auto& x : all_backends()) known += (known.empty() ? "" : ", ") + x->name();
      throw Error("unknown backend '" + n + "' (known: " + known + ")");
    }
    out.push_back(b);
  }
  return out;
}

std::string RankedList::note() const {
  if (skipped.empty()) return path.empty() ? "" : backend->name() + ": " + path;
  const std::string why = skipped.substr(0, skipped.find('\n'));
  if (unavailable) return backend->name() + ": unavailable: " + why;
  return backend->name() + (needs_gpu ? ": needs a GPU to enumerate candidates (" + why + ")"
                                      : ": does not support this problem: " + why);
}

std::vector<RankedList> enumerate_ranked(const ResolvedProblem& p, const DeviceInfo& dev,
                                         const std::vector<std::string>& names) {
  std::vector<RankedList> out;
  for (const auto& b : enabled_backends(names)) {
    RankedList l;
    l.backend = b;
    // The problem first: an optional backend's probe (Triton's: a Python interpreter) runs only for a problem it
    // would have candidates for.
    l.skipped = b->supports(p, dev);
    if (l.skipped.empty()) {
      l.skipped = b->unavailable();
      l.unavailable = !l.skipped.empty();
    }
    if (l.skipped.empty()) {
      try {
        l.analysis = b->analyze(p);
        l.path = b->path(p, *l.analysis, dev);
        l.ranked = b->enumerate(p, *l.analysis, dev);
      } catch (const NoGpuError& e) {
        if (dev.real) throw;  // a backend that needs the GPU is skipped only when there is none
        l.skipped = e.what(), l.needs_gpu = true;
      }
    }
    out.push_back(std::move(l));
  }
  return out;
}

std::vector<Candidate> top_candidates(const std::vector<RankedList>& lists, int top_k) {
  std::vector<Candidate> out;
  for (const RankedList& l : lists) {
    const size_t n = top_k > 0 ? std::min(l.ranked.size(), size_t(top_k)) : l.ranked.size();
    out.insert(out.end(), l.ranked.begin(), l.ranked.begin() + std::ptrdiff_t(n));
  }
  return out;
}

void compile_one(const ResolvedProblem& p, const DeviceInfo& dev, PreparedCandidate& pc) {
  CandidateResult& r = pc.result;
  if (r.status != Status::pending || !pc.backend) return;
  const auto t0 = std::chrono::steady_clock::now();
  if (std::string why = pc.backend->unavailable(); !why.empty()) {
    r.status = Status::unsupported, r.reason = pc.backend->name() + ": unavailable: " + why;
    return;
  }
  try {
    if (!pc.config) {
      try {
        pc.config = pc.backend->parse(r.candidate);  // the one parse of this candidate's config
      } catch (const Error& e) {
        r.status = Status::unsupported, r.reason = pc.backend->parse_error_reason(p, dev, e.what());
        pc.compile_wall_ms = ms_since(t0);
        return;
      }
    }
    if (!pc.analysis) pc.analysis = pc.backend->analyze(p);  // a candidate named by the caller, not enumerated
    if (std::string why = pc.backend->validate(p, *pc.analysis, r.candidate, *pc.config, dev); !why.empty()) {
      r.status = Status::unsupported, r.reason = why;
    } else {
      pc.compiled = pc.backend->compile(p, *pc.analysis, r.candidate, *pc.config, dev);
      if (r.compile_ms == 0) record_compile(r, *pc.compiled);  // a worker keeps the numbers of the parent's compile
      if (pc.compiled->spill_bytes > 0) {
        r.status = Status::spills;
        r.reason = "ptxas spilled " + std::to_string(pc.compiled->spill_bytes) + " bytes to local memory (" +
                   std::to_string(pc.compiled->registers) + " registers)";
      }
    }
  } catch (const NoGpuError& e) {
    r.status = Status::needs_gpu, r.reason = e.what();
  } catch (const std::exception& e) {
    r.status = Status::compile_error, r.reason = e.what();
  }
  pc.compile_wall_ms = ms_since(t0);
}

void compile_all(std::vector<PreparedCandidate>& cands, int threads, const CompileFn& compile,
                 const std::function<void(const PreparedCandidate&)>& done) {
  std::mutex mu;
  jit::parallel_for(cands.size(), threads, [&](size_t i) {
    compile(cands[i]);
    if (done) {
      std::lock_guard<std::mutex> lk(mu);
      done(cands[i]);
    }
  });
}

std::vector<PreparedCandidate> prepare_ranked(const std::vector<RankedList>& lists, int top_k, int threads,
                                              const CompileFn& compile,
                                              const std::function<void(const PreparedCandidate&)>& done) {
  // Per list: the next rank to compile and how many compiled clean.
  std::vector<size_t> next(lists.size(), 0), clean(lists.size(), 0);
  std::vector<std::vector<PreparedCandidate>> per(lists.size());
  for (;;) {
    std::vector<PreparedCandidate> round;
    std::vector<size_t> owner;
    for (size_t l = 0; l < lists.size(); ++l) {
      const size_t want = top_k > 0 ? size_t(top_k) : lists[l].ranked.size();
      for (size_t k = clean[l]; k < want && next[l] < lists[l].ranked.size(); ++k) {
        PreparedCandidate pc;
        pc.result.candidate = lists[l].ranked[next[l]++];
        pc.backend = lists[l].backend;
        pc.analysis = lists[l].analysis;
        round.push_back(std::move(pc));
        owner.push_back(l);
      }
    }
    if (round.empty()) break;
    compile_all(round, threads, compile, done);
    for (size_t i = 0; i < round.size(); ++i) {
      clean[owner[i]] += round[i].status() == Status::pending;
      per[owner[i]].push_back(std::move(round[i]));
    }
  }
  std::vector<PreparedCandidate> out;
  for (auto& v : per)
    for (auto& pc : v) out.push_back(std::move(pc));
  return out;
}

const char* const kNotCompiledReason =
    "not compiled yet (nvcc, tens of seconds a kernel): prebuild with `gemmtune compile --backends cutlass ...` or "
    "tune with --wait-compile";

std::vector<PreparedCandidate> take_uncompiled(std::vector<RankedList>& lists, const ResolvedProblem& p,
                                               const DeviceInfo& dev, int top_k) {
  std::vector<PreparedCandidate> skipped;
  for (RankedList& l : lists) {
    if (!l.backend || !l.backend->slow_compile() || l.ranked.empty()) continue;
    if (!l.analysis) l.analysis = l.backend->analyze(p);  // a list made by hand, not by enumerate_ranked
    std::vector<Candidate> kept;
    for (size_t i = 0; i < l.ranked.size(); ++i) {
      const Candidate& c = l.ranked[i];
      bool compiled = true;
      try {
        compiled = l.backend->is_compiled(p, *l.analysis, c, *l.backend->parse(c), dev);
      } catch (const Error&) {
        compiled = true;  // left to compile_one, which names the bad config
      }
      if (compiled) {
        kept.push_back(c);
      } else if (top_k <= 0 || i < size_t(top_k)) {
        PreparedCandidate pc;
        pc.result.candidate = c;
        pc.backend = l.backend;
        pc.analysis = l.analysis;
        pc.result.status = Status::skipped;
        pc.result.reason = kNotCompiledReason;
        skipped.push_back(std::move(pc));
      }
    }
    l.ranked = std::move(kept);
  }
  return skipped;
}

std::unique_ptr<Executable> load_prepared(const ResolvedProblem& p, const PreparedCandidate& pc) {
  GT_REQUIRE(pc.backend && pc.analysis && pc.config && pc.compiled,
             "load of " + pc.candidate().str() + " before it was compiled");
  return pc.backend->load(p, *pc.analysis, pc.candidate(), *pc.config, *pc.compiled);
}

}  // namespace gemmtune
