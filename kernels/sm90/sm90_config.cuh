#pragma once
// The sm90 kernels' compile-time configuration: a view of the plan derived once from the spec (sm90/sm90_spec.cuh,
// which the host reads too), with the device-side checks, and the shared-memory addresses of that plan.
#include "ptx/ptx.cuh"
#include "ptx/wgmma.cuh"
#include "sm90/sm90_spec.cuh"

namespace gt_sm90 {

// The fp8 wgmma wrappers (ptx/wgmma_f8.cuh): an fp8 JIT unit includes them, a 16-bit one does not parse them.
template <int N, int A, int B>
struct WgmmaF8;

// A or B by a compile-time flag (no <type_traits> under NVRTC's light includes).
template <bool C, class A, class B>
struct Select {
  using T = A;
};
template <class A, class B>
struct Select<false, A, B> {
  using T = B;
};

template <Spec S>
struct GemmConfig {
  static_assert(spec_error(S) == nullptr, "not a valid sm90 Spec: gt_sm90::spec_error(S) names the broken rule");
  static constexpr Plan P = derive(S);
  static constexpr int BM = S.bm, BN = S.bn, BK = P.bk, STAGES = S.stages;
  static constexpr int CM = S.cm, CN = S.cn, CS = S.cm * S.cn;
  static constexpr bool A_MN = S.a_mn, B_MN = S.b_mn, F16 = S.in == kF16, HAS_C = S.has_c, PINGPONG = S.pingpong;
  static constexpr int OUT = S.out, CT = S.ct;
  // Tile order: static (cluster c takes tiles c, c + clusters, ...) or dynamic (taken from a global counter as the
  // clusters need them; see sm90/sm90_tile_stream.cuh).
  static constexpr bool DYNAMIC = S.dynamic;
  // Static order with a stream-K tail: the last round and a half of tiles is shared out evenly by k-blocks (see
  // sm90/sm90_tile_stream.cuh).
  static constexpr bool SK = S.sk;

  // load=cp (sm90_cp_loader.cuh): A and/or B through cp.async pieces of CP_A / CP_B bytes (0: by TMA), all producer
  // threads loading; kTmaBytes: what TMA brings into a stage.
  static constexpr bool CP = P.cp;
  static constexpr int CP_A = S.cp_a, CP_B = S.cp_b, kTmaBytes = P.tma_bytes;

  static constexpr int kThreads = 384;  // producer warpgroup + 2 consumer warpgroups
  static constexpr int kProducerRegs = 40, kConsumerRegs = 232;
  static constexpr int WM = P.wm, kSlabs = P.slabs, kAccRegs = P.acc_regs;

  // fp8: a stage row holds 128 K-elements (BK = 128) and each k32 wgmma steps 32 bytes, as a k16 step of 16-bit
  // elements does, so the ring, descriptors and TMA boxes are those of the 16-bit kernel, in bytes.
  static constexpr bool FP8 = gt::dtype_code_fp8(S.in);
  static constexpr int IN_A = S.in, IN_B = S.in_b != 0 ? S.in_b : S.in;
  static constexpr int SCALE = S.scale;
  static constexpr int GROUPED = S.grouped;  // 0 none, 1 contiguous, 2 masked (scheduler/group_tiles.cuh)
  static constexpr bool PROMOTE = S.promote;
  using Mma = typename Select<FP8, WgmmaF8<BN, IN_A, IN_B>, Wgmma<BN, F16>>::T;

  static constexpr int kAParts = P.a_parts, kBParts = P.b_parts;
  static constexpr int kABoxRows = P.a_box_rows, kBBoxRows = P.b_box_rows, kBRows = P.b_rows;
  static constexpr int kABytes = P.a_bytes, kBBytes = P.b_bytes, kStageBytes = P.stage_bytes;
  static_assert(kABoxRows % 8 == 0 && kBBoxRows % 8 == 0, "multicast parts must be whole 8-row swizzle atoms");

  static constexpr int kTileSlots = gt_sm90::kTileSlots;
  static constexpr int kFixedBytes = P.fixed_bytes;

  // Who stores a strip (config "epi=warp"): the consumer warpgroup, 64 rows per TMA store, or each warp its own 16
  // rows of a slab (in two 8-row stores where 16-row buffers do not fit: sm90_shape.cuh, epi_warp_rows) from two
  // buffers of its own, with no warpgroup barrier (epilogue_tma_store.cuh: strip_begin).
  static constexpr bool kEpiWarp = S.epi_warp;
  static constexpr int kEpiRows = P.epi_rows, kEpiPieces = P.epi_pieces;
  static constexpr bool kEpiHalf = P.epi_half;
  static constexpr int kEpiWarpBufBytes = P.epi_warp_buf_bytes, kEpiOwnerThreads = P.epi_owner_threads;

  // Epilogue: 64-row x kEpiBytes column strips staged in shared memory (swizzled to match the D tensor map) and
  // written by TMA, kEpiBufs buffers per consumer warpgroup (sm90/sm90_shape.cuh: epi_strip_bytes, epi_buffers).
  static constexpr int kOutSize = P.out_size;
  static constexpr int kEpiBytes = P.epi_bytes, kEpiBufs = P.epi_bufs, kEpiBufBytes = P.epi_buf_bytes;
  static_assert(kEpiWarp || epi_strip_ok(kEpiBytes, kOutSize),
                "tile N must split into 32/64/128-byte (swizzled) or 16 x (odd)-byte (unswizzled) epilogue strips");
  static constexpr int kEpiStripBytes = P.epi_strip_bytes, kEpiStrips = P.epi_strips;
  static constexpr int kEpiTailBytes = P.epi_tail_bytes;
  static_assert(kEpiTailBytes % 16 == 0 && (kEpiTailBytes / kOutSize) % 8 == 0, "strips hold whole 8-column groups");
  static constexpr int kEpiRegionBytes = P.epi_region_bytes;  // one consumer warpgroup's strip buffers

  static constexpr int kEpiOffset = P.epi_offset, kBarOffset = P.bar_offset, kTileOffset = P.tile_offset;
  // Block scaling (sm90_scale_loader.cuh): B scale blocks per tile, one scale slot per stage.
  static constexpr int kScaleNB = P.scale_nb, kScaleOffset = P.scale_offset, kScaleSlotBytes = P.scale_slot_bytes;
  static constexpr int kSmemBytes = P.smem_bytes;
  static_assert(kSmemBytes <= kSmemPerBlock, "shared memory plan exceeds 227 KB: use fewer stages or a smaller tile");
  static_assert(kEpiOffset % 1024 == 0 && kEpiRegionBytes % 1024 == 0 || !kEpiWarp,
                "warp strip buffers must be 1024-byte aligned (the 128-byte swizzle)");

  // See release_stage.
  static constexpr int kLoadPeers = P.load_peers, kEmptyArrivals = P.empty_arrivals;
  static constexpr int kFullArrivals = P.full_arrivals;
};

// The named barrier of the calling consumer warpgroup (1 or 2: warpgroup 0 is the producer; barrier 0 is
// __syncthreads): the epilogue strips and the stream-K partials sync its 128 threads on it.
__device__ __forceinline__ int consumer_bar() { return static_cast<int>(threadIdx.x / 128); }

// A ring position as (stage, phase parity); `at` converts an absolute k-block position once per tile.
template <int STAGES>
struct RingPos {
  int s = 0;
  unsigned ph = 0;
  __device__ __forceinline__ static RingPos at(unsigned pos) {
    RingPos r;
    r.s = static_cast<int>(pos % STAGES);
    r.ph = (pos / STAGES) & 1u;
    return r;
  }
  __device__ __forceinline__ void next() {
    if (++s == STAGES) {
      s = 0;
      ph ^= 1u;
    }
  }
};

// Addresses (shared::cta window) of the pieces of the plan, from a 1024-byte aligned base.
template <class Cfg>
struct SmemPlan {
  unsigned base;
  __device__ __forceinline__ explicit SmemPlan(const void* raw) : base((smem_u32(raw) + 1023u) & ~1023u) {}
  __device__ __forceinline__ unsigned a(int s) const { return base + s * Cfg::kStageBytes; }
  __device__ __forceinline__ unsigned b(int s) const { return base + s * Cfg::kStageBytes + Cfg::kABytes; }
  // Block scaling: stage s's scale slot (sm90_scale_loader.cuh).
  __device__ __forceinline__ unsigned scales(int s) const { return base + Cfg::kScaleOffset + s * Cfg::kScaleSlotBytes; }
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
  // Grouped kernels only: the tile prefix (scheduler/group_tiles.cuh), kMaxGroups + 1 ints.
  __device__ __forceinline__ unsigned group_prefix() const { return base + Cfg::kTileOffset; }
};

}  // namespace gt_sm90
