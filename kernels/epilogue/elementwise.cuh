// The unfused epilogue: a separate elementwise kernel that applies a chain to a GEMM's stored output and writes D.
// It is the baseline a fused epilogue must beat (cuBLASLt GEMM into a workspace, then this kernel).
// Threads walk D's contiguous dimension, so reads of the intermediate and writes of D coalesce when both have the
// same layout (the backends write the intermediate in D's layout).
#pragma once

#include "epilogue/epilogue_ops.cuh"

namespace gemmtune_epi {

struct EwParams {
  const void* in;  // GEMM output, M x N, alpha/beta applied
  long long in_ld, in_bs;
  int in_row;
  void* out;  // D, M x N_out
  long long out_ld, out_bs;
  int out_row;
  long long m, n_out, batch;
};

template <int T> struct St;
template <> struct St<0> {
  static __device__ __forceinline__ void at(void* p, long long i, float v) {
    unsigned short r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(v));
    static_cast<unsigned short*>(p)[i] = r;
  }
};
template <> struct St<1> {
  static __device__ __forceinline__ void at(void* p, long long i, float v) {
    unsigned short r;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(v));
    static_cast<unsigned short*>(p)[i] = r;
  }
};
template <> struct St<2> {
  static __device__ __forceinline__ void at(void* p, long long i, float v) { static_cast<float*>(p)[i] = v; }
};

// Launch: block (256), grid (x: chunks of the contiguous dimension of D, y: the other dimension, z: batch); each
// grid dimension strides, so any grid size covers the problem. No divisions per element.
template <class Chain, int TIn, int TOut>
__device__ __forceinline__ void elementwise(const EwParams& e, const EpiParams& p0) {
  const long long inner_n = e.out_row ? e.n_out : e.m, outer_n = e.out_row ? e.m : e.n_out;
  for (long long bz = blockIdx.z; bz < e.batch; bz += gridDim.z) {
    const EpiParams p = p0.at_batch(bz);
    const char* in_b = static_cast<const char*>(e.in);
    const long long in_base = bz * e.in_bs, out_base = bz * e.out_bs;
    for (long long outer = blockIdx.y; outer < outer_n; outer += gridDim.y)
      for (long long inner = (long long)blockIdx.x * blockDim.x + threadIdx.x; inner < inner_n;
           inner += (long long)gridDim.x * blockDim.x) {
        const long long row = e.out_row ? outer : inner, col = e.out_row ? inner : outer;
        float v;
        if constexpr (Chain::kGlu) {
          const long long gc = Chain::gate_col(col, p), uc = Chain::up_col(col, p);
          const float g = Ld<TIn>::at(in_b, in_base + (e.in_row ? row * e.in_ld + gc : gc * e.in_ld + row));
          const float u = Ld<TIn>::at(in_b, in_base + (e.in_row ? row * e.in_ld + uc : uc * e.in_ld + row));
          v = Chain::apply_glu(g, u, row, col, p);
        } else {
          v = Chain::apply(Ld<TIn>::at(in_b, in_base + (e.in_row ? row * e.in_ld + col : col * e.in_ld + row)), row,
                           col, p);
        }
        St<TOut>::at(e.out, out_base + (e.out_row ? row * e.out_ld + col : col * e.out_ld + row), v);
      }
  }
}

}  // namespace gemmtune_epi
