// The cutlass toolchain (CUTLASS headers, nvcc), nvcc as a child process, and the content-keyed .so cache.
#include "backends/cutlass/cutlass_nvcc.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>

#include "core/check.h"
#include "core/process.h"
#include "core/clock.h"
#include "gemmtune/errors.h"
#include "jit/jit.h"
#include "jit/sha256.h"

#include "core/env.h"
#include "core/text.h"

namespace gemmtune::cutlass_be {
namespace fs = std::filesystem;

namespace {

// Bumped when the unit's ABI (cutlass_abi.h) or the cache layout changes.
constexpr const char* kKeyVersion = "gemmtune-cutlass-1";

std::string env_text(const char* name) { return env::get(name).value_or(""); }

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

using gemmtune::detail::warn;

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// "MAJOR.MINOR.PATCH" from cutlass/version.h; "" when unreadable.
std::string read_cutlass_version(const std::string& include_dir) {
  std::ifstream f(fs::path(include_dir) / "cutlass" / "version.h");
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  auto field = [&](const char* name) {
    std::smatch m;
    const std::regex re(std::string("#define ") + name + R"(\s+(\d+))");
    return std::regex_search(text, m, re) ? m[1].str() : std::string();
  };
  const std::string ma = field("CUTLASS_MAJOR"), mi = field("CUTLASS_MINOR"), pa = field("CUTLASS_PATCH");
  if (ma.empty() || mi.empty() || pa.empty()) return "";
  return ma + "." + mi + "." + pa;
}

std::string find_in_path(const std::string& exe) {
  std::istringstream is(env_text("PATH"));
  std::string dir;
  while (std::getline(is, dir, ':'))
    if (!dir.empty() && access((fs::path(dir) / exe).c_str(), X_OK) == 0) return (fs::path(dir) / exe).string();
  return "";
}

}  // namespace

std::string find_toolchain(Toolchain& out) {
  out = Toolchain{};
  std::string missing;
  // CUTLASS headers.
  if (std::string dir = env_text("CUTLASS_DIR"); !dir.empty()) {
    if (is_file(fs::path(dir) / "include" / "cutlass" / "cutlass.h")) out.include_dir = (fs::path(dir) / "include").string();
    else if (is_file(fs::path(dir) / "cutlass" / "cutlass.h")) out.include_dir = dir;
    else missing = "CUTLASS_DIR=" + dir + " holds neither include/cutlass/cutlass.h nor cutlass/cutlass.h";
  } else {
    const std::string py = env::get("GEMMTUNE_PYTHON").value_or("python3");
    try {
      const ProcessResult r = run_process(
          // find_spec, not import: the package's location without running its __init__ (a second or so).
          {py, "-c",
           "import importlib.util as u, os, sys; s = u.find_spec('cutlass_library'); "
           "sys.exit(1) if s is None or not s.origin else print(os.path.dirname(s.origin))"},
          60);
      if (!r.started) GT_THROW("cannot start " + py + ": " + std::strerror(r.spawn_errno));
      const std::string dir = trim(r.out);
      const fs::path inc = fs::path(dir) / "source" / "include";
      if (r.status == 0 && is_file(inc / "cutlass" / "cutlass.h")) out.include_dir = inc.string();
      else if (r.status == 0) missing = "the nvidia-cutlass package at " + dir + " has no source/include/cutlass/cutlass.h";
      else missing = "no CUTLASS headers: CUTLASS_DIR is unset and " + py +
                     " finds no cutlass_library module (pip install nvidia-cutlass)";
    } catch (const Error& e) {
      missing = "no CUTLASS headers: CUTLASS_DIR is unset and " + std::string(e.what());
    }
  }
  if (!out.include_dir.empty()) {
    out.cutlass_version = read_cutlass_version(out.include_dir);
    if (out.cutlass_version.empty()) missing = "cannot read the CUTLASS version from " + out.include_dir + "/cutlass/version.h";
  }
  // nvcc.
  std::vector<std::string> tries;
  if (std::string v = env_text("CUDACXX"); !v.empty()) tries.push_back(v);
  if (std::string v = env_text("CUDA_HOME"); !v.empty()) tries.push_back((fs::path(v) / "bin" / "nvcc").string());
  tries.push_back("/usr/local/cuda/bin/nvcc");
  if (std::string v = find_in_path("nvcc"); !v.empty()) tries.push_back(v);
  for (const auto& t : tries)
    if (access(t.c_str(), X_OK) == 0) {
      out.nvcc = t;
      break;
    }
  std::string nvcc_missing;
  if (out.nvcc.empty()) {
    nvcc_missing = "no nvcc ($CUDACXX, $CUDA_HOME/bin/nvcc, /usr/local/cuda/bin/nvcc, PATH)";
  } else {
    try {
      const ProcessResult r = run_process({out.nvcc, "--version"}, 60);
      if (!r.started) GT_THROW("cannot start " + out.nvcc + ": " + std::strerror(r.spawn_errno));
      std::smatch m;
      const std::regex re(R"(V(\d+\.\d+\.\d+))");
      if (r.status == 0 && std::regex_search(r.out, m, re)) out.nvcc_version = m[0].str();
      else nvcc_missing = out.nvcc + " --version failed: " + trim(r.output());
    } catch (const Error& e) {
      nvcc_missing = e.what();
    }
    const fs::path root = fs::path(out.nvcc).parent_path().parent_path();
    for (const fs::path& d : {root / "lib64", root / "targets" / "x86_64-linux" / "lib", root / "lib"})
      if (is_file(d / "libcudart.so")) {
        out.lib_dir = d.string();
        break;
      }
    if (nvcc_missing.empty() && out.lib_dir.empty()) nvcc_missing = "no libcudart.so beside " + out.nvcc;
  }
  if (!missing.empty() && !nvcc_missing.empty()) return missing + "; " + nvcc_missing;
  return missing.empty() ? nvcc_missing : missing;
}

namespace {
struct Found {
  Toolchain tc;
  std::string error;
};
const Found& found() {
  static const Found f = [] {
    Found x;
    x.error = find_toolchain(x.tc);
    return x;
  }();
  return f;
}
}  // namespace

const Toolchain& toolchain() { return found().tc; }
const std::string& toolchain_error() { return found().error; }

std::vector<std::string> nvcc_flags(const Toolchain& tc) {
  // Device code for sm_90a only (no PTX to JIT at load); the CUDA runtime as a shared library, found through the
  // rpath, so the object stays small and shares the process's runtime (and its primary context) with the library.
  // -Xptxas -v: the kernel's registers and spills, which the tuner reads (a kernel that spills is never timed).
  return {"-gencode", "arch=compute_90a,code=sm_90a", "-Xcompiler", "-fPIC", "-shared", "-O3", "-std=c++17",
          "--expt-relaxed-constexpr", "-DNDEBUG", "-Xptxas", "-v", "-cudart", "shared", "-Xlinker",
          "-rpath=" + tc.lib_dir};
}

std::string unit_key(const std::string& source) {
  const Toolchain& tc = toolchain();
  jit::Sha256 h;
  h.field(kKeyVersion).field(source);
  // The flags without the rpath: a path, which would tie the cache to one machine's toolkit location.
  for (const auto& f : nvcc_flags(tc))
    if (f.rfind("-rpath=", 0) != 0) h.field(f);
  h.field(tc.nvcc_version).field(tc.cutlass_version);
  return h.hex_digest();
}

namespace {

std::mutex g_mu;
std::map<std::string, std::shared_future<BuildResult>> g_memory;  // key -> build (done or under way)
std::atomic<size_t> g_compiles{0}, g_memory_hits{0}, g_disk_hits{0}, g_disk_corrupt{0};

std::string cache_dir() {
  if (!jit::disk_cache_enabled()) return "";
  const std::string d = jit::kernel_cache_dir();
  return d.empty() ? "" : (fs::path(d) / "cutlass").string();
}

// dlopen + the entry points + the ident check; nullptr with `why` set when any of it fails.
std::shared_ptr<SharedObject> open_object(const std::string& path, const std::string& ident, std::string& why) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    why = std::string("dlopen failed: ") + (e ? e : "?");
    return nullptr;
  }
  auto so = std::make_shared<SharedObject>();
  so->handle = h, so->path = path;
  bool ok = true;
  auto sym = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
    if (!fn) ok = false, why = std::string("no symbol ") + name;
  };
  sym(so->ident, "gt_cutlass_ident");
  sym(so->args_size, "gt_cutlass_args_size");
  sym(so->check, "gt_cutlass_check");
  sym(so->workspace, "gt_cutlass_workspace");
  sym(so->create, "gt_cutlass_create");
  sym(so->destroy, "gt_cutlass_destroy");
  sym(so->init, "gt_cutlass_init");
  sym(so->run, "gt_cutlass_run");
  if (ok && so->args_size() != sizeof(GtCutlassArgs))
    ok = false, why = "its argument struct has " + std::to_string(so->args_size()) + " bytes, expected " +
                      std::to_string(sizeof(GtCutlassArgs));
  if (ok && ident != so->ident()) ok = false, why = "built for '" + std::string(so->ident()) + "'";
  if (!ok) {
    dlclose(h);
    return nullptr;
  }
  return so;
}

double read_meta_ms(const fs::path& meta, std::string& log) {
  std::ifstream f(meta);
  double ms = 0;
  if (!(f >> ms)) return 0;
  std::stringstream ss;
  ss << f.rdbuf();
  log = ss.str();
  return ms;
}

// nvcc runs at once: one per core, and at most one per 2 GiB of memory (a CUTLASS kernel's nvcc peaks at 1-2 GB),
// or $GEMMTUNE_NVCC_JOBS. The compile pool may have more threads than that; the rest wait here.
class NvccSlots {
 public:
  NvccSlots() {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const long long mem = static_cast<long long>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
    long n = std::max(1L, std::min(cores > 0 ? cores : 1L, static_cast<long>(mem / (2LL << 30))));
    n = env::integer("GEMMTUNE_NVCC_JOBS", n, 1, 1024);
    free_ = n;
  }
  void acquire() {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return free_ > 0; });
    --free_;
  }
  void release() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      ++free_;
    }
    cv_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  long free_ = 1;
};

NvccSlots& nvcc_slots() {
  static NvccSlots s;
  return s;
}

BuildResult do_build(const std::string& source, const std::string& ident, const std::string& key) {
  const Toolchain& tc = toolchain();
  GT_REQUIRE(toolchain_error().empty(), "cutlass: unavailable: " + toolchain_error());
  const std::string dir = cache_dir();
  if (!dir.empty()) {
    const fs::path so_path = fs::path(dir) / (key + ".so");
    if (is_file(so_path)) {
      std::string why;
      if (auto so = open_object(so_path.string(), ident, why)) {
        ++g_disk_hits;
        BuildResult r;
        r.so = so, r.cache_hit = true;
        r.nvcc_ms = read_meta_ms(fs::path(dir) / (key + ".meta"), r.log);
        return r;
      }
      ++g_disk_corrupt;
      warn("corrupt cutlass cache entry " + so_path.string() + " (" + why + "); recompiling");
      std::error_code ec;
      fs::remove(so_path, ec);
    }
  }
  // A private directory for nvcc's input and output: beside the cache (so that the publish is a rename on one file
  // system), else in the system's temp directory.
  std::error_code ec;
  fs::path base = dir.empty() ? fs::temp_directory_path(ec) : fs::path(dir);
  fs::create_directories(base, ec);
  std::string tmpl = (base / ".build-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) {
    tmpl = (fs::temp_directory_path(ec) / "gemmtune-cutlass-XXXXXX").string();
    GT_REQUIRE(mkdtemp(tmpl.data()), std::string("cutlass: cannot create a build directory: ") + std::strerror(errno));
  }
  const fs::path work(tmpl);
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code e;
      fs::remove_all(p, e);
    }
  } cleanup{work};
  {
    std::ofstream f(work / "unit.cu");
    f << source;
    GT_REQUIRE(f.good(), "cutlass: cannot write " + (work / "unit.cu").string());
  }
  std::vector<std::string> argv = {tc.nvcc, "-I" + tc.include_dir};
  for (const auto& f : nvcc_flags(tc)) argv.push_back(f);
  argv.insert(argv.end(), {"-o", (work / "unit.so").string(), (work / "unit.cu").string()});
  const double timeout_s = env::positive("GEMMTUNE_NVCC_TIMEOUT_S", 900, 1e6);
  nvcc_slots().acquire();
  struct Release {
    ~Release() { nvcc_slots().release(); }
  } release;
  const auto t0 = Clock::now();
  ++g_compiles;
  const ProcessResult pr = run_process(argv, timeout_s, work.string());
  if (!pr.started) GT_THROW("cutlass: cannot start " + argv[0] + ": " + std::strerror(pr.spawn_errno));
  BuildResult r;
  r.nvcc_ms = ms_since(t0);
  r.log = pr.output();
  if (pr.timed_out)
    GT_THROW("cutlass: nvcc timed out after " + std::to_string(static_cast<int>(timeout_s)) + " s (" + ident + ")");
  if (pr.status != 0 || !is_file(work / "unit.so"))
    GT_THROW("cutlass: nvcc failed (" + ident + "):\n" + pr.output().substr(0, 8000));
  std::string why;
  auto so = open_object((work / "unit.so").string(), ident, why);
  GT_REQUIRE(so, "cutlass: the object nvcc built does not load: " + why + " (" + ident + ")");
  r.so = so;
  if (!dir.empty()) {
    // Meta first: an .so without its meta is still a valid entry, a meta without an .so is never read.
    {
      std::ofstream m(work / "unit.meta");
      m << r.nvcc_ms << "\n" << r.log;
    }
    fs::rename(work / "unit.meta", fs::path(dir) / (key + ".meta"), ec);
    fs::rename(work / "unit.so", fs::path(dir) / (key + ".so"), ec);
    if (ec) warn("cannot publish cutlass cache entry " + (fs::path(dir) / (key + ".so")).string() + ": " + ec.message());
  }
  return r;
}

}  // namespace

bool is_built(const std::string& key) {
  {
    std::lock_guard<std::mutex> lk(g_mu);
    auto it = g_memory.find(key);
    if (it != g_memory.end() &&
        it->second.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      try {
        it->second.get();
        return true;
      } catch (...) {
        return false;
      }
    }
  }
  const std::string dir = cache_dir();
  return !dir.empty() && is_file(fs::path(dir) / (key + ".so"));
}

BuildResult build(const std::string& source, const std::string& ident) {
  const std::string key = unit_key(source);
  std::promise<BuildResult> mine;
  std::shared_future<BuildResult> fut;
  bool owner = false;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    auto it = g_memory.find(key);
    if (it != g_memory.end()) {
      fut = it->second;
    } else {
      fut = mine.get_future().share();
      g_memory.emplace(key, fut);
      owner = true;
    }
  }
  if (!owner) {
    BuildResult r = fut.get();  // rethrows the owner's compile error
    ++g_memory_hits;
    r.cache_hit = true;
    return r;
  }
  try {
    BuildResult r = do_build(source, ident, key);
    mine.set_value(r);
    return r;
  } catch (...) {
    // A failed build is not remembered: the next call tries again (a timeout on a loaded host may pass later).
    mine.set_exception(std::current_exception());
    std::lock_guard<std::mutex> lk(g_mu);
    g_memory.erase(key);
    throw;
  }
}

void clear_memory_cache() {
  std::lock_guard<std::mutex> lk(g_mu);
  g_memory.clear();
}

void ptxas_resources(const std::string& log, int& registers, int& spill_bytes) {
  registers = -1, spill_bytes = -1;
  std::smatch m;
  const std::regex regs(R"(Used (\d+) registers)"), spill(R"((\d+) bytes spill stores, (\d+) bytes spill loads)");
  for (auto it = log.cbegin(); std::regex_search(it, log.cend(), m, regs); it = m[0].second)
    registers = std::max(registers, std::stoi(m[1].str()));
  for (auto it = log.cbegin(); std::regex_search(it, log.cend(), m, spill); it = m[0].second)
    spill_bytes = std::max(spill_bytes, std::stoi(m[1].str()) + std::stoi(m[2].str()));
}

BuildStats build_stats() { return {g_compiles.load(), g_memory_hits.load(), g_disk_hits.load(), g_disk_corrupt.load()}; }

}  // namespace gemmtune::cutlass_be
