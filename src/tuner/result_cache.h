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

// What a scan of the directory found: the readable entries, and how many other entry files it skipped (corrupt,
// unreadable, not a regular file), each with a warning.
struct CacheListing {
  std::vector<CacheEntry> entries;
  size_t skipped = 0;
};

// What `clear` removed: the entries list() shows, and the other entry files (those list() skips).
struct ClearCount {
  size_t entries = 0;
  size_t other = 0;
};

class ResultCache {
 public:
  explicit ResultCache(std::string dir = default_dir());
  // $GEMMTUNE_CACHE_DIR/results or $HOME/.cache/gemmtune/results; "" (no cache: get misses, put does nothing) when
  // neither variable is set.
  static std::string default_dir();
  bool enabled() const { return !dir_.empty(); }

  std::optional<CacheEntry> get(const std::string& key) const;
  // Atomic publish (src/core/atomic_file.h). Throws gemmtune::Error on an I/O error or an entry larger than a reader
  // takes (kMaxEntryBytes).
  void put(const CacheEntry& e) const;
  std::vector<CacheEntry> list() const;  // every readable entry (corrupt ones skipped with a warning)
  CacheListing scan() const;             // list() and how many files it skipped
  // Removes all published entries, readable or not; temp files of writers still running are left alone. Throws
  // gemmtune::Error when an entry cannot be removed (a read-only cache).
  ClearCount clear() const;
  // Writes all entries as one JSON document {"gemmtune_cache": 1, "entries": [...]}; returns how many it wrote. A
  // corrupt entry is skipped with a warning; a cache directory or entry the system refuses to read (EACCES, EIO) is
  // a gemmtune::Error, as is a `file` that is not a regular file (detail::InputError; a symlink to one is followed).
  size_t export_to(const std::string& file) const;
  // Merges entries from an exported file (an entry with the same key is replaced; of several with one key in the
  // file the last is kept). Returns how many distinct keys were imported. Throws detail::InputError
  // (src/core/input.h) when the file is missing, too large, too deeply nested, holds more than kMaxImportEntries
  // entries or is not a gemmtune cache export; entries without a key or a backend:config winner, or larger than
  // kMaxEntryBytes, are skipped with a warning.
  size_t import_from(const std::string& file) const;

  // One entry file is a few KB (a winner and up to a few hundred candidate records): a reader refuses a larger one.
  static constexpr size_t kMaxEntryBytes = size_t(16) << 20;
  // An export holds at most this many entries (one file each on import, each fsync'd: ~4 ms apiece on ext4): a
  // tuned cache holds hundreds.
  static constexpr size_t kMaxImportEntries = 10000;
  const std::string& dir() const { return dir_; }

 private:
  std::string path_for(const std::string& key) const;
  CacheListing scan(bool strict) const;
  std::string dir_;
};

}  // namespace gemmtune
