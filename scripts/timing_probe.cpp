// Timing-harness probe (dev tool, GPU): does where a launch sits in an interleaved round, or which buffer set it
// reads, change its time? Times `slots` interleaved launches per round (slot j runs config j % #configs) under
//   flush    : a 2x L2 memset before every launch (outside the events): cold L2, the reference
//   sets=S   : no flush, launch number L reads buffer set L % S (the tuner's rotation)
// and prints each slot's median. A slot faster than the flush reference reads data an earlier launch left in L2.
//
// Build (here or on the GPU host):
//   g++ -std=c++20 -O2 -Iinclude -I/usr/local/cuda/include scripts/timing_probe.cpp -Lbuild -lgemmtune \
//       -L/usr/local/cuda/lib64 -lcudart -o build/timing_probe
// Run: LD_LIBRARY_PATH=build build/timing_probe M N K "sets list" config [config ...]
//   (env: SLOTS, ROUNDS, NOFLUSH=1 to skip the flush mode)
//   e.g. build/timing_probe 1 4096 14336 "1 2 3 4 8" "gemv:vec=m,warps=8,rows=2,ksplit=1,unroll=4"
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gemmtune/gemm.h"

using namespace gemmtune;

#define CK(x)                                                                       \
  do {                                                                              \
    cudaError_t e_ = (x);                                                           \
    if (e_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

struct Set {
  void *a = nullptr, *b = nullptr, *d = nullptr;
};

static void fill(void* p, size_t elems, std::mt19937& rng) {
  std::vector<uint16_t> h(elems);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (auto& x : h) {
    float f = nd(rng);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    x = uint16_t(u >> 16);
  }
  CK(cudaMemcpy(p, h.data(), elems * 2, cudaMemcpyHostToDevice));
}

static float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s M N K \"sets list\" config [config ...]\n", argv[0]);
    return 2;
  }
  const int64_t m = std::atoll(argv[1]), n = std::atoll(argv[2]), k = std::atoll(argv[3]);
  std::vector<int> set_counts;
  {
    std::istringstream is(argv[4]);
    for (int s; is >> s;) set_counts.push_back(s);
  }
  Problem p = Problem::make(m, n, k, DType::bf16, DType::bf16);
  p.resolve();
  std::vector<Gemm> gemms;
  std::vector<std::string> names;
  for (int i = 5; i < argc; ++i) {
    gemms.push_back(Tuner::load(p, Candidate::parse(argv[i])));
    names.push_back(argv[i]);
  }
  const int slots = std::getenv("SLOTS") ? std::atoi(std::getenv("SLOTS")) : 8;
  const int rounds = std::getenv("ROUNDS") ? std::atoi(std::getenv("ROUNDS")) : 200;
  int dev = 0;
  int l2 = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  const int max_sets = *std::max_element(set_counts.begin(), set_counts.end());
  std::mt19937 rng(1234);
  std::vector<Set> sets(std::max(max_sets, 1));
  for (auto& s : sets) {
    CK(cudaMalloc(&s.a, size_t(m * k) * 2));
    CK(cudaMalloc(&s.b, size_t(n * k) * 2));
    CK(cudaMalloc(&s.d, size_t(m * n) * 2));
    fill(s.a, size_t(m * k), rng);
    fill(s.b, size_t(n * k), rng);
  }
  void* scratch = nullptr;
  const size_t scratch_bytes = size_t(2) * l2;
  CK(cudaMalloc(&scratch, scratch_bytes));
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  std::vector<cudaEvent_t> ev(2 * size_t(slots) * rounds);
  for (auto& e : ev) CK(cudaEventCreate(&e));
  std::printf("problem %lldx%lldx%lld bf16, set %.1f MiB, L2 %.1f MiB, %d slots x %d rounds\n", (long long)m,
              (long long)n, (long long)k, (m * k + n * k + m * n) * 2 / 1048576.0, l2 / 1048576.0, slots, rounds);
  for (size_t i = 0; i < names.size(); ++i) std::printf("config %zu: %s\n", i, names[i].c_str());

  auto launch = [&](int slot, size_t L, int nsets) {
    const Set& s = sets[L % size_t(nsets)];
    GemmArgs a;
    a.a = s.a, a.b = s.b, a.d = s.d;
    gemms[size_t(slot) % gemms.size()].run(a, st);
  };
  // Modes: 0 = flush (set 0 only), S > 0 = rotation over S sets.
  std::vector<int> modes;
  if (!std::getenv("NOFLUSH")) modes.push_back(0);  // NOFLUSH=1: rotations only (e.g. under ncu)
  for (int s : set_counts) modes.push_back(s);
  for (int rep = 0; rep < 2; ++rep)
    for (int mode : modes) {
      const int nsets = mode == 0 ? 1 : mode;
      // settle: ~300 ms of launches
      {
        cudaEvent_t e0 = ev[0], e1 = ev[1];
        float ms = 0;
        size_t L = 0;
        while (ms < 300) {
          CK(cudaEventRecord(e0, st));
          for (int i = 0; i < 64; ++i) launch(i, L++, nsets);
          CK(cudaEventRecord(e1, st));
          CK(cudaEventSynchronize(e1));
          float t;
          CK(cudaEventElapsedTime(&t, e0, e1));
          ms += t;
        }
      }
      size_t L = 0;
      for (int r = 0; r < rounds; ++r)
        for (int j = 0; j < slots; ++j) {
          if (mode == 0) CK(cudaMemsetAsync(scratch, (r * slots + j) & 255, scratch_bytes, st));
          CK(cudaEventRecord(ev[2 * (size_t(r) * slots + j)], st));
          launch(j, L++, nsets);
          CK(cudaEventRecord(ev[2 * (size_t(r) * slots + j) + 1], st));
        }
      CK(cudaStreamSynchronize(st));
      std::printf("rep %d %-8s", rep, mode == 0 ? "flush" : ("sets=" + std::to_string(mode)).c_str());
      for (int j = 0; j < slots; ++j) {
        std::vector<float> us;
        for (int r = 0; r < rounds; ++r) {
          float t;
          CK(cudaEventElapsedTime(&t, ev[2 * (size_t(r) * slots + j)], ev[2 * (size_t(r) * slots + j) + 1]));
          us.push_back(1e3f * t);
        }
        std::printf(" %7.2f", median(us));
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  return 0;
}
