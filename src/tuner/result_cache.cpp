#include "tuner/result_cache.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

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

// Writes `content` to `path` atomically: unique temp file in the same directory, flush, rename.
void atomic_write(const fs::path& path, const std::string& content) {
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  const fs::path tmp = path.parent_path() / (".tmp-" + std::to_string(getpid()) + "-" + std::to_string(rd()) + "-" +
                                             std::to_string(counter++));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error("cannot write cache file " + tmp.string());
    f << content;
    f.flush();
    if (!f) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw Error("cannot write cache file " + tmp.string() + " (disk full?)");
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error("cannot publish cache file " + path.string() + ": " + ec.message());
  }
}

std::optional<CacheEntry> read_entry(const fs::path& path, bool warn) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  try {
    nlohmann::json j = nlohmann::json::parse(ss.str());
    CacheEntry e;
    e.key = j.at("key").get<std::string>();
    j.at("winner").get<std::string>();  // required
    e.record = std::move(j);
    return e;
  } catch (const std::exception& ex) {
    if (warn) std::cerr << "gemmtune: warning: ignoring corrupt cache entry " << path.string() << " (" << ex.what() << ")\n";
    return std::nullopt;
  }
}

}  // namespace

ResultCache::ResultCache(std::string dir) : dir_(std::move(dir)) {}

std::string ResultCache::default_dir() {
  if (const char* d = std::getenv("GEMMTUNE_CACHE_DIR"); d && *d) return (fs::path(d) / "results").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home && *home ? home : "/tmp") / ".cache" / "gemmtune" / "results").string();
}

std::string ResultCache::path_for(const std::string& key) const { return (fs::path(dir_) / (fnv_hex(key) + ".json")).string(); }

std::optional<CacheEntry> ResultCache::get(const std::string& key) const {
  auto e = read_entry(path_for(key), true);
  if (e && e->key != key) return std::nullopt;  // hash collision: a different problem owns this file
  return e;
}

void ResultCache::put(const CacheEntry& e) const {
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
  if (!fs::is_directory(dir_, ec)) return out;
  std::vector<fs::path> files;
  for (const auto& de : fs::directory_iterator(dir_, ec))
    if (de.path().extension() == ".json" && de.path().filename().string()[0] != '.') files.push_back(de.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files)
    if (auto e = read_entry(f, true)) out.push_back(std::move(*e));
  return out;
}

size_t ResultCache::clear() const {
  size_t n = 0;
  std::error_code ec;
  if (!fs::is_directory(dir_, ec)) return 0;
  for (const auto& de : fs::directory_iterator(dir_, ec)) {
    const auto name = de.path().filename().string();
    if (de.path().extension() == ".json" || name.rfind(".tmp-", 0) == 0) {
      if (fs::remove(de.path(), ec) && de.path().extension() == ".json" && name[0] != '.') ++n;
    }
  }
  return n;
}

void ResultCache::export_to(const std::string& file) const {
  nlohmann::json j = {{"gemmtune_cache", 1}, {"entries", nlohmann::json::array()}};
  for (const auto& e : list()) j["entries"].push_back(e.record);
  fs::path p(file);
  if (p.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(p.parent_path(), ec);
  }
  atomic_write(fs::absolute(p), j.dump(1));
}

size_t ResultCache::import_from(const std::string& file) const {
  std::ifstream f(file, std::ios::binary);
  if (!f) throw Error("cache import: cannot read '" + file + "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const std::exception& e) {
    throw Error("cache import: '" + file + "' is not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object() || j.value("gemmtune_cache", 0) != 1 || !j.contains("entries") || !j["entries"].is_array())
    throw Error("cache import: '" + file + "' is not a gemmtune cache export");
  size_t n = 0;
  for (const auto& rec : j["entries"]) {
    if (!rec.is_object() || !rec.contains("key") || !rec["key"].is_string() || !rec.contains("winner")) {
      std::cerr << "gemmtune: warning: cache import skips a malformed entry\n";
      continue;
    }
    put({rec["key"].get<std::string>(), rec});
    ++n;
  }
  return n;
}

}  // namespace gemmtune
