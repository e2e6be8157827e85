#pragma once
// Skinny GEMM on the CUDA cores: T <= 8 vectors (decode tokens) against a matrix W of R rows (weights), both stored
// K-contiguous (y = x·Wᵀ with W stored [out, in], as torch.nn.Linear keeps it). The backend is src/backends/gemv.
//
// Decode GEMMs are a stream of W through the SMs: 1 x 4096 x 14336 reads 117 MB of weights for 117 MFLOP. The
// tensor-core kernels (sm90 decode tiles) pad the few tokens to a 16-wide tile N and reach ~3.5 TB/s on the H200
// (bench/NOTES.md step 20): a grid of 64-128 CTAs whose TMA ring is one stream per SM. Here every warp streams its
// own rows with 16-byte loads, UNROLL x NR of them in flight per lane, and a whole grid of warps keeps the memory
// system full; fp32 FMAs on the CUDA cores keep up while T is small.
//
// Work split: a CTA of WARPS warps owns WARPS / KSPLIT groups of RPW output rows; the KSPLIT warps of a group split
// K in contiguous slices and meet in shared memory. Lane l of a warp reads 16-byte chunks l, l + 32, ... of its
// slice of each of its NR rows (NR = RPW, or 2 RPW with a GLU: the gate and the up row of each output), and the
// same chunks of the T vectors (L1-cached loads: every warp of the SM reads the same vectors). Partial sums reduce
// across the warp (shuffles), then across the K slices; the first warp of the group applies alpha, beta * C and the
// fused chain and stores each output element on its own (the output is T x R elements: small next to W).
//
// Template parameters: T vectors; IN element type of W and X (0 bf16, 1 f16); OUT / CT the types of D and C
// (0 bf16, 1 f16, 2 f32); HAS_C; WARPS, RPW, KSPLIT, UNROLL as above; VEC_M: the vectors are the problem's rows
// (D element (t, r) is D(m = t, n = r)), else its columns (D(m = r, n = t)) — a fused chain and C use D's own
// coordinates either way; ALPHA_ONE skips the multiply; Chain: gemmtune_epi::Epi<...> or gt_gemv::Plain.
// A chain's unit includes epilogue/epilogue_ops.cuh before this header.

namespace gemmtune_epi {
struct EpiParams;
}

namespace gt_gemv {

// Mirror: src/backends/gemv/gemv_backend.cpp HostGemvParams.
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
};

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

// Two 16-bit elements of a 32-bit word as floats.
template <int IN>
__device__ __forceinline__ void unpack2(unsigned u, float& lo, float& hi) {
  if constexpr (IN == 0) {
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
  if constexpr (TY == 2)
    return static_cast<const float*>(p)[i];
  else
    return elem<TY>(p, i);
}
template <int TY>
__device__ __forceinline__ void store_any(void* p, long long i, float v) {
  if constexpr (TY == 2) {
    static_cast<float*>(p)[i] = v;
  } else {
    unsigned short h;
    if constexpr (TY == 0)
      asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(v));
    else
      asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    static_cast<unsigned short*>(p)[i] = h;
  }
}

template <int T, int IN, int OUT, int CT, bool HAS_C, int WARPS, int RPW, int KSPLIT, int UNROLL, bool VEC_M,
          bool ALPHA_ONE, class Chain>
struct Gemv {
  static_assert(T >= 1 && T <= 8, "1-8 vectors");
  static_assert(WARPS % KSPLIT == 0, "the K slices of a row group are warps of one CTA");
  static_assert(UNROLL >= 1 && RPW >= 1, "");
  static constexpr bool kGlu = Chain::kGlu;
  static_assert(!kGlu || VEC_M, "a GLU pairs W rows (D's columns): the vectors must be D's rows");
  static_assert(!(kGlu && HAS_C), "a GLU takes no C");
  static constexpr int NR = kGlu ? 2 * RPW : RPW;  // W rows per warp
  static constexpr int GROUPS = WARPS / KSPLIT;     // row groups per CTA
  static constexpr int ROWS = GROUPS * RPW;        // output rows per CTA
  static constexpr int ITEMS = RPW * T;            // outputs per row group
  using Params = typename ChainParams<Chain>::type;
  static constexpr bool kFused = ChainParams<Chain>::kFused;

  __device__ __forceinline__ static float sum_warp(float v) {
#pragma unroll
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
    return v;
  }

  __device__ __forceinline__ static void run(const GemvParams& p, const Params& ep0) {
    __shared__ float red[WARPS * NR * T];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int ks = warp % KSPLIT, group = warp / KSPLIT;
    const int b = blockIdx.y;
    const int o0 = blockIdx.x * ROWS + group * RPW;  // first output row of the group

    // The warp's W rows (clamped into the matrix: rows past the end compute garbage that is never stored).
    const unsigned short* wrow[NR];
    const unsigned short* wbase = static_cast<const unsigned short*>(p.w) + b * p.w_batch;
#pragma unroll
    for (int i = 0; i < RPW; ++i) {
      const int o = min(o0 + i, p.rows - 1);
      if constexpr (kGlu) {
        wrow[2 * i] = wbase + Chain::gate_col(o, ep0) * p.ldw;
        wrow[2 * i + 1] = wbase + Chain::up_col(o, ep0) * p.ldw;
      } else {
        wrow[i] = wbase + static_cast<long long>(o) * p.ldw;
      }
    }
    const unsigned short* xrow = static_cast<const unsigned short*>(p.x) + b * p.x_batch;

    float acc[NR][T];
#pragma unroll
    for (int j = 0; j < NR; ++j)
#pragma unroll
      for (int t = 0; t < T; ++t) acc[j][t] = 0.0f;

    // 16-byte chunks of K: slice ks covers [cb, ce).
    const int chunks = p.k / 8;
    const int per = (chunks + KSPLIT - 1) / KSPLIT;
    const int cb = ks * per, ce = min(chunks, cb + per);
    int c = cb + lane;
    for (; c + 32 * (UNROLL - 1) < ce; c += 32 * UNROLL) {
      U4 wv[UNROLL][NR];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int j = 0; j < NR; ++j) wv[u][j] = ld_stream(wrow[j] + (c + 32 * u) * 8);
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) fma_chunk(acc, wv[u], xrow, p.ldx, c + 32 * u);
    }
    for (; c < ce; c += 32) {
      U4 wv[1][NR];
#pragma unroll
      for (int j = 0; j < NR; ++j) wv[0][j] = ld_stream(wrow[j] + c * 8);
      fma_chunk(acc, wv[0], xrow, p.ldx, c);
    }
    // K % 8 trailing elements: the last slice's first lanes, one element each.
    if (ks == KSPLIT - 1 && lane < p.k - chunks * 8) {
      const int e = chunks * 8 + lane;
#pragma unroll
      for (int t = 0; t < T; ++t) {
        const float xv = elem<IN>(xrow, t * p.ldx + e);
#pragma unroll
        for (int j = 0; j < NR; ++j) acc[j][t] += elem<IN>(wrow[j], e) * xv;
      }
    }

#pragma unroll
    for (int j = 0; j < NR; ++j)
#pragma unroll
      for (int t = 0; t < T; ++t) acc[j][t] = sum_warp(acc[j][t]);

    // Every lane holds the warp's sums now; they meet in shared memory, where the epilogue's lanes pick their items
    // by a run-time index (selecting from the register array instead made ptxas spill it).
    if (lane == 0) {
#pragma unroll
      for (int j = 0; j < NR; ++j)
#pragma unroll
        for (int t = 0; t < T; ++t) red[(warp * NR + j) * T + t] = acc[j][t];
    }
    if constexpr (KSPLIT > 1) {
      __syncthreads();
      if (ks != 0) return;
    } else {
      __syncwarp();
    }

    // Output item q of the group: vector t = q / RPW, row o0 + q % RPW (consecutive lanes: consecutive rows).
    const Params ep = batch_params(ep0, b);
    for (int q = lane; q < ITEMS; q += 32) {
      const int t = q / RPW, i = q % RPW, o = o0 + i;
      if (o >= p.rows) continue;
      float g = 0.0f, up = 0.0f;
      for (int s = 0; s < KSPLIT; ++s) {
        const int w = group * KSPLIT + s;
        g += red[(w * NR + (kGlu ? 2 * i : i)) * T + t];
        if constexpr (kGlu) up += red[(w * NR + 2 * i + 1) * T + t];
      }
      if constexpr (!ALPHA_ONE) {
        g *= p.alpha;
        up *= p.alpha;
      }
      const long long m = VEC_M ? t : o, n = VEC_M ? o : t;  // D's coordinates
      float v = g;
      if constexpr (HAS_C) v += p.beta * load_any<CT>(p.c, b * p.c_batch + t * p.c_t + o * p.c_r);
      if constexpr (kGlu)
        v = Chain::apply_glu(g, up, m, n, ep);
      else if constexpr (kFused)
        v = Chain::apply(v, m, n, ep);
      store_any<OUT>(p.d, b * p.d_batch + t * p.d_t + o * p.d_r, v);
    }
  }

  __device__ __forceinline__ static Params batch_params(const Params& ep, int b) {
    if constexpr (kFused)
      return ep.at_batch(b);
    else
      return ep;
  }

  // acc[j][t] += W row j's chunk c . vector t's chunk c (8 elements each).
  __device__ __forceinline__ static void fma_chunk(float (&acc)[NR][T], const U4 (&wv)[NR],
                                                   const unsigned short* xrow, long long ldx, int c) {
    float wf[NR][8];
#pragma unroll
    for (int j = 0; j < NR; ++j) unpack8<IN>(wv[j], wf[j]);
#pragma unroll
    for (int t = 0; t < T; ++t) {
      float xf[8];
      unpack8<IN>(ld_cached(xrow + t * ldx + c * 8), xf);
#pragma unroll
      for (int j = 0; j < NR; ++j) {
        // Two chains of four FMAs instead of one of eight (with NR = T = 1 nothing else hides the FMA latency).
        float s0 = wf[j][0] * xf[0], s1 = wf[j][1] * xf[1];
#pragma unroll
        for (int e = 2; e < 8; e += 2) {
          s0 = fmaf(wf[j][e], xf[e], s0);
          s1 = fmaf(wf[j][e + 1], xf[e + 1], s1);
        }
        acc[j][t] += s0 + s1;
      }
    }
  }
};

}  // namespace gt_gemv
