// The tuner's behaviour on a machine without a GPU (CI): clear errors, never a crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <vector>
#include <string>

#include "gemmtune/gemm.h"
#include "tuner/evaluate.h"
#include "tuner/select.h"
#include "tuner/worker_client.h"

using namespace gemmtune;

TEST(TunerNoGpu, TuneSaysThereIsNoGpu) {
  if (gpu_available()) GTEST_SKIP() << "a GPU is present";
  Tuner t;
  try {
    t.tune(Problem::make(256, 256, 256, DType::bf16, DType::bf16));
    FAIL() << "expected NoGpuError";
  } catch (const NoGpuError& e) {
    EXPECT_FALSE(std::string(e.what()).empty());
  }
}

TEST(TunerNoGpu, InvalidProblemIsRejectedBeforeTheGpu) {
  Tuner t;
  try {
    t.tune(Problem::make(0, 256, 256, DType::bf16, DType::bf16));
    FAIL() << "expected Error";
  } catch (const NoGpuError&) {
    FAIL() << "problem validation must come first";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("M, N, K must be >= 1"), std::string::npos) << e.what();
  }
}

TEST(TunerNoGpu, UnknownBackendIsNamed) {
  TuneOptions o;
  o.backends = {"nosuch"};
  try {
    list_candidates(Problem::make(64, 64, 64, DType::bf16, DType::bf16), DeviceInfo::assumed_sm90(), o.backends);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown backend 'nosuch'"), std::string::npos) << e.what();
  }
}

TEST(TunerNoGpu, ListsSm90CandidatesWithoutGpu) {
  const auto cs = list_candidates(Problem::make(4096, 4096, 4096, DType::bf16, DType::bf16), DeviceInfo::assumed_sm90(),
                                  {"sm90"});
  EXPECT_FALSE(cs.empty());
  for (const auto& c : cs) EXPECT_EQ(c.backend, "sm90");
}

TEST(TunerNoGpu, WorkerIsFoundAndRejectsEmptyInput) {
  setenv("GEMMTUNE_WORKER", GEMMTUNE_WORKER_PATH, 1);
  auto w = find_worker();
  ASSERT_TRUE(w);
  EXPECT_EQ(*w, GEMMTUNE_WORKER_PATH);
  const std::string cmd = std::string(GEMMTUNE_WORKER_PATH) + " </dev/null 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_TRUE(f);
  char buf[512] = {};
  const size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  const int st = pclose(f);
  EXPECT_NE(st, 0);
  EXPECT_NE(std::string(buf, n).find("expected one JSON request"), std::string::npos) << buf;
  setenv("GEMMTUNE_WORKER", "/nonexistent/gemmtune-worker", 1);
  EXPECT_FALSE(find_worker());
  unsetenv("GEMMTUNE_WORKER");
}

namespace {
CandidateResult timed(const char* cfg, double us, const char* status = "ok") {
  CandidateResult r;
  r.candidate = Candidate::parse(cfg);
  r.status = status;
  r.us_median = us;
  return r;
}
}  // namespace

// The runoff and the pick, on the numbers of gate_up_m2048 from the H200 run of 2026-11-21 (session 9, call 3): an
// optimistic one-at-a-time outlier (cuBLASLt's default, 628 us) at the top must not push a 691 us contender out of
// the runoff, and a candidate outside the runoff must not win on its one-at-a-time number.
TEST(TunerSelect, RunoffBandFromTheFourthFastestAndPickAmongTheRaced) {
  std::vector<CandidateResult> rs = {
      timed("sm90:tile=128x192x64,stages=4,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc,tail=sk", 664.35),
      timed("sm90:tile=128x160x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=10", 704.32),
      timed("cublaslt:default", 628.35),
      timed("cublaslt:algo=66,tile=128x256,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=4,cluster=2x1x1,inner=0",
            691.10),
      timed("cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0",
            672.00),
      timed("cublaslt:algo=66,tile=168x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0",
            673.60),
      timed("cublaslt:algo=66,tile=128x192,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=4,cluster=2x1x1,inner=0",
            826.24),
      timed("sm90:tile=128x192x64,stages=4,cluster=1x2,sched=pingpong,raster=m,group=8,tiles=gpc,tail=sk", 0,
            "wrong_result"),
  };
  std::vector<size_t> m = runoff_members(rs, false);
  std::sort(m.begin(), m.end());
  // The 4 fastest (2, 0, 4, 5) and, within 8% of the 4th (673.6 -> 727.5), 691.1 and 704.3; never the failed one.
  EXPECT_EQ(m, (std::vector<size_t>{0, 1, 2, 3, 4, 5}));
  // Side-by-side numbers replace the raced ones; a candidate left out keeps its first number but cannot win on it.
  std::vector<CandidateResult> after = rs;
  after[0].us_median = 699.68, after[2].us_median = 726.16, after[4].us_median = 692.93, after[5].us_median = 695.20;
  EXPECT_EQ(pick_winner(after, {0, 2, 4, 5}), 4);
  EXPECT_EQ(pick_winner(after, {}), 3);  // no runoff: the fastest of all, 691.1 on its first number
  // An explicit list races everything that ran; fewer than two: no runoff.
  EXPECT_EQ(runoff_members(rs, true).size(), 7u);
  EXPECT_TRUE(runoff_members({rs[0], rs[7]}, false).empty());
  EXPECT_EQ(pick_winner({rs[7]}, {}), -1);
}

// The timing's buffer sets (H200: L2 60 MiB): at least 2x L2 of other sets between two reads of one set, so never a
// single set when memory holds two (a 224 MiB set on its own ran 6% fast on the H200: the previous launch's lines).
TEST(TunerTiming, BufferSetsKeepTwiceL2BetweenReadsOfOneSet) {
  const size_t MiB = size_t(1) << 20, l2 = 60 * MiB;
  EXPECT_EQ(timing_set_count(224 * MiB, l2, 100), 2u);  // 1x28672x4096 bf16 (one set before)
  EXPECT_EQ(timing_set_count(112 * MiB, l2, 100), 3u);  // 1x4096x14336: 112 MiB between reads is < 120
  EXPECT_EQ(timing_set_count(120 * MiB, l2, 100), 2u);  // exactly 2x L2
  EXPECT_EQ(timing_set_count(32 * MiB, l2, 100), 5u);   // 4 others = 128 MiB (three = 96 MiB was one set short)
  EXPECT_EQ(timing_set_count(4096, l2, 1000), 64u);     // tiny problems: capped
  EXPECT_EQ(timing_set_count(224 * MiB, l2, 1), 1u);    // memory for one set only
  EXPECT_EQ(timing_set_count(0, l2, 0), 1u);
  for (size_t set = MiB; set < 2048 * MiB; set += 7 * MiB) {
    const size_t n = timing_set_count(set, l2, 1 << 20);
    EXPECT_GE(n, 2u) << set;
    if (n < 64) EXPECT_GE((n - 1) * set, 2 * l2) << set;
    if (n > 2) EXPECT_LT((n - 2) * set, 2 * l2) << set;  // no more than needed
  }
}
