#pragma once
// On-disk cache of tuning results: one JSON file per key under $GEMMTUNE_CACHE_DIR/results/ (default
// ~/.cache/gemmtune/results). Files are written to a temp file in the same directory and renamed, so readers see
// a whole entry or none; concurrent writers of one key race benignly (last rename wins, both are valid).
// Entries are untrusted input (docs/CACHE.md): only regular files of bounded size and nesting are read, and a
// corrupt, truncated or odd entry is a miss with a warning on stderr, never a crash.
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
  // $GEMMTUNE_CACHE_DIR/results or $HOME/.cache/gemmtune/results; "" (no cache: get misses, put does nothing) when
  // neither variable is set.
  static std::string default_dir();
  bool enabled() const { return !dir_.empty(); }

  std::optional<CacheEntry> get(const std::string& key) const;
  void put(const CacheEntry& e) const;  // atomic publish
  std::vector<CacheEntry> list() const;  // every readable entry (corrupt ones skipped with a warning)
  // Removes all published entries and returns how many; temp files of writers still running are left alone. Throws
  // gemmtune::Error when an entry cannot be removed (a read-only cache).
  size_t clear() const;
  // Writes all entries as one JSON document {"gemmtune_cache": 1, "entries": [...]}; returns how many it wrote.
  size_t export_to(const std::string& file) const;
  // Merges entries from an exported file (an entry with the same key is replaced). Returns how many were imported.
  // Throws detail::InputError (src/core/input.h) when the file is missing, too large, too deeply nested or not a
  // gemmtune cache export; entries without a key or a backend:config winner are skipped with a warning.
  size_t import_from(const std::string& file) const;
  const std::string& dir() const { return dir_; }

 private:
  std::string path_for(const std::string& key) const;
  std::string dir_;
};

}  // namespace gemmtune
