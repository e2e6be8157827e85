#pragma once
// Compile-time configuration of the sm90 GEMM kernels and the shared-memory plan that follows from it.
// Kernel view of the problem (the host rewrites col-major D as the transposed problem first):
//   D (M x N, row-major) = alpha * A (M x K) * B (K x N) + beta * C,  per batch b.
//   A is K-major (row-major A) or M-major (A_MN); B is K-major (col-major B) or N-major (B_MN).
#include "ptx/ptx.cuh"
#include "sm90/sm90_shape.cuh"

namespace gt_sm90 {

enum : int { kBF16 = 0, kF16 = 1, kF32 = 2 };

// Run-time arguments besides the tensor maps. Mirrored on the host (src/backends/sm90/sm90_plan.h).
struct GemmParams {
  int m, n, k, batch;
  float alpha, beta;
  const void* c;        // C (m, n) of batch b at c + (b * c_batch + m * ldc_m + n * ldc_n) elements
  long long ldc_m, ldc_n, c_batch;
  void* d;              // D (m, n) of batch b at d + (b * d_batch + m * ldd + n) elements (edge strips only)
  long long ldd, d_batch;
  int* tiles;           // dynamic tile order: {next, done} counters, zero between launches (sm90/sm90_tile_stream.cuh)
  const int* order;     // static order, optional: cluster blockIdx.x / CS walks as cluster order[blockIdx.x / CS]
  int raster_n, group;  // the tile walk (scheduler/tile_scheduler.cuh): bands of tile rows (0) or columns (1)
  float* sk_ws;         // stream-K tail (Cfg::SK): partial accumulators, one slot per cluster boundary, or null (off)
  int* sk_flags;        // one per slot and part: 1 = partial written, 0 = consumed (zero between launches)
};

template <int BM_, int BN_, int STAGES_, int CM_, int CN_, bool A_MN_, bool B_MN_, bool F16_, int OUT_, int CT_,
          bool HAS_C_, bool PINGPONG_, bool DYNAMIC_ = false, bool SK_ = false, bool EPI_WARP_ = false>
struct GemmConfig {
  static constexpr int BM = BM_, BN = BN_, BK = 64, STAGES = STAGES_;
  static constexpr int CM = CM_, CN = CN_, CS = CM_ * CN_;
  static constexpr bool A_MN = A_MN_, B_MN = B_MN_, F16 = F16_, HAS_C = HAS_C_, PINGPONG = PINGPONG_;
  static constexpr int OUT = OUT_, CT = CT_;
  // Tile order: static (cluster c takes tiles c, c + clusters, ...) or dynamic (taken from a global counter as the
  // clusters need them; see sm90/sm90_tile_stream.cuh).
  static constexpr bool DYNAMIC = DYNAMIC_;
  // Static order with a stream-K tail: the last round and a half of tiles is shared out evenly by k-blocks (see
  // sm90/sm90_tile_stream.cuh).
  static constexpr bool SK = SK_;
  static_assert(!(SK && DYNAMIC), "the stream-K tail needs the static tile order");

  static constexpr int kThreads = 384;  // producer warpgroup + 2 consumer warpgroups
  static constexpr int kProducerRegs = 40, kConsumerRegs = 232;
  // Rows of the tile one consumer warpgroup computes: half the tile (cooperative) or all of it (ping-pong).
  static constexpr int WM = PINGPONG ? BM : BM / 2;
  static constexpr int kSlabs = WM / 64;  // m64 wgmma rows per consumer
  static constexpr int kAccRegs = kSlabs * BN / 2;

  static_assert(BM == 64 || BM == 128 || BM == 256, "tile M must be 64, 128 or 256");
  static_assert(WM % 64 == 0 && WM >= 64, "each consumer warpgroup needs a multiple of 64 rows (coop: tile M >= 128)");
  static_assert(BN % 8 == 0 && BN >= 16 && BN <= 256, "tile N must be a multiple of 8 in [16, 256]");
  static_assert(!B_MN || BN % 64 == 0, "N-major B needs tile N a multiple of 64 (128-byte swizzle atoms)");
  static_assert(STAGES >= 2 && STAGES <= 16, "stages must be in [2, 16]");
  static_assert(CS == 1 || CS == 2 || (CM == 2 && CN == 2), "cluster must be 1x1, 2x1, 1x2 or 2x2");
  static_assert(kAccRegs <= 192, "accumulators exceed the register budget of a consumer warpgroup");
  static_assert(OUT >= 0 && OUT <= 2 && CT >= 0 && CT <= 2, "bad output / C dtype");

  // TMA boxes. K-major: {64 K, rows}; MN-major: {64 M/N, 64 K}, one box per 64-wide chunk. With a cluster the
  // shared operand's boxes are split by rows among the CTAs, each multicasting its part to all of them. A K-major
  // B part is a whole number of 8-row swizzle atoms (operand_part_rows): the last 8 rows of tile N 168 on two CTAs
  // along M (the next tile's columns, or TMA's zero fill) land in padding.
  static constexpr int kAParts = CN, kBParts = CM;
  static constexpr int kABoxRows = (A_MN ? 64 : BM) / kAParts;
  static constexpr int kBBoxRows = B_MN ? 64 / kBParts : operand_part_rows(BN, kBParts);
  static constexpr int kBRows = B_MN ? BN : kBBoxRows * kBParts;  // B rows in shared memory (>= BN)
  // Shared memory per stage: A tile then B tile, each 64 K-elements (128 bytes) per row, 128-byte swizzled.
  static constexpr int kABytes = BM * 128, kBBytes = kBRows * 128, kStageBytes = kABytes + kBBytes;
  static_assert(kABoxRows % 8 == 0 && kBBoxRows % 8 == 0, "multicast parts must be whole 8-row swizzle atoms");

  static constexpr int kTileSlots = gt_sm90::kTileSlots;
  // Shared memory besides the epilogue buffers (sm90/sm90_shape.cuh, shared with the host plan).
  static constexpr int kFixedBytes = smem_fixed_bytes(STAGES, kStageBytes, DYNAMIC);

  // Who stores a strip (config "epi=warp"): the consumer warpgroup, 64 rows per TMA store, or each warp its own 16
  // rows of a slab (in two 8-row stores where 16-row buffers do not fit: sm90_shape.cuh, epi_warp_rows) from two
  // buffers of its own, with no warpgroup barrier (epilogue_tma_store.cuh: strip_begin).
  static constexpr bool kEpiWarp = EPI_WARP_;
  static constexpr int kEpiRows = epi_rows(kEpiWarp, kFixedBytes);  // rows of one TMA store: the D map's box
  static constexpr int kEpiPieces = kEpiWarp ? 16 / kEpiRows : 1;  // stores per 64-row slab and column strip, per owner
  static constexpr bool kEpiHalf = kEpiWarp && kEpiRows == 8;      // a warp's piece is one half of its 16 rows
  static constexpr int kEpiWarpBufBytes = kEpiRows * 128;          // one of a warp's two buffers
  static constexpr int kEpiOwnerThreads = kEpiWarp ? 32 : 128;     // the threads that stage and store one strip

  // Epilogue: 64-row x kEpiBytes column strips staged in shared memory (swizzled to match the D tensor map) and
  // written by TMA, kEpiBufs buffers per consumer warpgroup (sm90/sm90_shape.cuh: epi_strip_bytes, epi_buffers).
  static constexpr int kOutSize = OUT == kF32 ? 4 : 2;
  static constexpr int kEpiBytes = epi_strip_bytes(BN * kOutSize, kOutSize, kFixedBytes);
  static constexpr int kEpiBufs = epi_buffers(BN * kOutSize, kOutSize, kFixedBytes);
  static constexpr int kEpiBufBytes = 64 * kEpiBytes;
  static_assert(kEpiWarp || epi_strip_ok(kEpiBytes, kOutSize),
                "tile N must split into 32/64/128-byte (swizzled) or 16 x (odd)-byte (unswizzled) epilogue strips");
  // The strips of a 64-row slab as stored: kEpiStrips of kEpiStripBytes (through the D map), then, with warp pieces,
  // a tail strip of kEpiTailBytes (through the tail D map; 0: none): 128-byte strips and the rest of the row
  // (sm90_shape.cuh: epi_warp_strips).
  static constexpr int kEpiStripBytes = kEpiWarp ? epi_warp_strip_bytes(BN * kOutSize) : kEpiBytes;
  static constexpr int kEpiStrips = kEpiWarp ? epi_warp_strips(BN * kOutSize) : BN * kOutSize / kEpiBytes;
  static constexpr int kEpiTailBytes = kEpiWarp ? epi_warp_tail(BN * kOutSize) : 0;
  static_assert(kEpiTailBytes % 16 == 0 && (kEpiTailBytes / kOutSize) % 8 == 0, "strips hold whole 8-column groups");
  // One consumer warpgroup's strip buffers (SmemPlan::epi).
  static constexpr int kEpiRegionBytes = epi_region_bytes(BN * kOutSize, kOutSize, kFixedBytes, kEpiWarp);

  static constexpr int kEpiOffset = STAGES * kStageBytes;
  static constexpr int kBarOffset = kEpiOffset + 2 * kEpiRegionBytes;
  static constexpr int kTileOffset = kBarOffset + 16 * STAGES + 16;
  static constexpr int kSmemBytes = kFixedBytes + 2 * kEpiRegionBytes;
  static_assert(kSmemBytes <= kSmemPerBlock, "shared memory plan exceeds 227 KB: use fewer stages or a smaller tile");
  static_assert(kEpiOffset % 1024 == 0 && kEpiRegionBytes % 1024 == 0 || !kEpiWarp,
                "warp strip buffers must be 1024-byte aligned (the 128-byte swizzle)");

  // Arrivals that free a stage: one per consumer warpgroup of every CTA that loads into this CTA's stages (its
  // cluster row and column, itself included: CM + CN - 1 CTAs). See release_stage.
  static constexpr int kLoadPeers = CM + CN - 1;
  static constexpr int kEmptyArrivals = (PINGPONG ? 1 : 2) * kLoadPeers;
};

// The named barrier of the calling consumer warpgroup (1 or 2: warpgroup 0 is the producer; barrier 0 is
// __syncthreads): the epilogue strips and the stream-K partials sync its 128 threads on it.
__device__ __forceinline__ int consumer_bar() { return static_cast<int>(threadIdx.x / 128); }

// Addresses (shared::cta window) of the pieces of the plan, from a 1024-byte aligned base.
template <class Cfg>
struct SmemPlan {
  unsigned base;
  __device__ __forceinline__ explicit SmemPlan(const void* raw) : base((smem_u32(raw) + 1023u) & ~1023u) {}
  __device__ __forceinline__ unsigned a(int s) const { return base + s * Cfg::kStageBytes; }
  __device__ __forceinline__ unsigned b(int s) const { return base + s * Cfg::kStageBytes + Cfg::kABytes; }
  // Strip buffers of consumer warpgroup wg (epilogue_tma_store.cuh: epi_buf).
  __device__ __forceinline__ unsigned epi(int wg) const { return base + Cfg::kEpiOffset + wg * Cfg::kEpiRegionBytes; }
  __device__ __forceinline__ unsigned full(int s) const { return base + Cfg::kBarOffset + 8 * s; }
  __device__ __forceinline__ unsigned empty(int s) const { return base + Cfg::kBarOffset + 8 * (Cfg::STAGES + s); }
  // Ping-pong only: consumer c finished the mainloop of its latest tile.
  __device__ __forceinline__ unsigned mma_done(int c) const { return base + Cfg::kBarOffset + 8 * (2 * Cfg::STAGES + c); }
  // Dynamic tile order only: slot i of the tile ring.
  __device__ __forceinline__ unsigned tile_full(int i) const { return base + Cfg::kTileOffset + 8 * i; }
  __device__ __forceinline__ unsigned tile_empty(int i) const {
    return base + Cfg::kTileOffset + 8 * (Cfg::kTileSlots + i);
  }
  __device__ __forceinline__ unsigned tile_slot(int i) const {
    return base + Cfg::kTileOffset + 16 * Cfg::kTileSlots + 4 * i;
  }
};

}  // namespace gt_sm90
