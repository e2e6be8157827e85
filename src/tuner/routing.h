#pragma once
// The routings a grouped problem is verified and timed on (gemmtune/problem.h, "Grouped GEMMs"). The row counts of a
// mixture-of-experts layer change with every batch of tokens, so a tuned kernel must be good across routings: the
// tuner times every candidate on each of these and ranks it by the mean of its per-routing medians.
//   uniform: M_g = floor(T/G) + (g < T mod G);
//   skewed:  Zipf weights w_g = 1/(g+1), M_g = floor(T * w_g / sum w), the leftover rows one each to groups 0, 1, ...
//            (group 0 is the hottest expert);
//   sparse:  groups with g % 4 == 3 are empty, the others split T as uniform does over them alone.
// T is M for a contiguous problem (every row of A routed); for a masked one T = ceil(G * M_max / 2), and each count is
// then clamped to M_max.
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "gemmtune/problem.h"

namespace gemmtune {

inline constexpr std::array<std::string_view, 3> kRoutingNames = {"uniform", "skewed", "sparse"};

// The row counts of each group (G values, each in [0, M]), one list per routing in the order of kRoutingNames. Empty
// for an ungrouped problem.
std::vector<std::vector<int32_t>> grouped_routings(const Problem& p);

// What GemmArgs::group_rows holds for `counts`: the cumulative row ends (contiguous) or the counts (masked).
std::vector<int32_t> group_rows_of(const Problem& p, const std::vector<int32_t>& counts);

// Rows of A (and D) a routing computes: the sum of its counts.
int64_t routed_rows(const std::vector<int32_t>& counts);

// Flops and the minimal bytes moved when `rows` rows of A are routed (Problem::flops() and min_bytes() at full
// capacity: a contiguous problem, whose routings route every row, or an ungrouped one).
double routed_flops(const Problem& p, int64_t rows);
double routed_bytes(const Problem& p, int64_t rows);

}  // namespace gemmtune
