#include "tuner/result_cache.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "core/atomic_file.h"
#include "core/fnv.h"
#include "core/input.h"
#include "core/text.h"
#include "gemmtune/errors.h"

#include "core/env.h"

namespace fs = std::filesystem;

namespace gemmtune {

namespace {

// 128 bits of the key (two FNV-1a lanes of different bases) as the file name: collisions are checked by get() anyway.
std::string file_name_for(const std::string& key) {
  return detail::hex64(detail::fnv1a64(key)) + detail::hex64(detail::fnv1a64(key, 0x9E3779B97F4A7C15ull));
}

// An export holds many entries; anything larger is not something gemmtune wrote.
constexpr std::size_t kMaxExportBytes = std::size_t(1) << 30;
// `clear` removes a writer's temp file only when it is this old (a writer that died before its rename).
constexpr auto kStaleTmpAge = std::chrono::hours(1);

using detail::warn;

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

// The file text of an entry: what put() writes and import measures against kMaxEntryBytes.
std::string entry_text(const std::string& key, const nlohmann::json& record) {
  nlohmann::json j = record;
  j["key"] = key;
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
}

struct EntryRead {
  std::optional<CacheEntry> entry;
  bool unreadable = false;  // the system refused to read it (errno): not a judgement of its content
  std::string why;          // no entry: why (empty for a missing file)
};

EntryRead read_entry(const fs::path& path) {
  EntryRead r;
  const detail::FileRead f = detail::read_regular_file(path.string(), ResultCache::kMaxEntryBytes);
  if (f.status == detail::FileRead::missing) return r;
  if (f.status == detail::FileRead::rejected) {
    r.unreadable = f.unreadable();
    r.why = f.why;
    return r;
  }
  nlohmann::json j;
  try {
    j = detail::parse_json(f.data, "entry");
  } catch (const detail::InputError& e) {
    r.why = e.what();
    return r;
  }
  if (std::string why = record_problem(j); !why.empty()) {
    r.why = why;
    return r;
  }
  CacheEntry e;
  e.key = j["key"].get<std::string>();
  e.record = std::move(j);
  r.entry = std::move(e);
  return r;
}

void warn_rejected(const fs::path& path, const EntryRead& r) {
  warn((r.unreadable ? "ignoring unreadable cache entry " : "ignoring corrupt cache entry ") + path.string() + " (" +
       r.why + ")");
}

// Published entry files: "<hash>.json", never a writer's ".tmp-*".
bool is_entry_name(const fs::path& p) {
  const std::string name = p.filename().string();
  return p.extension() == ".json" && !name.empty() && name[0] != '.';
}

}  // namespace

ResultCache::ResultCache(std::string dir) : dir_(std::move(dir)) {}

std::string ResultCache::default_dir() {
  if (const auto d = env::get("GEMMTUNE_CACHE_DIR")) return (fs::path(*d) / "results").string();
  // Without HOME there is no per-user place: no cache, as for the kernel cache (a shared /tmp directory would let
  // other users plant results).
  if (const auto home = env::get("HOME"))
    return (fs::path(*home) / ".cache" / "gemmtune" / "results").string();
  return "";
}

std::string ResultCache::path_for(const std::string& key) const { return (fs::path(dir_) / (file_name_for(key) + ".json")).string(); }

std::optional<CacheEntry> ResultCache::get(const std::string& key) const {
  if (!enabled()) return std::nullopt;
  const fs::path path = path_for(key);
  EntryRead r = read_entry(path);
  if (!r.entry) {
    if (!r.why.empty()) warn_rejected(path, r);
    return std::nullopt;
  }
  if (r.entry->key != key) return std::nullopt;  // hash collision: a different problem owns this file
  return r.entry;
}

void ResultCache::put(const CacheEntry& e) const {
  if (!enabled()) return;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw Error("cannot create cache directory " + dir_ + ": " + ec.message());
  const std::string text = entry_text(e.key, e.record);
  if (text.size() > kMaxEntryBytes)
    throw Error("cache entry of " + std::to_string(text.size()) + " bytes is larger than a reader takes (" +
                std::to_string(kMaxEntryBytes) + ")");
  detail::write_file_atomic(path_for(e.key), text);
}

std::vector<CacheEntry> ResultCache::list() const { return scan(false).entries; }

CacheListing ResultCache::scan() const { return scan(false); }

// strict (export): a directory or entry the system refuses to read is an error, since skipping it would write an
// export that silently lacks entries; otherwise (ls, a tune) a warning.
CacheListing ResultCache::scan(bool strict) const {
  CacheListing out;
  if (!enabled()) return out;
  std::error_code ec;
  const bool is_dir = fs::is_directory(dir_, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    if (strict) throw Error("cannot read cache directory " + dir_ + ": " + ec.message());
    warn("cannot read cache directory " + dir_ + ": " + ec.message());
    return out;
  }
  if (!is_dir) return out;
  std::vector<fs::path> files;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec))
    if (is_entry_name(it->path())) files.push_back(it->path());
  if (ec) {
    if (strict) throw Error("cannot read cache directory " + dir_ + ": " + ec.message());
    warn("cannot list cache directory " + dir_ + ": " + ec.message());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    EntryRead r = read_entry(f);
    if (r.entry) {
      out.entries.push_back(std::move(*r.entry));
    } else if (!r.why.empty()) {
      if (strict && r.unreadable) throw Error("cannot read cache entry " + f.string() + ": " + r.why);
      warn_rejected(f, r);
      ++out.skipped;
    }
  }
  return out;
}

ClearCount ResultCache::clear() const {
  if (!enabled()) throw Error("no result cache directory (set GEMMTUNE_CACHE_DIR or HOME)");
  std::error_code ec;
  if (!fs::is_directory(dir_, ec)) return {};
  // Only published entries go, and temp files old enough that their writer is gone: a temp file of a running writer
  // is about to be renamed into place, and removing it would make that writer fail. Entries are counted as list()
  // counts them (readable ones apart from the rest), so that `clear` after `ls` reports the number `ls` showed.
  ClearCount removed;
  size_t failed = 0;
  std::string first_error;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path path = it->path();
    const bool entry = is_entry_name(path);
    bool stale_tmp = false;
    if (path.filename().string().starts_with(detail::kTmpPrefix)) {
      std::error_code tec;
      const auto t = fs::last_write_time(path, tec);
      stale_tmp = !tec && now - t > kStaleTmpAge;
    }
    if (!entry && !stale_tmp) continue;
    const bool readable = entry && read_entry(path).entry.has_value();
    std::error_code rec;
    if (fs::remove(path, rec)) {
      if (entry) ++(readable ? removed.entries : removed.other);
    } else if (rec) {
      ++failed;
      if (first_error.empty()) first_error = path.string() + ": " + rec.message();
    }
  }
  if (ec) throw Error("cannot list cache directory " + dir_ + ": " + ec.message());
  if (failed)
    throw Error("cache clear: removed " + std::to_string(removed.entries + removed.other) +
                " entries, could not remove " + std::to_string(failed) + " (" + first_error + ")");
  return removed;
}

size_t ResultCache::export_to(const std::string& file) const {
  // The target first: a device or FIFO the user named is refused before the cache is read.
  std::string target;
  try {
    target = detail::output_target(file);
  } catch (const detail::InputError& e) {
    throw detail::InputError(std::string("cache export ") + e.what());
  }
  nlohmann::json j = {{"gemmtune_cache", 1}, {"entries", nlohmann::json::array()}};
  for (auto& e : scan(true).entries) j["entries"].push_back(std::move(e.record));
  const fs::path p(target);
  if (p.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(p.parent_path(), ec);
  }
  detail::write_file_atomic(target, j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace));
  return j["entries"].size();
}

size_t ResultCache::import_from(const std::string& file) const {
  if (!enabled()) throw Error("no result cache directory (set GEMMTUNE_CACHE_DIR or HOME)");
  const std::string what = "cache import '" + file + "'";
  const detail::FileRead f = detail::read_regular_file(file, kMaxExportBytes, detail::Follow::user);
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
  if (entries.size() > kMaxImportEntries)
    throw detail::InputError(what + ": " + std::to_string(entries.size()) + " entries, more than an import takes (" +
                             std::to_string(kMaxImportEntries) + ")");
  // Checked as a reader will check them, before anything is written: an entry the reader would reject is skipped
  // here, not stored to be a miss with a warning on every use. Of several entries with one key the last wins, as
  // its file would, and the key counts once.
  std::unordered_map<std::string, size_t> last;  // key -> index of its last good entry
  std::vector<std::string> texts(entries.size());
  size_t skipped = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const nlohmann::json& rec = entries[i];
    std::string why = record_problem(rec);
    if (why.empty()) {
      texts[i] = entry_text(rec["key"].get<std::string>(), rec);
      if (texts[i].size() > kMaxEntryBytes)
        why = "larger than " + std::to_string(kMaxEntryBytes) + " bytes";
    }
    if (!why.empty()) {
      if (skipped++ == 0) warn(what + ": skipping entry #" + std::to_string(i) + " (" + why + ")");
      texts[i].clear();
      continue;
    }
    last[rec["key"].get<std::string>()] = i;
  }
  if (skipped > 1) warn(what + ": skipped " + std::to_string(skipped) + " bad entries in all");
  if (const size_t repeats = entries.size() - skipped - last.size(); repeats > 0)
    warn(what + ": " + std::to_string(repeats) + " entries repeat the key of another; the last of each is kept");
  if (enabled()) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) throw Error("cannot create cache directory " + dir_ + ": " + ec.message());
  }
  std::vector<size_t> order;
  order.reserve(last.size());
  for (const auto& [key, i] : last) order.push_back(i);
  std::sort(order.begin(), order.end());  // file order, so that a failure part-way leaves the earlier entries
  for (size_t i : order) detail::write_file_atomic(path_for(entries[i]["key"].get<std::string>()), texts[i]);
  return order.size();
}

}  // namespace gemmtune
