// NVRTC JIT and kernel cache: runs without a GPU (compile only; load() is covered by the GPU tests).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <stdlib.h>

#include <atomic>
#include <barrier>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>

#include "gemmtune/errors.h"
#include "jit/jit.h"
#include "jit/resources.h"
#include "jit/sha256.h"
#include "jit/thread_pool.h"

namespace gemmtune::jit {
namespace {

namespace fs = std::filesystem;

// Restores an environment variable on scope exit.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

fs::path make_temp_dir(const char* tag) {
  std::string tmpl = (fs::temp_directory_path() / (std::string("gemmtune_") + tag + "_XXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

// Every test gets an empty disk cache and an empty memory cache, as a fresh process on a fresh machine would.
class JitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir("jit");
    cache_env_.emplace("GEMMTUNE_CACHE_DIR", dir_.c_str());
    no_disk_env_.emplace("GEMMTUNE_NO_DISK_CACHE", nullptr);
    dump_env_.emplace("GEMMTUNE_DUMP_DIR", nullptr);
    clear_memory_cache();
  }
  void TearDown() override {
    clear_memory_cache();
    dump_env_.reset();
    no_disk_env_.reset();
    cache_env_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // A unit that includes an embedded header; `salt` makes the source (and so the key) unique to the test, so
  // nothing cached by another test in this process can answer it.
  static std::string probe_source(const std::string& name, const std::string& salt) {
    return "// " + salt + "\n#include \"test/jit_probe.cuh\"\n" + "extern \"C\" __global__ void " + name +
           "(float* x, int n) {\n"
           "  __shared__ float s[128];\n"
           "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "  s[threadIdx.x % 128] = i < n ? x[i] : 0.f;\n"
           "  __syncthreads();\n"
           "  if (i < n) x[i] = gemmtune::test::jit_probe_scale<3>(s[(threadIdx.x + 1) % 128]);\n"
           "}\n";
  }

  fs::path dir_;
  std::optional<ScopedEnv> cache_env_, no_disk_env_, dump_env_;
};

bool is_elf(const std::vector<char>& image) {
  return image.size() > 4 && std::memcmp(image.data(), "\x7f" "ELF", 4) == 0;
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // Incremental updates with odd chunk sizes agree with one-shot hashing.
  std::string big(1000003, 'a');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = char('a' + i % 26);
  Sha256 h;
  for (std::size_t i = 0; i < big.size(); i += 37) h.update(std::string_view(big).substr(i, 37));
  EXPECT_EQ(h.hex_digest(), sha256_hex(big));
}

TEST_F(JitTest, EmbeddedHeadersAndVersion) {
  EXPECT_TRUE(embedded_headers().count("test/jit_probe.cuh")) << "kernels/test/jit_probe.cuh is not embedded";
  EXPECT_FALSE(nvrtc_version().empty());
  EXPECT_EQ(kernel_cache_dir(), (dir_ / "kernels").string());
}

TEST_F(JitTest, CompilesToCubinWithResources) {
  auto c = compile(probe_source("jit_probe_resources", "resources"), "jit_probe_resources", {}, "test");
  ASSERT_TRUE(c);
  EXPECT_TRUE(is_elf(c->image));
  EXPECT_EQ(c->kernel_name, "jit_probe_resources");
  EXPECT_EQ(c->key.size(), 64u);
  EXPECT_GT(c->registers, 0) << c->log;
  EXPECT_EQ(c->smem_static, 128 * 4) << c->log;
  EXPECT_EQ(c->spill_bytes, 0) << c->log;
  EXPECT_NE(c->log.find("Used"), std::string::npos) << c->log;
  // The log is text: no NUL of NVRTC's buffer (it would reach `compile --json` as "\u0000").
  EXPECT_EQ(c->log.find('\0'), std::string::npos);
  EXPECT_FALSE(c->cache_hit);
  EXPECT_GT(c->compile_ms, 0);
}

TEST_F(JitTest, ElfFallbackMatchesPtxasReport) {
  auto c = compile(probe_source("jit_probe_elf", "elf"), "jit_probe_elf");
  ASSERT_GT(c->registers, 0) << c->log;
  Cubin from_elf;
  detail::resources_from_elf(c->image, "jit_probe_elf", from_elf);
  EXPECT_EQ(from_elf.registers, c->registers);
  EXPECT_EQ(from_elf.stack_bytes, c->stack_bytes);
  Cubin missing;
  detail::resources_from_elf(c->image, "no_such_kernel", missing);
  EXPECT_EQ(missing.registers, -1);
  detail::resources_from_elf(std::vector<char>(c->image.begin(), c->image.begin() + 100), "jit_probe_elf", missing);
  EXPECT_EQ(missing.registers, -1);  // truncated image: no crash, nothing parsed
}

TEST(PtxasReport, PicksTheNamedEntry) {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'other' for 'sm_90a'\n"
      "ptxas info    : Function properties for other\n"
      "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 64 bytes smem\n"
      "ptxas info    : Compiling entry function 'gemm_k' for 'sm_90a'\n"
      "ptxas info    : Function properties for gemm_k\n"
      "ptxas         .     16 bytes stack frame, 24 bytes spill stores, 32 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 1 barriers, 1024 bytes smem, 400 bytes cmem[0]\n"
      "ptxas info    : Compile time = 250.000 ms\n";
  Cubin c;
  detail::parse_ptxas(log, "gemm_k", c);
  EXPECT_EQ(c.registers, 168);
  EXPECT_EQ(c.stack_bytes, 16);
  EXPECT_EQ(c.spill_bytes, 56);
  EXPECT_EQ(c.smem_static, 1024);
  Cubin none;
  detail::parse_ptxas("", "gemm_k", none);
  EXPECT_EQ(none.registers, -1);
}

TEST_F(JitTest, SecondCompileIsMemoryHit) {
  const std::string src = probe_source("jit_probe_mem", "mem");
  const auto before = cache_stats();
  auto a = compile(src, "jit_probe_mem");
  auto b = compile(src, "jit_probe_mem");
  const auto after = cache_stats();
  EXPECT_FALSE(a->cache_hit);
  EXPECT_TRUE(b->cache_hit);
  EXPECT_FALSE(b->from_disk);
  EXPECT_EQ(a->key, b->key);
  EXPECT_EQ(a->image, b->image);
  EXPECT_EQ(a->registers, b->registers);
  EXPECT_EQ(after.compiles - before.compiles, 1u);
  EXPECT_EQ(after.memory_hits - before.memory_hits, 1u);
}

TEST_F(JitTest, DiskHitAfterMemoryCleared) {
  const std::string src = probe_source("jit_probe_disk", "disk");
  auto a = compile(src, "jit_probe_disk");
  EXPECT_TRUE(fs::exists(fs::path(kernel_cache_dir()) / (a->key + ".gtcubin")));
  clear_memory_cache();
  const auto before = cache_stats();
  auto b = compile(src, "jit_probe_disk");
  const auto after = cache_stats();
  EXPECT_TRUE(b->cache_hit);
  EXPECT_TRUE(b->from_disk);
  EXPECT_EQ(after.compiles, before.compiles);
  EXPECT_EQ(after.disk_hits - before.disk_hits, 1u);
  EXPECT_EQ(a->image, b->image);
  EXPECT_EQ(a->registers, b->registers);
  EXPECT_EQ(a->smem_static, b->smem_static);
  EXPECT_EQ(a->log, b->log);
  // No temp files left behind.
  for (const auto& e : fs::directory_iterator(kernel_cache_dir()))
    EXPECT_EQ(e.path().extension(), ".gtcubin") << e.path();
}

TEST_F(JitTest, CorruptDiskEntryIsAMiss) {
  const std::string src = probe_source("jit_probe_corrupt", "corrupt");
  auto a = compile(src, "jit_probe_corrupt");
  const fs::path entry = fs::path(kernel_cache_dir()) / (a->key + ".gtcubin");
  ASSERT_TRUE(fs::exists(entry));
  const auto full_size = fs::file_size(entry);

  auto recompile_after = [&](const std::function<void()>& damage) {
    damage();
    clear_memory_cache();
    const auto before = cache_stats();
    auto b = compile(src, "jit_probe_corrupt");
    const auto after = cache_stats();
    EXPECT_FALSE(b->cache_hit);
    EXPECT_EQ(after.compiles - before.compiles, 1u);
    EXPECT_EQ(after.disk_corrupt - before.disk_corrupt, 1u);
    EXPECT_EQ(b->image, a->image);
    // The recompile rewrote the entry: the next cold start reads it back. (Not its size: the metadata holds ptxas's
    // log, whose "Compile time = N ms" line may differ in length between compiles.)
    clear_memory_cache();
    const auto before_hit = cache_stats();
    auto h = compile(src, "jit_probe_corrupt");
    EXPECT_TRUE(h->cache_hit && h->from_disk) << "the recompile must rewrite the entry";
    EXPECT_EQ(cache_stats().compiles - before_hit.compiles, 0u);
    EXPECT_EQ(h->image, a->image);
  };
  // Truncated (a crash mid-write by a writer that did not use rename).
  recompile_after([&] { fs::resize_file(entry, full_size / 2); });
  // Garbage.
  recompile_after([&] {
    std::ofstream(entry, std::ios::binary | std::ios::trunc) << "definitely not a cubin";
  });
  // Right size and header, one flipped byte in the image: only the checksum catches it.
  recompile_after([&] {
    std::fstream f(entry, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(static_cast<std::streamoff>(full_size - 100));
    char ch = 0;
    f.read(&ch, 1);
    f.seekp(static_cast<std::streamoff>(full_size - 100));
    ch = static_cast<char>(ch ^ 0x5a);
    f.write(&ch, 1);
  });
  // Empty file.
  recompile_after([&] { std::ofstream(entry, std::ios::binary | std::ios::trunc); });

  // After the rewrite, the entry is good again.
  clear_memory_cache();
  EXPECT_TRUE(compile(src, "jit_probe_corrupt")->from_disk);

  // Not a regular file: a FIFO would block the read forever, a symlink to /dev/zero would grow memory without bound.
  // Each is a miss with a warning, and the recompile replaces it with a real entry.
  recompile_after([&] {
    fs::remove(entry);
    ASSERT_EQ(mkfifo(entry.c_str(), 0600), 0);
  });
  // A symlink out of the cache, to a good entry: not followed (a link to /dev/zero would be read forever).
  const fs::path outside = fs::path(kernel_cache_dir()).parent_path() / "outside.gtcubin";
  recompile_after([&] {
    fs::copy_file(entry, outside, fs::copy_options::overwrite_existing);
    fs::remove(entry);
    fs::create_symlink(outside, entry);
  });
  // A directory cannot be replaced by a rename: still a miss (and a warning), never a compile error.
  fs::remove(entry);
  fs::create_directories(entry / "sub");
  clear_memory_cache();
  const auto before = cache_stats();
  auto d = compile(src, "jit_probe_corrupt");
  EXPECT_EQ(cache_stats().disk_corrupt - before.disk_corrupt, 1u);
  EXPECT_EQ(d->image, a->image);
  fs::remove_all(entry);
  fs::remove(outside);
}

TEST_F(JitTest, CompileErrorCarriesLogAndContext) {
  const std::string src = probe_source("jit_probe_bad", "bad") +
                          "extern \"C\" __global__ void jit_probe_bad2(int* p) { *p = undeclared_identifier_xyz; }\n";
  try {
    compile(src, "jit_probe_bad", {}, "sm90 tile=128x128x64 stages=4");
    FAIL() << "expected a compile error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("undeclared_identifier_xyz"), std::string::npos) << what;  // the NVRTC log
    EXPECT_NE(what.find("sm90 tile=128x128x64 stages=4"), std::string::npos) << what;
    EXPECT_NE(what.find("jit_probe_bad"), std::string::npos) << what;
  }
  EXPECT_THROW(compile(src, "../escape"), Error);  // names become file names in GEMMTUNE_DUMP_DIR
  // A failed compile is not cached: the next call fails again (and does not hang on a stale in-flight slot).
  EXPECT_THROW(compile(src, "jit_probe_bad"), Error);
}

TEST_F(JitTest, ConcurrentSameKeyCompilesOnce) {
  const std::string src = probe_source("jit_probe_conc", "concurrent");
  constexpr int kThreads = 4;
  const auto before = cache_stats();
  std::vector<std::shared_ptr<const Cubin>> results(kThreads);
  std::barrier start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      results[t] = compile(src, "jit_probe_conc");
    });
  for (auto& t : threads) t.join();
  const auto after = cache_stats();
  EXPECT_EQ(after.compiles - before.compiles, 1u);
  int misses = 0;
  for (const auto& r : results) {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->image, results[0]->image);
    misses += !r->cache_hit;
  }
  EXPECT_EQ(misses, 1);
}

TEST_F(JitTest, ConcurrentDistinctKeysAllCompile) {
  constexpr int kUnits = 4;
  const auto before = cache_stats();
  std::vector<std::shared_ptr<const Cubin>> results(kUnits);
  parallel_for(kUnits, 4, [&](std::size_t i) {
    const std::string name = "jit_probe_par" + std::to_string(i);
    results[i] = compile(probe_source(name, "parallel"), name);
  });
  EXPECT_EQ(cache_stats().compiles - before.compiles, std::size_t(kUnits));
  for (const auto& r : results) EXPECT_TRUE(r && is_elf(r->image));
}

TEST_F(JitTest, DumpDirGetsSourceAndCubin) {
  const fs::path dump = make_temp_dir("dump");
  ScopedEnv env("GEMMTUNE_DUMP_DIR", dump.c_str());
  const std::string src = probe_source("jit_probe_dump", "dump");
  auto c = compile(src, "jit_probe_dump");
  std::ifstream cu(dump / "jit_probe_dump.cu");
  std::string text((std::istreambuf_iterator<char>(cu)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, src);
  ASSERT_TRUE(fs::exists(dump / "jit_probe_dump.cubin"));
  EXPECT_EQ(fs::file_size(dump / "jit_probe_dump.cubin"), c->image.size());
  // A failing unit is dumped too: that is when its source is most wanted.
  EXPECT_THROW(compile("extern \"C\" __global__ void jit_probe_dump_bad() { nope; }", "jit_probe_dump_bad"), Error);
  EXPECT_TRUE(fs::exists(dump / "jit_probe_dump_bad.cu"));
  std::error_code ec;
  fs::remove_all(dump, ec);
}

TEST_F(JitTest, NoDiskCacheSwitch) {
  ScopedEnv env("GEMMTUNE_NO_DISK_CACHE", "1");
  EXPECT_FALSE(disk_cache_enabled());
  auto c = compile(probe_source("jit_probe_nodisk", "nodisk"), "jit_probe_nodisk");
  EXPECT_TRUE(is_elf(c->image));
  EXPECT_FALSE(fs::exists(fs::path(kernel_cache_dir()) / (c->key + ".gtcubin")));
}

TEST_F(JitTest, KeyHashesContentNotEnvironment) {
  const std::string src = probe_source("jit_probe_key", "key");
  const std::string k = cache_key(src, "jit_probe_key");
  {
    ScopedEnv env("GEMMTUNE_CACHE_DIR", "/some/other/place");
    EXPECT_EQ(cache_key(src, "jit_probe_key"), k);
  }
  EXPECT_NE(cache_key(src + " ", "jit_probe_key"), k);
  EXPECT_NE(cache_key(src, "jit_probe_key", CompileOptions{"sm_90a", {"-DFOO=1"}}), k);
  EXPECT_NE(cache_key(src, "jit_probe_key", CompileOptions{"sm_100a", {}}), k);
  EXPECT_EQ(compile(src, "jit_probe_key")->key, k);
}

TEST(ParallelFor, RunsEveryItemAndRethrows) {
  std::vector<std::atomic<int>> hits(100);
  parallel_for(hits.size(), 3, [&](std::size_t i) { hits[i]++; });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  std::atomic<int> ran{0};
  EXPECT_THROW(parallel_for(10, 4,
                            [&](std::size_t i) {
                              ran++;
                              if (i == 3) throw std::runtime_error("item 3");
                            }),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 10) << "a failing item must not stop the others";
  parallel_for(0, 4, [](std::size_t) { FAIL(); });
}

}  // namespace
}  // namespace gemmtune::jit
