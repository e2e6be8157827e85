// Tunes y = x·Wᵀ (x: 4096x4096, W: 4096x4096, bf16) with gemmtune and runs the winner.
// Without a GPU (or with --list) it lists the candidates gemmtune would try, ranked, and stops there.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gemmtune/gemm.h"

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw gemmtune::Error(std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace

int main(int argc, char** argv) try {
  using namespace gemmtune;
  const bool list_only = argc > 1 && std::strcmp(argv[1], "--list") == 0;

  // A is x (row-major M x K), B is Wᵀ: W stored row-major N x K is B (K x N) column-major.
  Problem p = Problem::make(4096, 4096, 4096, DType::bf16, DType::bf16, Layout::row, Layout::col);
  p.validate();
  std::printf("gemmtune %s, problem %s\n", version().c_str(), p.str().c_str());

  const bool gpu = gpu_available();
  const DeviceInfo dev = gpu ? current_device() : DeviceInfo::assumed_sm90();
  const std::vector<Candidate> cands = list_candidates(p, dev);
  std::printf("%zu candidates for %s, best ranked first:\n", cands.size(), dev.name.c_str());
  for (size_t i = 0; i < cands.size() && i < 5; ++i) std::printf("  %s\n", cands[i].str().c_str());
  if (!gpu || list_only) return 0;

  Tuner tuner;
  const Gemm gemm = tuner.select(p);  // tunes once; later runs answer from the result cache
  std::printf("winner: %s\n", gemm.candidate().str().c_str());

  const size_t bytes = 4096 * 4096 * 2;
  void *x = nullptr, *w = nullptr, *y = nullptr;
  check(cudaMalloc(&x, bytes), "cudaMalloc");
  check(cudaMalloc(&w, bytes), "cudaMalloc");
  check(cudaMalloc(&y, bytes), "cudaMalloc");
  check(cudaMemset(x, 0, bytes), "cudaMemset");
  check(cudaMemset(w, 0, bytes), "cudaMemset");
  gemm.run({x, w, nullptr, y});  // legacy default stream
  check(cudaDeviceSynchronize(), "the GEMM");
  std::printf("ran it once: ok\n");
  cudaFree(x);
  cudaFree(w);
  cudaFree(y);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
