#include "tuner/evaluate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>

#include "backends/backend.h"
#include "core/clock.h"
#include "cuda/driver.h"
#include "cuda/memory.h"
#include "gemmtune/errors.h"
#include "tuner/reference.h"
#include "tuner/routing.h"

namespace gemmtune {

namespace {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Input/output buffers for one problem: several sets so that rotating through them keeps L2 cold. A grouped problem
// also holds its routings (tuner/routing.h) on the device and one reference per routing; args() passes the current
// routing (use_routing), verify() checks them all.
class Bench {
 public:
  explicit Bench(const Problem& p) : p_(p), routings_(grouped_routings(p)) {
    for (Which w : kOperands) span_[idx(w)] = (w == Which::C && p.beta == 0.0f) ? 0 : operand_span(p, w);
    // Epilogue operands: vectors by their position in the chain, the residual shaped (and strided) like D.
    for (int e = 0; e < kEpi; ++e) {
      epi_span_[e] = kEpiKinds[e] == EpiOpKind::residual ? (p.epilogue.has(EpiOpKind::residual) ? span_[kD] : 0)
                                                         : p.epilogue_vector_len(kEpiKinds[e]);
      if (kEpiKinds[e] == EpiOpKind::bias_col && epi_span_[e] == 0) epi_span_[e] = p.epilogue_vector_len(EpiOpKind::bias_row);
    }
    size_t set_bytes = 0;
    for (Which w : kOperands) set_bytes += bytes(w);
    set_bytes += size_t(p.scale_len(Which::A) + p.scale_len(Which::B)) * sizeof(float);
    for (int e = 0; e < kEpi; ++e) set_bytes += epi_bytes(e);
    const DeviceInfo& dev = current_device();
    size_t free_b = 0, total_b = 0;
    GT_CU(cuMemGetInfo(&free_b, &total_b));
    const size_t ref_bytes = size_t(p.m * p.n_out() * p.batch) * sizeof(float) * nroutings();
    const size_t fit = (free_b / 2 > ref_bytes ? free_b / 2 - ref_bytes : 0) / std::max<size_t>(set_bytes, 1);
    if (fit < 1)
      throw Error("problem needs " + std::to_string((set_bytes + ref_bytes) >> 20) + " MiB of GPU memory for "
                  "verification, only " + std::to_string(free_b >> 20) + " MiB free");
    const size_t nsets = timing_set_count(set_bytes, size_t(dev.l2_bytes), fit);
    std::random_device rd;
    const uint64_t seed = (uint64_t(rd()) << 32) ^ rd();  // fresh inputs on every run
    for (Which w : kOperands) geo_[idx(w)] = operand_geometry(p, w);
    for (size_t i = 0; i < nsets; ++i) {
      Set s;
      for (Which w : kOperands) s.buf[idx(w)] = guarded(bytes(w));
      for (Which w : {Which::A, Which::B, Which::C})
        if (span_[idx(w)]) fill_input(s.buf[idx(w)], at(s, w), p.operand(w).dtype, span_[idx(w)], geo_[idx(w)],
                                      seed + 977 * i + 'A' + idx(w));
      for (int e = 0; e < kEpi; ++e)
        if (epi_span_[e]) {
          s.epi[e] = guarded(epi_bytes(e));
          // The residual is shaped (and strided) like D; the vectors are one row.
          const OperandGeometry g = kEpiKinds[e] == EpiOpKind::residual ? geo_[kD] : row_geometry(epi_span_[e]);
          fill_input(s.epi[e], epi_at(s, e), epi_dtype(e), epi_span_[e], g, seed + 977 * i + 'E' + e);
        }
      // Scaled GEMMs: positive scales, a different one in every row, column or block, so that a kernel applying
      // the wrong one fails; an e4m3 D's scale puts the largest outputs past +-448 (its saturation is checked too).
      if (p.scaling != Scaling::none) {
        for (int w = 0; w < 2; ++w) {
          const int64_t len = p.scale_len(w == 0 ? Which::A : Which::B);
          s.scale[w] = guarded(size_t(len) * sizeof(float));
          fill_nan(s.scale[w].get(), DType::f32, int64_t(s.scale[w].bytes() / sizeof(float)), stream_.get());
          fill_uniform(static_cast<float*>(scale_at(s, w)), len, seed + 977 * i + 'S' + w, 0.5f, 2.0f,
                       stream_.get());
        }
        s.scale[2] = cuda::DeviceBuffer(2 * sizeof(float));  // scale_d, amax
        const float sd[2] = {float(100.0 / std::sqrt(double(p.k))), -1.0f};
        s.scale[2].upload(sd, sizeof(sd));
      }
      poison_d(s);
      sets_.push_back(std::move(s));
    }
    for (const auto& counts : routings_) {
      const std::vector<int32_t> rows = group_rows_of(p, counts);
      group_rows_.emplace_back(rows.size() * sizeof(int32_t));
      group_rows_.back().upload(rows.data(), rows.size() * sizeof(int32_t));
    }
    for (size_t r = 0; r < nroutings(); ++r) {
      use_routing(r);
      refs_.emplace_back(ref_bytes / nroutings());
      reference_gemm(p, args(0), static_cast<float*>(refs_.back().get()), stream_.get());
    }
    use_routing(0);
    stream_.sync();
  }

  GemmArgs args(size_t i) const {
    const Set& s = sets_[i % sets_.size()];
    GemmArgs a{at(s, Which::A), at(s, Which::B), span_[2] ? at(s, Which::C) : nullptr, at(s, Which::D)};
    a.bias = epi_at(s, 0), a.residual = epi_at(s, 1), a.row_scale = epi_at(s, 2), a.col_scale = epi_at(s, 3);
    if (p_.scaling != Scaling::none) {
      a.scale_a = static_cast<const float*>(scale_at(s, 0));
      a.scale_b = static_cast<const float*>(scale_at(s, 1));
      if (is_fp8(p_.d.dtype)) a.scale_d = static_cast<const float*>(s.scale[2].get());
      if (p_.amax) a.amax = static_cast<float*>(s.scale[2].get()) + 1;
    }
    if (!group_rows_.empty()) a.group_rows = static_cast<const int32_t*>(group_rows_[routing_].get());
    return a;
  }
  size_t nsets() const { return sets_.size(); }
  Stream stream() const { return stream_.get(); }

  // Routings: 1 for an ungrouped problem; args() passes routing r from here on.
  size_t nroutings() const { return std::max<size_t>(routings_.size(), 1); }
  void use_routing(size_t r) { routing_ = r; }
  // Flops and minimal bytes of one call under routing r.
  double flops(size_t r) const { return routings_.empty() ? p_.flops() : routed_flops(p_, routed_rows(routings_[r])); }
  double min_bytes(size_t r) const {
    return routings_.empty() ? p_.min_bytes() : routed_bytes(p_, routed_rows(routings_[r]));
  }

  // Runs the candidate once on set 0 under each routing (D and the guard regions around it poisoned each time) and
  // compares with that routing's reference: returns the worst routing's stats (a failing one first, else the largest
  // error) and its name in `routing` ("" ungrouped). outside_writes counts the elements of D's allocation outside its
  // matrices (rows of no group, the gaps of its pitch, the guards) that no longer hold the poison. With Problem::amax, also checks the amax it wrote (poisoned with NaN first) against the
  // reference's, within `tolerance` relative.
  ErrorStats verify(Executable& exe, double tolerance, std::string& amax_error, std::string& routing) {
    ErrorStats worst;
    bool have = false;
    amax_error.clear(), routing.clear();
    for (size_t r = 0; r < nroutings(); ++r) {
      use_routing(r);
      const GemmArgs a = args(0);
      poison_d(sets_[0]);
      if (a.amax) fill_nan(a.amax, DType::f32, 1, stream_.get());
      exe.launch(a, stream_.get());
      stream_.sync();
      ErrorStats e = compare_to_reference(p_, a.d, static_cast<const float*>(refs_[r].get()), stream_.get(),
                                          a.scale_d, a.group_rows);
      e.outside_writes += count_d_outside(sets_[0]);
      std::string amax_r;
      if (a.amax) {
        float got = 0;
        sets_[0].scale[2].download(&got, sizeof(got), sizeof(float));
        if (!(std::fabs(double(got) - e.ref_amax) <= tolerance * e.ref_amax))
          amax_r = "amax " + std::to_string(got) + " != the reference's " + std::to_string(e.ref_amax);
      }
      const bool fails = !e.ok(tolerance) || !amax_r.empty();
      const bool worst_fails = have && (!worst.ok(tolerance) || !amax_error.empty());
      if (!have || (fails && !worst_fails) || (fails == worst_fails && !(e.normalized <= worst.normalized))) {
        worst = e, amax_error = amax_r, have = true;
        if (!routings_.empty()) routing = std::string(kRoutingNames[r]);
      }
    }
    use_routing(0);
    return worst;
  }

 private:
  static int idx(Which w) { return static_cast<int>(w); }
  static constexpr int kD = static_cast<int>(Which::D);
  // Every buffer has kGuard bytes before and after what the problem addresses (plus the < 16-byte offset of `at`):
  // inputs there hold NaN, so a kernel that reads outside an operand computes NaN; D's guards hold the poison and
  // must keep it.
  static constexpr size_t kGuard = 4096;
  static cuda::DeviceBuffer guarded(size_t bytes) { return cuda::DeviceBuffer(kGuard + 16 + bytes + kGuard); }
  static OperandGeometry row_geometry(int64_t len) {
    OperandGeometry g;
    g.outer = 1, g.inner = g.ld = g.span = len;
    return g;
  }
  // The elements of `buf` around `data`, as [lo, hi) offsets from it.
  static std::pair<int64_t, int64_t> extent(const cuda::DeviceBuffer& buf, const void* data, DType t) {
    const int64_t es = int64_t(dtype_size(t));
    const int64_t before = static_cast<const char*>(data) - static_cast<const char*>(buf.get());
    return {-(before / es), (int64_t(buf.bytes()) - before) / es};
  }
  // An input: random normal values in its matrices, the poison (NaN) everywhere else in its allocation.
  void fill_input(const cuda::DeviceBuffer& buf, void* data, DType t, int64_t span, const OperandGeometry& g,
                  uint64_t seed) {
    fill_nan(buf.get(), t, int64_t(buf.bytes() / dtype_size(t)), stream_.get());
    fill_normal(data, t, span, seed, 1.0f, stream_.get());
    const auto [lo, hi] = extent(buf, data, t);
    if (g.disjoint) poison_outside(data, t, lo, hi, g, stream_.get());
  }

  size_t bytes(Which w) const { return size_t(span_[idx(w)]) * dtype_size(p_.operand(w).dtype); }
  // GemmArgs' epilogue operands in order: bias (per column or per row), residual, row_scale, col_scale.
  static constexpr int kEpi = 4;
  static constexpr EpiOpKind kEpiKinds[kEpi] = {EpiOpKind::bias_col, EpiOpKind::residual, EpiOpKind::row_scale,
                                                EpiOpKind::col_scale};
  DType epi_dtype(int e) const {
    if (e == 0 && !p_.epilogue.has(EpiOpKind::bias_col)) return p_.epilogue_dtype(EpiOpKind::bias_row);
    return p_.epilogue_dtype(kEpiKinds[e]);
  }
  size_t epi_bytes(int e) const { return size_t(epi_span_[e]) * dtype_size(epi_dtype(e)); }
  struct Set {
    cuda::DeviceBuffer buf[4];     // guarded(): the guards around the operand and room for the offset of `at`
    cuda::DeviceBuffer epi[kEpi];  // empty when the chain has no such op
    cuda::DeviceBuffer scale[3];   // scaled GEMMs: scale_a, scale_b, then {scale_d, amax}
  };
  // Operand w of set s: offset from the (256-byte aligned) allocation by its declared alignment when that is below
  // 16, so that the candidates run on pointers exactly as aligned as the problem says (a sliced view's).
  void* at(const Set& s, Which w) const {
    const int al = p_.operand(w).align;
    return static_cast<char*>(s.buf[idx(w)].get()) + kGuard + (al < 16 ? al : 0);
  }
  void* epi_at(const Set& s, int e) const {
    return s.epi[e].get() ? static_cast<char*>(s.epi[e].get()) + kGuard : nullptr;
  }
  void* scale_at(const Set& s, int w) const { return static_cast<char*>(s.scale[w].get()) + kGuard; }
  // D's geometry for the outside check: its matrices when they are disjoint, else its span as one block.
  OperandGeometry d_geometry() const { return geo_[kD].disjoint ? geo_[kD] : row_geometry(span_[kD]); }
  void poison_d(const Set& s) {
    const cuda::DeviceBuffer& buf = s.buf[kD];
    fill_nan(buf.get(), p_.d.dtype, int64_t(buf.bytes() / dtype_size(p_.d.dtype)), stream_.get());
  }
  uint64_t count_d_outside(const Set& s) {
    const auto [lo, hi] = extent(s.buf[kD], at(s, Which::D), p_.d.dtype);
    return count_outside(at(s, Which::D), p_.d.dtype, lo, hi, d_geometry(), stream_.get());
  }
  Problem p_;
  std::vector<std::vector<int32_t>> routings_;  // grouped: row counts per group, one list per routing
  std::vector<cuda::DeviceBuffer> group_rows_;  // grouped: GemmArgs::group_rows of each routing
  size_t routing_ = 0;
  int64_t span_[4] = {};
  OperandGeometry geo_[4];
  int64_t epi_span_[kEpi] = {};
  cuda::StreamOwner stream_;
  std::vector<Set> sets_;
  std::vector<cuda::DeviceBuffer> refs_;  // the reference of each routing (one ungrouped)
};

// A stage's error as the candidate's `status`; returns no executable. A sticky CUDA error is rethrown: the context
// is gone, which the caller handles for every candidate.
std::unique_ptr<Executable> failed(CandidateResult& r, Status status, const Error& e) {
  if (const auto* cuda = dynamic_cast<const CudaError*>(&e); cuda && cuda->sticky) throw;
  r.status = status, r.reason = e.what();
  return nullptr;
}

// Loads and verifies one candidate; fills status/reason/error. Returns the executable when it passed.
std::unique_ptr<Executable> load_and_verify(const ResolvedProblem& p, Bench& bench, PreparedCandidate& pc,
                                            const TuneOptions& o, const EvaluateHooks::Wrap& wrap) {
  CandidateResult& r = pc.result;
  if (!pc.compiled) {
    compile_one(p, current_device(), pc);  // in the worker: a compile of the parent's, served by the kernel cache
    if (r.status != Status::pending) return nullptr;
  }
  std::unique_ptr<Executable> exe;
  try {
    exe = load_prepared(p, pc);
    if (wrap) exe = wrap(std::move(exe));
  } catch (const Error& e) {
    return failed(r, Status::load_error, e);
  }
  try {
    const double tol = verification_tolerance(p, o.tolerance);
    std::string amax_error, routing;
    const ErrorStats err = bench.verify(*exe, tol, amax_error, routing);
    r.error = err.normalized;
    if (!err.ok(tol) || !amax_error.empty()) {
      r.status = Status::wrong_result;
      r.reason = err.nonfinite ? std::to_string(err.nonfinite) + " NaN/inf outputs (unwritten or overflowed)"
                 : err.outside_writes ? "wrote " + std::to_string(err.outside_writes) +
                                              " elements outside D's matrices (rows of no group, the gaps of its "
                                              "pitch, or the guard regions around it)"
                 : !err.ok(tol)       ? "normalized error " + std::to_string(err.normalized) + " > tolerance " +
                                            std::to_string(tol)
                                      : amax_error;
      if (!routing.empty()) r.reason += " (routing " + routing + ")";
      return nullptr;
    }
  } catch (const Error& e) {
    return failed(r, Status::launch_error, e);
  }
  return exe;
}

// us[r]: the timings under routing r (one routing ungrouped). The time is the mean over the routings of the
// per-routing medians, so that a grouped kernel must be good on every routing; the rates are those of the mean call.
void summarize(const Bench& bench, CandidateResult& r, std::vector<std::vector<float>>& us) {
  double median_sum = 0, flops = 0, bytes = 0;
  r.timed_iters = 0;
  r.us_min = std::numeric_limits<double>::infinity(), r.us_max = 0;
  for (size_t k = 0; k < us.size(); ++k) {
    std::vector<float>& u = us[k];
    std::sort(u.begin(), u.end());
    r.timed_iters += int(u.size());
    r.us_min = std::min<double>(r.us_min, u.front()), r.us_max = std::max<double>(r.us_max, u.back());
    median_sum += u.size() % 2 ? u[u.size() / 2] : 0.5 * (u[u.size() / 2 - 1] + u[u.size() / 2]);
    flops += bench.flops(k), bytes += bench.min_bytes(k);
  }
  const double n = double(us.size());
  r.us_median = median_sum / n;
  r.tflops = flops / n / (r.us_median * 1e-6) / 1e12;
  r.gbps = bytes / n / (r.us_median * 1e-6) / 1e9;
  r.status = Status::ok, r.reason.clear();
}

// Launch count for timing: at least min_iters and min_time_ms, at most 5000, from a warm-up estimate.
int plan_iters(Bench& bench, const std::vector<Executable*>& exes, const TuneOptions& o) {
  cuda::Event e0, e1;
  e0.record(bench.stream());
  const int warm = std::max(1, o.warmup_iters);
  for (int i = 0; i < warm; ++i)
    for (auto* x : exes) x->launch(bench.args(i), bench.stream());
  e1.record(bench.stream());
  const double us_per_round = 1e3 * e1.elapsed_ms_since(e0) / warm;
  const double want = o.min_time_ms * 1e3 / std::max(us_per_round, 1e-3);
  return int(std::clamp<double>(std::max<double>(o.min_iters, want), o.min_iters, 5000));
}

// Per-launch CUDA-event timings, candidates interleaved round by round in a fresh random order each round, buffer
// sets rotated. The order changes because a launch's time can depend on the one before it: in a fixed order one
// candidate of a mixed list ran 7-8% fast in every round behind the same neighbour at M = 1 on the H200; shuffled,
// such a neighbour precedes it in few rounds and the median does not see it.
std::vector<std::vector<float>> time_rounds(Bench& bench, const std::vector<Executable*>& exes, int iters) {
  const size_t n = exes.size();
  std::vector<std::vector<float>> us(n);
  // Rounds per burst (events are reused between bursts): 256, fewer with many candidates (at most ~8k events).
  const int chunk = int(std::clamp<size_t>(4096 / std::max<size_t>(n, 1), 1, 256));
  std::vector<std::unique_ptr<cuda::Event>> ev(2 * chunk * n);
  for (auto& e : ev) e = std::make_unique<cuda::Event>();
  size_t set = 0;
  std::mt19937 rng(12345);
  std::vector<size_t> order(n);
  for (size_t c = 0; c < n; ++c) order[c] = c;
  for (int done = 0; done < iters; done += chunk) {
    const int rounds = std::min(chunk, iters - done);
    gpu_spin(200000, bench.stream());  // the host queues the burst while the GPU waits
    for (int r = 0; r < rounds; ++r) {
      std::shuffle(order.begin(), order.end(), rng);
      for (size_t c : order) {
        auto& pair = ev[2 * (size_t(r) * n + c)];
        pair->record(bench.stream());
        exes[c]->launch(bench.args(set++), bench.stream());
        ev[2 * (size_t(r) * n + c) + 1]->record(bench.stream());
      }
    }
    for (int r = 0; r < rounds; ++r)
      for (size_t c = 0; c < n; ++c)
        us[c].push_back(1e3f * ev[2 * (size_t(r) * n + c) + 1]->elapsed_ms_since(*ev[2 * (size_t(r) * n + c)]));
  }
  return us;
}

// time_rounds under every routing of the bench, each given an equal share of min_time_ms: us[routing][candidate].
// One routing (exactly time_rounds) for an ungrouped problem.
std::vector<std::vector<std::vector<float>>> time_routings(Bench& bench, const std::vector<Executable*>& exes,
                                                           const TuneOptions& o) {
  TuneOptions share = o;
  share.min_time_ms = o.min_time_ms / double(bench.nroutings());
  std::vector<std::vector<std::vector<float>>> us;
  for (size_t r = 0; r < bench.nroutings(); ++r) {
    bench.use_routing(r);
    us.push_back(time_rounds(bench, exes, plan_iters(bench, exes, share)));
  }
  bench.use_routing(0);
  return us;
}

// The timings of candidate c out of time_routings' result.
std::vector<std::vector<float>> of_candidate(std::vector<std::vector<std::vector<float>>>& us, size_t c) {
  std::vector<std::vector<float>> out;
  for (auto& per_routing : us) out.push_back(std::move(per_routing[c]));
  return out;
}

// Runs `exe` back to back for about `ms` milliseconds of GPU time. The H200 boosts its clocks after an idle spell and
// settles lower under its power limit within a fraction of a second: without this the first candidate timed in a
// tuning run was measured up to 10% faster than the same kernel later in the run.
void settle(Bench& bench, Executable& exe, double ms) {
  cuda::Event e0, e1;
  double elapsed = 0;
  int batch = 4;
  size_t set = 0;
  while (elapsed < ms) {
    e0.record(bench.stream());
    for (int i = 0; i < batch; ++i) exe.launch(bench.args(set++), bench.stream());
    e1.record(bench.stream());
    const double t = e1.elapsed_ms_since(e0);
    elapsed += t;
    if (t < 25 && batch < (1 << 16)) batch *= 2;
  }
}

// A sticky CUDA error while candidate i ran: the context is gone, nothing else can run in this process. Marks it
// crashed and the rest skipped, reports it, rethrows (the worker's client restarts a worker for the rest).
[[noreturn]] void context_lost(std::vector<PreparedCandidate>& cands, size_t i, const CudaError& e,
                               const EvaluateHooks& hooks) {
  CandidateResult& r = cands[i].result;
  r.status = Status::crashed, r.reason = std::string("corrupted the CUDA context: ") + e.what();
  if (hooks.on_result) hooks.on_result(i, r);
  for (size_t j = 0; j < cands.size(); ++j) {
    CandidateResult& o = cands[j].result;
    if (j != i && o.status == Status::pending)
      o.status = Status::skipped, o.reason = "CUDA context lost after " + r.candidate.str();
  }
  throw e;
}

// One candidate's load + verification in evaluate(), with the sticky-error protocol: a non-sticky CUDA error or a
// gemmtune error is this candidate's failure; a sticky one (the context is gone) marks it crashed, the rest
// skipped, and is rethrown (nothing else can run in this process; the worker's client restarts a worker).
std::unique_ptr<Executable> verify_one(const ResolvedProblem& p, Bench& bench, std::vector<PreparedCandidate>& cands,
                                       size_t i, const TuneOptions& o, const EvaluateHooks& hooks) {
  CandidateResult& r = cands[i].result;
  try {
    const auto t0 = Clock::now();
    std::unique_ptr<Executable> exe =
        load_and_verify(p, bench, cands[i], o, hooks.wrap ? [&](std::unique_ptr<Executable> x) {
          return hooks.wrap(i, std::move(x));
        } : EvaluateHooks::Wrap{});
    if (exe && seconds_since(t0) > o.max_candidate_s) {
      r.status = Status::timeout;
      r.reason = "verification took longer than " + std::to_string(o.max_candidate_s) + " s";
      return nullptr;
    }
    return exe;
  } catch (const CudaError& e) {
    if (e.sticky) context_lost(cands, i, e, hooks);
    return failed(r, Status::launch_error, e);
  } catch (const Error& e) {
    return failed(r, Status::launch_error, e);
  }
}

// Times `exes` (results `idx`) side by side: one short timed burst each first, so that a candidate more than
// kSlow x slower than the fastest (it cannot win) is timed on its own afterwards instead of stretching every round;
// the rest run interleaved, each getting about min_time_ms of GPU time as if it were timed alone.
void time_side_by_side(Bench& bench, std::vector<PreparedCandidate>& cands,
                       const std::vector<size_t>& idx, const std::vector<Executable*>& exes, const TuneOptions& o) {
  constexpr double kSlow = 4.0;
  std::vector<double> est(exes.size());
  for (size_t j = 0; j < exes.size(); ++j) {
    cuda::Event e0, e1;
    e0.record(bench.stream());
    for (int i = 0; i < 2; ++i) exes[j]->launch(bench.args(size_t(i)), bench.stream());
    e1.record(bench.stream());
    est[j] = e1.elapsed_ms_since(e0);
  }
  const double fastest = *std::min_element(est.begin(), est.end());
  std::vector<Executable*> fast;
  std::vector<size_t> fast_idx, slow;  // slow: positions in exes
  for (size_t j = 0; j < exes.size(); ++j) {
    if (est[j] > kSlow * fastest)
      slow.push_back(j);
    else
      fast.push_back(exes[j]), fast_idx.push_back(idx[j]);
  }
  TuneOptions all = o;
  all.min_time_ms = o.min_time_ms * double(fast.size());
  auto us = time_routings(bench, fast, all);
  for (size_t j = 0; j < fast.size(); ++j) {
    auto u = of_candidate(us, j);
    summarize(bench, cands[fast_idx[j]].result, u);
  }
  for (size_t j : slow) {
    std::vector<Executable*> one{exes[j]};
    auto all_u = time_routings(bench, one, o);
    auto u = of_candidate(all_u, 0);
    summarize(bench, cands[idx[j]].result, u);
  }
}

}  // namespace

double verification_tolerance(const Problem& p, double tolerance) {
  // An e4m3 value carries 3 mantissa bits: rounding alone gives a normalized error of ~2.5% (a relative step of
  // 1/16..1/8, uniformly distributed), so the bound is that of the format, not of the accumulation.
  return is_fp8(p.d.dtype) ? std::max(tolerance, 0.05) : tolerance;
}

size_t timing_set_count(size_t set_bytes, size_t l2_bytes, size_t fit) {
  set_bytes = std::max<size_t>(set_bytes, 1);
  const size_t others = (2 * l2_bytes + set_bytes - 1) / set_bytes;  // sets read between two reads of one
  return std::clamp<size_t>(others + 1, 1, std::clamp<size_t>(fit, 1, 64));
}

void evaluate(const ResolvedProblem& p, std::vector<PreparedCandidate>& cands, const TuneOptions& o,
              const EvaluateHooks& hooks) {
  cuda::ensure_context();
  Bench bench(p);
  // Verify every candidate first (one at a time: a failure is attributed to its candidate) ...
  std::vector<std::unique_ptr<Executable>> exes(cands.size());
  std::vector<size_t> idx;
  std::vector<Executable*> live;
  for (size_t i = 0; i < cands.size(); ++i) {
    CandidateResult& r = cands[i].result;
    if (r.status != Status::pending) {
      if (hooks.on_result) hooks.on_result(i, r);
      continue;
    }
    if (hooks.on_begin) hooks.on_begin(i);
    exes[i] = verify_one(p, bench, cands, i, o, hooks);
    if (!exes[i]) {
      if (hooks.on_result) hooks.on_result(i, r);
      continue;
    }
    if (o.interleave) {
      idx.push_back(i), live.push_back(exes[i].get());
      continue;
    }
    // ... one after another (TuneOptions::interleave off): time it right away.
    try {
      if (o.settle_ms > 0 && idx.empty()) settle(bench, *exes[i], o.settle_ms);
      idx.push_back(i);
      std::vector<Executable*> one{exes[i].get()};
      auto all_us = time_routings(bench, one, o);
      auto us = of_candidate(all_us, 0);
      summarize(bench, r, us);
    } catch (const CudaError& e) {
      if (e.sticky) context_lost(cands, i, e, hooks);
      r.status = Status::launch_error, r.reason = e.what();
    }
    exes[i].reset();
    if (hooks.on_result) hooks.on_result(i, r);
  }
  if (!o.interleave || live.empty()) return;
  // ... then time the verified ones side by side, interleaved round by round: timed one after another, each
  // candidate saw the GPU in another power state (after the idle host-side check of its verification the clocks
  // boost), and on the H200 first timings were up to 15% off their side-by-side numbers.
  if (hooks.on_timing) hooks.on_timing(idx);
  try {
    if (o.settle_ms > 0) settle(bench, *live.front(), o.settle_ms);
    time_side_by_side(bench, cands, idx, live, o);
  } catch (const CudaError& e) {
    // Sticky: reported for none of them (which one did it is not known); the worker's client then times them again
    // one at a time, which tells.
    if (e.sticky) throw;
    for (size_t i : idx) cands[i].result.status = Status::launch_error, cands[i].result.reason = e.what();
  }
  for (size_t i : idx)
    if (hooks.on_result) hooks.on_result(i, cands[i].result);
}

}  // namespace gemmtune
