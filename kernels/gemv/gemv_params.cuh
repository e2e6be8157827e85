#pragma once
// The gemv kernels' run-time parameters: no device code, so NVRTC (gemv_common.cuh) and the host compiler
// (src/backends/gemv/gemv_backend.cpp) read this one definition.

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
};

}  // namespace gt_gemv
