#pragma once
// Persistent tile scheduler: a linear work index -> (tile row, tile column, batch), walked in grouped order so that
// the tiles in flight at once share rows of A and columns of B in L2.
//   raster 0 ("m"): bands of `group` tile rows; inside a band the M index moves fastest, then N.
//   raster 1 ("n"): bands of `group` tile columns; inside a band the N index moves fastest, then M.
// raster and group are run-time values (GemmParams): configs that differ only in their walk share one kernel (one
// compile), e.g. a tiles=gpc twin and the static config it came from. The walk runs once per tile (a few integer
// divisions), not per k-block.
// Odd bands walk the slow dimension backwards (serpentine), so the tiles in flight across a band boundary keep
// sharing the slow dimension's operand instead of jumping back to its first tiles.
// Work items are cluster tiles: a CM x CN cluster computes CM x CN neighbouring tiles at once; a CTA whose tile lies
// past the edge computes zeros (TMA zero-fills the loads and clips the stores), keeping the cluster in lock step.

namespace gt_sm90 {

template <int CM, int CN>
struct TileScheduler {
  int ctm, ctn;     // cluster tiles along M and N
  int per_batch;    // ctm * ctn
  int total;        // per_batch * batch
  int raster_n;     // 0: bands of tile rows, 1: bands of tile columns
  int group;        // band width in cluster tiles, >= 1 (the host checks [1, 64])

  __device__ __forceinline__ TileScheduler(int m, int n, int batch, int bm, int bn, int raster, int grp)
      : raster_n(raster), group(grp) {
    const int tiles_m = (m + bm - 1) / bm, tiles_n = (n + bn - 1) / bn;
    ctm = (tiles_m + CM - 1) / CM;
    ctn = (tiles_n + CN - 1) / CN;
    per_batch = ctm * ctn;
    total = per_batch * batch;
  }

  // Cluster tile `idx` -> cluster tile coordinates and batch.
  __device__ __forceinline__ void cluster_tile(int idx, int& cm, int& cn, int& b) const {
    b = idx / per_batch;
    const int r = idx - b * per_batch;
    const int major = raster_n ? ctn : ctm;        // the grouped (fast) dimension
    const int slow_extent = raster_n ? ctm : ctn;
    const int band = r / (group * slow_extent);
    const int first = band * group;
    const int width = (major - first) < group ? (major - first) : group;
    const int within = r - band * group * slow_extent;
    const int fast = first + within % width, fwd = within / width;
    const int slow = (band & 1) ? slow_extent - 1 - fwd : fwd;
    if (!raster_n) {
      cm = fast;
      cn = slow;
    } else {
      cn = fast;
      cm = slow;
    }
  }

  // Element coordinates of this CTA's tile (rank (rm, rn) inside its cluster).
  __device__ __forceinline__ void tile_origin(int idx, int rm, int rn, int bm, int bn, int& m0, int& n0,
                                              int& b) const {
    int cm, cn;
    cluster_tile(idx, cm, cn, b);
    m0 = (cm * CM + rm) * bm;
    n0 = (cn * CN + rn) * bn;
  }
};

}  // namespace gt_sm90
