#pragma once
// The load=cp producer (Spec::cp_a / cp_b): the A and/or B tiles that TMA cannot describe (a pitch, batch stride or
// base pointer that is not a multiple of 16 bytes) loaded with cp.async by all 128 threads of the producer warpgroup;
// an operand TMA can load still comes by TMA (producer thread 0, on the same full barrier). The pieces land in exactly
// the shared-memory layout a TMA box with the 128-byte swizzle writes, so the wgmma side (StageDescs, mma_stage) is
// the same:
//   K-major tile: row r (M or N) of 64 K elements = 128 bytes at r * 128; its 16-byte chunk c at chunk c ^ (r % 8).
//   MN-major tile: 64-wide MN chunks at 8192 bytes; in a chunk, K row kk (64 M/N elements = 128 bytes) at kk * 128,
//   swizzled the same way.
// A piece of W bytes (16, 8 or 4: the widest that the pointer, pitch and batch stride keep aligned) never crosses a
// 16-byte chunk. Its valid bytes are the src-size operand of cp.async (0..W, the rest zero-filled), so ragged M, N
// and K edges need no separate path: rows past the edge and K (or M/N) past the edge read as zeros, as TMA's fill.
// Completion: each producer thread's cp.async.mbarrier.arrive.noinc on the stage's full barrier (initialised to the
// 128 producer threads, plus one for thread 0's expect_tx when TMA loads the other operand: Plan::full_arrivals);
// the consumers make the data visible to wgmma's async proxy after their wait (consume_tile: fence.proxy.async).
#include "ptx/ptx.cuh"
#include "sm90/sm90_config.cuh"

namespace gt_sm90 {

// One cp.async of W bytes of which `src_bytes` (0..W) are read from `src` and the rest zero-filled. 16-byte pieces
// bypass L1 (.cg; the other widths have only .ca).
template <int W>
__device__ __forceinline__ void cp_async_zfill(unsigned dst, const void* src, unsigned src_bytes) {
  static_assert(W == 4 || W == 8 || W == 16, "cp.async copies 4, 8 or 16 bytes");
  if constexpr (W == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" ::"r"(dst), "l"(src), "n"(W), "r"(src_bytes)
                 : "memory");
}

// Arrives on `bar` once all of this thread's earlier cp.async have landed; .noinc: the barrier's expected count
// includes this arrival (Plan::full_arrivals).
__device__ __forceinline__ void cp_async_mbar_arrive(unsigned bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}

// Waits until all of this thread's cp.async have landed.
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }

// Bytes of a W-byte piece that start at element `inner` of a row of `inner_n` elements (2 bytes each): W inside the
// row, fewer at its end, 0 past it.
template <int W>
__device__ __forceinline__ unsigned cp_valid_bytes(int inner, int inner_n) {
  const int left = (inner_n - inner) * 2;
  return static_cast<unsigned>(left <= 0 ? 0 : left < W ? left : W);
}

// ROWS (<= 64) rows of 128 bytes (64 rows of a K-major tile, or an MN-major tile's 64-wide chunk) at `base`, as
// thread t of 128: the thread's pieces share one column, rows r0, r0 + W, ... `row_src(r, ok)` gives the global address
// of the row's first element and whether the row exists; `valid` the bytes of this thread's piece in an existing row.
// A piece with no valid bytes reads nothing but still names `ptr` (the matrix's first element), never an address past
// the operand.
template <int W, int ROWS, class RowSrc>
__device__ __forceinline__ void cp_rows(unsigned base, const char* ptr, int t, unsigned valid, RowSrc row_src) {
  constexpr int kPerRow = 128 / W;  // pieces per 128-byte row
  const int col = t % kPerRow, r0 = t / kPerRow;
  const int byte = col * W;
  // NOTES: not unrolled: unrolled, ptxas hoisted every row's address out of the loop and the 40-register producer
  // spilled hundreds of bytes.
#pragma unroll 1
  for (int i = 0; i < (ROWS + W - 1) / W; ++i) {
    const int r = r0 + i * W;  // 128 threads cover W rows per step
    if (ROWS % W != 0 && r >= ROWS) break;
    bool ok;
    const char* src = row_src(r, ok);
    const unsigned dst = base + r * 128 + ((((byte >> 4) ^ (r & 7)) << 4) | (byte & 15));
    const unsigned n = ok ? valid : 0u;
    cp_async_zfill<W>(dst, n > 0 ? src + byte : ptr, n);
  }
}

// One operand tile of a stage: TILE rows (M or N) x 64 K from the operand at `ptr` (this batch's matrix; element
// (outer, inner) at ptr + 2 * (outer * ld + inner)), outer_n x inner_n elements. K-major: outer = tile row, inner = K;
// MN-major: outer = K, inner = M or N. `row_of(tile_row)` is the global M/N index of a tile row (the GLU halves map
// B's two halves to different columns; an MN-major chunk of 64 tile rows is contiguous).
template <bool MN, int TILE, int W, class RowOf>
__device__ __forceinline__ void cp_load_operand(unsigned base, const char* ptr, long long ld, int outer_n, int inner_n,
                                                int k0, int t, RowOf row_of) {
  constexpr int kPerRow = 128 / W;
  const int inner_off = (t % kPerRow) * (W / 2);  // this thread's first element in a row
  if constexpr (!MN) {
    const int inner = k0 + inner_off;
    const unsigned valid = cp_valid_bytes<W>(inner, inner_n);
#pragma unroll 1
    for (int q = 0; q < TILE / 64; ++q)
      cp_rows<W, 64>(base + q * 8192, ptr, t, valid, [&](int r, bool& ok) {
        const int row = row_of(q * 64 + r);
        ok = row < outer_n;
        return ptr + 2 * (static_cast<long long>(row) * ld + k0);
      });
    if constexpr (TILE % 64 != 0)  // the last rows of a tile N that is not a multiple of 64 (K-major B only)
      cp_rows<W, TILE % 64>(base + (TILE / 64) * 8192, ptr, t, valid, [&](int r, bool& ok) {
        const int row = row_of((TILE / 64) * 64 + r);
        ok = row < outer_n;
        return ptr + 2 * (static_cast<long long>(row) * ld + k0);
      });
  } else {
#pragma unroll 1
    for (int ch = 0; ch < TILE / 64; ++ch) {
      const int mn0 = row_of(64 * ch);
      const unsigned valid = cp_valid_bytes<W>(mn0 + inner_off, inner_n);
      cp_rows<W, 64>(base + ch * 8192, ptr, t, valid, [&](int kk, bool& ok) {
        const int k = k0 + kk;
        ok = k < outer_n;
        return ptr + 2 * (static_cast<long long>(k) * ld + mn0);
      });
    }
  }
}

// Loads one k-block (A and B tiles) of tile (m0, n0, b) into stage s, as producer thread t (0..127), without
// completing it (cp_async_mbar_arrive). HALVES: B's rows as in load_stage (sm90_mainloop.cuh).
template <class Cfg, bool HALVES = false>
__device__ __forceinline__ void cp_load_stage(const SmemPlan<Cfg>& sm, const GemmParams& p, int s, int m0, int n0,
                                              int k0, int b, int t) {
  static_assert(!HALVES || !Cfg::B_MN || Cfg::BN % 128 == 0,
                "GLU halves with N-major B needs tile N a multiple of 128");
  const char* a = static_cast<const char*>(p.a) + 2 * static_cast<long long>(b) * p.a_batch;
  const char* bp = static_cast<const char*>(p.b) + 2 * static_cast<long long>(b) * p.b_batch;
  if constexpr (Cfg::CP_A > 0)
    cp_load_operand<Cfg::A_MN, Cfg::BM, Cfg::CP_A>(sm.a(s), a, p.lda, Cfg::A_MN ? p.k : p.m, Cfg::A_MN ? p.m : p.k,
                                                   k0, t, [&](int tr) { return m0 + tr; });
  if constexpr (Cfg::CP_B > 0)
    cp_load_operand<Cfg::B_MN, Cfg::BN, Cfg::CP_B>(sm.b(s), bp, p.ldb, Cfg::B_MN ? p.k : p.n, Cfg::B_MN ? p.n : p.k,
                                                   k0, t, [&](int tr) {
                                                     if (HALVES)
                                                       return tr < Cfg::BN / 2 ? n0 / 2 + tr
                                                                               : p.n / 2 + n0 / 2 + tr - Cfg::BN / 2;
                                                     return n0 + tr;
                                                   });
}

}  // namespace gt_sm90
