#pragma once
// Persistent tile scheduler: a linear work index -> (tile row, tile column, batch), walked in grouped order so that
// the tiles in flight at once share rows of A and columns of B in L2.
//   RASTER 0 ("m"): bands of GROUP tile rows; inside a band the M index moves fastest, then N.
//   RASTER 1 ("n"): bands of GROUP tile columns; inside a band the N index moves fastest, then M.
// Odd bands walk the slow dimension backwards (serpentine), so the tiles in flight across a band boundary keep
// sharing the slow dimension's operand instead of jumping back to its first tiles.
// Work items are cluster tiles: a CM x CN cluster computes CM x CN neighbouring tiles at once; a CTA whose tile lies
// past the edge computes zeros (TMA zero-fills the loads and clips the stores), keeping the cluster in lock step.

namespace gt_sm90 {

template <int CM, int CN, int RASTER, int GROUP>
struct TileScheduler {
  static_assert(RASTER == 0 || RASTER == 1, "raster must be 0 (m) or 1 (n)");
  static_assert(GROUP >= 1 && GROUP <= 64, "group must be in [1, 64]");

  int ctm, ctn;     // cluster tiles along M and N
  int per_batch;    // ctm * ctn
  int total;        // per_batch * batch

  __device__ __forceinline__ TileScheduler(int m, int n, int batch, int bm, int bn) {
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
    const int major = RASTER == 0 ? ctm : ctn;  // the grouped (fast) dimension
    const int band = r / (GROUP * (RASTER == 0 ? ctn : ctm));
    const int first = band * GROUP;
    const int width = (major - first) < GROUP ? (major - first) : GROUP;
    const int within = r - band * GROUP * (RASTER == 0 ? ctn : ctm);
    const int slow_extent = RASTER == 0 ? ctn : ctm;
    const int fast = first + within % width, fwd = within / width;
    const int slow = (band & 1) ? slow_extent - 1 - fwd : fwd;
    if (RASTER == 0) {
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
