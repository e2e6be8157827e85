#pragma once
// The sequence of cluster tiles a CTA computes: position j = 0, 1, 2, ... -> a linear tile index for TileScheduler,
// >= `total` once the work is done. The producer thread reads every position; a consumer warp reads the positions of
// the tiles it computes (ping-pong: j % 2 == its index; cooperative: all).
//   Static:  tile(j) = cluster_id + j * num_clusters, cluster_id = blockIdx.x / CS or, with a host table p.order (a
//            permutation of the cluster ids), p.order[blockIdx.x / CS]: the "gpc" order gives the clusters of one GPC
//            consecutive ids, so neighbouring tiles (which share an operand) run in one GPC, where the L2 request
//            coalescer merges their identical reads (docs/PERFORMANCE.md). Any permutation is correct: where the
//            grid lands only decides how much merges.
//   Dynamic: position 0 is cluster_id, the rest come from a global counter (p.tiles[0]), so clusters that free up at
//            the same time take neighbouring tiles. The producer thread of cluster rank 0 (the taker) publishes each
//            tile when it starts loading it and fetches the next index right then (producer_loop); it sends the index
//            into a ring of kTileSlots slots in the shared memory of every CTA of the cluster (send_s32_cluster: an
//            st.async completing a transaction on the slot's full barrier); the other producers and the consumer
//            warps read it there and free the slot on rank 0's empty barrier.
// NOTES: why dynamic (docs/PERFORMANCE.md): the L2 request coalescer merges reads of the same sectors by
// different SMs that arrive close together; cuBLAS's kernels take tiles from a counter and got 40M of their 74M
// coalescable non-multicast sectors merged at 8192x6144x4096 against 12-15M for our static walk. Ours did not get
// that merging from the dynamic order, whenever the index is taken (4 tiles ahead, 1 tile ahead, or 2 k-blocks before
// it is needed), and runs 0.5-2% behind the static order, so it is a --config knob, not enumerated. The first version
// published with .release.cluster / .acquire.cluster and was 2-7% behind. The merging turned out to need the clusters
// that share a non-multicast operand to sit in one GPC: that is the gpc order above, not the timing.
// Stream-K tail (Cfg::SK, static orders, p.sk_ws set): with T = R * C + r cluster tiles on C clusters (0 < r < C,
// R >= 1), round R + 1 would run r tiles on C clusters. Instead the first R - 1 rounds run whole tiles as above and
// the last C + r tiles are shared out by k-blocks: cluster c takes the k-blocks [c * W / C, (c + 1) * W / C) of
// those tiles laid end to end (W = (C + r) * K), so the kernel ends after R + r / C rounds of work instead of R + 1.
// Each share is >= K k-blocks, so a tile is split between at most two neighbouring clusters: its head [0, y) in
// cluster c, which writes its partial accumulators to slot c of p.sk_ws and raises flag c, and its tail [y, K) in
// cluster c + 1, which waits for the flag, adds the partial and runs the epilogue. A cluster runs its head unit
// first and its tail unit last, so a tail finds its head long done (the clusters reach the tail at about the same
// time). Shares are laid out in blockIdx order, so a tail waits only for a cluster dispatched before it (in practice):
// the grid need not be all resident at once (it is, on a device of its own: the grid is the clusters that fit). The
// reader sets the flag back to 0, so the next launch on the stream starts clean (graph replays too).
// With fewer cluster tiles than clusters (T < C: R = 0, "split" mode) all T tiles are shared out the same way: cluster c
// takes [c * W / C, (c + 1) * W / C) of W = T * K k-blocks, so every SM works on a skinny problem (small M or N) whose
// tiles alone would leave SMs idle. A share may then be shorter than K: a tile is split between several clusters, each
// piece but the one that reaches k-block K writes a partial (one per cluster at most: its first unit), and that last
// piece (the tile's tail) adds all of them, slots c - 1 down to the cluster holding the tile's k-block 0. The host
// sizes the grid so that every share holds enough k-blocks (src/backends/sm90/sm90_plan.h sk_clusters).
// Counter protocol: p.tiles = {next, done}, both zero at launch. Every cluster takes tiles until it gets one >= total
// (total - clusters successful takes, one failing take each), then adds 1 to `done`; the cluster that brings `done`
// to the cluster count resets both to zero for the next launch on the stream (launches on one stream do not overlap;
// the host keeps one counter pair per stream).
#include "ptx/ptx.cuh"
#include "sm90/sm90_config.cuh"

namespace gt_sm90 {

template <class Cfg>
struct TileStream {
  static constexpr int kSlots = Cfg::kTileSlots;
  // Readers per tile of the cluster: the warps of the consumer warpgroup(s) computing it in every CTA, and the
  // producer thread of every CTA but rank 0 (the taker, which wrote it).
  static constexpr int kEmptyArrivals = Cfg::CS * 4 * (Cfg::PINGPONG ? 1 : 2) + Cfg::CS - 1;

  int first, stride;  // position 0 of this cluster; the number of clusters

  __device__ __forceinline__ explicit TileStream(const GemmParams& p)
      : first(static_cast<int>(blockIdx.x) / Cfg::CS), stride(static_cast<int>(gridDim.x) / Cfg::CS) {
    if (!Cfg::DYNAMIC && p.order != nullptr) first = p.order[first];
  }

  // Unit j of this cluster in a static order (the whole-tile walk, or with a stream-K tail when p.sk_ws is set).
  // Integer math only: the same sequence in the producer and the consumers.
  __device__ __forceinline__ Unit unit(const GemmParams& p, int j, int total, int k_iters) const {
    if constexpr (Cfg::SK) {
      // Shares go by blockIdx order, not by `first` (a gpc permutation): a tail then only ever waits for a cluster
      // with a lower blockIdx, which the hardware dispatches first in practice, so the wait does not depend on the
      // whole grid being resident at once (a smaller green context, SMs held by another stream).
      if (p.sk_ws != nullptr && sk_runs(total, stride, k_iters) && j >= total / stride - 1)
        return sk_unit(total, stride, blockIdx.x / Cfg::CS, k_iters, j);
    }
    const int t = first + j * stride;
    return {t, 0, k_iters, static_cast<unsigned>(j) * static_cast<unsigned>(k_iters), kWhole, 0};
  }

  // Thread 0 of the block, before the cluster sync of init_pipeline.
  __device__ __forceinline__ static void init(const SmemPlan<Cfg>& sm) {
    if constexpr (Cfg::DYNAMIC) {
#pragma unroll
      for (int i = 0; i < kSlots; ++i) {
        mbar_init(sm.tile_full(i), 1);
        mbar_init(sm.tile_empty(i), kEmptyArrivals);
      }
    }
  }

  // Dynamic order: position j, read by one thread (a producer other than the taker).
  __device__ __forceinline__ int read_thread(const SmemPlan<Cfg>& sm, int j) const {
    const int i = j % kSlots;
    mbar_wait(sm.tile_full(i), static_cast<unsigned>(j / kSlots) & 1u);
    const int t = ld_shared_s32(sm.tile_slot(i));
    mbar_arrive_cluster(sm.tile_empty(i), 0);
    return t;
  }

  // Unit j, read by a whole consumer warp. Dynamic order: every lane reads the slot (one broadcast load), lane 0
  // frees it once all have; the unit is the whole tile.
  // NOTES: lane 0 reading and a shuffle cost a register that made a coop 128x256 2x1 kernel with an f32 C spill.
  __device__ __forceinline__ Unit unit_warp(const SmemPlan<Cfg>& sm, const GemmParams& p, int j, int lane, int total,
                                            int k_iters) const {
    if constexpr (!Cfg::DYNAMIC) {
      return unit(p, j, total, k_iters);
    } else {  // discarded in static kernels (NVRTC time)
      const int i = j % kSlots;
      mbar_wait(sm.tile_full(i), static_cast<unsigned>(j / kSlots) & 1u);
      const int t = ld_shared_s32(sm.tile_slot(i));  // every lane: one broadcast read
      __syncwarp();
      if (lane == 0) mbar_arrive_cluster(sm.tile_empty(i), 0);
      return {t, 0, k_iters, static_cast<unsigned>(j) * static_cast<unsigned>(k_iters), kWhole, 0};
    }
  }

  // Dynamic order, the taker: writes tile t as position j into every CTA of the cluster (after the slot's readers of
  // position j - kSlots are done with it).
  __device__ __forceinline__ static void publish(const SmemPlan<Cfg>& sm, int j, int t) {
    const int i = j % kSlots;
    mbar_wait(sm.tile_empty(i), (static_cast<unsigned>(j / kSlots) & 1u) ^ 1u);
#pragma unroll
    for (int r = 0; r < Cfg::CS; ++r) send_s32_cluster(sm.tile_slot(i), sm.tile_full(i), static_cast<unsigned>(r), t);
  }

  // Dynamic order, the taker, once it has published past-the-end position j: a second past-the-end position (a
  // ping-pong consumer stops at the first one of its parity), then its part in resetting the counters.
  __device__ __forceinline__ void finish(const SmemPlan<Cfg>& sm, int j, int* counters, int total) const {
    publish(sm, j + 1, total);
    if (atomicAdd(counters + 1, 1) == stride - 1) {
      atomicExch(counters, 0);
      atomicExch(counters + 1, 0);
    }
  }
};

}  // namespace gt_sm90
