#pragma once
// fp8 pieces of the sm90 kernels (GemmConfig::FP8): the dequantization of the accumulators and the promoted k loop.
// The mainloop itself is the 16-bit one in bytes (a stage row is 128 K-elements, a k32 wgmma steps 32 bytes).
//   acc=fast:    all of K accumulates in the tensor core (consume_tile); the tensor or row scales multiply the finished
//                accumulators (apply_scales) before the epilogue's alpha, beta * C and chain.
//   acc=promote: each k-block's four k32 wgmmas go to a temporary accumulator, which is added into the fp32
//                accumulator on the CUDA cores (consume_tile_promote), times the k-block's block scales with block
//                scaling; tensor / row scales then apply as with acc=fast. The tensor core's accumulation of a long K
//                loses low bits; the promoted sum keeps them (DeepGEMM's recipe).
// Fragment of a wgmma m64nN fp32 accumulator (see epilogue_tma_store.cuh): thread t of the warpgroup (warp w, lane l)
// holds acc[4c + 2i + j] = D(row 16w + l/4 + 8i, col 8c + 2(l%4) + j).
#include "sm90/sm90_mainloop.cuh"

namespace gt_sm90 {

// The tensor scale scale_a[0] * scale_b[0]: read once per consumer (before its tile loop), 1 for other scalings.
template <class Cfg>
__device__ __forceinline__ float tensor_scale(const GemmParams& p) {
  if constexpr (Cfg::SCALE == kScaleTensor) return p.sr[0] * p.sc[0];
  return 1.0f;
}

// Multiplies one consumer's accumulators (rows m0 + [0, 64 * kSlabs), columns n0 + [0, BN)) by the tensor or row
// scales. Row scales are read per tile: two rows per slab and BN / 4 columns per thread, from L1/L2 (each is shared
// by the warps of the tile and the tiles of its row / column). Rows and columns past the problem read nothing (their
// accumulators are TMA's zero fill, and the epilogue does not store them).
template <class Cfg>
__device__ __forceinline__ void apply_scales(float (&acc)[Cfg::kSlabs][Cfg::BN / 2], const GemmParams& p,
                                             float tensor, int m0, int n0, int tid) {
  if constexpr (Cfg::SCALE == kScaleTensor) {
#pragma unroll
    for (int si = 0; si < Cfg::kSlabs; ++si)
#pragma unroll
      for (int i = 0; i < Cfg::BN / 2; ++i) acc[si][i] *= tensor;
  } else if constexpr (Cfg::SCALE == kScaleRow) {
    const int warp = tid / 32, lane = tid % 32;
    float fr[Cfg::kSlabs][2];
#pragma unroll
    for (int si = 0; si < Cfg::kSlabs; ++si)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int r = m0 + si * 64 + warp * 16 + lane / 4 + 8 * i;
        fr[si][i] = r < p.m ? p.sr[r] : 0.0f;
      }
#pragma unroll
    for (int c = 0; c < Cfg::BN / 8; ++c) {
      const int col = n0 + 8 * c + 2 * (lane % 4);
      const float s0 = col < p.n ? p.sc[col] : 0.0f, s1 = col + 1 < p.n ? p.sc[col + 1] : 0.0f;
#pragma unroll
      for (int si = 0; si < Cfg::kSlabs; ++si)
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          acc[si][4 * c + 2 * i] *= fr[si][i] * s0;
          acc[si][4 * c + 2 * i + 1] *= fr[si][i] * s1;
        }
    }
  }
}

// The k loop of one tile for one consumer warpgroup with promoted accumulation (acc=promote), starting at ring
// position `rp` (advanced by k_iters) and absolute k-block kb0 (block scales are indexed by it). m0, n0: the first row
// and column of this consumer's accumulators; row0: its first tile row in shared memory. `issued()` as in
// consume_tile: once the last wgmmas are issued, before waiting for them.
// Per k-block: the block scales are loaded before the wait on the full barrier (plain global loads: one per thread
// row and 128-column block, read by every CTA of the row or column from L2; TMA-ing them into the stage would need
// an arrival count per scale box and a stage layout per tile shape for a few hundred bytes), the k-block's wgmmas go
// to `tmp` (zeroed by the first k32), the stage is released as soon as they completed, and tmp is added into acc
// (times the scales) on the CUDA cores while the other consumer warpgroup's wgmmas keep the tensor core busy.
// NOTES: tile N 128 (or a divisor) has one B block per tile and k-block; tile N 256 two, 8-column groups never
// straddling a block (tile origins are multiples of 128 there).
template <class Cfg, class Issued>
__device__ __forceinline__ void consume_tile_promote(float (&acc)[Cfg::kSlabs][Cfg::BN / 2], const SmemPlan<Cfg>& sm,
                                                     RingPos<Cfg::STAGES>& rp, int kb0, int k_iters, int row0,
                                                     const GemmParams& p, int m0, int n0, int tid, Issued issued) {
  constexpr bool kBlock = Cfg::SCALE == kScaleBlock;
  constexpr int kNB = Cfg::BN >= 128 ? Cfg::BN / 128 : 1;  // B scale blocks across the tile
  const int lane = tid % 32, warp = tid / 32;
  const StageDescs<Cfg> descs(sm, __shfl_sync(0xffffffffu, row0, 0));
  const StageRelease<Cfg> release(sm, lane);
  float tmp[Cfg::kSlabs][Cfg::BN / 2];
#pragma unroll
  for (int si = 0; si < Cfg::kSlabs; ++si)
#pragma unroll
    for (int i = 0; i < Cfg::BN / 2; ++i) acc[si][i] = 0.0f;
  const int kb_count = (p.k + Cfg::BK - 1) / Cfg::BK, nb_count = (p.n + 127) / 128;
  for (int kb = 0; kb < k_iters; ++kb, rp.next()) {
    const int s = rp.s;
    float f[Cfg::kSlabs][2][kNB];
    if constexpr (kBlock) {
      const long long kbk = kb0 + kb;
      float fb[kNB];
#pragma unroll
      for (int j = 0; j < kNB; ++j) {
        const int nb = n0 / 128 + j;
        fb[j] = nb < nb_count ? p.sc[static_cast<long long>(nb) * kb_count + kbk] : 0.0f;
      }
#pragma unroll
      for (int si = 0; si < Cfg::kSlabs; ++si)
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          const int r = m0 + si * 64 + warp * 16 + lane / 4 + 8 * i;
          const float fa = r < p.m ? p.sr[kbk * p.m + r] : 0.0f;
#pragma unroll
          for (int j = 0; j < kNB; ++j) f[si][i][j] = fa * fb[j];
        }
    }
    mbar_wait(sm.full(s), rp.ph);
#pragma unroll
    for (int si = 0; si < Cfg::kSlabs; ++si)
#pragma unroll
      for (int i = 0; i < Cfg::BN / 2; ++i) reg_fence(tmp[si][i]);
    wgmma_fence();
    mma_stage<Cfg>(tmp, descs, s, false);
    wgmma_commit();
    if (kb + 1 == k_iters) issued();
    wgmma_wait<0>();
#pragma unroll
    for (int si = 0; si < Cfg::kSlabs; ++si)
#pragma unroll
      for (int i = 0; i < Cfg::BN / 2; ++i) reg_fence(tmp[si][i]);
    release(s);
#pragma unroll
    for (int si = 0; si < Cfg::kSlabs; ++si)
#pragma unroll
      for (int c = 0; c < Cfg::BN / 8; ++c)
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            float& a = acc[si][4 * c + 2 * i + j];
            const float t = tmp[si][4 * c + 2 * i + j];
            if constexpr (kBlock)
              a = fmaf(t, f[si][i][(8 * c) / 128 < kNB ? (8 * c) / 128 : 0], a);
            else
              a += t;
          }
  }
  if (k_iters == 0) issued();
}

}  // namespace gt_sm90
