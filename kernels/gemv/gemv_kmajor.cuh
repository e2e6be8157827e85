#pragma once
// Skinny GEMM on the CUDA cores: T <= 8 vectors (decode tokens) against a matrix W of R rows (weights), both stored
// K-contiguous (y = x·Wᵀ with W stored [out, in], as torch.nn.Linear keeps it). The backend is src/backends/gemv.
//
// Decode GEMMs are a stream of W through the SMs: 1 x 4096 x 14336 reads 117 MB of weights for 117 MFLOP. The
// tensor-core kernels (sm90 decode tiles) pad the few tokens to a 16-wide tile N and reach ~3.5 TB/s on the H200
// (docs/PERFORMANCE.md): a grid of 64-128 CTAs whose TMA ring is one stream per SM. Here every warp streams its
// own rows with 16-byte loads, UNROLL x NR of them in flight per lane, and a whole grid of warps keeps the memory
// system full; fp32 FMAs on the CUDA cores keep up while T is small.
//
// Work split: a CTA of WARPS warps owns WARPS / KSPLIT groups of RPW output rows; the KSPLIT warps of a group split
// K in contiguous slices and meet in shared memory. Lane l of a warp reads 16-byte chunks l, l + 32, ... of its
// slice of each of its NR rows (NR = RPW, or 2 RPW with a GLU: the gate and the up row of each output), and the
// same chunks of the T vectors (L1-cached loads: every warp of the SM reads the same vectors). Partial sums reduce
// across the warp (shuffles), then across the K slices; the first warp of the group applies alpha, beta * C and the
// fused chain and stores each output element on its own (the output is T x R elements: small next to W).
//
// Template parameters: T vectors; IN element type of W and X (0 bf16, 1 f16); VB the bytes of one load (16; 8, 4 or
// 2 where the rows' pitch, batch stride or base pointer allow no wider one: a chunk is then 16 / VB loads); OUT / CT the types of D and C
// (0 bf16, 1 f16, 2 f32); HAS_C; WARPS, RPW, KSPLIT, UNROLL as above; VEC_M: the vectors are the problem's rows
// (D element (t, r) is D(m = t, n = r)), else its columns (D(m = r, n = t)) — a fused chain and C use D's own
// coordinates either way; ALPHA_ONE skips the multiply; Chain: gemmtune_epi::Epi<...> or gt_gemv::Plain.
// A chain's unit includes epilogue/epilogue_ops.cuh before this header.
#include "gemv/gemv_common.cuh"

namespace gt_gemv {

template <int T, int IN, int VB, int OUT, int CT, bool HAS_C, int WARPS, int RPW, int KSPLIT, int UNROLL, bool VEC_M,
          bool ALPHA_ONE, class Chain>
struct Gemv {
  static_assert(T >= 1 && T <= 8, "1-8 vectors");
  static_assert(WARPS % KSPLIT == 0, "the K slices of a row group are warps of one CTA");
  static_assert(UNROLL >= 1 && RPW >= 1, "");
  static constexpr bool kGlu = Chain::kGlu;
  static_assert(!kGlu || VEC_M, "a GLU pairs W rows (D's columns): the vectors must be D's rows");
  static_assert(!(kGlu && HAS_C), "a GLU takes no C");
  static constexpr int NR = kGlu ? 2 * RPW : RPW;  // W rows per warp
  static constexpr int GROUPS = WARPS / KSPLIT;     // row groups per CTA
  static constexpr int ROWS = GROUPS * RPW;        // output rows per CTA
  static constexpr int ITEMS = RPW * T;            // outputs per row group
  using Out = Output<OUT, CT, HAS_C, VEC_M, ALPHA_ONE, Chain>;
  using Params = typename Out::Params;

  __device__ __forceinline__ static float sum_warp(float v) {
#pragma unroll
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
    return v;
  }

  __device__ __forceinline__ static void run(const GemvParams& p, const Params& ep0) {
    __shared__ float red[WARPS * NR * T];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int ks = warp % KSPLIT, group = warp / KSPLIT;
    const int b = blockIdx.y;
    const int o0 = blockIdx.x * ROWS + group * RPW;  // first output row of the group

    // The warp's W rows (clamped into the matrix: rows past the end compute garbage that is never stored).
    const unsigned short* wrow[NR];
    const unsigned short* wbase = static_cast<const unsigned short*>(p.w) + b * p.w_batch;
#pragma unroll
    for (int i = 0; i < RPW; ++i) {
      const int o = min(o0 + i, p.rows - 1);
      if constexpr (kGlu) {
        wrow[2 * i] = wbase + Chain::gate_col(o, ep0) * p.ldw;
        wrow[2 * i + 1] = wbase + Chain::up_col(o, ep0) * p.ldw;
      } else {
        wrow[i] = wbase + static_cast<long long>(o) * p.ldw;
      }
    }
    const unsigned short* xrow = static_cast<const unsigned short*>(p.x) + b * p.x_batch;

    float acc[NR][T];
#pragma unroll
    for (int j = 0; j < NR; ++j)
#pragma unroll
      for (int t = 0; t < T; ++t) acc[j][t] = 0.0f;

    // 16-byte chunks of K: slice ks covers [cb, ce).
    const int chunks = p.k / 8;
    const int per = (chunks + KSPLIT - 1) / KSPLIT;
    const int cb = ks * per, ce = min(chunks, cb + per);
    int c = cb + lane;
    for (; c + 32 * (UNROLL - 1) < ce; c += 32 * UNROLL) {
      U4 wv[UNROLL][NR];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int j = 0; j < NR; ++j) wv[u][j] = ld16<VB, true>(wrow[j] + (c + 32 * u) * 8);
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) fma_chunk(acc, wv[u], xrow, p.ldx, c + 32 * u);
    }
    for (; c < ce; c += 32) {
      U4 wv[1][NR];
#pragma unroll
      for (int j = 0; j < NR; ++j) wv[0][j] = ld16<VB, true>(wrow[j] + c * 8);
      fma_chunk(acc, wv[0], xrow, p.ldx, c);
    }
    // K % 8 trailing elements: the last slice's first lanes, one element each.
    if (ks == KSPLIT - 1 && lane < p.k - chunks * 8) {
      const int e = chunks * 8 + lane;
#pragma unroll
      for (int t = 0; t < T; ++t) {
        const float xv = elem<IN>(xrow, t * p.ldx + e);
#pragma unroll
        for (int j = 0; j < NR; ++j) acc[j][t] += elem<IN>(wrow[j], e) * xv;
      }
    }

#pragma unroll
    for (int j = 0; j < NR; ++j)
#pragma unroll
      for (int t = 0; t < T; ++t) acc[j][t] = sum_warp(acc[j][t]);

    // Every lane holds the warp's sums now; they meet in shared memory, where the epilogue's lanes pick their items
    // by a run-time index (selecting from the register array instead made ptxas spill it).
    if (lane == 0) {
#pragma unroll
      for (int j = 0; j < NR; ++j)
#pragma unroll
        for (int t = 0; t < T; ++t) red[(warp * NR + j) * T + t] = acc[j][t];
    }
    if constexpr (KSPLIT > 1) {
      __syncthreads();
      if (ks != 0) return;
    } else {
      __syncwarp();
    }

    // Output item q of the group: vector t = q / RPW, row o0 + q % RPW (consecutive lanes: consecutive rows).
    const Params ep = Out::at_batch(ep0, b);
    for (int q = lane; q < ITEMS; q += 32) {
      const int t = q / RPW, i = q % RPW, o = o0 + i;
      if (o >= p.rows) continue;
      float g = 0.0f, up = 0.0f;
      for (int s = 0; s < KSPLIT; ++s) {
        const int w = group * KSPLIT + s;
        g += red[(w * NR + (kGlu ? 2 * i : i)) * T + t];
        if constexpr (kGlu) up += red[(w * NR + 2 * i + 1) * T + t];
      }
      Out::store(p, ep, b, t, o, g, up);
    }
  }

  // acc[j][t] += W row j's chunk c . vector t's chunk c (8 elements each).
  __device__ __forceinline__ static void fma_chunk(float (&acc)[NR][T], const U4 (&wv)[NR],
                                                   const unsigned short* xrow, long long ldx, int c) {
    float wf[NR][8];
#pragma unroll
    for (int j = 0; j < NR; ++j) unpack8<IN>(wv[j], wf[j]);
#pragma unroll
    for (int t = 0; t < T; ++t) {
      float xf[8];
      unpack8<IN>(ld16<VB, false>(xrow + t * ldx + c * 8), xf);
#pragma unroll
      for (int j = 0; j < NR; ++j) {
        // Two chains of four FMAs instead of one of eight (with NR = T = 1 nothing else hides the FMA latency).
        float s0 = wf[j][0] * xf[0], s1 = wf[j][1] * xf[1];
#pragma unroll
        for (int e = 2; e < 8; e += 2) {
          s0 = fmaf(wf[j][e], xf[e], s0);
          s1 = fmaf(wf[j][e + 1], xf[e + 1], s1);
        }
        acc[j][t] += s0 + s1;
      }
    }
  }
};

}  // namespace gt_gemv
