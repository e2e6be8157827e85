// sm90 fused epilogues without a GPU: every op and a few chains compile for sm_90a with zero spills (D row- and
// column-major; GLU halves and interleaved), the generated unit carries the chain as a type (no run-time op list), the
// plain problem's unit is unchanged, and unsupported chains are rejected with a reason.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "backends/sm90/sm90_backend.h"
#include "backends/sm90/sm90_config.h"
#include "gemmtune/epilogue.h"
#include "gemmtune/errors.h"

namespace gemmtune {
namespace {

Problem make(const std::string& chain, Layout ld, DType out, int64_t m = 1000, int64_t n = 2048, int64_t k = 512,
             Layout lb = Layout::col) {
  Problem p = Problem::make(m, n, k, DType::bf16, out, Layout::row, lb);
  p.d.layout = ld;
  p.c = p.d;
  p.epilogue = parse_epilogue(chain);
  p.resolve();
  return p;
}

const char* const kChains[] = {"bias",
                               "bias_row",
                               "relu",
                               "gelu_tanh",
                               "gelu_erf",
                               "silu",
                               "sigmoid",
                               "row_scale",
                               "col_scale",
                               "residual",
                               "bias:f32,gelu_tanh",
                               "bias,residual",
                               "row_scale,col_scale,gelu_erf,residual"};
const char* const kGluChains[] = {"silu_glu", "gelu_tanh_glu:interleave64", "swiglu:interleave8",
                                  "bias,silu_glu:interleave16,col_scale:f32,residual"};

// Compiles the best coop and the best ping-pong candidate that compile without spills (trying at most 8 of each).
void compile_best(const Problem& p) {
  auto be = make_sm90_backend();
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  ASSERT_EQ(be->supports(resolve(p), dev), "") << p.str();
  const auto cands = be->enumerate(resolve(p), dev);
  ASSERT_FALSE(cands.empty()) << p.str();
  bool coop = false, pp = false;
  int tries[2] = {0, 0};
  for (const Candidate& c : cands) {
    const bool is_pp = sm90::Config::parse(c.config).pingpong;
    if ((is_pp ? pp : coop) || ++tries[is_pp] > 8) continue;
    CompileResult r;
    ASSERT_NO_THROW(r = be->compile(resolve(p), c, dev)) << c.str() << " for " << p.str();
    // A spilling compile is skipped by the pipeline, as here: the next candidate of the schedule takes its place.
    (is_pp ? pp : coop) = r.spill_bytes == 0;
    std::printf("%-60s %s: %d regs, %d spill bytes, %.0f ms\n", p.epilogue.key().c_str(), c.config.c_str(),
                r.registers, r.spill_bytes, r.compile_ms);
  }
  EXPECT_TRUE(coop || pp) << "no candidate compiles without spills for " << p.str();
}

TEST(Sm90Epilogue, EveryOpCompilesRowAndColD) {
  for (const char* chain : kChains)
    for (Layout ld : {Layout::row, Layout::col}) compile_best(make(chain, ld, ld == Layout::row ? DType::bf16 : DType::f32));
}

TEST(Sm90Epilogue, GluCompiles) {
  for (const char* chain : kGluChains) compile_best(make(chain, Layout::row, DType::bf16));
  compile_best(make("silu_glu", Layout::row, DType::f16, 512, 4096, 256, Layout::row));  // N-major B halves
}

// Compile-time epilogue flags: n_out * sizeof(D) % 16 != 0 instantiates the staged bounds-checked edge copy
// (kEpiDirect), an odd n_out the scalar operand loads; the aligned tests above cover the pair loads. Zero spills each.
TEST(Sm90Epilogue, RaggedNCompiles) {
  auto ragged = [](const std::string& chain, Layout ld, DType out, int64_t m, int64_t n) {
    Problem p = Problem::make(m, n, 256, DType::bf16, out, Layout::row, Layout::col);
    p.d.layout = ld;
    p.beta = chain == "none" ? 0.5f : 0.0f;
    p.epilogue = parse_epilogue(chain);
    const int64_t no = p.n_out();
    p.d.ld = ((ld == Layout::row ? no : m) + 7) / 8 * 8;
    p.c = p.d;
    p.resolve();
    return p;
  };
  compile_best(ragged("none", Layout::row, DType::bf16, 1000, 1001));          // odd n: direct edge, scalar C
  compile_best(ragged("none", Layout::row, DType::f32, 1000, 1002));           // even n, 8-byte rows: direct, pair C
  compile_best(ragged("bias,gelu_tanh,residual", Layout::row, DType::bf16, 1000, 1001));
  compile_best(ragged("bias,residual", Layout::row, DType::bf16, 1000, 1002));  // direct + pair loads
  compile_best(ragged("bias_row,col_scale,residual", Layout::col, DType::f32, 1002, 1000));  // transposed, pairs
  compile_best(ragged("silu_glu", Layout::row, DType::bf16, 1000, 2 * 1001));  // GLU halves, n_out odd
}

TEST(Sm90Epilogue, Reasons) {
  auto be = make_sm90_backend();
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  const std::string col = be->supports(resolve(make("silu_glu", Layout::col, DType::bf16)), dev);
  EXPECT_NE(col.find("column-major D"), std::string::npos) << col;
  const std::string odd = be->supports(resolve(make("silu_glu:interleave4", Layout::row, DType::bf16)), dev);
  EXPECT_NE(odd.find("multiple of 8"), std::string::npos) << odd;
  // interleave64 needs tile N a multiple of 128.
  const Problem p = make("silu_glu:interleave64", Layout::row, DType::bf16);
  EXPECT_NE(be->validate(resolve(p), {"sm90", "tile=128x192x64,stages=4,cluster=1x1,sched=coop,raster=m,group=8"}, dev),
            "");
  EXPECT_EQ(be->validate(resolve(p), {"sm90", "tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=m,group=8"}, dev),
            "");
  for (const Candidate& c : be->enumerate(resolve(p), dev))
    EXPECT_EQ(sm90::Config::parse(c.config).bn % 128, 0) << c.config;
  // A chain costs the plain problem nothing, and its register pressure is no validity rule: the 192-accumulator
  // ping-pong is valid with and without it; with a chain the ranking lists it after the configs of 128 or fewer.
  const std::string pp192 = "tile=128x192x64,stages=4,cluster=1x1,sched=pingpong,raster=m,group=8";
  const Problem plain = make("none", Layout::row, DType::bf16, 256, 512);
  EXPECT_EQ(be->validate(resolve(plain), {"sm90", pp192}, dev), "");
  const Problem relu = make("relu", Layout::row, DType::bf16, 256, 512);
  EXPECT_EQ(be->validate(resolve(relu), {"sm90", pp192}, dev), "");
  bool wide = false;
  for (const sm90::Config& c : sm90::enumerate_configs(sm90::Analysis(resolve(relu)), dev)) {
    const bool over = sm90::plan(c, sm90::kBF16).acc_regs > 128;
    EXPECT_TRUE(over || !wide) << c.str() << " after a config over 128 accumulators";
    wide |= over;
  }
}

}  // namespace
}  // namespace gemmtune
