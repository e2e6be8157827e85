#pragma once
// Shape arithmetic of the sm90 kernels that the host plan needs too: constexpr, no device code, so both NVRTC (the
// kernels) and the host compiler (src/backends/sm90/sm90_plan.h) include this one file.

namespace gt_sm90 {

// Epilogue strips: a consumer stages its output in 64-row strips of the tile's D rows (`row_bytes` each) and TMA-stores
// each strip. Narrow strips: 128, 64 or 32 bytes when that divides the row (swizzled like the D tensor map), else the
// widest divisor that is a multiple of 16 bytes and below 128 (no swizzle): tile N = 168 with a 16-bit D makes
// 336-byte rows and three 112-byte strips. 0 when the row is not a multiple of 16 bytes.
// NOTES: an unswizzled strip of 16 x (odd) bytes is free of bank conflicts for the fragment's stores: the 8 rows one
// warp writes start at distinct 16-byte bank groups. The host accepts narrow unswizzled strips of 112 bytes only
// (tile N 168): 48-byte ones (N 216) spilled with a fused chain (gemmtune::sm90::config_reason).
constexpr int epi_narrow_bytes(int row_bytes) {
  if (row_bytes % 128 == 0) return 128;
  if (row_bytes % 64 == 0) return 64;
  if (row_bytes % 32 == 0) return 32;
  for (int b = 112; b >= 16; b -= 16)
    if (row_bytes % b == 0) return b;
  return 0;
}

// The widest unswizzled strip: a divisor of the row of 16 x (odd) bytes, at most 256 bytes; 0 if none. 16-bit D only:
// a strip holds whole 8-column fragment groups, which for f32 takes a multiple of 32 bytes.
constexpr int epi_wide_bytes(int row_bytes, int out_size = 2) {
  if (out_size != 2) return 0;
  int best = 0;
  for (int b = 16; b <= 256 && b <= row_bytes; b += 32)  // 16 x odd
    if (row_bytes % b == 0) best = b;
  return best;
}

constexpr int kSmemPerBlock = 232448;  // sm_90: 227 KB of opt-in shared memory per block

// Dynamic tile order: a ring of kTileSlots tile indices with full/empty barriers (8 + 8 + 4 bytes per slot).
constexpr int kTileSlots = 4;

// Shared memory of a kernel besides its epilogue strip buffers: the stage ring (`stage_bytes` per stage, a block
// scaled kernel's scale slot included), a full and an empty barrier per stage plus the two ping-pong order barriers,
// the dynamic order's tile slots, and the slack for the 1024-byte aligned base; a grouped kernel's tile prefix
// (scheduler/group_tiles.cuh: kMaxGroups + 1 ints).
inline constexpr int kMaxGroups = 1024;
constexpr int smem_fixed_bytes(int stages, int stage_bytes, bool dynamic, bool grouped = false) {
  return stages * stage_bytes + 16 * stages + 16 + (dynamic ? 20 * kTileSlots : 0) +
         (grouped ? 4 * (kMaxGroups + 1) : 0) + 1024;
}

// The strip width a kernel uses, given the shared memory the rest of its plan takes (`fixed`: the stage ring, the
// barriers, the alignment slack): the narrow strip when it is 64 or 128 bytes; otherwise the wide unswizzled strip
// when it is wider and one buffer of it per consumer warpgroup fits (two when they fit, epi_buffers).
// NOTES: 32-byte strips made the epilogue the bottleneck of short-K problems: at 8192x6144x256 ping-pong 128x176 2x1
// (22 strips of 32 bytes per tile) took 64 us and 128x144 (18) 67 us, against 50-54 us for 128x192 / 128x128 / 128x160
// (6 / 4 / 10 strips of 128 / 128 / 64 bytes) and cuBLAS's 176x128 48 us (docs/PERFORMANCE.md). A ring of up to 8
// 32-byte buffers did not help (more stores in flight, slower); 176-byte strips make it 4 strips per tile. The first
// version also gave f32 D (168 columns: 672-byte rows) 112-byte strips: 28 columns, not whole 8-column groups, wrong
// results (GPU tests).
constexpr int epi_strip_bytes(int row_bytes, int out_size, int fixed) {
  const int n = epi_narrow_bytes(row_bytes);
  if (n >= 64) return n;
  const int w = epi_wide_bytes(row_bytes, out_size);
  return w > n && fixed + 2 * 64 * w <= kSmemPerBlock ? w : n;
}

// Strip buffers per consumer warpgroup: two (a store overlaps filling the next strip), or one for a wide strip when
// two do not fit beside the stage ring.
constexpr int epi_buffers(int row_bytes, int out_size, int fixed) {
  const int s = epi_strip_bytes(row_bytes, out_size, fixed);
  return s != epi_narrow_bytes(row_bytes) && fixed + 2 * 2 * 64 * s > kSmemPerBlock ? 1 : 2;
}

// epi=warp strips: each warp stores its 16 rows of a 64-row slab in pieces of 128-byte strips (the 128-byte swizzle),
// then the rest of the row (row_bytes % 128) as one tail strip with a D tensor map of its own, so that every store
// starts and ends on a 32-byte sector of the tile row (a row shorter than 128 bytes is one strip). Two buffers per
// warp, 1024-byte aligned: of 16 rows (one store per strip and slab) when their 32 KB fit beside the stage ring, else
// of 8 rows (two stores, 16 KB).
// NOTES (docs/PERFORMANCE.md, H200, ping-pong 128x176 2x1 side by side with cuBLASLt's 176x128): the warpgroup
// form's 176-byte strips split each 352-byte tile row mid-sector between two stores, writing D's sectors 1.2 times
// over (ncu); 128 + 128 + 96-byte pieces (cuBLASLt's split) write them once. In 8-row pieces that was -0.4 to -0.6%
// at K = 1024, +0.3% at K = 512 (12 stores per warp and tile instead of 8); in 16-row pieces (6 stores) -0.6 to -1.1%
// at K = 512-1024 and -0.15% at K = 4096.
constexpr int epi_warp_strip_bytes(int row_bytes) { return row_bytes >= 128 ? 128 : row_bytes; }
constexpr int epi_warp_strips(int row_bytes) { return row_bytes >= 128 ? row_bytes / 128 : 1; }
constexpr int epi_warp_tail(int row_bytes) { return row_bytes >= 128 ? row_bytes % 128 : 0; }
constexpr int epi_warp_rows(int fixed) { return fixed + 2 * 4 * 2 * 16 * 128 <= kSmemPerBlock ? 16 : 8; }

// Rows of one epilogue TMA store, the D tensor map's box: a warpgroup's 64-row strip, or a warp's piece (epi=warp).
constexpr int epi_rows(bool warp_pieces, int fixed) { return warp_pieces ? epi_warp_rows(fixed) : 64; }

// Shared memory of one consumer warpgroup's strip buffers: two (or epi_buffers) 64-row strips, or with warp pieces
// two buffers of a piece's rows x 128 bytes per warp.
constexpr int epi_region_bytes(int row_bytes, int out_size, int fixed, bool warp_pieces) {
  return warp_pieces ? 4 * 2 * epi_warp_rows(fixed) * 128
                     : epi_buffers(row_bytes, out_size, fixed) * 64 * epi_strip_bytes(row_bytes, out_size, fixed);
}

// XOR mask of a strip's 16-byte chunk index (bits 4..6 of the offset) by the 128-byte row index: the TMA swizzle of
// 128/64/32-byte strips; 0 for the unswizzled ones.
constexpr unsigned epi_swizzle_mask(int strip_bytes) {
  return strip_bytes == 128 || strip_bytes == 64 || strip_bytes == 32 ? static_cast<unsigned>(strip_bytes / 16 - 1)
                                                                        : 0u;
}

// A strip width the epilogue can stage: whole 8-column fragment groups, and either a TMA swizzle width (32/64/128
// bytes) or 16 x (odd) bytes (unswizzled, free of bank conflicts: see epi_narrow_bytes).
constexpr bool epi_strip_ok(int strip_bytes, int out_size) {
  return (strip_bytes / out_size) % 8 == 0 && (epi_swizzle_mask(strip_bytes) != 0 || (strip_bytes / 16) % 2 == 1);
}

// Rows of one K-major operand part when `rows` tile rows are split among `parts` CTAs of a cluster (each multicasts
// its part): whole 8-row swizzle atoms, so tile N 168 on two CTAs loads two 88-row parts, the last 8 rows landing in
// padding that no wgmma reads.
constexpr int operand_part_rows(int rows, int parts) { return (rows / parts + 7) / 8 * 8; }

// ---- Stream-K units (the scheme: kernels/sm90/sm90_tile_stream.cuh) ----
// One piece of work: k-blocks [k0, k1) of cluster tile t (t >= total: past the end), starting at running ring
// position `pos` of this cluster (the k-blocks of its earlier units). kind: kWhole, kHead (writes its partial to slot
// `slot`) or kTail (adds the partials of slots slot, slot - 1, ..., slot - parts + 1, then stores).
enum : int { kWhole = 0, kHead = 1, kTail = 2 };
struct Unit {
  int t, k0, k1;
  unsigned pos;
  int kind, slot;
  int parts = 1;
};

// Whether the stream-K units replace the plain walk for a grid of `clusters` clusters: a partial last round (or,
// with fewer tiles than clusters, the whole problem split), from unit rounds - 1 on. Split mode needs at least one
// k-block per cluster (no empty share: a tail waits for a partial from every cluster between it and its tile's start);
// the host's grid gives each at least 8 (src/backends/sm90/sm90_plan.h sk_clusters).
constexpr bool sk_runs(int total, int clusters, int k_iters) {
  return clusters > 0 && total % clusters != 0 &&
         (total > clusters || static_cast<long long>(total) * k_iters >= clusters);
}

// Unit j of cluster c0 (its rank in blockIdx order) among `stride` clusters when sk_runs and j >= total / stride - 1.
// Every share holds at least one k-block (sk_runs), so every cluster between a tail and its tile's start wrote a
// partial of that tile.
// Integer math only: the producer, the consumers and the host's tests derive the same units.
constexpr Unit sk_unit(int total, int stride, unsigned c0, int k_iters, int j) {
  const int rounds = total / stride, r = total - rounds * stride;
  const int n_dp = rounds > 0 ? rounds - 1 : 0, base = n_dp * stride;
  // Share boundaries c * W / C in 32-bit math: W = q * C + rem with q = K + r * K / C (R >= 1; r * K / C when R = 0),
  // rem = r * K % C, so c * W / C = c * q + c * rem / C (c * rem < C^2; shares < 2 * C * K k-blocks: the host passes
  // no scratch, so the plain walk runs, when that does not fit 32 bits).
  const unsigned kk = static_cast<unsigned>(k_iters), cc = static_cast<unsigned>(stride);
  const unsigned rk = static_cast<unsigned>(r) * kk, q = (rounds > 0 ? kk : 0u) + rk / cc, rem = rk % cc;
  const unsigned s = c0 * q + c0 * rem / cc, e = (c0 + 1) * q + (c0 + 1) * rem / cc;
  int i = j - n_dp;
  unsigned pos = static_cast<unsigned>(n_dp) * kk;
  const int ta = static_cast<int>(s / kk), x = static_cast<int>(s % kk);
  const int tb = static_cast<int>((e - 1) / kk), y = static_cast<int>(e - static_cast<unsigned>(tb) * kk);
  // A tail adds the partials of the clusters c_first .. c0 - 1 that hold the tile's earlier k-blocks; c_first is the
  // last cluster whose share starts at or before the tile's k-block 0 (P = ta * K). Found by stepping back from c0 - 1
  // (one step when shares are >= K, R >= 1; about K / share steps in split mode), only for a tail: computed for every
  // unit, the 64-bit form ((P + 1) * C - 1) / W cost a ping-pong 128x176 kernel 48 bytes of spills.
  const auto tail_parts = [&] {
    const unsigned pk = static_cast<unsigned>(ta) * kk;
    unsigned c = c0 - 1;
    while (c * q + c * rem / cc > pk) --c;
    return static_cast<int>(c0 - c);
  };
  if (ta == tb) {  // one piece [x, y) of one tile (split mode): a partial, a tail, or the whole tile
    if (i != 0) return {total, 0, 0, pos + static_cast<unsigned>(y - x), kWhole, 0};
    if (y < k_iters) return {base + ta, x, y, pos, kHead, static_cast<int>(c0)};
    if (x == 0) return {base + ta, 0, k_iters, pos, kWhole, 0};
    return {base + ta, x, k_iters, pos, kTail, static_cast<int>(c0) - 1, tail_parts()};
  }
  // A cluster runs its head unit (a partial of tile tb) first and its tail unit (of tile ta) last, so a tail finds
  // the partials it adds long written: they are the first units of clusters dispatched before it.
  if (y < k_iters) {
    if (i == 0) return {base + tb, 0, y, pos, kHead, static_cast<int>(c0)};
    --i;
    pos += static_cast<unsigned>(y);
  }
  const int f0 = x > 0 ? ta + 1 : ta, nf = (y < k_iters ? tb - 1 : tb) - f0 + 1;  // whole tiles [f0, f0 + nf)
  if (i < nf) return {base + f0 + i, 0, k_iters, pos + static_cast<unsigned>(i) * kk, kWhole, 0};
  i -= nf;
  pos += static_cast<unsigned>(nf) * kk;
  if (x > 0 && i == 0) return {base + ta, x, k_iters, pos, kTail, static_cast<int>(c0) - 1, tail_parts()};
  return {total, 0, 0, pos, kWhole, 0};
}

}  // namespace gt_sm90
