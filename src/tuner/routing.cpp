#include "tuner/routing.h"

#include <algorithm>
#include <numeric>

namespace gemmtune {

namespace {

// `total` rows split evenly over `groups`, the first total % groups one row more.
std::vector<int64_t> split_uniform(int64_t total, int64_t groups) {
  std::vector<int64_t> c(size_t(groups), 0);
  for (int64_t g = 0; g < groups; ++g) c[size_t(g)] = total / groups + (g < total % groups ? 1 : 0);
  return c;
}

std::vector<int64_t> split_skewed(int64_t total, int64_t groups) {
  long double sum_w = 0;
  for (int64_t g = 0; g < groups; ++g) sum_w += 1.0L / static_cast<long double>(g + 1);
  std::vector<int64_t> c(size_t(groups), 0);
  int64_t assigned = 0;
  for (int64_t g = 0; g < groups; ++g) {
    const long double share = static_cast<long double>(total) / (static_cast<long double>(g + 1) * sum_w);
    c[size_t(g)] = std::clamp<int64_t>(static_cast<int64_t>(share), 0, total);
    assigned += c[size_t(g)];
  }
  // Rounding of the weights can only be off by a row here and there: the floors leave fewer than G rows over, and a
  // sum past the total (long double error on huge totals) is taken back from the coldest groups.
  for (int64_t g = groups - 1; assigned > total && g >= 0; --g)
    if (c[size_t(g)] > 0) --c[size_t(g)], --assigned;
  for (int64_t g = 0; assigned < total; g = (g + 1) % groups) ++c[size_t(g)], ++assigned;
  return c;
}

std::vector<int64_t> split_sparse(int64_t total, int64_t groups) {
  std::vector<int64_t> active;
  for (int64_t g = 0; g < groups; ++g)
    if (g % 4 != 3) active.push_back(g);
  const std::vector<int64_t> even = split_uniform(total, int64_t(active.size()));
  std::vector<int64_t> c(size_t(groups), 0);
  for (size_t i = 0; i < active.size(); ++i) c[size_t(active[i])] = even[i];
  return c;
}

}  // namespace

std::vector<std::vector<int32_t>> grouped_routings(const Problem& p) {
  if (!p.grouped() || p.groups < 1) return {};
  const int64_t g = p.groups;
  const bool masked = p.grouping == Grouping::masked;
  const int64_t total = masked ? (g * p.m + 1) / 2 : p.m;
  std::vector<std::vector<int32_t>> out;
  for (const auto& counts : {split_uniform(total, g), split_skewed(total, g), split_sparse(total, g)}) {
    std::vector<int32_t> c(counts.size());
    for (size_t i = 0; i < counts.size(); ++i)
      c[i] = static_cast<int32_t>(std::clamp<int64_t>(counts[i], 0, masked ? p.m : total));
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<int32_t> group_rows_of(const Problem& p, const std::vector<int32_t>& counts) {
  if (p.grouping != Grouping::contiguous) return counts;
  std::vector<int32_t> ends(counts.size());
  int64_t end = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    end += counts[i];
    ends[i] = static_cast<int32_t>(end);
  }
  return ends;
}

int64_t routed_rows(const std::vector<int32_t>& counts) {
  return std::accumulate(counts.begin(), counts.end(), int64_t(0));
}

double routed_flops(const Problem& p, int64_t rows) {
  return 2.0 * double(rows) * double(p.n) * double(p.k);
}

double routed_bytes(const Problem& p, int64_t rows) {
  // min_bytes() is affine in M: what does not grow with M (B, its scales, the column vectors), plus a cost per row
  // (A, D, C, the residual, A's scales, the row vectors), counted once per routed row.
  Problem none = p;
  none.m = 0;
  const double fixed = none.min_bytes();
  const double all_rows = double(p.m) * double(p.batch);
  const double per_row = all_rows > 0 ? (p.min_bytes() - fixed) / all_rows : 0.0;
  return fixed + per_row * double(rows);
}

}  // namespace gemmtune
