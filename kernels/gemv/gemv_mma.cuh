#pragma once
// Skinny GEMM on mma.sync: T <= 16 vectors (decode tokens) against a matrix W of R rows (weights), both stored
// K-contiguous, as gemv_kmajor.cuh, but the products on the tensor cores (mma.sync.m16n8k16, fp32 accumulators):
// from a few vectors on, gemv_kmajor's 8 T FMAs per 8-element chunk approach the SM's issue rate
// (docs/PERFORMANCE.md), while here one warp instruction multiplies 16 rows x 16 k x 8 vectors.
//
// No shared-memory staging: each lane loads its fragments straight from global memory with 16-byte loads. The dot
// product sums over k in any order, so the mma's k positions are fed a permutation of K that makes every load 16
// contiguous bytes: lane (g = lane / 4, q = lane % 4) loads 8 k values [k0, k0 + 8) of W rows g and g + 8 and of
// vector g (and g + 8 with a second n-block); the two mmas j = 0, 1 of those 16 bytes take words 2j and 2j + 1 as the
// fragment registers {a0, a2} (row g), {a1, a3} (row g + 8) and {b0, b1}: mma position 2q + {0, 1} is k = k0 + 4j +
// {0, 1}, position 2q + 8 + {0, 1} is k = k0 + 4j + 2 + {0, 1}, for A and B alike. A step is 64 k: k0 = 16q and
// 16q + 8, so a quad reads a whole 128-byte line of each row (with 32-k steps and one load per row, half-lines:
// 3.4 TB/s at 4x4096x14336, docs/PERFORMANCE.md). (Fragments, PTX ISA mma.m16n8k16: a0 / a1 rows g / g + 8 at
// k 2q, 2q + 1; a2 / a3 the same at k + 8; b0 / b1 column g at k 2q, 2q + 1 and k + 8; c0, c1 row g at columns 2q,
// 2q + 1; c2, c3 row g + 8.)
//
// Work split as gemv_kmajor: a CTA of WARPS warps owns WARPS / KSPLIT row groups of MB x 16 W rows; KSPLIT warps
// split a group's K in slices of whole steps and meet in shared memory. With a GLU the 16 rows of an m-block are
// 8 gate rows and their 8 up rows, so c0, c1 (gate) and c2, c3 (up) of a lane belong to the same outputs.
// RING > 0: the weights go through a per-warp ring of RING stages in dynamic shared memory (RING x WARPS x
// kStageBytes: gemv_params.cuh mma_ring_bytes, which the host sizes the launch with) filled
// with cp.async, RING - 1 64-k steps in flight without holding registers; each lane copies 16-byte chunks of whole
// 128-byte row lines (8 lanes a row), stored with the chunk index XOR (row % 8) so that the fragment reads
// (ld.shared.v4: rows g and g + 8, chunk 2q + h) are free of bank conflicts. With RING = 0 the fragments are loaded
// straight from global memory, UNROLL steps at a time in registers (ncu, H200, 16x4096x14336: 15 warps per SM with
// 128 bytes in flight per lane reach 71% of DRAM bandwidth, where the CUDA-core kernel's 21 warps reach 80-88%,
// docs/PERFORMANCE.md).
// CSPLIT > 1: K is also split across CSPLIT CTAs (grid z; 64-k steps in CSPLIT near-equal ranges, the CTA's KSPLIT
// warps split its range), for problems with too few row groups to fill the SMs (16-row groups of 4096 weight rows:
// 256 CTAs with 8 K-slice warps each, 3.2-3.3 TB/s; H200, 16x4096x14336: 34.7 us with 8 CTAs a group against 36.0
// for the best config without, level at 8 vectors, docs/PERFORMANCE.md). Each CTA writes its group's partial
// sums (the lanes' fragments, fp32) to slot [group][split] of p.ws and counts itself on p.cnt[group]; the CTA that
// counts last adds the CSPLIT partials in split order (the same sum whichever CTA is last), sets the count back to
// zero for the next launch on the stream and runs the output. The host keeps p.ws / p.cnt per stream
// (src/backends/stream_scratch.h).
// fp8 (WT / XT e4m3 or e5m2: the weights' / the vectors' storage): a step is still 128 bytes of each W row (128 k of
// an fp8 W: the same whole lines, the same ring), each 16-byte chunk widened in registers to two fragments of the
// mma's 16-bit type IN (cvt.f16x2.e4m3x2 / e5m2x2: exact; e4m3 to bf16 through f16, gemv_common.cuh fp8x4_to_16),
// so an fp8 weight streams half the bytes of a bf16 one through the same loads. Scaling (SCALE: 1 tensor, 2 row,
// 3 block, gemmtune/problem.h): tensor and row scales multiply the sums before alpha; block scales are per 128-k
// block, and with an fp8 W a step is one such block: its mmas accumulate into zeroed partial sums, which are then
// added to the fp32 accumulators times the W row's and the vector's block scales (K splits across warps and CTAs
// are in whole steps, so they cut at block boundaries). An e4m3 D (OUT 3) stores saturate(v * scale_d) and, with
// AMAX, max |v| goes to p.amax by one atomic max per warp (the host zeroes it on the stream first).
// Template parameters: T vectors (1-16: NB = 1 or 2 n-blocks); IN (0 bf16, 1 f16: the mma's type); VB (bytes of one
// global load: 16, or 8, 4, 2 where the rows' pitch, batch stride or base pointer allow no wider one; a lane's 16
// bytes are then 16 / VB loads, the fragments the same; a ring needs 16); OUT / CT; HAS_C; WARPS; MB (m-blocks of 16
// rows per warp: the vectors' loads are shared by MB); KSPLIT; UNROLL (steps in flight; 1 with a ring); RING
// (stages, 0 = none); CSPLIT (CTAs per row group, 1 = none); VEC_M; ALPHA_ONE; Chain (gemmtune_epi::Epi<...> or
// gt_gemv::Plain); WT, XT (element types of W and X, IN unless fp8), SCALE (0 without fp8), AMAX. Parameters:
// gt_gemv::GemvParams.
#include "gemv/gemv_common.cuh"

namespace gt_gemv {

template <int IN>
__device__ __forceinline__ void mma16816(float (&c)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0,
                                         unsigned b1) {
  if constexpr (IN == gt::kBF16)
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  else
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// 8 elements [k, k + 8) of a K-contiguous row, zero past `kend` (the ragged last step; the row's padding may hold
// anything, NaN included, so both operands are zeroed there).
__device__ __forceinline__ U4 ld_tail(const unsigned short* row, int k, int kend) {
  unsigned short e[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) e[i] = k + i < kend ? row[k + i] : static_cast<unsigned short>(0);
  return U4{e[0] | (unsigned(e[1]) << 16), e[2] | (unsigned(e[3]) << 16), e[4] | (unsigned(e[5]) << 16),
            e[6] | (unsigned(e[7]) << 16)};
}
// The same for fp8 rows: NB bytes (8 or 16), elements [k, k + NB) (x, y only with 8).
template <int NB>
__device__ __forceinline__ U4 ld_tail8(const unsigned char* row, int k, int kend) {
  static_assert(NB == 8 || NB == 16, "");
  unsigned w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
  for (int i = 0; i < NB; ++i) w[i / 4] |= (k + i < kend ? unsigned(row[k + i]) : 0u) << (8 * (i % 4));
  return U4{w[0], w[1], w[2], w[3]};
}

__device__ __forceinline__ void cp_async16(unsigned smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
// The CTA split's partials (L2 only: they are read by another SM) and its count.
__device__ __forceinline__ void st_cg(float* p, float v) {
  asm volatile("st.global.cg.f32 [%0], %1;" ::"l"(p), "f"(v) : "memory");
}
__device__ __forceinline__ float ld_cg(const float* p) {
  float v;
  asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void fence_gpu() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
__device__ __forceinline__ int count_in(int* p) {  // old value
  int v;
  asm volatile("atom.relaxed.gpu.global.add.s32 %0, [%1], 1;" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ U4 ld_shared16(unsigned addr) {
  U4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr));
  return v;
}

template <int T, int IN, int VB, int OUT, int CT, bool HAS_C, int WARPS, int MB, int KSPLIT, int UNROLL, int RING,
          int CSPLIT, bool VEC_M, bool ALPHA_ONE, class Chain, int WT = IN, int XT = IN, int SCALE = 0,
          bool AMAX = false>
struct GemvMma {
  static_assert(T >= 1 && T <= 16, "1-16 vectors");
  static_assert(WARPS % KSPLIT == 0, "the K slices of a row group are warps of one CTA");
  static_assert(MB >= 1 && UNROLL >= 1, "");
  static_assert(RING == 0 || (RING >= 2 && UNROLL == 1), "a ring of 2+ stages replaces the unrolled loads");
  static_assert(CSPLIT >= 1, "");
  static_assert(RING == 0 || VB == 16, "the ring's cp.async copies whole 16-byte chunks");
  static_assert(IN == gt::kBF16 || IN == gt::kF16, "the mma takes bf16 or f16");
  static_assert((WT == IN || gt::dtype_code_fp8(WT)) && (XT == IN || gt::dtype_code_fp8(XT)),
                "W and X are of the mma's type or fp8 (widened to it)");
  static constexpr bool kFp8 = gt::dtype_code_fp8(WT) || gt::dtype_code_fp8(XT);
  static_assert(SCALE >= 0 && SCALE <= 3 && (SCALE == 0) == !kFp8, "fp8 operands take a scaling, 16-bit ones none");
  static_assert(SCALE != 3 || (gt::dtype_code_fp8(WT) && gt::dtype_code_fp8(XT)), "block scaling: both fp8");
  static_assert(!AMAX || OUT == gt::kE4M3, "amax is the statistic of an e4m3 D");
  static_assert(VB >= 2, "loads of 2 bytes or more");
  static constexpr int kStageBytes = mma_stage_bytes(MB);  // one step of a warp's W rows
  // A step reads 128 bytes of each W row (a quad's whole line): 64 k of a 16-bit W, 128 of an fp8 one. A lane's
  // 16-byte chunk holds KH k values, widened into NF fragments of 8 16-bit values; the vectors' matching chunk is XB
  // bytes (8, 16 or 32: XU loads of up to 16).
  static constexpr int WS = gt::dtype_code_bytes(WT), XS = gt::dtype_code_bytes(XT);
  static constexpr int KH = 16 / WS, KSTEP = 8 * KH, NF = KH / 8, XB = KH * XS, XU = XB > 16 ? 2 : 1;
  using WE = typename Storage<WT>::type;
  using XE = typename Storage<XT>::type;
  static constexpr bool kGlu = Chain::kGlu;
  static_assert(!kGlu || VEC_M, "a GLU pairs W rows (D's columns): the vectors must be D's rows");
  static_assert(!(kGlu && HAS_C), "a GLU takes no C");
  static constexpr int NB = mma_vector_blocks(T);   // n-blocks of 8 vectors
  static constexpr int OUT_ROWS = kGlu ? 8 : 16;    // output rows per m-block
  static constexpr int GROUPS = WARPS / KSPLIT;     // row groups per CTA
  static constexpr int ROWS = GROUPS * MB * OUT_ROWS;  // output rows per CTA
  using Out = Output<OUT, CT, HAS_C, VEC_M, ALPHA_ONE, Chain>;
  using Params = typename Out::Params;

  // Block scaling (SCALE 3): one step is one 128-k block kb. W row r's scale is scale_b[(r / 128) * kblocks + kb]
  // with the vectors as A's rows (W = B), else scale_a[kb * M + r]; vector t's is scale_a[kb * T + t], else
  // scale_b[kb] (t < 128). A lane's: rows lo / hi of each m-block, columns 2q, 2q + 1 of each n-block.
  struct BlockScales {
    float w[MB][2];
    float x[NB][2];
  };
  struct ScaleIdx {  // element offsets at kb = 0, and the strides per kb
    int w[MB][2];
    int x[NB][2];
  };

  __device__ __forceinline__ static void run(const GemvParams& p, const Params& ep0) {
    __shared__ float red[mma_red_floats(WARPS, MB, NB, KSPLIT)];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
    const int ks = warp % KSPLIT, group = warp / KSPLIT;
    const int b = blockIdx.y;
    const int o0 = blockIdx.x * ROWS + group * MB * OUT_ROWS;  // first output row of the group

    // This lane's W rows: m-block mb, fragment row g (lo) and g + 8 (hi); clamped into the matrix.
    const WE* wbase = static_cast<const WE*>(p.w) + b * p.w_batch;
    const WE* wlo[MB];
    const WE* whi[MB];
    ScaleIdx si;
#pragma unroll
    for (int mb = 0; mb < MB; ++mb) {
      if constexpr (kGlu) {
        const int o = min(o0 + mb * 8 + g, p.rows - 1);
        wlo[mb] = wbase + Chain::gate_col(o, ep0) * p.ldw;
        whi[mb] = wbase + Chain::up_col(o, ep0) * p.ldw;
      } else {
        wlo[mb] = wbase + static_cast<long long>(min(o0 + mb * 16 + g, p.rows - 1)) * p.ldw;
        whi[mb] = wbase + static_cast<long long>(min(o0 + mb * 16 + g + 8, p.rows - 1)) * p.ldw;
      }
      if constexpr (SCALE == 3) {  // the W rows' block scales (their rows as above)
        long long rlo, rhi;
        if constexpr (kGlu) {
          const int o = min(o0 + mb * 8 + g, p.rows - 1);
          rlo = Chain::gate_col(o, ep0);
          rhi = Chain::up_col(o, ep0);
        } else {
          rlo = min(o0 + mb * 16 + g, p.rows - 1);
          rhi = min(o0 + mb * 16 + g + 8, p.rows - 1);
        }
        const int kblocks = (p.k + 127) / 128;
        si.w[mb][0] = VEC_M ? static_cast<int>(rlo / 128) * kblocks : static_cast<int>(rlo);
        si.w[mb][1] = VEC_M ? static_cast<int>(rhi / 128) * kblocks : static_cast<int>(rhi);
      }
    }
    // The vectors this lane feeds: g (and g + 8). Past T a lane reads vector T - 1 again: an mma's output column n
    // depends on its B column n alone, so those columns are the only ones it touches, and they are never stored.
    // (Reading zeros there instead took a per-lane select on every load: 12-52 bytes of spills at 80 registers with
    // T < 8, none with T = 8, docs/PERFORMANCE.md.)
    const XE* xbase = static_cast<const XE*>(p.x) + b * p.x_batch;
    const XE* xv[NB];
#pragma unroll
    for (int nb = 0; nb < NB; ++nb) xv[nb] = xbase + min(nb * 8 + g, T - 1) * p.ldx;
    if constexpr (SCALE == 3)
#pragma unroll
      for (int nb = 0; nb < NB; ++nb)
#pragma unroll
        for (int j = 0; j < 2; ++j) si.x[nb][j] = VEC_M ? min(nb * 8 + 2 * q + j, T - 1) : 0;

    float acc[MB][NB][4];
#pragma unroll
    for (int mb = 0; mb < MB; ++mb)
#pragma unroll
      for (int nb = 0; nb < NB; ++nb)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[mb][nb][i] = 0.0f;

    // Steps of KSTEP k: this CTA's range [cb, ce) (all of them without a CTA split), slice ks of it [sb, se); the
    // ragged last step of K is done on its own by the last slice of the last CTA. In a step, lane q reads k
    // [2 KH q, 2 KH q + 2 KH) of each of its rows (two adjacent 16-byte loads): a quad covers a whole 128-byte line.
    const int full = p.k / KSTEP;
    const int cz = CSPLIT > 1 ? static_cast<int>(blockIdx.z) : 0;
    const int per_c = (full + CSPLIT - 1) / CSPLIT;
    const int cb = min(full, cz * per_c), ce = min(full, cb + per_c);
    const int per = (ce - cb + KSPLIT - 1) / KSPLIT;
    const int sb = min(ce, cb + ks * per), se = min(ce, sb + per);
    int s = sb;
    if constexpr (RING > 0) {
      ring_steps(p, ep0, acc, wbase, o0, xv, si, sb, se);
      s = se;
    }
    for (; s + UNROLL <= se; s += UNROLL) {
      U4 lo[UNROLL][2][MB], hi[UNROLL][2][MB], xx[UNROLL][2][NB][XU];
      BlockScales sc[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int k = (s + u) * KSTEP + 2 * KH * q + KH * h;
#pragma unroll
          for (int mb = 0; mb < MB; ++mb) {
            lo[u][h][mb] = ld16<VB, true>(wlo[mb] + k);
            hi[u][h][mb] = ld16<VB, true>(whi[mb] + k);
          }
#pragma unroll
          for (int nb = 0; nb < NB; ++nb) ld_x(xv[nb] + k, xx[u][h][nb]);
        }
        if constexpr (SCALE == 3) load_scales(p, si, s + u, sc[u]);
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) full_step(acc, lo[u], hi[u], xx[u], sc[u]);
    }
    for (; s < se; ++s) {
      if constexpr (SCALE == 3) {
        U4 lo[2][MB], hi[2][MB], xx[2][NB][XU];
        BlockScales sc;
#pragma unroll
        for (int h = 0; h < 2; ++h) load_chunk(wlo, whi, xv, s * KSTEP + 2 * KH * q + KH * h, lo[h], hi[h], xx[h]);
        load_scales(p, si, s, sc);
        full_step(acc, lo, hi, xx, sc);
      } else {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          U4 lo[MB], hi[MB], xx[NB][XU];
          load_chunk(wlo, whi, xv, s * KSTEP + 2 * KH * q + KH * h, lo, hi, xx);
          chunk(acc, lo, hi, xx);
        }
      }
    }
    if (full * KSTEP < p.k && ks == KSPLIT - 1 && cz == CSPLIT - 1) {  // K % KSTEP: the last slice, zero-filled
      if constexpr (!kFp8) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int k = full * 64 + 16 * q + 8 * h;
          U4 lo[MB], hi[MB], xx[NB];
#pragma unroll
          for (int mb = 0; mb < MB; ++mb) lo[mb] = ld_tail(wlo[mb], k, p.k), hi[mb] = ld_tail(whi[mb], k, p.k);
#pragma unroll
          for (int nb = 0; nb < NB; ++nb) xx[nb] = ld_tail(xv[nb], k, p.k);
          step(acc, lo, hi, xx);
        }
      } else {
        U4 lo[2][MB], hi[2][MB], xx[2][NB][XU];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int k = full * KSTEP + 2 * KH * q + KH * h;
#pragma unroll
          for (int mb = 0; mb < MB; ++mb) lo[h][mb] = tail_w(wlo[mb], k, p.k), hi[h][mb] = tail_w(whi[mb], k, p.k);
#pragma unroll
          for (int nb = 0; nb < NB; ++nb) {
            if constexpr (XS == 2) {  // 16 elements: two 8-element halves
              xx[h][nb][0] = ld_tail(xv[nb], k, p.k);
              xx[h][nb][1] = ld_tail(xv[nb], k + 8, p.k);
            } else {
              xx[h][nb][0] = ld_tail8<XB>(xv[nb], k, p.k);
            }
          }
        }
        BlockScales sc;
        if constexpr (SCALE == 3) load_scales(p, si, full, sc);
        full_step(acc, lo, hi, xx, sc);
      }
    }

    if constexpr (KSPLIT > 1) {
#pragma unroll
      for (int mb = 0; mb < MB; ++mb)
#pragma unroll
        for (int nb = 0; nb < NB; ++nb)
#pragma unroll
          for (int i = 0; i < 4; ++i) red[(((warp * MB + mb) * NB + nb) * 4 + i) * 32 + lane] = acc[mb][nb][i];
      __syncthreads();
      if (ks != 0) return;
#pragma unroll
      for (int sl = 1; sl < KSPLIT; ++sl)
#pragma unroll
        for (int mb = 0; mb < MB; ++mb)
#pragma unroll
          for (int nb = 0; nb < NB; ++nb)
#pragma unroll
            for (int i = 0; i < 4; ++i)
              acc[mb][nb][i] += red[((((warp + sl) * MB + mb) * NB + nb) * 4 + i) * 32 + lane];
    }
    if constexpr (CSPLIT > 1)
      if (!gather_split(p, acc, b, group, cz, lane)) return;  // another CTA of the group runs the output

    const Params ep = Out::at_batch(ep0, b);
    // Tensor and row scaling multiply the sums (before alpha); a null scale is 1 (a 16-bit operand's).
    float ts = 1.0f;
    if constexpr (SCALE == 1) ts = (p.sw ? *p.sw : 1.0f) * (p.sx ? *p.sx : 1.0f);
    float amax = 0.0f;  // AMAX: max |v| of this lane's outputs
#pragma unroll
    for (int mb = 0; mb < MB; ++mb)
#pragma unroll
      for (int nb = 0; nb < NB; ++nb)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const int t = nb * 8 + 2 * q + j;  // c{j} / c{2 + j}: column 2q + j of the n-block
          if (t >= T) continue;
          float xs = ts;
          if constexpr (SCALE == 2) xs = p.sx ? p.sx[t] : 1.0f;
          if constexpr (kGlu) {
            const int o = o0 + mb * 8 + g;
            if (o < p.rows) {
              float gv = acc[mb][nb][j], uv = acc[mb][nb][2 + j];
              if constexpr (SCALE != 0) gv *= xs, uv *= xs;
              if constexpr (SCALE == 2) {
                if (p.sw) gv *= p.sw[Chain::gate_col(o, ep)], uv *= p.sw[Chain::up_col(o, ep)];
              }
              const float v = Out::store(p, ep, b, t, o, gv, uv);
              if constexpr (AMAX) amax = fmaxf(amax, fabsf(v));
            }
          } else {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int o = o0 + mb * 16 + g + 8 * h;
              if (o < p.rows) {
                float v = acc[mb][nb][2 * h + j];
                if constexpr (SCALE != 0) v *= xs;
                if constexpr (SCALE == 2) {
                  if (p.sw) v *= p.sw[o];
                }
                v = Out::store(p, ep, b, t, o, v, 0.0f);
                if constexpr (AMAX) amax = fmaxf(amax, fabsf(v));
              }
            }
          }
        }
    if constexpr (AMAX) {
      // Non-negative floats order as their bits: the warp's largest, then one atomic (the host zeroed amax).
      unsigned a = __float_as_uint(amax);
#pragma unroll
      for (int o = 16; o > 0; o /= 2) a = max(a, __shfl_xor_sync(0xffffffffu, a, o));
      if (lane == 0) asm volatile("red.relaxed.gpu.global.max.u32 [%0], %1;" ::"l"(p.amax), "r"(a) : "memory");
    }
  }

  // The ragged last step of an fp8 or 16-bit W row: 16 bytes.
  __device__ __forceinline__ static U4 tail_w(const WE* row, int k, int kend) {
    if constexpr (WS == 2)
      return ld_tail(row, k, kend);
    else
      return ld_tail8<16>(row, k, kend);
  }

  // The 16-byte chunks at element k of this lane's W rows and the vectors' matching chunks.
  __device__ __forceinline__ static void load_chunk(const WE* const (&wlo)[MB], const WE* const (&whi)[MB],
                                                    const XE* const (&xv)[NB], int k, U4 (&lo)[MB], U4 (&hi)[MB],
                                                    U4 (&xx)[NB][XU]) {
#pragma unroll
    for (int mb = 0; mb < MB; ++mb) lo[mb] = ld16<VB, true>(wlo[mb] + k), hi[mb] = ld16<VB, true>(whi[mb] + k);
#pragma unroll
    for (int nb = 0; nb < NB; ++nb) ld_x(xv[nb] + k, xx[nb]);
  }

  // The vectors' chunk matching a W chunk: XB bytes.
  __device__ __forceinline__ static void ld_x(const XE* row, U4 (&r)[XU]) {
    if constexpr (XB == 8) {
      r[0] = ld8<VB>(row);
    } else if constexpr (XB == 16) {
      r[0] = ld16<VB, false>(row);
    } else {
      r[0] = ld16<VB, false>(row);
      r[1] = ld16<VB, false>(row + 8);
    }
  }

  // The block scales of step kb (read-only, cached). With the vectors as A's rows and no GLU, rows lo and hi of an
  // m-block (16 rows from a multiple of 16) share W's 128-row block: one load; as B's columns every vector is in
  // block 0: one load.
  __device__ __forceinline__ static void load_scales(const GemvParams& p, const ScaleIdx& si, int kb,
                                                     BlockScales& sc) {
    const long long wstride = VEC_M ? 1 : p.rows, xstride = VEC_M ? T : 1;  // per kb
#pragma unroll
    for (int mb = 0; mb < MB; ++mb) {
      sc.w[mb][0] = ld_scale(p.sw + si.w[mb][0] + kb * wstride);
      sc.w[mb][1] = VEC_M && !kGlu ? sc.w[mb][0] : ld_scale(p.sw + si.w[mb][1] + kb * wstride);
    }
    const float x0 = VEC_M ? 0.0f : ld_scale(p.sx + kb);
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
      for (int j = 0; j < 2; ++j) sc.x[nb][j] = VEC_M ? ld_scale(p.sx + si.x[nb][j] + kb * xstride) : x0;
  }
  __device__ __forceinline__ static float ld_scale(const float* a) {
    float v;
    asm("ld.global.nc.f32 %0, [%1];" : "=f"(v) : "l"(a));
    return v;
  }

  // One step (both 16-byte chunks h of each row) into acc; with block scaling its partial sums first, then scaled
  // into acc (the promotion into fp32 per 128-k block).
  __device__ __forceinline__ static void full_step(float (&acc)[MB][NB][4], const U4 (&lo)[2][MB],
                                                   const U4 (&hi)[2][MB], const U4 (&xx)[2][NB][XU],
                                                   const BlockScales& sc) {
    if constexpr (SCALE == 3) {
      float part[MB][NB][4];
#pragma unroll
      for (int mb = 0; mb < MB; ++mb)
#pragma unroll
        for (int nb = 0; nb < NB; ++nb)
#pragma unroll
          for (int i = 0; i < 4; ++i) part[mb][nb][i] = 0.0f;
#pragma unroll
      for (int h = 0; h < 2; ++h) chunk(part, lo[h], hi[h], xx[h]);
#pragma unroll
      for (int mb = 0; mb < MB; ++mb)
#pragma unroll
        for (int nb = 0; nb < NB; ++nb)
#pragma unroll
          for (int i = 0; i < 4; ++i)  // c0, c1: row lo, columns 2q, 2q + 1; c2, c3: row hi
            acc[mb][nb][i] = fmaf(part[mb][nb][i], sc.w[mb][i / 2] * sc.x[nb][i % 2], acc[mb][nb][i]);
    } else {
#pragma unroll
      for (int h = 0; h < 2; ++h) chunk(acc, lo[h], hi[h], xx[h]);
    }
  }

  // One 16-byte chunk of each W row and the vectors' matching chunk: widened to the mma's type where fp8, then the
  // mmas of each 8-value fragment.
  __device__ __forceinline__ static void chunk(float (&acc)[MB][NB][4], const U4 (&lo)[MB], const U4 (&hi)[MB],
                                               const U4 (&xr)[NB][XU]) {
    if constexpr (WS == 2 && XS == 2) {
      U4 xx[NB];
#pragma unroll
      for (int nb = 0; nb < NB; ++nb) xx[nb] = xr[nb][0];
      step(acc, lo, hi, xx);
    } else {
      U4 lf[NF][MB], hf[NF][MB], xf[NF][NB];
#pragma unroll
      for (int mb = 0; mb < MB; ++mb) {
        if constexpr (WS == 2) {
          lf[0][mb] = lo[mb];
          hf[0][mb] = hi[mb];
        } else {
          U4 a[2], c[2];
          fp8x16_to_16<WT, IN>(lo[mb], a);
          fp8x16_to_16<WT, IN>(hi[mb], c);
#pragma unroll
          for (int f = 0; f < NF; ++f) lf[f][mb] = a[f], hf[f][mb] = c[f];
        }
      }
#pragma unroll
      for (int nb = 0; nb < NB; ++nb) {
        if constexpr (XS == 2) {
#pragma unroll
          for (int f = 0; f < NF; ++f) xf[f][nb] = xr[nb][f];
        } else if constexpr (NF == 2) {
          U4 a[2];
          fp8x16_to_16<XT, IN>(xr[nb][0], a);
          xf[0][nb] = a[0];
          xf[1][nb] = a[1];
        } else {
          fp8x4_to_16<XT, IN>(xr[nb][0].x, xf[0][nb].x, xf[0][nb].y);
          fp8x4_to_16<XT, IN>(xr[nb][0].y, xf[0][nb].z, xf[0][nb].w);
        }
      }
#pragma unroll
      for (int f = 0; f < NF; ++f) step(acc, lf[f], hf[f], xf[f]);
    }
  }

  // K split across CTAs: write this CTA's partial of the row group to its slot, count it; the last of the CSPLIT CTAs
  // gets true and acc = the sum of all partials in split order. (Writers: stores, fence, then the count; the last:
  // the count, fence, then the loads, .cg: the partials come from other SMs.)
  static constexpr int kAcc = mma_lane_frags(MB, NB);  // fp32 fragments per lane
  __device__ __forceinline__ static bool gather_split(const GemvParams& p, float (&acc)[MB][NB][4], int b, int group,
                                                      int cz, int lane) {
    const long long slot = (static_cast<long long>(b) * gridDim.x + blockIdx.x) * GROUPS + group;
    float* part = p.ws + slot * mma_csplit_slot_floats(CSPLIT, MB, NB);
#pragma unroll
    for (int mb = 0; mb < MB; ++mb)
#pragma unroll
      for (int nb = 0; nb < NB; ++nb)
#pragma unroll
        for (int i = 0; i < 4; ++i) st_cg(part + (cz * kAcc + (mb * NB + nb) * 4 + i) * 32 + lane, acc[mb][nb][i]);
    fence_gpu();
    __syncwarp();
    int last = 0;
    if (lane == 0) last = count_in(p.cnt + slot) == CSPLIT - 1;
    if (!__shfl_sync(0xffffffffu, last, 0)) return false;
    fence_gpu();
#pragma unroll
    for (int mb = 0; mb < MB; ++mb)
#pragma unroll
      for (int nb = 0; nb < NB; ++nb)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          float v = 0.0f;
#pragma unroll
          for (int c = 0; c < CSPLIT; ++c) v += ld_cg(part + (c * kAcc + (mb * NB + nb) * 4 + i) * 32 + lane);
          acc[mb][nb][i] = v;
        }
    if (lane == 0) *reinterpret_cast<volatile int*>(p.cnt + slot) = 0;  // ready for the next launch on this stream
    return true;
  }

  // Steps [sb, se) through this warp's ring. Copy side: chunk c = lane + 32 i (i < 4) of an m-block's 16 rows x 8
  // chunks is row c / 8, chunk c % 8: 8 lanes read one whole 128-byte line.
  __device__ __forceinline__ static void ring_steps(const GemvParams& p, const Params& ep0, float (&acc)[MB][NB][4],
                                                    const WE* wbase, int o0, const XE* const (&xv)[NB],
                                                    const ScaleIdx& si, int sb, int se) {
    extern __shared__ __align__(128) unsigned char gemv_ring[];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
    const unsigned base =
        static_cast<unsigned>(__cvta_generic_to_shared(gemv_ring)) + warp * RING * kStageBytes;
    const int cc = lane % 8;  // this lane's chunk of a row
    const WE* src[MB][4];
    unsigned dst[MB][4];  // offsets within a stage
#pragma unroll
    for (int mb = 0; mb < MB; ++mb)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int row = lane / 8 + 4 * i;  // 0-15 within the m-block
        long long r;
        if constexpr (kGlu) {
          const int o = min(o0 + mb * 8 + row % 8, p.rows - 1);
          r = row < 8 ? Chain::gate_col(o, ep0) : Chain::up_col(o, ep0);
        } else {
          r = min(o0 + mb * 16 + row, p.rows - 1);
        }
        src[mb][i] = wbase + r * p.ldw + cc * KH;
        dst[mb][i] = mb * 2048 + row * 128 + ((cc ^ (row % 8)) * 16);
      }
    auto issue = [&](int st) {  // step st into its slot (an empty group past se keeps the count uniform)
      if (st < se) {
        const unsigned slot = base + ((st - sb) % RING) * kStageBytes;
#pragma unroll
        for (int mb = 0; mb < MB; ++mb)
#pragma unroll
          for (int i = 0; i < 4; ++i) cp_async16(slot + dst[mb][i], src[mb][i] + st * KSTEP);
      }
      cp_async_commit();
    };
#pragma unroll
    for (int j = 0; j < RING - 1; ++j) issue(sb + j);
    // Fragment side: rows g (lo) and g + 8 (hi), chunk 2q + h, swizzled by row % 8 = g.
    for (int s = sb; s < se; ++s) {
      issue(s + RING - 1);
      U4 xx[2][NB][XU];
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int nb = 0; nb < NB; ++nb) ld_x(xv[nb] + s * KSTEP + 2 * KH * q + KH * h, xx[h][nb]);
      BlockScales sc;
      if constexpr (SCALE == 3) load_scales(p, si, s, sc);
      cp_async_wait<RING - 1>();
      __syncwarp();
      const unsigned slot = base + ((s - sb) % RING) * kStageBytes;
      if constexpr (SCALE == 3) {
        U4 lo[2][MB], hi[2][MB];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const unsigned off = (((2 * q + h) ^ g) * 16) + g * 128;
#pragma unroll
          for (int mb = 0; mb < MB; ++mb) {
            lo[h][mb] = ld_shared16(slot + mb * 2048 + off);
            hi[h][mb] = ld_shared16(slot + mb * 2048 + off + 8 * 128);
          }
        }
        full_step(acc, lo, hi, xx, sc);
      } else {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          U4 lo[MB], hi[MB];
          const unsigned off = (((2 * q + h) ^ g) * 16) + g * 128;
#pragma unroll
          for (int mb = 0; mb < MB; ++mb) {
            lo[mb] = ld_shared16(slot + mb * 2048 + off);
            hi[mb] = ld_shared16(slot + mb * 2048 + off + 8 * 128);
          }
          chunk(acc, lo, hi, xx[h]);
        }
      }
      __syncwarp();  // the slot is refilled by the next step's issue
    }
    cp_async_wait<0>();
  }

  // Per m-block and n-block the two mmas of 8 16-bit values each lane holds.
  __device__ __forceinline__ static void step(float (&acc)[MB][NB][4], const U4 (&lo)[MB], const U4 (&hi)[MB],
                                              const U4 (&xx)[NB]) {
#pragma unroll
    for (int mb = 0; mb < MB; ++mb)
#pragma unroll
      for (int nb = 0; nb < NB; ++nb) {
        mma16816<IN>(acc[mb][nb], lo[mb].x, hi[mb].x, lo[mb].y, hi[mb].y, xx[nb].x, xx[nb].y);
        mma16816<IN>(acc[mb][nb], lo[mb].z, hi[mb].z, lo[mb].w, hi[mb].w, xx[nb].z, xx[nb].w);
      }
  }
};

}  // namespace gt_gemv
