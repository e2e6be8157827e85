// The tuner's side of the worker protocol (src/tuner/worker_client.cpp) against a scripted fake worker
// (data/fake_worker.py): whatever a worker does -- a sticky error reported as a candidate's crash, a death by a
// signal, a hang, a failure in its setup after a crash, a crash while timing side by side -- every candidate ends
// with its own status and the evaluation finishes. The real failures on a GPU are tests/gpu/test_crash_isolation.cpp.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gemmtune/errors.h"
#include "gemmtune/progress.h"
#include "tuner/pipeline.h"
#include "tuner/worker_client.h"

using namespace gemmtune;
namespace fs = std::filesystem;

namespace gemmtune {
inline void PrintTo(Status s, std::ostream* os) { *os << to_string(s); }
}  // namespace gemmtune

namespace {

class WorkerProtocol : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gemmtune-fake-worker-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    state_ = (dir_ / "state").string();
    setenv("GEMMTUNE_TEST_FAKE_STATE", state_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("GEMMTUNE_TEST_FAKE_PLAN");
    unsetenv("GEMMTUNE_TEST_FAKE_STATE");
    fs::remove_all(dir_);
  }
  // Runs evaluate_in_worker over `n` pending candidates with the fake worker following `plan`.
  std::vector<PreparedCandidate> run(const nlohmann::json& plan, size_t n, double max_candidate_s = 30) {
    setenv("GEMMTUNE_TEST_FAKE_PLAN", plan.dump().c_str(), 1);
    std::vector<PreparedCandidate> cands;
    for (size_t i = 0; i < n; ++i) {
      PreparedCandidate pc;
      pc.result.candidate = Candidate{"sm90", "fake" + std::to_string(i)};
      cands.push_back(pc);
    }
    TuneOptions o;
    o.max_candidate_s = max_candidate_s;
    o.progress = [&](const ProgressEvent& e) {
      lines_.push_back(to_string(e));
      if (e.kind == ProgressKind::result) reported_.push_back(e.result->candidate.config);
    };
    evaluate_in_worker(GEMMTUNE_SOURCE_DIR "/tests/unit/data/fake_worker.py",
                       resolve(Problem::make(64, 64, 64, DType::bf16, DType::bf16)), cands, o);
    return cands;
  }
  int starts() const {
    std::ifstream f(state_);
    int n = 0;
    f >> n;
    return n;
  }
  std::vector<nlohmann::json> requests() const {
    std::ifstream f(state_ + ".requests");
    std::vector<nlohmann::json> out;
    for (std::string line; std::getline(f, line);) out.push_back(nlohmann::json::parse(line));
    return out;
  }
  bool said(const std::string& what) const {
    for (const auto& l : lines_)
      if (l.find(what) != std::string::npos) return true;
    return false;
  }
  fs::path dir_;
  std::string state_;
  std::vector<std::string> lines_;
  std::vector<std::string> reported_;  // the candidates of the `result` events, in order
};

using J = nlohmann::json;

// The defect this protocol had: a sticky error reported as the candidate's result ("crashed"), then the worker's
// exit, ended the whole tune ("worker exited with code 3 before running any candidate").
TEST_F(WorkerProtocol, StickyErrorAtVerificationIsThatCandidatesAndTheRestGoOn) {
  const J plan = J::array({
      J::array({J::array({J::array({"ok", 0}), J::array({"begin", 1}),
                          J::array({"result", 1, "crashed", "corrupted the CUDA context: CUDA_ERROR_ILLEGAL_INSTRUCTION"}),
                          J::array({"exit", 3})})}),
      J::array({J::array({J::array({"all_ok"})})}),
  });
  auto c = run(plan, 4);
  EXPECT_EQ(c[0].status(), Status::ok);
  EXPECT_EQ(c[1].status(), Status::crashed);
  EXPECT_NE(c[1].result.reason.find("ILLEGAL_INSTRUCTION"), std::string::npos) << c[1].result.reason;
  EXPECT_EQ(c[2].status(), Status::ok);
  EXPECT_EQ(c[3].status(), Status::ok);
  EXPECT_EQ(starts(), 2);
  const auto reqs = requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[1]["results"].size(), 2u) << "only the candidates left go to the second worker";
  EXPECT_TRUE(reqs[1]["after_failure"].get<bool>());
  // Each candidate's fate is one typed `result` event, the crash included.
  EXPECT_EQ(reported_, (std::vector<std::string>{"fake0", "fake1", "fake2", "fake3"}));
}

TEST_F(WorkerProtocol, SignalWhileACandidateRunsIsThatCandidatesCrash) {
  const J plan = J::array({J::array({J::array({J::array({"begin", 0}), J::array({"signal", 11})})}),
                           J::array({J::array({J::array({"all_ok"})})})});
  auto c = run(plan, 3);
  EXPECT_EQ(c[0].status(), Status::crashed);
  EXPECT_NE(c[0].result.reason.find("signal"), std::string::npos) << c[0].result.reason;
  EXPECT_EQ(c[1].status(), Status::ok);
  EXPECT_EQ(c[2].status(), Status::ok);
}

// A sticky error that the worker could not pin on a candidate (it reports it as "fatal") while a candidate is in
// flight: that candidate crashed, with the error's text.
TEST_F(WorkerProtocol, FatalMessageWhileACandidateRunsNamesTheError) {
  const J plan = J::array({J::array({J::array({J::array({"begin", 0}),
                                               J::array({"fatal", "cuStreamSynchronize failed: CUDA_ERROR_MISALIGNED_ADDRESS"}),
                                               J::array({"exit", 3})})}),
                           J::array({J::array({J::array({"all_ok"})})})});
  auto c = run(plan, 2);
  EXPECT_EQ(c[0].status(), Status::crashed);
  EXPECT_NE(c[0].result.reason.find("MISALIGNED"), std::string::npos) << c[0].result.reason;
  EXPECT_EQ(c[1].status(), Status::ok);
}

// A crash while timing side by side is no one candidate's: they are timed again one at a time, which tells.
TEST_F(WorkerProtocol, CrashWhileTimingSideBySideIsAttributedOneAtATime) {
  const J plan = J::array({
      J::array({J::array({J::array({"begin", 0}), J::array({"begin", 1}), J::array({"begin", 2}),
                          J::array({"timing", J::array({0, 1, 2})}),
                          J::array({"fatal", "CUDA_ERROR_ILLEGAL_ADDRESS"}), J::array({"exit", 3})})}),
      J::array({J::array({J::array({"ok", 0}), J::array({"begin", 1}),
                          J::array({"result", 1, "crashed", "corrupted the CUDA context: CUDA_ERROR_ILLEGAL_ADDRESS"}),
                          J::array({"exit", 3})})}),
      J::array({J::array({J::array({"all_ok"})})}),
  });
  auto c = run(plan, 3);
  EXPECT_EQ(c[0].status(), Status::ok);
  EXPECT_EQ(c[1].status(), Status::crashed);
  EXPECT_EQ(c[2].status(), Status::ok);
  const auto reqs = requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_TRUE(reqs[0]["options"]["interleave"].get<bool>());
  EXPECT_FALSE(reqs[1]["options"]["interleave"].get<bool>());
  EXPECT_TRUE(said("timing them again one at a time"));
}

// The worker started after a crash fails in its setup (re-creating buffers, the reference): another is started.
TEST_F(WorkerProtocol, SetupFailureAfterACrashIsRetried) {
  const J plan = J::array({
      J::array({J::array({J::array({"begin", 0}), J::array({"result", 0, "crashed", "corrupted the CUDA context"}),
                          J::array({"exit", 3})})}),
      J::array({J::array({J::array({"fatal", "problem needs 900 MiB of GPU memory for verification, only 12 MiB free"}),
                          J::array({"exit", 1})})}),
      J::array({J::array({J::array({"exit", 3})})}),
      J::array({J::array({J::array({"all_ok"})})}),
  });
  auto c = run(plan, 3);
  EXPECT_EQ(c[0].status(), Status::crashed);
  EXPECT_EQ(c[1].status(), Status::ok);
  EXPECT_EQ(c[2].status(), Status::ok);
  EXPECT_EQ(starts(), 4);
}

// No worker starts again after a crash: the candidates left are skipped, each with the reason; nothing throws.
TEST_F(WorkerProtocol, NoWorkerAfterACrashSkipsTheRestWithTheReason) {
  const J plan = J::array({
      J::array({J::array({J::array({"begin", 0}), J::array({"result", 0, "crashed", "corrupted the CUDA context"}),
                          J::array({"exit", 3})})}),
      J::array({J::array({J::array({"fatal", "cuInit failed: CUDA_ERROR_UNKNOWN"}), J::array({"exit", 1})})}),
  });
  auto c = run(plan, 3);
  EXPECT_EQ(c[0].status(), Status::crashed);
  for (size_t i : {1u, 2u}) {
    EXPECT_EQ(c[i].status(), Status::skipped);
    EXPECT_NE(c[i].result.reason.find("cuInit failed"), std::string::npos) << c[i].result.reason;
    EXPECT_NE(c[i].result.reason.find("sm90:fake0"), std::string::npos) << c[i].result.reason;
  }
}

// A first worker that cannot set up is the environment's failure (no GPU, too little memory), not a candidate's.
TEST_F(WorkerProtocol, FirstWorkerSetupFailureIsAnError) {
  const J plan = J::array({J::array({J::array({J::array({"fatal", "no GPU: cuInit failed"}), J::array({"done"})})})});
  try {
    run(plan, 2);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no GPU: cuInit failed"), std::string::npos) << e.what();
  }
}

TEST_F(WorkerProtocol, HangIsThatCandidatesTimeout) {
  const J plan = J::array({J::array({J::array({J::array({"begin", 0}), J::array({"sleep", 600})})}),
                           J::array({J::array({J::array({"all_ok"})})})});
  auto c = run(plan, 2, /*max_candidate_s=*/0.5);
  EXPECT_EQ(c[0].status(), Status::timeout);
  EXPECT_EQ(c[1].status(), Status::ok);
}

// A worker that finished a request cleanly serves the next evaluation (no new CUDA context); one whose candidates
// failed on the GPU does not.
TEST_F(WorkerProtocol, CleanWorkerIsKeptForTheNextEvaluation) {
  const J plan = J::array({J::array({J::array({J::array({"all_ok"})})})});
  run(plan, 2);
  run(plan, 3);
  EXPECT_EQ(starts(), 1);
  EXPECT_EQ(requests().size(), 2u);
  const J bad = J::array({J::array({J::array({J::array({"ok", 0}),
                                              J::array({"result", 1, "wrong_result", "normalized error 1"}),
                                              J::array({"done"})})})});
  setenv("GEMMTUNE_TEST_FAKE_STATE", state_.c_str(), 1);
  run(bad, 2);  // a new plan: a new worker
  auto c = run(bad, 2);
  EXPECT_EQ(c[1].status(), Status::wrong_result);
  EXPECT_EQ(starts(), 3) << "a worker that produced a wrong result is not kept";
}

// A kept worker that ended while idle (GEMMTUNE_WORKER_IDLE_S) is replaced without a word.
TEST_F(WorkerProtocol, KeptWorkerThatEndedIsReplaced) {
  const J plan = J::array({J::array({J::array({J::array({"all_ok"})}), J::array({J::array({"exit", 0})})}),
                           J::array({J::array({J::array({"all_ok"})})})});
  run(plan, 2);
  auto c = run(plan, 2);
  EXPECT_EQ(c[0].status(), Status::ok);
  EXPECT_EQ(c[1].status(), Status::ok);
  EXPECT_EQ(starts(), 2);
}

}  // namespace
