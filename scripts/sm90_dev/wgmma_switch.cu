// wgmma_switch: what does handing the tensor pipe from one consumer warpgroup to the other cost? (bench/NOTES.md
// step 14). No TMA and no producer: the operands sit in a shared-memory ring filled once with random bf16, so the
// only work is the consumers' wgmma stream (m64nBNk16, two 64-row slabs per k-block as our 128xBN ping-pong tile).
// Each CTA (one per SM) runs `tiles` tiles of `kiters` k-blocks; clock64 from start to end, per CTA.
//   mode 0  one consumer does every tile (the pipe never changes hands; scale-d = 0 on each tile's first k-block)
//   mode 1  ping-pong, hand-off after the last k-block's wait_group 1 (as gemm_pingpong)
//   mode 2  ping-pong, hand-off right after the last k-block's commit
//   mode 3  ping-pong, hand-off after the second-to-last k-block's commit
//   mode 4  one consumer, accumulating across tiles (no scale-d = 0 at all)
//   mode 5  as mode 1, the waiting consumer sleeps 32 ns between barrier tests
//   mode 6  as mode 1, one k-block per commit group pair: wait_group 0 after slab 0's 4 wgmmas (nvjet's order)
// epi = 1: after its tile each consumer converts its accumulators to bf16 and writes them to its own shared buffer
// (ping-pong: overlapped with the other consumer's mainloop, as the real epilogue); epi = 2: and stores the buffer to
// global memory with a 1-D bulk copy (the TMA store's shared-memory reads), waiting for its reads before the next.
// epi = 3: the accumulators go straight to global memory as bf16 pairs (st.global.b32), no shared memory.
// epi = 4: as 1, then copied out through the LSU (ld.shared.v4 + coalesced st.global.v4, no TMA); epi = 5: as 2 with
// the bulk store cut into 2 KB pieces.
// epi = 6: as 2 with the bulk store in quarter-slab pieces issued `gap` clocks apart.
// epi = 7: straight to global memory as 16-byte pieces after a transpose across each quad of lanes (shuffles).
// epi = 8: as 2, but the producer thread issues the bulk store (the consumer stages the slab and arrives on an
// mbarrier; the producer, between its loads and while it waits for a free stage, stores a ready slab whole, waits for
// its reads and hands the buffer back); epi = 9: as 8 with the slab stored in quarter-slab pieces, one piece right
// after each stage's loads (and, while the producer waits for a free stage, one every `gap` clocks at most).
// epi = 10: cuBLASLt's nvjet epilogue (step 16): each warp stages 8 rows x 64 columns (1 KB) at a time into one of its
// own two 1 KB buffers and its lane 0 bulk-stores them; no warpgroup barrier, only a wait for the store two pieces
// back to have read the buffer (nvjet waits for nothing).
// prod = 1: a producer thread fills the ring with 1-D bulk loads from a 2 MB global buffer (L2-resident) through
// full / empty barriers, as the real kernel's TMA loads; prod = 0: the ring is filled once, no barriers.
// Build: nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -I kernels -o wgmma_switch scripts/sm90_dev/wgmma_switch.cu
// Run:   wgmma_switch [tiles kiters]  -> one line per (BN, mode, epi): median CTA cycles, cycles per wgmma, excess.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ptx/ptx.cuh"
#include "ptx/wgmma.cuh"

using namespace gt_sm90;

// A non-blocking probe (try_wait may suspend the thread for a while, which a polling loop must not).
__device__ __forceinline__ bool mbar_test_wait(unsigned bar, unsigned parity) {
  unsigned ok;
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(ok)
      : "r"(bar), "r"(parity)
      : "memory");
  return ok != 0;
}


template <int BN>
struct Layout {
  static constexpr int kStages = BN <= 128 ? 5 : 4;
  static constexpr int kA = 2 * 64 * 128;  // two 64-row slabs x 64 k (bf16) = 16 KB
  static constexpr int kB = BN * 128;
  static constexpr int kStage = kA + kB;
  static_assert(kStage % 1024 == 0, "stage must keep 1024-byte alignment");
  static constexpr int kEpi = 64 * BN * 2;  // one 64-row slab of a consumer's tile in bf16
  static constexpr int kBytes = kStages * kStage + 2 * kEpi + 128 + 1024;
};

template <int BN>
__global__ void __launch_bounds__(384, 1) switch_kernel(int tiles, int kiters, int mode, int epi, int prod,
                                                        int gap, const unsigned char* src, unsigned char* dst_g, long long* out) {
  using L = Layout<BN>;
  using Mma = Wgmma<BN, false>;
  constexpr int kStages = L::kStages;
  extern __shared__ unsigned char raw[];
  const unsigned base = (smem_u32(raw) + 1023u) & ~1023u;
  const unsigned epi0 = base + kStages * L::kStage, bars = epi0 + 2 * L::kEpi;
  // Random bf16 in [-1, 1) everywhere in the ring.
  unsigned x = 0x9E3779B9u * (threadIdx.x + 1) + blockIdx.x;
  for (int i = threadIdx.x; i < kStages * L::kStage / 4; i += blockDim.x) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    const unsigned lo = 0x3F80u | (x & 0x807Fu), hi = 0x3F80u | ((x >> 16) & 0x807Fu);  // +-[1, 2) bf16
    st_shared_u32(base + 4 * i, (lo - 0x0080u * ((x >> 8) & 1)) | (hi << 16));
  }
  // bars: mma_done[2], then full[kStages], empty[kStages], epi_full[2], epi_empty[2]
  const unsigned full0 = bars + 16, empty0 = bars + 16 + 8 * kStages;
  const unsigned epi_full0 = empty0 + 8 * kStages, epi_empty0 = epi_full0 + 16;
  if (threadIdx.x == 0) {
    mbar_init(bars, 4);
    mbar_init(bars + 8, 4);
    for (int i = 0; i < kStages; ++i) {
      mbar_init(full0 + 8 * i, 1);
      mbar_init(empty0 + 8 * i, 1);
    }
    for (int c = 0; c < 2; ++c) {
      mbar_init(epi_full0 + 8 * c, 1);
      mbar_init(epi_empty0 + 8 * c, 1);
    }
    fence_mbar_init();
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  const bool pp = mode != 0 && mode != 4;
  if (wg == 0) {
    setmaxnreg_dec<40>();
    if (prod && tid == 0) {
      // Every ring position of every tile, in order (both consumers' tiles share the ring in ping-pong).
      // Every CTA walks the same 2 MB (L2 hits that the L2 merges, as a GEMM's shared operand tiles): the loads'
      // shared-memory writes without making the run L2-bound.
      const long long src_bytes = 2ll << 20;
      long long g = 0;
      int st = 0;
      unsigned ph = 0;
      // epi 8 / 9: slabs reach the producer in order: slab n is consumer (n / 2) % 2's, its mbarrier phase n % 2.
      const int slabs = (epi == 8 || epi == 9) ? tiles * 2 : 0;
      int n = 0, piece = 0;  // epi 9: the next piece of slab n (0 = slab n not yet seen ready)
      long long last_piece = 0;
      auto store_part = [&](int part, int parts) {
        const int c = (n >> 1) & 1, bytes = L::kEpi / parts;
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(
                         dst_g + ((static_cast<long long>(blockIdx.x) * 2 + c) * 2 + (n & 1)) * L::kEpi + part * bytes),
                     "r"(epi0 + c * L::kEpi + part * bytes), "r"(bytes)
                     : "memory");
        if (part == parts - 1) {
          asm volatile("cp.async.bulk.commit_group;" ::: "memory");
          asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
          mbar_arrive(epi_empty0 + 8 * c);
          ++n;
        }
      };
      auto slab_ready = [&]() { return n < slabs && mbar_test_wait(epi_full0 + 8 * ((n >> 1) & 1), n & 1); };
      for (int pos = 0; pos < tiles * kiters; ++pos) {
        if (epi == 8) {
          while (!mbar_test_wait(empty0 + 8 * st, ph ^ 1u))
            if (slab_ready()) store_part(0, 1);
        }
        if (epi == 9) {  // waiting for a free stage: a piece every `gap` clocks at most (no deadlock at short K)
          while (!mbar_test_wait(empty0 + 8 * st, ph ^ 1u))
            if (clock64() - last_piece > gap && (piece > 0 || slab_ready())) {
              store_part(piece, 4);
              piece = (piece + 1) % 4;
              last_piece = clock64();
            }
        }
        mbar_wait(empty0 + 8 * st, ph ^ 1u);
        mbar_arrive_expect_tx(full0 + 8 * st, L::kStage);
        for (int part = 0; part < 2; ++part) {
          const int bytes = part ? L::kB : L::kA;
          if (g + bytes > src_bytes) g = 0;
          asm volatile(
              "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                  base + st * L::kStage + (part ? L::kA : 0)),
              "l"(src + g), "r"(bytes), "r"(full0 + 8 * st)
              : "memory");
          g += bytes;
        }
        if (epi == 9 && (piece > 0 || slab_ready())) {
          store_part(piece, 4);
          piece = (piece + 1) % 4;
          last_piece = clock64();
        }
        if (++st == kStages) st = 0, ph ^= 1u;
      }
      while (n < slabs) {  // the slabs of the last tiles
        mbar_wait(epi_full0 + 8 * ((n >> 1) & 1), n & 1);
        if (epi == 9) {
          for (; piece < 4; ++piece) store_part(piece, 4);
          piece = 0;
        } else {
          store_part(0, 1);
        }
      }
      asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
    return;
  }
  setmaxnreg_inc<232>();
  const int cw = __shfl_sync(0xffffffffu, wg - 1, 0);
  if (!pp && cw == 1) return;
  constexpr unsigned long long kHi = smem_desc_sw128_hi(1024);
  const unsigned long long a0 = kHi | smem_desc_sw128_lo(base, 16), b0 = kHi | smem_desc_sw128_lo(base + L::kA, 16);
  float acc[2][BN / 2];
#pragma unroll
  for (int si = 0; si < 2; ++si)
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) acc[si][i] = 0.f;
  const long long t0 = clock64();
  int s = 0, prev = -1, mslab = 0;
  unsigned ph = 0;
  const int step = pp ? 2 : 1;
  // A ping-pong consumer's ring position: its tiles are every other tile; positions of the other's tiles are skipped.
  for (int j = pp ? cw : 0; j < tiles; j += step) {
    if (pp) {
      const unsigned pos = static_cast<unsigned>(j) * kiters;
      s = static_cast<int>(pos % kStages);
      ph = (pos / kStages) & 1u;
    }
    if (pp && j >= 1) {
      const unsigned bar = bars + 8 * (1 - cw), par = static_cast<unsigned>((j - 1) / 2) & 1u;
      if (mode == 5) {
        while (!mbar_try_wait(bar, par)) asm volatile("nanosleep.u32 32;");
      } else {
        mbar_wait(bar, par);
      }
    }
    for (int kb = 0; kb < kiters; ++kb) {
      if (prod) mbar_wait(full0 + 8 * s, ph);
#pragma unroll
      for (int si = 0; si < 2; ++si)
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) reg_fence(acc[si][i]);
      const unsigned long long off = static_cast<unsigned long long>(s) * (L::kStage >> 4);
      const int sc = (kb > 0 || mode == 4) ? 1 : 0;
      wgmma_fence();
      if (mode == 6) {
#pragma unroll
        for (int kk = 0; kk < 4; ++kk)
          Mma::template mma<0, 0>(acc[0], a0 + off + kk * 2, b0 + off + kk * 2, (sc || kk > 0) ? 1 : 0);
        wgmma_wait<0>();  // the previous k-block's slab 1 (and this one's slab 0 is issued but not committed)
#pragma unroll
        for (int kk = 0; kk < 4; ++kk)
          Mma::template mma<0, 0>(acc[1], a0 + off + (512 + kk * 2), b0 + off + kk * 2, (sc || kk > 0) ? 1 : 0);
        wgmma_commit();
      } else {
#pragma unroll
        for (int kk = 0; kk < 4; ++kk)
#pragma unroll
          for (int si = 0; si < 2; ++si)
            Mma::template mma<0, 0>(acc[si], a0 + off + (si * 512 + kk * 2), b0 + off + kk * 2,
                                    (sc || kk > 0) ? 1 : 0);
        wgmma_commit();
      }
      if (pp && tid % 32 == 0 && ((mode == 2 && kb == kiters - 1) || (mode == 3 && kb == kiters - 2) ||
                                  (mode == 3 && kiters == 1)))
        mbar_arrive(bars + 8 * cw);
      if (mode != 6) wgmma_wait<1>();
      if (prod && prev >= 0 && threadIdx.x % 128 == 0) mbar_arrive(empty0 + 8 * prev);
      prev = s;
      if (++s == kStages) s = 0, ph ^= 1u;
    }
    if (pp && tid % 32 == 0 && (mode == 1 || mode == 5 || mode == 6)) mbar_arrive(bars + 8 * cw);
    wgmma_wait<0>();
#pragma unroll
    for (int si = 0; si < 2; ++si)
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) reg_fence(acc[si][i]);
    if (prod && threadIdx.x % 128 == 0) mbar_arrive(empty0 + 8 * prev);
    prev = -1;
    if (epi == 3) {
      // Straight from the registers to global memory, no shared memory: bf16 pairs at the accumulator layout
      // (thread t of warp w: rows 16w + t/4 and +8 of each slab, columns 8c + 2(t%4), +1), D row-major, ld = BN.
      unsigned* d = reinterpret_cast<unsigned*>(dst_g + (static_cast<long long>(blockIdx.x) * 2 + cw) * 2 * L::kEpi);
      const int w = tid / 32, l = tid % 32;
#pragma unroll
      for (int si = 0; si < 2; ++si)
#pragma unroll
        for (int c = 0; c < BN / 8; ++c)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int row = 64 * si + 16 * w + l / 4 + 8 * h, col = 8 * c + 2 * (l % 4);
            const unsigned v = pack_bf16x2(acc[si][4 * c + 2 * h], acc[si][4 * c + 2 * h + 1]);
            asm volatile("st.global.b32 [%0], %1;" ::"l"(d + (row * BN + col) / 2), "r"(v) : "memory");
          }
    }
    if (epi == 7) {
      // Straight to global memory in 16-byte pieces: the 4 lanes of a quad hold column pairs 0..3 of the same 8-column
      // groups of a row; a 4x4 transpose across the quad (two xor-shuffle stages) gives lane t the whole 16 bytes of
      // group t of each set of 4 groups. A warp store then writes 8 rows x 64 contiguous bytes.
      unsigned char* d = dst_g + (static_cast<long long>(blockIdx.x) * 2 + cw) * 2 * L::kEpi;
      const int w = tid / 32, l = tid % 32, t = l % 4;
#pragma unroll
      for (int si = 0; si < 2; ++si)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = 64 * si + 16 * w + l / 4 + 8 * h;
#pragma unroll
          for (int c0 = 0; c0 + 4 <= BN / 8; c0 += 4) {
            unsigned x[4];
#pragma unroll
            for (int k = 0; k < 4; ++k)
              x[k] = pack_bf16x2(acc[si][4 * (c0 + k) + 2 * h], acc[si][4 * (c0 + k) + 2 * h + 1]);
            {
              const bool o = t & 1;
              const unsigned s0 = __shfl_xor_sync(0xffffffffu, o ? x[0] : x[1], 1);
              const unsigned s1 = __shfl_xor_sync(0xffffffffu, o ? x[2] : x[3], 1);
              if (o) x[0] = s0, x[2] = s1; else x[1] = s0, x[3] = s1;
            }
            {
              const bool o = t & 2;
              const unsigned s0 = __shfl_xor_sync(0xffffffffu, o ? x[0] : x[2], 2);
              const unsigned s1 = __shfl_xor_sync(0xffffffffu, o ? x[1] : x[3], 2);
              if (o) x[0] = s0, x[1] = s1; else x[2] = s0, x[3] = s1;
            }
            asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(d + (row * BN + 8 * (c0 + t)) * 2),
                         "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3])
                         : "memory");
          }
#pragma unroll
          for (int c = BN / 8 / 4 * 4; c < BN / 8; ++c) {  // a last set of fewer than 4 groups: 4-byte stores
            const unsigned v = pack_bf16x2(acc[si][4 * c + 2 * h], acc[si][4 * c + 2 * h + 1]);
            asm volatile("st.global.b32 [%0], %1;" ::"l"(d + (row * BN + 8 * c + 2 * t) * 2), "r"(v) : "memory");
          }
        }
    }
    if (epi == 8 || epi == 9) {
      // Stage each slab, hand it to the producer, which stores it and hands the buffer back.
#pragma unroll
      for (int si = 0; si < 2; ++si) {
        mbar_wait(epi_empty0 + 8 * cw, (static_cast<unsigned>(mslab) & 1u) ^ 1u);
        const unsigned dst = epi0 + cw * L::kEpi + tid * 16;
#pragma unroll
        for (int i = 0; i < BN / 2; i += 8) {
          const unsigned v0 = pack_bf16x2(acc[si][i], acc[si][i + 1]), v1 = pack_bf16x2(acc[si][i + 2], acc[si][i + 3]);
          const unsigned v2 = pack_bf16x2(acc[si][i + 4], acc[si][i + 5]), v3 = pack_bf16x2(acc[si][i + 6], acc[si][i + 7]);
          asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(dst + (i / 8) * 2048), "r"(v0), "r"(v1),
                       "r"(v2), "r"(v3)
                       : "memory");
        }
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        named_bar_sync(1 + cw, 128);
        if (tid == 0) mbar_arrive(epi_full0 + 8 * cw);
        ++mslab;
      }
    }
    if (epi == 10) {
      const int w = tid / 32, l = tid % 32;
      const unsigned wbuf = epi0 + cw * L::kEpi + w * 2048;
      unsigned char* g = dst_g + (static_cast<long long>(blockIdx.x) * 2 + cw) * 2 * L::kEpi + w * (L::kEpi / 2);  // 32 rows x BN per warp
      int nb = 0;
#pragma unroll
      for (int si = 0; si < 2; ++si)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int c0 = 0; c0 < BN / 8; c0 += 8) {  // a piece: 8 groups of 8 columns (fewer at the end)
            constexpr int kMaxG = 8;
            if (l == 0) asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
            __syncwarp();
            const unsigned buf = wbuf + (nb & 1) * 1024;
            unsigned v[kMaxG];
#pragma unroll
            for (int k = 0; k < kMaxG; ++k)
              v[k] = c0 + k < BN / 8 ? pack_bf16x2(acc[si][4 * (c0 + k) + 2 * h], acc[si][4 * (c0 + k) + 2 * h + 1]) : 0u;
            const int groups = BN / 8 - c0 < kMaxG ? BN / 8 - c0 : kMaxG;
            asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(buf + l * 16), "r"(v[0]), "r"(v[1]), "r"(v[2]),
                         "r"(v[3])
                         : "memory");
            if (groups > 4)
              asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(buf + 512 + l * 16), "r"(v[4]), "r"(v[5]),
                           "r"(v[6]), "r"(v[7])
                           : "memory");
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            __syncwarp();
            if (l == 0) {
              const int bytes = groups * 128;
              asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(
                               g + ((si * 2 + h) * (BN / 8) + c0) * 128),
                           "r"(buf), "r"(bytes)
                           : "memory");
              asm volatile("cp.async.bulk.commit_group;" ::: "memory");
            }
            ++nb;
          }
    }
    if (epi == 1 || epi == 2 || epi == 4 || epi == 5 || epi == 6) {
      // One 64-row slab at a time through the consumer's slab buffer: each thread's BN/2 accumulators as bf16
      // pairs, 16-byte stores (thread-major, conflict-free); epi = 2 then bulk-stores the slab to global memory.
#pragma unroll
      for (int si = 0; si < 2; ++si) {
        if (epi == 2 || epi == 5 || epi == 6) {  // the previous store's reads of this buffer are done
          if (tid == 0) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
          named_bar_sync(1 + cw, 128);
        }
        const unsigned dst = epi0 + cw * L::kEpi + tid * 16;
#pragma unroll
        for (int i = 0; i < BN / 2; i += 8) {
          const unsigned v0 = pack_bf16x2(acc[si][i], acc[si][i + 1]), v1 = pack_bf16x2(acc[si][i + 2], acc[si][i + 3]);
          const unsigned v2 = pack_bf16x2(acc[si][i + 4], acc[si][i + 5]), v3 = pack_bf16x2(acc[si][i + 6], acc[si][i + 7]);
          asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(dst + (i / 8) * 2048), "r"(v0), "r"(v1),
                       "r"(v2), "r"(v3)
                       : "memory");
        }
        if (epi == 4) {  // copy-out through the LSU: 16-byte loads from shared, coalesced 16-byte global stores
          named_bar_sync(1 + cw, 128);
          unsigned char* g = dst_g + ((static_cast<long long>(blockIdx.x) * 2 + cw) * 2 + si) * L::kEpi;
#pragma unroll 4
          for (int o = tid * 16; o < L::kEpi; o += 128 * 16) {
            unsigned v0, v1, v2, v3;
            asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
                         : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3)
                         : "r"(epi0 + cw * L::kEpi + o));
            asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(g + o), "r"(v0), "r"(v1), "r"(v2), "r"(v3)
                         : "memory");
          }
          named_bar_sync(1 + cw, 128);
        }
        if (epi == 5) {  // the bulk store in 2 KB pieces
          asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
          named_bar_sync(1 + cw, 128);
          if (tid == 0) {
            for (int o = 0; o < L::kEpi; o += 2048) {
              const int n = L::kEpi - o < 2048 ? L::kEpi - o : 2048;
              asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(
                               dst_g + ((static_cast<long long>(blockIdx.x) * 2 + cw) * 2 + si) * L::kEpi + o),
                           "r"(epi0 + cw * L::kEpi + o), "r"(n)
                           : "memory");
            }
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
          }
        }
        if (epi == 6) {  // the bulk store in quarter-slab pieces, `gap` clocks apart
          asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
          named_bar_sync(1 + cw, 128);
          if (tid == 0) {
            constexpr int kPiece = L::kEpi / 4;
            for (int o = 0; o < L::kEpi; o += kPiece) {
              if (o > 0) {
                const long long t = clock64();
                while (clock64() - t < gap) {
                }
              }
              asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(
                               dst_g + ((static_cast<long long>(blockIdx.x) * 2 + cw) * 2 + si) * L::kEpi + o),
                           "r"(epi0 + cw * L::kEpi + o), "r"(kPiece)
                           : "memory");
            }
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
          }
        }
        if (epi == 2) {
          asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
          named_bar_sync(1 + cw, 128);
          if (tid == 0) {
            asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(
                             dst_g + ((static_cast<long long>(blockIdx.x) * 2 + cw) * 2 + si) * L::kEpi),
                         "r"(epi0 + cw * L::kEpi), "r"(L::kEpi)
                         : "memory");
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
          }
        }
      }
    }
  }
  if ((epi == 2 || epi == 5 || epi == 6 || epi == 10) && tid % 32 == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  const long long t1 = clock64();
  if (tid == 0) {
    out[4 * blockIdx.x + 2 * cw] = t0;
    out[4 * blockIdx.x + 2 * cw + 1] = t1;
  }
}

template <int BN>
void run(int sms, int tiles, int kiters, int mode, int epi, int prod, int gap, double ref_per_wgmma, double* per_wgmma_out) {
  using L = Layout<BN>;
  long long* d = nullptr;
  cudaMalloc(&d, sizeof(long long) * 4 * sms);
  static unsigned char *src = nullptr, *dst = nullptr;
  if (!src) {
    cudaMalloc(&src, 16 << 20);
    cudaMemset(src, 0x3c, 16 << 20);
    cudaMalloc(&dst, static_cast<size_t>(sms) * 4 * Layout<256>::kEpi);
  }
  cudaFuncSetAttribute(switch_kernel<BN>, cudaFuncAttributeMaxDynamicSharedMemorySize, L::kBytes);
  std::vector<long long> h(4 * sms);
  std::vector<double> cyc;
  for (int rep = 0; rep < 3; ++rep) {
    cudaMemset(d, 0, sizeof(long long) * 4 * sms);
    switch_kernel<BN><<<sms, 384, L::kBytes>>>(tiles, kiters, mode, epi, prod, gap, src, dst, d);
    const cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      std::printf("BN %d mode %d: %s\n", BN, mode, cudaGetErrorString(e));
      std::exit(1);
    }
    cudaMemcpy(h.data(), d, sizeof(long long) * 4 * sms, cudaMemcpyDeviceToHost);
    if (rep == 0) continue;  // warm-up
    for (int b = 0; b < sms; ++b) {
      long long t0 = h[4 * b], t1 = h[4 * b + 1];
      if (h[4 * b + 2] != 0) t0 = std::min(t0, h[4 * b + 2]), t1 = std::max(t1, h[4 * b + 3]);
      cyc.push_back(static_cast<double>(t1 - t0));
    }
  }
  cudaFree(d);
  std::sort(cyc.begin(), cyc.end());
  const double med = cyc[cyc.size() / 2], wg = static_cast<double>(tiles) * kiters * 8;
  const double per = med / wg;
  if (per_wgmma_out) *per_wgmma_out = per;
  std::printf("BN %3d tiles %3d kiters %3d mode %d epi %d prod %d gap %4d: median %9.0f cycles (p10 %9.0f p90 %9.0f)  %.3f per wgmma",
              BN, tiles, kiters, mode, epi, prod, gap, med, cyc[cyc.size() / 10], cyc[cyc.size() * 9 / 10], per);
  if (ref_per_wgmma > 0)
    std::printf("  excess per tile %+7.0f cycles (%+.2f%%)", (med - ref_per_wgmma * wg) / tiles,
                100.0 * (per / ref_per_wgmma - 1));
  std::printf("\n");
}

template <int BN>
void suite(int sms, int tiles, int kiters) {
  double ref = 0;
  run<BN>(sms, tiles, kiters, 4, 0, 0, 0, 0, &ref);  // the pipe's own rate: one consumer, never zeroing
  for (int rep = 0; rep < 2; ++rep)
    for (int epi : {0, 1, 2, 9, 10}) run<BN>(sms, tiles, kiters, 1, epi, 1, epi == 9 ? 600 : 0, ref, nullptr);
}

int main(int argc, char** argv) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int tiles = argc > 2 ? std::atoi(argv[1]) : 16, kiters = argc > 2 ? std::atoi(argv[2]) : 64;
  std::printf("%d SMs, %d tiles per CTA, %d k-blocks per tile, 8 wgmma m64nBNk16 per k-block\n", sms, tiles, kiters);
  suite<176>(sms, tiles, kiters);
  suite<128>(sms, tiles, kiters);
  return 0;
}
