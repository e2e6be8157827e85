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

// 8 bytes (x, y; z = w = 0) from an address that is only VB-byte aligned, as ld16 (the vectors: cached).
template <int VB>
__device__ __forceinline__ U4 ld8(const void* p) {
  const char* c = static_cast<const char*>(p);
  U4 v{0u, 0u, 0u, 0u};
  if constexpr (VB >= 8) {
    asm("ld.global.nc.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(c));
  } else if constexpr (VB == 4) {
    asm("ld.global.nc.u32 %0, [%1];" : "=r"(v.x) : "l"(c));
    asm("ld.global.nc.u32 %0, [%1];" : "=r"(v.y) : "l"(c + 4));
  } else {
    static_assert(VB == 2, "loads of 16, 8, 4 or 2 bytes");
    unsigned short h[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) asm("ld.global.nc.u16 %0, [%1];" : "=h"(h[i]) : "l"(c + 2 * i));
    v.x = h[0] | (unsigned(h[1]) << 16);
    v.y = h[2] | (unsigned(h[3]) << 16);
  }
  return v;
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
  } else if constexpr (TY == gt::kE4M3) {  // saturated to +-448 (the caller has applied D's scale)
    unsigned short h;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(h) : "f"(0.0f), "f"(v));  // v: the low byte
    static_cast<unsigned char*>(p)[i] = static_cast<unsigned char>(h);
  } else {
    unsigned short h;
    if constexpr (TY == gt::kBF16)
      asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(v));
    else
      asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    static_cast<unsigned short*>(p)[i] = h;
  }
}

// Storage of an element type: 16-bit words, fp8 bytes.
template <int TY>
struct Storage {
  using type = unsigned short;
};
template <>
struct Storage<gt::kE4M3> {
  using type = unsigned char;
};
template <>
struct Storage<gt::kE5M2> {
  using type = unsigned char;
};

// Four fp8 values FT (the bytes of u, lowest first) as two pairs of 16-bit values CT16 (f16 or bf16, the mma's
// type), in order: w0 = {byte 0 (low half), byte 1}, w1 = {byte 2, byte 3}. cvt.f16x2.{e4m3,e5m2}x2 widens exactly
// and keeps the order (the low byte to the low half). e4m3 to bf16: every e4m3 value is a normal f16 with 3
// mantissa bits, so moving its 5-bit exponent and top 7 mantissa bits into bf16's fields is exact up to the exponent
// bias (15 against 127), which one multiply by 2^112 (exact: a power of two, the result normal) restores; zero stays
// zero. e5m2 to bf16 goes through f32 (cvt.rn.bf16x2.f32 d, a, b puts a in the upper half).
template <int FT, int CT16>
__device__ __forceinline__ void fp8x4_to_16(unsigned u, unsigned& w0, unsigned& w1) {
  static_assert(FT == gt::kE4M3 || FT == gt::kE5M2, "fp8 source");
  static_assert(CT16 == gt::kF16 || CT16 == gt::kBF16, "to f16 or bf16");
  if constexpr (FT == gt::kE4M3)
    asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %2;\ncvt.rn.f16x2.e4m3x2 %0, l;\ncvt.rn.f16x2.e4m3x2 %1, h;\n}\n"
        : "=r"(w0), "=r"(w1)
        : "r"(u));
  else
    asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %2;\ncvt.rn.f16x2.e5m2x2 %0, l;\ncvt.rn.f16x2.e5m2x2 %1, h;\n}\n"
        : "=r"(w0), "=r"(w1)
        : "r"(u));
  if constexpr (CT16 == gt::kBF16 && FT == gt::kE5M2) {
    // e5m2's small values are f16 subnormals: through f32 (exact: 2 mantissa bits, exponents within bf16's).
    asm("{\n.reg .b16 l, h;\n.reg .f32 a, b;\nmov.b32 {l, h}, %0;\ncvt.f32.f16 a, l;\ncvt.f32.f16 b, h;\n"
        "cvt.rn.bf16x2.f32 %0, b, a;\n}\n"
        : "+r"(w0));
    asm("{\n.reg .b16 l, h;\n.reg .f32 a, b;\nmov.b32 {l, h}, %0;\ncvt.f32.f16 a, l;\ncvt.f32.f16 b, h;\n"
        "cvt.rn.bf16x2.f32 %0, b, a;\n}\n"
        : "+r"(w1));
  } else if constexpr (CT16 == gt::kBF16) {
    w0 = ((w0 >> 3) & 0x0FFF0FFFu) | (w0 & 0x80008000u);
    w1 = ((w1 >> 3) & 0x0FFF0FFFu) | (w1 & 0x80008000u);
    // x * 2^112 + (-0): exact, and -0 keeps a zero's sign.
    asm("fma.rn.bf16x2 %0, %0, %1, %2;" : "+r"(w0) : "r"(0x77807780u), "r"(0x80008000u));
    asm("fma.rn.bf16x2 %0, %0, %1, %2;" : "+r"(w1) : "r"(0x77807780u), "r"(0x80008000u));
  }
}
// 16 fp8 values as two groups of 8 16-bit values (f[0]: bytes 0-7, f[1]: bytes 8-15).
template <int FT, int CT16>
__device__ __forceinline__ void fp8x16_to_16(const U4& v, U4 (&f)[2]) {
  fp8x4_to_16<FT, CT16>(v.x, f[0].x, f[0].y);
  fp8x4_to_16<FT, CT16>(v.y, f[0].z, f[0].w);
  fp8x4_to_16<FT, CT16>(v.z, f[1].x, f[1].y);
  fp8x4_to_16<FT, CT16>(v.w, f[1].z, f[1].w);
}

// Output (t, o) of batch b from its sums (a GLU's gate and up): alpha, beta * C, the fused chain with D's coordinates,
// D's element (an e4m3 D: times scale_d, saturated). Returns the value before scale_d (an e4m3 D's amax statistic).
// `ep` is the batch's (at_batch).
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

  __device__ __forceinline__ static float store(const GemvParams& p, const Params& ep, int b, int t, int o, float g,
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
    if constexpr (OUT == gt::kE4M3)
      store_any<OUT>(p.d, b * p.d_batch + t * p.d_t + o * p.d_r, v * *p.sd);
    else
      store_any<OUT>(p.d, b * p.d_batch + t * p.d_t + o * p.d_r, v);
    return v;
  }
};

}  // namespace gt_gemv
