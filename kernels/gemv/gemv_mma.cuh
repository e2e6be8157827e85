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
// split a group's K in slices of whole 64-k steps and meet in shared memory. With a GLU the 16 rows of an m-block are
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
// Template parameters: T vectors (1-16: NB = 1 or 2 n-blocks); IN (0 bf16, 1 f16); VB (bytes of one global load: 16,
// or 8, 4, 2 where the rows' pitch, batch stride or base pointer allow no wider one; a lane's 16 bytes are then 16 / VB
// loads, the fragments the same; a ring needs 16); OUT / CT; HAS_C; WARPS; MB
// (m-blocks of 16 rows per warp: the vectors' loads are shared by MB); KSPLIT; UNROLL (64-k steps in flight; 1 with
// a ring); RING (stages, 0 = none); CSPLIT (CTAs per row group, 1 = none); VEC_M; ALPHA_ONE; Chain
// (gemmtune_epi::Epi<...> or gt_gemv::Plain). Parameters: gt_gemv::GemvParams.
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
          int CSPLIT, bool VEC_M, bool ALPHA_ONE, class Chain>
struct GemvMma {
  static_assert(T >= 1 && T <= 16, "1-16 vectors");
  static_assert(WARPS % KSPLIT == 0, "the K slices of a row group are warps of one CTA");
  static_assert(MB >= 1 && UNROLL >= 1, "");
  static_assert(RING == 0 || (RING >= 2 && UNROLL == 1), "a ring of 2+ stages replaces the unrolled loads");
  static_assert(CSPLIT >= 1, "");
  static_assert(RING == 0 || VB == 16, "the ring's cp.async copies whole 16-byte chunks");
  static constexpr int kStageBytes = mma_stage_bytes(MB);  // one 64-k step of a warp's W rows
  static constexpr bool kGlu = Chain::kGlu;
  static_assert(!kGlu || VEC_M, "a GLU pairs W rows (D's columns): the vectors must be D's rows");
  static_assert(!(kGlu && HAS_C), "a GLU takes no C");
  static constexpr int NB = mma_vector_blocks(T);   // n-blocks of 8 vectors
  static constexpr int OUT_ROWS = kGlu ? 8 : 16;    // output rows per m-block
  static constexpr int GROUPS = WARPS / KSPLIT;     // row groups per CTA
  static constexpr int ROWS = GROUPS * MB * OUT_ROWS;  // output rows per CTA
  using Out = Output<OUT, CT, HAS_C, VEC_M, ALPHA_ONE, Chain>;
  using Params = typename Out::Params;

  __device__ __forceinline__ static void run(const GemvParams& p, const Params& ep0) {
    __shared__ float red[mma_red_floats(WARPS, MB, NB, KSPLIT)];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
    const int ks = warp % KSPLIT, group = warp / KSPLIT;
    const int b = blockIdx.y;
    const int o0 = blockIdx.x * ROWS + group * MB * OUT_ROWS;  // first output row of the group

    // This lane's W rows: m-block mb, fragment row g (lo) and g + 8 (hi); clamped into the matrix.
    const unsigned short* wbase = static_cast<const unsigned short*>(p.w) + b * p.w_batch;
    const unsigned short* wlo[MB];
    const unsigned short* whi[MB];
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
    }
    // The vectors this lane feeds: g (and g + 8). Past T a lane reads vector T - 1 again: an mma's output column n
    // depends on its B column n alone, so those columns are the only ones it touches, and they are never stored.
    // (Reading zeros there instead took a per-lane select on every load: 12-52 bytes of spills at 80 registers with
    // T < 8, none with T = 8, docs/PERFORMANCE.md.)
    const unsigned short* xbase = static_cast<const unsigned short*>(p.x) + b * p.x_batch;
    const unsigned short* xv[NB];
#pragma unroll
    for (int nb = 0; nb < NB; ++nb) xv[nb] = xbase + min(nb * 8 + g, T - 1) * p.ldx;

    float acc[MB][NB][4];
#pragma unroll
    for (int mb = 0; mb < MB; ++mb)
#pragma unroll
      for (int nb = 0; nb < NB; ++nb)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[mb][nb][i] = 0.0f;

    // 64-k steps: this CTA's range [cb, ce) (all of them without a CTA split), slice ks of it [sb, se); the ragged
    // last step of K is done on its own by the last slice of the last CTA. In a step, lane q reads k [16q, 16q + 16)
    // of each of its rows (two adjacent 16-byte loads): a quad covers a whole 128-byte line.
    const int full = p.k / 64;
    const int cz = CSPLIT > 1 ? static_cast<int>(blockIdx.z) : 0;
    const int per_c = (full + CSPLIT - 1) / CSPLIT;
    const int cb = min(full, cz * per_c), ce = min(full, cb + per_c);
    const int per = (ce - cb + KSPLIT - 1) / KSPLIT;
    const int sb = min(ce, cb + ks * per), se = min(ce, sb + per);
    int s = sb;
    if constexpr (RING > 0) {
      ring_steps(p, ep0, acc, wbase, o0, xv, sb, se);
      s = se;
    }
    for (; s + UNROLL <= se; s += UNROLL) {
      U4 lo[UNROLL][2][MB], hi[UNROLL][2][MB], xx[UNROLL][2][NB];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int k = (s + u) * 64 + 16 * q + 8 * h;
#pragma unroll
          for (int mb = 0; mb < MB; ++mb) {
            lo[u][h][mb] = ld16<VB, true>(wlo[mb] + k);
            hi[u][h][mb] = ld16<VB, true>(whi[mb] + k);
          }
#pragma unroll
          for (int nb = 0; nb < NB; ++nb) xx[u][h][nb] = ld16<VB, false>(xv[nb] + k);
        }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int h = 0; h < 2; ++h) step(acc, lo[u][h], hi[u][h], xx[u][h]);
    }
    for (; s < se; ++s)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int k = s * 64 + 16 * q + 8 * h;
        U4 lo[MB], hi[MB], xx[NB];
#pragma unroll
        for (int mb = 0; mb < MB; ++mb) lo[mb] = ld16<VB, true>(wlo[mb] + k), hi[mb] = ld16<VB, true>(whi[mb] + k);
#pragma unroll
        for (int nb = 0; nb < NB; ++nb) xx[nb] = ld16<VB, false>(xv[nb] + k);
        step(acc, lo, hi, xx);
      }
    if (full * 64 < p.k && ks == KSPLIT - 1 && cz == CSPLIT - 1) {  // K % 64: the last slice, zero-filled
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
#pragma unroll
    for (int mb = 0; mb < MB; ++mb)
#pragma unroll
      for (int nb = 0; nb < NB; ++nb)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const int t = nb * 8 + 2 * q + j;  // c{j} / c{2 + j}: column 2q + j of the n-block
          if (t >= T) continue;
          if constexpr (kGlu) {
            const int o = o0 + mb * 8 + g;
            if (o < p.rows) Out::store(p, ep, b, t, o, acc[mb][nb][j], acc[mb][nb][2 + j]);
          } else {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int o = o0 + mb * 16 + g + 8 * h;
              if (o < p.rows) Out::store(p, ep, b, t, o, acc[mb][nb][2 * h + j], 0.0f);
            }
          }
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
                                                    const unsigned short* wbase, int o0,
                                                    const unsigned short* const (&xv)[NB],
                                                    int sb, int se) {
    extern __shared__ __align__(128) unsigned char gemv_ring[];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
    const unsigned base =
        static_cast<unsigned>(__cvta_generic_to_shared(gemv_ring)) + warp * RING * kStageBytes;
    const int cc = lane % 8;  // this lane's chunk of a row
    const unsigned short* src[MB][4];
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
        src[mb][i] = wbase + r * p.ldw + cc * 8;
        dst[mb][i] = mb * 2048 + row * 128 + ((cc ^ (row % 8)) * 16);
      }
    auto issue = [&](int st) {  // step st into its slot (an empty group past se keeps the count uniform)
      if (st < se) {
        const unsigned slot = base + ((st - sb) % RING) * kStageBytes;
#pragma unroll
        for (int mb = 0; mb < MB; ++mb)
#pragma unroll
          for (int i = 0; i < 4; ++i) cp_async16(slot + dst[mb][i], src[mb][i] + st * 64);
      }
      cp_async_commit();
    };
#pragma unroll
    for (int j = 0; j < RING - 1; ++j) issue(sb + j);
    // Fragment side: rows g (lo) and g + 8 (hi), chunk 2q + h, swizzled by row % 8 = g.
    for (int s = sb; s < se; ++s) {
      issue(s + RING - 1);
      U4 xx[2][NB];
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int nb = 0; nb < NB; ++nb)
          xx[h][nb] = ld16<VB, false>(xv[nb] + s * 64 + 16 * q + 8 * h);
      cp_async_wait<RING - 1>();
      __syncwarp();
      const unsigned slot = base + ((s - sb) % RING) * kStageBytes;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        U4 lo[MB], hi[MB];
        const unsigned off = (((2 * q + h) ^ g) * 16) + g * 128;
#pragma unroll
        for (int mb = 0; mb < MB; ++mb) {
          lo[mb] = ld_shared16(slot + mb * 2048 + off);
          hi[mb] = ld_shared16(slot + mb * 2048 + off + 8 * 128);
        }
        step(acc, lo, hi, xx[h]);
      }
      __syncwarp();  // the slot is refilled by the next step's issue
    }
    cp_async_wait<0>();
  }

  // Per m-block and n-block the two mmas of the 16 bytes each lane holds (half a 64-k step).
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
