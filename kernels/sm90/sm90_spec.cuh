#pragma once
// The sm90 kernel's compile-time spec, the plan derived from it once, and the run-time parameters: no device code, so
// NVRTC (the kernels: GemmConfig<Spec> in sm90_config.cuh) and the host compiler (src/backends/sm90: shared-memory
// size, TMA boxes, launch arguments) read the same definitions.
// Kernel view of the problem (the host rewrites col-major D as the transposed problem first):
//   D (M x N, row-major) = alpha * A (M x K) * B (K x N) + beta * C,  per batch b.
//   A is K-major (row-major A) or M-major (A_MN); B is K-major (col-major B) or N-major (B_MN).
#include "common/dtype_codes.cuh"
#include "sm90/sm90_shape.cuh"

namespace gt_sm90 {

using gt::kBF16;
using gt::kF16;
using gt::kE4M3;
using gt::kE5M2;
using gt::kF32;

// How the accumulators of an fp8 GEMM are dequantized (Spec::scale, gemmtune::Scaling): tensor multiplies the tile by
// one product scale_a[0] * scale_b[0], row by scale_a[row] * scale_b[col], block by the per-128-K block scales of A
// (1 x 128) and B (128 x 128) as each k-block is promoted (Spec::promote).
enum ScaleCode : int { kScaleNone = 0, kScaleTensor = 1, kScaleRow = 2, kScaleBlock = 3 };

// Block scaling: the bytes at the head of each stage's scale slot before its scales (sm90_scale_loader.cuh: the
// descriptor barrier and the stage's tile and k-block).
inline constexpr int kScaleSlotHead = 32;

// The tile N of the fp8 wgmma wrappers (ptx/wgmma_f8.cuh; tools/dev/gen_wgmma.py generates them from this list): the
// decode widths and the wide tiles the fp8 configs use. Each adds four specializations that every fp8 unit parses.
inline constexpr int kF8TileN[] = {16, 32, 48, 64, 128, 144, 160, 192, 256};

constexpr int gcd(int a, int b) { return b == 0 ? a : gcd(b, a % b); }

// Block scaling: the most 128-column B scale blocks one tile spans, 0 where that can be three. Tiles start at
// multiples of BN, so within a block at multiples of gcd(BN, 128), the last at 128 - gcd(BN, 128): a tile N that is
// not a multiple or a divisor of 128 spans two blocks where that offset plus BN stays within 256 (the fp8 tile N
// 144, 160 and 192).
constexpr int tile_scale_blocks(int bn) {
  if (bn % 128 == 0) return bn / 128;
  if (128 % bn == 0) return 1;
  return 128 - gcd(bn, 128) + bn <= 256 ? 2 : 0;
}

// Everything a kernel is specialised on besides its fused epilogue: a structural literal type, so it is the kernel
// template's one parameter and prints as one designated initializer in the JIT unit.
struct Spec {
  int bm = 128, bn = 256, stages = 4;  // tile M and N (tile K is 64), ring stages
  int cm = 1, cn = 1;                  // cluster CTAs along M and N
  bool a_mn = false, b_mn = false;     // A stored M-major, B stored N-major
  int in = kBF16;                      // A and B element type (dtype code); fp8: A's
  int out = kBF16;                     // D element type
  int ct = 0;                          // C element type (0 without C)
  bool has_c = false;
  bool pingpong = false;  // ping-pong schedule (each consumer warpgroup a whole tile) or cooperative (half each)
  bool dynamic = false;   // tile order: taken from a global counter (sm90_tile_stream.cuh), else static
  bool sk = false;        // static order with a stream-K tail (sm90_tile_stream.cuh)
  bool epi_warp = false;  // each warp TMA-stores its own epilogue pieces (config "epi=warp")
  // Config "load=cp": A / B loaded by the producer warpgroup's cp.async (sm90_cp_loader.cuh) in pieces of cp_a /
  // cp_b bytes (16, 8 or 4: what the operand's pointer, pitch and batch stride allow); 0: that operand by TMA.
  int cp_a = 0, cp_b = 0;
  // fp8 inputs: B's element type (0: the same as A's), the scaling (ScaleCode), and the accumulation: promote = each
  // k-block's wgmmas go to a temporary accumulator that is added (times the block scales) into the fp32 one on the CUDA
  // cores ("acc=promote"); otherwise the whole K accumulates in the tensor core ("acc=fast").
  int in_b = 0;
  int scale = kScaleNone;
  bool promote = false;
  // Grouped GEMMs (gemmtune::Grouping; scheduler/group_tiles.cuh): 0 none, 1 contiguous, 2 masked.
  int grouped = 0;
};

// Every number that follows from a spec: the stage ring, the TMA boxes, the epilogue strips and the shared-memory
// layout. Derived once by derive(); the kernels read it through GemmConfig, the host through sm90::plan().
struct Plan {
  int wm = 0;        // rows of the tile one consumer warpgroup computes: half the tile (coop) or all of it (ping-pong)
  int slabs = 0;     // m64 wgmma rows per consumer
  int acc_regs = 0;  // fp32 accumulator registers per consumer thread (promote: the same again for the k-block's)
  int bk = 64;       // tile K in elements: the 128 bytes of a stage row (64 16-bit, 128 8-bit elements)
  // TMA boxes. K-major: {64 K, rows}; MN-major: {64 M/N, 64 K}, one box per 64-wide chunk. With a cluster the shared
  // operand's boxes are split by rows among the CTAs, each multicasting its part to all of them. A K-major B part is a
  // whole number of 8-row swizzle atoms (operand_part_rows): the last 8 rows of tile N 168 on two CTAs along M (the
  // next tile's columns, or TMA's zero fill) land in padding.
  int a_parts = 0, b_parts = 0;
  int a_box_rows = 0, b_box_rows = 0;
  int b_rows = 0;  // B rows in shared memory (>= BN)
  // Shared memory per stage: A tile then B tile, each 64 K-elements (128 bytes) per row, 128-byte swizzled.
  int a_bytes = 0, b_bytes = 0, stage_bytes = 0;
  // Block scaling: the B scale blocks a tile spans (tile_scale_blocks), and per stage a slot of a descriptor
  // (kScaleSlotHead bytes), the tile's BM row scales and those B scales, which producer warps copy beside the stage's
  // TMA loads (sm90_scale_loader.cuh); 0 for other scalings.
  int scale_nb = 0, scale_slot_bytes = 0;
  int fixed_bytes = 0;  // shared memory besides the epilogue buffers (smem_fixed_bytes)
  // Epilogue (sm90_shape.cuh): rows of one TMA store (the D map's box), stores per 64-row slab and strip per owner,
  // whether a warp's piece is half its 16 rows, one of a warp's two buffers, the threads that stage one strip.
  int out_size = 0;
  int epi_rows = 0, epi_pieces = 0;
  bool epi_half = false;
  int epi_warp_buf_bytes = 0, epi_owner_threads = 0;
  // The warpgroup form's strips: width (the D map's box), buffers per consumer warpgroup, bytes of one buffer.
  int epi_bytes = 0, epi_bufs = 0, epi_buf_bytes = 0;
  // The strips of a 64-row slab as stored: epi_strips of epi_strip_bytes (through the D map), then, with warp pieces,
  // a tail strip of epi_tail_bytes (through the tail D map; 0: none).
  int epi_strip_bytes = 0, epi_strips = 0, epi_tail_bytes = 0;
  int epi_region_bytes = 0;  // one consumer warpgroup's strip buffers
  // The layout from the 1024-byte aligned base: stages, two epilogue regions, the block scale slots, barriers, the
  // dynamic order's tile ring. A grouped kernel's tile prefix sits where the dynamic order's ring would (grouped
  // kernels have none).
  int epi_offset = 0, scale_offset = 0, bar_offset = 0, tile_offset = 0;
  int smem_bytes = 0;  // dynamic shared memory of the kernel, alignment slack included
  // Arrivals that free a stage: one per consumer warpgroup of every CTA that loads into this CTA's stages (its cluster
  // row and column, itself included: CM + CN - 1 CTAs).
  int load_peers = 0, empty_arrivals = 0;
  // Arrivals that fill a stage: the TMA producer thread's (with the expected bytes), plus the cp.async completion of
  // every producer thread with load=cp or of the 32 of a scale loader warp with block scaling; the bytes TMA brings (a
  // load=cp kernel loads the operand TMA can take by TMA).
  bool cp = false;
  int cp_a = 0, cp_b = 0;  // Spec::cp_a, cp_b
  int full_arrivals = 1;
  int tma_bytes = 0;
};

constexpr Plan derive(const Spec& s) {
  Plan p;
  p.wm = s.pingpong ? s.bm : s.bm / 2;
  p.slabs = p.wm / 64;
  p.acc_regs = p.slabs * s.bn / 2;
  p.bk = 128 / gt::dtype_code_bytes(s.in);
  p.a_parts = s.cn;
  p.b_parts = s.cm;
  p.a_box_rows = (s.a_mn ? 64 : s.bm) / p.a_parts;
  p.b_box_rows = s.b_mn ? 64 / p.b_parts : operand_part_rows(s.bn, p.b_parts);
  p.b_rows = s.b_mn ? s.bn : p.b_box_rows * p.b_parts;
  p.a_bytes = s.bm * 128;
  p.b_bytes = p.b_rows * 128;
  p.stage_bytes = p.a_bytes + p.b_bytes;
  if (s.scale == kScaleBlock) {
    p.scale_nb = tile_scale_blocks(s.bn);
    p.scale_slot_bytes = (kScaleSlotHead + (s.bm + p.scale_nb) * 4 + 15) / 16 * 16;
  }
  p.fixed_bytes = smem_fixed_bytes(s.stages, p.stage_bytes + p.scale_slot_bytes, s.dynamic, s.grouped != 0);

  p.out_size = gt::dtype_code_bytes(s.out);
  const int row = s.bn * p.out_size;
  p.epi_rows = epi_rows(s.epi_warp, p.fixed_bytes);
  p.epi_pieces = s.epi_warp ? 16 / p.epi_rows : 1;
  p.epi_half = s.epi_warp && p.epi_rows == 8;
  p.epi_warp_buf_bytes = p.epi_rows * 128;
  p.epi_owner_threads = s.epi_warp ? 32 : 128;
  p.epi_bytes = epi_strip_bytes(row, p.out_size, p.fixed_bytes);
  p.epi_bufs = epi_buffers(row, p.out_size, p.fixed_bytes);
  p.epi_buf_bytes = 64 * p.epi_bytes;
  p.epi_strip_bytes = s.epi_warp ? epi_warp_strip_bytes(row) : p.epi_bytes;
  p.epi_strips = s.epi_warp ? epi_warp_strips(row) : (p.epi_bytes > 0 ? row / p.epi_bytes : 0);
  p.epi_tail_bytes = s.epi_warp ? epi_warp_tail(row) : 0;
  p.epi_region_bytes = epi_region_bytes(row, p.out_size, p.fixed_bytes, s.epi_warp);

  p.epi_offset = s.stages * p.stage_bytes;
  p.scale_offset = p.epi_offset + 2 * p.epi_region_bytes;
  p.bar_offset = p.scale_offset + s.stages * p.scale_slot_bytes;
  p.tile_offset = p.bar_offset + 16 * s.stages + 16;
  p.smem_bytes = p.fixed_bytes + 2 * p.epi_region_bytes;

  p.load_peers = s.cm + s.cn - 1;
  p.empty_arrivals = (s.pingpong ? 1 : 2) * p.load_peers;
  p.cp = s.cp_a > 0 || s.cp_b > 0;
  p.cp_a = s.cp_a;
  p.cp_b = s.cp_b;
  p.tma_bytes = (s.cp_a > 0 ? 0 : p.a_bytes) + (s.cp_b > 0 ? 0 : p.b_bytes);
  p.full_arrivals = p.cp ? 128 + (p.tma_bytes > 0 ? 1 : 0) : 1 + (s.scale == kScaleBlock ? 32 : 0);
  return p;
}

// The structural rules of a spec: nullptr when the kernels can be built for it, else why not, in the config line's
// terms. GemmConfig static_asserts it and the host's config_reason (src/backends/sm90/sm90_rules.cpp) returns it, so
// each rule is stated once; the host adds only the rules that combine a problem and a config. The first checks are
// the problem's (problem_reason refuses those first, in the user's terms).
constexpr const char* spec_error(const Spec& s) {
  const bool fp8 = gt::dtype_code_fp8(s.in);
  const int in_b = s.in_b != 0 ? s.in_b : s.in;
  const bool cp = s.cp_a > 0 || s.cp_b > 0;
  if (s.in != kBF16 && s.in != kF16 && !fp8) return "A and B must be bf16, f16, e4m3 or e5m2";
  if (fp8 != gt::dtype_code_fp8(in_b) || (!fp8 && in_b != s.in)) return "A and B: both 16-bit (one type) or both fp8";
  if (fp8 && (s.a_mn || s.b_mn)) return "fp8 operands must be K-major (row-major A, col-major B)";
  if (fp8 == (s.scale == kScaleNone)) return "fp8 inputs need a scaling, 16-bit ones take none";
  if (!((s.out >= 0 && s.out <= 2) || s.out == kE4M3) || s.ct < 0 || s.ct > 2) return "bad output / C dtype";
  if (s.out == kE4M3 && (!fp8 || s.has_c)) return "an e4m3 D needs fp8 inputs and takes no C";
  if (s.bm != 64 && s.bm != 128 && s.bm != 256) return "tile M must be 64, 128 or 256";
  if (s.bn < 16 || s.bn > 256 || s.bn % 8 != 0) return "tile N must be a multiple of 8 in [16, 256]";
  if (!s.pingpong && s.bm < 128) return "the cooperative schedule needs tile M >= 128";
  if (s.pingpong && s.bm > 128) return "the ping-pong schedule needs tile M <= 128";
  if (s.stages < 2 || s.stages > 16) return "stages must be in [2, 16]";
  if ((s.cm != 1 && s.cm != 2) || (s.cn != 1 && s.cn != 2)) return "cluster must be 1x1, 2x1, 1x2 or 2x2";
  if (s.promote && !fp8) return "promoted accumulation (acc=promote) is the fp8 path's";
  if (s.scale == kScaleBlock && !s.promote) return "block scaling needs acc=promote (scales apply per 128-K block)";
  if (s.scale == kScaleBlock && tile_scale_blocks(s.bn) == 0)
    return "block scaling needs tile N a multiple or a divisor of 128, or one whose tiles span at most two 128-column "
           "B scale blocks (128 - gcd(N, 128) + N <= 256: 144, 160, 192)";
  if (fp8) {
    bool listed = false;
    for (int n : kF8TileN) listed = listed || n == s.bn;
    if (!listed) return "fp8 inputs need tile N 16, 32, 48, 64, 128, 144, 160, 192 or 256 (the fp8 wgmma forms built)";
  }
  if (s.dynamic && s.sk) return "the stream-K tail (tail=sk) needs a static or gpc tile order";
  if (s.grouped != 0 && s.cm != 1)
    return "grouped GEMMs take clusters 1x1 or 1x2 (the CTAs of a 2x1 cluster would hold rows of two groups while "
           "sharing one B)";
  if (s.grouped != 0 && (s.dynamic || s.sk))
    return "grouped GEMMs walk their tiles in a static or gpc order, without a stream-K tail";
  if (s.grouped != 0 && cp) return "grouped GEMMs load A and B by TMA only";
  auto piece = [](int b) { return b == 0 || b == 4 || b == 8 || b == 16; };
  if (!piece(s.cp_a) || !piece(s.cp_b)) return "load=cp takes 4, 8 or 16-byte pieces";
  if (cp && s.cm * s.cn != 1) return "load=cp needs cluster 1x1 (cp.async does not multicast)";
  if (cp && s.dynamic) return "load=cp needs a static or gpc tile order (every producer thread walks the tiles)";
  if (cp && s.in != kBF16 && s.in != kF16) return "load=cp copies 16-bit elements";
  if (s.b_mn && s.bn % 64 != 0)
    return "N-major B in the kernel (row-major B, or M-major A with a column-major D) needs tile N a multiple of 64";
  // A consumer thread gets 232 registers (setmaxnreg), at most 192 of them accumulators; whether a config within
  // that spills depends on the epilogue and the compiler: the compile's ptxas report says, not a rule.
  const Plan p = derive(s);
  if (s.promote && 2 * p.acc_regs > 192)
    return "acc=promote keeps two accumulator sets: twice the accumulator registers per thread exceed the 192 of a "
           "consumer warpgroup (take tile N <= 128 per 64 rows)";
  if (p.acc_regs > 192) return "the accumulator registers per thread exceed the 192 of a consumer warpgroup";
  return nullptr;
}

// Run-time arguments besides the tensor maps, passed by value to the kernel.
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
  float* sk_ws;         // stream-K tail (Spec::sk): partial accumulators, one slot per cluster boundary, or null (off)
  int* sk_flags;        // one per slot and part: 1 = partial written, 0 = consumed (zero between launches)
  // load=cp only (Spec::cp_a): A and B of the kernel view, element (outer, inner) of batch b at
  // ptr + (b * batch + outer * ld + inner) elements (outer: M/N rows when K-major, K when MN-major).
  const void* a;
  const void* b;
  long long lda, ldb, a_batch, b_batch;
  // fp8 (Spec::scale): the dequantization scales of the kernel view's rows (sr) and columns (sc): scale_a and scale_b,
  // swapped for a transposed view. tensor: sr[0] * sc[0]; row: sr[row] * sc[col]; block (never transposed):
  // sr[kb * m + row], sc[(col / 128) * kb_count + kb], kb_count = ceil(k / 128).
  const float* sr;
  const float* sc;
  // e4m3 D: D = saturate(v * scale_d[0]) (null: 1); amax (or null): max |v| over D, zeroed on the stream before the
  // launch and raised by atomicMax on the float bits (non-negative floats order as their bit patterns).
  const float* scale_d;
  float* amax;
  // Grouped GEMMs (Spec::grouped, scheduler/group_tiles.cuh): `groups` int32 on the device, the cumulative row ends
  // (contiguous) or row counts (masked) of the groups; B's batch coordinate is the group. fp8: the elements between
  // consecutive groups' row scales (sr: 0 for contiguous, whose A rows are global) and column scales (sc).
  const int* group_rows;
  int groups;
  long long sr_group, sc_group;
};

}  // namespace gt_sm90
