// Hostile input at the library level: the shared helpers of src/core (printable, parse_int, write_file_atomic,
// output_target, to_fp32, fnv1a64), the epilogue's length cap, batch strides, the caches' unreadable entries.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "temp_dir.h"
#include "backends/backend.h"
#include "core/atomic_file.h"
#include "core/fnv.h"
#include "core/input.h"
#include "core/parse_int.h"
#include "core/text.h"
#include "gemmtune/epilogue.h"
#include "gemmtune/errors.h"
#include "gemmtune/problem.h"
#include "jit/disk_cache.h"
#include "tuner/result_cache.h"

namespace fs = std::filesystem;
using namespace gemmtune;

namespace {
using gemmtune::test::TempDir;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs `f` in a child process as an unprivileged user (root reads anything, so EACCES needs another uid); the
// child's exit status: 0 when `f` returned true. -1 when this process cannot switch users (not root).
template <class F>
int as_nobody(F f) {
  if (geteuid() != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
    _exit(f() ? 0 : 1);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}
}  // namespace

TEST(Printable, ControlBytesAndInvalidUtf8BecomeQuestionMarks) {
  using detail::printable;
  EXPECT_EQ(printable("plain text, ümlaut, 日本, 🙂"), "plain text, ümlaut, 日本, 🙂");
  EXPECT_EQ(printable(std::string("a\x1b[31mb\nc\td\x7f" "e\0f", 15)), "a?[31mb?c?d?e?f");
  EXPECT_EQ(printable("\xc2\x9b" "31m \xc2\x80 \xc2\x9f \xc2\xa0"), "?31m ? ? \xc2\xa0");  // C1 -> ?, NBSP stays
  EXPECT_EQ(printable("\xff \xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 \xe2\x82"), "? ?? ??? ???? ??");
}

TEST(ParseInt, WholeTextInRangeOrANamedReason) {
  int v = 0;
  EXPECT_EQ(detail::parse_int("128", v), "");
  EXPECT_EQ(v, 128);
  EXPECT_EQ(detail::parse_int("-3", v), "");
  EXPECT_EQ(detail::parse_int("99999999999", v), "is out of range (at most 2147483647)");
  EXPECT_EQ(detail::parse_int("-99999999999999999999", v), "is out of range (at least -2147483648)");
  EXPECT_EQ(detail::parse_int("4abc", v), "is not an integer");
  EXPECT_EQ(detail::parse_int("", v), "is not an integer");
  EXPECT_EQ(detail::parse_int(" 4", v), "is not an integer");
  EXPECT_EQ(detail::parse_int("0", v, 1, 8), "is out of range (at least 1)");
}

TEST(Sm90Config, OverflowingNumbersAreRefusedNotWrapped) {
  const auto sm90 = find_backend("sm90");
  ASSERT_TRUE(sm90);
  for (const std::string cfg : {"tile=99999999999x128x64,stages=4,cluster=1x1", "tile=128x128x64junk,stages=4",
                                "tile=128x128,stages=4", "tile=128x128x64,stages=99999999999",
                                "tile=128x128x64,cluster=1x99999999999", "tile=128x128x64,stages=4x"}) {
    try {
      sm90->parse(Candidate{"sm90", cfg});
      ADD_FAILURE() << cfg << " parsed";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find("1215752191"), std::string::npos) << what;
      EXPECT_TRUE(what.find("out of range") != std::string::npos || what.find("not an integer") != std::string::npos ||
                  what.find("must be MxN") != std::string::npos)
          << what;
    }
  }
  EXPECT_NO_THROW(sm90->parse(Candidate{"sm90", "tile=128x128x64,stages=4,cluster=1x2"}));
}

TEST(Fnv, OneHelperWithTheStandardVectors) {
  EXPECT_EQ(detail::fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(detail::fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(detail::hex64(0xabcull), "0000000000000abc");
}

TEST(ToFp32, NonzeroNeverBecomesZeroOrInfinity) {
  float f = 7;
  EXPECT_EQ(detail::to_fp32(0.5, f), "");
  EXPECT_EQ(f, 0.5f);
  EXPECT_NE(detail::to_fp32(1e-50, f).find("too small for a float"), std::string::npos);
  EXPECT_NE(detail::to_fp32(-1e39, f).find("out of the range of a float"), std::string::npos);
  EXPECT_EQ(detail::to_fp32(1e-40, f), "");  // subnormal, nonzero
  EXPECT_GT(f, 0.0f);
  EXPECT_EQ(detail::to_fp32(0.0, f), "");
}

TEST(AtomicFile, WritesWholeLeavesNoTempAndRefusesNonRegularTargets) {
  TempDir t;
  const fs::path p = t.path / "f.json";
  detail::write_file_atomic(p.string(), "one");
  detail::write_file_atomic(p.string(), "two");
  EXPECT_EQ(slurp(p), "two");
  for (const auto& de : fs::directory_iterator(t.path))
    EXPECT_FALSE(de.path().filename().string().starts_with(detail::kTmpPrefix)) << de.path();
  // Into a directory that does not exist: an error naming the file, not a crash.
  EXPECT_THROW(detail::write_file_atomic((t.path / "no" / "f").string(), "x"), Error);

  EXPECT_EQ(detail::output_target(p.string()), p.string());
  EXPECT_EQ(detail::output_target((t.path / "new").string()), (t.path / "new").string());
  fs::create_symlink(p, t.path / "link");
  EXPECT_EQ(detail::output_target((t.path / "link").string()), fs::canonical(p).string());
  ASSERT_EQ(mkfifo((t.path / "fifo").c_str(), 0600), 0);
  fs::create_symlink(t.path / "nowhere", t.path / "dangling");
  for (const std::string& bad : std::vector<std::string>{"/dev/null", (t.path / "fifo").string(), t.path.string(),
                                (t.path / "dangling").string()})
    EXPECT_THROW(detail::output_target(bad), detail::InputError) << bad;
}

TEST(ReadRegularFile, FollowsLinksTheUserNamesNotEntryLinks) {
  TempDir t;
  std::ofstream(t.path / "real") << "data";
  fs::create_symlink(t.path / "real", t.path / "link");
  EXPECT_EQ(detail::read_regular_file((t.path / "link").string(), 100).status, detail::FileRead::rejected);
  const detail::FileRead f = detail::read_regular_file((t.path / "link").string(), 100, detail::Follow::user);
  EXPECT_EQ(f.status, detail::FileRead::ok);
  EXPECT_EQ(f.data, "data");
  // Through a link to a device: still refused.
  fs::create_symlink("/dev/zero", t.path / "zero");
  EXPECT_EQ(detail::read_regular_file((t.path / "zero").string(), 100, detail::Follow::user).status,
            detail::FileRead::rejected);
}

TEST(EpilogueLimit, ChainsPastTheMaximumAreRefusedEverywhere) {
  std::string spec = "relu";
  for (int i = 1; i < kMaxEpilogueOps; ++i) spec += ",relu";
  EXPECT_NO_THROW(parse_epilogue(spec));
  EXPECT_THROW(parse_epilogue(spec + ",relu"), Error);
  // Built directly (not parsed): Problem::check() refuses it, so the C ABI, Python and the CLI all do.
  Problem p = Problem::make(64, 64, 64, DType::bf16, DType::bf16);
  p.epilogue.ops.resize(kMaxEpilogueOps + 1);
  p.resolve();
  EXPECT_NE(p.check().find("at most 16"), std::string::npos) << p.check();
}

TEST(ProblemHostile, OnlyMinusOneMeansAPackedBatchStride) {
  Problem p = Problem::make(64, 64, 64, DType::bf16, DType::bf16, Layout::row, Layout::col, 2);
  p.a.batch_stride = -7;
  p.resolve();
  EXPECT_EQ(p.a.batch_stride, -7);
  EXPECT_NE(p.check().find("A: batch_stride=-7"), std::string::npos) << p.check();
}

TEST(ResultCacheHostile, ExportOfAnUnreadableCacheIsAnError) {
  TempDir t;
  ResultCache c((t.path / "results").string());
  c.put({"k", {{"winner", "sm90:x"}}});
  fs::permissions(t.path / "results", fs::perms::owner_all);  // 0700, root's: unreadable to anyone else
  const std::string out = (t.path / "out.json").string();
  fs::permissions(t.path, fs::perms::all);  // the export itself may be written
  const int rc = as_nobody([&] {
    try {
      ResultCache(( t.path / "results").string()).export_to(out);
      return false;
    } catch (const Error& e) {
      return std::string(e.what()).find("Permission denied") != std::string::npos && !fs::exists(out);
    }
  });
  if (rc == -1) GTEST_SKIP() << "needs root to run a child as another user";
  EXPECT_EQ(rc, 0) << "export of a cache it cannot read must fail, naming the reason";
}

TEST(ResultCacheHostile, ImportCountsEachKeyOnceAndPutRefusesWhatAReaderWouldNot) {
  TempDir t;
  ResultCache c((t.path / "results").string());
  const std::string file = (t.path / "in.json").string();
  std::ofstream(file) << R"({"gemmtune_cache": 1, "entries": [{"key": "a", "winner": "x:1"}, {"key": "a",
                            "winner": "x:2"}, {"key": "b", "winner": "x:3"}, {"key": "a", "winner": "x:4"}]})";
  EXPECT_EQ(c.import_from(file), 2u);
  EXPECT_EQ(c.get("a")->record["winner"], "x:4");
  EXPECT_THROW(c.put({"big", {{"winner", "x:1"}, {"pad", std::string(ResultCache::kMaxEntryBytes, 'x')}}}), Error);
  EXPECT_FALSE(c.get("big"));
}

TEST(KernelCacheHostile, AnEntryTheSystemCannotReadIsUnreadableNotCorrupt) {
  TempDir t;
  // A path through a regular file (ENOTDIR): refused by the system for root too.
  std::ofstream(t.path / "file") << "x";
  bool corrupt = false;
  testing::internal::CaptureStderr();
  EXPECT_FALSE(jit::detail::disk_load((t.path / "file").string(), "key", "kernel", &corrupt));
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("unreadable kernel cache entry"), std::string::npos) << err;
  EXPECT_NE(err.find("Not a directory"), std::string::npos) << err;
  EXPECT_EQ(err.find("corrupt"), std::string::npos) << err;
  // EACCES, as another user.
  const fs::path dir = t.path / "kernels";
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::all);
  std::ofstream(jit::detail::disk_entry_path(dir.string(), "key")) << "GTCUBIN1 whatever";
  fs::permissions(jit::detail::disk_entry_path(dir.string(), "key"), fs::perms::owner_read);
  const fs::path log = t.path / "log";
  fs::permissions(t.path, fs::perms::all);
  const int rc = as_nobody([&] {
    if (!std::freopen(log.c_str(), "w", stderr)) return false;
    bool c = false;
    jit::detail::disk_load(dir.string(), "key", "kernel", &c);
    std::fflush(stderr);
    return c;
  });
  if (rc == -1) GTEST_SKIP() << "needs root to run a child as another user";
  EXPECT_EQ(rc, 0);
  err = slurp(log);
  EXPECT_NE(err.find("unreadable kernel cache entry"), std::string::npos) << err;
  EXPECT_NE(err.find("Permission denied"), std::string::npos) << err;
}
