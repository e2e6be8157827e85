// The routings grouped problems are verified and timed on (tuner/routing.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tuner/routing.h"

using namespace gemmtune;

namespace {

Problem grouped(Grouping how, int64_t m, int64_t groups, int64_t n = 256, int64_t k = 128) {
  Problem p = Problem::make(m, n, k, DType::bf16, DType::bf16);
  p.grouping = how, p.groups = groups;
  p.b.batch_stride = -1, p.d.batch_stride = -1, p.a.batch_stride = -1, p.c.batch_stride = -1;
  p.resolve();
  EXPECT_EQ(p.check(), "") << p.str();
  return p;
}

int64_t total_of(const Problem& p) {
  return p.grouping == Grouping::masked ? (p.groups * p.m + 1) / 2 : p.m;
}

// The invariants of every routing: G counts in [0, cap], the contract's recipe, and the sum.
void check_routings(const Problem& p) {
  SCOPED_TRACE(p.str());
  const auto rs = grouped_routings(p);
  ASSERT_EQ(rs.size(), kRoutingNames.size());
  const int64_t g = p.groups, total = total_of(p);
  const bool masked = p.grouping == Grouping::masked;
  for (size_t r = 0; r < rs.size(); ++r) {
    SCOPED_TRACE(std::string(kRoutingNames[r]));
    const auto& c = rs[r];
    ASSERT_EQ(int64_t(c.size()), g);
    for (int32_t v : c) {
      EXPECT_GE(v, 0);
      EXPECT_LE(v, p.m);
    }
    if (!masked) EXPECT_EQ(routed_rows(c), p.m);  // contiguous: every row of A routed, exactly
    else EXPECT_LE(routed_rows(c), total);
  }
  // uniform: floor(T/G) + (g < T mod G), clamped (never needed: T/G <= M_max).
  for (int64_t i = 0; i < g; ++i)
    EXPECT_EQ(rs[0][size_t(i)], std::min<int64_t>(p.m, total / g + (i < total % g ? 1 : 0))) << i;
  if (masked) EXPECT_EQ(routed_rows(rs[0]), total);
  // skewed: non-increasing (Zipf, leftovers to the first groups), group 0 the hottest; within one row of the exact
  // share before the clamp.
  double sum_w = 0;
  for (int64_t i = 0; i < g; ++i) sum_w += 1.0 / double(i + 1);
  for (int64_t i = 0; i < g; ++i) {
    const double share = double(total) / (double(i + 1) * sum_w);
    const double want = std::min<double>(double(p.m), share);
    EXPECT_LE(std::fabs(double(rs[1][size_t(i)]) - want), 1.0 + 1e-9 * share) << i;
    if (i > 0) EXPECT_LE(rs[1][size_t(i)], rs[1][size_t(i - 1)]) << i;
  }
  // sparse: every fourth group (3, 7, ...) empty, the others even within one row.
  int32_t lo = INT32_MAX, hi = 0;
  for (int64_t i = 0; i < g; ++i) {
    if (i % 4 == 3) {
      EXPECT_EQ(rs[2][size_t(i)], 0) << i;
    } else {
      lo = std::min(lo, rs[2][size_t(i)]), hi = std::max(hi, rs[2][size_t(i)]);
    }
  }
  EXPECT_LE(hi - lo, 1);
  if (g < 4) EXPECT_EQ(rs[2], rs[0]);
  if (masked) EXPECT_EQ(routed_rows(rs[2]), std::min<int64_t>(total, p.m * (g - g / 4)));
}

}  // namespace

TEST(Routing, UngroupedHasNone) {
  EXPECT_TRUE(grouped_routings(Problem::make(64, 64, 64, DType::bf16, DType::bf16)).empty());
}

TEST(Routing, ContiguousSmallExample) {
  const Problem p = grouped(Grouping::contiguous, 100, 8);
  const auto rs = grouped_routings(p);
  EXPECT_EQ(rs[0], (std::vector<int32_t>{13, 13, 13, 13, 12, 12, 12, 12}));
  // 100 * (1/(g+1)) / H_8 with H_8 = 2.717857: floors 36 18 12 9 7 6 5 4 = 97, three left over for groups 0, 1, 2.
  EXPECT_EQ(rs[1], (std::vector<int32_t>{37, 19, 13, 9, 7, 6, 5, 4}));
  // 6 active groups (3 and 7 empty): 100 = 6 * 16 + 4.
  EXPECT_EQ(rs[2], (std::vector<int32_t>{17, 17, 17, 0, 17, 16, 16, 0}));
  EXPECT_EQ(group_rows_of(p, rs[2]), (std::vector<int32_t>{17, 34, 51, 51, 68, 84, 100, 100}));
}

TEST(Routing, MaskedSmallExample) {
  const Problem p = grouped(Grouping::masked, 10, 4);
  EXPECT_EQ(p.batch, 4);
  const auto rs = grouped_routings(p);
  EXPECT_EQ(rs[0], (std::vector<int32_t>{5, 5, 5, 5}));  // T = 20
  // 20 / H_4 (2.0833) = 9.6, 4.8, 3.2, 2.4 -> 9 4 3 2 (18), +1 +1 -> 10 5 3 2; 10 is M_max already.
  EXPECT_EQ(rs[1], (std::vector<int32_t>{10, 5, 3, 2}));
  // 3 active groups: 20 = 7 + 7 + 6, group 3 empty.
  EXPECT_EQ(rs[2], (std::vector<int32_t>{7, 7, 6, 0}));
  EXPECT_EQ(group_rows_of(p, rs[2]), rs[2]);  // masked: the counts themselves
}

TEST(Routing, MaskedClampsTheHotGroup) {
  const Problem p = grouped(Grouping::masked, 64, 32);
  const auto rs = grouped_routings(p);
  EXPECT_EQ(rs[1][0], 64);  // 1024 / H_32 = 253 rows, clamped to M_max
  EXPECT_LT(routed_rows(rs[1]), (32 * 64) / 2);
  check_routings(p);
}

TEST(Routing, ContiguousAllGroupCounts) {
  for (int64_t g = 1; g <= 300; ++g)
    for (int64_t m : {int64_t(1), g / 2 + 1, g - 1 > 0 ? g - 1 : 1, g, g + 1, 7 * g + 3, int64_t(4096), int64_t(65537)})
      check_routings(grouped(Grouping::contiguous, m, g));
}

TEST(Routing, MaskedAllGroupCounts) {
  for (int64_t g = 1; g <= 300; g += (g < 40 ? 1 : 13))
    for (int64_t m : {1, 2, 3, 17, 128, 1000}) check_routings(grouped(Grouping::masked, m, g));
}

TEST(Routing, FewerRowsThanGroupsLeavesGroupsEmpty) {
  const Problem p = grouped(Grouping::contiguous, 5, 64);
  const auto rs = grouped_routings(p);
  for (const auto& c : rs) {
    EXPECT_EQ(routed_rows(c), 5);
    EXPECT_GE(std::count(c.begin(), c.end(), 0), 59);
    const auto ends = group_rows_of(p, c);
    EXPECT_TRUE(std::is_sorted(ends.begin(), ends.end()));
    EXPECT_EQ(ends.back(), 5);
  }
  EXPECT_EQ(rs[0][0], 1);
  EXPECT_EQ(rs[0][5], 0);
  EXPECT_EQ(rs[2][3], 0);  // group 3 empty: rows go to 0, 1, 2, 4, 5
  EXPECT_EQ(rs[2][5], 1);
}

TEST(Routing, CumulativeEnds) {
  const Problem p = grouped(Grouping::contiguous, 1000, 16);
  for (const auto& c : grouped_routings(p)) {
    const auto ends = group_rows_of(p, c);
    ASSERT_EQ(ends.size(), c.size());
    int64_t sum = 0;
    for (size_t i = 0; i < c.size(); ++i) EXPECT_EQ(ends[i], sum += c[i]);
    EXPECT_EQ(ends.back(), 1000);
  }
}

TEST(Routing, RoutedFlopsAndBytes) {
  const Problem c = grouped(Grouping::contiguous, 512, 8, 256, 128);
  EXPECT_DOUBLE_EQ(routed_flops(c, 512), c.flops());
  EXPECT_DOUBLE_EQ(routed_bytes(c, 512), c.min_bytes());
  const Problem m = grouped(Grouping::masked, 64, 8, 256, 128);
  EXPECT_DOUBLE_EQ(routed_flops(m, 8 * 64), m.flops());
  EXPECT_DOUBLE_EQ(routed_bytes(m, 8 * 64), m.min_bytes());
  // Half the rows: half of A and D, all of B (8 x 128 x 256 bf16).
  const double b_bytes = 8.0 * 128 * 256 * 2;
  EXPECT_DOUBLE_EQ(routed_bytes(m, 4 * 64) - b_bytes, 0.5 * (m.min_bytes() - b_bytes));
  EXPECT_DOUBLE_EQ(routed_flops(m, 100), 2.0 * 100 * 256 * 128);
}
