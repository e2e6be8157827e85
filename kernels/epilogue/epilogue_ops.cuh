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
// dtype codes: 0 = bf16, 1 = f16, 2 = f32 (as the reference kernels).
#pragma once

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
template <> struct Ld<0> {  // bf16
  static __device__ __forceinline__ float at(const void* p, long long i) {
    return __uint_as_float(((unsigned)static_cast<const unsigned short*>(p)[i]) << 16);
  }
};
template <> struct Ld<1> {  // f16
  static __device__ __forceinline__ float at(const void* p, long long i) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(static_cast<const unsigned short*>(p)[i]));
    return f;
  }
};
template <> struct Ld<2> {  // f32
  static __device__ __forceinline__ float at(const void* p, long long i) { return static_cast<const float*>(p)[i]; }
};

// NOTES: D-shaped operands (the residual) are read with asm volatile loads: they stay in program order with a fused
// epilogue's shared-memory stores, so the compiler does not hoist a whole strip of them next to 128+ accumulators
// (that spilled in the sm90 kernels, as C reads did: see epilogue_tma_store.cuh).
template <int T> struct LdV;
template <> struct LdV<0> {
  static __device__ __forceinline__ float at(const void* p, long long i) {
    unsigned short h;
    asm volatile("ld.global.nc.u16 %0, [%1];" : "=h"(h) : "l"(static_cast<const unsigned short*>(p) + i));
    return __uint_as_float(((unsigned)h) << 16);
  }
};
template <> struct LdV<1> {
  static __device__ __forceinline__ float at(const void* p, long long i) {
    unsigned short h;
    asm volatile("ld.global.nc.u16 %0, [%1];" : "=h"(h) : "l"(static_cast<const unsigned short*>(p) + i));
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
  }
};
template <> struct LdV<2> {
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
};
template <int T>
struct BiasCol {
  static __device__ __forceinline__ float apply(float v, long long, long long col, const EpiParams& p) {
    return v + Ld<T>::at(p.bias, col);
  }
};
template <int T>
struct BiasRow {
  static __device__ __forceinline__ float apply(float v, long long row, long long, const EpiParams& p) {
    return v + Ld<T>::at(p.bias, row);
  }
};
template <int T>
struct RowScale {
  static __device__ __forceinline__ float apply(float v, long long row, long long, const EpiParams& p) {
    return v * Ld<T>::at(p.row_scale, row);
  }
};
template <int T>
struct ColScale {
  static __device__ __forceinline__ float apply(float v, long long, long long col, const EpiParams& p) {
    return v * Ld<T>::at(p.col_scale, col);
  }
};
// ROW: the residual's layout at compile time (1 row-major, 0 column-major; -1: p.res_row at run time). A run-time
// layout makes a fused epilogue precompute both offsets of every element (spills).
template <int T, int ROW = -1>
struct Residual {
  static __device__ __forceinline__ float apply(float v, long long row, long long col, const EpiParams& p) {
    const bool r = ROW < 0 ? p.res_row != 0 : ROW == 1;
    return v + LdV<T>::at(p.residual, p.batch * p.res_bs + (r ? row * p.res_ld + col : col * p.res_ld + row));
  }
};

// A list of ops applied left to right.
template <class... Op>
struct Ops {
  static __device__ __forceinline__ float apply(float v, long long row, long long col, const EpiParams& p) {
    ((v = Op::apply(v, row, col, p)), ...);
    return v;
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
