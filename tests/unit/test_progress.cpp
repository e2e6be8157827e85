// Progress events (gemmtune/progress.h): the line each kind prints, and the JSON the C ABI hands over.
#include <gtest/gtest.h>

#include <string>

#include "gemmtune/progress.h"
#include "tuner/serialize.h"

using namespace gemmtune;

namespace {

CandidateResult timed(const char* config, double us) {
  CandidateResult r;
  r.candidate = {"sm90", config};
  r.status = Status::ok;
  r.us_median = us, r.tflops = 512.25, r.error = 1.5e-3;
  return r;
}

TEST(Progress, EachKindPrintsItsLine) {
  const CandidateResult ok = timed("tile=128x128x64", 12.5);
  CandidateResult bad = ok;
  bad.status = Status::wrong_result, bad.reason = "max error 3.0";
  EXPECT_EQ(to_string(ProgressEvent{.kind = ProgressKind::result, .result = ok}),
            "  sm90:tile=128x128x64      12.50 us    512.2 TFLOP/s  err 1.5e-03");
  EXPECT_EQ(to_string(ProgressEvent{.kind = ProgressKind::result, .result = bad}),
            "  sm90:tile=128x128x64: wrong_result (max error 3.0)");
  EXPECT_EQ(to_string(ProgressEvent{.kind = ProgressKind::runoff_result, .result = ok}),
            "  sm90:tile=128x128x64      12.50 us");
  EXPECT_EQ(to_string(ProgressEvent{.kind = ProgressKind::backend_skipped, .backend = "triton", .text = "no triton"}),
            "triton: skipped (no triton)");
  EXPECT_EQ(to_string(ProgressEvent{.kind = ProgressKind::backend_planned, .backend = "sm90", .count = 8, .total = 40}),
            "sm90: 8 of 40 candidates");
  EXPECT_EQ(to_string(ProgressEvent{.kind = ProgressKind::compile_summary, .count = 1, .total = 9, .ms = 812.4}),
            "compiled 9 candidates in 812 ms (1 failed)");
  EXPECT_EQ(to_string(ProgressEvent{.kind = ProgressKind::runoff, .count = 3}), "runoff of the 3 fastest, side by side:");
  EXPECT_EQ(to_string(ProgressEvent{.kind = ProgressKind::evaluating, .isolated = true}),
            "verifying and timing in a worker process");
  EXPECT_EQ(to_string(ProgressEvent{.kind = ProgressKind::warning, .text = "result not cached"}),
            "warning: result not cached");
  EXPECT_EQ(to_string(ProgressEvent{.kind = ProgressKind::cache_hit, .result = ok}), "cache hit: sm90:tile=128x128x64");
}

TEST(Progress, CompileLinesCountWhenCountedAndKeepTheFirstLineOfALog) {
  CandidateResult r = timed("tile=64x64x64", 0);
  r.compile_ms = 1834, r.compile_cache_hit = true;
  EXPECT_EQ(to_string(ProgressEvent{.kind = ProgressKind::compiled, .result = r, .count = 2, .total = 5}),
            "[2/5] sm90:tile=64x64x64: ok 1.8 s (cache hit)");
  r.status = Status::compile_error, r.reason = "error: bad\nmore of the log";
  EXPECT_EQ(to_string(ProgressEvent{.kind = ProgressKind::compiled, .result = r}),
            "  compiled sm90:tile=64x64x64: compile_error (error: bad)");
}

TEST(Progress, JsonCarriesTheKindTheLineAndTheFieldsOfTheKind) {
  const ProgressEvent e{.kind = ProgressKind::result, .result = timed("tile=128x128x64", 7.0)};
  const nlohmann::json j = to_json(e);
  EXPECT_EQ(j.at("kind"), "result");
  EXPECT_EQ(j.at("line"), to_string(e));
  EXPECT_EQ(j.at("result").at("config"), "tile=128x128x64");
  EXPECT_DOUBLE_EQ(j.at("result").at("us_median").get<double>(), 7.0);
  EXPECT_FALSE(j.contains("count"));
  const nlohmann::json s = to_json(ProgressEvent{.kind = ProgressKind::backend_skipped, .backend = "cutlass",
                                                 .text = "no nvcc"});
  EXPECT_EQ(s.at("backend"), "cutlass");
  EXPECT_EQ(s.at("text"), "no nvcc");
  EXPECT_FALSE(s.contains("result"));
}

}  // namespace
