#pragma once
// cuBLASLt's algorithms for a mapped problem (cublaslt_problem.h): the descriptors its heuristic and its matmul read,
// the heuristic itself, an algorithm rebuilt from its config and checked, and the candidates the heuristic lists.
#include <cublasLt.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backends/cublaslt/cublaslt_problem.h"
#include "gemmtune/candidate.h"

namespace gemmtune::cublaslt {

// RAII descriptors of one problem, made once per executable.
struct LtDescs {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  uint32_t told[4] = {16, 16, 16, 16};  // A, B, C, D (cuBLASLt's order): the pointer alignment the heuristic was told

  explicit LtDescs(const LtProblem& lp);
  ~LtDescs() { release(); }
  LtDescs(const LtDescs&) = delete;
  LtDescs& operator=(const LtDescs&) = delete;

 private:
  void release();
};

// Rebuilds the algorithm from its config; "" or why cuBLASLt refuses it.
std::string algo_from_config(const AlgoConfig& c, const LtProblem& lp, cublasLtMatmulAlgo_t& algo);

struct Checked {
  std::string reason;  // "" = usable
  size_t workspace = 0;
  uint32_t align[4] = {1, 1, 1, 1};  // A, B, C, D minimum pointer alignment in bytes
};

// cublasLtMatmulAlgoCheck plus our own limits (workspace, pointer alignment the heuristic was told about).
Checked check_algo(const cublasLtMatmulAlgo_t& algo, const LtDescs& ds);

// The heuristic's first `count` usable algorithms, best first; empty when it has none for the problem.
std::vector<cublasLtMatmulHeuristicResult_t> heuristic(const LtDescs& ds, int count);

// Candidates from the heuristic for the GEMM of `mode` (and fast accumulation, for fp8), best first, each config
// tagged with both.
std::vector<Candidate> list_algos(const Problem& p, EpiMode mode, std::optional<bool> fast_accum);

}  // namespace gemmtune::cublaslt
