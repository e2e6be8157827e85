#pragma once
// What both gemv kernels (gemv_kmajor.cuh: FMAs on the CUDA cores, gemv_mma.cuh: mma.sync) share: the launch
// parameters (gemv_params.cuh, which the host reads too), the chain plumbing, 16-byte loads (whole or in VB-byte pieces), conversions and the
// output of one element.
// A chain's unit includes epilogue/epilogue_ops.cuh before this header.

#include "common/dtype_codes.cuh"
#include "gemv/gemv_params.cuh"

namespace gemmtune_epi {
struct EpiParams;
}

namespace gt_gemv {

struct Plain {  // no fused chain
  static constexpr bool kGlu = false;
};
template <class Chain>
struct ChainParams {
  using type = gemmtune_epi::EpiParams;
  static constexpr bool kFused = true;
};
template <>
struct ChainParams<Plain> {
  struct type {};
  static constexpr bool kFused = false;
};

struct U4 {
  unsigned x, y, z, w;
};

// W: read once, so not kept in L1 (the vectors are).
__device__ __forceinline__ U4 ld_stream(const void* p) {
  U4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}
__device__ __forceinline__ U4 ld_cached(const void* p) {
  U4 v;
  asm("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

// 16 bytes from an address that is only VB-byte aligned (16, 8, 4 or 2: the problem's pitches and base pointers allow
// no wider load, src/backends/gemv gemv::load_bytes): one 16-byte load, or 16 / VB narrower ones into the same words,
// so that the kernels' fragments and chunks are the same whatever the width. STREAM (W, read once) skips L1 only for
// whole 16-byte loads: a narrower load of a warp touches every sector its lanes' 16-byte pieces span and uses part of
// each, so the pieces go through L1, where the first one's miss brings the lines the others read.
template <int VB, bool STREAM>
__device__ __forceinline__ U4 ld16(const void* p) {
  static_assert(VB == 16 || VB == 8 || VB == 4 || VB == 2, "loads of 16, 8, 4 or 2 bytes");
  if constexpr (VB == 16) {
    return STREAM ? ld_stream(p) : ld_cached(p);
  } else if constexpr (VB == 8) {
    const char* c = static_cast<const char*>(p);
    U4 v;
    asm("ld.global.nc.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(c));
    asm("ld.global.nc.v2.u32 {%0, %1}, [%2];" : "=r"(v.z), "=r"(v.w) : "l"(c + 8));
    return v;
  } else if constexpr (VB == 4) {
    const char* c = static_cast<const char*>(p);
    unsigned w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) asm("ld.global.nc.u32 %0, [%1];" : "=r"(w[i]) : "l"(c + 4 * i));
    return U4{w[0], w[1], w[2], w[3]};
  } else {
    const char* c = static_cast<const char*>(p);
    unsigned short h[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) asm("ld.global.nc.u16 %0, [%1];" : "=h"(h[i]) : "l"(c + 2 * i));
    return U4{h[0] | (unsigned(h[1]) << 16), h[2] | (unsigned(h[3]) << 16), h[4] | (unsigned(h[5]) << 16),
              h[6] | (unsigned(h[7]) << 16)};
  }
}

// Two 16-bit elements of a 32-bit word as floats.
template <int IN>
__device__ __forceinline__ void unpack2(unsigned u, float& lo, float& hi) {
  if constexpr (IN == gt::kBF16) {
    lo = __uint_as_float(u << 16);
    hi = __uint_as_float(u & 0xFFFF0000u);
  } else {
    asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %2;\ncvt.f32.f16 %0, l;\ncvt.f32.f16 %1, h;\n}\n"
        : "=f"(lo), "=f"(hi)
        : "r"(u));
  }
}
template <int IN>
__device__ __forceinline__ void unpack8(const U4& v, float (&f)[8]) {
  unpack2<IN>(v.x, f[0], f[1]);
  unpack2<IN>(v.y, f[2], f[3]);
  unpack2<IN>(v.z, f[4], f[5]);
  unpack2<IN>(v.w, f[6], f[7]);
}
template <int IN>
__device__ __forceinline__ float elem(const void* p, long long i) {
  const unsigned short h = static_cast<const unsigned short*>(p)[i];
  float lo, hi;
  unpack2<IN>(static_cast<unsigned>(h), lo, hi);
  return lo;
}
template <int TY>
__device__ __forceinline__ float load_any(const void* p, long long i) {
  if constexpr (TY == gt::kF32)
    return static_cast<const float*>(p)[i];
  else
    return elem<TY>(p, i);
}
template <int TY>
__device__ __forceinline__ void store_any(void* p, long long i, float v) {
  if constexpr (TY == gt::kF32) {
    static_cast<float*>(p)[i] = v;
  } else {
    unsigned short h;
    if constexpr (TY == gt::kBF16)
      asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(v));
    else
      asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    static_cast<unsigned short*>(p)[i] = h;
  }
}

// Output (t, o) of batch b from its sums (a GLU's gate and up): alpha, beta * C, the fused chain with D's coordinates,
// D's element. `ep` is the batch's (at_batch).
template <int OUT, int CT, bool HAS_C, bool VEC_M, bool ALPHA_ONE, class Chain>
struct Output {
  using Params = typename ChainParams<Chain>::type;
  static constexpr bool kFused = ChainParams<Chain>::kFused;

  __device__ __forceinline__ static Params at_batch(const Params& ep, int b) {
    if constexpr (kFused)
      return ep.at_batch(b);
    else
      return ep;
  }

  __device__ __forceinline__ static void store(const GemvParams& p, const Params& ep, int b, int t, int o, float g,
                                               float up) {
    if constexpr (!ALPHA_ONE) {
      g *= p.alpha;
      up *= p.alpha;
    }
    const long long m = VEC_M ? t : o, n = VEC_M ? o : t;  // D's coordinates
    float v = g;
    if constexpr (HAS_C) v += p.beta * load_any<CT>(p.c, b * p.c_batch + t * p.c_t + o * p.c_r);
    if constexpr (Chain::kGlu)
      v = Chain::apply_glu(g, up, m, n, ep);
    else if constexpr (kFused)
      v = Chain::apply(v, m, n, ep);
    store_any<OUT>(p.d, b * p.d_batch + t * p.d_t + o * p.d_r, v);
  }
};

}  // namespace gt_gemv
