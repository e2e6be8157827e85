// End to end on the GPU: tune -> select -> run, checked against a double-precision CPU reference; crash recovery of
// the worker; the result cache.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "cuda/memory.h"
#include "gemmtune/gemm.h"
#include "gpu/gpu_test_util.h"
#include "tuner/result_cache.h"

using namespace gemmtune;

namespace gemmtune {
// gtest prints a Status by its name.
inline void PrintTo(Status s, std::ostream* os) { *os << to_string(s); }
}  // namespace gemmtune
namespace fs = std::filesystem;

namespace {

struct FreshCache {
  std::string dir;
  FreshCache() {
    char tmpl[] = "/tmp/gemmtune-tuner-test-XXXXXX";
    dir = mkdtemp(tmpl);
    setenv("GEMMTUNE_CACHE_DIR", dir.c_str(), 1);  // the worker (found next to the library) inherits it
  }
  ~FreshCache() { fs::remove_all(dir); }
};

TuneOptions quick() {
  TuneOptions o;
  o.top_k = 3;
  o.min_iters = 10;
  o.min_time_ms = 5;
  o.warmup_iters = 2;
  return o;
}

// Runs the Gemm on fresh random inputs with a poisoned D and returns the normalized error vs the CPU reference.
double run_and_check(const Gemm& g, uint64_t seed) {
  const Problem& p = g.problem();
  std::mt19937_64 rng(seed);
  auto a = test::random_operand(p, 'A', rng), b = test::random_operand(p, 'B', rng);
  std::vector<uint8_t> c;
  if (p.beta != 0.0f) c = test::random_operand(p, 'C', rng);
  auto d = test::poisoned_operand(p, 'D');
  cuda::DeviceBuffer da(a.size()), db(b.size()), dc(c.size()), dd(d.size());
  da.upload(a.data(), a.size());
  db.upload(b.data(), b.size());
  if (!c.empty()) dc.upload(c.data(), c.size());
  dd.upload(d.data(), d.size());
  g.run({da.get(), db.get(), c.empty() ? nullptr : dc.get(), dd.get()});
  dd.download(d.data(), d.size());
  EXPECT_EQ(test::written_outside(p, d), 0) << g.candidate().str();
  return test::normalized_error(p, d, test::reference_d(p, a, b, c));
}

// Every test here needs a GPU: the fixture skips them without one.
class TunerGpu : public test::GpuTest {};

}  // namespace

TEST_F(TunerGpu, SelectRunsCorrectlyAcrossLayouts) {
  FreshCache cache;
  Tuner t(quick());
  int n = 0;
  for (Layout la : {Layout::row, Layout::col})
    for (Layout lb : {Layout::row, Layout::col}) {
      Problem p = Problem::make(200 + 8 * n, 136, 264, DType::bf16, DType::bf16, la, lb);
      if (n % 2) p.d = {p.d.dtype, Layout::col, 0, -1}, p.resolve();  // col-major D, packed
      ++n;
      Gemm g = t.select(p);
      const double err = run_and_check(g, 1234 + n);
      EXPECT_LE(err, 1e-2) << p.str() << " winner " << g.candidate().str();
    }
}

TEST_F(TunerGpu, BatchedBetaAndF32Output) {
  FreshCache cache;
  Tuner t(quick());
  Problem p = Problem::make(96, 80, 130, DType::f16, DType::f32, Layout::row, Layout::col, 3);
  p.beta = 0.5f;
  p.alpha = 1.5f;
  p.c.dtype = DType::f32;
  Gemm g = t.select(p);
  EXPECT_LE(run_and_check(g, 99), 1e-2) << g.candidate().str();
}

TEST_F(TunerGpu, Fp32InputsRunOnCublasLt) {
  FreshCache cache;
  Tuner t(quick());
  Problem p = Problem::make(100, 90, 70, DType::f32, DType::f32, Layout::col, Layout::row, 2);
  Gemm g = t.select(p);
  EXPECT_EQ(g.candidate().backend, "cublaslt");  // sm90 takes 16-bit inputs only
  EXPECT_LE(run_and_check(g, 7), 1e-5) << g.candidate().str();  // full fp32, not TF32
}

TEST_F(TunerGpu, SecondTuneIsACacheHit) {
  FreshCache cache;
  Tuner t(quick());
  const Problem p = Problem::make(512, 512, 512, DType::bf16, DType::bf16);
  TuneReport first = t.tune(p);
  ASSERT_TRUE(first.winner);
  EXPECT_FALSE(first.cache_hit);
  TuneReport second = t.tune(p);
  EXPECT_TRUE(second.cache_hit);
  ASSERT_TRUE(second.winner);
  EXPECT_EQ(*second.winner, *first.winner);
  // Every reported ok candidate was verified.
  for (const auto& r : first.results)
    if (r.status == Status::ok) EXPECT_TRUE(r.error >= 0 && r.error <= 1e-2) << r.candidate.str();
}

// A cache file is input (it may come from another machine): a cached winner that its backend rejects for the problem,
// or of a backend that is not there, is a miss and the problem is tuned again.
TEST_F(TunerGpu, CachedWinnerIsValidatedOnAHit) {
  FreshCache cache;
  Tuner t(quick());
  const Problem p = Problem::make(512, 512, 512, DType::bf16, DType::bf16);
  TuneReport first = t.tune(p);
  ASSERT_TRUE(first.winner);
  ResultCache rc;
  for (const char* planted : {"sm90:tile=8x8x8,stages=1", "nosuch:anything"}) {
    auto e = rc.get(first.cache_key);
    ASSERT_TRUE(e);
    e->record["winner"] = planted;
    rc.put(*e);
    TuneReport again = t.tune(p);
    EXPECT_FALSE(again.cache_hit) << planted << " was used from the cache";
    ASSERT_TRUE(again.winner);
    EXPECT_NE(again.winner->str(), planted);
  }
}

TEST_F(TunerGpu, CrashingCandidateIsRecordedAndTuningGoesOn) {
  FreshCache cache;
  TuneOptions o = quick();
  o.backends = {"cublaslt"};
  o.use_cache = false;
  setenv("GEMMTUNE_WORKER_CRASH_ON", "cublaslt:default", 1);
  Tuner t(o);
  TuneReport rep = t.tune(Problem::make(256, 256, 256, DType::bf16, DType::bf16));
  unsetenv("GEMMTUNE_WORKER_CRASH_ON");
  bool saw_crash = false;
  for (const auto& r : rep.results)
    if (r.candidate.config == "default") {
      EXPECT_EQ(r.status, Status::crashed) << r.reason;
      saw_crash = true;
    }
  EXPECT_TRUE(saw_crash);
  ASSERT_TRUE(rep.winner) << "the other candidates must still be tuned";
  EXPECT_NE(rep.winner->config, "default");
}

TEST_F(TunerGpu, RunRejectsNullPointers) {
  FreshCache cache;
  Problem p = Problem::make(64, 64, 64, DType::bf16, DType::bf16);
  p.beta = 1.0f;
  Gemm g = Tuner::load(p, Candidate{"cublaslt", "default"});
  cuda::DeviceBuffer buf(64 * 64 * 2);
  EXPECT_THROW(g.run({nullptr, buf.get(), buf.get(), buf.get()}), Error);
  EXPECT_THROW(g.run({buf.get(), buf.get(), nullptr, buf.get()}), Error);  // beta != 0 needs C
}

TEST_F(TunerGpu, CompareTimesSideBySide) {
  FreshCache cache;
  TuneOptions o = quick();
  const Problem p = Problem::make(1024, 1024, 1024, DType::bf16, DType::bf16);
  auto rs = compare(p, {Candidate{"cublaslt", "default"}, Candidate{"cublaslt", "default"}}, o);
  ASSERT_EQ(rs.size(), 2u);
  for (const auto& r : rs) {
    EXPECT_EQ(r.status, Status::ok) << r.reason;
    EXPECT_GT(r.us_median, 0);
    EXPECT_GE(r.timed_iters, o.min_iters);
  }
}

// The verified candidates are timed side by side; a worker that dies then (no one candidate to blame) is replaced by
// one that times them one at a time, and every candidate still gets its numbers.
TEST_F(TunerGpu, CrashWhileTimingSideBySideFallsBackToOneAtATime) {
  FreshCache cache;
  TuneOptions o = quick();
  o.backends = {"cublaslt"};
  o.use_cache = false;
  std::vector<std::string> lines;
  o.progress = [&](const std::string& s) { lines.push_back(s); };
  setenv("GEMMTUNE_WORKER_CRASH_ON_TIMING", "1", 1);
  Tuner t(o);
  TuneReport rep = t.tune(Problem::make(256, 256, 256, DType::bf16, DType::bf16));
  unsetenv("GEMMTUNE_WORKER_CRASH_ON_TIMING");
  ASSERT_GE(rep.results.size(), 2u);
  for (const auto& r : rep.results) {
    EXPECT_EQ(r.status, Status::ok) << r.candidate.str() << ": " << r.reason;
    EXPECT_GE(r.timed_iters, o.min_iters) << r.candidate.str();
  }
  EXPECT_TRUE(rep.winner);
  bool fell_back = false;
  for (const auto& s : lines) fell_back = fell_back || s.find("timing them again one at a time") != std::string::npos;
  EXPECT_TRUE(fell_back) << "the first worker was to die when the side-by-side timing started";
}

// Both timing modes, in this process: every verified candidate is timed (min_iters at least) and a winner picked.
TEST_F(TunerGpu, SideBySideAndOneAtATimeTimeEveryCandidate) {
  FreshCache cache;
  for (bool interleave : {true, false}) {
    TuneOptions o = quick();
    o.use_cache = false;
    o.isolation = Isolation::in_process;
    o.interleave = interleave;
    Tuner t(o);
    TuneReport rep = t.tune(Problem::make(640, 520, 384, DType::bf16, DType::bf16));
    int ok = 0;
    for (const auto& r : rep.results) {
      if (r.status != Status::ok) continue;
      ++ok;
      EXPECT_GE(r.timed_iters, o.min_iters) << r.candidate.str() << " interleave " << interleave;
      EXPECT_GT(r.us_median, 0) << r.candidate.str();
      EXPECT_TRUE(r.error >= 0 && r.error <= 1e-2) << r.candidate.str();
    }
    EXPECT_GE(ok, 4) << "interleave " << interleave;
    EXPECT_TRUE(rep.winner);
  }
}
