#pragma once
// sm90 GEMM, ping-pong schedule: a producer warpgroup and two consumer warpgroups that each own a whole BM x BN
// tile (BM = 64 or 128), taking alternate tiles of this CTA's sequence, so one's epilogue overlaps the other's
// wgmmas. The ring is shared: consumer c's tile j (j % 2 == c) occupies ring positions [j * k_iters, (j+1) * k_iters).
// Instantiate like gemm_coop (see sm90_gemm_coop.cuh) with a ping-pong Cfg and call gemm_pingpong<Cfg>.
#include "epilogue/epilogue_tma_store.cuh"
#include "sm90/sm90_fp8.cuh"
#include "sm90/sm90_mainloop.cuh"
#include "sm90/sm90_sk_partials.cuh"

namespace gt_sm90 {

template <class Cfg, class Epi = EpilogueTmaStore<Cfg>>
__device__ __forceinline__ void gemm_pingpong(const TmaDesc& ta, const TmaDesc& tb, const TmaDesc& td,
                                              const TmaDesc& tdt, const GemmParams& p,
                                              const typename Epi::Params& ep = typename Epi::Params{}) {
  static_assert(Cfg::PINGPONG, "gemm_pingpong needs a ping-pong config");
  extern __shared__ unsigned char gt_smem[];
  const SmemPlan<Cfg> sm(gt_smem);
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  const int rank = Cfg::CS > 1 ? static_cast<int>(cluster_ctarank()) : 0;
  const int rm = rank % Cfg::CM, rn = rank / Cfg::CM;

  // A grouped GEMM's tile prefix, published by init_pipeline's barrier (scheduler/group_tiles.cuh).
  if constexpr (Cfg::GROUPED != 0)
    if (threadIdx.x < 32) group_prefix<Cfg::GROUPED, Cfg::BM>(sm.group_prefix(), p, threadIdx.x);
  init_pipeline<Cfg>(sm, ta, tb, td, tdt, [&] {
    mbar_init(sm.mma_done(0), 4);  // lane 0 of each warp of the consumer warpgroup
    mbar_init(sm.mma_done(1), 4);
  });

  const TileStream<Cfg> tiles(p);
  if (wg == 0) {
    run_producer<Cfg, Epi::kHalves>(ta, tb, sm, p, tiles, rm, rn, tid);
  } else {
    setmaxnreg_inc<Cfg::kConsumerRegs>();
    // The consumer index from lane 0: the compiler then treats the tile loop, the ring position and the wgmma
    // descriptors as warp-uniform and keeps them in uniform registers (108 -> 67 instructions per k-block and warp
    // for 128x176; before, each wgmma took a vector computation plus four register moves). Not with a fused
    // epilogue: there it made a ping-pong gelu_erf kernel spill 32-40 bytes.
    const int cw = Epi::kFused ? wg - 1 : __shfl_sync(0xffffffffu, wg - 1, 0);
    const TileScheduler<Cfg::CM, Cfg::CN> sched(p.m, p.n, p.batch, Cfg::BM, Cfg::BN, p.raster_n, p.group);
    const int k_iters = (p.k + Cfg::BK - 1) / Cfg::BK;
    float acc[Cfg::kSlabs][Cfg::BN / 2];
    const float tensor = tensor_scale<Cfg>(p);
    unsigned buf = 0;
    // Tile j of this CTA (j % 2 == cw): rows m0 + [0, BM) of batch b (rows from m_end on are not stored; g: the
    // group of a grouped GEMM, else 0).
    auto tile = [&](int j, const Unit& u, int m0, int n0, int b, int m_end, int g) {
      auto rp = RingPos<Cfg::STAGES>::at(u.pos);
      // NOTES: mainloops run in tile order. Without this a consumer jumping k_iters ring positions ahead could
      // wait on a full barrier two phases behind and see the parity of an old phase as complete (stale data /
      // hang). Tile j waits for the other consumer's tile j - 1: the (j-1)/2-th phase of its mma_done, which every
      // warp of it arrives on once it has passed its last full barrier and issued its last wgmma (not after they
      // complete: the next tile's wgmmas queue behind them and the tensor pipe does not drain between tiles).
      if (j >= 1) mbar_wait(sm.mma_done(1 - cw), static_cast<unsigned>((j - 1) / 2) & 1u);
      auto issued = [&] {
        if (tid % 32 == 0) mbar_arrive(sm.mma_done(cw));
      };
      prefetch_scales<Cfg>(p, m0, n0, tid, g);
      if constexpr (Cfg::PROMOTE)
        consume_tile_promote<Cfg>(acc, sm, rp, u.k1 - u.k0, 0, n0, tid, issued);
      else
        consume_tile<Cfg>(acc, sm, rp, u.k1 - u.k0, 0, tid % 32, issued);
      if constexpr (Cfg::SK)
        if (!SkPartials<Cfg>::settle(u, acc, p, rank, tid)) return;  // a head: its partial is written
      apply_scales<Cfg>(acc, p, tensor, m0, n0, tid, g);
      Epi::store(acc, td, tdt, p, ep, sm.epi(cw), m0, n0, b, tid, buf, m_end);
    };
    if constexpr (Cfg::GROUPED != 0) {
      // Both consumers walk the CTA's tiles (scheduler/group_tiles.cuh) and take those of their parity.
      GroupedWalk<Cfg> walk(p, sm.group_prefix(), tiles.first, tiles.stride);
      GroupTile t;
      for (int j = 0; walk.next(p, rn, t); ++j)
        if ((j & 1) == cw)
          tile(j, Unit{0, 0, k_iters, static_cast<unsigned>(j) * static_cast<unsigned>(k_iters), kWhole, 0}, t.m0,
               t.n0, t.ba, t.m_end, t.g);
    } else {
      for (int j = cw;; j += 2) {
        const Unit u = tiles.unit_warp(sm, p, j, tid % 32, sched.total, k_iters);
        if (u.t >= sched.total) break;
        int m0, n0, b;
        sched.tile_origin(u.t, rm, rn, Cfg::BM, Cfg::BN, m0, n0, b);
        tile(j, u, m0, n0, b, p.m, 0);
      }
    }
    Epi::drain(tid);
  }
  if (Cfg::CS > 1) cluster_sync();
}

}  // namespace gt_sm90
