#pragma once
// Block scaling (Spec::scale == kScaleBlock): the scales of each stage's k-block reach shared memory beside its
// operands. Stage s has a scale slot (SmemPlan::scales): a descriptor barrier, the stage's tile and k-block, then BM
// row scales and kScaleNB B scales. The producer thread writes the tile and k-block as it loads the stage and arrives
// on the descriptor barrier; a scale loader warp of the producer warpgroup (kScaleLoaders of them, taking the stages
// in turn) waits there, copies the scales by cp.async, and its 32 threads' cp.async completions are arrivals on the
// stage's full barrier (Plan::full_arrivals). A consumer past the full wait reads the k-block's scales with ld.shared
// (sm90_fp8.cuh: BlockScales), before it releases the stage.
// NOTES: the consumers loaded the scales from global memory themselves, one to three k-blocks ahead. ptxas places
// the product of a k-block's scales in front of its first wgmma, and the scoreboard wait for that load also waits for
// the loads issued after it for later k-blocks (one scoreboard counts them all), so every k-block's wgmmas waited for
// an L2 round trip: coop 128x192 kept the tensor pipe 65% busy against 91% for its tensor-scaled twin (ncu on the
// H200, 8192^3). A loader walking the tiles itself (a second TileScheduler in the 40-register producer warpgroup)
// spilled in grouped and ragged-M kernels; the descriptor hands it the walk's result instead.
#include "sm90/sm90_config.cuh"
#include "sm90/sm90_cp_loader.cuh"

namespace gt_sm90 {

// The row and column scales of group g of a grouped GEMM (GemmParams::sr_group, sc_group); p.sr, p.sc otherwise.
template <class Cfg>
__device__ __forceinline__ const float* group_sr(const GemmParams& p, int g) {
  return Cfg::GROUPED != 0 ? p.sr + g * p.sr_group : p.sr;
}
template <class Cfg>
__device__ __forceinline__ const float* group_sc(const GemmParams& p, int g) {
  return Cfg::GROUPED != 0 ? p.sc + g * p.sc_group : p.sc;
}

// Warps of the producer warpgroup that copy the scales: warp 1 + i takes the ring positions i, i + kScaleLoaders, ...
// Two, as one fell behind the short k-blocks of 128 x 128 tiles (copy_block_scales); 128x192 coop ran the same with
// one or two.
inline constexpr int kScaleLoaders = 2;

// Slot layout (Plan::scale_slot_bytes): the descriptor barrier at 0, m0, n0, kb, g at kScaleHead, the scales from
// kScaleData.
inline constexpr int kScaleHead = 16, kScaleData = kScaleSlotHead;

// The producer thread, stage s of tile (m0, n0) and group g at k-block kb, or with kb < 0 the end of the walk.
template <class Cfg>
__device__ __forceinline__ void publish_scale_stage(const SmemPlan<Cfg>& sm, int s, int m0, int n0, int kb, int g) {
  if constexpr (Cfg::SCALE == kScaleBlock) {
    const unsigned slot = sm.scales(s);
    asm volatile("st.shared.v4.s32 [%0], {%1, %2, %3, %4};" ::"r"(slot + kScaleHead), "r"(m0), "r"(n0), "r"(kb),
                 "r"(g)
                 : "memory");
    mbar_arrive(slot);
  }
}

// What the scale loader reads per k-block, worked out once: the k-blocks and B scale blocks of the problem, and
// whether A's scales can be copied in 16-byte pieces (M a multiple of 4 and 16-byte aligned scales, so that a tile's
// rows of one k-block start on 16 bytes).
struct ScaleWalk {
  int kb_count, nb_count;
  bool vec;
};

// The scales of k-block kb of tile rows m0 + [0, BM) and columns n0 + [0, BN) (group g) into the slot's data: A's in
// 16-byte pieces of four rows (w.vec, and m0 a multiple of 4) or one row per copy, lanes below kScaleNB the B scales;
// rows and B blocks past the problem are zero-filled.
// NOTES: with one 4-byte copy per row and 64-bit index math per k-block (about 90 instructions per stage) one loader
// fell behind the consumers of 128x128 coop, whose k-block takes about 550 clocks: ncu showed it never waiting for a
// descriptor, the consumers waiting for full stages on 20% of their stall samples (2% with the scales loaded by the
// consumers themselves), and the kernel 7% slower than that (H200, 8192^3, docs/PERFORMANCE.md). 16-byte copies
// (about 45 instructions) won back 6%, a second loader warp 11% more.
template <class Cfg>
__device__ __forceinline__ void copy_block_scales(unsigned data, const GemmParams& p, const ScaleWalk& w, int m0,
                                                  int n0, int kb, int g, int lane) {
  const float* const ra = group_sr<Cfg>(p, g) + static_cast<long long>(kb) * p.m + m0;
  const int rows = p.m - m0;
  if (w.vec && (Cfg::GROUPED == 0 || m0 % 4 == 0)) {  // a group's tiles start at its first row
    constexpr int kPieces = Cfg::BM / 4;
#pragma unroll
    for (int i = 0; i < (kPieces + 31) / 32; ++i) {
      const int q = lane + 32 * i;
      if (kPieces % 32 == 0 || q < kPieces) {
        const bool in = 4 * q < rows;
        cp_async_zfill<16>(data + 16 * q, in ? ra + 4 * q : ra, in ? 16u : 0u);
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < Cfg::BM / 32; ++i) {
      const int r = lane + 32 * i;
      cp_async_zfill<4>(data + 4 * r, r < rows ? ra + r : ra, r < rows ? 4u : 0u);
    }
  }
  if (lane < Cfg::kScaleNB) {
    const int nb = n0 / 128 + lane;
    const bool in = nb < w.nb_count;
    const float* const sc = group_sc<Cfg>(p, g);
    cp_async_zfill<4>(data + 4 * (Cfg::BM + lane), in ? sc + nb * w.kb_count + kb : sc, in ? 4u : 0u);
  }
}

// Scale loader `which` (producer warp 1 + which): follows the producer thread's descriptors of the ring positions
// which, which + kScaleLoaders, ... until the end of the walk.
template <class Cfg>
__device__ __forceinline__ void block_scale_loader(const SmemPlan<Cfg>& sm, const GemmParams& p, int which, int lane) {
  static_assert(kScaleLoaders <= Cfg::STAGES && kScaleLoaders <= 3, "a slot per loader ends the walk");
  const bool aligned = (reinterpret_cast<unsigned long long>(p.sr) & 15) == 0 &&
                       (Cfg::GROUPED == 0 || p.sr_group % 4 == 0);
  const ScaleWalk w{(p.k + Cfg::BK - 1) / Cfg::BK, (p.n + 127) / 128, p.m % 4 == 0 && aligned};
  RingPos<Cfg::STAGES> rp;
  for (int i = 0; i < which; ++i) rp.next();
  for (;;) {
    const unsigned slot = sm.scales(rp.s);
    mbar_wait(slot, rp.ph);
    int m0, n0, kb, g;
    asm volatile("ld.shared.v4.s32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(m0), "=r"(n0), "=r"(kb), "=r"(g)
                 : "r"(slot + kScaleHead)
                 : "memory");
    if (kb < 0) break;
    copy_block_scales<Cfg>(slot + kScaleData, p, w, m0, n0, kb, g, lane);
    cp_async_mbar_arrive(sm.full(rp.s));
#pragma unroll
    for (int i = 0; i < kScaleLoaders; ++i) rp.next();
  }
  cp_async_wait_all();  // no thread leaves with copies in flight
}

}  // namespace gt_sm90
