#pragma once
// Epilogue: fp32 accumulators of one consumer warpgroup -> alpha * acc (+ beta * C) -> D dtype -> shared memory
// (64-row x kEpiBytes strips, swizzled like the D tensor map) -> TMA store (clipped at the M/N edges).
// Kept apart from the mainloop so fused epilogues can replace the per-element math.
//
// wgmma m64nN f32 fragment: thread t of the warpgroup (warp w = t / 32, lane l) holds, for c in [0, N/8),
//   acc[4c + 2i + j] = D(row 16w + l/4 + 8i, col 8c + 2(l%4) + j),  i, j in {0, 1}.
#include "ptx/ptx.cuh"
#include "sm90/sm90_config.cuh"

namespace gt_sm90 {

// NOTES: asm volatile loads keep the C reads in program order with the shared-memory stores, so the compiler does
// not hoist a whole strip of C into registers next to 128+ accumulators (that spilled).
template <int CT>
__device__ __forceinline__ float load_c(const GemmParams& p, int row, int col, int b) {
  const long long off = static_cast<long long>(b) * p.c_batch + row * p.ldc_m + col * p.ldc_n;
  if (CT == kF32) {
    float f;
    asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(f) : "l"(static_cast<const float*>(p.c) + off));
    return f;
  }
  unsigned short h;
  asm volatile("ld.global.nc.u16 %0, [%1];" : "=h"(h) : "l"(static_cast<const unsigned short*>(p.c) + off));
  return CT == kBF16 ? bf16_to_f32(h) : f16_to_f32(h);
}

template <class Cfg>
struct EpilogueTmaStore {
  struct Params {};  // the plain epilogue takes no operands (EpilogueFused: gemmtune_epi::EpiParams)
  static constexpr bool kHalves = false;
  static constexpr int kChunks = Cfg::BN * Cfg::kOutSize / Cfg::kEpiBytes;  // strips per 64-row slab
  static constexpr int kGroupsPerChunk = Cfg::kEpiCols / 8;                // 8-column fragment groups per strip
  static constexpr unsigned kSwizzleMask = Cfg::kEpiBytes / 16 - 1;        // 128B: 7, 64B: 3, 32B: 1

  // Stores rows [m0, m0 + 64 * kSlabs) x cols [n0, n0 + BN) of batch b. `bufs(i)` = the two strip buffers of this
  // warpgroup; `bar_id` its named barrier; `buf` toggles across calls (persistent).
  __device__ __forceinline__ static void store(float (&acc)[Cfg::kSlabs][Cfg::BN / 2], const TmaDesc& td,
                                               const GemmParams& p, const Params&, unsigned buf0, unsigned buf1,
                                               int bar_id, int m0, int n0, int b, int tid, unsigned& buf) {
    const int warp = tid / 32, lane = tid % 32;
#pragma unroll
    for (int si = 0; si < Cfg::kSlabs; ++si) {
#pragma unroll
      for (int q = 0; q < kChunks; ++q) {
        // NOTES: TMA store clips the inner dimension at 16-byte granularity: with n * sizeof(D) not a multiple of
        // 16 it would write up to 15 bytes past column n (into the caller's ld padding). Such edge strips are
        // stored directly from registers with per-element bounds checks instead.
        if ((p.n * Cfg::kOutSize) % 16 != 0 && n0 + (q + 1) * Cfg::kEpiCols > p.n) {
          store_direct(acc[si], p, q, m0 + si * 64, n0, b, warp, lane);
          continue;
        }
        const unsigned dst = buf ? buf1 : buf0;
        // The store issued from this buffer two strips ago must have finished reading it.
        if (tid == 0) bulk_wait_read<1>();
        named_bar_sync(bar_id, 128);
#pragma unroll
        for (int g = 0; g < kGroupsPerChunk; ++g) {
          const int c = q * kGroupsPerChunk + g;
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            const int r = warp * 16 + lane / 4 + 8 * i;  // row inside the slab
            float v0 = p.alpha * acc[si][4 * c + 2 * i];
            float v1 = p.alpha * acc[si][4 * c + 2 * i + 1];
            if (Cfg::HAS_C) {
              const int row = m0 + si * 64 + r, col = n0 + 8 * c + 2 * (lane % 4);
              if (row < p.m) {
                if (col < p.n) v0 += p.beta * load_c<Cfg::CT>(p, row, col, b);
                if (col + 1 < p.n) v1 += p.beta * load_c<Cfg::CT>(p, row, col + 1, b);
              }
            }
            const unsigned off = r * Cfg::kEpiBytes + (g * 8 + 2 * (lane % 4)) * Cfg::kOutSize;
            const unsigned sw = off ^ (((off >> 7) & kSwizzleMask) << 4);
            if (Cfg::OUT == kF32)
              st_shared_f32x2(dst + sw, v0, v1);
            else
              st_shared_u32(dst + sw, Cfg::OUT == kBF16 ? pack_bf16x2(v0, v1) : pack_f16x2(v0, v1));
          }
        }
        fence_proxy_async();
        named_bar_sync(bar_id, 128);
        if (tid == 0) {
          tma_store_3d(td, dst, n0 + q * Cfg::kEpiCols, m0 + si * 64, b);
          bulk_commit();
        }
        buf ^= 1u;
      }
    }
  }

  __device__ __forceinline__ static void store_direct(const float (&a)[Cfg::BN / 2], const GemmParams& p, int q,
                                                      int row0, int n0, int b, int warp, int lane) {
#pragma unroll
    for (int g = 0; g < kGroupsPerChunk; ++g) {
      const int c = q * kGroupsPerChunk + g;
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int row = row0 + warp * 16 + lane / 4 + 8 * i;
        if (row >= p.m) continue;
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const int col = n0 + 8 * c + 2 * (lane % 4) + j;
          if (col >= p.n) continue;
          float v = p.alpha * a[4 * c + 2 * i + j];
          if (Cfg::HAS_C) v += p.beta * load_c<Cfg::CT>(p, row, col, b);
          const long long off = static_cast<long long>(b) * p.d_batch + static_cast<long long>(row) * p.ldd + col;
          if (Cfg::OUT == kF32) {
            asm volatile("st.global.f32 [%0], %1;" ::"l"(static_cast<float*>(p.d) + off), "f"(v) : "memory");
          } else {
            const unsigned short h = static_cast<unsigned short>(
                (Cfg::OUT == kBF16 ? pack_bf16x2(v, 0.f) : pack_f16x2(v, 0.f)) & 0xFFFFu);
            asm volatile("st.global.u16 [%0], %1;" ::"l"(static_cast<unsigned short*>(p.d) + off), "h"(h) : "memory");
          }
        }
      }
    }
  }

  // Before the CTA exits: all stores of this warpgroup complete.
  __device__ __forceinline__ static void drain(int tid) {
    if (tid == 0) bulk_wait<0>();
  }
};

}  // namespace gt_sm90
