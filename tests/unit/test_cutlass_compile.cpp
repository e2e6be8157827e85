// The cutlass backend's real nvcc compiles (label `compile`: about a minute each on a 2-core host): one cooperative
// kernel with an epilogue visitor tree and one ping-pong kernel, built concurrently; then the caches: a second
// compile is a memory hit, a fresh process (memory dropped) a disk hit, and a corrupt or foreign .so a miss.
// Skipped when the backend is unavailable (no CUTLASS headers or nvcc).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "backends/cutlass/cutlass_backend.h"
#include "backends/cutlass/cutlass_nvcc.h"
#include "jit/jit.h"

using namespace gemmtune;

namespace {

namespace fs = std::filesystem;

struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(const char* n, const std::string& v) : name(n) {
    if (const char* o = std::getenv(n)) old = o;
    setenv(n, v.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old) setenv(name.c_str(), old->c_str(), 1);
    else unsetenv(name.c_str());
  }
};

}  // namespace

TEST(CutlassCompile, BuildsLoadsAndCachesBySharedObject) {
  auto b = find_backend("cutlass");
  ASSERT_TRUE(b);
  if (!b->unavailable().empty()) GTEST_SKIP() << "cutlass unavailable: " << b->unavailable();
  const fs::path dir = fs::temp_directory_path() / ("gemmtune-test-cutlass-" + std::to_string(getpid()));
  fs::remove_all(dir);
  ScopedEnv cache("GEMMTUNE_CACHE_DIR", dir.string());
  ScopedEnv disk("GEMMTUNE_NO_DISK_CACHE", "0");
  const DeviceInfo dev = DeviceInfo::assumed_sm90();

  Problem evt = Problem::make(1000, 4096, 4096, DType::bf16, DType::bf16).resolve();
  evt.beta = 1.0f;
  evt.c = evt.d;
  evt.epilogue = parse_epilogue("bias,gelu_tanh,row_scale,residual");
  const Candidate coop{"cutlass", "sched=coop,tile=128x256x64,cluster=2x1"};
  const Problem plain = Problem::make(512, 512, 512, DType::f16, DType::f16, Layout::row, Layout::row).resolve();
  const Candidate ping{"cutlass", "sched=pingpong,tile=64x128x64,cluster=1x1"};
  ASSERT_EQ(b->validate(resolve(evt), coop, dev), "");
  ASSERT_EQ(b->validate(resolve(plain), ping, dev), "");
  EXPECT_FALSE(b->is_compiled(resolve(evt), *b->analyze(resolve(evt)), coop, *b->parse(coop), dev));

  // Both kernels at once, the cooperative one asked for twice: one nvcc run per unit.
  const auto before = cutlass_be::build_stats();
  std::optional<CompileResult> r1, r1b, r2;
  std::string err;
  {
    std::thread t1([&] { r1 = b->compile(resolve(evt), coop, dev); });
    std::thread t1b([&] { r1b = b->compile(resolve(evt), coop, dev); });
    std::thread t2([&] { r2 = b->compile(resolve(plain), ping, dev); });
    t1.join(), t1b.join(), t2.join();
  }
  ASSERT_TRUE(r1 && r1b && r2);
  EXPECT_EQ(cutlass_be::build_stats().compiles - before.compiles, 2u);
  EXPECT_TRUE(r1->compiled);
  EXPECT_NE(r1->cache_hit, r1b->cache_hit);  // one built it, the other waited for it
  EXPECT_GT(std::max(r1->compile_ms, r1b->compile_ms), 1000.0);
  EXPECT_TRUE(b->is_compiled(resolve(evt), *b->analyze(resolve(evt)), coop, *b->parse(coop), dev));
  EXPECT_TRUE(b->is_compiled(resolve(plain), *b->analyze(resolve(plain)), ping, *b->parse(ping), dev));
  const fs::path objdir = dir / "kernels" / "cutlass";
  size_t objects = 0;
  for (const auto& e : fs::directory_iterator(objdir)) {
    objects += e.path().extension() == ".so";
    EXPECT_NE(e.path().filename().string().rfind(".build-", 0), 0u) << "build directory left behind: " << e.path();
  }
  EXPECT_EQ(objects, 2u);
  std::printf("cutlass nvcc: coop EVT %.1f s, ping-pong %.1f s\n", std::max(r1->compile_ms, r1b->compile_ms) / 1000,
              r2->compile_ms / 1000);

  // Memory hit.
  const CompileResult hit = b->compile(resolve(evt), coop, dev);
  EXPECT_TRUE(hit.cache_hit);
  EXPECT_LT(hit.compile_ms, 1000.0);
  // Disk hit, as a new process sees it.
  cutlass_be::clear_memory_cache();
  const auto before_disk = cutlass_be::build_stats();
  const CompileResult disk_hit = b->compile(resolve(plain), ping, dev);
  EXPECT_TRUE(disk_hit.cache_hit);
  EXPECT_EQ(cutlass_be::build_stats().disk_hits - before_disk.disk_hits, 1u);
  EXPECT_EQ(cutlass_be::build_stats().compiles, before_disk.compiles);

  // A corrupt entry, and a valid object of another unit under this unit's key: each a miss (with a warning), never
  // served. The recompile is cut short by a tiny nvcc timeout, which also shows the timeout at work.
  const std::string coop_key = cutlass_be::unit_key(cutlass_unit_source(evt, coop.config));
  const std::string ping_key = cutlass_be::unit_key(cutlass_unit_source(plain, ping.config));
  const fs::path coop_so = objdir / (coop_key + ".so");
  ScopedEnv timeout("GEMMTUNE_NVCC_TIMEOUT_S", "0.05");
  for (int foreign = 0; foreign < 2; ++foreign) {
    cutlass_be::clear_memory_cache();
    fs::remove(coop_so);  // a new file (inode): never the one this process has mapped
    if (foreign) fs::copy_file(objdir / (ping_key + ".so"), coop_so);
    else std::ofstream(coop_so) << "not an ELF object";
    const auto st = cutlass_be::build_stats();
    try {
      b->compile(resolve(evt), coop, dev);
      ADD_FAILURE() << "a " << (foreign ? "foreign" : "corrupt") << " entry was served";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
    }
    EXPECT_EQ(cutlass_be::build_stats().disk_corrupt - st.disk_corrupt, 1u);
    EXPECT_FALSE(fs::exists(coop_so));  // removed, for the recompile to replace
  }
  fs::remove_all(dir);
}
