#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "gemmtune/errors.h"
#include "tuner/result_cache.h"

namespace fs = std::filesystem;
using namespace gemmtune;

namespace {
struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/gemmtune-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};
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
  EXPECT_EQ(cb.clear(), 3u);
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
