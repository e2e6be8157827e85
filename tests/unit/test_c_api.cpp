// The C ABI (gemmtune/c_api.h) without a GPU: statuses, messages, ownership of returned strings, null arguments.
#include "gemmtune/c_api.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <tuple>
#include <utility>

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
  EXPECT_EQ(gt_cache("get", "", &out), GT_INVALID);
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

// The problem document carries "grouping" and "groups"; the library's answers (key, check, scale lengths) follow.
TEST(CApi, GroupedProblemInfo) {
  auto info = [](const json& p) {
    char* out = nullptr;
    EXPECT_EQ(gt_problem_info(p.dump().c_str(), &out), GT_OK) << gt_last_error();
    return json::parse(take(out));
  };
  json p = json::parse(kProblem);
  p["m"] = 5000;
  p["epilogue"] = "";
  p["grouping"] = "contiguous";
  p["groups"] = 8;
  const json c = info(p);
  EXPECT_EQ(c["check"], "");
  EXPECT_EQ(c["problem"]["grouping"], "contiguous");
  EXPECT_EQ(c["problem"]["groups"], 8);
  EXPECT_EQ(c["problem"]["m"], 5000);
  EXPECT_EQ(c["problem"]["B"]["batch_stride"], 128 * 512);  // B holds G packed matrices
  EXPECT_EQ(c["str"].get<std::string>().rfind("--m=5000 --n=512 --k=128 --groups=8 ", 0), 0u) << c["str"];
  // M is bucketed in the key: 5000 and 8192 tokens share one tuning.
  p["m"] = 8192;
  EXPECT_EQ(info(p)["key"], c["key"]);
  p["m"] = 8193;
  EXPECT_NE(info(p)["key"], c["key"]);

  json q = json::parse(kProblem);
  q["m"] = 64;
  q["grouping"] = "masked";
  q["groups"] = 4;
  q["A"]["dtype"] = "e4m3";
  q["B"]["dtype"] = "e4m3";
  q["scaling"] = "row";
  const json m = info(q);
  EXPECT_EQ(m["check"], "");
  EXPECT_EQ(m["problem"]["batch"], 4);  // resolved: one matrix per group
  EXPECT_EQ(m["scale_len_a"], 4 * 64);
  EXPECT_EQ(m["scale_len_b"], 4 * 512);
  EXPECT_EQ(m["str"].get<std::string>().rfind("--masked-m=64 ", 0), 0u) << m["str"];

  json bad = p;
  bad["groups"] = 0;
  EXPECT_NE(info(bad)["check"].get<std::string>().find("groups must be in [1, 2^31)"), std::string::npos);
  bad = p;
  bad["batch"] = 2;
  EXPECT_NE(info(bad)["check"].get<std::string>().find("batch must be 1"), std::string::npos);
  bad = json::parse(kProblem);
  bad["groups"] = 4;
  EXPECT_NE(info(bad)["check"].get<std::string>().find("needs a grouping"), std::string::npos);
  bad = p;
  bad["grouping"] = "ragged";
  char* out = nullptr;
  EXPECT_EQ(gt_problem_info(bad.dump().c_str(), &out), GT_INVALID);
  EXPECT_NE(std::string(gt_last_error()).find("grouping"), std::string::npos) << gt_last_error();
}

// Only backends that know group_rows may list a grouped problem: the others refuse it (a plain GEMM over the
// same pointers would be a wrong answer).
TEST(CApi, GroupedProblemListsNoUngroupedBackend) {
  json p = json::parse(kProblem);
  p["m"] = 4;
  p["epilogue"] = "";
  p["grouping"] = "contiguous";
  p["groups"] = 2;
  char* out = nullptr;
  ASSERT_EQ(gt_list(p.dump().c_str(), R"({"backends": ["gemv", "cublaslt", "pad"], "assume_sms": 132})", &out), GT_OK)
      << gt_last_error();
  EXPECT_EQ(json::parse(take(out)), json::array());
}

TEST(CApi, RunArgsStructIsChecked) {
  EXPECT_EQ(gt_gemm_run_args(nullptr, nullptr, nullptr), GT_INVALID);
  EXPECT_NE(std::string(gt_last_error()).find("arguments are null"), std::string::npos) << gt_last_error();
  gt_gemm_args args{};
  EXPECT_EQ(gt_gemm_run_args(nullptr, &args, nullptr), GT_INVALID);
  EXPECT_NE(std::string(gt_last_error()).find("too small"), std::string::npos) << gt_last_error();
  args.size = sizeof args;
  EXPECT_EQ(gt_gemm_run_args(nullptr, &args, nullptr), GT_INVALID);
  EXPECT_NE(std::string(gt_last_error()).find("Gemm is null"), std::string::npos) << gt_last_error();
  // A newer caller's larger struct: accepted while its extra fields are unset, refused once one is set.
  struct Newer {
    gt_gemm_args v1;
    const void* extra;
  } newer{};
  newer.v1.size = sizeof newer;
  EXPECT_EQ(gt_gemm_run_args(nullptr, &newer.v1, nullptr), GT_INVALID);
  EXPECT_NE(std::string(gt_last_error()).find("Gemm is null"), std::string::npos) << gt_last_error();
  newer.extra = &newer;
  EXPECT_EQ(gt_gemm_run_args(nullptr, &newer.v1, nullptr), GT_INVALID);
  EXPECT_NE(std::string(gt_last_error()).find("does not know"), std::string::npos) << gt_last_error();
}

TEST(CApi, Version) { EXPECT_FALSE(std::string(gt_version()).empty()); }

}  // namespace

namespace {
// kProblem with `edit` applied; its status from gt_list (which checks the problem) and the message.
std::pair<int, std::string> list_status(const std::function<void(json&)>& edit, const char* options = nullptr) {
  json p = json::parse(kProblem);
  edit(p);
  char* out = nullptr;
  const int st = gt_list(p.dump().c_str(), options, &out);
  take(out);
  return {st, st == GT_OK ? "" : gt_last_error()};
}
}  // namespace

TEST(CApiHostile, ImpossibleValuesAreInvalidNamingTheField) {
  auto [st, msg] = list_status([](json& p) { p["A"]["align"] = (int64_t(1) << 32) + 16; });
  EXPECT_EQ(st, GT_INVALID);
  EXPECT_NE(msg.find("\"align\" must be 2, 4, 8 or 16 (got 4294967312)"), std::string::npos) << msg;
  std::tie(st, msg) = list_status([](json& p) { p["batch"] = 2, p["B"]["batch_stride"] = -7; });
  EXPECT_EQ(st, GT_INVALID);
  EXPECT_NE(msg.find("batch_stride=-7"), std::string::npos) << msg;
  std::tie(st, msg) = list_status([](json& p) { p["m"] = 64.9; });
  EXPECT_EQ(st, GT_INVALID);
  EXPECT_NE(msg.find("\"m\" must be an integer"), std::string::npos) << msg;
  std::tie(st, msg) = list_status([](json& p) { p["alpha"] = 1e-50; });
  EXPECT_EQ(st, GT_INVALID);
  EXPECT_NE(msg.find("\"alpha\" is too small for a float"), std::string::npos) << msg;
  std::string chain = "relu";
  for (int i = 0; i < 16; ++i) chain += ",relu";
  std::tie(st, msg) = list_status([&](json& p) { p["epilogue"] = chain; });
  EXPECT_EQ(st, GT_INVALID);
  EXPECT_NE(msg.find("at most 16"), std::string::npos) << msg;
  std::tie(st, msg) = list_status([](json&) {}, R"({"backends": ["nosuch"]})");
  EXPECT_EQ(st, GT_INVALID);
  EXPECT_NE(msg.find("unknown backend 'nosuch'"), std::string::npos) << msg;
  std::tie(st, msg) = list_status([](json&) {}, R"({"assume_sms": 100000})");
  EXPECT_EQ(st, GT_INVALID);
  EXPECT_NE(msg.find("assume_sms"), std::string::npos) << msg;
}

TEST(CApiHostile, UnknownCandidatesAreInvalidAndValidatedBeforeTheGpu) {
  char* out = nullptr;
  EXPECT_EQ(gt_compile(kProblem, R"({"only": "nosuch:x"})", nullptr, nullptr, &out), GT_INVALID);
  take(out);
  EXPECT_NE(std::string(gt_last_error()).find("unknown backend 'nosuch'"), std::string::npos) << gt_last_error();
  EXPECT_EQ(gt_tune(kProblem, R"({"max_candidate_s": 1e300})", nullptr, nullptr, &out), GT_INVALID);
  take(out);
  gt_gemm* g = nullptr;
  // A config its backend refuses: the caller's input, on a machine with or without a GPU.
  EXPECT_EQ(gt_load(kProblem, "sm90:x", &g), GT_INVALID) << gt_last_error();
  EXPECT_NE(std::string(gt_last_error()).find("sm90"), std::string::npos) << gt_last_error();
  EXPECT_EQ(gt_load(kProblem, "nosuch:x", &g), GT_INVALID) << gt_last_error();
  EXPECT_EQ(g, nullptr);
}
