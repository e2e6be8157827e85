#pragma once
// The stream-K tail's partial tiles (sm90/sm90_tile_stream.cuh): the cluster that runs a tile's head k-blocks writes
// its fp32 accumulators to a slot of p.sk_ws and raises a flag; the cluster that runs the tail waits for the flag,
// adds the partial to its own accumulators and stores the tile through the usual epilogue (alpha, beta * C and any
// fused chain apply to the sum). In split mode (fewer tiles than clusters) a tile can have several partials, one per
// cluster that holds part of its k-blocks; the tail adds each in turn.
// Layout: slot s, part q (the CTA's cluster rank, times 2 plus the consumer warpgroup in the cooperative schedule,
// whose warpgroups own half a tile each), thread tid's registers 4i..4i+3 at float4 (i * 128 + tid): each warp moves
// 512 contiguous bytes per instruction, and writer and reader are the same thread of the same role, so the fragment
// layout never matters. One flag per (slot, part). Mirrored by the host (src/backends/sm90/sm90_plan.h).
#include "ptx/ptx.cuh"
#include "sm90/sm90_config.cuh"
#include "sm90/sm90_tile_stream.cuh"

namespace gt_sm90 {

template <class Cfg>
struct SkPartials {
  static constexpr int kParts = Cfg::CS * (Cfg::PINGPONG ? 1 : 2);
  static constexpr int kRegs = Cfg::kAccRegs;
  static constexpr int kRow = Cfg::BN / 2;
  static_assert(kRow % 4 == 0, "a float4 never straddles two slabs");

  __device__ __forceinline__ static float* at(const GemmParams& p, int slot, int part) {
    return p.sk_ws + (static_cast<long long>(slot) * kParts + part) * (128 * kRegs);
  }

  // Every thread of the consumer warpgroup (it syncs on consumer_bar()).
  __device__ __forceinline__ static void write(const float (&acc)[Cfg::kSlabs][Cfg::BN / 2], const GemmParams& p,
                                               int slot, int part, int tid) {
    float* w = at(p, slot, part);
#pragma unroll
    for (int i = 0; i < kRegs / 4; ++i) {
      const int si = 4 * i / kRow, c = 4 * i % kRow;
      st_global_v4(w + (i * 128 + tid) * 4, acc[si][c], acc[si][c + 1], acc[si][c + 2], acc[si][c + 3]);
    }
    // All of the warpgroup's stores before the flag: the barrier orders them before thread 0's release.
    named_bar_sync(consumer_bar(), 128);
    if (tid == 0) {
      fence_acq_rel_gpu();
      st_relaxed_gpu(p.sk_flags + slot * kParts + part, 1);
    }
  }

  // After unit `u`'s k-blocks, in every thread of the consumer warpgroup: a head writes its partial and returns false
  // (nothing to store), a tail adds its head's partial; true: store the tile. Called only where Cfg::SK (the callers'
  // `if constexpr` keeps the plain kernels' code as it was).
  __device__ __forceinline__ static bool settle(const Unit& u, float (&acc)[Cfg::kSlabs][Cfg::BN / 2],
                                                const GemmParams& p, int part, int tid) {
    if (u.kind == kHead) {
      write(acc, p, u.slot, part, tid);
      return false;
    }
    if (u.kind == kTail) {
#pragma unroll 1
      for (int q = 0; q < u.parts; ++q) add(acc, p, u.slot - q, part, tid);  // split mode: several (R >= 1: one)
    }
    return true;
  }

  __device__ __forceinline__ static void add(float (&acc)[Cfg::kSlabs][Cfg::BN / 2], const GemmParams& p, int slot,
                                             int part, int tid) {
    if (tid == 0) {
      int* f = p.sk_flags + slot * kParts + part;
      while (ld_acquire_gpu(f) == 0) {
      }
      st_relaxed_gpu(f, 0);  // consumed: zero for the next launch
    }
    named_bar_sync(consumer_bar(), 128);
    const float* w = at(p, slot, part);
#pragma unroll
    for (int i = 0; i < kRegs / 4; ++i) {
      const int si = 4 * i / kRow, c = 4 * i % kRow;
      float a, b, d, e;
      ld_global_cg_v4(w + (i * 128 + tid) * 4, a, b, d, e);
      acc[si][c] += a;
      acc[si][c + 1] += b;
      acc[si][c + 2] += d;
      acc[si][c + 3] += e;
    }
  }
};

}  // namespace gt_sm90
