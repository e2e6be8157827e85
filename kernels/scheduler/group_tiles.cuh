#pragma once
// The tiles of a grouped GEMM (GemmConfig::GROUPED; gemmtune::Grouping), whose group sizes live only on the device
// (GemmParams::group_rows), walked by the persistent kernels without a host sync:
//   - at launch, warp 0 of every CTA reads the G ends (contiguous) or counts (masked) and writes the tile prefix
//     P[g] = sum over h < g of ceil(M_h / BM), P[G] = all of the problem's tile rows, into shared memory
//     (group_prefix; G <= kMaxGroups); the CTA's barrier in init_pipeline publishes it;
//   - the TileScheduler then walks P[G] tile rows by ctn tile columns, exactly as a dense GEMM of P[G] * BM rows:
//     every index is a real tile, so the static round robin stays balanced and the CTAs stay in step (the tiles that
//     share a group's B run together, as dense tiles sharing B do);
//   - tile row i belongs to the group g with P[g] <= i < P[g + 1] (a binary search over P in shared memory, log2 G
//     steps per tile); its first row is start(g) + (i - P[g]) * BM: start(g) = end[g - 1] (contiguous, rows global,
//     A's, C's and D's batch coordinate 0) or 0 (masked: batch coordinate g).
// B's batch coordinate is the group in both forms. A tile runs BM rows from its first one, reading the next group's
// rows of A (or TMA's zero fill) past its group's end; the epilogue stores rows below `m_end` only.
// Every CTA of a cluster (1 x CN: they share A's rows) sees the same tile row, so they agree on the group.
// Ends or counts outside [0, M] and decreasing ends (the caller's error) are clamped: a group then has no rows or
// fewer, and no tile reaches rows outside [0, M).
#include "ptx/ptx.cuh"
#include "scheduler/tile_scheduler.cuh"
#include "sm90/sm90_spec.cuh"

namespace gt_sm90 {

struct GroupTile {
  int m0, n0;  // first row (global for contiguous, within batch ba for masked) and column
  int m_end;   // rows [m0, m_end) belong to the tile's group
  int g;       // the group: B's batch coordinate, and the fp8 scale offsets
  int ba;      // A's, C's and D's batch coordinate
};

// Group g's rows: [start, end) of the contiguous form's one matrix, or [0, count) of its own (masked).
template <int GROUPED>
__device__ __forceinline__ void group_rows_of(const GemmParams& p, int g, int& start, int& end) {
  auto clampm = [&](int x) { return x < 0 ? 0 : (x > p.m ? p.m : x); };
  end = clampm(__ldg(p.group_rows + g));
  start = GROUPED == 2 || g == 0 ? 0 : clampm(__ldg(p.group_rows + g - 1));
  if (start > end) start = end;
}

// Warp 0 at launch: the tile prefix P[0 .. G] at `prefix` (shared memory). Lane l sums the tiles of groups
// [l * chunk, (l + 1) * chunk), a warp scan turns the sums into offsets, and each lane writes its groups' entries.
template <int GROUPED, int BM>
__device__ __forceinline__ void group_prefix(unsigned prefix, const GemmParams& p, int lane) {
  const int G = p.groups, chunk = (G + 31) / 32, g0 = lane * chunk, g1 = g0 + chunk < G ? g0 + chunk : G;
  auto tiles = [&](int g) {
    int s, e;
    group_rows_of<GROUPED>(p, g, s, e);
    return (e - s + BM - 1) / BM;
  };
  int sum = 0;
  for (int g = g0; g < g1; ++g) sum += tiles(g);
  int incl = sum;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int v = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += v;
  }
  int run = incl - sum;
  for (int g = g0; g < g1; ++g) {
    st_shared_u32(prefix + 4 * g, static_cast<unsigned>(run));
    run += tiles(g);
  }
  if (lane == 31) st_shared_u32(prefix + 4 * G, static_cast<unsigned>(incl));
}

// A CTA's tiles in order, from its static walk (first + r * stride, r = 0, 1, ...; TileStream's first / stride).
template <class Cfg>
struct GroupedWalk {
  unsigned prefix;
  TileScheduler<Cfg::CM, Cfg::CN> sched;
  int first, stride, r = -1;

  __device__ __forceinline__ GroupedWalk(const GemmParams& p, unsigned prefix_, int first_, int stride_)
      : prefix(prefix_),
        sched(ld_shared_s32(prefix_ + 4 * p.groups) * Cfg::BM, p.n, 1, Cfg::BM, Cfg::BN, p.raster_n, p.group),
        first(first_), stride(stride_) {}

  // The next tile of this CTA (cluster rank rn along N) into t; false once the walk is past the end.
  __device__ __forceinline__ bool next(const GemmParams& p, int rn, GroupTile& t) {
    ++r;
    const int idx = first + r * stride;
    if (idx >= sched.total) return false;
    int m0v, n0, b;
    sched.tile_origin(idx, 0, rn, Cfg::BM, Cfg::BN, m0v, n0, b);
    const int i = m0v / Cfg::BM;
    int lo = 0, hi = p.groups - 1;  // the last group with P[g] <= i (an empty group's P equals its successor's)
    while (lo < hi) {
      const int mid = (lo + hi + 1) >> 1;
      if (ld_shared_s32(prefix + 4 * mid) <= i)
        lo = mid;
      else
        hi = mid - 1;
    }
    int start, end;
    group_rows_of<Cfg::GROUPED>(p, lo, start, end);
    t.m0 = start + (i - ld_shared_s32(prefix + 4 * lo)) * Cfg::BM;
    t.n0 = n0;
    t.m_end = end;
    t.g = lo;
    t.ba = Cfg::GROUPED == 2 ? lo : 0;
    return true;
  }
};

}  // namespace gt_sm90
