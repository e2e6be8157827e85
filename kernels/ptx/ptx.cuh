#pragma once
// Thin inline-PTX wrappers for Hopper (sm_90a): shared-memory addresses, mbarriers, TMA (cp.async.bulk.tensor),
// wgmma bookkeeping, fences, setmaxnreg, named barriers, clusters and packed conversions.
// NOTES: no CUDA headers on purpose. NVRTC compiles this TU in ~20 ms bare; <cuda/barrier> alone costs ~0.8 s.
// Everything takes 32-bit shared-memory (shared::cta window) addresses, as the PTX instructions do.

namespace gt_sm90 {

// The CUtensorMap of the driver API, by value as a __grid_constant__ kernel parameter (128 bytes, 64-byte aligned).
struct alignas(64) TmaDesc {
  unsigned long long data[16];
};

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  unsigned long long a;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
  return static_cast<unsigned>(a);
}

// ---- mbarrier ----
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// Makes barrier initialisation visible to the async proxy and to the other CTAs of the cluster.
__device__ __forceinline__ void fence_mbar_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }

__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// The shared::cluster address of `addr`'s offset in CTA `cta` of this cluster. Offsets inside a CTA's window carry
// over: mapa(addr) + d == mapa(addr + d).
__device__ __forceinline__ unsigned mapa_cluster(unsigned addr, unsigned cta) {
  unsigned r;
  asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(cta));
  return r;
}
// Arrive on the barrier at shared::cluster address `bar` (from mapa_cluster; .release.cta, the default).
// NOTES: .release.cta as CUTLASS's ClusterBarrier::arrive. A stage-ring arrival only frees a stage for TMA
// (async proxy) writes; nothing the arriving thread wrote needs to be visible cluster-wide. `.release.cluster` there
// cost a fixed ~0.3-0.4 us per k-block on the H200 (2x1/1x2 clusters 1.4x slower than 1x1 with 128x256 tiles, 2.2x
// with 128x64, independent of the stage count), as if each arrival waited for the wgmmas in flight.
__device__ __forceinline__ void mbar_arrive_remote(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(bar) : "memory");
}
// Arrive on the barrier at the same offset in the shared memory of CTA `cta` of this cluster.
__device__ __forceinline__ void mbar_arrive_cluster(unsigned bar, unsigned cta) {
  mbar_arrive_remote(mapa_cluster(bar, cta));
}
__device__ __forceinline__ bool mbar_try_wait(unsigned bar, unsigned parity) {
  unsigned ok;
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(ok)
      : "r"(bar), "r"(parity)
      : "memory");
  return ok != 0;
}
// Waits until the phase with parity `parity` has completed (a fresh barrier counts parity 1 as completed).
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  while (!mbar_try_wait(bar, parity)) {
  }
}

// Sends one 32-bit value into the shared memory of CTA `cta` of this cluster, at `addr`'s offset, through that CTA's
// mbarrier at `bar`'s offset: an arrival that expects 4 bytes, and an st.async that completes them. A thread that
// then waits on the barrier's phase reads the value with a plain ld.shared: the data travels like a TMA load's, and
// no cluster-scope fence is needed (the dynamic tile order, sm90/sm90_tile_stream.cuh).
// NOTES: the first version stored with st.shared::cluster and published with mbarrier.arrive.release.cluster, its
// readers waiting with .acquire.cluster: 3-4% slower at 8192x6144x4096 than the static order, against 1.2% with
// st.async (docs/PERFORMANCE.md, tile orders).
__device__ __forceinline__ void send_s32_cluster(unsigned addr, unsigned bar, unsigned cta, int v) {
  asm volatile(
      "{\n.reg .b32 ra, rb;\nmapa.shared::cluster.u32 ra, %0, %2;\nmapa.shared::cluster.u32 rb, %1, %2;\n"
      "mbarrier.arrive.expect_tx.shared::cluster.b64 _, [rb], 4;\n"
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.s32 [ra], %3, [rb];\n}\n" ::"r"(addr),
      "r"(bar), "r"(cta), "r"(v)
      : "memory");
}
__device__ __forceinline__ int ld_shared_s32(unsigned addr) {
  int v;
  asm volatile("ld.shared.s32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
  return v;
}

// ---- TMA ----
__device__ __forceinline__ void tma_load_3d(unsigned dst, const TmaDesc& desc, unsigned bar, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(
          dst),
      "l"(&desc), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}
// Same box, written to the same shared-memory offset (and completing the barrier at the same offset) in every CTA
// of the cluster named in `mask`.
__device__ __forceinline__ void tma_load_3d_multicast(unsigned dst, const TmaDesc& desc, unsigned bar, int c0, int c1,
                                                      int c2, unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, "
      "%3, %4}], [%5], %6;" ::"r"(dst),
      "l"(&desc), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "h"(mask)
      : "memory");
}
__device__ __forceinline__ void tma_store_3d(const TmaDesc& desc, unsigned src, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];" ::"l"(&desc),
               "r"(c0), "r"(c1), "r"(c2), "r"(src)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Waits until at most N committed bulk groups still read shared memory.
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
__device__ __forceinline__ void prefetch_tma_desc(const TmaDesc& desc) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(&desc) : "memory");
}

// ---- fences and barriers ----
// Generic-proxy shared-memory writes (st.shared) -> visible to the async proxy (TMA store, wgmma).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
__device__ __forceinline__ void named_bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void cta_sync() { asm volatile("bar.sync 0;" ::: "memory"); }

// ---- device-scope flags and L2 data (the stream-K partials) ----
__device__ __forceinline__ void fence_acq_rel_gpu() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
__device__ __forceinline__ void st_relaxed_gpu(int* p, int v) {
  asm volatile("st.relaxed.gpu.global.s32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ int ld_acquire_gpu(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_global_v4(float* p, float a, float b, float c, float d) {
  asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}
// Through L2 only (.cg): another SM wrote the data.
__device__ __forceinline__ void ld_global_cg_v4(const float* p, float& a, float& b, float& c, float& d) {
  asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(a), "=f"(b), "=f"(c), "=f"(d) : "l"(p) : "memory");
}

// ---- wgmma bookkeeping ----
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accumulator reads/writes across wgmma issue/wait points.
__device__ __forceinline__ void reg_fence(float& r) { asm volatile("" : "+f"(r)::"memory"); }

// Shared-memory matrix descriptor (sm_90 wgmma), 128-byte swizzle, in two words. Byte offsets; the 4 LSBs are
// dropped. Low word: start address | leading byte offset (LBO); high word: stride byte offset (SBO) | swizzle mode.
// Kept apart so a kernel can build the low word once and step it with integer adds (see sm90_mainloop.cuh).
__device__ __forceinline__ unsigned smem_desc_sw128_lo(unsigned addr, unsigned lbo) {
  return ((addr & 0x3FFFFu) >> 4) | (((lbo & 0x3FFFFu) >> 4) << 16);
}
__host__ __device__ constexpr unsigned long long smem_desc_sw128_hi(unsigned sbo) {
  return (static_cast<unsigned long long>((sbo & 0x3FFFFu) >> 4) << 32) | (1ull << 62);
}

// ---- registers ----
template <int R>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R));
}
template <int R>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R));
}

// ---- clusters ----
__device__ __forceinline__ unsigned cluster_ctarank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// ---- conversions ----
__device__ __forceinline__ unsigned pack_bf16x2(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ unsigned pack_f16x2(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
// Two e4m3 values (lo at the lower address), rounded to nearest and saturated to +-448 (satfinite).
__device__ __forceinline__ unsigned short pack_e4m3x2(float lo, float hi) {
  unsigned short r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ float bf16_to_f32(unsigned short h) {
  float f;
  asm("mov.b32 %0, %1;" : "=f"(f) : "r"(static_cast<unsigned>(h) << 16));
  return f;
}
__device__ __forceinline__ float f16_to_f32(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

// ---- shared-memory stores ----
__device__ __forceinline__ void st_shared_u32(unsigned addr, unsigned v) {
  asm volatile("st.shared.u32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ void st_shared_u16(unsigned addr, unsigned short v) {
  asm volatile("st.shared.u16 [%0], %1;" ::"r"(addr), "h"(v) : "memory");
}
__device__ __forceinline__ void st_shared_f32x2(unsigned addr, float a, float b) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(a), "f"(b) : "memory");
}
// Four (two, one) 8x8 matrices of 16-bit pairs, one register per matrix in each lane (lane l: row l / 4, columns
// 2 (l % 4) and + 1, the mma / wgmma fragment layout); lane l gives the address of row l % 8 of matrix l / 8.
__device__ __forceinline__ void stmatrix_x4(unsigned addr, unsigned a, unsigned b, unsigned c, unsigned d) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(a), "r"(b), "r"(c),
               "r"(d)
               : "memory");
}
__device__ __forceinline__ void stmatrix_x2(unsigned addr, unsigned a, unsigned b) {
  asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};" ::"r"(addr), "r"(a), "r"(b) : "memory");
}
__device__ __forceinline__ void stmatrix_x1(unsigned addr, unsigned a) {
  asm volatile("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};" ::"r"(addr), "r"(a) : "memory");
}

}  // namespace gt_sm90
