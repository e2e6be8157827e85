// The gemmtune CLI as a user meets it: bad arguments give a non-zero exit and one line naming the problem;
// `compile` works without a GPU; the result cache survives an export/clear/import round trip.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <regex>
#include <string>
#include <vector>

#include "temp_dir.h"
#include "gemmtune/epilogue.h"
#include "gemmtune/problem.h"
#include "tuner/result_cache.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;

std::string cli_path() {
  if (const char* p = std::getenv("GEMMTUNE_CLI"); p && *p) return p;
#ifdef GEMMTUNE_CLI_PATH
  return GEMMTUNE_CLI_PATH;
#else
  return "";
#endif
}

struct CliRun {
  int rc = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

using gemmtune::test::TempDir;

// Runs the CLI with `args`; stdout/stderr go to files (no pipe deadlock on long output). `env` overrides variables.
CliRun run_cli(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}) {
  TempDir io;
  const std::string outp = (io.path / "out").string(), errp = (io.path / "err").string();
  std::vector<std::string> argv_s{cli_path()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);

  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    std::string k = kv.substr(0, kv.find('='));
    if (!env.count(k)) env_s.push_back(kv);
  }
  for (const auto& [k, v] : env) env_s.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_s) envp.push_back(s.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, outp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, errp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  CliRun r;
  int e = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (e != 0) {
    r.err = "posix_spawn failed: " + std::string(strerror(e));
    return r;
  }
  // A CLI that hangs (a regression reading a FIFO, say) fails the test instead of stalling the suite.
  int status = 0;
  for (int waited_ms = 0; waitpid(pid, &status, WNOHANG) == 0; waited_ms += 10) {
    if (waited_ms > 240000) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    usleep(10000);
  }
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(outp);
  r.err = slurp(errp);
  return r;
}

std::vector<std::string> nonempty_lines(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream is(s);
  for (std::string l; std::getline(is, l);)
    if (!l.empty()) v.push_back(l);
  return v;
}

std::string describe(const std::vector<std::string>& args, const CliRun& r) {
  std::string cmd = "gemmtune";
  for (const auto& a : args) cmd += " " + a;
  return cmd + "\n  rc=" + std::to_string(r.rc) + "\n  stdout: " + r.out + "\n  stderr: " + r.err;
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cli_path().empty() || !fs::exists(cli_path())) GTEST_SKIP() << "gemmtune CLI not built (GEMMTUNE_CLI_PATH)";
  }
  // Every run gets its own cache directory: tests never touch ~/.cache.
  TempDir cache;
  std::map<std::string, std::string> env() const { return {{"GEMMTUNE_CACHE_DIR", cache.path.string()}}; }

  // A bad invocation: non-zero exit, exactly one line on stderr, starting "error:" and containing `needle`.
  void expect_usage_error(const std::vector<std::string>& args, const std::string& needle) {
    CliRun r = run_cli(args, env());
    EXPECT_NE(r.rc, 0) << describe(args, r);
    EXPECT_NE(r.rc, 3) << "a bad argument must be reported before looking for a GPU\n" << describe(args, r);
    auto lines = nonempty_lines(r.err);
    ASSERT_EQ(lines.size(), 1u) << "expected a one-line reason\n" << describe(args, r);
    EXPECT_EQ(lines[0].rfind("error:", 0), 0u) << describe(args, r);
    EXPECT_NE(lines[0].find(needle), std::string::npos) << "reason should mention '" << needle << "'\n"
                                                        << describe(args, r);
    EXPECT_TRUE(r.out.empty()) << describe(args, r);
  }
};

const std::vector<std::string> kShape{"--m", "256", "--n", "256", "--k", "256"};

std::vector<std::string> with(std::vector<std::string> head, const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

TEST_F(Cli, BadDtype) {
  expect_usage_error(with({"tune"}, with(kShape, {"--A", "bf17:row"})), "bf17");
  expect_usage_error(with({"list"}, with(kShape, {"--B", "f16:diagonal"})), "diagonal");
}

TEST_F(Cli, ZeroOrNegativeM) {
  expect_usage_error({"tune", "--m", "0", "--n", "256", "--k", "256"}, "--m");
  expect_usage_error({"tune", "--m=-5", "--n", "256", "--k", "256"}, "--m");
  expect_usage_error({"compile", "--m", "256", "--n", "256", "--k", "0"}, "--k");
}

TEST_F(Cli, NotANumber) { expect_usage_error({"tune", "--m", "lots", "--n", "256", "--k", "256"}, "--m"); }

TEST_F(Cli, MissingRequired) { expect_usage_error({"tune", "--n", "256", "--k", "256"}, "--m"); }

TEST_F(Cli, UnknownBackend) {
  expect_usage_error(with({"tune"}, with(kShape, {"--backends", "sm90,nosuchbackend"})), "nosuchbackend");
}

TEST_F(Cli, MalformedConfig) {
  expect_usage_error(with({"tune"}, with(kShape, {"--config", "no-colon-here"})), "--config");
  expect_usage_error(with({"compile"}, with(kShape, {"--config", "sm90:"})), "--config");
  expect_usage_error(with({"compile"}, with(kShape, {"--config", "cublaslt:algo=banana"})), "--config");
  expect_usage_error(with({"tune"}, with(kShape, {"--config", "nosuchbackend:tile=1x1x1"})), "nosuchbackend");
}

TEST_F(Cli, LdaSmallerThanK) {
  // A is M x K row-major: rows are K elements apart at least.
  expect_usage_error(with({"tune"}, with(kShape, {"--lda", "100"})), "lda");
  // B is K x N column-major: columns are K elements apart at least.
  expect_usage_error(with({"tune"}, with(kShape, {"--ldb", "128"})), "ldb");
}

TEST_F(Cli, AlignMustBeAPowerOfTwoUpTo16) {
  expect_usage_error(with({"list"}, with(kShape, {"--align-d", "3"})), "--align-d must be 2, 4, 8 or 16");
  expect_usage_error(with({"list"}, with(kShape, {"--align-a", "32"})), "--align-a must be 2, 4, 8 or 16");
}

// --batch without strides packs every operand (stride 0 would broadcast, D's batches would overlap and the problem be
// refused); an explicit 0 broadcasts A, B or C; a negative stride is a usage error.
TEST_F(Cli, BatchStrides) {
  const std::vector<std::string> packed = with({"list"}, with(kShape, {"--batch", "3", "--arch-sms", "132"}));
  CliRun r = run_cli(packed, env());
  ASSERT_EQ(r.rc, 0) << describe(packed, r);
  EXPECT_NE(r.err.find("--batch=3"), std::string::npos) << describe(packed, r);
  EXPECT_EQ(r.out.rfind("sm90:", 0), 0u) << "packed batches: sm90 candidates expected\n" << describe(packed, r);
  const std::vector<std::string> bcast = with(packed, {"--batch-stride-b", "0"});
  r = run_cli(bcast, env());
  ASSERT_EQ(r.rc, 0) << describe(bcast, r);
  EXPECT_NE(r.err.find("broadcast operands are not supported"), std::string::npos) << describe(bcast, r);
  EXPECT_EQ(r.out.find("sm90:"), std::string::npos) << "sm90 must refuse a broadcast B\n" << describe(bcast, r);
  expect_usage_error(with(packed, {"--batch-stride-b", "-1"}), "--batch-stride-b");
  expect_usage_error(with(packed, {"--batch-stride-d", "0"}), "D batch stride 0");
}

// --top-k 0 means every candidate a backend lists, as for list and compile; a negative count is a usage error.
TEST_F(Cli, TopK) {
  expect_usage_error(with({"tune"}, with(kShape, {"--top-k", "-1"})), "0 = all");
  // Accepted: the run gets past the options to the device (an ordinal no host has, so it stops there either way).
  auto e = env();
  e["GEMMTUNE_DEVICE"] = "97";
  const std::vector<std::string> all = with({"tune"}, with(kShape, {"--top-k", "0", "--backends", "sm90"}));
  CliRun r = run_cli(all, e);
  EXPECT_NE(r.rc, 0) << describe(all, r);
  EXPECT_EQ(r.err.find("--top-k"), std::string::npos) << describe(all, r);
}

TEST_F(Cli, UnknownOptionAndSubcommand) {
  expect_usage_error(with({"tune"}, with(kShape, {"--frobnicate"})), "frobnicate");
  CliRun r = run_cli({"nosuchcommand"}, env());
  EXPECT_NE(r.rc, 0);
  r = run_cli({}, env());
  EXPECT_NE(r.rc, 0) << "no subcommand";
}

TEST_F(Cli, Version) {
  CliRun r = run_cli({"--version"}, env());
  EXPECT_EQ(r.rc, 0) << describe({"--version"}, r);
  EXPECT_NE(r.out.find("gemmtune"), std::string::npos);
  r = run_cli({"version"}, env());
  EXPECT_EQ(r.rc, 0) << describe({"version"}, r);
  EXPECT_NE(r.out.find("nvrtc"), std::string::npos);
}

// The optional backends' probes (Backend::unavailable: Triton's `import triton`, CUTLASS's headers found through
// Python) run only for a command that needs that backend: GEMMTUNE_PYTHON is a script that leaves a mark when it is
// started, and CUTLASS_DIR is empty, so that either probe would start it.
TEST_F(Cli, PythonStartsOnlyForTheBackendsThatNeedIt) {
  TempDir py;
  const fs::path mark = py.path / "started", script = py.path / "python";
  {
    std::ofstream f(script);
    f << "#!/bin/sh\necho \"$*\" >> '" << mark.string() << "'\nexit 1\n";
  }
  fs::permissions(script, fs::perms::owner_all);
  auto e = env();
  e["GEMMTUNE_PYTHON"] = script.string();
  e["CUTLASS_DIR"] = "";
  auto started = [&](const std::vector<std::string>& args) {
    std::error_code ec;
    fs::remove(mark, ec);
    const CliRun r = run_cli(args, e);
    EXPECT_EQ(r.rc, 0) << describe(args, r);
    return fs::exists(mark) ? slurp(mark) : std::string();
  };
  for (const auto& args : {with({"list", "--backends", "sm90"}, kShape), with({"list", "--backends", "sm90,gemv"}, kShape),
                           with({"compile", "--backends", "sm90,gemv", "--top-k", "1"}, kShape)})
    EXPECT_EQ(started(args), "") << "Python started for " << describe(args, {});
  EXPECT_NE(started(with({"list", "--backends", "triton"}, kShape)).find("import triton"), std::string::npos);
  EXPECT_NE(started(with({"list", "--backends", "cutlass"}, kShape)).find("cutlass_library"), std::string::npos);
  const std::string all = started(with({"list"}, kShape));
  EXPECT_NE(all.find("import triton"), std::string::npos) << all;
  EXPECT_NE(all.find("cutlass_library"), std::string::npos) << all;
  // `version` is the diagnostic: it probes every backend.
  EXPECT_NE(started({"version"}).find("import triton"), std::string::npos);
}

// NVRTC and cuBLASLt are opened when first needed (cuda/toolkit_library.h), not at the process's start: `list` of
// sm90 needs neither, `compile` needs NVRTC only, `version` reports both. The loader names each library it opens
// (LD_DEBUG=files, on stderr).
TEST_F(Cli, ToolkitLibrariesLoadOnlyWhenNeeded) {
  auto e = env();
  e["LD_DEBUG"] = "files";
  auto loads = [&](const std::vector<std::string>& args, const std::string& lib) {
    const CliRun r = run_cli(args, e);
    EXPECT_EQ(r.rc, 0) << describe(args, r);
    // "file=<lib>... generating link map" is a load; a lookup with RTLD_NOLOAD (the version probes) prints only
    // "file=<lib>... dynamically loaded by".
    return std::regex_search(r.err, std::regex("file=" + lib + "[^\n]*generating link map"));
  };
  const auto list = with({"list", "--backends", "sm90"}, kShape);
  EXPECT_FALSE(loads(list, "libnvrtc")) << "list loads NVRTC";
  EXPECT_FALSE(loads(list, "libcublasLt")) << "list loads cuBLASLt";
  const auto compile = with({"compile", "--backends", "sm90", "--top-k", "1", "--no-cache"}, kShape);
  EXPECT_TRUE(loads(compile, "libnvrtc"));
  EXPECT_FALSE(loads(compile, "libcublasLt")) << "compile of sm90 loads cuBLASLt";
  EXPECT_TRUE(loads({"version"}, "libcublasLt"));
}

TEST_F(Cli, CompileWithoutGpuPrintsJson) {
  std::vector<std::string> args = with({"compile"}, with(kShape, {"--top-k", "2", "--json", "--arch-sms", "132"}));
  CliRun r = run_cli(args, env());
  ASSERT_EQ(r.rc, 0) << describe(args, r);
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(r.out)) << describe(args, r);
  ASSERT_TRUE(j.contains("candidates")) << j.dump(2);
  const auto& cs = j["candidates"];
  ASSERT_GE(cs.size(), 1u) << j.dump(2);
  ASSERT_LE(cs.size(), 2u) << j.dump(2);
  for (const auto& c : cs) {
    EXPECT_EQ(c.value("status", ""), "ok") << c.dump(2);
    EXPECT_EQ(c.value("backend", ""), "sm90") << c.dump(2);
    EXPECT_GT(c.value("compile_ms", 0.0), 0.0) << c.dump(2);
    EXPECT_GT(c.value("registers", -1), 0) << c.dump(2);
    EXPECT_GE(c.value("spill_bytes", -1), 0) << c.dump(2);
    // The printed candidate pastes back into --config.
    EXPECT_EQ(c.value("candidate", ""), c.value("backend", "") + ":" + c.value("config", ""));
  }
  EXPECT_EQ(j["summary"].value("ok", -1), int(cs.size())) << j.dump(2);
  EXPECT_FALSE(j["device"].value("real", true)) << "--arch-sms assumes a device";
  EXPECT_EQ(j["device"].value("sm_count", 0), 132);

  // Again, exactly the first candidate via --config: served from the kernel cache of the first run.
  std::string cand = cs[0].value("candidate", "");
  std::vector<std::string> again = with({"compile"}, with(kShape, {"--config", cand, "--json", "--arch-sms", "132"}));
  CliRun r2 = run_cli(again, env());
  ASSERT_EQ(r2.rc, 0) << describe(again, r2);
  auto j2 = nlohmann::json::parse(r2.out);
  ASSERT_EQ(j2["candidates"].size(), 1u);
  EXPECT_EQ(j2["candidates"][0].value("candidate", ""), cand);
  EXPECT_TRUE(j2["candidates"][0].value("cache_hit", false)) << j2.dump(2);

  // `list` enumerates as `compile` does: the same candidates, in the same order (none of them spilled).
  std::vector<std::string> listed =
      with({"list"}, with(kShape, {"--top-k", "2", "--json", "--arch-sms", "132", "--backends", "sm90,gemv"}));
  CliRun r3 = run_cli(listed, env());
  ASSERT_EQ(r3.rc, 0) << describe(listed, r3);
  auto j3 = nlohmann::json::parse(r3.out);
  std::vector<std::string> from_list, from_compile;
  for (const auto& c : j3) from_list.push_back(c.get<std::string>());
  for (const auto& c : cs) from_compile.push_back(c.value("candidate", ""));
  EXPECT_EQ(from_list, from_compile) << describe(listed, r3);
}

TEST_F(Cli, CacheExportClearImportRoundTrip) {
  // Seed the cache through the library (no GPU needed), then move it with the CLI.
  gemmtune::ResultCache rc((cache.path / "results").string());
  nlohmann::json rec{{"key", "test-key-1"}, {"winner", "sm90:tile=128x128x64"}, {"us", 12.5}, {"results", {}}};
  rc.put({"test-key-1", rec});
  rec["key"] = "test-key-2";
  rec["winner"] = "cublaslt:default";
  rec["us"] = 7.25;
  rc.put({"test-key-2", rec});

  CliRun ls = run_cli({"cache", "ls"}, env());
  ASSERT_EQ(ls.rc, 0) << describe({"cache", "ls"}, ls);
  EXPECT_NE(ls.out.find("test-key-1"), std::string::npos) << ls.out;
  EXPECT_NE(ls.out.find("sm90:tile=128x128x64"), std::string::npos) << ls.out;
  EXPECT_NE(ls.out.find("12.50"), std::string::npos) << ls.out;

  TempDir other;
  const std::string file = (other.path / "export.json").string();
  CliRun ex = run_cli({"cache", "export", file}, env());
  ASSERT_EQ(ex.rc, 0) << describe({"cache", "export", file}, ex);
  ASSERT_TRUE(fs::exists(file));
  auto doc = nlohmann::json::parse(slurp(file));
  EXPECT_EQ(doc["entries"].size(), 2u) << doc.dump(2);

  CliRun cl = run_cli({"cache", "clear"}, env());
  ASSERT_EQ(cl.rc, 0) << describe({"cache", "clear"}, cl);
  CliRun ls2 = run_cli({"cache", "ls", "--json"}, env());
  ASSERT_EQ(ls2.rc, 0) << describe({"cache", "ls", "--json"}, ls2);
  EXPECT_EQ(nlohmann::json::parse(ls2.out).size(), 0u) << ls2.out;

  // Import into a different cache directory too: import merges, export is portable.
  TempDir cache2;
  for (const auto& dir : {cache.path, cache2.path}) {
    std::map<std::string, std::string> e{{"GEMMTUNE_CACHE_DIR", dir.string()}};
    CliRun im = run_cli({"cache", "import", file}, e);
    ASSERT_EQ(im.rc, 0) << describe({"cache", "import", file}, im);
    CliRun ls3 = run_cli({"cache", "ls", "--json"}, e);
    ASSERT_EQ(ls3.rc, 0);
    auto arr = nlohmann::json::parse(ls3.out);
    ASSERT_EQ(arr.size(), 2u) << ls3.out;
    EXPECT_EQ(arr[0]["key"], "test-key-1");
    EXPECT_EQ(arr[1]["record"]["winner"], "cublaslt:default");
    EXPECT_DOUBLE_EQ(arr[1]["record"]["us"].get<double>(), 7.25);
  }

  // Importing something that is not a cache export fails with a reason, and a missing file is a bad argument.
  const std::string junk = (other.path / "junk.json").string();
  std::ofstream(junk) << "{\"hello\": 1}";
  CliRun bad = run_cli({"cache", "import", junk}, env());
  EXPECT_NE(bad.rc, 0);
  EXPECT_EQ(bad.err.rfind("error:", 0), 0u) << bad.err;
  expect_usage_error({"cache", "import", (other.path / "missing.json").string()}, "missing.json");
}

TEST_F(Cli, BenchRejectsBadSuiteBeforeGpu) {
  TempDir d;
  const std::string suite = (d.path / "bad.json").string();
  std::ofstream(suite) << R"({"name": "bad", "shapes": [{"name": "zero", "m": 0, "n": 16, "k": 16}]})";
  expect_usage_error({"bench", "--suite", suite}, "zero");
  expect_usage_error({"bench", "--suite", (d.path / "nope.json").string()}, "nope.json");
  // A static shard: I/N with 0 <= I < N, and a shard with no shape is an error, all before a GPU is needed.
  const std::string two = (d.path / "two.json").string();
  std::ofstream(two) << R"({"name": "two", "shapes": [{"name": "a", "m": 64, "n": 64, "k": 64},
                                                      {"name": "b", "m": 64, "n": 64, "k": 128}]})";
  for (const char* bad : {"2/2", "x", "1", "-1/2", "0/0", "1/2/3"})
    expect_usage_error({"bench", "--suite", two, "--shard", bad}, "expected I/N");
  expect_usage_error({"bench", "--suite", two, "--shard", "2/3"}, "no shape for this shard");
  // tune --suite is the Python package's command: the binary says so instead of asking for --n.
  expect_usage_error({"tune", "--suite", two}, "Python package");
  // --list-shapes: the shard's problems as JSON, without a GPU.
  CliRun r = run_cli({"bench", "--suite", two, "--shard", "1/2", "--list-shapes"}, env());
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["suite"], "two");
  ASSERT_EQ(j["shapes"].size(), 1u);
  EXPECT_EQ(j["shapes"][0]["name"], "b");
  EXPECT_EQ(j["shapes"][0]["problem"]["k"], 128);
}

TEST_F(Cli, SuitesParse) {
  // Every shipped suite is valid JSON with well-formed shapes.
#ifdef GEMMTUNE_SOURCE_DIR
  for (const auto& e : fs::directory_iterator(fs::path(GEMMTUNE_SOURCE_DIR) / "bench" / "suites")) {
    if (e.path().extension() != ".json") continue;
    auto j = nlohmann::json::parse(slurp(e.path()));
    ASSERT_TRUE(j["shapes"].is_array()) << e.path();
    ASSERT_FALSE(j["shapes"].empty()) << e.path();
    for (const auto& s : j["shapes"]) {
      EXPECT_GT(s.value("m", s.value("masked_m", 0)), 0) << e.path() << " " << s.dump();  // masked: M_max
      EXPECT_GT(s.value("n", 0), 0) << e.path() << " " << s.dump();
      EXPECT_GT(s.value("k", 0), 0) << e.path() << " " << s.dump();
      EXPECT_FALSE(s.value("name", "").empty()) << e.path() << " " << s.dump();
    }
  }
#else
  GTEST_SKIP() << "GEMMTUNE_SOURCE_DIR not defined";
#endif
}

}  // namespace

// ---- hostile and careless input ----

TEST_F(Cli, OutOfRangeIntegersAreRefusedNotClamped) {
  expect_usage_error({"list", "--m", "4", "--n", "64", "--k", "64", "--lda", "9223372036854775808"}, "out of range");
  expect_usage_error({"list", "--m", "99999999999999999999", "--n", "64", "--k", "64"}, "out of range");
  expect_usage_error(with({"list", "--top-k", "99999999999"}, kShape), "out of range");
}

TEST_F(Cli, OverflowingSizesAreUsageErrors) {
  expect_usage_error({"compile", "--m", "16", "--n", "64", "--k", "64", "--lda", "4611686018427387904", "--top-k", "1"},
                     "spans more than 2^62 bytes");
  expect_usage_error({"list", "--m", "3", "--n", "64", "--k", "64", "--lda", "9223372036854775807"}, "spans");
  expect_usage_error({"list", "--m", "4", "--n", "64", "--k", "64", "--batch", "2", "--ldd", "4611686018427387904"},
                     "packed batch stride");
  expect_usage_error(
      {"list", "--m", "4", "--n", "64", "--k", "64", "--epilogue", "swiglu:interleave9223372036854775807"},
      "wider than N/2");
}

TEST_F(Cli, MessagesNameThingsOnce) {
  // The option names the spec; the library's own "epilogue '<spec>': " prefix is not repeated after it.
  const std::vector<std::string> args = with({"list", "--epilogue", "swiglu:halves:interleave64"}, kShape);
  expect_usage_error(args, "GLU layout given twice");
  const CliRun r = run_cli(args, env());
  EXPECT_EQ(r.err.find("swiglu:halves:interleave64"), r.err.rfind("swiglu:halves:interleave64")) << r.err;
  // A config error shows no source position of gemmtune.
  const std::vector<std::string> cfg = with({"compile", "--config", "sm90:bogus"}, kShape);
  expect_usage_error(cfg, "bogus");
  const CliRun c = run_cli(cfg, env());
  EXPECT_EQ(c.err.find(".cpp:"), std::string::npos) << c.err;
}

TEST_F(Cli, MalformedCacheImportIsExit2NamingTheField) {
  TempDir d;
  const std::string file = (d.path / "in.json").string();
  std::ofstream(file) << R"({"gemmtune_cache": "1", "entries": []})";
  expect_usage_error({"cache", "import", file}, "\"gemmtune_cache\"");
  CliRun r = run_cli({"cache", "import", file}, env());
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_EQ(r.err.find("internal"), std::string::npos) << r.err;
  // Nested 100,000 deep: refused, not a stack overflow.
  {
    std::ofstream f(file, std::ios::trunc);
    f << R"({"gemmtune_cache": 1, "entries": [{"key": "k", "winner": "a:b", "x": )" << std::string(100000, '[')
      << std::string(100000, ']') << "}]}";
  }
  expect_usage_error({"cache", "import", file}, "nested deeper");
}

TEST_F(Cli, CacheCommandsSurviveHostileEntries) {
  const fs::path results = cache.path / "results";
  fs::create_directories(results);
  std::ofstream(results / "0000.json") << R"({"key": "k", "winner": "sm90:x", "x": )" << std::string(200000, '[')
                                       << std::string(200000, ']') << "}";
  ASSERT_EQ(mkfifo((results / "0001.json").c_str(), 0600), 0);
  std::ofstream(cache.path / "planted.json") << R"({"key": "planted", "winner": "sm90:x"})";
  fs::create_symlink(cache.path / "planted.json", results / "0002.json");
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"cache", "ls"}, {"cache", "ls", "--json"}, {"cache", "export", (cache.path / "out.json").string()}}) {
    CliRun r = run_cli(args, env());
    EXPECT_EQ(r.rc, 0) << describe(args, r);
    EXPECT_NE(r.err.find("0000.json"), std::string::npos) << describe(args, r);
    EXPECT_EQ(r.out.find("planted"), std::string::npos) << "a symlink out of the cache was followed\n"
                                                        << describe(args, r);
  }
}

TEST_F(Cli, CacheClearThatFailsSaysSo) {
  fs::create_directories(cache.path / "results" / "stuck.json" / "inside");
  CliRun r = run_cli({"cache", "clear"}, env());
  EXPECT_NE(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("stuck.json"), std::string::npos) << r.err;
}

// A suite shape in the problem JSON of the C ABI and the caches reads as the same problem as in the shorter keys.
TEST_F(Cli, SuiteShapesTakeTheProblemJson) {
  TempDir d;
  const std::string suite = (d.path / "s.json").string();
  std::ofstream(suite) << R"({"shapes": [
    {"name": "short", "m": 96, "n": 64, "k": 40, "A": "f16:col", "B": "f16:row", "D": "f16:row", "lda": 104,
     "align_d": 8, "beta": 1},
    {"name": "json", "m": 96, "n": 64, "k": 40, "A": {"dtype": "f16", "layout": "col", "ld": 104},
     "B": {"dtype": "f16", "layout": "row"}, "C": {"dtype": "f16"}, "D": {"dtype": "f16", "align": 8}, "beta": 1}]})";
  const std::vector<std::string> args{"compile", "--suite",    suite, "--backends", "sm90", "--top-k",
                                      "1",       "--arch-sms", "132", "--json",     "-q"};
  CliRun r = run_cli(args, env());
  ASSERT_EQ(r.rc, 0) << describe(args, r);
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(r.out)) << describe(args, r);
  ASSERT_EQ(j["shapes"].size(), 2u) << j.dump(2);
  const nlohmann::json& a = j["shapes"][0]["problem"];
  EXPECT_EQ(a["A"].value("ld", 0), 104) << a.dump(2);
  EXPECT_EQ(a["D"].value("align", 0), 8) << a.dump(2);
  EXPECT_EQ(a.value("key", ""), j["shapes"][1]["problem"].value("key", "")) << j.dump(2);
}

TEST_F(Cli, SuiteFieldsAreTyped) {
  TempDir d;
  const std::string suite = (d.path / "s.json").string();
  auto expect_bad = [&](const std::string& text, const std::string& needle) {
    std::ofstream(suite, std::ios::trunc) << text;
    expect_usage_error({"bench", "--suite", suite}, needle);
  };
  expect_bad(R"({"name": 5, "shapes": [{"m": 16, "n": 16, "k": 16}]})", "\"name\" must be a string");
  expect_bad(R"({"shapes": [{"m": 1e300, "n": 16, "k": 16}]})", "\"m\" must be an integer");
  expect_bad(R"({"shapes": [{"m": 16.5, "n": 16, "k": 16}]})", "\"m\" must be an integer");
  expect_bad(R"({"shapes": [{"m": 16, "n": 16, "k": 16, "ldb ": 32}]})", "unknown key \"ldb \"");
  expect_bad(R"({"shapes": [{"m": 16, "n": 16, "k": 16, "beta": 1e300}]})", "\"beta\"");
  expect_bad(R"({"shapes": [{"m": 16, "n": 16, "k": 16}], "shapez": 1})", "unknown key");
}

TEST_F(Cli, CompileJsonLogsHaveNoNul) {
  std::vector<std::string> args = with({"compile", "--top-k", "1", "--backends", "sm90", "--json", "-q"}, kShape);
  CliRun r = run_cli(args, env());
  ASSERT_EQ(r.rc, 0) << describe(args, r);
  EXPECT_EQ(r.out.find("\\u0000"), std::string::npos) << r.out.substr(0, 2000);
}

TEST_F(Cli, CacheCommandsWithoutACacheDirectorySaySo) {
  // No HOME and no GEMMTUNE_CACHE_DIR: no cache at all (never a shared /tmp one), and the cache commands say so.
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{{"cache", "ls"}, {"cache", "clear"}}) {
    CliRun r = run_cli(args, {{"GEMMTUNE_CACHE_DIR", ""}, {"HOME", ""}});
    EXPECT_EQ(r.rc, 1) << describe(args, r);
    EXPECT_NE(r.err.find("no result cache"), std::string::npos) << describe(args, r);
  }
}

// ---- scaled fp8 problems ----

namespace {
std::vector<std::string> split_args(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream is(s);
  for (std::string w; is >> w;) v.push_back(w);
  return v;
}
}  // namespace

// Problem::str() of an fp8 problem pastes back into the CLI, which prints the same problem again.
TEST_F(Cli, Fp8ProblemStrPastesBack) {
  using namespace gemmtune;
  std::vector<Problem> problems;
  {
    Problem p = Problem::make(200, 328, 400, DType::e4m3, DType::e4m3);
    p.scaling = Scaling::row;
    p.amax = true;
    p.epilogue = parse_epilogue("bias,gelu_tanh");
    p.resolve();
    problems.push_back(p);
  }
  {
    Problem p = Problem::make(256, 384, 512, DType::e4m3, DType::f32);
    p.b.dtype = DType::e5m2;
    p.scaling = Scaling::block;
    p.d.align = 8;
    p.alpha = 0.75f;
    problems.push_back(p);
  }
  {
    Problem p = Problem::make(4, 1024, 512, DType::bf16, DType::bf16);
    p.b.dtype = DType::e4m3;
    p.scaling = Scaling::tensor;
    problems.push_back(p);
  }
  {
    Problem p = Problem::make(64, 128, 256, DType::e5m2, DType::bf16, Layout::row, Layout::col, 3);
    p.b.dtype = DType::e4m3;
    p.scaling = Scaling::tensor;
    p.beta = 0.5f;
    problems.push_back(p);
  }
  {
    Problem p = Problem::make(512, 1024, 2048, DType::e4m3, DType::bf16);
    p.scaling = Scaling::row;
    p.fp8_accum = Fp8Accum::fast;
    problems.push_back(p);
  }
  for (const Problem& p : problems) {
    ASSERT_EQ(p.check(), "") << p.str();
    const std::vector<std::string> args =
        with(with({"list"}, split_args(p.str())), {"--arch-sms", "132", "--backends", "sm90,gemv"});
    const CliRun r = run_cli(args, env());
    EXPECT_EQ(r.rc, 0) << describe(args, r);
    EXPECT_NE(r.err.find(" candidates for " + p.str() + " on "), std::string::npos) << describe(args, r);
  }
}

TEST_F(Cli, Fp8UsageErrors) {
  const std::vector<std::string> fp8{"--A", "e4m3:row", "--B", "e4m3:col"};
  expect_usage_error(with({"list"}, with(kShape, with(fp8, {"--scaling", "rows"}))),
                     "--scaling 'rows': expected none, tensor, row or block");
  expect_usage_error(with({"list"}, with(kShape, fp8)), "fp8 inputs need a scaling");
  expect_usage_error(with({"list"}, with(kShape, {"--scaling", "row"})), "scaling=row applies to fp8");
  expect_usage_error(with({"list"}, with(kShape, with(fp8, {"--scaling", "row", "--amax"}))),
                     "amax is the statistic of an e4m3 D");
  expect_usage_error(with({"list"}, with(kShape, with(fp8, {"--scaling", "row", "--D", "e5m2:row"}))),
                     "D=e5m2 is not supported");
  expect_usage_error(with({"list"}, with(kShape, {"--A", "e4m3:row", "--B", "e4m3:row", "--scaling", "tensor"})),
                     "fp8 B must be col-major");
  expect_usage_error(with({"list"}, with(kShape, {"--A", "e4m3:col", "--B", "e4m3:col", "--scaling", "tensor"})),
                     "fp8 A must be row-major");
  expect_usage_error(
      with({"list"}, with(kShape, with(fp8, {"--scaling", "tensor", "--D", "e4m3:row", "--beta", "1"}))),
      "beta*C with an e4m3 D");
  expect_usage_error(
      with({"list"}, with(kShape, {"--A", "bf16:row", "--B", "e4m3:col", "--scaling", "block"})),
      "scaling=block needs fp8 A and B");
  expect_usage_error(with({"list"}, with(kShape, with(fp8, {"--scaling", "row", "--batch", "2"}))),
                     "batched fp8 GEMMs take tensor scaling");
  expect_usage_error(with({"list"}, with(kShape, with(fp8, {"--scaling", "row", "--fp8-accum", "promote"}))),
                     "--fp8-accum 'promote': expected exact or fast");
  expect_usage_error(with({"list"}, with(kShape, {"--fp8-accum", "fast"})), "fp8_accum=fast applies to fp8 A and B");
  expect_usage_error(with({"list"}, with(kShape, with(fp8, {"--scaling", "block", "--fp8-accum", "fast"}))),
                     "fp8_accum=fast with scaling=block");
}

// A forced config of the other accumulation mode is refused, naming both the config's and the problem's.
TEST_F(Cli, Fp8ForcedConfigOfTheOtherModeIsRefused) {
  const std::vector<std::string> fp8{"--A", "e4m3:row", "--B", "e4m3:col", "--scaling", "row"};
  const std::string cfg = "sm90:tile=128x128x128,stages=4,cluster=1x1,sched=coop,raster=m,group=8,acc=";
  struct Case {
    const char *mode, *acc, *needle;
  };
  for (const Case& c : {Case{"exact", "fast", "acc=fast is not the problem's fp8_accum=exact"},
                        Case{"fast", "promote", "acc=promote is not the problem's fp8_accum=fast"}}) {
    const std::vector<std::string> args =
        with({"compile", "--config", cfg + c.acc}, with(kShape, with(fp8, {"--fp8-accum", c.mode})));
    const CliRun r = run_cli(args, env());
    EXPECT_NE(r.rc, 0) << describe(args, r);
    EXPECT_NE((r.out + r.err).find(c.needle), std::string::npos) << describe(args, r);
  }
}

TEST_F(Cli, SuiteScalingAndAmaxKeys) {
  TempDir d;
  const std::string suite = (d.path / "s.json").string();
  auto expect_bad = [&](const std::string& shape, const std::string& needle) {
    std::ofstream(suite, std::ios::trunc) << R"({"A": "e4m3:row", "B": "e4m3:col", "shapes": [)" << shape << "]}";
    expect_usage_error({"bench", "--suite", suite}, needle);
  };
  expect_bad(R"({"name": "s1", "m": 64, "n": 64, "k": 128, "scaling": "rows"})",
             "shape 's1': \"scaling\" must be none, tensor, row or block");
  expect_bad(R"({"name": "s2", "m": 64, "n": 64, "k": 128, "scaling": 3})", "\"scaling\" must be a string");
  expect_bad(R"({"name": "s3", "m": 64, "n": 64, "k": 128, "scaling": "row", "amax": "yes"})",
             "\"amax\" must be true or false");
  // The keys are read into the problem: its own rules answer.
  expect_bad(R"({"name": "s4", "m": 64, "n": 64, "k": 128})", "shape 's4': fp8 inputs need a scaling");
  expect_bad(R"({"name": "s5", "m": 64, "n": 64, "k": 128, "scaling": "row", "amax": true})",
             "shape 's5': amax is the statistic of an e4m3 D (D is bf16)");
  expect_bad(R"({"name": "s6", "m": 64, "n": 64, "k": 128, "A": "bf16:row", "scaling": "block"})",
             "shape 's6': scaling=block needs fp8 A and B");
  expect_bad(R"({"name": "s7", "m": 64, "n": 64, "k": 128, "scaling": "row", "D": "e4m3:row", "amax": true},
                {"name": "s8", "m": 64, "n": 64, "k": 128, "scaling": "blocks"})",
             "shape 's8': \"scaling\" must be");
  expect_bad(R"({"name": "s9", "m": 64, "n": 64, "k": 128, "scaling": "row", "fp8_accum": "slow"})",
             "\"fp8_accum\" must be exact or fast");
  expect_bad(R"({"name": "s10", "m": 64, "n": 64, "k": 128, "scaling": "block", "fp8_accum": "fast"})",
             "shape 's10': fp8_accum=fast with scaling=block");
}

// Grouped GEMMs on the command line: --groups with --m (contiguous) or --masked-m (masked); a bad combination is a
// one-line usage error naming the options.
TEST_F(Cli, GroupedUsageErrors) {
  const std::vector<std::string> nk{"--n", "256", "--k", "256"};
  expect_usage_error(with({"list", "--m", "64", "--masked-m", "64", "--groups", "4"}, nk), "--m and --masked-m");
  expect_usage_error(with({"list", "--masked-m", "64"}, nk), "--masked-m needs --groups");
  expect_usage_error(with({"list", "--m", "64", "--groups", "4", "--batch", "2"}, nk), "--groups with --batch 2");
  expect_usage_error(with({"list", "--masked-m", "64", "--groups", "4", "--batch", "4"}, nk),
                     "--groups with --batch 4");
  expect_usage_error(with({"list", "--m", "64", "--groups", "0"}, nk), "--groups must be a positive integer (got 0)");
  expect_usage_error(with({"list", "--masked-m", "0", "--groups", "2"}, nk), "--masked-m must be a positive integer");
  expect_usage_error(with({"list", "--groups", "4"}, nk), "--m is required");
  expect_usage_error(with({"list", "--m", "64", "--groups", "lots"}, nk), "--groups");
  expect_usage_error(with({"list", "--m", "64", "--groups", "99999999999"}, nk), "groups must be in [1, 2^31)");
  expect_usage_error(with({"list", "--masked-m", "64", "--groups", "99999999999"}, nk), "groups must be in [1, 2^31)");
}

// `gemmtune list` of a grouped problem: the backends that cannot run it say why (one note each); exit 0.
TEST_F(Cli, GroupedListNamesRefusals) {
  const std::vector<std::string> args{"list", "--m", "8192", "--n", "4096", "--k", "7168", "--groups", "32",
                                      "--arch-sms", "132"};
  const CliRun r = run_cli(args, env());
  EXPECT_EQ(r.rc, 0) << describe(args, r);
  EXPECT_NE(r.err.find(" candidates for --m=8192 --n=4096 --k=7168 --groups=32 "), std::string::npos)
      << describe(args, r);
  for (const char* b : {"cublaslt", "gemv", "pad"})
    EXPECT_NE(r.err.find(std::string("note: ") + b + ": does not support this problem"), std::string::npos)
        << b << "\n" << describe(args, r);
  for (const std::string& line : nonempty_lines(r.out))
    EXPECT_EQ(line.rfind("sm90:", 0), 0u) << "only sm90 knows group_rows\n" << describe(args, r);
}

// Problem::str() of a grouped problem pastes back into the CLI, which prints the same problem again.
TEST_F(Cli, GroupedProblemStrPastesBack) {
  using namespace gemmtune;
  auto grouped = [](Grouping g, int64_t m, int64_t groups, DType in) {
    Problem p = Problem::make(m, 512, 256, in, DType::bf16);
    p.grouping = g;
    p.groups = groups;
    if (is_fp8(in)) p.scaling = Scaling::row;
    p.a.batch_stride = p.b.batch_stride = p.c.batch_stride = p.d.batch_stride = -1;
    p.resolve();
    return p;
  };
  std::vector<Problem> problems{grouped(Grouping::contiguous, 5000, 32, DType::bf16),
                                grouped(Grouping::masked, 128, 8, DType::e4m3),
                                grouped(Grouping::contiguous, 7, 1, DType::f16)};
  {
    Problem p = grouped(Grouping::contiguous, 300, 4, DType::bf16);
    p.b.batch_stride = 0;  // one weight for every group
    p.a.align = 8;
    p.epilogue = parse_epilogue("bias,silu_glu");
    p.resolve();
    problems.push_back(p);
  }
  {
    Problem p = grouped(Grouping::masked, 64, 3, DType::bf16);
    p.d.batch_stride = 64 * 600;
    p.d.ld = 600;
    p.beta = 1.0f;
    problems.push_back(p);
  }
  for (const Problem& p : problems) {
    ASSERT_EQ(p.check(), "") << p.str();
    const std::vector<std::string> args = with(with({"list"}, split_args(p.str())), {"--arch-sms", "132"});
    const CliRun r = run_cli(args, env());
    EXPECT_EQ(r.rc, 0) << describe(args, r);
    EXPECT_NE(r.err.find(" candidates for " + p.str() + " on "), std::string::npos) << describe(args, r);
  }
}

TEST_F(Cli, SuiteGroupedKeys) {
  TempDir d;
  const std::string suite = (d.path / "s.json").string();
  auto expect_bad = [&](const std::string& shape, const std::string& needle) {
    std::ofstream(suite, std::ios::trunc) << R"({"shapes": [)" << shape << "]}";
    expect_usage_error({"bench", "--suite", suite}, needle);
  };
  expect_bad(R"({"name": "g1", "m": 64, "masked_m": 64, "groups": 4, "n": 64, "k": 64})",
             "shape 'g1': \"m\" and \"masked_m\" together");
  expect_bad(R"({"name": "g2", "masked_m": 64, "n": 64, "k": 64})", "shape 'g2': \"masked_m\" needs \"groups\"");
  expect_bad(R"({"name": "g3", "m": 64, "groups": 4, "batch": 2, "n": 64, "k": 64})",
             "shape 'g3': a contiguous grouped GEMM takes one A of M (total) rows: batch must be 1");
  expect_bad(R"({"name": "g4", "m": 64, "groups": "4", "n": 64, "k": 64})", "\"groups\" must be an integer");
  expect_bad(R"({"name": "g5", "n": 64, "k": 64})", "shape 'g5': missing \"m\"");
  expect_bad(R"({"name": "g6", "m": 64, "groups": 0, "n": 64, "k": 64})", "shape 'g6': groups must be in [1, 2^31)");
  // A good grouped shape passes the suite reader; the bad one after it is still named.
  expect_bad(R"({"name": "ok1", "m": 8192, "groups": 32, "n": 64, "k": 64},
                {"name": "ok2", "masked_m": 128, "groups": 8, "n": 64, "k": 64},
                {"name": "g7", "masked_m": 128, "groups": 8, "n": 64, "k": 64, "ldd": 8})",
             "shape 'g7': ldd=8 is too small for row-major D (128x64): need >= 64");
}

// ---- hostile input --------------------------------------------------------------------------------------------

namespace {
std::string repeat_ops(const std::string& op, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i ? "," : "") + op;
  return s;
}
// No terminal control byte: C0 but newline, DEL, or a C1 control as UTF-8 (C2 80..C2 9F).
bool has_control_bytes(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 && c != '\n') || c == 0x7f) return true;
    if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9f) return true;
  }
  return false;
}
}  // namespace

TEST_F(Cli, EpilogueChainLengthIsCapped) {
  // 16 ops is the documented maximum: it lists; one more is a usage error naming the limit.
  CliRun ok = run_cli(with({"list", "--backends", "sm90", "--epilogue", repeat_ops("relu", 16)}, kShape), env());
  EXPECT_EQ(ok.rc, 0) << ok.err;
  expect_usage_error(with({"list", "--epilogue", repeat_ops("relu", 17)}, kShape), "at most 16");
  // 10,000 ops: refused at once with a short line (the chain is not echoed whole).
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<std::string> args = with({"compile", "--epilogue", repeat_ops("gelu_tanh", 10000)}, kShape);
  CliRun r = run_cli(args, env());
  EXPECT_EQ(r.rc, 2) << describe(args, r).substr(0, 500);
  EXPECT_LT(r.err.size(), 300u) << r.err.substr(0, 500);
  EXPECT_NE(r.err.find("10000 ops"), std::string::npos) << r.err.substr(0, 500);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
}

TEST_F(Cli, CacheExportRefusesNonRegularTargetsAndFollowsALinkToAFile) {
  gemmtune::ResultCache((cache.path / "results").string()).put({"k", {{"winner", "sm90:x"}}});
  TempDir d;
  // A FIFO and a link to /dev/null stay what they are.
  const fs::path fifo = d.path / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const fs::path devnull_link = d.path / "null-link";
  fs::create_symlink("/dev/null", devnull_link);
  for (const fs::path& target : {fifo, devnull_link, fs::path("/dev/null"), d.path}) {
    const std::vector<std::string> args{"cache", "export", target.string()};
    CliRun r = run_cli(args, env());
    EXPECT_EQ(r.rc, 2) << describe(args, r);
    EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << describe(args, r);
  }
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo)));
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(devnull_link)));
  EXPECT_TRUE(fs::is_character_file(fs::status("/dev/null")));
  // A link the user names to a regular file is written through: the link stays, its target gets the export.
  const fs::path real = d.path / "real.json", link = d.path / "link.json";
  std::ofstream(real) << "old";
  fs::create_symlink(real, link);
  CliRun r = run_cli({"cache", "export", link.string()}, env());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link)));
  EXPECT_EQ(nlohmann::json::parse(slurp(real))["entries"].size(), 1u);
}

TEST_F(Cli, CacheExportOfAnUnreadableCacheFails) {
  // A results directory that cannot be read (a symlink loop: refused even for root) is an error, not "0 entries".
  fs::create_directories(cache.path);
  fs::create_symlink(cache.path / "results", cache.path / "results");
  TempDir d;
  const std::vector<std::string> args{"cache", "export", (d.path / "out.json").string()};
  CliRun r = run_cli(args, env());
  EXPECT_NE(r.rc, 0) << describe(args, r);
  EXPECT_NE(r.err.find("cannot read cache directory"), std::string::npos) << describe(args, r);
  EXPECT_FALSE(fs::exists(d.path / "out.json"));
}

TEST_F(Cli, CacheImportSkipsWhatAReaderRejectsCapsTheCountAndCountsKeysOnce) {
  TempDir d;
  const std::string file = (d.path / "in.json").string();
  {
    nlohmann::json doc{{"gemmtune_cache", 1}, {"entries", nlohmann::json::array()}};
    doc["entries"].push_back({{"key", "k1"}, {"winner", "sm90:a"}});
    doc["entries"].push_back({{"key", "k1"}, {"winner", "sm90:b"}});  // same key: the last wins, counted once
    doc["entries"].push_back({{"key", "big"}, {"winner", "sm90:c"}, {"pad", std::string(17 << 20, 'x')}});
    doc["entries"].push_back({{"key", "k2"}, {"winner", "sm90:d"}});
    std::ofstream(file) << doc.dump();
  }
  CliRun r = run_cli({"cache", "import", file}, env());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("imported 2 entries"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("larger than"), std::string::npos) << r.err;
  gemmtune::ResultCache rc((cache.path / "results").string());
  EXPECT_EQ(rc.list().size(), 2u);
  EXPECT_EQ(rc.get("k1")->record["winner"], "sm90:b");
  EXPECT_FALSE(rc.get("big"));
  // One entry more than the documented cap: refused whole, nothing written.
  {
    std::ofstream f(file, std::ios::trunc);
    f << R"({"gemmtune_cache": 1, "entries": [)";
    for (size_t i = 0; i <= gemmtune::ResultCache::kMaxImportEntries; ++i)
      f << (i ? "," : "") << R"({"key": "n)" << i << R"(", "winner": "a:b"})";
    f << "]}";
  }
  expect_usage_error({"cache", "import", file}, "more than an import takes (10000)");
  EXPECT_EQ(rc.list().size(), 2u);
}

TEST_F(Cli, SuiteErrorsNameTheFileAndTheShapeSafely) {
  TempDir d;
  const std::string suite = (d.path / "s.json").string();
  std::ofstream(suite) << R"({"shapes": [{"name": "evil\u001b[31m\u009b1m\u0000tail", "m": 16, "n": 16, "k": 16,
                                          "A": "bf17"}]})";
  const std::vector<std::string> args{"bench", "--suite", suite};
  expect_usage_error(args, "s.json' shape 'evil?[31m?1m?tail': \"A\" 'bf17': unknown dtype");
  CliRun r = run_cli(args, env());
  EXPECT_FALSE(has_control_bytes(r.err)) << r.err;
}

TEST_F(Cli, ControlBytesNeverReachTheTerminal) {
  const fs::path results = cache.path / "results";
  gemmtune::ResultCache((results).string()).put({"key\u009b31m\x1b[2Jend", {{"winner", "sm90:\x1b]0;x\x07\xff"}}});
  // A corrupt entry whose file name carries an escape sequence: its warning names it with '?'.
  std::ofstream(results / "\x1b[31mbad.json") << "{";
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{{"cache", "ls"}}) {
    CliRun r = run_cli(args, env());
    ASSERT_EQ(r.rc, 0) << describe(args, r);
    EXPECT_FALSE(has_control_bytes(r.out)) << r.out;
    EXPECT_FALSE(has_control_bytes(r.err)) << r.err;
    EXPECT_NE(r.out.find("key?31m?[2Jend"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("sm90:?]0;x?"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("?[31mbad.json"), std::string::npos) << r.err;
  }
}

TEST_F(Cli, ClearCountsWhatLsCounts) {
  gemmtune::ResultCache rc((cache.path / "results").string());
  rc.put({"a", {{"winner", "sm90:x"}}});
  rc.put({"b", {{"winner", "sm90:y"}}});
  std::ofstream(cache.path / "results" / "corrupt.json") << "{";
  CliRun ls = run_cli({"cache", "ls"}, env());
  ASSERT_EQ(ls.rc, 0);
  EXPECT_NE(ls.out.find("# 2 entries"), std::string::npos) << ls.out;
  EXPECT_NE(ls.out.find("1 unreadable or corrupt files skipped"), std::string::npos) << ls.out;
  CliRun cl = run_cli({"cache", "clear"}, env());
  ASSERT_EQ(cl.rc, 0) << cl.err;
  EXPECT_NE(cl.out.find("removed 2 entries"), std::string::npos) << cl.out;
  EXPECT_NE(cl.out.find("and 1 unreadable or corrupt files"), std::string::npos) << cl.out;
  EXPECT_TRUE(fs::is_empty(cache.path / "results"));
}

TEST_F(Cli, UserNamedSymlinksAreFollowed) {
  TempDir d;
  // A suite through a link: read (its bad shape is reported), not refused as "a symbolic link".
  std::ofstream(d.path / "s.json") << R"({"shapes": [{"name": "zero", "m": 0, "n": 16, "k": 16}]})";
  fs::create_symlink(d.path / "s.json", d.path / "link.json");
  expect_usage_error({"bench", "--suite", (d.path / "link.json").string()}, "shape 'zero'");
  // An export through a link imports.
  std::ofstream(d.path / "e.json") << R"({"gemmtune_cache": 1, "entries": [{"key": "k", "winner": "a:b"}]})";
  fs::create_symlink(d.path / "e.json", d.path / "elink.json");
  CliRun r = run_cli({"cache", "import", (d.path / "elink.json").string()}, env());
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("imported 1 entries"), std::string::npos) << r.out;
}

TEST_F(Cli, ValuesTheLibraryCannotHoldAreRefused) {
  expect_usage_error(with({"list", "--alpha", "1e-50"}, kShape), "--alpha is too small for a float");
  expect_usage_error(with({"list", "--beta", "1e39"}, kShape), "--beta is out of the range of a float");
  expect_usage_error(with({"list", "--arch-sms", "100000"}, kShape), "--arch-sms must be in [1, 1024]");
  expect_usage_error(with({"compile", "--arch-sms", "1025"}, kShape), "--arch-sms");
  expect_usage_error(with({"tune", "--max-candidate-s", "inf"}, kShape), "--max-candidate-s");
  expect_usage_error(with({"tune", "--min-time-ms", "1e10"}, kShape), "--min-time-ms");
  expect_usage_error(with({"tune", "--top-k", "2000000"}, kShape), "--top-k");
  TempDir d;
  const std::string suite = (d.path / "s.json").string();
  std::ofstream(suite) << R"({"shapes": [{"name": "tiny", "m": 16, "n": 16, "k": 16, "alpha": 1e-50}]})";
  expect_usage_error({"bench", "--suite", suite}, "\"alpha\" is too small for a float");
  // A subnormal fp32 value is nonzero, so it stays.
  CliRun r = run_cli(with({"list", "--backends", "sm90", "--alpha", "1e-40"}, kShape), env());
  EXPECT_EQ(r.rc, 0) << r.err;
}

TEST_F(Cli, Sm90ConfigNumbersAreRangeChecked) {
  const std::vector<std::string> args =
      with({"compile", "--config", "sm90:tile=99999999999x128x64,stages=4,cluster=1x1"}, kShape);
  CliRun r = run_cli(args, env());
  EXPECT_EQ(r.rc, 2) << describe(args, r);
  EXPECT_NE(r.err.find("99999999999"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("out of range"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("1215752191"), std::string::npos) << r.err;
}
