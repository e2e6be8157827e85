#pragma once
// Shape arithmetic of the sm90 kernels that the host plan needs too: constexpr, no device code, so both NVRTC (the
// kernels) and the host compiler (src/backends/sm90/sm90_plan.h) include this one file.

namespace gt_sm90 {

// Epilogue strip width (bytes of a D row per staged strip) for output rows of `row_bytes`: 128, 64 or 32 when it
// divides the row (the strip is then swizzled like the D tensor map, 128/64/32-byte swizzle), else the widest divisor
// that is a multiple of 16 bytes and below 128 (no swizzle): tile N = 168 with a 16-bit D makes 336-byte rows and
// three 112-byte strips. 0 when the row is not a multiple of 16 bytes.
// NOTES: an unswizzled 112-byte strip is still free of bank conflicts for the fragment's stores: the 8 rows one warp
// writes start 28 words apart, distinct multiples of 4 modulo 32. The host accepts only 112-byte unswizzled strips
// (tile N 168): 48-byte ones (N 216) spilled with a fused chain (gemmtune::sm90::config_reason).
constexpr int epi_strip_bytes(int row_bytes) {
  if (row_bytes % 128 == 0) return 128;
  if (row_bytes % 64 == 0) return 64;
  if (row_bytes % 32 == 0) return 32;
  for (int b = 112; b >= 16; b -= 16)
    if (row_bytes % b == 0) return b;
  return 0;
}

// XOR mask of a strip's 16-byte chunk index (bits 4..6 of the offset) by the 128-byte row index: the TMA swizzle of
// 128/64/32-byte strips; 0 for the unswizzled ones.
constexpr unsigned epi_swizzle_mask(int strip_bytes) {
  return strip_bytes == 128 || strip_bytes == 64 || strip_bytes == 32 ? static_cast<unsigned>(strip_bytes / 16 - 1)
                                                                        : 0u;
}

// Rows of one K-major operand part when `rows` tile rows are split among `parts` CTAs of a cluster (each multicasts
// its part): whole 8-row swizzle atoms, so tile N 168 on two CTAs loads two 88-row parts, the last 8 rows landing in
// padding that no wgmma reads.
constexpr int operand_part_rows(int rows, int parts) { return (rows / parts + 7) / 8 * 8; }

}  // namespace gt_sm90
