#include "backends/cublaslt/cublaslt_config.h"

#include <charconv>
#include <limits>
#include <span>
#include <string_view>
#include <vector>

#include "gemmtune/errors.h"

namespace gemmtune::cublaslt {

namespace {

struct NamedId {
  uint32_t id;
  const char* name;
};

#include "backends/cublaslt/cublaslt_tables.inc"

std::string id_name(std::span<const NamedId> table, uint32_t id, const char* zero_name) {
  if (id == 0) return zero_name;
  for (const NamedId& e : table)
    if (e.id == id) return e.name;
  std::string r(1, '#');  // not "#" + to_string(): GCC 12 -Wrestrict false positive
  r += std::to_string(id);
  return r;
}

[[noreturn]] void bad(const std::string& s, const std::string& why) {
  throw Error("cublaslt: bad config '" + s + "': " + why);
}

template <class T>
T parse_int(const std::string& s, std::string_view key, std::string_view v) {
  int64_t x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size())
    bad(s, std::string(key) + "=" + std::string(v) + " is not an integer");
  if (x < static_cast<int64_t>(std::numeric_limits<T>::min()) || x > static_cast<int64_t>(std::numeric_limits<T>::max()))
    bad(s, std::string(key) + "=" + std::string(v) + " is out of range");
  return static_cast<T>(x);
}

template <class T>
T parse_id(std::span<const NamedId> table, const char* zero_name, const std::string& s, std::string_view key,
           std::string_view v) {
  if (v == zero_name) return 0;
  for (const NamedId& e : table)
    if (v == e.name) return static_cast<T>(e.id);
  std::string_view num = v;
  if (!num.empty() && num.front() == '#') num.remove_prefix(1);
  if (num.empty() || num.find_first_not_of("0123456789") != std::string_view::npos)
    bad(s, std::string(key) + "=" + std::string(v) + " is not a known name");
  return parse_int<T>(s, key, num);
}

}  // namespace

std::string tile_name(uint32_t id) { return id_name(kTileNames, id, "undef"); }
std::string stages_name(uint32_t id) { return id_name(kStagesNames, id, "undef"); }
std::string cluster_name(uint32_t id) { return id_name(kClusterNames, id, "auto"); }

std::string AlgoConfig::str() const {
  return "algo=" + std::to_string(algo) + ",tile=" + tile_name(tile) + ",stages=" + stages_name(stages) +
         ",splitk=" + std::to_string(splitk) + ",red=" + std::to_string(reduction) +
         ",swizzle=" + std::to_string(swizzle) + ",custom=" + std::to_string(custom) +
         ",cluster=" + cluster_name(cluster) + ",inner=" + std::to_string(inner);
}

AlgoConfig AlgoConfig::parse(const std::string& s) {
  static constexpr std::string_view kKeys[] = {"algo",    "tile",   "stages",  "splitk", "red",
                                               "swizzle", "custom", "cluster", "inner"};
  constexpr size_t nkeys = std::size(kKeys);
  bool seen[nkeys] = {};
  AlgoConfig c;
  std::string_view rest = s;
  if (rest.empty()) bad(s, "empty");
  while (true) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) bad(s, std::string(item).append(" is not key=value"));
    std::string_view key = item.substr(0, eq), v = item.substr(eq + 1);
    size_t i = 0;
    while (i < nkeys && kKeys[i] != key) ++i;
    if (i == nkeys) bad(s, "unknown key '" + std::string(key) + "'");
    if (seen[i]) bad(s, "key '" + std::string(key) + "' given twice");
    seen[i] = true;
    switch (i) {
      case 0: c.algo = parse_int<int32_t>(s, key, v); break;
      case 1: c.tile = parse_id<uint32_t>(kTileNames, "undef", s, key, v); break;
      case 2: c.stages = parse_id<uint32_t>(kStagesNames, "undef", s, key, v); break;
      case 3: c.splitk = parse_int<int32_t>(s, key, v); break;
      case 4: c.reduction = parse_int<uint32_t>(s, key, v); break;
      case 5: c.swizzle = parse_int<uint32_t>(s, key, v); break;
      case 6: c.custom = parse_int<uint32_t>(s, key, v); break;
      case 7: c.cluster = parse_id<uint16_t>(kClusterNames, "auto", s, key, v); break;
      case 8: c.inner = parse_int<uint16_t>(s, key, v); break;
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  for (size_t i = 0; i < nkeys; ++i)
    if (!seen[i]) bad(s, "missing key '" + std::string(kKeys[i]) + "'");
  if (c.splitk < 1) bad(s, "splitk must be >= 1");
  return c;
}

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
