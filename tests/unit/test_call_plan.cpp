// gt_call_plan (src/capi/call_plan.h): the plan of a binding's call from its tensors' metadata, for every op kind,
// with each refusal rule, each scaling, the grouped forms and the copies an input needs.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "gemmtune/c_api.h"

namespace {

using nlohmann::json;
using Dims = std::vector<int64_t>;

json tensor(Dims shape, Dims strides, const std::string& dtype = "torch.bfloat16", int align = 16) {
  return {{"shape", shape}, {"strides", strides}, {"dtype", dtype}, {"align", align}};
}
// A packed (row-major, contiguous) tensor.
json packed(Dims shape, const std::string& dtype = "torch.bfloat16") {
  Dims s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return tensor(shape, s, dtype);
}
// The weight (N, K) of a linear seen as the GEMM's B (K, N): column-major.
json weight_t(int64_t k, int64_t n, const std::string& dtype = "torch.bfloat16") {
  return tensor({k, n}, {1, k}, dtype);
}

json call(const std::string& kind, json tensors, json extra = json::object()) {
  json c = {{"op", "gemmtune.test"}, {"kind", kind}, {"tensors", tensors}};
  c.update(extra);
  return c;
}

json plan(const json& c) {
  char* out = nullptr;
  const int st = gt_call_plan(c.dump().c_str(), &out);
  EXPECT_EQ(st, GT_OK) << gt_last_error() << "\n" << c.dump();
  json j = out ? json::parse(out) : json();
  gt_free(out);
  return j;
}

// The refusal's message; fails the test when the call is planned.
std::string refusal(const json& c) {
  char* out = nullptr;
  const int st = gt_call_plan(c.dump().c_str(), &out);
  gt_free(out);
  EXPECT_EQ(st, GT_INVALID) << c.dump();
  return st == GT_INVALID ? gt_last_error() : "";
}

#define EXPECT_REFUSED(c, needle)                                    \
  do {                                                               \
    const std::string msg_ = refusal(c);                             \
    EXPECT_NE(msg_.find(needle), std::string::npos) << msg_;         \
    EXPECT_EQ(msg_.rfind("gemmtune.test: ", 0), 0u) << msg_;         \
  } while (0)

TEST(CallPlan, EveryPlainKind) {
  json j = plan(call("mm", {{"a", packed({64, 128})}, {"b", weight_t(128, 96)}}));
  EXPECT_FALSE(j["empty"]);
  EXPECT_EQ(j["problem"]["m"], 64);
  EXPECT_EQ(j["problem"]["B"]["layout"], "col");
  EXPECT_EQ(j["out"]["shape"], Dims({64, 96}));
  EXPECT_EQ(j["out"]["dtype"], "bf16");
  EXPECT_TRUE(j["copies"].empty());
  EXPECT_NE(j["key"].get<std::string>().find("m64"), std::string::npos);

  // bmm: a batch of A against one B broadcast with a zero batch stride.
  j = plan(call("bmm", {{"a", packed({4, 64, 128})}, {"b", tensor({4, 128, 96}, {0, 96, 1})}}));
  EXPECT_EQ(j["problem"]["batch"], 4);
  EXPECT_EQ(j["problem"]["B"]["batch_stride"], 0);
  EXPECT_EQ(j["out"]["shape"], Dims({4, 64, 96}));
  EXPECT_EQ(j["out"]["from"], json::parse(R"([["a", 0], ["a", 1], ["b", 2]])"));  // the input dim each one is

  // linear: x (2, 5, K) flattened to M = 10 without a copy, the weight (N, K) as nn.Linear's.
  j = plan(call("linear", {{"a", packed({2, 5, 64})}, {"b", packed({96, 64})}}, {{"epilogue", "silu_glu"}}));
  EXPECT_EQ(j["problem"]["m"], 10);
  EXPECT_EQ(j["problem"]["B"]["layout"], "col");
  EXPECT_EQ(j["out"]["shape"], Dims({2, 5, 48}));
  EXPECT_EQ(j["out"]["from"], json::parse(R"([["a", 0], ["a", 1], ["b", 0, 2]])"));  // N / 2 after the GLU
  EXPECT_EQ(j["epilogue"], "silu_glu");

  // gemm: an fp16 GEMM with C (beta != 0) and a given out used as D.
  j = plan(call("gemm",
                {{"a", packed({64, 128}, "f16")}, {"b", packed({128, 96}, "f16")}, {"c", packed({64, 96}, "f16")},
                 {"out", packed({64, 96}, "f16")}},
                {{"beta", 0.5}}));
  EXPECT_TRUE(j["out_direct"]);
  EXPECT_EQ(j["problem"]["beta"], 0.5);
  EXPECT_EQ(j["problem"]["C"]["dtype"], "f16");
}

TEST(CallPlan, EpilogueTensorsGiveTheirDtypes) {
  const json j = plan(call("linear",
                           {{"a", packed({8, 64})}, {"b", packed({96, 64})}, {"bias", packed({96}, "torch.float32")},
                            {"residual", packed({8, 96})}},
                           {{"epilogue", "gelu_tanh,residual"}}));
  EXPECT_EQ(j["epilogue"], "bias:f32,gelu_tanh,residual:bf16");  // the bias not named comes first
}

TEST(CallPlan, ScalingsOfFlatScales) {
  const json a = packed({64, 256}, "torch.float8_e4m3fn"), b = weight_t(256, 96, "torch.float8_e4m3fn");
  const auto sc = [&](int64_t na, int64_t nb) {
    return plan(call("gemm", {{"a", a}, {"b", b}, {"scale_a", packed({na}, "f32")}, {"scale_b", packed({nb}, "f32")}},
                     {{"out_dtype", "torch.bfloat16"}}))["scaling"];
  };
  EXPECT_EQ(sc(1, 1), "tensor");
  EXPECT_EQ(sc(64, 96), "row");
  EXPECT_EQ(sc(64 * 2, 1 * 2), "block");
  EXPECT_REFUSED(call("gemm", {{"a", a}, {"b", b}, {"scale_a", packed({3}, "f32")}, {"scale_b", packed({1}, "f32")}}),
                 "no scaling gemmtune knows");
  EXPECT_REFUSED(call("gemm", {{"a", a}, {"b", b}}), "need scale_b");
}

TEST(CallPlan, ScaledMmTakesTorchScales) {
  const json a = packed({64, 256}, "torch.float8_e4m3fn"), b = weight_t(256, 96, "torch.float8_e4m3fn");
  const auto scaled = [&](json sa, json sb) {
    return call("scaled_mm", {{"a", a}, {"b", b}, {"scale_a", sa}, {"scale_b", sb}}, {{"out_dtype", "bf16"}});
  };
  EXPECT_EQ(plan(scaled(packed({}, "f32"), packed({}, "f32")))["scaling"], "tensor");
  EXPECT_EQ(plan(scaled(packed({64, 1}, "f32"), packed({1, 96}, "f32")))["scaling"], "row");
  // Block scales are read through their transposes: torch's outer-dim-major layout as it is, a row-major one copied.
  json j = plan(scaled(tensor({64, 2}, {1, 64}, "f32"), tensor({2, 1}, {1, 2}, "f32")));
  EXPECT_EQ(j["scaling"], "block");
  EXPECT_TRUE(j["copies"].empty());
  j = plan(scaled(packed({64, 2}, "f32"), packed({2, 1}, "f32")));
  EXPECT_EQ(j["copies"]["scale_a"]["strides"], Dims({1, 64}));
  EXPECT_REFUSED(scaled(packed({64, 2}, "f32"), packed({2, 96}, "f32")), "no scaling gemmtune supports");
  EXPECT_REFUSED(scaled(packed({64, 1}, "torch.bfloat16"), packed({1, 96}, "f32")), "float32 scales");
  json asked = scaled(packed({}, "f32"), packed({}, "f32"));
  asked["scaling"] = "row";
  EXPECT_REFUSED(asked, "scaling 'row' was asked for, but the scales' shapes say tensor");
  // As torch._scaled_mm: scale_result scales an fp8 output only.
  j = plan(call("scaled_mm", {{"a", a}, {"b", b}, {"scale_a", packed({}, "f32")}, {"scale_b", packed({}, "f32")},
                              {"scale_d", packed({}, "f32")}},
                {{"out_dtype", "bf16"}}));
  EXPECT_EQ(j["unused"], json::array({"scale_d"}));
}

// The accumulation mode (torch's use_fast_accum) is an input of the plan: it reaches the problem, its key and str().
TEST(CallPlan, Fp8AccumReachesTheProblem) {
  const json a = packed({64, 256}, "torch.float8_e4m3fn"), b = weight_t(256, 96, "torch.float8_e4m3fn");
  const auto scaled = [&](json extra) {
    extra["out_dtype"] = "bf16";
    return call("scaled_mm", {{"a", a}, {"b", b}, {"scale_a", packed({}, "f32")}, {"scale_b", packed({}, "f32")}},
                extra);
  };
  json j = plan(scaled(json::object()));
  EXPECT_EQ(j["problem"]["fp8_accum"], "exact");
  EXPECT_NE(j["key"].get<std::string>().find(":fp8acc=exact"), std::string::npos) << j["key"];
  j = plan(scaled({{"fp8_accum", "fast"}}));
  EXPECT_EQ(j["problem"]["fp8_accum"], "fast");
  EXPECT_NE(j["key"].get<std::string>().find(":fp8acc=fast"), std::string::npos) << j["key"];
  EXPECT_NE(j["str"].get<std::string>().find("--fp8-accum=fast"), std::string::npos) << j["str"];
  // Block scales promote every 128-K block: fast is refused; so is fast for a 16-bit product, and a bad name.
  json blk = scaled({{"fp8_accum", "fast"}});
  blk["tensors"]["scale_a"] = tensor({64, 2}, {1, 64}, "f32");
  blk["tensors"]["scale_b"] = tensor({2, 1}, {1, 2}, "f32");
  EXPECT_REFUSED(blk, "fp8_accum=fast with scaling=block");
  EXPECT_REFUSED(call("mm", {{"a", packed({8, 64})}, {"b", packed({64, 8})}}, {{"fp8_accum", "fast"}}),
                 "fp8_accum=fast applies to fp8 A and B");
  EXPECT_NE(refusal(scaled({{"fp8_accum", "on"}})).find("\"fp8_accum\" must be exact or fast"), std::string::npos);
}

TEST(CallPlan, CopiesForUnalignedAndStridedInputs) {
  // No unit stride: A is copied (packed) and described as the copy.
  json j = plan(call("mm", {{"a", tensor({64, 128}, {256, 2})}, {"b", weight_t(128, 96)}}));
  EXPECT_EQ(j["copies"]["a"]["strides"], Dims({128, 1}));
  EXPECT_EQ(j["problem"]["A"]["align"], 16);
  // A sliced view 2 bytes off alignment is read as it is (align 2); fp8 at an odd address is copied.
  j = plan(call("mm", {{"a", tensor({64, 128}, {130, 1}, "bf16", 2)}, {"b", weight_t(128, 96)}}));
  EXPECT_EQ(j["problem"]["A"]["align"], 2);
  EXPECT_TRUE(j["copies"].empty());
  j = plan(call("gemm", {{"a", tensor({32, 64}, {64, 1}, "e4m3", 1)}, {"b", weight_t(64, 48, "e4m3")},
                         {"scale_a", packed({1}, "f32")}, {"scale_b", packed({1}, "f32")}}));
  EXPECT_TRUE(j["copies"].contains("a"));
  // A residual in another layout than D's, a strided bias, an x whose leading dims do not collapse.
  j = plan(call("gemm", {{"a", packed({64, 128})}, {"b", weight_t(128, 96)}, {"residual", tensor({64, 96}, {1, 64})},
                         {"bias", tensor({96}, {2})}},
                {{"epilogue", "residual"}}));
  EXPECT_EQ(j["copies"]["residual"]["strides"], Dims({96, 1}));
  EXPECT_EQ(j["copies"]["bias"]["strides"], Dims({1}));
  j = plan(call("linear", {{"a", tensor({2, 5, 64}, {64, 128, 1})}, {"b", packed({96, 64})}}));
  EXPECT_EQ(j["copies"]["a"]["strides"], Dims({320, 64, 1}));
  EXPECT_EQ(j["problem"]["m"], 10);
}

TEST(CallPlan, EmptyOutputsLaunchNothing) {
  const json j = plan(call("mm", {{"a", packed({0, 64})}, {"b", weight_t(64, 96)}}));
  EXPECT_TRUE(j["empty"]);
  EXPECT_EQ(j["out"]["shape"], Dims({0, 96}));
  EXPECT_FALSE(j.contains("problem"));
}

TEST(CallPlan, PlainRefusals) {
  const json a = packed({8, 64}), b = weight_t(64, 96);
  EXPECT_REFUSED(call("mm", {{"a", packed({2, 8, 64})}, {"b", b}}), "must be 2-D");
  EXPECT_REFUSED(call("bmm", {{"a", packed({2, 8, 64})}, {"b", packed({3, 64, 96})}}), "batch sizes differ");
  EXPECT_REFUSED(call("gemm", {{"a", packed({2, 8, 64})}, {"b", packed({3, 64, 96})}}), "neither is 1");
  EXPECT_REFUSED(call("mm", {{"a", a}, {"b", weight_t(63, 96)}}), "inner dims (K) differ");
  EXPECT_REFUSED(call("linear", {{"a", a}, {"b", packed({96, 32})}}), "K differs");
  EXPECT_REFUSED(call("linear", {{"a", a}, {"b", packed({96, 64})}, {"out", packed({8, 96})}}), "out is not taken");
  EXPECT_REFUSED(call("mm", {{"a", packed({8, 64}, "torch.float32")}, {"b", b}}), "torch.float32, which");
  EXPECT_REFUSED(call("mm", {{"a", packed({8, 64}, "torch.float8_e4m3fn")}, {"b", b}}),
                 "go through gemmtune.scaled_mm");
  EXPECT_REFUSED(call("scaled_mm", {{"a", a}, {"b", b}}), "must be float8");
  EXPECT_REFUSED(call("mm", {{"a", packed({8, 0})}, {"b", weight_t(0, 96)}}), "K is 0");
  EXPECT_REFUSED(call("mm", {{"a", a}, {"b", weight_t(64, 95)}}, {{"epilogue", "silu_glu"}}), "even N (got N=95)");
  EXPECT_REFUSED(call("mm", {{"a", a}, {"b", b}}, {{"epilogue", "bias"}}), "no bias tensor was given");
  EXPECT_REFUSED(call("gemm", {{"a", a}, {"b", b}, {"residual", packed({8, 96})}}), "no op that reads it");
  EXPECT_REFUSED(call("gemm", {{"a", a}, {"b", b}, {"bias", packed({96})}}, {{"epilogue", "bias:f32"}}),
                 "make them agree");
  EXPECT_REFUSED(call("gemm", {{"a", a}, {"b", b}, {"bias", packed({96}, "torch.int32")}}), "epilogue tensors are");
  EXPECT_REFUSED(call("gemm", {{"a", a}, {"b", b}, {"bias", packed({95})}}), "95 elements");
  EXPECT_REFUSED(call("gemm", {{"a", a}, {"b", b}, {"bias", packed({96, 2})}}), "must be a vector");
  EXPECT_REFUSED(call("gemm", {{"a", a}, {"b", b}, {"out", packed({8, 95})}}), "out has shape (8, 95)");
  EXPECT_REFUSED(call("gemm", {{"a", a}, {"b", b}}, {{"out_dtype", "torch.int32"}}), "output dtype torch.int32");
  EXPECT_REFUSED(call("gemm", {{"a", a}, {"b", b}}, {{"beta", 1.0}}), "needs c");
  EXPECT_REFUSED(call("gemm", {{"a", a}, {"b", b}, {"scale_a", packed({1}, "f32")}}), "apply to float8 inputs");
  EXPECT_REFUSED(call("gemm", {{"a", a}, {"b", b}}, {{"epilogue", "bogus_op"}}), "unknown op 'bogus_op'");
  // The Problem's own check() reaches the caller with the op's name.
  EXPECT_REFUSED(call("gemm", {{"a", a}, {"b", b}, {"residual", packed({8, 48})}}, {{"epilogue", "residual,silu_glu"}}),
                 "residual");
}

TEST(CallPlan, GroupedForms) {
  const json b = tensor({8, 256, 384}, {384 * 256, 1, 256});  // expert weights (G, N, K) seen as (G, K, N)
  json j = plan(call("grouped", {{"a", packed({5000, 256})}, {"b", b}, {"offs", packed({8}, "torch.int32")}}));
  EXPECT_EQ(j["problem"]["grouping"], "contiguous");
  EXPECT_EQ(j["problem"]["groups"], 8);
  EXPECT_EQ(j["problem"]["B"]["batch_stride"], 384 * 256);
  // Another token count of the same power-of-two bucket shares the key; one past it does not.
  const auto key = [&](int64_t m) {
    return plan(call("grouped", {{"a", packed({m, 256})}, {"b", b}, {"offs", packed({8}, "torch.int32")}}))["key"];
  };
  EXPECT_EQ(key(5000), key(8192));
  EXPECT_NE(key(8192), key(8193));
  // The output pitch is padded to 16 bytes, as torch._grouped_mm's.
  j = plan(call("grouped", {{"a", packed({100, 64})}, {"b", tensor({4, 64, 100}, {6400, 1, 64})},
                            {"offs", packed({4}, "torch.int32")}}));
  EXPECT_EQ(j["out"]["strides"], Dims({104, 1}));
  j = plan(call("grouped_masked", {{"a", packed({8, 64, 256})}, {"b", b}, {"offs", packed({8}, "torch.int32")}},
                {{"epilogue", "silu_glu"}}));
  EXPECT_EQ(j["problem"]["grouping"], "masked");
  EXPECT_EQ(j["problem"]["batch"], 8);
  EXPECT_EQ(j["out"]["shape"], Dims({8, 64, 192}));
  EXPECT_EQ(j["out"]["from"], json::parse(R"([["b", 0], ["a", 1], ["b", 2, 2]])"));
  j = plan(call("grouped", {{"a", packed({8, 64, 256})}, {"b", b}}));
  EXPECT_EQ(j["problem"]["grouping"], "none");
  EXPECT_EQ(j["problem"]["batch"], 8);
}

TEST(CallPlan, GroupedScales) {
  const json a = packed({300, 256}, "torch.float8_e4m3fn");
  const json b = tensor({8, 256, 384}, {384 * 256, 1, 256}, "torch.float8_e4m3fn");
  const json offs = packed({8}, "torch.int32");
  json j = plan(call("scaled_grouped",
                     {{"a", a}, {"b", b}, {"offs", offs}, {"scale_a", packed({300}, "f32")},
                      {"scale_b", packed({8, 384}, "f32")}}));
  EXPECT_EQ(j["scaling"], "row");
  EXPECT_EQ(j["out"]["dtype"], "bf16");
  j = plan(call("scaled_grouped", {{"a", a}, {"b", b}, {"offs", offs}, {"scale_a", packed({300, 2}, "f32")},
                                   {"scale_b", packed({8, 2, 3}, "f32")}}));
  EXPECT_EQ(j["scaling"], "block");
  EXPECT_EQ(j["copies"]["scale_a"]["strides"], Dims({1, 300}));
  EXPECT_EQ(j["copies"]["scale_b"]["strides"], Dims({6, 1, 2}));
  EXPECT_REFUSED(call("scaled_grouped", {{"a", a}, {"b", b}, {"offs", offs}, {"scale_a", packed({300}, "f32")},
                                         {"scale_b", packed({8, 95}, "f32")}}),
                 "no scaling gemmtune takes here");
  EXPECT_REFUSED(call("scaled_grouped", {{"a", a}, {"b", b}, {"offs", offs}, {"scale_a", packed({300}, "f32")},
                                         {"scale_b", packed({8, 384}, "f32")}, {"scale_d", packed({1}, "f32")}}),
                 "scale_result is not supported");
}

TEST(CallPlan, GroupedRefusals) {
  const json a = packed({300, 64}), b = tensor({8, 64, 96}, {6144, 1, 64}), offs = packed({8}, "torch.int32");
  EXPECT_REFUSED(call("grouped", {{"a", a}, {"b", b}, {"offs", packed({8}, "torch.int64")}}), "torch.int64");
  EXPECT_REFUSED(call("grouped", {{"a", a}, {"b", b}, {"offs", packed({7}, "torch.int32")}}), "offs has 7 elements");
  EXPECT_REFUSED(call("grouped", {{"a", a}, {"b", b}, {"offs", tensor({8}, {2}, "torch.int32")}}), "contiguous");
  EXPECT_REFUSED(call("grouped", {{"a", a}, {"b", b}}), "needs offs");
  EXPECT_REFUSED(call("grouped", {{"a", a}, {"b", packed({64, 96})}, {"offs", offs}}), "K-grouped form");
  EXPECT_REFUSED(call("grouped", {{"a", packed({8, 30, 64})}, {"b", packed({64, 96})}}), "N-grouped form");
  EXPECT_REFUSED(call("grouped", {{"a", packed({3, 100, 64})}, {"b", b}}), "holds 3 groups");
  EXPECT_REFUSED(call("grouped_masked", {{"a", a}, {"b", b}, {"offs", offs}}), "masked form takes");
  EXPECT_REFUSED(call("grouped", {{"a", a}, {"b", b}, {"offs", offs}}, {{"epilogue", "relu,residual"}}),
                 "reads a tensor the grouped ops do not take");
  EXPECT_REFUSED(call("grouped_masked", {{"a", packed({8, 32, 64})}, {"b", b}, {"offs", offs}}, {{"epilogue", "bias"}}),
                 "grouped_mm_masked takes none");
  EXPECT_REFUSED(call("grouped", {{"a", a}, {"b", b}, {"offs", offs}, {"bias", packed({8, 96})}}),
                 "per-group biases are not supported");
  EXPECT_REFUSED(call("grouped", {{"a", a}, {"b", b}, {"offs", offs}, {"bias", packed({96})}},
                      {{"epilogue", "silu_glu,bias"}}),
                 "bias of 48 values (the bias follows the GLU");
  EXPECT_REFUSED(call("grouped", {{"a", packed({300, 64}, "torch.float32")}, {"b", b}, {"offs", offs}}), "autocast");
  EXPECT_REFUSED(call("grouped", {{"a", a}, {"b", b}, {"offs", offs}}, {{"out_dtype", "e4m3"}}), "out_dtype e4m3");
}

TEST(CallPlan, MalformedCallsAreInvalid) {
  for (const json& c : {call("conv", {{"a", packed({8, 64})}, {"b", packed({64, 8})}}),
                        call("mm", {{"a", packed({8, 64})}}),
                        call("mm", {{"a", packed({8, 64})}, {"b", packed({64, 8})}, {"weights", packed({1})}}),
                        call("mm", {{"a", tensor({8, 64}, {64})}, {"b", packed({64, 8})}}),
                        json{{"kind", "mm"}, {"tensors", 3}}}) {
    char* out = nullptr;
    EXPECT_EQ(gt_call_plan(c.dump().c_str(), &out), GT_INVALID) << c.dump();
    EXPECT_EQ(out, nullptr);
  }
  // Sizes and strides that would overflow a product are refused, as is an output too large to address.
  EXPECT_REFUSED(call("mm", {{"a", packed({1 << 30, 1})}, {"b", packed({1, 1 << 30})}}), "too many elements");
  for (const json& t : {tensor({int64_t(1) << 31, 1}, {1, 1}), tensor({2, 2}, {int64_t(1) << 40, 1}),
                        packed({1 << 30, 1 << 30})}) {
    char* none = nullptr;
    EXPECT_EQ(gt_call_plan(call("mm", {{"a", t}, {"b", packed({1, 8})}}).dump().c_str(), &none), GT_INVALID);
  }
  char* out = nullptr;
  EXPECT_EQ(gt_call_plan("{", &out), GT_INVALID);
  EXPECT_EQ(gt_call_plan(nullptr, &out), GT_INVALID);
}

}  // namespace
