// Session 24 experiment (not part of the library): how fast can a weight matrix W (R x K bf16, rows K-contiguous,
// as in y = x W^T) be streamed from DRAM into the SMs, by TMA into a shared-memory ring (the sm90 decode tiles) and
// by plain 16-byte loads (the gemv kernels), with no arithmetic? Question (bench/NOTES.md steps 20-23): every
// tensor-core decode kernel (ours and cuBLASLt's) streams 4096x14336 at 3.2-3.6 TB/s where the CUDA-core M = 1 gemv
// reaches 3.8; is it the number of bytes a row gets per request burst (128 B per TMA box or per mma step against
// 512 B-2 KB for the CUDA-core kernel), the CTAs streaming, or the bytes in flight?
//
// TMA mode: a CTA owns BR rows and one of KSPLIT contiguous K ranges; a stage holds NB boxes of BR rows x 64
// elements (128 bytes per row each) at consecutive K, so a row gets NB x 128 contiguous bytes per stage, issued back
// to back by one thread; S stages; one consumer thread waits for each stage and frees it (no math).
// LDG mode: a warp owns 32 / LPR rows (LPR lanes per row, 16 bytes each) and a K slice (KS warps per row group);
// each lane issues U loads per step at consecutive 16-byte chunks: LPR x U x 16 contiguous bytes per row per step.
//
// Timing: launches back to back on one stream, rotating through enough buffer sets that each read misses L2;
// (1) events around 30 launches (steady state, us per launch) and (2) an event pair per launch, median (the tuner's
// way). Build: nvcc -O3 -std=c++17 -arch=sm_90a tma_stream_probe.cu -lcuda -o tma_stream_probe
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t err_ = (x);                                                                           \
    if (err_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(err_));     \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  unsigned ok = 0;
  while (!ok)
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(ok)
        : "r"(bar), "r"(parity)
        : "memory");
}
__device__ __forceinline__ void tma_load_2d(unsigned dst, const CUtensorMap* map, int c0, int c1, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
          dst),
      "l"(map), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}

// grid: (R / BR) x KSPLIT CTAs; 64 threads: thread 0 produces, thread 32 consumes.
__global__ void __launch_bounds__(64, 1)
    tma_stream(const __grid_constant__ CUtensorMap map, const __grid_constant__ CUtensorMap xmap, int K, int BR, int NB,
               int S, int ksplit, int pair, int xrows, int* sink) {
  extern __shared__ __align__(1024) unsigned char smem[];
  const unsigned base = (smem_u32(smem) + 1023) & ~1023u;
  const unsigned stage_bytes = BR * 128 * NB;
  const unsigned xbase = base + S * stage_bytes;   // the vectors' boxes (xrows x 64, xrows <= 16)
  const unsigned bars = xbase + S * 16 * 128 * NB;  // full[S], empty[S]
  const int row0 = blockIdx.x * BR;
  const int kblocks = K / 64;
  const int per = (kblocks + ksplit - 1) / ksplit;
  const int kb0 = blockIdx.y * per, kb1 = min(kblocks, kb0 + per);
  const int steps = (kb1 - kb0 + NB - 1) / NB;
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) {
      mbar_init(bars + 8 * s, 1);
      mbar_init(bars + 8 * (S + s), 1);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    // Stages issued in groups of PAIR: wait until all of a group's slots are free, then issue them back to back.
    for (int i0 = 0; i0 < steps; i0 += pair) {
      const int i1 = min(steps, i0 + pair);
      for (int i = i0; i < i1; ++i)
        if (i >= S) mbar_wait(bars + 8 * (S + i % S), ((i / S) - 1) & 1);
      for (int i = i0; i < i1; ++i) {
        const int s = i % S;
        const int nb = min(NB, kb1 - (kb0 + i * NB));
        mbar_expect_tx(bars + 8 * s, BR * 128 * nb + (xrows ? xrows * 128 * nb : 0));
        for (int b = 0; b < nb; ++b) {
          tma_load_2d(base + s * stage_bytes + b * BR * 128, &map, (kb0 + i * NB + b) * 64, row0, bars + 8 * s);
          if (xrows) tma_load_2d(xbase + s * 16 * 128 * NB + b * 16 * 128, &xmap, (kb0 + i * NB + b) * 64, 0, bars + 8 * s);
        }
      }
    }
  } else if (threadIdx.x == 32) {
    unsigned acc = 0;
    for (int i = 0; i < steps; ++i) {
      const int s = i % S;
      mbar_wait(bars + 8 * s, (i / S) & 1);
      unsigned v;
      asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(base + s * stage_bytes));
      acc ^= v;
      mbar_arrive(bars + 8 * (S + s));
    }
    if (acc == 0x12345678u) sink[0] = acc;
  }
}

// LDG: blockDim = WARPS * 32; warp w of CTA c: row group (c * WARPS + w) / KS, K slice (c * WARPS + w) % KS.
template <int LPR, int U>
__global__ void ldg_stream(const uint4* __restrict__ W, int R, int K, int KS, int* sink) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  constexpr int RPW = 32 / LPR;
  const int group = warp / KS, slice = warp % KS;
  const int row = group * RPW + lane / LPR;
  if (row >= R) return;
  const int chunks = K / 8;  // 16-byte chunks per row
  const int per = (chunks + KS - 1) / KS;
  const int c0 = slice * per, c1 = min(chunks, c0 + per);
  const uint4* p = W + static_cast<size_t>(row) * chunks;
  unsigned acc = 0;
  for (int c = c0 + (lane % LPR); c < c1; c += LPR * U) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int cc = c + u * LPR;
      if (cc < c1)
        asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(v[u].x), "=r"(v[u].y), "=r"(v[u].z), "=r"(v[u].w)
                     : "l"(p + cc));
      else
        v[u] = make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (acc == 0x12345678u) sink[0] = acc;
}

struct Bufs {
  std::vector<void*> sets;
  size_t bytes;
};

template <class Launch>
void time_it(const char* what, const Bufs& b, Launch launch) {
  const int n = 30;
  for (int i = 0; i < 4; ++i) launch(b.sets[i % b.sets.size()]);
  CK(cudaDeviceSynchronize());
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaEventRecord(e0));
  for (int i = 0; i < n; ++i) launch(b.sets[i % b.sets.size()]);
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  const double steady = ms * 1000.0 / n;
  std::vector<cudaEvent_t> ev(2 * n);
  for (auto& e : ev) CK(cudaEventCreate(&e));
  for (int i = 0; i < n; ++i) {
    CK(cudaEventRecord(ev[2 * i]));
    launch(b.sets[i % b.sets.size()]);
    CK(cudaEventRecord(ev[2 * i + 1]));
  }
  CK(cudaDeviceSynchronize());
  CK(cudaGetLastError());
  std::vector<float> per(n);
  for (int i = 0; i < n; ++i) CK(cudaEventElapsedTime(&per[i], ev[2 * i], ev[2 * i + 1]));
  std::sort(per.begin(), per.end());
  const double med = per[n / 2] * 1000.0;
  std::printf("%-44s steady %8.2f us %5.2f TB/s | per launch median %8.2f us %5.2f TB/s\n", what, steady,
              b.bytes / steady / 1e6, med, b.bytes / med / 1e6);
  std::fflush(stdout);
  for (auto& e : ev) cudaEventDestroy(e);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: tma_stream_probe R K\n");
    return 2;
  }
  const int R = std::atoi(argv[1]), K = std::atoi(argv[2]);
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  Bufs b;
  b.bytes = static_cast<size_t>(R) * K * 2;
  const size_t l2 = 60u << 20;
  const int nsets = static_cast<int>(std::max<size_t>(2, (3 * l2) / b.bytes + 1));
  for (int i = 0; i < nsets; ++i) {
    void* p;
    CK(cudaMalloc(&p, b.bytes));
    CK(cudaMemset(p, 0x11 * (i + 1), b.bytes));
    b.sets.push_back(p);
  }
  int* sink;
  CK(cudaMalloc(&sink, 4));
  std::printf("== W %d x %d bf16 (%.1f MB), %d buffer sets, %d SMs\n", R, K, b.bytes / 1e6, nsets, sms);

  // Driver entry point for the tensor map (no -lcuda needed at link time beyond the runtime's own).
  using Encode = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                              const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                              CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q;
  CK(cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &fn, cudaEnableDefault, &q));
  Encode encode = reinterpret_cast<Encode>(fn);

  // The sm90 decode tile 64x16 (swap): 64 weight rows and 16 vector rows per 64-k stage, 16 stages, one CTA per
  // 64 rows. Variants: stages issued in groups (pair), 2-4 k-blocks per stage (nb), the vectors' box or not, more
  // CTAs through a K split.
  struct T { int br, nb, s, ksplit, pair, xrows; };
  std::vector<T> tma = {
      {64, 1, 16, 1, 1, 16}, {64, 1, 16, 1, 2, 16}, {64, 1, 16, 1, 4, 16}, {64, 2, 8, 1, 1, 16},
      {64, 4, 4, 1, 1, 16},  {64, 1, 16, 1, 1, 0},  {64, 2, 8, 1, 1, 0},   {64, 1, 8, 1, 1, 16},
      {64, 1, 8, 1, 2, 16},  {64, 1, 12, 1, 2, 16}, {64, 1, 16, 2, 1, 16}, {64, 1, 16, 2, 2, 16},
      {64, 2, 8, 2, 1, 16},  {128, 1, 12, 1, 1, 16}, {128, 1, 12, 1, 2, 16}, {128, 2, 6, 1, 1, 16},
      {128, 1, 12, 2, 1, 16}, {128, 1, 12, 2, 2, 16}, {128, 1, 12, 4, 2, 16}};
  std::vector<void*> xs(b.sets.size());
  for (auto& x : xs) {
    CK(cudaMalloc(&x, static_cast<size_t>(16) * K * 2));
    CK(cudaMemset(x, 0x22, static_cast<size_t>(16) * K * 2));
  }
  for (const T& t : tma) {
    if (R % t.br) continue;
    std::vector<CUtensorMap> maps(b.sets.size()), xmaps(b.sets.size());
    for (size_t i = 0; i < b.sets.size(); ++i) {
      const cuuint64_t dims[2] = {static_cast<cuuint64_t>(K), static_cast<cuuint64_t>(R)};
      const cuuint64_t xdims[2] = {static_cast<cuuint64_t>(K), 16};
      const cuuint64_t strides[1] = {static_cast<cuuint64_t>(K) * 2};
      const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(t.br)}, xbox[2] = {64, 16}, es[2] = {1, 1};
      CUresult r = encode(&maps[i], CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, b.sets[i], dims, strides, box, es,
                          CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      CUresult r2 = encode(&xmaps[i], CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, xs[i], xdims, strides, xbox, es,
                           CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                           CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      if (r != CUDA_SUCCESS || r2 != CUDA_SUCCESS) {
        std::printf("encode failed %d %d\n", static_cast<int>(r), static_cast<int>(r2));
        return 1;
      }
    }
    const int smem = 1024 + t.s * t.br * 128 * t.nb + t.s * 16 * 128 * t.nb + 16 * t.s;
    CK(cudaFuncSetAttribute(tma_stream, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const dim3 grid(R / t.br, t.ksplit);
    char name[160];
    std::snprintf(name, sizeof name, "tma br%d nb%d s%d pair%d x%d ks%d ctas%d (%d KB in flight)", t.br, t.nb,
                  t.s, t.pair, t.xrows, t.ksplit, grid.x * grid.y, t.s * t.nb * (t.br + t.xrows) * 128 / 1024);
    time_it(name, b, [&](void* set) {
      size_t i = 0;
      while (b.sets[i] != set) ++i;
      tma_stream<<<grid, 64, smem>>>(maps[i], xmaps[i], K, t.br, t.nb, t.s, t.ksplit, t.pair, t.xrows, sink);
    });
  }

  // LDG with the CTAs per SM capped by dynamic shared memory (8 warps a CTA): the warps that stream per SM.
  auto ldg = [&](auto kernel, int lpr, int u, int ks, int warps, int per_sm) {
    const int rpw = 32 / lpr;
    const long warps_total = static_cast<long>((R + rpw - 1) / rpw) * ks;
    const int ctas = static_cast<int>((warps_total + warps - 1) / warps);
    const int smem = per_sm > 0 ? (220 * 1024) / per_sm : 0;
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, std::max(smem, 1)));
    char name[160];
    std::snprintf(name, sizeof name, "ldg lpr%d u%d (%dB/row/step) ks%d warps%d ctas%d per SM %d", lpr, u,
                  lpr * u * 16, ks, warps, ctas, per_sm);
    time_it(name, b, [&](void* set) {
      kernel<<<ctas, warps * 32, smem>>>(static_cast<const uint4*>(set), R, K, ks, sink);
    });
  };
  for (int per_sm : {2, 3, 4, 6, 0}) {
    ldg(ldg_stream<8, 1>, 8, 1, 8, 8, per_sm);
    ldg(ldg_stream<8, 2>, 8, 2, 8, 8, per_sm);
    ldg(ldg_stream<4, 2>, 4, 2, 8, 8, per_sm);
    ldg(ldg_stream<32, 2>, 32, 2, 8, 4, per_sm);
  }
  return 0;
}
