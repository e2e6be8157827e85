#pragma once
// Mainloop pieces shared by the cooperative and ping-pong kernels: the TMA producer (one thread) and the wgmma
// consumer step over one stage, plus the stage release. Ring protocol: stage s = pos % STAGES of a running
// k-block position `pos`; the producer waits empty[s] with parity ((pos / STAGES) & 1) ^ 1 (a fresh barrier passes),
// the consumers wait full[s] with parity (pos / STAGES) & 1. Both walk the ring with a RingPos (stage, phase) that
// steps without dividing: a division by a non-power-of-two STAGES per k-block cost 4-8% (5 vs 4 stages, H200).
#include "ptx/ptx.cuh"
#include "ptx/wgmma.cuh"
#include "scheduler/group_tiles.cuh"
#include "scheduler/tile_scheduler.cuh"
#include "sm90/sm90_config.cuh"
#include "sm90/sm90_cp_loader.cuh"
#include "sm90/sm90_scale_loader.cuh"
#include "sm90/sm90_tile_stream.cuh"

namespace gt_sm90 {

// One operand tile of a stage, TILE rows (M or N) x 64 K: this CTA's part of `rows` tile rows, the whole tile when
// the operand is not shared in the cluster. K-major: boxes of PIECE rows (PIECE = rows but for the GLU halves);
// MN-major: one box per 64-row chunk. `row_of(tile_row)` is the global row of a tile row. With MULTICAST each box
// lands in every CTA of `mask`.
template <bool MN, int TILE, int PIECE, bool MULTICAST, class RowOf>
__device__ __forceinline__ void load_operand(unsigned base, const TmaDesc& t, unsigned bar, int k0, int b, int part,
                                             int rows, unsigned short mask, RowOf row_of) {
  auto box = [&](unsigned dst, int c0, int c1) {
    if (MULTICAST)
      tma_load_3d_multicast(dst, t, bar, c0, c1, b, mask);
    else
      tma_load_3d(dst, t, bar, c0, c1, b);
  };
  if (!MN) {
#pragma unroll
    for (int pc = 0; pc < rows / PIECE; ++pc) {
      const int tr = part * rows + pc * PIECE;
      box(base + tr * 128, k0, row_of(tr));
    }
  } else {
#pragma unroll
    for (int ch = 0; ch < TILE / 64; ++ch) box(base + ch * 8192 + part * rows * 128, row_of(64 * ch), k0 + part * rows);
  }
}

// Loads one k-block (A and B tiles) of tile (m0, n0, b) into stage s. `rm`, `rn`: this CTA's place in its cluster
// (rank = rm + rn * CM). A is shared by the CN CTAs of a cluster row, B by the CM CTAs of a cluster column.
// HALVES (a GLU over the halves of N, see epilogue_fused_store.cuh): tile rows [0, BN/2) of B are the gate columns
// n0/2 + r, rows [BN/2, BN) the up columns n_half + n0/2 + r - BN/2 (the host's B map has boxes of <= BN/2 rows).
// LOAD_A / LOAD_B: the operands TMA loads (load=cp: those the cp.async producer does not). bb: B's batch coordinate
// when it is not A's (a grouped GEMM's group), else -1.
template <class Cfg, bool HALVES = false, bool LOAD_A = true, bool LOAD_B = true>
__device__ __forceinline__ void load_stage(const TmaDesc& ta, const TmaDesc& tb, const SmemPlan<Cfg>& sm, int s,
                                           int m0, int n0, int k0, int b, int rm, int rn, int n_half = 0,
                                           int bb = -1) {
  static_assert(!HALVES || !Cfg::B_MN || Cfg::BN % 128 == 0, "GLU halves with N-major B needs tile N a multiple of 128");
  const unsigned bar = sm.full(s);
  unsigned short a_mask = 0, b_mask = 0;
#pragma unroll
  for (int j = 0; j < Cfg::CN; ++j) a_mask |= static_cast<unsigned short>(1u << (rm + j * Cfg::CM));
#pragma unroll
  for (int i = 0; i < Cfg::CM; ++i) b_mask |= static_cast<unsigned short>(1u << (i + rn * Cfg::CM));
  constexpr int kARows = Cfg::kABoxRows, kBRows = Cfg::kBBoxRows;
  if constexpr (LOAD_A)
    load_operand<Cfg::A_MN, Cfg::BM, kARows, (Cfg::kAParts > 1)>(sm.a(s), ta, bar, k0, b, Cfg::kAParts > 1 ? rn : 0,
                                                                  kARows, a_mask, [&](int tr) { return m0 + tr; });
  constexpr int kBPiece = HALVES && kBRows > Cfg::BN / 2 ? Cfg::BN / 2 : kBRows;
  if constexpr (LOAD_B)
    load_operand<Cfg::B_MN, Cfg::BN, kBPiece, (Cfg::kBParts > 1)>(
      sm.b(s), tb, bar, k0, bb < 0 ? b : bb, Cfg::kBParts > 1 ? rm : 0, kBRows, b_mask, [&](int tr) {
        if (HALVES) return tr < Cfg::BN / 2 ? n0 / 2 + tr : n_half + n0 / 2 + tr - Cfg::BN / 2;
        return n0 + tr;
      });
}

// The producer: one thread walks this cluster's tiles and fills the ring (load=cp: every thread tid of the producer
// warpgroup walks them and issues its share of each stage's cp.async, sm90_cp_loader.cuh). With the dynamic tile
// order the producer of cluster rank 0 is the taker (see sm90_tile_stream.cuh): when it starts a tile's loads it
// publishes that tile and fetches the next index (the atomic's latency hides behind the tile's loads).
// NOTES: fetching 2 k-blocks before the end of the tile instead measured the same (docs/PERFORMANCE.md) and kept
// the counter's address live through the k loop, which made the 40-register producer spill in coop 128x256 kernels.
template <class Cfg, bool HALVES = false>
__device__ __forceinline__ void producer_loop(const TmaDesc& ta, const TmaDesc& tb, const SmemPlan<Cfg>& sm,
                                              const GemmParams& p, const TileStream<Cfg>& tiles, int rm, int rn,
                                              [[maybe_unused]] int tid) {
  const int k_iters = (p.k + Cfg::BK - 1) / Cfg::BK;
  RingPos<Cfg::STAGES> rp;
  // Block scaling: the scale loaders' end of the walk, in the next kScaleLoaders slots (one each) once the
  // consumers freed them.
  auto end_scale_walk = [&](RingPos<Cfg::STAGES> at) {
    if constexpr (Cfg::SCALE == kScaleBlock) {
      for (int i = 0; i < kScaleLoaders; ++i, at.next()) {
        mbar_wait(sm.empty(at.s), at.ph ^ 1u);
        publish_scale_stage<Cfg>(sm, at.s, 0, 0, -1, 0);
      }
    }
  };
  if constexpr (Cfg::GROUPED != 0) {  // the real tiles of a grouped walk (scheduler/group_tiles.cuh)
    GroupedWalk<Cfg> walk(p, sm.group_prefix(), tiles.first, tiles.stride);
    GroupTile t;
    while (walk.next(p, rn, t)) {
      for (int kb = 0; kb < k_iters; ++kb, rp.next()) {
        mbar_wait(sm.empty(rp.s), rp.ph ^ 1u);
        publish_scale_stage<Cfg>(sm, rp.s, t.m0, t.n0, kb, t.g);
        mbar_arrive_expect_tx(sm.full(rp.s), Cfg::kStageBytes);
        load_stage<Cfg, HALVES>(ta, tb, sm, rp.s, t.m0, t.n0, kb * Cfg::BK, t.ba, rm, rn, p.n / 2, t.g);
      }
    }
    end_scale_walk(rp);
    return;
  }
  const TileScheduler<Cfg::CM, Cfg::CN> sched(p.m, p.n, p.batch, Cfg::BM, Cfg::BN, p.raster_n, p.group);
  [[maybe_unused]] int fetched = 0;
  for (int j = 0;; ++j) {
    int t, k0 = 0, k1 = k_iters;
    if constexpr (Cfg::DYNAMIC) {
      if (rm == 0 && rn == 0) {  // the taker
        t = j == 0 ? tiles.first : fetched + tiles.stride;
        TileStream<Cfg>::publish(sm, j, t);
        if (t < sched.total) fetched = atomicAdd(p.tiles, 1);
      } else {
        t = tiles.read_thread(sm, j);
      }
    } else {
      const Unit u = tiles.unit(p, j, sched.total, k_iters);
      t = u.t;
      k0 = u.k0;
      k1 = u.k1;
    }
    if (t >= sched.total) {
      if constexpr (Cfg::DYNAMIC) {
        if (rm == 0 && rn == 0) tiles.finish(sm, j, p.tiles, sched.total);
      }
      end_scale_walk(rp);
      break;
    }
    int m0, n0, b;
    sched.tile_origin(t, rm, rn, Cfg::BM, Cfg::BN, m0, n0, b);
    for (int kb = k0; kb < k1; ++kb, rp.next()) {
      mbar_wait(sm.empty(rp.s), rp.ph ^ 1u);
      if constexpr (Cfg::CP) {
        if (Cfg::kTmaBytes > 0 && tid == 0) {  // the operand TMA can load
          mbar_arrive_expect_tx(sm.full(rp.s), Cfg::kTmaBytes);
          load_stage<Cfg, HALVES, Cfg::CP_A == 0, Cfg::CP_B == 0>(ta, tb, sm, rp.s, m0, n0, kb * Cfg::BK, b, rm, rn,
                                                                  p.n / 2);
        }
        cp_load_stage<Cfg, HALVES>(sm, p, rp.s, m0, n0, kb * Cfg::BK, b, tid);
        cp_async_mbar_arrive(sm.full(rp.s));
      } else {
        publish_scale_stage<Cfg>(sm, rp.s, m0, n0, kb, 0);
        mbar_arrive_expect_tx(sm.full(rp.s), Cfg::kStageBytes);
        load_stage<Cfg, HALVES>(ta, tb, sm, rp.s, m0, n0, kb * Cfg::BK, b, rm, rn, p.n / 2);
      }
    }
  }
}

// Shared-memory matrix descriptors of one consumer's operands in stage 0; stage s, slab si and k16 step kk are
// constant offsets from them (mma_stage). The 14-bit start-address field holds address >> 4 and every shared address
// is < 228 KB (< 2^14 * 16), so adding an offset to the 64-bit descriptor never carries into the next field.
//   K-major: 8-row x 128-byte swizzle atoms stacked at 1024 bytes (SBO); a k16 step moves 32 bytes inside the row.
//   MN-major: 64-element x 8-k atoms; 8-k groups at 1024 bytes (SBO), 64-wide MN chunks at 8192 bytes (LBO);
//   a k16 step moves 16 rows = 2048 bytes.
// Both kinds put the 64-row slab si at si * 8192 bytes from the consumer's first row.
// NOTES: computing each descriptor from its address inside the k loop (mask, shift, or) cost ~108 instructions per
// k-block and consumer warp around 8 wgmmas (ncu: 2.3x cuBLAS's instruction count); 64-67 with the low
// words stepped by 32-bit adds (ptxas then re-materialised the constant high word with a UMOV, and a NOP, for every
// wgmma); 53-54 with 64-bit adds on whole descriptors (one UIADD3.64 per wgmma operand, as cuBLAS's kernel), the
// descriptors in uniform registers when the caller's tile loop is warp-uniform (see gemm_pingpong).
template <class Cfg>
struct StageDescs {
  unsigned long long a0, b0;  // stage-0 descriptors (128-byte swizzle, SBO 1024 bytes)
  static constexpr unsigned kStage = Cfg::kStageBytes >> 4;  // offsets in descriptor units (16 bytes)
  static constexpr unsigned kSlab = 8192 >> 4;
  static constexpr unsigned kKA = (Cfg::A_MN ? 2048 : 32) >> 4, kKB = (Cfg::B_MN ? 2048 : 32) >> 4;
  __device__ __forceinline__ StageDescs(const SmemPlan<Cfg>& sm, int row0) {
    constexpr unsigned long long kHi = smem_desc_sw128_hi(1024);
    // row0 * 128 = (row0 / 64) * 8192: the slab offset of both layouts.
    a0 = kHi | smem_desc_sw128_lo(sm.a(0) + row0 * 128, Cfg::A_MN ? 8192 : 16);
    b0 = kHi | smem_desc_sw128_lo(sm.b(0), Cfg::B_MN ? 8192 : 16);
  }
};

// Issues the 4 k16 (fp8: k32) steps of stage s for one consumer. `accumulate` = false zero-initialises the
// accumulators on the first step.
template <class Cfg>
__device__ __forceinline__ void mma_stage(float (&acc)[Cfg::kSlabs][Cfg::BN / 2], const StageDescs<Cfg>& d, int s,
                                          bool accumulate) {
  using Mma = typename Cfg::Mma;  // m64nNk16 (16-bit) or m64nNk32 (fp8): 32 bytes of K per step either way
  using D = StageDescs<Cfg>;
  const unsigned long long off = static_cast<unsigned>(s) * D::kStage, la = d.a0 + off, lb = d.b0 + off;
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
    for (int si = 0; si < Cfg::kSlabs; ++si)
      Mma::template mma<Cfg::A_MN ? 1 : 0, Cfg::B_MN ? 1 : 0>(acc[si], la + (si * D::kSlab + kk * D::kKA),
                                                             lb + kk * D::kKB, (accumulate || kk > 0) ? 1 : 0);
  }
}

// Frees stage s on every CTA whose TMA loads write into this CTA's stages: the CTAs of its cluster row (A is multicast
// along it) and column (B along it), itself included; their producers wait for this CTA's consumers. That is the whole
// cluster but for 2x2, whose diagonal peer (rank 3 - own rank, rank = rm + rn * CM) shares nothing. One arrival per
// consumer warpgroup and destination CTA, lane 0 of warp r of the warpgroup arriving on CTA r's empty[s], so the
// remote arrivals of a cluster go out from different warps in parallel.
// NOTES: wgmma is a warpgroup operation; after wgmma.wait_group in one warp the group's reads of the stage are done
// (CUTLASS's PipelineTmaAsync signals from one thread per warpgroup and destination too). 8 arrivals per CTA and
// stage (16 remote ones with a cluster) were what the first H200 run used. The rank is read here rather than kept
// in a register: a register live across the epilogue made a fused ping-pong 2x2 kernel spill. So a StageRelease lives
// in consume_tile only (built once per tile, not per k-block).
template <class Cfg>
struct StageRelease {
  bool arrives;    // lane 0 of warp w < CS, but not toward a 2x2 cluster's diagonal peer
  unsigned bar0;  // empty[0] of the CTA it arrives on (cluster rank w): shared::cluster address with a cluster
  __device__ __forceinline__ StageRelease(const SmemPlan<Cfg>& sm, int lane) {
    static_assert(Cfg::CS <= 4, "one warp of the consumer warpgroup per destination CTA");
    const int w = static_cast<int>(threadIdx.x / 32) % 4;
    arrives = lane == 0 && w < Cfg::CS;
    if (Cfg::CS == 4) arrives = arrives && w != 3 - static_cast<int>(cluster_ctarank());
    bar0 = Cfg::CS == 1 ? sm.empty(0) : mapa_cluster(sm.empty(0), static_cast<unsigned>(w));
  }
  __device__ __forceinline__ void operator()(int s) const {
    if (!arrives) return;
    if (Cfg::CS == 1)
      mbar_arrive(bar0 + 8 * s);
    else
      mbar_arrive_remote(bar0 + 8 * s);
  }
};

// The k loop of one tile for one consumer warpgroup, starting at ring position `rp` (advanced by k_iters).
// `issued()` runs in every thread once this warpgroup has waited on its last full barrier and issued its last wgmma,
// before the wait for them to complete: the ping-pong schedule hands the tensor pipe to the other consumer there, so
// that its first wgmmas queue behind this one's last instead of starting after the pipe drained.
template <class Cfg, class Issued>
__device__ __forceinline__ void consume_tile(float (&acc)[Cfg::kSlabs][Cfg::BN / 2], const SmemPlan<Cfg>& sm,
                                             RingPos<Cfg::STAGES>& rp, int k_iters, int row0, int lane,
                                             Issued issued) {
  const StageDescs<Cfg> descs(sm, __shfl_sync(0xffffffffu, row0, 0));
  const StageRelease<Cfg> release(sm, lane);
  int prev = -1;
  for (int kb = 0; kb < k_iters; ++kb, rp.next()) {
    const int s = rp.s;
    mbar_wait(sm.full(s), rp.ph);
    // load=cp: the stage was written through the generic proxy (cp.async); wgmma reads it through the async proxy.
    if constexpr (Cfg::CP) fence_proxy_async();
#pragma unroll
    for (int si = 0; si < Cfg::kSlabs; ++si)
#pragma unroll
      for (int i = 0; i < Cfg::BN / 2; ++i) reg_fence(acc[si][i]);
    wgmma_fence();
    mma_stage<Cfg>(acc, descs, s, kb > 0);
    wgmma_commit();
    // Keep one stage of wgmmas in flight; the one before it is done reading and can be refilled.
    wgmma_wait<1>();
    if (prev >= 0) release(prev);
    prev = s;
  }
  issued();
  wgmma_wait<0>();
#pragma unroll
  for (int si = 0; si < Cfg::kSlabs; ++si)
#pragma unroll
    for (int i = 0; i < Cfg::BN / 2; ++i) reg_fence(acc[si][i]);
  release(prev);
}

// Block start shared by both schedules: thread 0 prefetches the tensor maps and initialises the ring's barriers plus
// the schedule's own (`init_more`), then the cluster (or the CTA) syncs so that no one uses a barrier before it exists.
template <class Cfg, class InitMore>
__device__ __forceinline__ void init_pipeline(const SmemPlan<Cfg>& sm, const TmaDesc& ta, const TmaDesc& tb,
                                              const TmaDesc& td, const TmaDesc& tdt, InitMore init_more) {
  if (threadIdx.x == 0) {
    if (Cfg::CP_A == 0) prefetch_tma_desc(ta);  // load=cp: the map of an operand cp.async loads is not encoded
    if (Cfg::CP_B == 0) prefetch_tma_desc(tb);
    prefetch_tma_desc(td);
    if (Cfg::kEpiTailBytes > 0) prefetch_tma_desc(tdt);
#pragma unroll
    for (int s = 0; s < Cfg::STAGES; ++s) {
      mbar_init(sm.full(s), Cfg::kFullArrivals);
      mbar_init(sm.empty(s), Cfg::kEmptyArrivals);
      if (Cfg::SCALE == kScaleBlock) mbar_init(sm.scales(s), 1);  // the scale slot's descriptor barrier
    }
    TileStream<Cfg>::init(sm);
    init_more();
    fence_mbar_init();
  }
  if (Cfg::CS > 1)
    cluster_sync();
  else
    cta_sync();
}

// The producer warpgroup's part in both schedules: hand registers to the consumers, one thread fills the ring (all
// of them with load=cp), and with block scaling warps 1 .. kScaleLoaders copy the scales (sm90_scale_loader.cuh).
template <class Cfg, bool HALVES>
__device__ __forceinline__ void run_producer(const TmaDesc& ta, const TmaDesc& tb, const SmemPlan<Cfg>& sm,
                                             const GemmParams& p, const TileStream<Cfg>& tiles, int rm, int rn,
                                             int tid) {
  setmaxnreg_dec<Cfg::kProducerRegs>();
  if (Cfg::CP || tid == 0)
    producer_loop<Cfg, HALVES>(ta, tb, sm, p, tiles, rm, rn, tid);
  else if (Cfg::SCALE == kScaleBlock && tid / 32 >= 1 && tid / 32 <= kScaleLoaders)
    block_scale_loader<Cfg>(sm, p, tid / 32 - 1, tid % 32);
  if constexpr (Cfg::CP) cp_async_wait_all();  // no producer thread leaves with its last copies in flight
  asm volatile("bar.warp.sync 0xffffffff;" ::: "memory");
}

}  // namespace gt_sm90
