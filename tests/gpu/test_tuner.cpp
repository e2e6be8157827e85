// End to end on the GPU: tune -> select -> run, checked against a double-precision CPU reference; the result cache.
// Crash isolation: test_crash_isolation.cpp.
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

using test::FreshCache;

TuneOptions quick() {
  TuneOptions o;
  o.top_k = 3;
  o.min_iters = 10;
  o.min_time_ms = 5;
  o.warmup_iters = 2;
  return o;
}

using test::run_and_check;

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
