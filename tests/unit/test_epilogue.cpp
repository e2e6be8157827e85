// Epilogue model (parse/print, validation, keys) and its device code (every chain's elementwise kernel compiles).
#include <gtest/gtest.h>

#include "tuner/reference.h"

#include <set>
#include <string>
#include <vector>

#include "core/epilogue_codegen.h"
#include "gemmtune/gemm.h"
#include "jit/jit.h"

using namespace gemmtune;

namespace {

Problem with_epi(const std::string& spec, int64_t m = 128, int64_t n = 256, int64_t k = 64,
                 DType out = DType::bf16) {
  Problem p = Problem::make(m, n, k, DType::bf16, out);
  p.epilogue = parse_epilogue(spec);
  p.d.ld = 0;  // packed D follows n_out()
  p.resolve();
  return p;
}

void expect_reason(const Problem& p, const std::string& needle) {
  const std::string why = p.check();
  EXPECT_NE(why.find(needle), std::string::npos) << "reason was: '" << why << "', expected to mention '" << needle << "'";
}

void expect_parse_error(const std::string& spec, const std::string& needle) {
  try {
    parse_epilogue(spec);
    ADD_FAILURE() << "'" << spec << "' parsed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

const std::vector<std::string> kChains = {
    "none",          "bias",           "bias_row",          "relu",           "gelu_tanh",
    "gelu_erf",      "silu",           "sigmoid",           "row_scale",      "col_scale",
    "residual",      "bias,relu",      "bias,gelu_tanh",    "bias_row,gelu_erf", "bias,residual",
    "silu_glu",      "gelu_tanh_glu",  "sigmoid_glu",       "relu_glu:interleave64", "bias,silu_glu,residual",
    "row_scale,col_scale,silu", "silu_glu,col_scale", "bias:f32,gelu_tanh", "residual:f32", "col_scale:f16,bias:bf16"};

}  // namespace

TEST(Epilogue, ParsePrintRoundTrip) {
  for (const std::string& s : kChains) {
    const Epilogue e = parse_epilogue(s);
    EXPECT_EQ(e.key(), s) << s;
    EXPECT_EQ(parse_epilogue(e.key()), e) << s;
  }
}

TEST(Epilogue, AliasesAreCanonicalized) {
  EXPECT_EQ(parse_epilogue("bias_col,gelu").key(), "bias,gelu_erf");
  EXPECT_EQ(parse_epilogue("swiglu").key(), "silu_glu");
  EXPECT_EQ(parse_epilogue("glu").key(), "sigmoid_glu");
  EXPECT_EQ(parse_epilogue(" Bias , SWISH ").key(), "bias,silu");
  EXPECT_EQ(parse_epilogue("silu_glu:halves").key(), "silu_glu");
  EXPECT_EQ(parse_epilogue("residual:row:f32").key(), "residual:f32:row");
  EXPECT_TRUE(parse_epilogue("none").empty());
  EXPECT_TRUE(parse_epilogue("").empty());
}

TEST(Epilogue, ParseErrorsNameTheOp) {
  expect_parse_error("bias,,relu", "empty op");
  expect_parse_error("bias,tanh", "unknown op 'tanh'");
  expect_parse_error("relu:f32", "activations take none");
  expect_parse_error("bias:col", "a dtype");
  expect_parse_error("silu_glu:interleave", "interleave<B>");
  expect_parse_error("silu_glu:interleave0", "interleave<B>");
  expect_parse_error("silu_glu:f32", "unknown GLU parameter");
  expect_parse_error("bias:f32:bf16", "dtype given twice");
  expect_parse_error("foo_glu", "unknown op");
}

TEST(Epilogue, InvalidChainsHaveClearMessages) {
  expect_reason(with_epi("silu_glu", 64, 255), "a GLU needs an even N");
  expect_reason(with_epi("silu_glu:interleave64", 64, 192), "needs N divisible by 2*64=128");
  expect_reason(with_epi("silu_glu,gelu_tanh_glu"), "at most one GLU");
  expect_reason(with_epi("bias,bias_row"), "at most one bias");
  expect_reason(with_epi("row_scale,relu,row_scale"), "'row_scale' appears more than once");
  expect_reason(with_epi("residual,silu_glu"), "the residual must come after the GLU");
  expect_reason(with_epi("bias:e4m3"), "must be bf16, f16 or f32");
  Problem beta = with_epi("silu_glu");
  beta.beta = 1.0f;
  expect_reason(beta, "beta*C with a GLU is not supported");
  Problem res = with_epi("residual:col");  // D is row-major
  expect_reason(res, "the residual must have D's layout (row-major), got col-major");
  EXPECT_EQ(with_epi("residual:row").check(), "");
  EXPECT_THROW(with_epi("silu_glu", 64, 255).validate(), Error);
}

TEST(Epilogue, VectorLengths) {
  const Problem p = with_epi("bias,silu_glu,col_scale,row_scale", 100, 256);
  EXPECT_EQ(p.check(), "");
  EXPECT_EQ(p.epilogue_vector_len(EpiOpKind::bias_col), 256);  // before the GLU: the GEMM's N
  EXPECT_EQ(p.epilogue_vector_len(EpiOpKind::col_scale), 128);  // after it: D's N/2
  EXPECT_EQ(p.epilogue_vector_len(EpiOpKind::row_scale), 100);
  EXPECT_EQ(p.epilogue_vector_len(EpiOpKind::bias_row), 0);
  EXPECT_EQ(p.check_epilogue_vector(EpiOpKind::bias_col, 256), "");
  EXPECT_NE(p.check_epilogue_vector(EpiOpKind::bias_col, 255).find("bias has 255 elements, needs 256"),
            std::string::npos);
  EXPECT_NE(p.check_epilogue_vector(EpiOpKind::col_scale, 256).find("needs 128 (N/2"), std::string::npos);
  EXPECT_NE(p.check_epilogue_vector(EpiOpKind::bias_row, 100).find("has no bias_row"), std::string::npos);
}

TEST(Epilogue, GluHalvesD) {
  const Problem p = with_epi("silu_glu", 64, 512, 128);
  EXPECT_EQ(p.check(), "");
  EXPECT_EQ(p.n_out(), 256);
  EXPECT_EQ(Problem::cols_of(Which::D, p), 256);
  EXPECT_EQ(Problem::cols_of(Which::B, p), 512);
  EXPECT_EQ(p.d.ld, 256);
  const Problem plain = Problem::make(64, 512, 128, DType::bf16, DType::bf16);
  EXPECT_LT(p.min_bytes(), plain.min_bytes());
  EXPECT_DOUBLE_EQ(p.flops(), plain.flops());
  // A padded ld is checked against N/2.
  Problem q = p;
  q.d.ld = 255;
  expect_reason(q, "ldd=255 is too small");
}

TEST(Epilogue, KeysDiffer) {
  std::set<std::string> keys;
  for (const std::string& s : kChains) keys.insert(with_epi(s).key());
  EXPECT_EQ(keys.size(), kChains.size());
  // An unset dtype means D's: the problem key spells it out, so both spellings share a cache entry.
  EXPECT_EQ(with_epi("bias").key(), with_epi("bias:bf16").key());
  EXPECT_NE(with_epi("bias").key(), with_epi("bias:f32").key());
  EXPECT_NE(with_epi("residual").key(), with_epi("residual:f32").key());
  EXPECT_NE(with_epi("silu_glu").key(), with_epi("silu_glu:interleave64").key());
  EXPECT_NE(with_epi("silu_glu").key(), with_epi("gelu_tanh_glu").key());
  EXPECT_NE(with_epi("bias,relu").key(), with_epi("relu,bias").key());
  // str() round-trips the chain for the CLI.
  EXPECT_NE(with_epi("bias,gelu_tanh").str().find("--epilogue=bias,gelu_tanh"), std::string::npos);
}

TEST(Epilogue, ChainTypes) {
  EXPECT_EQ(epi::chain_type(with_epi("bias,gelu_tanh")),
            "gemmtune_epi::Epi<gemmtune_epi::Ops<gemmtune_epi::BiasCol<0>, "
            "gemmtune_epi::Activate<gemmtune_epi::GeluTanh>>, gemmtune_epi::NoGlu, gemmtune_epi::Ops<>>");
  EXPECT_EQ(epi::chain_type(with_epi("silu_glu:interleave64,residual:f32")),
            "gemmtune_epi::Epi<gemmtune_epi::Ops<>, gemmtune_epi::Glu<gemmtune_epi::Silu, 64>, "
            "gemmtune_epi::Ops<gemmtune_epi::Residual<2, 1>>>");
}

// Every chain's separate elementwise kernel compiles for sm_90a with NVRTC (no GPU needed), for each D dtype.
TEST(Epilogue, ElementwiseKernelsCompile) {
  for (DType out : {DType::bf16, DType::f16, DType::f32})
    for (const std::string& s : kChains) {
      const Problem p = with_epi(s, 128, 256, 64, out);
      ASSERT_EQ(p.check(), "") << s;
      const std::string src = epi::elementwise_source(p, p.d.dtype, "gt_epi_test");
      try {
        auto cubin = jit::compile(src, "gt_epi_test", {}, "epilogue " + s);
        EXPECT_FALSE(cubin->image.empty()) << s;
        EXPECT_EQ(cubin->spill_bytes, 0) << s;
      } catch (const Error& e) {
        ADD_FAILURE() << s << " (" << dtype_name(out) << "): " << e.what() << "\n" << src;
      }
    }
}

// The verification reference's epilogue (kernels/reference/gemm_ref.cuh) compiles too.
TEST(Epilogue, ReferenceEpilogueCompiles) {
  const std::string src =
      "#include \"reference/gemm_ref.cuh\"\nusing namespace gemmtune_ref;\n"
      "extern \"C\" __global__ void gt_ref_epilogue_test(const float* in, float* out, RefEpi e) { epilogue_ref(in, out, e); }\n";
  EXPECT_FALSE(jit::compile(src, "gt_ref_epilogue_test", {}, "reference epilogue")->image.empty());
}

// The tuner's reference units (src/tuner/reference.cpp) compile, each in well under the ~7 s that one unit of all 27
// GEMM dtype combinations took (the first tune on a machine pays it).
TEST(ReferenceUnits, CompileWithoutGpu) {
  for (const std::string unit : {"util", "gemm_000", "gemm_112", "gemm_222", "gemm_332s", "gemm_432s", "gemm_032s"}) {
    const std::string name = unit == "util" ? "gt_ref_fill_0" : "gt_ref_" + unit;
    auto cubin = jit::compile(reference_unit_source(unit), name, {}, "reference " + unit);
    EXPECT_FALSE(cubin->image.empty()) << unit;
    EXPECT_EQ(cubin->spill_bytes, 0) << unit;
    std::printf("reference unit %s: %.0f ms%s\n", unit.c_str(), cubin->compile_ms, cubin->cache_hit ? " (cached)" : "");
  }
}

TEST(EpilogueHostile, GluLayoutGivenTwiceIsAnError) {
  // One layout per GLU, as one dtype per operand ("bias:f32:f16" is an error too): no silent "last wins".
  for (const char* spec : {"swiglu:halves:interleave64", "swiglu:interleave64:halves", "glu:interleave8:interleave16"})
    try {
      parse_epilogue(spec);
      ADD_FAILURE() << spec << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("GLU layout given twice"), std::string::npos) << e.what();
    }
  EXPECT_THROW(parse_epilogue("bias:f32:f16"), Error);
}

TEST(EpilogueHostile, OneOpChainIsNotNamedTwice) {
  try {
    parse_epilogue("swiglu:bogus");
    FAIL();
  } catch (const Error& e) {
    const std::string w = e.what();
    EXPECT_EQ(w.find("swiglu:bogus"), w.rfind("swiglu:bogus")) << "the spec is repeated: " << w;
  }
}
