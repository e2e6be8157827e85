// sm90 with a D that TMA cannot store (any ld, batch stride, base alignment) without a GPU: the rules accept it, the
// store path names why, the staged copy-out form (kEpiNoTmaD) compiles without spills for coop and ping-pong, 16-bit
// and f32 D, with C, with fused chains (GLU included) and swap=1; problems whose D TMA stores keep their path.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "backends/sm90/sm90_backend.h"
#include "backends/sm90/sm90_config.h"
#include "gemmtune/epilogue.h"
#include "gemmtune/errors.h"

namespace gemmtune {
namespace {

// y = x·Wᵀ (A row-major, B col-major) with a row-major D of pitch `ldd` (0: packed) and base alignment `align`.
Problem make(int64_t m, int64_t n, int64_t k, DType out, int64_t ldd, int align = 16, const std::string& chain = "none",
             float beta = 0.0f, int64_t batch = 1) {
  Problem p = Problem::make(m, n, k, DType::bf16, out, Layout::row, Layout::col, batch);
  p.epilogue = parse_epilogue(chain);
  p.beta = beta;
  p.d.ld = ldd;
  p.d.align = align;
  p.c = p.d;
  p.c.align = 16;
  p.resolve();
  return p;
}

// Compiles candidates of the problem until a coop and a ping-pong one compile without spills (at most `tries` of
// each schedule); `swap_only`: only swap=1 candidates.
void compile_clean(const Problem& p, bool swap_only = false, int tries = 6) {
  auto be = make_sm90_backend();
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  ASSERT_EQ(be->supports(resolve(p), dev), "") << p.str();
  const auto cands = be->enumerate(resolve(p), dev);
  ASSERT_FALSE(cands.empty()) << p.str();
  bool clean[2] = {false, false};
  int tried[2] = {0, 0};
  for (const Candidate& c : cands) {
    const sm90::Config cfg = sm90::Config::parse(c.config);
    const int pp = cfg.pingpong ? 1 : 0;
    if (cfg.swap != swap_only || clean[pp] || tried[pp] >= tries) continue;
    ++tried[pp];
    CompileResult r;
    ASSERT_NO_THROW(r = be->compile(resolve(p), c, dev)) << c.str() << " for " << p.str();
    clean[pp] = r.spill_bytes == 0;
    std::printf("%-70s %s: %d regs, %d spill bytes, %.0f ms\n", p.str().c_str(), c.config.c_str(), r.registers,
                r.spill_bytes, r.compile_ms);
  }
  if (swap_only) {
    EXPECT_TRUE(clean[0] || clean[1]) << "no swap=1 candidate compiles without spills for " << p.str();
  } else {
    EXPECT_TRUE(clean[0]) << "no coop candidate compiles without spills for " << p.str();
    EXPECT_TRUE(clean[1]) << "no ping-pong candidate compiles without spills for " << p.str();
  }
}

TEST(Sm90UnalignedD, RulesAndStorePath) {
  auto be = make_sm90_backend();
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  // The LM head: ldd = 50257 (100514 bytes).
  const Problem lm = make(2048, 50257, 768, DType::bf16, 0);
  EXPECT_EQ(be->supports(resolve(lm), dev), "");
  EXPECT_FALSE(be->enumerate(resolve(lm), dev).empty());
  const sm90::KernelView v = sm90::kernel_view(resolve(lm));
  EXPECT_FALSE(sm90::d_tma_store(v));
  const std::string path = sm90::store_path(lm, v);
  EXPECT_NE(path.find("staged"), std::string::npos) << path;
  EXPECT_NE(path.find("ldd=50257 is not a multiple of 8 elements"), std::string::npos) << path;

  const Problem aligned = make(2048, 4096, 768, DType::bf16, 0);
  EXPECT_TRUE(sm90::d_tma_store(sm90::kernel_view(resolve(aligned))));
  EXPECT_EQ(sm90::store_path(aligned, sm90::kernel_view(resolve(aligned))), "D: TMA store");
  const Problem ragged = make(1000, 1001, 256, DType::bf16, 1008);  // aligned pitch, ragged n: TMA + edge strips
  EXPECT_TRUE(sm90::d_tma_store(sm90::kernel_view(resolve(ragged))));
  EXPECT_NE(sm90::store_path(ragged, sm90::kernel_view(resolve(ragged))).find("edge strips"), std::string::npos);

  const Problem al4 = make(512, 1024, 256, DType::bf16, 0, 4);  // a 4-byte aligned base pointer
  EXPECT_EQ(be->supports(resolve(al4), dev), "");
  EXPECT_NE(sm90::store_path(al4, sm90::kernel_view(resolve(al4))).find("4-byte aligned"), std::string::npos);

  Problem bat = make(256, 256, 128, DType::f32, 0, 16, "none", 0.0f, 3);  // an odd batch stride of D
  bat.d.batch_stride = 256 * 256 + 1;
  bat.c = bat.d;
  bat.resolve();
  EXPECT_EQ(be->supports(resolve(bat), dev), "");
  EXPECT_NE(sm90::store_path(bat, sm90::kernel_view(resolve(bat))).find("batch_stride=65537 is not a multiple of 4"),
            std::string::npos);

  Problem col = make(1001, 512, 256, DType::bf16, 0);  // col-major D with odd M: the view's pitch is 1001
  col.d.layout = Layout::col;
  col.d.ld = 0;
  col.c = col.d;
  col.resolve();
  EXPECT_EQ(be->supports(resolve(col), dev), "");
  EXPECT_NE(sm90::store_path(col, sm90::kernel_view(resolve(col))).find("ldd=1001"), std::string::npos);
  EXPECT_NE(sm90::store_path(col, sm90::kernel_view(resolve(col), true)).find("swap=1"), std::string::npos);
}

// The copy-out form for 16-bit and f32 D at each pitch class and a sub-16-byte base; coop and ping-pong clean.
TEST(Sm90UnalignedDCompile, Plain) {
  compile_clean(make(2048, 50257, 768, DType::bf16, 0));       // the LM head
  compile_clean(make(1000, 1001, 256, DType::bf16, 0));        // ld = 1 (mod 8)
  compile_clean(make(1000, 1000, 256, DType::f16, 1002));      // ld = 2 (mod 8)
  compile_clean(make(1000, 1000, 256, DType::f32, 1001));      // f32, odd ld
  compile_clean(make(1000, 1024, 256, DType::bf16, 1024, 2));  // 2-byte aligned base, aligned ld
}

// C (beta != 0) of odd ld: element loads; of even ld with a D that TMA cannot store: pair loads.
TEST(Sm90UnalignedDCompile, WithC) {
  compile_clean(make(1000, 1001, 256, DType::bf16, 0, 16, "none", 0.5f));
  compile_clean(make(1000, 1000, 256, DType::f32, 1004, 4, "none", 0.5f));
}

TEST(Sm90UnalignedDCompile, FusedChains) {
  compile_clean(make(1000, 1001, 256, DType::bf16, 0, 16, "bias,gelu_tanh"));
  compile_clean(make(1000, 1000, 256, DType::bf16, 1004, 16, "residual"));
  compile_clean(make(1000, 2048, 256, DType::bf16, 1025, 16, "silu_glu"));
  compile_clean(make(1000, 2048, 256, DType::bf16, 1027, 16, "silu_glu:interleave64"));
}

// swap=1 (decode sizes) stores every element from registers: any D.
TEST(Sm90UnalignedDCompile, Swap) {
  compile_clean(make(16, 4097, 1024, DType::bf16, 0), true);
  compile_clean(make(16, 4096, 1024, DType::bf16, 4100, 2, "bias,residual"), true);
}

}  // namespace
}  // namespace gemmtune
