#pragma once
// The translation unit of a cutlass candidate: CUTLASS 3.x headers, one GemmUniversal instantiation (the config's
// schedule, tile and cluster; the problem's types and layouts; the epilogue chain as an epilogue visitor tree) and
// the extern "C" entry points of cutlass_abi.h. nvcc compiles it into a shared object (cutlass_nvcc.h).
#include <string>

#include "backends/cutlass/cutlass_config.h"
#include "gemmtune/problem.h"

namespace gemmtune::cutlass_be {

// What the unit's gt_cutlass_ident() returns (load() checks it): the config and what of the problem the
// instantiation depends on (dtypes, layouts, whether C is read, the epilogue chain), not its shape.
std::string unit_ident(const Config& c, const Problem& p);
// The whole unit. The problem must pass problem_reason().
std::string generate_unit(const Config& c, const Problem& p);
// The epilogue visitor tree alone: the `using` lines ending in `using Fusion = ...;`, and the initializer of its
// Arguments (reads `x`, a GtCutlassArgs). For tests.
struct FusionCode {
  std::string types;
  std::string args;
};
FusionCode generate_fusion(const Problem& p);

}  // namespace gemmtune::cutlass_be
