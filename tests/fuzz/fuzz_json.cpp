// libFuzzer target: the readers of untrusted JSON. The same bytes are read as a result-cache export (`cache import`),
// a result-cache entry, a kernel-cache entry, a benchmark suite, and a problem of the worker protocol. Each must give
// a value, a miss or an error with a message: no crash, no unbounded recursion or memory.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_suite.h"
#include "core/input.h"
#include "jit/disk_cache.h"
#include "tuner/result_cache.h"
#include "tuner/serialize.h"

using namespace gemmtune;
namespace fs = std::filesystem;

namespace {

// One scratch directory per fuzzing process, removed when it exits normally.
const fs::path& scratch() {
  static const struct Scratch {
    fs::path dir;
    Scratch() {
      std::string t = (fs::temp_directory_path() / "gemmtune-fuzz-XXXXXX").string();
      if (!mkdtemp(t.data())) std::abort();
      dir = t;
    }
    ~Scratch() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } s;
  return s.dir;
}

void write(const fs::path& p, const uint8_t* data, size_t size) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), std::streamsize(size));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  // A document, then the typed readers over it.
  try {
    const nlohmann::json j = detail::parse_json(text, "fuzz");
    (void)j.dump();  // recursion is bounded by the depth limit
    try {
      (void)problem_from_json(j);
    } catch (const Error&) {
    }
  } catch (const detail::InputError&) {
  }

  // A suite.
  try {
    (void)cli::parse_suite(text, "fuzz.json");
  } catch (const cli::UsageError&) {
  } catch (const Error&) {
  }

  // A cache export, imported into a cache that is then listed and exported again.
  const fs::path cache_dir = scratch() / "results";
  fs::remove_all(cache_dir);
  ResultCache cache(cache_dir.string());
  const fs::path in = scratch() / "import.json";
  write(in, data, size);
  try {
    cache.import_from(in.string());
    for (const CacheEntry& e : cache.list()) (void)cache.get(e.key);
    cache.export_to((scratch() / "export.json").string());
  } catch (const Error&) {
  }

  // The same bytes as a result-cache entry and as a kernel-cache entry.
  fs::create_directories(cache_dir);
  write(cache_dir / "0123456789abcdef0123456789abcdef.json", data, size);
  (void)cache.list();
  const std::string key(64, 'a');
  write(jit::detail::disk_entry_path(scratch().string(), key), data, size);
  bool corrupt = false;
  (void)jit::detail::disk_load(scratch().string(), key, "kernel", &corrupt);
  return 0;
}
