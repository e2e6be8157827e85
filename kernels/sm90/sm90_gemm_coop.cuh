#pragma once
// sm90 GEMM, cooperative schedule: a producer warpgroup (one thread issues TMA) and two consumer warpgroups that
// split each BM x BN tile along M (64 or 128 rows each), persistent over the tiles, optional 2x1 / 1x2 clusters with
// TMA multicast of the shared operand. Instantiate from a JIT unit:
//   extern "C" __global__ void __launch_bounds__(384, 1) name(const __grid_constant__ gt_sm90::TmaDesc ta,
//       const __grid_constant__ gt_sm90::TmaDesc tb, const __grid_constant__ gt_sm90::TmaDesc td,
//       const __grid_constant__ gt_sm90::TmaDesc tdt, const gt_sm90::GemmParams p) {
//     gt_sm90::gemm_coop<Cfg>(ta, tb, td, tdt, p); }
// (td: D's map for the epilogue strips; tdt: for the tail strip of warp pieces, GemmConfig::kEpiTailBytes, else unused)
// launched with Cfg::kThreads threads, Cfg::kSmemBytes dynamic shared memory and a (CM*CN, 1, 1) cluster.
#include "epilogue/epilogue_tma_store.cuh"
#include "sm90/sm90_fp8.cuh"
#include "sm90/sm90_mainloop.cuh"
#include "sm90/sm90_sk_partials.cuh"

namespace gt_sm90 {

template <class Cfg, class Epi = EpilogueTmaStore<Cfg>>
__device__ __forceinline__ void gemm_coop(const TmaDesc& ta, const TmaDesc& tb, const TmaDesc& td,
                                          const TmaDesc& tdt, const GemmParams& p,
                                          const typename Epi::Params& ep = typename Epi::Params{}) {
  static_assert(!Cfg::PINGPONG, "gemm_coop needs a cooperative config");
  extern __shared__ unsigned char gt_smem[];
  const SmemPlan<Cfg> sm(gt_smem);
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  const int rank = Cfg::CS > 1 ? static_cast<int>(cluster_ctarank()) : 0;
  const int rm = rank % Cfg::CM, rn = rank / Cfg::CM;

  // A grouped GEMM's tile prefix, published by init_pipeline's barrier (scheduler/group_tiles.cuh).
  if constexpr (Cfg::GROUPED != 0)
    if (threadIdx.x < 32) group_prefix<Cfg::GROUPED, Cfg::BM>(sm.group_prefix(), p, threadIdx.x);
  init_pipeline<Cfg>(sm, ta, tb, td, tdt, [] {});

  const TileStream<Cfg> tiles(p);
  if (wg == 0) {
    run_producer<Cfg, Epi::kHalves>(ta, tb, sm, p, tiles, rm, rn, tid);
  } else {
    setmaxnreg_inc<Cfg::kConsumerRegs>();
    const int cw = __shfl_sync(0xffffffffu, wg - 1, 0);  // warp-uniform tile loop (see gemm_pingpong)
    const TileScheduler<Cfg::CM, Cfg::CN> sched(p.m, p.n, p.batch, Cfg::BM, Cfg::BN, p.raster_n, p.group);
    const int k_iters = (p.k + Cfg::BK - 1) / Cfg::BK;
    float acc[Cfg::kSlabs][Cfg::BN / 2];
    const float tensor = tensor_scale<Cfg>(p);
    RingPos<Cfg::STAGES> rp;
    unsigned buf = 0;
    // One tile: this consumer's rows m0 + cw * WM + [0, WM) of batch b (rows from m_end on are not stored; g: the
    // group of a grouped GEMM, else 0).
    auto tile = [&](const Unit& u, int m0, int n0, int b, int m_end, int g) {
      const int mc = m0 + cw * Cfg::WM;
      prefetch_scales<Cfg>(p, mc, n0, tid, g);
      if constexpr (Cfg::PROMOTE)
        consume_tile_promote<Cfg>(acc, sm, rp, u.k1 - u.k0, cw * Cfg::WM, n0, tid, [] {});
      else
        consume_tile<Cfg>(acc, sm, rp, u.k1 - u.k0, cw * Cfg::WM, tid % 32, [] {});
      if constexpr (Cfg::SK)
        if (!SkPartials<Cfg>::settle(u, acc, p, rank * 2 + cw, tid)) return;  // a head: its partial is written
      apply_scales<Cfg>(acc, p, tensor, mc, n0, tid, g);
      Epi::store(acc, td, tdt, p, ep, sm.epi(cw), mc, n0, b, tid, buf, m_end);
    };
    if constexpr (Cfg::GROUPED != 0) {
      GroupedWalk<Cfg> walk(p, sm.group_prefix(), tiles.first, tiles.stride);
      GroupTile t;
      for (int j = 0; walk.next(p, rn, t); ++j)
        tile(Unit{0, 0, k_iters, static_cast<unsigned>(j) * static_cast<unsigned>(k_iters), kWhole, 0}, t.m0, t.n0,
             t.ba, t.m_end, t.g);
    } else {
      for (int j = 0;; ++j) {
        const Unit u = tiles.unit_warp(sm, p, j, tid % 32, sched.total, k_iters);
        if (u.t >= sched.total) break;
        int m0, n0, b;
        sched.tile_origin(u.t, rm, rn, Cfg::BM, Cfg::BN, m0, n0, b);
        tile(u, m0, n0, b, p.m, 0);
      }
    }
    Epi::drain(tid);
  }
  if (Cfg::CS > 1) cluster_sync();  // no CTA leaves while a peer may still arrive on its barriers
}

}  // namespace gt_sm90
