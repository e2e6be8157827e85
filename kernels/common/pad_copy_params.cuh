#pragma once
// The run-time parameters of the pad-and-run copy (common/pad_copy.cuh): no device code, so NVRTC and the host
// compiler (src/backends/pad) read one definition.

namespace gt_pad {

// A matrix as lines (rows of a row-major operand, columns of a column-major one) of `inner` contiguous elements.
// Source line l of batch b starts at src + b * src_bs + l * src_ld (elements); its packed copy at
// dst + b * dst_bs + l * dst_ld, where dst_ld = chunks * (16 / element bytes): a whole number of 16-byte chunks.
struct PadCopyParams {
  const void* src;
  void* dst;
  long long src_ld, src_bs;
  long long dst_ld, dst_bs;
  long long inner;   // elements of a line
  long long lines;   // lines of one matrix
  long long chunks;  // 16-byte chunks of a packed line
  long long batch;   // matrices copied (1 for a broadcast operand)
  int lane_bits;     // log2 of the threads that share one line in a block (blockDim.x >> lane_bits lines per block)
};

constexpr int kPadCopyThreads = 256;  // threads per block

}  // namespace gt_pad
