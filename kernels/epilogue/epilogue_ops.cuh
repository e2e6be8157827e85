// Fused epilogue ops, composed at compile time (no CUDA headers: NVRTC, and plain nvcc).
//
// The host describes a chain (gemmtune/epilogue.h) and emits its C++ type (src/core/epilogue_codegen.h), e.g.
//   "bias,gelu_tanh"  ->  Epi<Ops<BiasCol<0>, GeluTanh>, NoGlu, Ops<> >
//   "silu_glu"        ->  Epi<Ops<>, Glu<Silu, 0>, Ops<> >
// Each op is a type with `static float apply(float v, long long row, long long col, const EpiParams&)`; a chain is a
// fold over them, so a kernel instantiated for a chain carries no run-time branching on the op list.
//
// What a kernel's epilogue calls, on fp32 values v = alpha*acc + beta*C:
//   Chain::kGlu == false:  out = Chain::apply(v, row, col, p)                          (row, col of D)
//   Chain::kGlu == true:   out = Chain::apply_glu(v_gate, v_up, row, out_col, p)       (row, col of D = M x N/2)
//                          where v_gate is the GEMM value at column Chain::gate_col(out_col, p) and v_up at
//                          Chain::up_col(out_col, p). With Glu<Act, B> (interleave B) and a CTA tile of 2B columns
//                          starting at a multiple of 2B, gate and up of one output sit in the same tile, B columns
//                          apart: in a WGMMA accumulator fragment they are held by the same thread.
// Coordinates are within one batch: p.at_batch(b) (once per tile) selects the residual's batch.
// Pairs: apply2<AX>(v0, v1, row, col, p) applies the chain to (row, col) and the next element along D's columns
// (AX = 1: (row, col + 1)) or rows (AX = 0: (row + 1, col)), reading an operand that is contiguous along that axis
// with one 4/8-byte load. The caller guarantees the pair is in bounds, the index of its first element is even and
// the operand pointers are aligned to two elements (sm90: kEpiVecOps).
// dtype codes: 0 = bf16, 1 = f16, 2 = f32 (as the reference kernels).
#pragma once

#include "common/dtype_codes.cuh"

namespace gemmtune_epi {

struct EpiParams {
  const void* bias;       // bias_col: N (or N/2 after the GLU) elements; bias_row: M elements
  const void* residual;   // D-shaped: M x N_out, layout/ld/batch stride below
  const void* row_scale;  // M elements
  const void* col_scale;  // N or N/2 elements
  long long res_ld;       // residual leading dimension (elements)
  long long res_bs;       // residual batch stride (elements)
  int res_row;            // 1 = residual is row-major
  long long glu_half;     // N/2 (halves GLU: up = gate column + N/2)
  long long batch;        // the batch the (row, col) coordinates are in: set per tile with at_batch()

  __device__ __forceinline__ EpiParams at_batch(long long b) const {
    EpiParams q = *this;
    q.batch = b;
    return q;
  }
};

// ---- element loads (fp32 math, any storage type) ----

template <int T> struct Ld;
template <> struct Ld<gt::kBF16> {  // bf16
  static __device__ __forceinline__ float at(const void* p, long long i) {
    return __uint_as_float(((unsigned)static_cast<const unsigned short*>(p)[i]) << 16);
  }
};
template <> struct Ld<gt::kF16> {  // f16
  static __device__ __forceinline__ float at(const void* p, long long i) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(static_cast<const unsigned short*>(p)[i]));
    return f;
  }
};
template <> struct Ld<gt::kF32> {  // f32
  static __device__ __forceinline__ float at(const void* p, long long i) { return static_cast<const float*>(p)[i]; }
};

// Two adjacent elements [i, i + 1] with one load (i even, pointer aligned to two elements). VOLATILE: see LdV.
__device__ __forceinline__ float lo_bf16(unsigned u) { return __uint_as_float(u << 16); }
__device__ __forceinline__ float hi_bf16(unsigned u) { return __uint_as_float(u & 0xFFFF0000u); }
__device__ __forceinline__ float f16_at(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
template <int T, bool VOLATILE = false>
__device__ __forceinline__ void ld2(const void* p, long long i, float& a, float& b) {
  if constexpr (T == gt::kF32) {
    const float* q = static_cast<const float*>(p) + i;
    if constexpr (VOLATILE)
      asm volatile("ld.global.nc.v2.f32 {%0, %1}, [%2];" : "=f"(a), "=f"(b) : "l"(q));
    else
      asm("ld.global.nc.v2.f32 {%0, %1}, [%2];" : "=f"(a), "=f"(b) : "l"(q));
  } else {
    const unsigned short* q = static_cast<const unsigned short*>(p) + i;
    unsigned u;
    if constexpr (VOLATILE)
      asm volatile("ld.global.nc.b32 %0, [%1];" : "=r"(u) : "l"(q));
    else
      asm("ld.global.nc.b32 %0, [%1];" : "=r"(u) : "l"(q));
    if constexpr (T == gt::kBF16) {
      a = lo_bf16(u);
      b = hi_bf16(u);
    } else {
      a = f16_at(static_cast<unsigned short>(u & 0xFFFFu));
      b = f16_at(static_cast<unsigned short>(u >> 16));
    }
  }
}

// NOTES: D-shaped operands (the residual) are read with asm volatile loads: they stay in program order with a fused
// epilogue's shared-memory stores, so the compiler does not hoist a whole strip of them next to 128+ accumulators
// (that spilled in the sm90 kernels, as C reads did: see epilogue_tma_store.cuh).
template <int T> struct LdV;
template <> struct LdV<gt::kBF16> {
  static __device__ __forceinline__ float at(const void* p, long long i) {
    unsigned short h;
    asm volatile("ld.global.nc.u16 %0, [%1];" : "=h"(h) : "l"(static_cast<const unsigned short*>(p) + i));
    return __uint_as_float(((unsigned)h) << 16);
  }
};
template <> struct LdV<gt::kF16> {
  static __device__ __forceinline__ float at(const void* p, long long i) {
    unsigned short h;
    asm volatile("ld.global.nc.u16 %0, [%1];" : "=h"(h) : "l"(static_cast<const unsigned short*>(p) + i));
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
  }
};
template <> struct LdV<gt::kF32> {
  static __device__ __forceinline__ float at(const void* p, long long i) {
    float f;
    asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(f) : "l"(static_cast<const float*>(p) + i));
    return f;
  }
};

// ---- activations ----

struct Relu {
  static __device__ __forceinline__ float f(float x) { return x > 0.f ? x : 0.f; }
};
struct GeluTanh {  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as torch gelu(approximate="tanh")
  static __device__ __forceinline__ float f(float x) {
    return 0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
  }
};
struct GeluErf {  // 0.5 x (1 + erf(x / sqrt 2)), as torch gelu()
  static __device__ __forceinline__ float f(float x) { return 0.5f * x * (1.f + erff(x * 0.7071067811865476f)); }
};
struct Sigmoid {
  static __device__ __forceinline__ float f(float x) { return 1.f / (1.f + __expf(-x)); }
};
struct Silu {
  static __device__ __forceinline__ float f(float x) { return x / (1.f + __expf(-x)); }
};

// ---- ops ----

template <class Act>
struct Activate {
  static __device__ __forceinline__ float apply(float v, long long, long long, const EpiParams&) { return Act::f(v); }
  template <int AX>
  static __device__ __forceinline__ void apply2(float& v0, float& v1, long long, long long, const EpiParams&) {
    v0 = Act::f(v0);
    v1 = Act::f(v1);
  }
};
// A per-column (IDX_AX = 1) or per-row (IDX_AX = 0) vector operand of a pair along AX: a pair load when the pair
// runs along the vector, else one load for both.
template <int T, int IDX_AX, int AX>
__device__ __forceinline__ void vec_operand2(const void* p, long long row, long long col, float& a, float& b) {
  const long long i = IDX_AX == 1 ? col : row;
  if constexpr (IDX_AX == AX) {
    ld2<T>(p, i, a, b);
  } else {
    a = Ld<T>::at(p, i);
    b = a;
  }
}
// A per-column (IDX_AX = 1) or per-row (IDX_AX = 0) vector operand F (bias, scales) added (MUL = false) or
// multiplied in.
template <int T, int IDX_AX, bool MUL, const void* EpiParams::*F>
struct VecOp {
  static __device__ __forceinline__ float apply(float v, long long row, long long col, const EpiParams& p) {
    const float a = Ld<T>::at(p.*F, IDX_AX == 1 ? col : row);
    return MUL ? v * a : v + a;
  }
  template <int AX>
  static __device__ __forceinline__ void apply2(float& v0, float& v1, long long row, long long col, const EpiParams& p) {
    float a, b;
    vec_operand2<T, IDX_AX, AX>(p.*F, row, col, a, b);
    v0 = MUL ? v0 * a : v0 + a;
    v1 = MUL ? v1 * b : v1 + b;
  }
};
template <int T>
using BiasCol = VecOp<T, 1, false, &EpiParams::bias>;
template <int T>
using BiasRow = VecOp<T, 0, false, &EpiParams::bias>;
template <int T>
using RowScale = VecOp<T, 0, true, &EpiParams::row_scale>;
template <int T>
using ColScale = VecOp<T, 1, true, &EpiParams::col_scale>;
// ROW: the residual's layout at compile time (1 row-major, 0 column-major; -1: p.res_row at run time). A run-time
// layout makes a fused epilogue precompute both offsets of every element (spills).
template <int T, int ROW = -1>
struct Residual {
  static __device__ __forceinline__ float apply(float v, long long row, long long col, const EpiParams& p) {
    const bool r = ROW < 0 ? p.res_row != 0 : ROW == 1;
    return v + LdV<T>::at(p.residual, p.batch * p.res_bs + (r ? row * p.res_ld + col : col * p.res_ld + row));
  }
  // Contiguous along AX (row-major and AX = 1, or column-major and AX = 0): one load for the pair (the residual
  // shares D's layout, ld and batch stride, which TMA keeps 16-byte multiples). Otherwise two loads.
  template <int AX>
  static __device__ __forceinline__ void apply2(float& v0, float& v1, long long row, long long col, const EpiParams& p) {
    const bool r = ROW < 0 ? p.res_row != 0 : ROW == 1;
    const long long i = p.batch * p.res_bs + (r ? row * p.res_ld + col : col * p.res_ld + row);
    if (ROW >= 0 && (ROW == 1) == (AX == 1)) {
      float a, b;
      ld2<T, true>(p.residual, i, a, b);
      v0 += a;
      v1 += b;
    } else {
      v0 += LdV<T>::at(p.residual, i);
      v1 += LdV<T>::at(p.residual, i + ((AX == 1) == r ? 1 : p.res_ld));
    }
  }
};

// A list of ops applied left to right.
template <class... Op>
struct Ops {
  static __device__ __forceinline__ float apply(float v, long long row, long long col, const EpiParams& p) {
    ((v = Op::apply(v, row, col, p)), ...);
    return v;
  }
  template <int AX>
  static __device__ __forceinline__ void apply2(float& v0, float& v1, long long row, long long col, const EpiParams& p) {
    (Op::template apply2<AX>(v0, v1, row, col, p), ...);
  }
};

struct NoGlu {
  static constexpr bool kGlu = false;
  static constexpr int kBlock = 0;
};
// Gated linear unit: out = Act(gate) * up. Block == 0: halves (gate = [0, N/2), up = [N/2, N)); Block > 0: blocks of
// Block columns alternate gate, up.
template <class Act, int Block>
struct Glu {
  static constexpr bool kGlu = true;
  static constexpr int kBlock = Block;
  typedef Act act;
  static __device__ __forceinline__ long long gate_col(long long out_col, const EpiParams& p) {
    if constexpr (Block == 0) return out_col;
    else return (out_col / Block) * (2 * Block) + out_col % Block;
  }
  static __device__ __forceinline__ long long up_col(long long out_col, const EpiParams& p) {
    if constexpr (Block == 0) return out_col + p.glu_half;
    else return gate_col(out_col, p) + Block;
  }
};

// The whole chain: Pre (on the GEMM's columns), an optional GLU, Post (on D's columns).
template <class Pre, class G, class Post>
struct Epi {
  static constexpr bool kGlu = G::kGlu;
  static constexpr int kGluBlock = G::kBlock;  // 0: halves (or no GLU); B: interleave<B>

  static __device__ __forceinline__ float apply(float v, long long row, long long col, const EpiParams& p) {
    static_assert(!G::kGlu, "a GLU chain combines two values: call apply_glu");
    return Post::apply(Pre::apply(v, row, col, p), row, col, p);
  }
  template <int AX>
  static __device__ __forceinline__ void apply2(float& v0, float& v1, long long row, long long col, const EpiParams& p) {
    static_assert(!G::kGlu, "a GLU chain combines two values: call apply_glu2");
    Pre::template apply2<AX>(v0, v1, row, col, p);
    Post::template apply2<AX>(v0, v1, row, col, p);
  }
  // Output columns (out_col, out_col + 1), out_col even: gate and up columns are pairs too (block a multiple of 8).
  // Results in (g0, g1).
  static __device__ __forceinline__ void apply_glu2(float& g0, float& g1, float& u0, float& u1, long long row,
                                                    long long out_col, const EpiParams& p) {
    static_assert(G::kGlu, "apply_glu2 needs a chain with a GLU");
    Pre::template apply2<1>(g0, g1, row, G::gate_col(out_col, p), p);
    Pre::template apply2<1>(u0, u1, row, G::up_col(out_col, p), p);
    g0 = G::act::f(g0) * u0;
    g1 = G::act::f(g1) * u1;
    Post::template apply2<1>(g0, g1, row, out_col, p);
  }
  static __device__ __forceinline__ long long gate_col(long long out_col, const EpiParams& p) {
    return G::gate_col(out_col, p);
  }
  static __device__ __forceinline__ long long up_col(long long out_col, const EpiParams& p) {
    return G::up_col(out_col, p);
  }
  static __device__ __forceinline__ float apply_glu(float gate, float up, long long row, long long out_col,
                                                    const EpiParams& p) {
    static_assert(G::kGlu, "apply_glu needs a chain with a GLU");
    const float g = Pre::apply(gate, row, G::gate_col(out_col, p), p);
    const float u = Pre::apply(up, row, G::up_col(out_col, p), p);
    return Post::apply(G::act::f(g) * u, row, out_col, p);
  }
};

}  // namespace gemmtune_epi
