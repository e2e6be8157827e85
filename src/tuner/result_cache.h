#pragma once
// On-disk cache of tuning results: one JSON file per key under $GEMMTUNE_CACHE_DIR/results/ (default
// ~/.cache/gemmtune/results). Files are written to a temp file in the same directory and renamed, so readers see
// a whole entry or none; concurrent writers of one key race benignly (last rename wins, both are valid).
// A corrupt or truncated entry is a miss with a warning on stderr, never a crash.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace gemmtune {

struct CacheEntry {
  std::string key;        // full key: problem key | device key | library versions | gemmtune version
  nlohmann::json record;  // {"key", "problem", "device", "winner": "backend:config", "us": ..., "results": [...]}
};

class ResultCache {
 public:
  explicit ResultCache(std::string dir = default_dir());
  static std::string default_dir();  // $GEMMTUNE_CACHE_DIR/results or ~/.cache/gemmtune/results

  std::optional<CacheEntry> get(const std::string& key) const;
  void put(const CacheEntry& e) const;  // atomic publish
  std::vector<CacheEntry> list() const;  // every readable entry (corrupt ones skipped with a warning)
  size_t clear() const;                  // removes all entries, returns how many
  // Writes all entries as one JSON document {"gemmtune_cache": 1, "entries": [...]}.
  void export_to(const std::string& file) const;
  // Merges entries from an exported file (an entry with the same key is replaced). Returns how many were imported.
  // Throws gemmtune::Error when the file is missing or not a gemmtune cache export.
  size_t import_from(const std::string& file) const;
  const std::string& dir() const { return dir_; }

 private:
  std::string path_for(const std::string& key) const;
  std::string dir_;
};

}  // namespace gemmtune
