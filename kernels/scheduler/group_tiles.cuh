#pragma once
// The tiles of a grouped GEMM (GemmConfig::GROUPED; gemmtune::Grouping), whose group sizes live only on the device
// (GemmParams::group_rows), walked by the persistent kernels without a host sync or a prefix pass:
//   masked (2): the TileScheduler's usual grid over G batches of M_max rows; a tile of group g is real when its first
//               row is below count[g]. A, C and D's batch coordinate is g.
//   contiguous (1): the scheduler walks M / BM + G virtual tile rows ("slots"); group g's tiles take the slots from
//               base(g) = start(g) / BM + g on, start(g) = end[g - 1] (0 for g = 0). Since
//               base(g + 1) - base(g) = end / BM - start / BM + 1 >= ceil((end - start) / BM), every group has room
//               for all of its tiles; slot s belongs to the last group with base(g) <= s (a binary search over the
//               ends, log2 G cached loads per tile) and is real when its first row start + (s - base) * BM is below
//               end(g). Neighbouring slots are mostly one group's consecutive row tiles, so the scheduler's bands keep
//               their L2 sharing. A, C and D are one matrix (batch coordinate 0), rows global.
// B's batch coordinate is the group in both forms. Tiles run BM rows from their first one, reading the next group's
// rows of A (or TMA's zero fill) below the group's end; the epilogue stores rows below `m_end` only.
// Every CTA of a cluster (1 x CN: they share A's rows) sees the same slot, so they agree on which tiles are real.
// The empty slots are skipped by every side alike (producer, each consumer warp), so a CTA's j-th real tile is the
// same tile everywhere and the ring positions and ping-pong ordering count real tiles only.
// Ends or counts outside [0, M] (the caller's error) are clamped: a tile never reaches rows outside [0, M).
#include "scheduler/tile_scheduler.cuh"
#include "sm90/sm90_spec.cuh"

namespace gt_sm90 {

struct GroupTile {
  int m0, n0;  // first row (global for contiguous, within batch ba for masked) and column
  int m_end;   // rows [m0, m_end) belong to the tile's group
  int g;       // the group: B's batch coordinate, and the fp8 scale offsets
  int ba;      // A's, C's and D's batch coordinate
};

// The scheduler's M extent for a grouped problem: the contiguous form's slots, or M_max.
template <int GROUPED, int BM>
__device__ __forceinline__ int grouped_sched_m(const GemmParams& p) {
  return GROUPED == 1 ? (p.m / BM + p.groups) * BM : p.m;
}

template <int GROUPED, int BM>
__device__ __forceinline__ bool group_locate(const GemmParams& p, int m0v, int b, GroupTile& t) {
  auto clampm = [&](int x) { return x < 0 ? 0 : (x > p.m ? p.m : x); };
  if constexpr (GROUPED == 2) {
    t.m0 = m0v;
    t.m_end = clampm(__ldg(p.group_rows + b));
    t.g = t.ba = b;
    return m0v < t.m_end;
  } else {
    const int slot = m0v / BM;
    auto end_of = [&](int g) { return clampm(__ldg(p.group_rows + g)); };
    auto base = [&](int g) { return (g == 0 ? 0 : end_of(g - 1) / BM) + g; };
    int lo = 0, hi = p.groups - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) >> 1;
      if (base(mid) <= slot)
        lo = mid;
      else
        hi = mid - 1;
    }
    const int start = lo == 0 ? 0 : end_of(lo - 1), first = start / BM + lo;
    t.m0 = start + (slot - first) * BM;
    t.m_end = end_of(lo);
    t.g = lo;
    t.ba = 0;
    return slot >= first && t.m0 < t.m_end;
  }
}

// A CTA's real tiles in order, from its static walk (first + r * stride, r = 0, 1, ...; TileStream's first / stride).
template <class Cfg>
struct GroupedWalk {
  TileScheduler<Cfg::CM, Cfg::CN> sched;
  int first, stride, r = -1;

  __device__ __forceinline__ GroupedWalk(const GemmParams& p, int first_, int stride_)
      : sched(grouped_sched_m<Cfg::GROUPED, Cfg::BM>(p), p.n, Cfg::GROUPED == 2 ? p.batch : 1, Cfg::BM, Cfg::BN,
              p.raster_n, p.group),
        first(first_), stride(stride_) {}

  // The next real tile of this CTA (cluster rank rn along N) into t; false once the walk is past the end.
  __device__ __forceinline__ bool next(const GemmParams& p, int rn, GroupTile& t) {
    for (;;) {
      ++r;
      const int idx = first + r * stride;
      if (idx >= sched.total) return false;
      int m0v, n0, b;
      sched.tile_origin(idx, 0, rn, Cfg::BM, Cfg::BN, m0v, n0, b);
      if (group_locate<Cfg::GROUPED, Cfg::BM>(p, m0v, b, t)) {
        t.n0 = n0;
        return true;
      }
    }
  }
};

}  // namespace gt_sm90
