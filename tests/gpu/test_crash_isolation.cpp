// No candidate can sink a tune: each way a candidate can fail on the GPU or in the worker process -- a sticky error
// (illegal instruction from `trap`, an illegal address, a misaligned vector load), a hang, a signal, an abort, a wrong
// answer, a write outside D -- injected for real by the worker (GEMMTUNE_WORKER_FAULT, src/tuner/fault_injection.h)
// at the verification and in the timing round, is recorded against that candidate and the tune finishes with the
// others, through the library, the C ABI and the CLI. The protocol itself is tested without a GPU in
// tests/unit/test_worker_protocol.cpp; Python and the torch ops in tests/python/gpu/test_crash_isolation.py.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "gemmtune/c_api.h"
#include "gemmtune/gemm.h"
#include "gemmtune/progress.h"
#include "gpu/gpu_test_util.h"
#include "tuner/serialize.h"

using namespace gemmtune;
namespace fs = std::filesystem;

namespace gemmtune {
inline void PrintTo(Status s, std::ostream* os) { *os << to_string(s); }
}  // namespace gemmtune

namespace {

using test::FreshCache;

struct Fault {
  explicit Fault(const std::string& plan) { setenv("GEMMTUNE_WORKER_FAULT", plan.c_str(), 1); }
  ~Fault() { unsetenv("GEMMTUNE_WORKER_FAULT"); }
};

// Runs the CLI with `args` (stdout and stderr into `out`); its exit status.
int cli(const std::string& args, std::string& out) {
  FILE* pipe = popen((std::string(GEMMTUNE_CLI_PATH) + " " + args + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), pipe)) out.append(buf, n);
  return WEXITSTATUS(pclose(pipe));
}

class CrashIsolation : public test::GpuTest {
 protected:
  static Problem problem() { return Problem::make(384, 256, 320, DType::bf16, DType::bf16); }
  static TuneOptions options() {
    TuneOptions o;
    o.backends = {"cublaslt"};  // several candidates, nothing to compile
    o.top_k = 4;
    o.use_cache = false;
    o.min_iters = 10;
    o.min_time_ms = 2;
    o.warmup_iters = 2;
    o.settle_ms = 0;
    o.max_candidate_s = 3;
    return o;
  }
  // The candidate that fails: the second of the list, so that one before it and one after it are tuned around it.
  static std::string victim() {
    const auto l = list_candidates(problem(), current_device(), {"cublaslt"}, 4);
    EXPECT_GE(l.size(), 3u) << "cuBLASLt offered fewer than 3 algorithms";
    return l.size() > 1 ? l[1].str() : l.at(0).str();
  }
  // Tunes with the fault; the victim must have `want` and a reason containing `why`, every other candidate pass,
  // and the winner run correctly.
  void expect_only_victim_fails(const std::string& kind, const std::string& step, Status want,
                                const std::vector<std::string>& why) {
    FreshCache cache;
    const std::string v = victim();
    TuneReport rep;
    {
      Fault f(kind + "," + step + "," + v);
      rep = Tuner(options()).tune(problem());
    }
    bool seen = false;
    for (const auto& r : rep.results) {
      if (r.candidate.str() == v) {
        seen = true;
        EXPECT_EQ(r.status, want) << kind << " at " << step << ": " << r.reason;
        bool named = why.empty();
        for (const auto& w : why) named = named || r.reason.find(w) != std::string::npos;
        EXPECT_TRUE(named) << kind << " at " << step << ": the reason does not say what happened: " << r.reason;
      } else {
        EXPECT_EQ(r.status, Status::ok) << kind << " at " << step << ": " << r.candidate.str() << ": " << r.reason;
      }
    }
    EXPECT_TRUE(seen) << v << " was not tried";
    ASSERT_TRUE(rep.winner) << kind << " at " << step;
    EXPECT_NE(rep.winner->str(), v);
    const Gemm g = Tuner::load(problem(), *rep.winner);
    EXPECT_LT(test::run_and_check(g, 7), 1e-2);
  }
};

const std::vector<std::string> kTrap = {"CUDA_ERROR_ILLEGAL_INSTRUCTION", "CUDA_ERROR_LAUNCH_FAILED"};

TEST_F(CrashIsolation, TrapAtVerification) { expect_only_victim_fails("trap", "verify", Status::crashed, kTrap); }
TEST_F(CrashIsolation, TrapInTheTimingRound) { expect_only_victim_fails("trap", "timing", Status::crashed, kTrap); }
TEST_F(CrashIsolation, IllegalAddressAtVerification) {
  expect_only_victim_fails("illegal_address", "verify", Status::crashed, {"CUDA_ERROR_ILLEGAL_ADDRESS"});
}
TEST_F(CrashIsolation, IllegalAddressInTheTimingRound) {
  expect_only_victim_fails("illegal_address", "timing", Status::crashed, {"CUDA_ERROR_ILLEGAL_ADDRESS"});
}
TEST_F(CrashIsolation, MisalignedLoadAtVerification) {
  expect_only_victim_fails("misaligned", "verify", Status::crashed, {"CUDA_ERROR_MISALIGNED_ADDRESS"});
}
TEST_F(CrashIsolation, MisalignedLoadInTheTimingRound) {
  expect_only_victim_fails("misaligned", "timing", Status::crashed, {"CUDA_ERROR_MISALIGNED_ADDRESS"});
}
TEST_F(CrashIsolation, HangAtVerification) { expect_only_victim_fails("hang", "verify", Status::timeout, {}); }
TEST_F(CrashIsolation, HangInTheTimingRound) { expect_only_victim_fails("hang", "timing", Status::timeout, {}); }
TEST_F(CrashIsolation, SignalAtVerification) {
  expect_only_victim_fails("segv", "verify", Status::crashed, {"Segmentation fault", "signal"});
}
TEST_F(CrashIsolation, AbortInTheTimingRound) {
  expect_only_victim_fails("abort", "timing", Status::crashed, {"Aborted", "signal"});
}
TEST_F(CrashIsolation, WrongAnswer) { expect_only_victim_fails("wrong", "verify", Status::wrong_result, {"NaN"}); }
TEST_F(CrashIsolation, WriteOutsideD) {
  expect_only_victim_fails("oob_write", "verify", Status::wrong_result, {"outside D"});
}

// The first worker started after a crash fails in its setup (a sticky error while re-creating the inputs and the
// reference): another one goes on with the rest.
TEST_F(CrashIsolation, StickyErrorInTheSetupAfterACrash) {
  FreshCache cache;
  const std::string v = victim();
  std::vector<std::string> lines;
  TuneOptions o = options();
  o.progress = [&](const ProgressEvent& e) { lines.push_back(to_string(e)); };
  TuneReport rep;
  {
    Fault f("illegal_address,verify," + v + ";trap,restart,*");
    rep = Tuner(o).tune(problem());
  }
  for (const auto& r : rep.results)
    EXPECT_EQ(r.status, r.candidate.str() == v ? Status::crashed : Status::ok) << r.candidate.str() << ": " << r.reason;
  EXPECT_TRUE(rep.winner);
  bool retried = false;
  for (const auto& l : lines) retried = retried || l.find("worker: setup failed after") != std::string::npos;
  EXPECT_TRUE(retried) << "the first worker after the crash was to fail in its setup";
}

// No worker can start again after a crash: the rest are skipped with the reason, and select() says that no candidate
// works, listing each one's fate (never another error).
TEST_F(CrashIsolation, NoWorkerAfterACrashEndsInNoCandidateWorks) {
  FreshCache cache;
  const std::string v = victim();
  Fault f("trap,verify," + v + ";trap,restart_always,*");
  try {
    Tuner(options()).select(problem());
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no candidate works"), std::string::npos) << what;
    EXPECT_NE(what.find(v + ": crashed"), std::string::npos) << what;
    EXPECT_NE(what.find("skipped"), std::string::npos) << what;
    return;
  }
  // The candidates verified before the victim have no result until the side-by-side timing: they are skipped too.
  FAIL() << "expected no candidate to pass";
}

// A fault in the first worker's setup is no candidate's: the tune fails with the reason.
TEST_F(CrashIsolation, StickyErrorInTheFirstSetupIsAnError) {
  FreshCache cache;
  Fault f("trap,setup,*");
  try {
    Tuner(options()).tune(problem());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_TRUE(what.find("CUDA_ERROR_ILLEGAL_INSTRUCTION") != std::string::npos ||
                what.find("CUDA_ERROR_LAUNCH_FAILED") != std::string::npos) << what;
  }
}

// The C ABI: gt_tune and gt_select go on past the victim.
TEST_F(CrashIsolation, ThroughTheCAbi) {
  FreshCache cache;
  const std::string v = victim();
  Fault f("misaligned,verify," + v);
  const std::string pj = to_json(Problem(problem()).resolve()).dump();
  const std::string oj = R"({"backends": ["cublaslt"], "top_k": 4, "use_cache": false, "min_iters": 10,
                              "min_time_ms": 2, "settle_ms": 0, "max_candidate_s": 3})";
  char* out = nullptr;
  ASSERT_EQ(gt_tune(pj.c_str(), oj.c_str(), nullptr, nullptr, &out), GT_OK) << gt_last_error();
  const nlohmann::json rep = nlohmann::json::parse(out);
  gt_free(out);
  bool crashed = false;
  for (const auto& r : rep.at("results"))
    if (r.at("backend").get<std::string>() + ":" + r.at("config").get<std::string>() == v)
      crashed = r.at("status") == "crashed";
  EXPECT_TRUE(crashed) << rep.dump();
  EXPECT_FALSE(rep.at("winner").is_null());
  gt_gemm* g = nullptr;
  ASSERT_EQ(gt_select(pj.c_str(), oj.c_str(), nullptr, nullptr, &g), GT_OK) << gt_last_error();
  gt_gemm_destroy(g);
}

// The command line: the issue's LM head over sliced operands (lda 4200, ldb 4100, N = 5003), every backend.
TEST_F(CrashIsolation, CliTunesTheSlicedLmHead) {
  FreshCache cache;
  const std::string args = "tune --m 512 --n 5003 --k 4096 --lda 4200 --ldb 4100 --B bf16:col --top-k 4 --no-cache --json";
  std::string out;
  EXPECT_EQ(cli(args, out), 0) << out;
  EXPECT_NE(out.find("\"winner\""), std::string::npos) << out;
}

// The command line goes on past a candidate that traps in the timing round, and names its fate.
TEST_F(CrashIsolation, CliGoesOnPastACrash) {
  FreshCache cache;
  const std::string v = victim();
  Fault f("trap,timing," + v);
  const std::string args = "tune --m 384 --n 256 --k 320 --backends cublaslt --top-k 4 --no-cache --settle-ms 0";
  std::string out;
  EXPECT_EQ(cli(args, out), 0) << out;
  EXPECT_NE(out.find("crashed"), std::string::npos) << out;
  EXPECT_NE(out.find("winner:"), std::string::npos) << out;
}

// The issue's repro through the library: tuned, selected and run correctly; and no sm90 candidate of it crashes.
TEST_F(CrashIsolation, SlicedLmHeadTunesAndRunsCorrectly) {
  FreshCache cache;
  Problem p = Problem::make(512, 5003, 4096, DType::bf16, DType::bf16, Layout::row, Layout::col);
  p.a.ld = 4200;
  p.b.ld = 4100;
  TuneOptions o;
  o.use_cache = false;
  o.top_k = 0;
  o.backends = {"sm90"};
  o.min_iters = 5;
  o.min_time_ms = 1;
  o.settle_ms = 0;
  const TuneReport rep = Tuner(o).tune(p);
  for (const auto& r : rep.results)
    EXPECT_TRUE(r.status == Status::ok || r.status == Status::unsupported || r.status == Status::spills)
        << r.candidate.str() << ": " << to_string(r.status) << " " << r.reason;
  ASSERT_TRUE(rep.winner);
  EXPECT_LT(test::run_and_check(Tuner::load(p, *rep.winner), 11), 1e-2);
}

}  // namespace
