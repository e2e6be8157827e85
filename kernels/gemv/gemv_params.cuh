#pragma once
// The gemv kernels' run-time parameters and the sizes the host must know (shared memory, the K split's workspace): no
// device code, so NVRTC (gemv_common.cuh, gemv_mma.cuh) and the host compiler (src/backends/gemv) read one definition.

namespace gt_gemv {

struct GemvParams {
  const void* w;
  long long ldw, w_batch;  // W row r at w + b * w_batch + r * ldw (elements)
  const void* x;
  long long ldx, x_batch;  // vector t at x + b * x_batch + t * ldx
  void* d;
  long long d_t, d_r, d_batch;  // output (t, r) at d + b * d_batch + t * d_t + r * d_r
  const void* c;
  long long c_t, c_r, c_batch;
  float alpha, beta;
  int rows;  // output rows: W's rows, or half of them with a GLU
  int k;
  // K split across CTAs (gemv_mma.cuh CSPLIT > 1): the CTAs' partial sums and, per row group, the count of CTAs that
  // have written theirs (zero between launches: the last CTA sets it back). Unused otherwise.
  float* ws;
  int* cnt;
  // fp8 (Problem::scaling, gemv_mma.cuh SCALE > 0): the dequantization scales of W and X (scale_b and scale_a with
  // the vectors as A's rows, else the other way round; null: 1, for a 16-bit operand), an e4m3 D's output scale and
  // the amax output (zeroed on the stream before the launch). Unused otherwise.
  const float* sw;
  const float* sx;
  const float* sd;
  float* amax;
};

// The mma kernel (gemv_mma.cuh) in m-blocks of 16 W rows per warp (mb) and n-blocks of 8 vectors (nb).
constexpr int mma_vector_blocks(int vectors) { return (vectors + 7) / 8; }
constexpr int mma_stage_bytes(int mb) { return mb * 16 * 128; }      // one step (128 bytes a row) of a warp's W rows
constexpr int mma_lane_frags(int mb, int nb) { return mb * nb * 4; }  // fp32 accumulator fragments per lane
// Dynamic shared memory: a ring of `ring` stages per warp (0: none).
constexpr int mma_ring_bytes(int ring, int warps, int mb) { return ring * warps * mma_stage_bytes(mb); }
// Static shared memory where KSPLIT warps meet (`red`, a slot per warp's lanes; one float without a split).
constexpr int mma_red_floats(int warps, int mb, int nb, int ksplit) {
  return ksplit > 1 ? warps * mma_lane_frags(mb, nb) * 32 : 1;
}
// The K split across CTAs: the floats of one row group's slot (every lane's fragments of each of the csplit CTAs).
constexpr long long mma_csplit_slot_floats(int csplit, int mb, int nb) {
  return static_cast<long long>(csplit) * mma_lane_frags(mb, nb) * 32;
}

}  // namespace gt_gemv
