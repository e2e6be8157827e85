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

// Row scaling: brings the row and column scales of one consumer's tile part (rows m0 + [0, WM), columns
// n0 + [0, BN)) into L1 before its mainloop, one 128-byte line per thread, so that apply_scales after the mainloop
// reads them from L1 instead of waiting an L2 round trip per tile while the tensor core idles (both coop consumers
// reach it at once). Nothing else of the consumers goes through L1 in the mainloop (TMA bypasses it). No-op for
// other scalings.
template <class Cfg>
__device__ __forceinline__ void prefetch_scales(const GemmParams& p, int m0, int n0, int tid, int g = 0) {
  if constexpr (Cfg::SCALE == kScaleRow) {
    const float* const sr = group_sr<Cfg>(p, g);
    const float* const sc = group_sc<Cfg>(p, g);
    // Lines covering [x0, x0 + len): x0 + 32 i for i < len / 32, and the last element (x0 need not be aligned).
    constexpr int kColLines = Cfg::BN / 32 + 1, kRowLines = Cfg::WM / 32 + 1;
    const float* q = nullptr;
    if (tid < kColLines) {
      const int last = (n0 + Cfg::BN < p.n ? n0 + Cfg::BN : p.n) - 1;
      const int c = n0 + 32 * tid;
      if (n0 < p.n) q = sc + (c < last ? c : last);
    } else if (tid < kColLines + kRowLines) {
      const int last = (m0 + Cfg::WM < p.m ? m0 + Cfg::WM : p.m) - 1;
      const int r = m0 + 32 * (tid - kColLines);
      if (m0 < p.m) q = sr + (r < last ? r : last);
    }
    if (q != nullptr) asm volatile("prefetch.global.L1 [%0];" ::"l"(q));
  }
}

// Multiplies one consumer's accumulators (rows m0 + [0, 64 * kSlabs), columns n0 + [0, BN)) by the tensor or row
// scales. Row scales are read per tile: two rows per slab and BN / 4 columns per thread, from L1/L2 (each is shared
// by the warps of the tile and the tiles of its row / column). Rows and columns past the problem read nothing (their
// accumulators are TMA's zero fill, and the epilogue does not store them).
template <class Cfg>
__device__ __forceinline__ void apply_scales(float (&acc)[Cfg::kSlabs][Cfg::BN / 2], const GemmParams& p,
                                             float tensor, int m0, int n0, int tid, int g = 0) {
  if constexpr (Cfg::SCALE == kScaleTensor) {
#pragma unroll
    for (int si = 0; si < Cfg::kSlabs; ++si)
#pragma unroll
      for (int i = 0; i < Cfg::BN / 2; ++i) acc[si][i] *= tensor;
  } else if constexpr (Cfg::SCALE == kScaleRow) {
    const float* const sr = group_sr<Cfg>(p, g);
    const float* const sc = group_sc<Cfg>(p, g);
    const int warp = tid / 32, lane = tid % 32;
    float fr[Cfg::kSlabs][2];
#pragma unroll
    for (int si = 0; si < Cfg::kSlabs; ++si)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int r = m0 + si * 64 + warp * 16 + lane / 4 + 8 * i;
        fr[si][i] = r < p.m ? sr[r] : 0.0f;
      }
#pragma unroll
    for (int c = 0; c < Cfg::BN / 8; ++c) {
      const int col = n0 + 8 * c + 2 * (lane % 4);
      const float s0 = col < p.n ? sc[col] : 0.0f, s1 = col + 1 < p.n ? sc[col + 1] : 0.0f;
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

// One k-block's block scales as one consumer thread needs them: A's for its accumulator rows (two per slab), B's for
// the 128-column blocks its tile spans, read from the stage's scale slot (sm90_scale_loader.cuh) after the full wait,
// before the stage is released.
template <class Cfg>
struct BlockScales {
  static constexpr int kNB = Cfg::kScaleNB;
  float a[Cfg::kSlabs][2], b[kNB > 0 ? kNB : 1];
  // row: this thread's first accumulator row in the tile (the consumer's first row + 16 warp + lane / 4).
  __device__ __forceinline__ void load(const SmemPlan<Cfg>& sm, int s, int row) {
    const unsigned slot = sm.scales(s) + kScaleData;
#pragma unroll
    for (int j = 0; j < kNB; ++j) b[j] = __int_as_float(ld_shared_s32(slot + 4 * (Cfg::BM + j)));
#pragma unroll
    for (int si = 0; si < Cfg::kSlabs; ++si)
#pragma unroll
      for (int i = 0; i < 2; ++i) a[si][i] = __int_as_float(ld_shared_s32(slot + 4 * (row + si * 64 + 8 * i)));
  }
};

template <int V>
struct Step {
  static constexpr int value = V;
};

// f(Step<I>{}) for I in [0, N), unrolled.
template <int I, int N, class F>
__device__ __forceinline__ void static_for(F&& f) {
  if constexpr (I < N) {
    f(Step<I>{});
    static_for<I + 1, N>(f);
  }
}

// acc += tmp (times the k-block's block scales with block scaling), on the CUDA cores. Each run of kCols columns
// takes one factor per row (A's row scale times a B block's): the whole tile where it lies in one 128-column block,
// each 128 columns where tile N is a multiple of 128. A tile N that is neither (144, 160, 192) spans two blocks and
// starts at a multiple of G = gcd(BN, 128) within the first, so its columns take the second block from `split`
// (128 - n0 % 128, fixed per tile), a multiple of G in [G, 128]: of its G-column segments the first always takes
// the first block, those from column 128 on the second, and each one between takes a select per row and k-block (7
// at tile N 144, 3 at 160, 1 at 192) instead of a branch between copies of the FFMA run.
template <class Cfg>
__device__ __forceinline__ void promote_into(float (&acc)[Cfg::kSlabs][Cfg::BN / 2],
                                             const float (&tmp)[Cfg::kSlabs][Cfg::BN / 2],
                                             const BlockScales<Cfg>& sc, int split) {
  constexpr int kNB = BlockScales<Cfg>::kNB;
  constexpr bool kBlock = Cfg::SCALE == kScaleBlock, kSplit = kBlock && kNB == 2 && Cfg::BN % 128 != 0;
  constexpr int kCols = kSplit ? gcd(Cfg::BN, 128) : kBlock && kNB > 1 ? 128 : Cfg::BN;
  constexpr int kF = Cfg::BN / kCols;  // factors per row
#pragma unroll
  for (int si = 0; si < Cfg::kSlabs; ++si)
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      float f[kF];
      if constexpr (kSplit) {
        const float f0 = sc.a[si][i] * sc.b[0], f1 = sc.a[si][i] * sc.b[1];
        // Selected as bits: a float select between the two products NVVM turns into a product of a selected B
        // scale, one per segment and row (25 instead of 18 instructions per k-block and thread at tile N 144).
#pragma unroll
        for (int g = 0; g < kF; ++g)
          f[g] = g == 0             ? f0
                 : kCols * g >= 128 ? f1
                                    : __int_as_float(kCols * g >= split ? __float_as_int(f1) : __float_as_int(f0));
      } else if constexpr (kBlock) {
#pragma unroll
        for (int j = 0; j < kF; ++j) f[j] = sc.a[si][i] * sc.b[j];
      }
#pragma unroll
      for (int c = 0; c < Cfg::BN / 8; ++c)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          float& a = acc[si][4 * c + 2 * i + j];
          const float t = tmp[si][4 * c + 2 * i + j];
          if constexpr (kBlock)
            a = fmaf(t, f[8 * c / kCols], a);
          else
            a += t;
        }
    }
}

// Two temporaries (k-block kb's wgmmas run while kb - 1's are promoted) where three accumulator sets fit the
// consumer's registers (tile N <= 128 per 64 rows); otherwise one, and the tensor core waits for each promotion
// unless the other consumer warpgroup's wgmmas fill it.
template <class Cfg>
inline constexpr int kPromoteBufs = 3 * Cfg::kAccRegs <= 192 ? 2 : 1;

// The k loop of one tile for one consumer warpgroup with promoted accumulation (acc=promote), starting at ring
// position `rp` (advanced by k_iters). row0: the consumer's first tile row in shared memory; n0: the tile's first
// column. `issued()` as in consume_tile: once the last wgmmas are issued, before waiting for them.
// Each k-block's wgmmas go to a temporary (zeroed by the first k32) that is added into acc (times the k-block's
// scales) once they completed, and its stage is released then. With two temporaries the k-blocks run in straight
// runs of kRun: k-block u + 1 of a run is issued before u is waited for (wait_group 1), so u's promotion overlaps
// u + 1's wgmmas; only the run's last promotion waits for the tensor core (wait_group 0), when the other consumer
// warpgroup's wgmmas fill it. With one temporary every k-block waits for its own wgmmas.
// A k-block's block scales are read from its stage once its wgmmas are issued, into set u % NT (k-block u is
// promoted after u + 1's wait with two temporaries).
// NOTES: ptxas serializes every wgmma of the kernel (C7514) when registers of a wgmma issued before a loop's
// back edge are read after a wait_group 1 behind it; a run in straight-line code, drained by wait_group 0 at its end,
// keeps them asynchronous.
template <class Cfg, class Issued>
__device__ __forceinline__ void consume_tile_promote(float (&acc)[Cfg::kSlabs][Cfg::BN / 2], const SmemPlan<Cfg>& sm,
                                                     RingPos<Cfg::STAGES>& rp, int k_iters, int row0, int n0,
                                                     int tid, Issued issued) {
  constexpr bool kBlock = Cfg::SCALE == kScaleBlock;
  constexpr int NT = kPromoteBufs<Cfg>, kRun = NT == 2 ? 4 : 2;
  const int lane = tid % 32, warp = tid / 32;
  const StageDescs<Cfg> descs(sm, __shfl_sync(0xffffffffu, row0, 0));
  const StageRelease<Cfg> release(sm, lane);
  const int srow = row0 + warp * 16 + lane / 4;
  const int split = 128 - n0 % 128;  // promote_into: the first column of a two-block tile's second B block
  float tmp[NT][Cfg::kSlabs][Cfg::BN / 2];
  BlockScales<Cfg> sc[NT];
#pragma unroll
  for (int si = 0; si < Cfg::kSlabs; ++si)
#pragma unroll
    for (int i = 0; i < Cfg::BN / 2; ++i) acc[si][i] = 0.0f;
  auto fence = [](float (&t)[Cfg::kSlabs][Cfg::BN / 2]) {
#pragma unroll
    for (int si = 0; si < Cfg::kSlabs; ++si)
#pragma unroll
      for (int i = 0; i < Cfg::BN / 2; ++i) reg_fence(t[si][i]);
  };
  int kc = 0;  // first k-block of the current run
  // Promotes k-block kc + X from tmp[X % NT] (its wgmmas completed; its scales are in registers).
  auto promote = [&](auto x, int stage) {
    constexpr int X = decltype(x)::value;
    fence(tmp[X % NT]);
    release(stage);
    promote_into<Cfg>(acc, tmp[X % NT], sc[X % NT], split);
  };
  // A straight run of N k-blocks from kc.
  auto run = [&](auto n) {
    constexpr int N = decltype(n)::value;
    int prev = 0;
    static_for<0, N>([&](auto u) {
      constexpr int U = decltype(u)::value;
      const int s = rp.s;
      mbar_wait(sm.full(s), rp.ph);
      fence(tmp[U % NT]);
      wgmma_fence();
      mma_stage<Cfg>(tmp[U % NT], descs, s, false);
      wgmma_commit();
      if constexpr (kBlock) sc[U % NT].load(sm, s, srow);
      if (kc + U + 1 == k_iters) issued();
      if constexpr (NT == 2 && U > 0) {
        wgmma_wait<1>();
        promote(Step<U - 1>{}, prev);
      }
      if constexpr (NT == 1 || U == N - 1) {
        wgmma_wait<0>();
        promote(u, s);
      }
      prev = s;
      rp.next();
    });
    kc += N;
  };
  while (kc + kRun <= k_iters) run(Step<kRun>{});
  // The last k_iters % kRun k-blocks one at a time, each waiting for its own wgmmas: one more copy of the k-block body
  // instead of a run per remainder (6 more unrolled bodies beside the run's 4 with kRun 4; NVVM's and ptxas's time
  // follows the bodies). After runs of 2 one k-block at most is left: no loop.
  while (kc < k_iters) {
    run(Step<1>{});
    if constexpr (kRun == 2) break;
  }
  if (k_iters == 0) issued();
}

}  // namespace gt_sm90
