// The C ABI (gemmtune/c_api.h) without a GPU: statuses, messages, ownership of returned strings, null arguments.
#include "gemmtune/c_api.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace {

using nlohmann::json;

// Takes ownership of a string the ABI returned.
std::string take(char* s) {
  std::string out = s ? s : "";
  gt_free(s);
  return out;
}

const char* kProblem =
    R"({"m":256,"n":512,"k":128,"batch":1,"A":{"dtype":"bf16","layout":"row","ld":0,"batch_stride":-1},)"
    R"("B":{"dtype":"bf16","layout":"col","ld":0,"batch_stride":-1},"C":{"dtype":"bf16","layout":"row","ld":0,)"
    R"("batch_stride":-1},"D":{"dtype":"bf16","layout":"row","ld":0,"batch_stride":-1},"accum":"f32","alpha":1,)"
    R"("beta":0,"epilogue":"bias,silu"})";

TEST(CApi, ProblemInfo) {
  char* out = nullptr;
  ASSERT_EQ(gt_problem_info(kProblem, &out), GT_OK) << gt_last_error();
  const json j = json::parse(take(out));
  EXPECT_EQ(j["check"], "");
  EXPECT_EQ(j["n_out"], 512);
  EXPECT_EQ(j["problem"]["A"]["ld"], 128);
  EXPECT_EQ(j["epilogue_vector_len"]["bias_col"], 512);
  EXPECT_DOUBLE_EQ(j["flops"].get<double>(), 2.0 * 256 * 512 * 128);
}

TEST(CApi, RefusedProblemIsReportedNotFailed) {
  json p = json::parse(kProblem);
  p["m"] = 0;
  char* out = nullptr;
  ASSERT_EQ(gt_problem_info(p.dump().c_str(), &out), GT_OK);
  EXPECT_NE(json::parse(take(out))["check"].get<std::string>(), "");
  // The paths that need a valid problem refuse it as the caller's input.
  EXPECT_EQ(gt_list(p.dump().c_str(), nullptr, &out), GT_INVALID);
  EXPECT_NE(std::string(gt_last_error()).find("M, N, K"), std::string::npos) << gt_last_error();
}

TEST(CApi, MalformedInputIsInvalid) {
  char* out = nullptr;
  EXPECT_EQ(gt_problem_info("{", &out), GT_INVALID);
  EXPECT_EQ(gt_problem_info(nullptr, &out), GT_INVALID);
  EXPECT_EQ(gt_problem_info(R"({"m":1})", &out), GT_INVALID);
  json p = json::parse(kProblem);
  p["epilogue"] = "bias,warp_drive";
  EXPECT_EQ(gt_problem_info(p.dump().c_str(), &out), GT_INVALID);
  EXPECT_NE(std::string(gt_last_error()).find("warp_drive"), std::string::npos);
  EXPECT_EQ(gt_problem_info(kProblem, nullptr), GT_INVALID);
  EXPECT_EQ(gt_list(kProblem, R"({"top_k": -1})", &out), GT_INVALID);
  EXPECT_EQ(gt_list(kProblem, R"({"colour": 1})", &out), GT_INVALID);
  EXPECT_EQ(gt_tune(kProblem, R"({"isolation": "thread"})", nullptr, nullptr, &out), GT_INVALID);
  EXPECT_EQ(gt_tune(kProblem, R"({"only": ["no colon"]})", nullptr, nullptr, &out), GT_INVALID);
  EXPECT_EQ(gt_load(kProblem, nullptr, nullptr), GT_INVALID);
  EXPECT_EQ(gt_cache("frobnicate", nullptr, &out), GT_INVALID);
  EXPECT_EQ(gt_cache("import", nullptr, &out), GT_INVALID);
  EXPECT_EQ(gt_gemm_info(nullptr, &out), GT_INVALID);
  EXPECT_EQ(gt_gemm_run(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                        nullptr, nullptr, nullptr, nullptr),
            GT_INVALID);
  gt_gemm_destroy(nullptr);
}

TEST(CApi, ListAndCompileWithoutAGpu) {
  char* out = nullptr;
  ASSERT_EQ(gt_list(kProblem, R"({"backends": ["sm90"], "top_k": 2, "assume_sms": 132})", &out), GT_OK)
      << gt_last_error();
  const json l = json::parse(take(out));
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].get<std::string>().rfind("sm90:", 0), 0u);
  int lines = 0;
  auto count = [](const char*, void* user) { ++*static_cast<int*>(user); };
  const std::string only = R"({"only": ")" + l[0].get<std::string>() + R"(", "assume_sms": 132})";
  ASSERT_EQ(gt_compile(kProblem, only.c_str(), count, &lines, &out), GT_OK) << gt_last_error();
  const json c = json::parse(take(out));
  ASSERT_EQ(c["candidates"].size(), 1u);
  EXPECT_EQ(c["candidates"][0]["status"], "ok") << c.dump();
  EXPECT_EQ(lines, 1);
}

TEST(CApi, UseDeviceWithoutAGpuSaysSo) {
  char* out = nullptr;
  ASSERT_EQ(gt_device(&out), GT_OK);
  if (json::parse(take(out))["available"].get<bool>()) GTEST_SKIP() << "a GPU is present";
  EXPECT_EQ(gt_use_device(0), GT_NO_GPU);
  EXPECT_STRNE(gt_last_error(), "");
}

TEST(CApi, Version) { EXPECT_FALSE(std::string(gt_version()).empty()); }

}  // namespace
