#pragma once
// Epilogue: fp32 accumulators of one consumer warpgroup -> alpha * acc (+ beta * C) -> D dtype -> shared memory
// (64-row x kEpiBytes strips, swizzled like the D tensor map, see epi_strip_bytes) -> TMA store (clipped at the M/N
// edges), or, for a D that TMA cannot store (kEpiNoTmaD) and the ragged edge strips (kEpiDirect), a bounds-checked
// copy-out by the strip's owner threads (copy_strip_direct).
// Kept apart from the mainloop so fused epilogues can replace the per-element math.
//
// wgmma m64nN f32 fragment: thread t of the warpgroup (warp w = t / 32, lane l) holds, for c in [0, N/8),
//   acc[4c + 2i + j] = D(row 16w + l/4 + 8i, col 8c + 2(l%4) + j),  i, j in {0, 1}.
#include "sm90/sm90_shape.cuh"

namespace gt_sm90 {

// ---- Copy-out of a staged strip with bounds checks ----
// A kEpiNoTmaD strip (any ld, batch stride and base pointer) goes from its staging buffer to D by the owner threads,
// 16 bytes per thread and row step (copy_strip_out):
// - A row's global start address decides delta = start % 16 (even for 16-bit D, a multiple of 4 for f32). Lane j of
//   a row writes the 16-byte aligned global chunk that holds staged bytes [16 j + s, 16 j + s + 16),
//   s = (16 - delta) % 16: the tail of staged chunk j and the head of chunk j + 1 (two ld.shared.v4 at their swizzled
//   addresses), joined by word selects on s / 4 and a funnel shift by s % 4 bytes, stored with one st.global.v4.
//   Consecutive lanes take consecutive chunks of a row, so a warp's store covers its rows' bytes contiguously; the
//   last lane of a row (or of the valid bytes at n_out) writes only its first bytes, with the widest stores their
//   alignment allows.
// - The staged bytes [0, s) of each row with delta != 0 (the partial global chunk before lane 0's) go in a second,
//   short pass, one thread per row.
// Nothing outside the strip's own bytes of rows < m and columns < n_out is written, and no global memory is read: the
// neighbouring bytes of a partial chunk belong to another strip or another CTA's tile, which may be storing them at
// the same time. The kEpiDirect edge strips of a D that TMA stores (rows on 16 bytes, clipped at n_out) take
// copy_strip_words, one word per thread and row.
// Host-compilable (no device code before the #if below): tests/unit/test_sm90_copy_out.cpp runs this code over host
// buffers with a memory policy that records every byte written. MEM: ld16(shared address) -> CopyWords,
// ld4(shared address) -> word, and st2 / st4 / st8 / st16(global address, words) at addresses aligned to their size.
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define GT_COPY_FN __device__ __forceinline__
#define GT_COPY_PRAGMA(x) _Pragma(#x)
#else
#define GT_COPY_FN inline
#define GT_COPY_PRAGMA(x)
#endif

struct CopyWords {
  unsigned w[4];
};

// (hi:lo) >> (8 * (s % 4)) bytes, low word; s even.
GT_COPY_FN unsigned funnel_bytes(unsigned lo, unsigned hi, unsigned s) {
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
  unsigned r;
  asm("shf.r.wrap.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(lo), "r"(hi), "r"(8u * s));
  return r;
#else
  return static_cast<unsigned>((((static_cast<unsigned long long>(hi) << 32) | lo) >> ((8u * s) & 31u)));
#endif
}

// Bytes [s, s + 16) of the 32 bytes c, n (c first); s in [0, 16), even (a multiple of 4 for OUT_SIZE 4).
// h, q: s & 8, s & 4 (the caller has them from the row address).
template <int OUT_SIZE>
GT_COPY_FN CopyWords shift_chunk(const CopyWords& c, const CopyWords& n, unsigned s, bool h, bool q) {
  const unsigned x0 = h ? c.w[2] : c.w[0], x1 = h ? c.w[3] : c.w[1], x2 = h ? n.w[0] : c.w[2];
  const unsigned x3 = h ? n.w[1] : c.w[3], x4 = h ? n.w[2] : n.w[0];
  const unsigned y0 = q ? x1 : x0, y1 = q ? x2 : x1, y2 = q ? x3 : x2, y3 = q ? x4 : x3;
  if (OUT_SIZE == 4) return {{y0, y1, y2, y3}};
  const unsigned x5 = h ? n.w[3] : n.w[1], y4 = q ? x5 : x4;
  return {{funnel_bytes(y0, y1, s), funnel_bytes(y1, y2, s), funnel_bytes(y2, y3, s), funnel_bytes(y3, y4, s)}};
}

// Writes bytes [0, len) of `v` to the 16-byte aligned `g`; len in (0, 16), even (a multiple of 4 for OUT_SIZE 4).
template <int OUT_SIZE, class MEM>
GT_COPY_FN void store_chunk_part(char* g, CopyWords v, int len) {
  if (len & 8) {
    MEM::st8(g, v.w[0], v.w[1]);
    g += 8;
    v.w[0] = v.w[2];
    v.w[1] = v.w[3];
  }
  if (len & 4) {
    MEM::st4(g, v.w[0]);
    g += 4;
    v.w[0] = v.w[1];
  }
  if (OUT_SIZE == 2 && (len & 2)) MEM::st2(g, v.w[0]);
}

// Writes bytes [0, len) of `v` to `p`, p % 16 != 0 and p % 16 + len <= 16 (a row's bytes before its first aligned
// chunk): 2-, 4- and 8-byte stores as p's alignment grows.
template <int OUT_SIZE, class MEM>
GT_COPY_FN void store_row_head(char* p, CopyWords v, int len) {
  unsigned w0 = v.w[0], w1 = v.w[1], w2 = v.w[2];
  const auto at = [&](unsigned bit) {
    return (static_cast<unsigned>(reinterpret_cast<unsigned long long>(p)) & bit) != 0;
  };
  if (OUT_SIZE == 2 && at(2)) {  // the rest is at most 12 bytes: w0..w2 after the shift
    MEM::st2(p, w0);
    w0 = funnel_bytes(w0, w1, 2);
    w1 = funnel_bytes(w1, w2, 2);
    w2 = funnel_bytes(w2, v.w[3], 2);
    p += 2;
    len -= 2;
  }
  if (at(4) && len >= 4) {
    MEM::st4(p, w0);
    w0 = w1;
    w1 = w2;
    p += 4;
    len -= 4;
  }
  if (at(8) && len >= 8) {  // reaches the aligned chunk: nothing after it
    MEM::st8(p, w0, w1);
    return;
  }
  if (len >= 4) {  // p is 8-byte aligned here
    MEM::st4(p, w0);
    w0 = w1;
    p += 4;
    len -= 4;
  }
  if (OUT_SIZE == 2 && len >= 2) MEM::st2(p, w0);
}

// The copy-out of one staged ROWS x EPI_BYTES strip (swizzled as epi_swizzle_mask(EPI_BYTES)) at shared address `src`
// by THREADS threads (`tid` < THREADS): rows [0, rows) and staged bytes [0, bytes) of each (rows <= ROWS and
// bytes <= EPI_BYTES: clipped at m and n_out by the caller; bytes a multiple of OUT_SIZE) to `d` (row 0's first byte)
// with `pitch` bytes between rows. UNROLL rows per thread have their loads issued before their stores.
template <int OUT_SIZE, int EPI_BYTES, int ROWS, int THREADS, int UNROLL, class MEM>
GT_COPY_FN void copy_strip_out(unsigned src, char* d, long long pitch, int rows, int bytes, int tid) {
  constexpr int kChunks = EPI_BYTES / 16;
  constexpr int kStep = THREADS / kChunks;  // rows per pass of all threads; with an odd kChunks some threads idle
  constexpr unsigned kMask = epi_swizzle_mask(EPI_BYTES);
  // The swizzle repeats every 8 rows (1024 bytes): when a thread's pass over UNROLL rows steps 8 rows at a time (or
  // nothing is swizzled), its chunks of row r + u kStep sit at a fixed offset from row r0 + u kStep's.
  constexpr bool kFixed = kMask == 0 || (kStep * UNROLL) % 8 == 0;
  static_assert(EPI_BYTES % 16 == 0 && kStep >= 1 && ROWS <= THREADS, "strip shape");
  const auto staged = [](int r, int c) {
    const unsigned off = static_cast<unsigned>(r * EPI_BYTES + 16 * c);
    return off ^ (((off >> 7) & kMask) << 4);
  };
  const int j = tid % kChunks, r0 = tid / kChunks;
  const int jn = j + 1 < kChunks ? j + 1 : j;  // the last lane reads no next chunk (its bytes are not used)
  const int ej = bytes - 16 * j;  // staged bytes from this lane's chunk to the end of the row's valid bytes
  if (r0 < kStep && ej > 0) {
    // rp: the row's start + 15 + 16 j, so that rp & ~15 is the lane's aligned chunk and ~rp & 15 is s.
    char* rp = d + r0 * pitch + 16 * j + 15;
    const long long step = pitch * kStep;
    unsigned a0[UNROLL], a1[UNROLL];  // kFixed: this thread's chunks j, jn of its rows r0 + u kStep
    GT_COPY_PRAGMA(unroll)
    for (int u = 0; u < UNROLL; ++u) {
      a0[u] = src + staged(r0 + u * kStep, j);
      a1[u] = src + staged(r0 + u * kStep, jn);
    }
    GT_COPY_PRAGMA(unroll 1)
    for (int r = r0; r < rows; r += kStep * UNROLL) {
      CopyWords c[UNROLL], n[UNROLL];
      GT_COPY_PRAGMA(unroll)
      for (int u = 0; u < UNROLL; ++u) {
        const int ru = r + u * kStep;
        if (u == 0 || ru < rows) {
          c[u] = MEM::ld16(kFixed ? a0[u] + (r - r0) * EPI_BYTES : src + staged(ru, j));
          n[u] = MEM::ld16(kFixed ? a1[u] + (r - r0) * EPI_BYTES : src + staged(ru, jn));
        }
      }
      GT_COPY_PRAGMA(unroll)
      for (int u = 0; u < UNROLL; ++u) {
        if (u == 0 || r + u * kStep < rows) {
          const unsigned lo = static_cast<unsigned>(reinterpret_cast<unsigned long long>(rp));
          const unsigned s = ~lo & 15u;
          char* g = reinterpret_cast<char*>(reinterpret_cast<unsigned long long>(rp) & ~15ull);
          const CopyWords v = shift_chunk<OUT_SIZE>(c[u], n[u], s, (lo & 8u) == 0, (lo & 4u) == 0);
          const int len = ej - static_cast<int>(s);
          if (len >= 16)
            MEM::st16(g, v);
          else if (len > 0)
            store_chunk_part<OUT_SIZE, MEM>(g, v, len);
        }
        rp += step;
      }
    }
  }
  if (tid < rows) {
    char* p = d + tid * pitch;
    const int delta = static_cast<int>(reinterpret_cast<unsigned long long>(p) & 15u);
    if (delta != 0) {
      const int len = 16 - delta < bytes ? 16 - delta : bytes;
      store_row_head<OUT_SIZE, MEM>(p, MEM::ld16(src + staged(tid, 0)), len);
    }
  }
}

// The copy-out of a strip whose rows all start on 16 bytes (a D that TMA stores: the kEpiDirect edge strips, clipped
// at n_out), with copy_strip_out's arguments: one 4-byte word per thread and row (a 2-byte store for a 16-bit D's
// last odd column), consecutive threads on consecutive words of a row. The 16-byte form cost these kernels 4-12 bytes
// of spills (ping-pong 128x128 and coop 256x128 with C), for strips that only the last column tile has.
template <int OUT_SIZE, int EPI_BYTES, int ROWS, int THREADS, class MEM>
GT_COPY_FN void copy_strip_words(unsigned src, char* d, long long pitch, int rows, int bytes, int tid) {
  constexpr int kWords = EPI_BYTES / 4;
  constexpr int kStep = THREADS / kWords;  // rows per pass of all threads (the rest idle: kWords need not divide)
  constexpr unsigned kMask = epi_swizzle_mask(EPI_BYTES);
  static_assert(kStep >= 1 && ROWS <= THREADS, "strip shape");
  const int w = tid % kWords, r0 = tid / kWords;
  const int left = bytes - 4 * w;  // valid bytes from this thread's word on
  if (r0 >= kStep || left <= 0) return;
  char* a = d + r0 * pitch + 4 * w;
  const long long step = pitch * kStep;
  GT_COPY_PRAGMA(unroll 1)
  for (int r = r0; r < rows; r += kStep) {
    const unsigned off = static_cast<unsigned>(r * EPI_BYTES + 4 * w);
    const unsigned u = MEM::ld4(src + (off ^ (((off >> 7) & kMask) << 4)));
    if (left >= 4)
      MEM::st4(a, u);
    else
      MEM::st2(a, u);
    a += step;
  }
}

}  // namespace gt_sm90

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
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

// C at (row, col) and (row, col + 1) with one 4-byte (16-bit C) or 8-byte (f32 C) load: only with kEpiVecC.
// `ptr`: the element's address; callers pass a per-row base plus a constant column offset, so the compiler keeps
// one 64-bit base per row instead of precomputing every element's address next to the accumulators (that spilled).
template <int CT>
__device__ __forceinline__ void load_c2_at(const void* ptr, float& c0, float& c1) {
  if (CT == kF32) {
    asm volatile("ld.global.nc.v2.f32 {%0, %1}, [%2];" : "=f"(c0), "=f"(c1) : "l"(ptr));
    return;
  }
  unsigned u;
  asm volatile("ld.global.nc.b32 %0, [%1];" : "=r"(u) : "l"(ptr));
  c0 = CT == kBF16 ? bf16_to_f32(static_cast<unsigned short>(u & 0xFFFFu)) : f16_to_f32(static_cast<unsigned short>(u & 0xFFFFu));
  c1 = CT == kBF16 ? bf16_to_f32(static_cast<unsigned short>(u >> 16)) : f16_to_f32(static_cast<unsigned short>(u >> 16));
}
template <int CT>
__device__ __forceinline__ void load_c2(const GemmParams& p, int row, int col, int b, float& c0, float& c1) {
  const long long off = static_cast<long long>(b) * p.c_batch + static_cast<long long>(row) * p.ldc_m + col;
  load_c2_at<CT>(static_cast<const char*>(p.c) + off * (CT == kF32 ? 4 : 2), c0, c1);
}

// Compile-time epilogue flags, chosen by the backend from the problem (src/backends/sm90/sm90_backend.cpp) and so
// part of the generated source and of the kernel cache key:
//   kEpiDirect: n_out * sizeof(D) % 16 != 0 — the last column tile's edge strips cannot be TMA-stored (TMA clips the
//               inner dimension at 16 bytes) and are copied out of the staging buffer with bounds checks instead.
//               Without it that path is not instantiated at all (it was ~60% of a candidate's compile time).
//   kEpiVecC:   C is row-major in the kernel view with even ld, batch stride and n: the fragment's column pairs
//               (col even, col + 1) are read with one 4/8-byte load (the launch checks C's pointer alignment).
//   kEpiVecOps: kernel n_out is even: fused-chain operands indexed along the kernel's columns (bias, scales,
//               residual) are read in pairs with one 4/8-byte load (the launch checks their pointers' alignment).
//   kEpiAlphaOne: alpha == 1 (the problem's, fixed per executable): no multiply. Besides a multiply per element, it
//               takes ~6% off the compile (ptxas time follows the instructions that read the accumulators).
//   kEpiNoTmaD: D is one TMA cannot store (in the kernel view: a row pitch or batch stride that is not a multiple of
//               16 bytes, or a base pointer below 16-byte alignment): every strip is staged as usual and copied out
//               by its owner threads (copy_strip_direct); no bulk store, and the D tensor maps go unused (the host
//               encodes none). Supersedes kEpiDirect.
enum : int { kEpiDirect = 1, kEpiVecC = 2, kEpiVecOps = 4, kEpiAlphaOne = 8, kEpiNoTmaD = 16 };

// alpha * x, or x under kEpiAlphaOne.
template <int FLAGS>
__device__ __forceinline__ float scale_alpha(const GemmParams& p, float x) {
  if constexpr ((FLAGS & kEpiAlphaOne) != 0)
    return x;
  else
    return p.alpha * x;
}

// The shared-memory loads and global stores of copy_strip_out.
struct CopyMemPtx {
  static __device__ __forceinline__ CopyWords ld16(unsigned a) {
    CopyWords v;
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.w[0]), "=r"(v.w[1]), "=r"(v.w[2]), "=r"(v.w[3])
                 : "r"(a));
    return v;
  }
  static __device__ __forceinline__ unsigned ld4(unsigned a) {
    unsigned v;
    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(a));
    return v;
  }
  static __device__ __forceinline__ void st2(char* p, unsigned v) {
    asm volatile("st.global.u16 [%0], %1;" ::"l"(p), "h"(static_cast<unsigned short>(v & 0xFFFFu)));
  }
  static __device__ __forceinline__ void st4(char* p, unsigned v) {
    asm volatile("st.global.b32 [%0], %1;" ::"l"(p), "r"(v));
  }
  static __device__ __forceinline__ void st8(char* p, unsigned v0, unsigned v1) {
    asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(p), "r"(v0), "r"(v1));
  }
  static __device__ __forceinline__ void st16(char* p, const CopyWords& v) {
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.w[0]), "r"(v.w[1]), "r"(v.w[2]),
                 "r"(v.w[3]));
  }
};

// Copies one staged ROWS x EPI_BYTES strip to D with bounds checks: rows [row0, row0 + ROWS), columns
// [col0, col0 + EPI_BYTES / OUT_SIZE), clipped to m x n_out, by THREADS threads (`tid` < THREADS): copy_strip_out,
// or with ALIGNED (D's rows start on 16 bytes: a D that TMA stores, its kEpiDirect edge strips) copy_strip_words.
template <int OUT_SIZE, int EPI_BYTES, int ROWS, int THREADS, int UNROLL, bool ALIGNED>
__device__ __forceinline__ void copy_strip_direct(unsigned src, void* d, long long ldd, long long d_off, int m,
                                                  int n_out, int row0, int col0, int tid) {
  constexpr int kCols = EPI_BYTES / OUT_SIZE;
  const int rows = m - row0 < ROWS ? m - row0 : ROWS, cols = n_out - col0 < kCols ? n_out - col0 : kCols;
  if (rows <= 0 || cols <= 0) return;
  char* const d0 = static_cast<char*>(d) + (d_off + static_cast<long long>(row0) * ldd + col0) * OUT_SIZE;
  if constexpr (ALIGNED)
    copy_strip_words<OUT_SIZE, EPI_BYTES, ROWS, THREADS, CopyMemPtx>(src, d0, ldd * OUT_SIZE, rows, cols * OUT_SIZE,
                                                                     tid);
  else
    copy_strip_out<OUT_SIZE, EPI_BYTES, ROWS, THREADS, UNROLL, CopyMemPtx>(src, d0, ldd * OUT_SIZE, rows,
                                                                          cols * OUT_SIZE, tid);
}

// Writes one strip of a consumer warpgroup's output (64 rows x GROUPS 8-column groups, BYTES per row) into the staging
// buffer at `dst`, swizzled like the D tensor map. `pair(g, i, v0, v1)` gives the values of the fragment pair of group
// g, half i (row 16 warp + lane / 4 + 8 i, columns 8 g + 2 (lane % 4) and + 1 of the strip). A 16-bit D of a kernel
// without C and stream-K goes out with one stmatrix per two groups (a 16 x 16 block of the warp's rows; an odd last
// group with an x2), otherwise with one 4-byte (8-byte for f32) store per pair.
// Cfg::kEpiWarp: only this warp's 16 rows, as a 16-row strip of its own at `dst` (the warpgroup's forms with row base
// 0); with 8-row pieces (Cfg::kEpiHalf) only its 8 rows of half `half` (a constant once the caller's loops are
// unrolled), row lane / 4 of an 8-row strip, the stmatrix form then covering four groups of the half per x4 (an x2
// and / or an x1 for the rest).
// NOTES: stmatrix takes ~7% of the instructions off a plain kernel (4 st.shared and their addresses per x4) and ~9%
// of ptxas time, but holding 4 pairs per store tipped kernels that already sit at the register limit into 4-48 bytes
// of spills (ping-pong 128x128 with an element-wise C, or with a stream-K tail), so those keep the 4-byte stores.
template <class Cfg, int BYTES, int GROUPS, class Pair>
__device__ __forceinline__ void stage_strip(unsigned dst, int warp, int lane, Pair pair, int half = 0) {
  constexpr int OUT = Cfg::OUT;
  constexpr unsigned kMask = epi_swizzle_mask(BYTES);
  const int r0 = Cfg::kEpiWarp ? 0 : warp * 16;  // the warp's first row in `dst`: a warp's strip is its own
  if constexpr (OUT == kF32 || OUT == kE4M3 || Cfg::HAS_C || Cfg::SK) {
#pragma unroll
    for (int g = 0; g < GROUPS; ++g) {
#pragma unroll
      for (int i = Cfg::kEpiHalf ? half : 0; i < (Cfg::kEpiHalf ? half + 1 : 2); ++i) {
        float v0, v1;
        pair(g, i, v0, v1);
        const int r = Cfg::kEpiHalf ? lane / 4 : r0 + lane / 4 + 8 * i;
        const unsigned off = r * BYTES + (g * 8 + 2 * (lane % 4)) * Cfg::kOutSize;
        const unsigned sw = off ^ (((off >> 7) & kMask) << 4);
        if (OUT == kF32)
          st_shared_f32x2(dst + sw, v0, v1);
        else if (OUT == kE4M3)
          st_shared_u16(dst + sw, pack_e4m3x2(v0, v1));
        else
          st_shared_u32(dst + sw, OUT == kBF16 ? pack_bf16x2(v0, v1) : pack_f16x2(v0, v1));
      }
    }
  } else if constexpr (Cfg::kEpiHalf) {
    // Matrix m = lane / 8 of an x4 is group g0 + m of the half; lane l gives row l % 8 (as below, g0 a multiple of 4).
    const int m = lane / 8;
    const unsigned row = (lane % 8) * BYTES;
    const unsigned base = kMask ? row ^ (16u * (m ^ ((row >> 7) & kMask))) : row + 16u * m;
    auto at = [&](int g) { return dst + (kMask ? base ^ (16u * g) : base + 16u * g); };  // lanes 0-7: m = 0
#pragma unroll
    for (int g0 = 0; g0 < GROUPS; g0 += 4) {
      unsigned pk[4];
#pragma unroll
      for (int h = 0; h < 4; ++h) {
        if (g0 + h < GROUPS) {
          float v0, v1;
          pair(g0 + h, half, v0, v1);
          pk[h] = OUT == kBF16 ? pack_bf16x2(v0, v1) : pack_f16x2(v0, v1);
        }
      }
      if (GROUPS - g0 >= 4) {
        stmatrix_x4(at(g0), pk[0], pk[1], pk[2], pk[3]);
      } else if (GROUPS - g0 == 3) {
        stmatrix_x2(at(g0), pk[0], pk[1]);
        stmatrix_x1(at(g0 + 2), pk[2]);
      } else if (GROUPS - g0 == 2) {
        stmatrix_x2(at(g0), pk[0], pk[1]);
      } else {
        stmatrix_x1(at(g0), pk[0]);
      }
    }
  } else {
    // Matrix m = lane / 8 of an x4 is (half m % 2, group g0 + m / 2): lane l gives row l % 8 of it, 16-byte chunk
    // g0 + m / 2 of the row, XORed with the row's swizzle s (kMask = chunks per strip - 1). The swizzled strips are
    // 32, 64 or 128 bytes, so `row` is a multiple of the strip and chunk ^ s < strip / 16: the address is
    // row ^ 16 ((m / 2) ^ s) ^ 16 g0 (g0 even), one XOR per stmatrix from a per-lane base.
    const int m = lane / 8;
    const unsigned row = (r0 + 8 * (m % 2) + lane % 8) * BYTES;
    const unsigned base = kMask ? row ^ (16u * ((m / 2) ^ ((row >> 7) & kMask))) : row + 16u * (m / 2);
#pragma unroll
    for (int g0 = 0; g0 < GROUPS; g0 += 2) {
      unsigned pk[4];
#pragma unroll
      for (int h = 0; h < 4; ++h) {
        if (g0 + h / 2 < GROUPS) {
          float v0, v1;
          pair(g0 + h / 2, h % 2, v0, v1);
          pk[h] = OUT == kBF16 ? pack_bf16x2(v0, v1) : pack_f16x2(v0, v1);
        }
      }
      const unsigned addr = dst + (kMask ? base ^ (16u * g0) : base + 16u * g0);
      if (g0 + 1 < GROUPS)
        stmatrix_x4(addr, pk[0], pk[1], pk[2], pk[3]);
      else
        stmatrix_x2(addr, pk[0], pk[1]);  // an odd last group: matrices (0, g0), (1, g0) from lanes 0-15
    }
  }
}

// Strip buffer `buf` of a consumer's kEpiBufs buffers at `bufs`, and the buffer after it. Two buffers keep the select
// and XOR of the two-buffer epilogue (index arithmetic cost a register that made a stream-K ping-pong 128x128 kernel
// spill); one buffer is reused by every strip. Cfg::kEpiWarp: buffer `buf` (0 or 1) of warp `warp`, Cfg::kEpiRows
// rows of up to 128 bytes each, 1024-byte aligned (the 128-byte swizzle's period).
template <class Cfg>
__device__ __forceinline__ unsigned epi_buf(unsigned bufs, unsigned buf, int warp) {
  if constexpr (Cfg::kEpiWarp)
    return bufs + (2 * warp + buf) * Cfg::kEpiWarpBufBytes;
  else if constexpr (Cfg::kEpiBufs == 1)
    return bufs;
  else
    return buf ? bufs + Cfg::kEpiBufBytes : bufs;
}
template <class Cfg>
__device__ __forceinline__ unsigned epi_next(unsigned buf) {
  return Cfg::kEpiWarp || Cfg::kEpiBufs == 2 ? buf ^ 1u : 0u;
}

// Row of strip piece `i` (0 .. Cfg::kEpiPieces - 1) of a 64-row slab, for the calling warp: 0 for the warpgroup's
// 64-row strip, 16 warp for a warp's 16-row piece, 16 warp + 8 i for its 8-row pieces.
template <class Cfg>
__device__ __forceinline__ int strip_row(int warp, int i) {
  return Cfg::kEpiWarp ? 16 * warp + Cfg::kEpiRows * i : 0;
}

// The control of one strip of a consumer's output, around its stage_strip into the buffer `dst`. The strip's owner
// is the warpgroup (64 rows; thread 0 stores) or, with Cfg::kEpiWarp, one warp (16 or 8 rows; its lane 0 stores).
// Under NO_TMA (kEpiNoTmaD) every strip is copied out and there is no bulk store to wait for or publish to.
// strip_begin — the owner's storing thread waits until the store (kEpiBufs strips ago for the warpgroup, two for a
// warp) has read the buffer (all earlier stores inside an edge tile, where direct strips commit no bulk group), then
// the owner syncs; strip_end — the staged strip is published to the async proxy and the owner syncs again, then the
// storing thread TMA-stores D rows [row0, row0 + Cfg::kEpiRows), columns [col0, col0 + BYTES / out size) of batch b,
// or the owner copies them out with bounds checks (`direct`: an edge strip TMA cannot clip, see
// EpilogueTmaStore::store). The warpgroup syncs on consumer_bar(), a warp with __syncwarp.
// NOTES: the two barriers per strip are not what the short-K epilogue waits on.
// One barrier per strip with two buffers (thread 0 waiting for the previous strip's store right before publishing the
// strip) and a per-warp variant of 16-row stores with one buffer moved 8192x6144x256 by -2% to +6% depending on the
// tile and schedule, long K within noise. cuBLASLt's nvjet kernel stores 8 rows x 64 columns per warp and TMA
// store, from two small buffers per warp, with no warpgroup barrier; a microbenchmark of that took 70% of the store's
// cost off the tensor pipe at tile N 176 (docs/PERFORMANCE.md, per-warp epilogue).
// (Two calls around stage_strip rather than one taking the lambda: another lambda level cost NVVM ~5 ms per kernel.)
template <class Cfg>
__device__ __forceinline__ void strip_owner_sync() {
  if constexpr (Cfg::kEpiWarp)
    __syncwarp();
  else
    named_bar_sync(consumer_bar(), 128);
}
template <class Cfg, bool NO_TMA = false>
__device__ __forceinline__ void strip_begin(bool edge_tile, int tid) {
  if (!NO_TMA && tid % Cfg::kEpiOwnerThreads == 0) {
    if (edge_tile)
      bulk_wait_read<0>();
    else
      bulk_wait_read<Cfg::kEpiWarp ? 1 : Cfg::kEpiBufs - 1>();
  }
  strip_owner_sync<Cfg>();
}
// Rows in flight per thread in the copy-out of the plain epilogue's kEpiNoTmaD strips (strip_end's NO_TMA_UNROLL):
// two, whose loads are issued together, where the registers allow; one for tiles of more than 128 accumulators per
// thread (with two, tile N 176 / 192 kernels spilled 24-76 bytes) and with C. The fused epilogues keep one (with two,
// 256x128 with bias,gelu_tanh spilled 24 bytes).
template <class Cfg>
constexpr int no_tma_unroll() {
  return Cfg::kAccRegs <= 128 && !Cfg::HAS_C ? 2 : 1;
}
template <class Cfg, int BYTES, bool NO_TMA = false, int NO_TMA_UNROLL = 1>
__device__ __forceinline__ void strip_end(const TmaDesc& td, const GemmParams& p, int n_out, unsigned dst, int row0,
                                          int col0, int b, bool direct, int tid, int m_end) {
  constexpr int kThreads = Cfg::kEpiOwnerThreads;
  if (!NO_TMA) fence_proxy_async();
  strip_owner_sync<Cfg>();
  if (NO_TMA || direct) {
    copy_strip_direct<Cfg::kOutSize, BYTES, Cfg::kEpiRows, kThreads, NO_TMA ? NO_TMA_UNROLL : 1, !NO_TMA>(
        dst, p.d, p.ldd, static_cast<long long>(b) * p.d_batch, m_end, n_out, row0, col0, tid % kThreads);
  } else if (tid % kThreads == 0) {
    tma_store_3d(td, dst, col0, row0, b);
    bulk_commit();
  }
}

template <int V>
struct IntC {
  static constexpr int value = V;
};

// The column strips of a 64-row slab, left to right: COUNT strips of BYTES through the D map `td`, then (TAIL > 0) one
// strip of TAIL bytes through the tail map `tdt` (GemmConfig::kEpiStrips, kEpiTailBytes). Calls
// f(IntC<strip bytes>{}, first column of the strip within the tile, its map).
template <int BYTES, int COUNT, int TAIL, int OUT_SIZE, class F>
__device__ __forceinline__ void for_each_strip(const TmaDesc& td, const TmaDesc& tdt, F&& f) {
#pragma unroll
  for (int q = 0; q < COUNT; ++q) f(IntC<BYTES>{}, q * (BYTES / OUT_SIZE), td);
  if constexpr (TAIL > 0) f(IntC<TAIL>{}, COUNT * (BYTES / OUT_SIZE), tdt);
}

// Before the CTA exits: the warpgroup's stores have finished reading their strip buffers (the shared memory goes with
// the CTA). Their writes to D need no wait here: they are performed before the grid completes. Waiting for them
// (cp.async.bulk.wait_group without .read) kept every CTA alive for the round trip of its last store; no measurable
// change in time either way. Lane 0 of every warp: with warp strips each stores its own.
template <bool NO_TMA = false>
__device__ __forceinline__ void drain_strips(int tid) {
  if (!NO_TMA && tid % 32 == 0) bulk_wait_read<0>();
}

// amax of an e4m3 D: the warp's largest |v| (a butterfly max), raised into *amax by lane 0.
__device__ __forceinline__ void warp_amax(float* amax, float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (threadIdx.x % 32 == 0) atomicMax(reinterpret_cast<int*>(amax), __float_as_int(v));
}

template <class Cfg, int FLAGS = kEpiDirect>
struct EpilogueTmaStore {
  struct Params {};  // the plain epilogue takes no operands (EpilogueFused: gemmtune_epi::EpiParams)
  static constexpr bool kHalves = false;
  static constexpr bool kFused = false;

  // Stores rows [m0, m0 + 64 * kSlabs) x cols [n0, n0 + BN) of batch b through the D maps `td` and `tdt` (the tail
  // strip's, see for_each_strip). `bufs`: this warpgroup's strip buffers; `buf` the next buffer (persists across
  // calls). m_end: rows from it on are not stored (p.m; a grouped tile's group end, under kEpiNoTmaD).
  __device__ __forceinline__ static void store(float (&acc)[Cfg::kSlabs][Cfg::BN / 2], const TmaDesc& td,
                                               const TmaDesc& tdt, const GemmParams& p, const Params&, unsigned bufs,
                                               int m0, int n0, int b, int tid, unsigned& buf, int m_end) {
    const int warp = tid / 32, lane = tid % 32;
    // NOTES: TMA store clips the inner dimension at 16-byte granularity: with n * sizeof(D) not a multiple of 16 it
    // would write up to 15 bytes past column n (into the caller's ld padding). The strips of such an edge tile that
    // reach past n are staged as usual and copied out with bounds checks (strip_end's `direct`).
    constexpr bool kNoTma = (FLAGS & kEpiNoTmaD) != 0;
    const bool edge_tile = (FLAGS & kEpiDirect) && !kNoTma && (p.n * Cfg::kOutSize) % 16 != 0 && n0 + Cfg::BN > p.n;
    constexpr int kCSize = Cfg::CT == kF32 ? 4 : 2;
    // An e4m3 D (only without C): v * scale_d is stored saturated (stage_strip), max |v| kept for amax.
    constexpr bool kF8Out = Cfg::OUT == kE4M3;
    float amax_t = 0.0f;
    const float sd = kF8Out && p.scale_d ? p.scale_d[0] : 1.0f;
#pragma unroll
    for (int si = 0; si < Cfg::kSlabs; ++si) {
      // kEpiVecC: this thread's two C rows of the slab, at its first column (see load_c2_at).
      const char* crow[2];
      if ((FLAGS & kEpiVecC) && Cfg::HAS_C) {
#pragma unroll
        for (int i = 0; i < 2; ++i)
          crow[i] = static_cast<const char*>(p.c) +
                    (static_cast<long long>(b) * p.c_batch +
                     static_cast<long long>(m0 + si * 64 + warp * 16 + lane / 4 + 8 * i) * p.ldc_m + n0 +
                     2 * (lane % 4)) * kCSize;
      }
      for_each_strip<Cfg::kEpiStripBytes, Cfg::kEpiStrips, Cfg::kEpiTailBytes, Cfg::kOutSize>(
          td, tdt, [&](auto bytes, int c0, const TmaDesc& map) {
            constexpr int kBytes = decltype(bytes)::value, kCols = kBytes / Cfg::kOutSize;
#pragma unroll
            for (int pc = 0; pc < Cfg::kEpiPieces; ++pc) {
              const bool direct = edge_tile && n0 + c0 + kCols > p.n;
              const unsigned dst = epi_buf<Cfg>(bufs, buf, warp);
              strip_begin<Cfg, kNoTma>(edge_tile, tid);
              stage_strip<Cfg, kBytes, kCols / 8>(dst, warp, lane, [&](int g, int i, float& v0, float& v1) {
                const int c = c0 / 8 + g;
                v0 = scale_alpha<FLAGS>(p, acc[si][4 * c + 2 * i]);
                v1 = scale_alpha<FLAGS>(p, acc[si][4 * c + 2 * i + 1]);
                if (Cfg::HAS_C) {
                  const int row = m0 + si * 64 + warp * 16 + lane / 4 + 8 * i, col = n0 + 8 * c + 2 * (lane % 4);
                  if (row < p.m) {
                    if (FLAGS & kEpiVecC) {
                      if (col < p.n) {  // n even: col + 1 < n too
                        float c0v, c1v;
                        load_c2_at<Cfg::CT>(crow[i] + 8 * c * kCSize, c0v, c1v);
                        v0 += p.beta * c0v;
                        v1 += p.beta * c1v;
                      }
                    } else {
                      if (col < p.n) v0 += p.beta * load_c<Cfg::CT>(p, row, col, b);
                      if (col + 1 < p.n) v1 += p.beta * load_c<Cfg::CT>(p, row, col + 1, b);
                    }
                  }
                }
                if constexpr (kF8Out) {  // rows and columns past D hold alpha * 0 (TMA's zero fill)
                  amax_t = fmaxf(amax_t, fmaxf(fabsf(v0), fabsf(v1)));
                  v0 *= sd;
                  v1 *= sd;
                }
              }, pc);
              strip_end<Cfg, kBytes, kNoTma, no_tma_unroll<Cfg>()>(
                  map, p, p.n, dst, m0 + si * 64 + strip_row<Cfg>(warp, pc), n0 + c0, b, direct, tid, m_end);
              buf = epi_next<Cfg>(buf);
            }
          });
    }
    if constexpr (kF8Out)
      if (p.amax) warp_amax(p.amax, amax_t);
  }

  __device__ __forceinline__ static void drain(int tid) { drain_strips<(FLAGS & kEpiNoTmaD) != 0>(tid); }
};

}  // namespace gt_sm90
#endif
