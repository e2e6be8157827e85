#pragma once
// Block scaling (Spec::scale == kScaleBlock): the scales of each stage's k-block reach shared memory beside its
// operands. Stage s has a scale slot (SmemPlan::scales): a descriptor barrier, the stage's tile and k-block, then BM
// row scales and kScaleNB B scales. The producer thread writes the tile and k-block as it loads the stage and arrives
// on the descriptor barrier; producer warp 1 waits there, copies the scales by cp.async, and its 32 threads' cp.async
// completions are arrivals on the stage's full barrier (Plan::full_arrivals). A consumer past the full wait reads the
// k-block's scales with ld.shared (sm90_fp8.cuh: BlockScales), before it releases the stage.
// NOTES: the consumers loaded the scales from global memory themselves, one to three k-blocks ahead. ptxas places
// the product of a k-block's scales in front of its first wgmma, and the scoreboard wait for that load also waits for
// the loads issued after it for later k-blocks (one scoreboard counts them all), so every k-block's wgmmas waited for
// an L2 round trip: coop 128x192 kept the tensor pipe 65% busy against 91% for its tensor-scaled twin (ncu on the
// H200, 8192^3). Warp 1 walking the tiles itself (a second TileScheduler in the 40-register producer warpgroup)
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

// The scales of k-block kb of tile rows m0 + [0, BM) and columns n0 + [0, BN) (group g) into the slot's data: thread
// `lane` copies rows lane + 32 i, lanes below kScaleNB the B scales; rows and B blocks past the problem are zero-filled.
template <class Cfg>
__device__ __forceinline__ void copy_block_scales(unsigned data, const GemmParams& p, int m0, int n0, int kb, int g,
                                                  int lane) {
  const float* const ra = group_sr<Cfg>(p, g) + static_cast<long long>(kb) * p.m;
#pragma unroll
  for (int i = 0; i < Cfg::BM / 32; ++i) {
    const int r = m0 + lane + 32 * i;
    cp_async_zfill<4>(data + 4 * (lane + 32 * i), r < p.m ? ra + r : ra, r < p.m ? 4u : 0u);
  }
  if (lane < Cfg::kScaleNB) {
    const int nb = n0 / 128 + lane, kb_count = (p.k + Cfg::BK - 1) / Cfg::BK;
    const float* const sc = group_sc<Cfg>(p, g);
    const bool in = nb < (p.n + 127) / 128;
    cp_async_zfill<4>(data + 4 * (Cfg::BM + lane), in ? sc + static_cast<long long>(nb) * kb_count + kb : sc,
                      in ? 4u : 0u);
  }
}

// Producer warp 1: follows the producer thread's descriptors around the ring until the end of its walk.
template <class Cfg>
__device__ __forceinline__ void block_scale_loader(const SmemPlan<Cfg>& sm, const GemmParams& p, int lane) {
  RingPos<Cfg::STAGES> rp;
  for (;; rp.next()) {
    const unsigned slot = sm.scales(rp.s);
    mbar_wait(slot, rp.ph);
    int m0, n0, kb, g;
    asm volatile("ld.shared.v4.s32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(m0), "=r"(n0), "=r"(kb), "=r"(g)
                 : "r"(slot + kScaleHead)
                 : "memory");
    if (kb < 0) break;
    copy_block_scales<Cfg>(slot + kScaleData, p, m0, n0, kb, g, lane);
    cp_async_mbar_arrive(sm.full(rp.s));
  }
  cp_async_wait_all();  // no thread leaves with copies in flight
}

}  // namespace gt_sm90
