// stream_probe (dev tool, GPU): how fast can a grid stream a K-contiguous matrix W [N rows, K] (the decode weights)
// in the access pattern of a gemv kernel, with no arithmetic? Each warp owns R rows of W and one of KSPLIT slices of
// K; per step it reads C contiguous bytes of each of its R rows (one 16-byte load per lane and instruction:
// L = R * C / 512 loads per lane and step) and keeps U steps of loads in flight (registers). The loaded words are
// XOR-folded into one word per warp so that nothing is dead code. Question (bench/NOTES.md step 23): is the mma
// gemv's 71% of DRAM bandwidth its access pattern (16 rows x 128 bytes per warp step) rather than its arithmetic?
//
// Build (here):  nvcc -O3 -std=c++17 -arch=sm_90a -o build-lead/stream_probe bench/results/2026-11-22-s23/scripts/stream_probe.cu
// Run (GPU):     build-lead/stream_probe N K            (prints one line per pattern: us median, TB/s)
// Timing: the matrix is copied into S buffers with S * bytes >= 3 x the L2 (cold reads, as the tuner's rotation);
// launch i reads buffer i % S; median of per-launch event times over 60 launches after 10 warm-ups.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CK(x)                                                                                    \
  do {                                                                                           \
    cudaError_t e_ = (x);                                                                        \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));    \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

__device__ __forceinline__ uint4 ldg_na(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// L loads per lane per step, U steps in flight. C (bytes per row per step) is a run-time value: lane `lane` of load i
// reads byte (i * 512 + lane * 16) of the step's R x C block, laid row by row: row (that / C), column (that % C).
template <int L, int U>
__global__ void __launch_bounds__(256) stream(const unsigned char* w, long long row_bytes, int n_rows, int c_bytes,
                                              int ksplit, unsigned* out) {
  const int lane = threadIdx.x % 32;
  const long long warp = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int rows = L * 512 / c_bytes;
  const long long groups = n_rows / rows;
  if (warp >= groups * ksplit) return;
  const long long g = warp / ksplit;
  const int s = static_cast<int>(warp % ksplit);
  const long long slice = row_bytes / ksplit;
  const long long steps = slice / c_bytes;
  const unsigned char* base = w + g * rows * row_bytes + s * slice;
  long long off[L];
#pragma unroll
  for (int i = 0; i < L; ++i) {
    const int e = i * 512 + lane * 16;
    off[i] = static_cast<long long>(e / c_bytes) * row_bytes + e % c_bytes;
  }
  unsigned acc = 0;
  for (long long j0 = 0; j0 < steps; j0 += U) {
    uint4 buf[U][L];
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int i = 0; i < L; ++i)
        buf[u][i] = j0 + u < steps ? ldg_na(base + (j0 + u) * c_bytes + off[i]) : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int i = 0; i < L; ++i) acc ^= buf[u][i].x ^ buf[u][i].y ^ buf[u][i].z ^ buf[u][i].w;
  }
  for (int o = 16; o > 0; o /= 2) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0) out[warp] = acc;
}

struct Pattern {
  const char* name;
  int l, u, c, ksplit, warps;
};

using Kernel = void (*)(const unsigned char*, long long, int, int, int, unsigned*);

Kernel pick(int l, int u) {
#define P(LL, UU) \
  if (l == LL && u == UU) return stream<LL, UU>;
  P(1, 1) P(1, 2) P(1, 4) P(1, 8) P(2, 1) P(2, 2) P(2, 4) P(4, 1) P(4, 2) P(4, 4) P(8, 1) P(8, 2) P(16, 1)
#undef P
  return nullptr;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s N K\n", argv[0]);
    return 2;
  }
  const int n = std::atoi(argv[1]), k = std::atoi(argv[2]);
  const long long row_bytes = 2LL * k, bytes = row_bytes * n;
  int dev = 0, l2 = 0, sms = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const int sets = static_cast<int>(std::max<long long>(2, (3LL * l2 + bytes - 1) / bytes + 1));
  std::vector<unsigned char*> buf(sets);
  for (auto& b : buf) {
    CK(cudaMalloc(&b, bytes));
    CK(cudaMemset(b, 0x5a, bytes));
  }
  unsigned* out = nullptr;
  CK(cudaMalloc(&out, 64 << 20));
  std::printf("W %d x %d bf16 (%.1f MB), %d buffer sets, L2 %d MB, %d SMs\n", n, k, bytes / 1e6, sets, l2 >> 20, sms);

  // name, L, U, C bytes, ksplit (slices of K per row group), warps per CTA.
  // rows per warp = L * 512 / C; bytes in flight per lane = L * U * 16.
  const std::vector<Pattern> pats = {
      {"mma-like 16r x128B ks8 u1", 4, 1, 128, 8, 8},   {"mma-like 16r x128B ks8 u2", 4, 2, 128, 8, 8},
      {"mma-like 16r x128B ks8 u4", 4, 4, 128, 8, 8},   {"mma-like 16r x128B ks1 u2", 4, 2, 128, 1, 4},
      {"mma-like 16r x128B ks2 u2", 4, 2, 128, 2, 4},   {"16r x256B ks8 u2", 8, 2, 256, 8, 8},
      {"16r x512B ks8 u1", 16, 1, 512, 8, 8},           {"8r x128B ks8 u4", 2, 4, 128, 8, 8},
      {"8r x256B ks8 u2", 4, 2, 256, 8, 8},             {"4r x128B ks8 u8", 1, 8, 128, 8, 8},
      {"4r x512B ks2 u4 (cuda-core)", 4, 4, 512, 2, 4}, {"4r x512B ks8 u4", 4, 4, 512, 8, 8},
      {"2r x512B ks4 u4", 2, 4, 512, 4, 4},             {"1r x512B ks8 u8", 1, 8, 512, 8, 8},
      {"1r x512B ks1 u8", 1, 8, 512, 1, 4},             {"4r x128B ks1 u8", 1, 8, 128, 1, 4},
  };
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (const auto& p : pats) {
    Kernel kern = pick(p.l, p.u);
    const int rows = p.l * 512 / p.c;
    if (!kern || n % rows != 0 || row_bytes % (static_cast<long long>(p.ksplit) * p.c) != 0) {
      std::printf("%-32s skipped (shape)\n", p.name);
      continue;
    }
    const long long warps = static_cast<long long>(n / rows) * p.ksplit;
    const int threads = 32 * p.warps;
    const long long ctas = (warps + p.warps - 1) / p.warps;
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, threads, 0));
    std::vector<float> t;
    for (int i = 0; i < 70; ++i) {
      CK(cudaEventRecord(e0));
      kern<<<static_cast<unsigned>(ctas), threads>>>(buf[i % sets], row_bytes, n, p.c, p.ksplit, out);
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (i >= 10) t.push_back(ms * 1e3f);
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    const float med = t[t.size() / 2];
    std::printf("%-32s rows/warp %2d  %3d B/row/step  ks %d  warps/CTA %d  CTAs %6lld (%d/SM)  in flight/lane %3d B : "
                "%8.2f us  %.2f TB/s  (min %.2f max %.2f)\n",
                p.name, rows, p.c, p.ksplit, p.warps, ctas, per_sm, p.l * p.u * 16, med, bytes / med / 1e6, t.front(),
                t.back());
  }
  return 0;
}
