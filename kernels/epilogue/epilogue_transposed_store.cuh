#pragma once
// Epilogue of swap=1 configs (src/backends/sm90/sm90_config.h): the kernel solves the problem the other way round —
// for a decode-size GEMM the weights on the wgmma M side and the few tokens on N (tile N 16 ... 64) — so its output
// tile is column-major in memory: kernel element (row, col) of batch b lives at d + b * d_batch + col * ldd + row.
// Each thread writes its fragment straight to global memory with bounds checks (alpha, and beta * C through
// load_c's strides, which take either layout); no shared memory, no TMA, so any M, N and pitch. Per store
// instruction the eight lanes of one lane % 4 hold eight consecutive kernel rows of one column: 16 contiguous bytes
// of a 16-bit D (32 of an f32 one). Decode outputs are small (16 x 4096 x 2 bytes), so this costs little next to
// the weights the kernel streams; the tuner times these configs against the rest (docs/PERFORMANCE.md, swap-AB).
// A fused chain (not a GLU, whose gate and up columns would sit in different threads) applies per element with D's
// coordinates: TRANS as in EpilogueFused — kernel rows are D's columns (a row-major D solved transposed).
//
// wgmma m64nN f32 fragment (as in epilogue_tma_store.cuh): thread t (warp w = t / 32, lane l) holds, for c in
// [0, N/8), acc[4c + 2i + j] = D(row 16w + l/4 + 8i, col 8c + 2(l%4) + j), i, j in {0, 1}.
// A fused kernel's unit includes epilogue/epilogue_ops.cuh (the chain types, EpiParams) first; a plain one does not
// need it (its parse costs every plain swap kernel front-end time).
#include "epilogue/epilogue_tma_store.cuh"

namespace gemmtune_epi {
struct EpiParams;
}

namespace gt_sm90 {

struct NoChain {  // the plain epilogue: alpha * acc (+ beta * C) only
  static constexpr bool kGlu = false;
  struct Params {};
};
template <class Chain>
struct TransposedChain {  // a fused chain: the kernel takes gemmtune_epi::EpiParams
  static constexpr bool kFused = true;
  using Params = gemmtune_epi::EpiParams;
};
template <>
struct TransposedChain<NoChain> {
  static constexpr bool kFused = false;
  using Params = NoChain::Params;
};

template <class Cfg, int FLAGS = 0, class Chain = NoChain, bool TRANS = false>
struct EpilogueTransposedStore {
  using Params = typename TransposedChain<Chain>::Params;
  static constexpr bool kHalves = false;
  static constexpr bool kFused = TransposedChain<Chain>::kFused;

  __device__ __forceinline__ static Params batch_params(const Params& ep, int b) {
    if constexpr (kFused)
      return ep.at_batch(b);
    else
      return ep;
  }
  static_assert(!Chain::kGlu, "a GLU is not fused with swap=1");

  // Stores kernel rows [m0, m0 + 64 * kSlabs) x cols [n0, n0 + BN) of batch b (the TMA maps, the strip buffers and
  // `buf` of the other epilogues go unused); rows from m_end on are not stored.
  __device__ __forceinline__ static void store(float (&acc)[Cfg::kSlabs][Cfg::BN / 2], const TmaDesc&, const TmaDesc&,
                                               const GemmParams& p, const Params& ep0, unsigned, int m0, int n0, int b,
                                               int tid, unsigned&, int m_end) {
    const int warp = tid / 32, lane = tid % 32;
    const Params ep = batch_params(ep0, b);  // a chain's coordinates are within batch b (EpiParams::at_batch)
    const long long base = static_cast<long long>(b) * p.d_batch;
#pragma unroll
    for (int si = 0; si < Cfg::kSlabs; ++si) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int row = m0 + si * 64 + warp * 16 + lane / 4 + 8 * i;
        if (row >= m_end) continue;
#pragma unroll
        for (int c = 0; c < Cfg::BN / 8; ++c) {
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            const int col = n0 + 8 * c + 2 * (lane % 4) + j;
            if (col >= p.n) continue;
            float v = scale_alpha<FLAGS>(p, acc[si][4 * c + 2 * i + j]);
            if constexpr (Cfg::HAS_C) v += p.beta * load_c<Cfg::CT>(p, row, col, b);
            if constexpr (kFused) v = TRANS ? Chain::apply(v, col, row, ep) : Chain::apply(v, row, col, ep);
            const long long off = base + static_cast<long long>(col) * p.ldd + row;
            if constexpr (Cfg::OUT == kF32) {
              static_cast<float*>(p.d)[off] = v;
            } else {
              const unsigned h = Cfg::OUT == kBF16 ? pack_bf16x2(v, 0.0f) : pack_f16x2(v, 0.0f);
              static_cast<unsigned short*>(p.d)[off] = static_cast<unsigned short>(h & 0xFFFFu);
            }
          }
        }
      }
    }
  }

  __device__ __forceinline__ static void drain(int) {}
};

}  // namespace gt_sm90
