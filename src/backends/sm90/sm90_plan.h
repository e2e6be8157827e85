#pragma once
// Host side of one sm90 GEMM launch, header-only and free of gemmtune types:
//   - the kernel view: col-major D is solved as the transposed problem Dᵀ = Bᵀ·Aᵀ (pure host rewrite);
//   - TMA tensor maps for A, B, D (3-D: inner, outer, batch) with the boxes and swizzles of the kernel's plan
//     (kernels/sm90/sm90_spec.cuh, the one derivation host and device read);
//   - the kernel's GemmParams (the same header's struct), passed by value to the kernel.
#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "sm90/sm90_spec.cuh"  // kernels/: the spec, plan and parameters the kernels use

namespace gemmtune::sm90 {

using gt::kBF16;
using gt::kF16;
using gt::kF32;
inline int elem_size(int t) { return gt::dtype_code_bytes(t); }

struct OperandDesc {
  int type = kBF16;
  bool row_major = true;
  int64_t ld = 0;            // elements
  int64_t batch_stride = 0;  // elements (ignored when batch == 1)
  int align = 16;            // bytes the base pointer is a multiple of (gemmtune::Operand::align)
  int access = 16;           // the widest access every row starts on (gemmtune::Problem::access_bytes): 16 for TMA,
                             // else the width of load=cp's cp.async pieces
};

// TMA can address the operand as it is: rows on 16 bytes, strides below its 2^40-byte limit.
inline bool tma_ok(const OperandDesc& o) {
  const int64_t es = gt::dtype_code_bytes(o.type);
  constexpr int64_t kMax = int64_t(1) << 40;
  return o.access == 16 && o.ld * es < kMax && o.batch_stride * es < kMax;
}

// The problem as the kernel sees it: D row-major; a_mn = A stored M-major (col-major), b_mn = B stored N-major.
struct KernelView {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  OperandDesc a, b, c, d;
  bool a_mn = false, b_mn = false;
  bool transposed = false;  // A/B pointers swapped (col-major D, or row-major D with swap)
  bool swap = false;        // the other orientation (config swap=1): D is column-major in the view, stored by
                            // EpilogueTransposedStore
  bool has_c = false;
  int scale = gt_sm90::kScaleNone;  // fp8: scale_a / scale_b are the view's row / column scales, swapped if transposed
  int grouped = 0;                  // grouped GEMM (never transposed): 1 contiguous, 2 masked
  int64_t groups = 1;
  // Matrices B holds: batch, or the groups of a contiguous grouped problem (whose A and D are one matrix).
  int64_t b_count() const { return grouped == 1 ? groups : batch; }
};

// The problem as the kernel computes it: D (m x n) = A (m x k) B (k x n) with a row-major D — for a col-major D the
// transposed problem. `u` is the problem as the user gave it (A: m x k, B: k x n, C/D: m x n; orientation fields
// unset). `swap` takes the other orientation (a row-major D solved transposed, a col-major one as it is): D is then
// column-major in the view.
inline KernelView orient(const KernelView& u, bool swap) {
  KernelView v = u;
  v.swap = swap;
  if (u.d.row_major == swap) {
    // X (r x c) row-major with ld == Xᵀ (c x r) col-major with ld: flip layouts, swap roles.
    v.transposed = true;
    v.m = u.n;
    v.n = u.m;
    v.a = u.b;
    v.a.row_major = !u.b.row_major;
    v.b = u.a;
    v.b.row_major = !u.a.row_major;
    v.c.row_major = !u.c.row_major;
  }
  v.d.row_major = !swap;
  v.a_mn = !v.a.row_major;  // A (m x k): row-major = K-major
  v.b_mn = v.b.row_major;   // B (k x n): col-major = K-major
  return v;
}

// True when the epilogue TMA-stores D: a row-major D in the view (not swap) whose base pointer (as declared), row
// pitch and batch stride are 16-byte multiples and whose strides TMA can describe (< 2^40 bytes). Otherwise the
// strips are copied out by the consumer threads (kernels/epilogue/epilogue_tma_store.cuh: kEpiNoTmaD) and D has no
// tensor map; swap=1 stores every element from registers (EpilogueTransposedStore).
// A grouped GEMM's D is always copied out: its tiles end at their group's last row, which a tensor map cannot clip.
inline bool d_tma_store(const KernelView& v) {
  return !v.swap && v.grouped == 0 && tma_ok(v.d);
}

// Narrow epilogue strip width in bytes for output tiles of `bn` columns (gt_sm90::epi_narrow_bytes); the width a
// kernel uses depends on its shared-memory plan too: gt_sm90::Plan::epi_bytes.
inline int epi_narrow_bytes(int bn, int out_type) { return gt_sm90::epi_narrow_bytes(bn * elem_size(out_type)); }
// The D tensor map's swizzle for strips of `eb` bytes: the same as the width for 128/64/32, none otherwise.
inline CUtensorMapSwizzle epi_swizzle(int eb) {
  return eb == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
         : eb == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
         : eb == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                    : CU_TENSOR_MAP_SWIZZLE_NONE;
}

// Slots of the dynamic tile order's ring (GemmConfig::kTileSlots).
using gt_sm90::kTileSlots;

// The stream-K units (kernels/sm90/sm90_tile_stream.cuh, sm90_shape.cuh sk_unit) run when the last round of cluster
// tiles on the grid is partial: a tail after at least one full round, or, with fewer tiles than clusters (split mode),
// the whole problem shared out by k-blocks.
inline bool sk_tail(int64_t ctiles, int64_t clusters, int64_t kblocks) {
  return gt_sm90::sk_runs(static_cast<int>(ctiles), static_cast<int>(clusters), static_cast<int>(kblocks));
}

// Clusters of a tail=sk grid: all that fit (max_clusters) when there are at least as many tiles; with fewer (split
// mode) as many as leave every cluster's share at least kSkMinShare k-blocks, and never fewer than the tiles (then the
// plain walk runs).
constexpr int64_t kSkMinShare = 8;
inline int64_t sk_clusters(int64_t ctiles, int64_t kblocks, int64_t max_clusters) {
  if (ctiles >= max_clusters) return max_clusters;
  return std::max(ctiles, std::min(max_clusters, ctiles * kblocks / kSkMinShare));
}
// Its scratch (mirror of kernels/sm90/sm90_sk_partials.cuh): one slot per cluster, `parts` = cluster size (x 2
// consumer warpgroups in the cooperative schedule) of 128 threads x `acc_regs` floats; one flag per slot and part.
inline int sk_parts(int cluster_size, bool pingpong) { return cluster_size * (pingpong ? 1 : 2); }
inline size_t sk_ws_floats(int64_t clusters, int parts, int acc_regs) {
  return static_cast<size_t>(clusters) * parts * 128 * acc_regs;
}

inline gt_sm90::GemmParams make_params(const KernelView& v, float alpha, float beta, const void* c, void* d) {
  gt_sm90::GemmParams p{};
  p.m = static_cast<int>(v.m);
  p.n = static_cast<int>(v.n);
  p.k = static_cast<int>(v.k);
  p.batch = static_cast<int>(v.batch);
  p.alpha = alpha;
  p.beta = v.has_c ? beta : 0.0f;
  p.c = v.has_c ? c : nullptr;
  p.ldc_m = v.c.row_major ? v.c.ld : 1;
  p.ldc_n = v.c.row_major ? 1 : v.c.ld;
  p.c_batch = v.batch > 1 ? v.c.batch_stride : 0;
  p.d = d;
  p.ldd = v.d.ld;
  p.d_batch = v.batch > 1 ? v.d.batch_stride : 0;
  p.groups = static_cast<int>(v.groups);
  return p;
}

// load=cp: A and B of the kernel view (the user's pointers swapped when the view is transposed) for the cp.async
// producer (kernels/sm90/sm90_cp_loader.cuh).
inline void set_cp_operands(gt_sm90::GemmParams& p, const KernelView& v, const void* a, const void* b) {
  if (v.transposed) std::swap(a, b);
  p.a = a;
  p.b = b;
  p.lda = v.a.ld;
  p.ldb = v.b.ld;
  p.a_batch = v.batch > 1 ? v.a.batch_stride : 0;
  p.b_batch = v.batch > 1 ? v.b.batch_stride : 0;
}

// A 1-D launch of `grid` CTAs of `threads` threads in clusters of `cs` CTAs along x, with `smem` bytes of dynamic
// shared memory: the kernels, the occupancy query and the placement probe all launch this way. `attr` receives the
// cluster dimension and must outlive the returned config.
inline CUlaunchConfig cluster_launch(CUlaunchAttribute& attr, unsigned grid, int cs, unsigned threads, int smem,
                                     CUstream stream = nullptr) {
  attr = CUlaunchAttribute{};
  attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = static_cast<unsigned>(cs);
  attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
  CUlaunchConfig lc{};
  lc.gridDimX = grid;
  lc.gridDimY = lc.gridDimZ = 1;
  lc.blockDimX = threads;
  lc.blockDimY = lc.blockDimZ = 1;
  lc.sharedMemBytes = static_cast<unsigned>(smem);
  lc.hStream = stream;
  lc.attrs = &attr;
  lc.numAttrs = 1;
  return lc;
}

using EncodeTiledFn = decltype(&::cuTensorMapEncodeTiled);

inline CUtensorMapDataType tma_type(int t) {
  if (gt::dtype_code_fp8(t)) return CU_TENSOR_MAP_DATA_TYPE_UINT8;  // TMA moves fp8 as bytes
  return t == kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                    : t == kF16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
}

// Where the rows of an operand start relative to the L2's 128-byte lines and 32-byte sectors. A TMA box reads up to
// 128 bytes per row; when every row starts on a line that is one line, otherwise (a base, row pitch or batch stride
// that is not a multiple of 128 bytes, e.g. K = 1000 16-bit elements: rows 2000 bytes apart) most row reads straddle
// two lines, and when the offset is not a multiple of 32 bytes they touch a fifth sector too. 0: on the lines; 1: on
// sectors, off the lines; 2: off the sectors. (ncu, H200, 6000x6000x1000 against K = 1024: 2.3x the L2 requests,
// 1.37x the sectors; docs/PERFORMANCE.md.)
inline int row_grid_class(uint64_t base, int64_t pitch_bytes, int64_t batch, int64_t batch_stride_bytes) {
  const uint64_t off =
      base | static_cast<uint64_t>(pitch_bytes) | (batch > 1 ? static_cast<uint64_t>(batch_stride_bytes) : 0);
  return off % 128 == 0 ? 0 : off % 32 == 0 ? 1 : 2;
}

// L2 promotion of a map: 256 bytes when the rows start on lines, 128 when they do not. Measured side by side on the
// H200 (docs/PERFORMANCE.md, 4096x4096xK, 8192x8192x4104, 6000x6000x1000): rows off the lines ran ping-pong tiles
// 2-18% slower with 256-byte promotion than with 128 (the cooperative 256-row tiles level), rows on the lines the same
// with either.
inline CUtensorMapL2promotion l2_promotion(int row_class) {
  return row_class == 0 ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B : CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
}

// One 3-D map: dims {inner, outer, batch}, row pitch `ld`, box {box_inner, box_outer, 1}.
inline CUresult encode_3d(EncodeTiledFn enc, CUtensorMap* map, const void* ptr, int type, int64_t inner,
                          int64_t outer, int64_t batch, int64_t ld, int64_t batch_stride, int box_inner,
                          int box_outer, CUtensorMapSwizzle swizzle) {
  const int es = elem_size(type);
  cuuint64_t dims[3] = {static_cast<cuuint64_t>(inner), static_cast<cuuint64_t>(outer),
                        static_cast<cuuint64_t>(batch)};
  int64_t bstride = batch > 1 ? batch_stride * es : ((ld * outer * es + 15) / 16) * 16;
  cuuint64_t strides[2] = {static_cast<cuuint64_t>(ld * es), static_cast<cuuint64_t>(bstride)};
  cuuint32_t box[3] = {static_cast<cuuint32_t>(box_inner), static_cast<cuuint32_t>(box_outer), 1};
  cuuint32_t estr[3] = {1, 1, 1};
  const int rows = row_grid_class(reinterpret_cast<uintptr_t>(ptr), ld * es, batch, bstride);
  return enc(map, tma_type(type), 3, const_cast<void*>(ptr), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
             swizzle, l2_promotion(rows), CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

// Tensor maps for A, B (loads, 128-byte swizzle, the plan's box rows; not for an operand that load=cp reads with
// cp.async, Plan::cp_a / cp_b: the kernel neither reads nor prefetches its map, and the slot keeps what the caller put
// there) and D (store, boxes of the epilogue's
// epi_strip_bytes strips by epi_rows rows — 64 for a warpgroup's strips, 16 or 8 for a warp's — swizzle matching), and
// D's tail map (maps[3]: boxes of the epi_tail_bytes tail strip of warp pieces; with no tail a copy of D's, which the
// kernel does not use). Pointers are the user's (a, b) — swapped here when the view is transposed. A D that the
// epilogue does not TMA-store (d_tma_store false) gets no map: maps[2] and [3] are copies of A's, which the kernel only
// prefetches.
// Returns the first failing CUresult.
inline CUresult encode_maps(EncodeTiledFn enc, const KernelView& v, const gt_sm90::Plan& plan, const void* a,
                            const void* b, void* d, CUtensorMap maps[4]) {
  const int eb = plan.epi_strip_bytes, tail = plan.epi_tail_bytes, d_rows = plan.epi_rows;
  if (v.transposed) std::swap(a, b);
  CUresult r = CUDA_SUCCESS;
  // K-major boxes are {64 K, rows}, MN-major ones {64 M or N, 64 K}: only the order of the two inner dims differs.
  // fp8 (K-major only): {128 K, rows}, the same 128 bytes per row (Plan::bk).
  if (plan.cp_a == 0) {
    r = encode_3d(enc, &maps[0], a, v.a.type, v.a_mn ? v.m : v.k, v.a_mn ? v.k : v.m, v.batch, v.a.ld,
                  v.a.batch_stride, plan.bk, plan.a_box_rows, CU_TENSOR_MAP_SWIZZLE_128B);
    if (r != CUDA_SUCCESS) return r;
  }
  if (plan.cp_b == 0) {
    r = encode_3d(enc, &maps[1], b, v.b.type, v.b_mn ? v.n : v.k, v.b_mn ? v.k : v.n, v.b_count(), v.b.ld,
                  v.b.batch_stride, plan.bk, plan.b_box_rows, CU_TENSOR_MAP_SWIZZLE_128B);
    if (r != CUDA_SUCCESS) return r;
  }
  if (!d_tma_store(v)) {  // stored without TMA (EpilogueTransposedStore, kEpiNoTmaD): copies of A's map, unused
    maps[2] = maps[3] = maps[0];
    return r;
  }
  r = encode_3d(enc, &maps[2], d, v.d.type, v.n, v.m, v.batch, v.d.ld, v.d.batch_stride, eb / elem_size(v.d.type),
                d_rows, epi_swizzle(eb));
  if (r != CUDA_SUCCESS || tail == 0) {
    maps[3] = maps[2];
    return r;
  }
  return encode_3d(enc, &maps[3], d, v.d.type, v.n, v.m, v.batch, v.d.ld, v.d.batch_stride, tail / elem_size(v.d.type),
                   d_rows, epi_swizzle(tail));
}

}  // namespace gemmtune::sm90
