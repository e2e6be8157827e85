#pragma once
// The sequence of cluster tiles a CTA computes: position j = 0, 1, 2, ... -> a linear tile index for TileScheduler,
// >= `total` once the work is done. The producer thread reads every position; a consumer warp reads the positions of
// the tiles it computes (ping-pong: j % 2 == its index; cooperative: all).
//   Static:  tile(j) = cluster_id + j * num_clusters.
//   Dynamic: position 0 is cluster_id, the rest come from a global counter (p.tiles[0]) as the cluster needs them,
//            so clusters that free up at the same time take neighbouring tiles. One thread (warp 1 of the producer
//            warpgroup of cluster rank 0) takes each index and writes it into a ring of kTileSlots slots in the
//            shared memory of every CTA of the cluster; the readers free a slot on rank 0's empty barrier.
// NOTES: why dynamic (bench/NOTES.md, step 6): the L2 request coalescer merges reads of the same sectors by different
// SMs that arrive close together. cuBLAS's kernels take tiles this way and got 40M of their 74M coalescable non-
// multicast sectors merged at 8192x6144x4096 against 15M for the static walk, reading 23% fewer L2 sectors, which
// shows up as SM clock under the power cap. Tiles taken at the same moment start their k loops together; a static
// walk assigns neighbours once and lets them drift apart.
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
  // Readers per CTA and tile: the producer thread plus each warp of the consumer warpgroup(s) computing it.
  static constexpr int kReaders = 1 + 4 * (Cfg::PINGPONG ? 1 : 2);
  static constexpr int kEmptyArrivals = Cfg::CS * kReaders;

  int first, stride;  // static order

  __device__ __forceinline__ TileStream(int cluster_id, int num_clusters) : first(cluster_id), stride(num_clusters) {}

  // Thread 0 of the block, before the cluster sync of init_pipeline.
  __device__ __forceinline__ static void init(const SmemPlan<Cfg>& sm) {
    if constexpr (!Cfg::DYNAMIC) return;
#pragma unroll
    for (int i = 0; i < kSlots; ++i) {
      mbar_init(sm.tile_full(i), 1);
      mbar_init(sm.tile_empty(i), kEmptyArrivals);
    }
  }

  // Position j, read by one thread (the producer).
  __device__ __forceinline__ int read_thread(const SmemPlan<Cfg>& sm, int j) const {
    if constexpr (!Cfg::DYNAMIC) {
      return first + j * stride;
    } else {  // discarded in static kernels (NVRTC time)
      const int i = j % kSlots;
      mbar_wait_acquire_cluster(sm.tile_full(i), static_cast<unsigned>(j / kSlots) & 1u);
      const int t = ld_shared_s32(sm.tile_slot(i));
      mbar_arrive_cluster<true>(sm.tile_empty(i), 0);
      return t;
    }
  }

  // Position j, read by a whole warp (lane 0 reads, the warp gets it by shuffle: warp-uniform).
  __device__ __forceinline__ int read_warp(const SmemPlan<Cfg>& sm, int j, int lane) const {
    if constexpr (!Cfg::DYNAMIC) {
      return first + j * stride;
    } else {
      int t = 0;
      if (lane == 0) t = read_thread(sm, j);
      return __shfl_sync(0xffffffffu, t, 0);
    }
  }

  // The scheduler thread of cluster rank 0 (dynamic order only): takes tiles and publishes them to every CTA of the
  // cluster until it has published two past-the-end positions (a ping-pong consumer stops at the first one of its
  // parity), then takes part in resetting the counters.
  __device__ __forceinline__ void schedule(const SmemPlan<Cfg>& sm, int* counters, int total) const {
    int t = first, ends = 0;
    for (int j = 0; ends < 2; ++j) {
      const int i = j % kSlots;
      mbar_wait_acquire_cluster(sm.tile_empty(i), (static_cast<unsigned>(j / kSlots) & 1u) ^ 1u);
      if (j > 0 && t < total) t = atomicAdd(counters, 1) + stride;  // taken when the slot is needed, not earlier
#pragma unroll
      for (int r = 0; r < Cfg::CS; ++r) {
        st_shared_cluster(sm.tile_slot(i), static_cast<unsigned>(r), t);
        mbar_arrive_cluster<true>(sm.tile_full(i), static_cast<unsigned>(r));
      }
      if (t >= total) ++ends;
    }
    if (atomicAdd(counters + 1, 1) == stride - 1) {
      atomicExch(counters, 0);
      atomicExch(counters + 1, 0);
    }
  }
};

}  // namespace gt_sm90
