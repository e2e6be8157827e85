#pragma once
// The fused epilogue of a GEMM: what happens to alpha*A*B + beta*C before it is stored.
// The chain is empty for now (plain GEMM); the fused-epilogue issue fills in the ops.
#include <string>
#include <vector>

namespace gemmtune {

struct Epilogue {
  std::vector<std::string> ops;  // op names in application order; empty = identity

  bool empty() const { return ops.empty(); }
  std::string key() const;  // "none" or the ops joined by ','
  bool operator==(const Epilogue&) const = default;
};

// Parses "none" or a comma-separated chain; throws gemmtune::Error on an unknown op.
Epilogue parse_epilogue(const std::string& spec);

}  // namespace gemmtune
