// The sm90 Spec's structural rules (gt_sm90::spec_error, kernels/sm90/sm90_spec.cuh): the same constexpr function that
// GemmConfig static_asserts, read here on the host and through config_reason.
#include <gtest/gtest.h>

#include <string>

#include "backends/sm90/sm90_config.h"

namespace gemmtune {
namespace {

using gt_sm90::Spec;
using gt_sm90::spec_error;

// The default spec (128x256, cooperative, bf16) is a kernel; the rule is checkable at compile time like the kernels'.
static_assert(spec_error(Spec{}) == nullptr);
static_assert(spec_error(Spec{.bm = 96}) != nullptr);

std::string why(const Spec& s) {
  const char* w = spec_error(s);
  return w ? w : "";
}

TEST(Sm90Spec, EachRuleNamesItsKnob) {
  EXPECT_EQ(why(Spec{.bm = 64, .bn = 128, .pingpong = true}), "");
  EXPECT_EQ(why(Spec{.bm = 64}), "the cooperative schedule needs tile M >= 128");
  EXPECT_EQ(why(Spec{.bm = 256, .bn = 64, .pingpong = true}), "the ping-pong schedule needs tile M <= 128");
  EXPECT_EQ(why(Spec{.bn = 12}), "tile N must be a multiple of 8 in [16, 256]");
  EXPECT_EQ(why(Spec{.stages = 1}), "stages must be in [2, 16]");
  EXPECT_EQ(why(Spec{.cm = 4}), "cluster must be 1x1, 2x1, 1x2 or 2x2");
  EXPECT_EQ(why(Spec{.dynamic = true, .sk = true}), "the stream-K tail (tail=sk) needs a static or gpc tile order");
  EXPECT_EQ(why(Spec{.cm = 2, .cp_a = 8}), "load=cp needs cluster 1x1 (cp.async does not multicast)");
  EXPECT_EQ(why(Spec{.cp_b = 6}), "load=cp takes 4, 8 or 16-byte pieces");
  EXPECT_NE(why(Spec{.bn = 200, .b_mn = true}).find("multiple of 64"), std::string::npos);
  EXPECT_NE(why(Spec{.bm = 256, .bn = 256}).find("exceed the 192"), std::string::npos);  // 256 per thread
  EXPECT_EQ(why(Spec{.in = gt::kE4M3}), "fp8 inputs need a scaling, 16-bit ones take none");
  // Block scaling: tile N 176 starts 112 columns into a 128-column block every eighth tile, spanning three.
  const Spec block{.bn = 176, .in = gt::kE4M3, .scale = gt_sm90::kScaleBlock, .promote = true};
  EXPECT_EQ(why(block),
            "block scaling needs tile N a multiple or a divisor of 128, or one whose tiles span at most two 128-column "
            "B scale blocks (128 - gcd(N, 128) + N <= 256: 144, 160, 192)");
  for (int bn : {64, 128, 144, 160, 192}) {
    Spec s = block;
    s.bn = bn;
    EXPECT_EQ(why(s), "") << bn;
  }
  // An fp8 tile N without a wgmma form is refused by name (the message lists every form built).
  Spec f8 = block;
  f8.bn = 96;
  const std::string no_form = why(f8);
  EXPECT_NE(no_form.find("fp8 inputs need tile N"), std::string::npos) << no_form;
  for (int bn : gt_sm90::kF8TileN) EXPECT_NE(no_form.find(std::to_string(bn)), std::string::npos) << bn;
  EXPECT_EQ(why(Spec{.sk = true, .grouped = 1}), "grouped GEMMs walk their tiles in a static or gpc order, without a "
                                                 "stream-K tail");
}

// config_reason returns the Spec's rule as its message, after the rules that combine the problem and the config.
TEST(Sm90Spec, ConfigReasonReturnsTheSpecRule) {
  Problem p = Problem::make(4096, 4096, 4096, DType::bf16, DType::bf16);
  p.resolve();
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  const std::string base = "stages=4,cluster=1x1,sched=coop,raster=m,group=8";
  const sm90::Analysis an(resolve(p));
  EXPECT_EQ(sm90::config_reason(sm90::Config::parse("tile=128x256x64," + base), an, dev), "");
  const sm90::Config c = sm90::Config::parse("tile=64x256x64," + base);
  EXPECT_EQ(sm90::config_reason(c, an, dev),
            "sm90: " + why(Spec{.bm = 64}) + " (config " + c.str() + ")");
}

}  // namespace
}  // namespace gemmtune
