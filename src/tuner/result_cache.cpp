#include "tuner/result_cache.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "core/input.h"
#include "gemmtune/errors.h"

namespace fs = std::filesystem;

namespace gemmtune {

namespace {

std::string fnv_hex(const std::string& s) {
  uint64_t h1 = 1469598103934665603ull, h2 = 0x9E3779B97F4A7C15ull;
  for (unsigned char c : s) {
    h1 = (h1 ^ c) * 1099511628211ull;
    h2 = (h2 ^ c) * 0x100000001B3ull + 0x632BE59BD9B4E019ull;
  }
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", (unsigned long long)h1, (unsigned long long)h2);
  return buf;
}

// One entry is a few KB (a winner and up to a few hundred candidate records); an export holds many. Anything larger is
// not something gemmtune wrote.
constexpr std::size_t kMaxEntryBytes = std::size_t(16) << 20;
constexpr std::size_t kMaxExportBytes = std::size_t(1) << 30;
// Temp files of writers start with this prefix; `clear` leaves them alone unless they are this old (a writer that
// died before its rename).
constexpr const char* kTmpPrefix = ".tmp-";
constexpr auto kStaleTmpAge = std::chrono::hours(1);

// Writes `content` to `path` atomically: unique temp file in the same directory, flush, rename.
void atomic_write(const fs::path& path, const std::string& content) {
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  const fs::path tmp = path.parent_path() / (kTmpPrefix + std::to_string(getpid()) + "-" + std::to_string(rd()) +
                                             "-" + std::to_string(counter++));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error("cannot write cache file " + tmp.string() + ": " + std::strerror(errno));
    f << content;
    f.flush();
    if (!f) {
      const int err = errno;
      std::error_code ec;
      fs::remove(tmp, ec);
      throw Error("cannot write cache file " + tmp.string() + ": " + std::strerror(err));
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    const std::string why = ec.message();  // before the clean-up below can overwrite it
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw Error("cannot publish cache file " + path.string() + ": " + why);
  }
}

void warn(const std::string& msg) { std::cerr << "gemmtune: warning: " << msg << "\n"; }

// "" when `rec` is a usable result record, else why not. A record is only data to gemmtune: its winner line is checked
// against the backends when a tune uses it, its numbers are only printed. But a winner of 42 or null is not a record.
std::string record_problem(const nlohmann::json& rec) {
  if (!rec.is_object()) return "not a JSON object";
  auto k = rec.find("key");
  if (k == rec.end() || !k->is_string() || k->get_ref<const std::string&>().empty()) return "no \"key\" string";
  auto w = rec.find("winner");
  if (w == rec.end() || !w->is_string() || w->get_ref<const std::string&>().empty()) return "no \"winner\" string";
  return "";
}

std::optional<CacheEntry> read_entry(const fs::path& path, bool warn_on_error) {
  const detail::FileRead f = detail::read_regular_file(path.string(), kMaxEntryBytes);
  if (f.status == detail::FileRead::missing) return std::nullopt;
  auto reject = [&](const std::string& why) -> std::optional<CacheEntry> {
    if (warn_on_error) warn("ignoring corrupt cache entry " + path.string() + " (" + why + ")");
    return std::nullopt;
  };
  if (f.status == detail::FileRead::rejected) return reject(f.why);
  nlohmann::json j;
  try {
    j = detail::parse_json(f.data, "entry");
  } catch (const detail::InputError& e) {
    return reject(e.what());
  }
  if (std::string why = record_problem(j); !why.empty()) return reject(why);
  CacheEntry e;
  e.key = j["key"].get<std::string>();
  e.record = std::move(j);
  return e;
}

}  // namespace

ResultCache::ResultCache(std::string dir) : dir_(std::move(dir)) {}

std::string ResultCache::default_dir() {
  if (const char* d = std::getenv("GEMMTUNE_CACHE_DIR"); d && *d) return (fs::path(d) / "results").string();
  // Without HOME there is no per-user place: no cache, as for the kernel cache (a shared /tmp directory would let
  // other users plant results).
  if (const char* home = std::getenv("HOME"); home && *home)
    return (fs::path(home) / ".cache" / "gemmtune" / "results").string();
  return "";
}

std::string ResultCache::path_for(const std::string& key) const { return (fs::path(dir_) / (fnv_hex(key) + ".json")).string(); }

std::optional<CacheEntry> ResultCache::get(const std::string& key) const {
  if (!enabled()) return std::nullopt;
  auto e = read_entry(path_for(key), true);
  if (e && e->key != key) return std::nullopt;  // hash collision: a different problem owns this file
  return e;
}

void ResultCache::put(const CacheEntry& e) const {
  if (!enabled()) return;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw Error("cannot create cache directory " + dir_ + ": " + ec.message());
  nlohmann::json j = e.record;
  j["key"] = e.key;
  atomic_write(path_for(e.key), j.dump(1));
}

std::vector<CacheEntry> ResultCache::list() const {
  std::vector<CacheEntry> out;
  std::error_code ec;
  if (!enabled() || !fs::is_directory(dir_, ec)) return out;
  std::vector<fs::path> files;
  for (const auto& de : fs::directory_iterator(dir_, ec))
    if (de.path().extension() == ".json" && de.path().filename().string()[0] != '.') files.push_back(de.path());
  if (ec) warn("cannot list cache directory " + dir_ + ": " + ec.message());
  std::sort(files.begin(), files.end());
  for (const auto& f : files)
    if (auto e = read_entry(f, true)) out.push_back(std::move(*e));
  return out;
}

size_t ResultCache::clear() const {
  if (!enabled()) throw Error("no result cache directory (set GEMMTUNE_CACHE_DIR or HOME)");
  std::error_code ec;
  if (!fs::is_directory(dir_, ec)) return 0;
  // Only published entries go, and temp files old enough that their writer is gone: a temp file of a running writer
  // is about to be renamed into place, and removing it would make that writer fail.
  size_t removed = 0, failed = 0;
  std::string first_error;
  const auto now = fs::file_time_type::clock::now();
  for (const auto& de : fs::directory_iterator(dir_, ec)) {
    const std::string name = de.path().filename().string();
    const bool entry = de.path().extension() == ".json" && name[0] != '.';
    bool stale_tmp = false;
    if (name.starts_with(kTmpPrefix)) {
      std::error_code tec;
      const auto t = fs::last_write_time(de.path(), tec);
      stale_tmp = !tec && now - t > kStaleTmpAge;
    }
    if (!entry && !stale_tmp) continue;
    std::error_code rec;
    if (fs::remove(de.path(), rec)) {
      removed += entry;
    } else if (rec) {
      ++failed;
      if (first_error.empty()) first_error = de.path().string() + ": " + rec.message();
    }
  }
  if (ec) throw Error("cannot list cache directory " + dir_ + ": " + ec.message());
  if (failed)
    throw Error("cache clear: removed " + std::to_string(removed) + " entries, could not remove " +
                std::to_string(failed) + " (" + first_error + ")");
  return removed;
}

size_t ResultCache::export_to(const std::string& file) const {
  nlohmann::json j = {{"gemmtune_cache", 1}, {"entries", nlohmann::json::array()}};
  for (const auto& e : list()) j["entries"].push_back(e.record);
  fs::path p(file);
  if (p.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(p.parent_path(), ec);
  }
  atomic_write(fs::absolute(p), j.dump(1));
  return j["entries"].size();
}

size_t ResultCache::import_from(const std::string& file) const {
  if (!enabled()) throw Error("no result cache directory (set GEMMTUNE_CACHE_DIR or HOME)");
  const std::string what = "cache import '" + file + "'";
  const detail::FileRead f = detail::read_regular_file(file, kMaxExportBytes);
  if (f.status == detail::FileRead::missing) throw detail::InputError(what + ": no such file");
  if (f.status == detail::FileRead::rejected) throw detail::InputError(what + ": " + f.why);
  const nlohmann::json j = detail::parse_json(f.data, what);
  const detail::Fields top(j, what);
  if (!top.has("gemmtune_cache"))
    throw detail::InputError(what + ": not a gemmtune cache export (no \"gemmtune_cache\")");
  if (const int64_t version = top.integer("gemmtune_cache"); version != 1)
    throw detail::InputError(what + ": unsupported \"gemmtune_cache\" version " + std::to_string(version));
  const nlohmann::json& entries = top.at("entries");
  if (!entries.is_array()) throw detail::InputError(what + ": \"entries\" must be an array");
  size_t n = 0, skipped = 0;
  for (const auto& rec : entries) {
    if (std::string why = record_problem(rec); !why.empty()) {
      if (skipped++ == 0) warn(what + ": skipping a malformed entry (" + why + ")");
      continue;
    }
    put({rec["key"].get<std::string>(), rec});
    ++n;
  }
  if (skipped > 1) warn(what + ": skipped " + std::to_string(skipped) + " malformed entries in all");
  return n;
}

}  // namespace gemmtune
