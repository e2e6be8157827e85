#pragma once
// The cuBLASLt backend's config string: an algorithm as the fields of cublasLtMatmulAlgoConfigAttributes_t, printed in
// one canonical order so that equal strings are equal algorithms. Pure string code: no GPU, no cuBLASLt calls.
//
//   default                                   the first heuristic result, re-resolved when loaded (the reference)
//   algo=66,tile=128x256,stages=64x4,splitk=1,red=0,swizzle=0,custom=0,cluster=2x1x1,inner=0
//
// tile / stages / cluster print the suffix of the enum name (CUBLASLT_MATMUL_TILE_128x256 -> 128x256); ids the table
// does not know print as `#<id>` (also accepted back, as is a bare number). Id 0 prints as `undef` (tile, stages) and
// `auto` (cluster).
#include <cstdint>
#include <string>

namespace gemmtune::cublaslt {

inline constexpr const char* kDefaultConfig = "default";

struct AlgoConfig {
  int32_t algo = 0;        // CUBLASLT_ALGO_CONFIG_ID
  uint32_t tile = 0;       // CUBLASLT_ALGO_CONFIG_TILE_ID (cublasLtMatmulTile_t)
  uint32_t stages = 0;     // CUBLASLT_ALGO_CONFIG_STAGES_ID (cublasLtMatmulStages_t)
  int32_t splitk = 1;      // CUBLASLT_ALGO_CONFIG_SPLITK_NUM
  uint32_t reduction = 0;  // CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME (cublasLtReductionScheme_t)
  uint32_t swizzle = 0;    // CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING
  uint32_t custom = 0;     // CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION
  uint16_t cluster = 0;    // CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID (cublasLtClusterShape_t)
  uint16_t inner = 0;      // CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID (cublasLtMatmulInnerShape_t)

  // The canonical one-line form (see above).
  std::string str() const;
  // Accepts the keys in any order, each exactly once; throws gemmtune::Error naming the offending part.
  static AlgoConfig parse(const std::string& s);
  bool operator==(const AlgoConfig&) const = default;
};

inline bool is_default_config(const std::string& s) { return s == kDefaultConfig; }

// Names of enum ids as used in the config string ("128x256", "#999", "undef"/"auto" for 0).
std::string tile_name(uint32_t id);
std::string stages_name(uint32_t id);
std::string cluster_name(uint32_t id);

}  // namespace gemmtune::cublaslt
