// The tuner's behaviour on a machine without a GPU (CI): clear errors, never a crash.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "gemmtune/gemm.h"
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
