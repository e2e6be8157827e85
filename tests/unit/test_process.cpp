// run_process: what the compiler-driving backends (Triton's helper, nvcc) see of a child.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "core/process.h"
#include "gemmtune/errors.h"

namespace gemmtune {
namespace {

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

TEST(Process, OutputErrorAndExitStatus) {
  const ProcessResult r = run_process({"sh", "-c", "echo out; echo err >&2; exit 3"}, 30);
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.status, 3);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_TRUE(contains(r.output(), "out") && contains(r.output(), "err")) << r.output();
}

TEST(Process, RunsInTheGivenDirectory) {
  const ProcessResult r = run_process({"pwd"}, 30, "/tmp");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "/tmp\n");
}

TEST(Process, DeadlineKillsTheWholeGroup) {
  // The shell's child holds the pipes open after the shell is gone: only a kill of the group ends it in time.
  const auto t0 = std::chrono::steady_clock::now();
  const ProcessResult r = run_process({"sh", "-c", "sleep 30 & sleep 30"}, 0.3);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.status, -1);
  EXPECT_LT(s, 10.0);
}

TEST(Process, AProgramThatDoesNotExistIsNotStarted) {
  const ProcessResult r = run_process({"/nonexistent/tool"}, 5);
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.spawn_errno, 0);
  EXPECT_THROW(run_process({}, 5), Error);
}

}  // namespace
}  // namespace gemmtune
