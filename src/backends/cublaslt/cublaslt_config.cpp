#include "backends/cublaslt/cublaslt_config.h"

#include <limits>
#include <span>
#include <string_view>
#include <vector>

#include "backends/config_fields.h"
#include "gemmtune/errors.h"

namespace gemmtune::cublaslt {

namespace {

struct NamedId {
  uint32_t id;
  const char* name;
};

#include "backends/cublaslt/cublaslt_tables.inc"

// An id field's spellings: `zero` for 0, then the table's names.
std::vector<config::Spelling> names(std::span<const NamedId> table, const char* zero) {
  std::vector<config::Spelling> out{{zero, 0}};
  for (const NamedId& e : table) out.emplace_back(e.name, e.id);
  return out;
}

[[noreturn]] void bad(const std::string& s, const std::string& why) {
  throw Error("cublaslt: bad config '" + s + "': " + why);
}

using config::Form;
// Each integer in its member's range (ids: from 0).
template <auto M>
using Lim = std::numeric_limits<typename config::detail::Member<M>::Type>;
template <auto M>
auto number(const char* key, int64_t lo = Lim<M>::min()) {
  return config::integer<M>(key, Form::required, lo, Lim<M>::max());
}
template <auto M>
auto named(const char* key, std::span<const NamedId> table, const char* zero) {
  return config::id<M>(key, Form::required, names(table, zero), 0, Lim<M>::max());
}

const config::Fields<AlgoConfig>& fields() {
  static const config::Fields<AlgoConfig> f{
      "cublaslt",
      {number<&AlgoConfig::algo>("algo"), named<&AlgoConfig::tile>("tile", kTileNames, "undef"),
       named<&AlgoConfig::stages>("stages", kStagesNames, "undef"), number<&AlgoConfig::splitk>("splitk", 1),
       number<&AlgoConfig::reduction>("red"), number<&AlgoConfig::swizzle>("swizzle"),
       number<&AlgoConfig::custom>("custom"), named<&AlgoConfig::cluster>("cluster", kClusterNames, "auto"),
       number<&AlgoConfig::inner>("inner")}};
  return f;
}

}  // namespace

std::string AlgoConfig::str() const { return fields().str(*this); }
AlgoConfig AlgoConfig::parse(const std::string& s) { return fields().parse(s); }

std::string CandidateConfig::str() const {
  std::string s = algo;
  if (fast_accum) s += *fast_accum ? ",fast_accum=1" : ",fast_accum=0";
  if (epi == EpiMode::fused) s += ",epi=fused";
  else if (epi == EpiMode::separate) s += ",epi=separate";
  return s;
}

CandidateConfig CandidateConfig::parse(const std::string& s) {
  CandidateConfig c;
  std::string rest = s;
  // Suffixes are taken from the right, so each may appear once and only in the canonical order.
  if (const size_t at = rest.rfind(",epi="); at != std::string::npos) {
    const std::string v = rest.substr(at + 5);
    if (v == "fused") c.epi = EpiMode::fused;
    else if (v == "separate") c.epi = EpiMode::separate;
    else bad(s, "epi=" + v + " (fused or separate)");
    rest.resize(at);
  }
  if (const size_t at = rest.rfind(",fast_accum="); at != std::string::npos) {
    const std::string v = rest.substr(at + 12);
    if (v == "0") c.fast_accum = false;
    else if (v == "1") c.fast_accum = true;
    else bad(s, "fast_accum=" + v + " (0 or 1, followed only by ,epi=...)");
    rest.resize(at);
  }
  if (rest.find(",epi=") != std::string::npos || rest.find(",fast_accum=") != std::string::npos ||
      rest.rfind("epi=", 0) == 0 || rest.rfind("fast_accum=", 0) == 0)
    bad(s, "expected <algo>[,fast_accum=0|1][,epi=fused|separate], each suffix once");
  c.algo = rest;
  return c;
}

}  // namespace gemmtune::cublaslt
