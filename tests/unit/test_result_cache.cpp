#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "temp_dir.h"
#include "core/input.h"
#include "gemmtune/errors.h"
#include "tuner/result_cache.h"

namespace fs = std::filesystem;
using namespace gemmtune;

namespace {
using gemmtune::test::TempDir;
CacheEntry entry(const std::string& key, const std::string& winner, double us) {
  return {key, {{"winner", winner}, {"us", us}, {"results", nlohmann::json::array()}}};
}
}  // namespace

TEST(ResultCache, PutGetRoundTrip) {
  TempDir t;
  ResultCache c((t.path / "results").string());
  EXPECT_FALSE(c.get("k1"));
  c.put(entry("k1", "cublaslt:default", 12.5));
  auto e = c.get("k1");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->record["winner"], "cublaslt:default");
  EXPECT_EQ(e->record["us"], 12.5);
  EXPECT_FALSE(c.get("k2"));
}

TEST(ResultCache, CorruptOrTruncatedEntryIsAMiss) {
  TempDir t;
  ResultCache c(t.path.string());
  c.put(entry("key-a", "sm90:x", 1.0));
  c.put(entry("key-b", "sm90:y", 2.0));
  // Truncate every file in half, then garbage one of them.
  std::vector<fs::path> files;
  for (auto& de : fs::directory_iterator(t.path)) files.push_back(de.path());
  ASSERT_EQ(files.size(), 2u);
  fs::resize_file(files[0], fs::file_size(files[0]) / 2);
  { std::ofstream(files[1], std::ios::trunc) << "\x01\x02garbage{{"; }
  testing::internal::CaptureStderr();
  EXPECT_FALSE(c.get("key-a"));
  EXPECT_FALSE(c.get("key-b"));
  EXPECT_TRUE(c.list().empty());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("corrupt cache entry"), std::string::npos) << err;
  // A corrupt entry is simply overwritten by the next put.
  c.put(entry("key-a", "sm90:z", 3.0));
  ASSERT_TRUE(c.get("key-a"));
  EXPECT_EQ(c.get("key-a")->record["winner"], "sm90:z");
}

TEST(ResultCache, ConcurrentWritersNeverLeaveAPartialFile) {
  TempDir t;
  const std::string dir = t.path.string();
  // 4 processes x 50 writes of the same key with large records, while this process keeps reading.
  std::vector<pid_t> kids;
  for (int w = 0; w < 4; ++w) {
    pid_t pid = fork();
    if (pid == 0) {
      ResultCache c(dir);
      std::string pad(20000 + 1000 * w, 'a' + w);
      for (int i = 0; i < 50; ++i) {
        CacheEntry e = entry("shared-key", "w" + std::to_string(w), i);
        e.record["pad"] = pad;
        c.put(e);
      }
      _exit(0);
    }
    kids.push_back(pid);
  }
  ResultCache reader(dir);
  int seen = 0, bad = 0;
  testing::internal::CaptureStderr();
  for (int i = 0; i < 400; ++i) {
    if (auto e = reader.get("shared-key")) {
      ++seen;
      const std::string w = e->record["winner"];
      const std::string pad = e->record["pad"];
      if (pad.size() != size_t(20000 + 1000 * (w[1] - '0')) || pad[0] != 'a' + (w[1] - '0')) ++bad;
    }
  }
  for (pid_t k : kids) {
    int st = 0;
    waitpid(k, &st, 0);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(err.find("corrupt"), std::string::npos) << "a reader saw a partial file: " << err;
  ASSERT_TRUE(reader.get("shared-key"));
  // No temp files left behind.
  for (auto& de : fs::directory_iterator(dir)) EXPECT_EQ(de.path().filename().string().rfind(".tmp-", 0), std::string::npos);
  (void)seen;
}

TEST(ResultCache, ExportImportMergesAndClear) {
  TempDir a, b;
  ResultCache ca(a.path.string()), cb(b.path.string());
  ca.put(entry("k1", "sm90:a", 1));
  ca.put(entry("k2", "sm90:b", 2));
  cb.put(entry("k2", "cublaslt:old", 9));
  cb.put(entry("k3", "cublaslt:c", 3));
  const std::string file = (a.path / "export.json").string();
  ca.export_to(file);
  EXPECT_EQ(cb.import_from(file), 2u);
  EXPECT_EQ(cb.list().size(), 3u);
  EXPECT_EQ(cb.get("k2")->record["winner"], "sm90:b");  // imported entry replaces
  EXPECT_EQ(cb.get("k3")->record["winner"], "cublaslt:c");  // merge keeps the rest
  EXPECT_EQ(cb.clear().entries, 3u);
  EXPECT_TRUE(cb.list().empty());
}

TEST(ResultCache, ImportRejectsForeignFiles) {
  TempDir t;
  ResultCache c(t.path.string());
  EXPECT_THROW(c.import_from((t.path / "missing.json").string()), Error);
  const auto bad = t.path / "bad.json";
  { std::ofstream(bad) << "{\"not\": \"ours\"}"; }
  try {
    c.import_from(bad.string());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a gemmtune cache export"), std::string::npos) << e.what();
  }
  { std::ofstream(bad, std::ios::trunc) << "{{{"; }
  EXPECT_THROW(c.import_from(bad.string()), Error);
}

// A cache file is a trust boundary (docs/CACHE.md): entries come from other machines through `cache import`.

TEST(ResultCacheHostile, DeeplyNestedEntryIsAMissNotACrash) {
  TempDir t;
  ResultCache c(t.path.string());
  c.put(entry("deep", "sm90:x", 1.0));
  fs::path file;
  for (auto& de : fs::directory_iterator(t.path)) file = de.path();
  const int depth = 200000;
  { std::ofstream(file, std::ios::trunc) << R"({"key": "deep", "winner": "sm90:x", "x": )" << std::string(depth, '[')
                                         << std::string(depth, ']') << "}"; }
  testing::internal::CaptureStderr();
  EXPECT_FALSE(c.get("deep"));
  EXPECT_TRUE(c.list().empty());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("nested deeper"), std::string::npos) << err;
}

TEST(ResultCacheHostile, ImportOfDeeplyNestedFileIsAnInputError) {
  TempDir t;
  ResultCache c((t.path / "results").string());
  const std::string file = (t.path / "deep.json").string();
  const int depth = 100000;
  { std::ofstream(file) << R"({"gemmtune_cache": 1, "entries": [{"key": "k", "winner": "a:b", "x": )"
                        << std::string(depth, '[') << std::string(depth, ']') << "}]}"; }
  EXPECT_THROW(c.import_from(file), detail::InputError);
  EXPECT_TRUE(c.list().empty());
}

TEST(ResultCacheHostile, OnlyRegularFilesAreRead) {
  TempDir t;
  ResultCache c(t.path.string());
  c.put(entry("fifo", "sm90:x", 1.0));
  c.put(entry("link", "sm90:y", 1.0));
  c.put(entry("dir", "sm90:z", 1.0));
  auto path_of = [&](const std::string& key) {
    for (auto& de : fs::directory_iterator(t.path)) {
      const auto e = nlohmann::json::parse(std::ifstream(de.path()));
      if (e["key"] == key) return de.path();
    }
    return fs::path();
  };
  const fs::path fifo = path_of("fifo"), link = path_of("link"), dir = path_of("dir");
  // The link points out of the cache at a well-formed entry: reading it would let anyone who can make a link in the
  // cache serve any file (and a link to /dev/zero would never end).
  TempDir outside;
  fs::copy_file(link, outside.path / "planted.json");
  fs::remove(fifo), fs::remove(link), fs::remove(dir);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);  // a read would block forever
  fs::create_symlink(outside.path / "planted.json", link);
  fs::create_directories(dir / "sub");
  testing::internal::CaptureStderr();
  EXPECT_FALSE(c.get("fifo"));
  EXPECT_FALSE(c.get("link"));
  EXPECT_FALSE(c.get("dir"));
  EXPECT_TRUE(c.list().empty());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("not a regular file"), std::string::npos) << err;
  EXPECT_NE(err.find("symbolic link"), std::string::npos) << err;
  EXPECT_NE(err.find("directory"), std::string::npos) << err;
  // The FIFO and the link are replaced by the next put, as a corrupt file is.
  c.put(entry("fifo", "sm90:x2", 2.0));
  c.put(entry("link", "sm90:y2", 2.0));
  EXPECT_EQ(c.get("fifo")->record["winner"], "sm90:x2");
  EXPECT_EQ(c.get("link")->record["winner"], "sm90:y2");
}

TEST(ResultCacheHostile, OversizedEntryIsNotRead) {
  TempDir t;
  ResultCache c(t.path.string());
  c.put(entry("big", "sm90:x", 1.0));
  for (auto& de : fs::directory_iterator(t.path)) fs::resize_file(de.path(), std::uintmax_t(64) << 20);  // sparse
  testing::internal::CaptureStderr();
  EXPECT_FALSE(c.get("big"));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("larger than"), std::string::npos) << err;
}

TEST(ResultCacheHostile, ImportCountsOnlyEntriesWithAWinnerLine) {
  TempDir t;
  ResultCache c((t.path / "results").string());
  const std::string file = (t.path / "in.json").string();
  { std::ofstream(file) << R"({"gemmtune_cache": 1, "entries": [{"key": "a", "winner": 42},
      {"key": "b", "winner": null}, {"key": "c"}, {"key": 5, "winner": "sm90:x"}, {"key": "d", "winner": "sm90:x"}]})"; }
  testing::internal::CaptureStderr();
  EXPECT_EQ(c.import_from(file), 1u);
  testing::internal::GetCapturedStderr();
  ASSERT_EQ(c.list().size(), 1u);
  EXPECT_EQ(c.list()[0].key, "d");
  // A version of the wrong type names the field, as an input error (the CLI's exit 2), not a nlohmann type_error.
  { std::ofstream(file, std::ios::trunc) << R"({"gemmtune_cache": "1", "entries": []})"; }
  try {
    c.import_from(file);
    FAIL() << "expected an InputError";
  } catch (const detail::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("\"gemmtune_cache\" must be an integer"), std::string::npos) << e.what();
  }
}

TEST(ResultCacheHostile, ClearLeavesWritersTempFilesAlone) {
  TempDir t;
  ResultCache c(t.path.string());
  c.put(entry("k", "sm90:x", 1.0));
  // A writer's temp file, as atomic_write names it, that is about to be renamed into place.
  const fs::path tmp = t.path / ".tmp-12345-1-0";
  { std::ofstream(tmp) << R"({"key": "k2", "winner": "sm90:y"})"; }
  EXPECT_EQ(c.clear().entries, 1u);
  EXPECT_TRUE(fs::exists(tmp)) << "clear removed another process's in-flight temp file";
  // One left behind by a writer that died long ago goes.
  fs::last_write_time(tmp, fs::file_time_type::clock::now() - std::chrono::hours(2));
  EXPECT_EQ(c.clear().entries, 0u);
  EXPECT_FALSE(fs::exists(tmp));
}

TEST(ResultCacheHostile, ConcurrentClearNeverBreaksWriters) {
  TempDir t;
  const std::string dir = t.path.string();
  std::vector<pid_t> kids;
  for (int w = 0; w < 3; ++w) {
    pid_t pid = fork();
    if (pid == 0) {
      ResultCache c(dir);
      try {
        for (int i = 0; i < 200; ++i) c.put(entry("k" + std::to_string(w) + "-" + std::to_string(i), "sm90:x", i));
      } catch (const std::exception&) {
        _exit(1);
      }
      _exit(0);
    }
    kids.push_back(pid);
  }
  ResultCache clearer(dir);
  for (int i = 0; i < 200; ++i) clearer.clear();
  for (pid_t k : kids) {
    int st = 0;
    waitpid(k, &st, 0);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "a writer failed while another process cleared the cache";
  }
}

TEST(ResultCacheHostile, ClearReportsWhatItCannotRemove) {
  TempDir t;
  ResultCache c(t.path.string());
  c.put(entry("k", "sm90:x", 1.0));
  // An entry name that is a non-empty directory cannot be removed (as a read-only cache, but also when run as root).
  fs::create_directories(t.path / "stuck.json" / "inside");
  try {
    c.clear();
    FAIL() << "clear() must not report success when an entry stays";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("stuck.json"), std::string::npos) << e.what();
  }
}

TEST(ResultCacheHostile, UnreadableEntryIsWarnedAbout) {
  TempDir t;
  ResultCache c(t.path.string());
  fs::create_directories(t.path / "0123.json");
  fs::create_symlink(t.path / "nowhere", t.path / "4567.json");  // dangling: an open fails
  const bool root = geteuid() == 0;  // root reads a file without read permission
  if (!root) {
    c.put(entry("locked", "sm90:x", 1.0));
    for (auto& de : fs::directory_iterator(t.path))
      if (fs::is_regular_file(fs::symlink_status(de.path()))) fs::permissions(de.path(), fs::perms::none);
  }
  testing::internal::CaptureStderr();
  EXPECT_TRUE(c.list().empty());
  const std::string err = testing::internal::GetCapturedStderr();
  for (const char* name : {"0123.json", "4567.json"})
    EXPECT_NE(err.find(name), std::string::npos) << name << ": an entry that cannot be read vanished silently";
  if (!root) EXPECT_NE(err.find("Permission denied"), std::string::npos) << err;
}

TEST(ResultCacheHostile, NoHomeMeansNoCache) {
  const char* home = std::getenv("HOME");
  const char* dir = std::getenv("GEMMTUNE_CACHE_DIR");
  const std::string saved_home = home ? home : "", saved_dir = dir ? dir : "";
  unsetenv("HOME");
  unsetenv("GEMMTUNE_CACHE_DIR");
  const std::string d = ResultCache::default_dir();
  if (home) setenv("HOME", saved_home.c_str(), 1);
  if (dir) setenv("GEMMTUNE_CACHE_DIR", saved_dir.c_str(), 1);
  // As the kernel cache: no per-user directory, no cache (never a directory shared by every user such as /tmp).
  EXPECT_EQ(d, "");
  ResultCache off(d);
  EXPECT_FALSE(off.enabled());
  off.put(entry("k", "sm90:x", 1.0));
  EXPECT_FALSE(off.get("k"));
}
