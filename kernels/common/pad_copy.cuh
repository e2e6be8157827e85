#pragma once
// Pad-and-run's copy (src/backends/pad): one operand, a strided 2-D matrix (x batch) of 2- or 4-byte elements, into a
// packed workspace whose pitch is a multiple of 16 bytes, which kernels that load 16 bytes at a time (TMA) and
// cuBLASLt's aligned algorithms can read. Memory-bound: each thread writes one 16-byte chunk of a line with one 16-byte
// store and reads it with the widest loads that the alignment of every line start allows (LB bytes).
//
// Launch: kPadCopyThreads threads a block, 2^lane_bits of them along a line's chunks and the rest on further lines;
// grid x: groups of lines, y: groups of chunks, z: batches (y and z stride, so any grid covers the matrix).
//
// NOTES:
// - The chunk that holds a line's end is written whole: its elements past `inner` become zeros. The GEMMs that read
//   the copy never depend on them (TMA boxes stop at the logical K/M/N and fill zeros past it; cuBLASLt reads only
//   the logical matrix), so those zeros are a by-product of the 16-byte store, not a fill the readers need.
// - Loads narrower than 16 bytes keep L1 allocation: the 16 / LB loads of a warp's chunks read the same sectors, which
//   L1 serves after the first; 16-byte loads stream past L1 (each byte is read once).
#include "common/pad_copy_params.cuh"

namespace gt_pad {

struct alignas(16) Chunk {
  unsigned w[4];
};

__device__ __forceinline__ unsigned ld_u16(const char* p) {
  unsigned short h;
  asm("ld.global.nc.u16 %0, [%1];" : "=h"(h) : "l"(p));
  return h;
}
__device__ __forceinline__ unsigned ld_u32(const char* p) {
  unsigned w;
  asm("ld.global.nc.u32 %0, [%1];" : "=r"(w) : "l"(p));
  return w;
}

// The 16 bytes at p (p a multiple of LB) into w, in loads of LB bytes.
template <int LB>
__device__ __forceinline__ void load_chunk(const char* p, unsigned (&w)[4]) {
  if constexpr (LB == 16) {
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
        : "l"(p));
  } else if constexpr (LB == 8) {
#pragma unroll
    for (int j = 0; j < 2; ++j)
      asm("ld.global.nc.v2.u32 {%0, %1}, [%2];" : "=r"(w[2 * j]), "=r"(w[2 * j + 1]) : "l"(p + 8 * j));
  } else if constexpr (LB == 4) {
#pragma unroll
    for (int j = 0; j < 4; ++j) w[j] = ld_u32(p + 4 * j);
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j) w[j] = ld_u16(p + 4 * j) | (ld_u16(p + 4 * j + 2) << 16);
  }
}

// The first `n` (< 16 / ES) elements at p into w, element by element; the rest of w zero.
template <int ES>
__device__ __forceinline__ void load_part(const char* p, long long n, unsigned (&w)[4]) {
#pragma unroll
  for (int j = 0; j < 4; ++j) w[j] = 0;
#pragma unroll
  for (int e = 0; e < 16 / ES; ++e) {
    if (e < n) {
      if constexpr (ES == 4)
        w[e] = ld_u32(p + 4 * e);
      else
        w[e / 2] |= ld_u16(p + 2 * e) << (16 * (e % 2));
    }
  }
}

// ES: bytes of an element (2 or 4). LB: bytes of a source load, the largest power of two up to 16 that divides the
// source pointer, its pitch and its batch stride in bytes.
template <int ES, int LB>
__device__ __forceinline__ void pad_copy(const PadCopyParams& p) {
  static_assert(ES == 2 || ES == 4, "pad_copy: elements of 2 or 4 bytes");
  static_assert((LB == 2 || LB == 4 || LB == 8 || LB == 16) && LB >= ES,
                "pad_copy: loads of 2, 4, 8 or 16 bytes, at least one element");
  constexpr int V = 16 / ES;  // elements of a chunk
  const int lanes = 1 << p.lane_bits;
  const long long line =
      static_cast<long long>(blockIdx.x) * (blockDim.x >> p.lane_bits) + (threadIdx.x >> p.lane_bits);
  if (line >= p.lines) return;
  const long long c0 = static_cast<long long>(blockIdx.y) * lanes + (threadIdx.x & (lanes - 1));
  const long long c_step = static_cast<long long>(gridDim.y) * lanes;
  for (long long b = blockIdx.z; b < p.batch; b += gridDim.z) {
    const char* src = static_cast<const char*>(p.src) + (b * p.src_bs + line * p.src_ld) * ES;
    char* dst = static_cast<char*>(p.dst) + (b * p.dst_bs + line * p.dst_ld) * ES;
    for (long long c = c0; c < p.chunks; c += c_step) {
      const long long e0 = c * V;
      Chunk out;
      if (e0 + V <= p.inner)
        load_chunk<LB>(src + e0 * ES, out.w);
      else
        load_part<ES>(src + e0 * ES, p.inner - e0, out.w);
      *reinterpret_cast<Chunk*>(dst + e0 * ES) = out;
    }
  }
}

}  // namespace gt_pad
