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
//
// A candidate's whole config is the algorithm followed by optional suffixes, in this order:
//   <algo>[,fast_accum=0|1][,epi=fused|separate]
// fast_accum: fp8 problems only, cuBLASLt's CUBLASLT_MATMUL_DESC_FAST_ACCUM (1: the tensor cores accumulate over the
// whole K; 0: partial sums are promoted into fp32 periodically). Absent means 0, cuBLASLt's own default, so that
// `default` names the same kernel for every problem; enumerate() always prints it for fp8 problems.
// epi: how the problem's epilogue chain runs (required with one, refused without): fused in cuBLASLt's epilogue or as
// a separate elementwise kernel after the GEMM.
#include <cstdint>
#include <optional>
#include <string>

namespace gemmtune::cublaslt {

inline constexpr const char* kName = "cublaslt";  // the backend's name
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
  // Accepts the keys in any order, each exactly once (backends/config_fields.h); throws gemmtune::Error naming the
  // offending part.
  static AlgoConfig parse(const std::string& s);
  bool operator==(const AlgoConfig&) const = default;
};

inline bool is_default_config(const std::string& s) { return s == kDefaultConfig; }

enum class EpiMode { none, fused, separate };

// A candidate's config string split into its parts (see above). Pure string code; the algorithm part is kept as a
// string ("default" or an AlgoConfig string) and parsed separately, so that a problem/config mismatch can be named
// before a malformed algorithm.
struct CandidateConfig {
  std::string algo = kDefaultConfig;
  std::optional<bool> fast_accum;  // empty: not given (0)
  EpiMode epi = EpiMode::none;

  // The canonical string: algo, then ",fast_accum=" when given, then ",epi=" when not none.
  std::string str() const;
  // Splits the suffixes off; throws gemmtune::Error on a malformed suffix (fast_accum=2, epi=foo, one given twice or
  // out of order). The algorithm part is not checked here.
  static CandidateConfig parse(const std::string& s);
  bool operator==(const CandidateConfig&) const = default;
};

// A candidate's config as the backend's parse() leaves it: the suffixes split off and the algorithm parsed. A malformed
// algorithm is kept as its error rather than thrown, because validate() names a mismatched epilogue mode first.
struct LtConfig {
  CandidateConfig split;
  std::optional<AlgoConfig> algo;  // empty for "default" (and when algo_error is set)
  std::string algo_error;          // why the algorithm part does not parse; "" when it does
};

}  // namespace gemmtune::cublaslt
