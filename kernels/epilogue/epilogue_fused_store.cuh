#pragma once
// Fused epilogue: fp32 accumulators -> alpha * acc (+ beta * C) -> the problem's op chain (gemmtune_epi::Epi<...>,
// compile-time: no branching on the op list) -> D dtype -> shared-memory strips -> TMA store (or the bounds-checked
// copy-out of kEpiNoTmaD / kEpiDirect, as EpilogueTmaStore). The plain problem keeps
// EpilogueTmaStore (epilogue_tma_store.cuh); this one is instantiated only for a non-empty chain.
//
// Coordinates. The kernel computes a row-major D; with a column-major D the host solves Dᵀ = Bᵀ·Aᵀ, so kernel rows
// are D's columns: TRANS swaps (row, col) before the chain sees them (a per-column bias becomes per kernel row).
// Rows/cols past the edges are clamped for the chain's loads (those values are clipped by the store anyway), so
// the chain never reads out of bounds and needs no per-element branches.
//
// GLU. The tile's BN GEMM columns hold BN/2 output columns: gate and up of output column o sit kBlock columns apart
// inside the tile (interleave<B>: kBlock = B and BN a multiple of 2B; halves: the producer loads the tile's gate
// columns [n0/2, n0/2 + BN/2) and up columns N/2 + [n0/2, n0/2 + BN/2) side by side, kBlock = BN/2). In the wgmma
// fragment (acc[4c + 2i + j] = tile (16w + l/4 + 8i, 8c + 2(l%4) + j)) a block that is a multiple of 8 columns puts
// both values in the same thread, kBlock/8 register groups apart. D's tensor map is n_out = N/2 columns wide and the
// strips are BN/2 columns; no TRANS (a column-major D would put gate and up in different kernel rows).
#include "epilogue/epilogue_ops.cuh"
#include "epilogue/epilogue_tma_store.cuh"

namespace gt_sm90 {

template <class Cfg, class Chain, bool TRANS, int FLAGS = kEpiDirect>
struct EpilogueFused {
  using Params = gemmtune_epi::EpiParams;
  static constexpr bool kGlu = Chain::kGlu;
  static constexpr bool kFused = true;
  static constexpr bool kHalves = kGlu && Chain::kGluBlock == 0;  // the producer loads gate/up halves per tile
  static constexpr int kBlock = !kGlu ? 0 : kHalves ? Cfg::BN / 2 : Chain::kGluBlock;
  static constexpr int BNO = kGlu ? Cfg::BN / 2 : Cfg::BN;  // output columns per tile
  static constexpr int kOutSize = Cfg::kOutSize;
  // A GLU's output tile is BN/2 wide: narrow strips (the buffers are sized for the GEMM tile's); else the tile's own
  // (GemmConfig::kEpiStrips: with warp pieces 128-byte strips and a tail).
  static constexpr int kStripBytes = kGlu ? epi_narrow_bytes(BNO * kOutSize) : Cfg::kEpiStripBytes;
  static constexpr int kStrips = kGlu ? BNO * kOutSize / kStripBytes : Cfg::kEpiStrips;
  static constexpr int kTailBytes = kGlu ? 0 : Cfg::kEpiTailBytes;

  static_assert(Cfg::kEpiWarp || epi_strip_ok(kStripBytes, kOutSize),
                "output tile must split into 32/64/128-byte (swizzled) or 16 x (odd)-byte (unswizzled) strips");
  static_assert(kStripBytes <= Cfg::kEpiStripBytes, "strip buffers are sized for the GEMM tile");
  static_assert(!kGlu || (kBlock % 8 == 0 && Cfg::BN % (2 * kBlock) == 0),
                "GLU: block must be a multiple of 8 columns and tile N a multiple of 2 * block");
  static_assert(!(kGlu && TRANS), "GLU with a column-major D is not fused");
  static_assert(!(kGlu && Cfg::HAS_C), "a GLU needs beta == 0");
  static_assert(!(kGlu && Cfg::kEpiWarp), "warp strips sit at the GEMM tile's strip width: not with a GLU");

  // Fragment groups (8 GEMM columns each) holding the gate / up values of output group co.
  __host__ __device__ static constexpr int gate_group(int co) {
    return kGlu ? (co / (kBlock / 8)) * (kBlock / 4) + co % (kBlock / 8) : co;
  }
  __host__ __device__ static constexpr int up_group(int co) { return gate_group(co) + kBlock / 8; }

  // Final value of output element (group co, half i, column j) at kernel row `row`, output column `col`.
  __device__ __forceinline__ static float value(const float (&a)[Cfg::BN / 2], const GemmParams& p, const Params& ep,
                                                int co, int i, int j, int row, int col, int n_out, int b) {
    const int rc = row < p.m ? row : p.m - 1;
    const int cc = col < n_out ? col : n_out - 1;
    if constexpr (kGlu) {
      const float g = scale_alpha<FLAGS>(p, a[4 * gate_group(co) + 2 * i + j]);
      const float u = scale_alpha<FLAGS>(p, a[4 * up_group(co) + 2 * i + j]);
      return Chain::apply_glu(g, u, rc, cc, ep);
    } else {
      float v = scale_alpha<FLAGS>(p, a[4 * co + 2 * i + j]);
      if (Cfg::HAS_C && row < p.m && col < p.n) v += p.beta * load_c<Cfg::CT>(p, row, col, b);
      return TRANS ? Chain::apply(v, cc, rc, ep) : Chain::apply(v, rc, cc, ep);
    }
  }

  // The output pair (col, col + 1) of fragment group co, half i (col even). With kEpiVecOps (kernel n_out even) the
  // chain reads its operands along the kernel's columns pairwise (Chain::apply2: one 4/8-byte load per operand and
  // pair; the pair is along D's columns, or D's rows with TRANS); the pair start is clamped to n_out - 2 so both
  // stay in bounds. Otherwise each element goes through value().
  __device__ __forceinline__ static void value2(const float (&a)[Cfg::BN / 2], const GemmParams& p, const Params& ep,
                                                int co, int i, int row, int col, int n_out, int b, float& v0,
                                                float& v1) {
    if constexpr ((FLAGS & kEpiVecOps) == 0) {
      v0 = value(a, p, ep, co, i, 0, row, col, n_out, b);
      v1 = value(a, p, ep, co, i, 1, row, col + 1, n_out, b);
    } else {
      const int rc = row < p.m ? row : p.m - 1;
      const int cc = col < n_out ? col : n_out - 2;
      if constexpr (kGlu) {
        float g0 = scale_alpha<FLAGS>(p, a[4 * gate_group(co) + 2 * i]);
        float g1 = scale_alpha<FLAGS>(p, a[4 * gate_group(co) + 2 * i + 1]);
        float u0 = scale_alpha<FLAGS>(p, a[4 * up_group(co) + 2 * i]);
        float u1 = scale_alpha<FLAGS>(p, a[4 * up_group(co) + 2 * i + 1]);
        Chain::apply_glu2(g0, g1, u0, u1, rc, cc, ep);
        v0 = g0;
        v1 = g1;
      } else {
        v0 = scale_alpha<FLAGS>(p, a[4 * co + 2 * i]);
        v1 = scale_alpha<FLAGS>(p, a[4 * co + 2 * i + 1]);
        if (Cfg::HAS_C && row < p.m && col < p.n) {
          if (FLAGS & kEpiVecC) {
            float c0, c1;
            load_c2<Cfg::CT>(p, row, col, b, c0, c1);
            v0 += p.beta * c0;
            v1 += p.beta * c1;
          } else {
            v0 += p.beta * load_c<Cfg::CT>(p, row, col, b);
            if (col + 1 < p.n) v1 += p.beta * load_c<Cfg::CT>(p, row, col + 1, b);
          }
        }
        if constexpr (TRANS)
          Chain::template apply2<0>(v0, v1, cc, rc, ep);
        else
          Chain::template apply2<1>(v0, v1, rc, cc, ep);
      }
    }
  }

  // Stores output rows [m0, m0 + 64 * kSlabs) x cols [o0, o0 + BNO) of batch b, o0 = n0 (n0 / 2 with a GLU), through
  // the D maps `td` and `tdt` (the tail strip's, see for_each_strip); rows from m_end on are not stored (as
  // EpilogueTmaStore).
  __device__ __forceinline__ static void store(float (&acc)[Cfg::kSlabs][Cfg::BN / 2], const TmaDesc& td,
                                               const TmaDesc& tdt, const GemmParams& p, const Params& ep0,
                                               unsigned bufs, int m0, int n0, int b, int tid, unsigned& buf,
                                               int m_end) {
    const Params ep = ep0.at_batch(b);
    const int warp = tid / 32, lane = tid % 32;
    const int n_out = kGlu ? p.n / 2 : p.n;
    const int o0 = kGlu ? n0 / 2 : n0;
    // As EpilogueTmaStore: 16-byte-ragged edge strips are staged, then copied out with bounds checks.
    // kEpiNoTmaD: every strip is copied out that way.
    constexpr bool kNoTma = (FLAGS & kEpiNoTmaD) != 0;
    const bool edge_tile = (FLAGS & kEpiDirect) && !kNoTma && (n_out * kOutSize) % 16 != 0 && o0 + BNO > n_out;
#pragma unroll
    for (int si = 0; si < Cfg::kSlabs; ++si) {
      for_each_strip<kStripBytes, kStrips, kTailBytes, kOutSize>(td, tdt, [&](auto bytes, int c0, const TmaDesc& map) {
        constexpr int kBytes = decltype(bytes)::value, kCols = kBytes / kOutSize;
#pragma unroll
        for (int pc = 0; pc < Cfg::kEpiPieces; ++pc) {
          const bool direct = edge_tile && o0 + c0 + kCols > n_out;
          const unsigned dst = epi_buf<Cfg>(bufs, buf, warp);
          strip_begin<Cfg, kNoTma>(edge_tile, tid);
          stage_strip<Cfg, kBytes, kCols / 8>(dst, warp, lane, [&](int g, int i, float& v0, float& v1) {
            const int co = c0 / 8 + g;
            const int row = m0 + si * 64 + warp * 16 + lane / 4 + 8 * i, col = o0 + 8 * co + 2 * (lane % 4);
            value2(acc[si], p, ep, co, i, row, col, n_out, b, v0, v1);
          }, pc);
          strip_end<Cfg, kBytes, kNoTma>(map, p, n_out, dst, m0 + si * 64 + strip_row<Cfg>(warp, pc), o0 + c0, b, direct,
                                         tid, m_end);
          buf = epi_next<Cfg>(buf);
        }
      });
    }
  }

  __device__ __forceinline__ static void drain(int tid) { drain_strips<(FLAGS & kEpiNoTmaD) != 0>(tid); }
};

}  // namespace gt_sm90
