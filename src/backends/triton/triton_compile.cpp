// The triton backend's compile: availability probe, the helper process (posix_spawn, pipes, a deadline), and the
// kernel cache (memory + disk, keyed by content, self-validating entries published by atomic rename).
#include "backends/triton/triton_compile.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/input.h"
#include "core/process.h"
#include "gemmtune/errors.h"
#include "jit/disk_cache.h"
#include "jit/jit.h"
#include "jit/sha256.h"

#include "core/env.h"
#include "core/text.h"

namespace gemmtune::jit::detail {
const std::map<std::string, std::string>& embedded_triton_templates();  // generated (cmake/embed_kernels.cmake)
}

namespace gemmtune::triton {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'G', 'T', 'T', 'R', 'I', 'T', 'N', '1'};
constexpr std::uint64_t kMaxEntry = std::uint64_t(256) << 20;
constexpr double kProbeTimeoutS = 120;

using gemmtune::detail::warn;

// ---- the helper process ----

std::string tail(const std::string& s, size_t n) { return s.size() <= n ? s : "..." + s.substr(s.size() - n); }

std::string last_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  const auto nl = s.find_last_of('\n');
  return nl == std::string::npos ? s : s.substr(nl + 1);
}

// ---- warm helpers ----

// A `compile_driver.py --serve` process: job directories go in on one end of a socket pair (its stdin and stdout),
// "ok" / "error" lines come back. A socket rather than a pipe: a write to a helper that died fails with EPIPE
// (MSG_NOSIGNAL) instead of raising SIGPIPE in the user's program.
struct Helper {
  pid_t pid = -1;
  int fd = -1;
  pid_t owner = getpid();  // the process that started it (a forked child must not share its socket)
  std::string key;         // interpreter + template directory
  std::string buf;         // bytes read past the last answer
  ~Helper() {
    if (fd >= 0) close(fd);  // an idle helper reads EOF and exits
    if (pid > 0) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
  }
};

// Started in its own process group (killed with its compiler children on a deadline), stderr to /dev/null between
// jobs (a job's output goes to its log.txt). nullptr with *err set when it cannot start.
std::unique_ptr<Helper> start_helper(const std::string& python, const std::string& tdir, std::string* err) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    *err = std::string("socketpair: ") + std::strerror(errno);
    return nullptr;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  const std::string driver = (fs::path(tdir) / "compile_driver.py").string();
  auto h = std::make_unique<Helper>();
  const int rc = spawn_in_own_group({python, driver, "--serve", tdir}, &fa, &h->pid);
  posix_spawn_file_actions_destroy(&fa);
  close(sv[1]);
  if (rc != 0) {
    close(sv[0]);
    h->pid = -1;
    *err = "cannot start " + python + ": " + std::strerror(rc);
    return nullptr;
  }
  h->fd = sv[0];
  h->key = python + '\n' + tdir;
  return h;
}

// Idle helpers, taken by a compile and given back after an answer (a helper that timed out or died is dropped).
struct HelperPool {
  std::mutex mu;
  std::vector<std::unique_ptr<Helper>> idle;
};
HelperPool& helper_pool() {
  static HelperPool* p = new HelperPool;  // never destroyed: at exit the helpers see EOF and end themselves
  return *p;
}
std::unique_ptr<Helper> take_helper(const std::string& python, const std::string& tdir, std::string* err) {
  HelperPool& hp = helper_pool();
  {
    std::lock_guard<std::mutex> lock(hp.mu);
    const std::string key = python + '\n' + tdir;
    for (size_t i = hp.idle.size(); i-- > 0;) {
      if (hp.idle[i]->owner != getpid()) {
        // Inherited through fork(): the parent's helper, which this process must neither use nor kill.
        hp.idle[i]->pid = -1;
        hp.idle.erase(hp.idle.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      if (hp.idle[i]->key != key) continue;
      std::unique_ptr<Helper> h = std::move(hp.idle[i]);
      hp.idle.erase(hp.idle.begin() + static_cast<std::ptrdiff_t>(i));
      return h;
    }
  }
  return start_helper(python, tdir, err);
}
void give_helper(std::unique_ptr<Helper> h) {
  // As many idle helpers as compiles run in parallel (the tuner's pool: one a core); more would only hold memory.
  const size_t cap = std::max(2u, std::thread::hardware_concurrency());
  HelperPool& hp = helper_pool();
  std::lock_guard<std::mutex> lock(hp.mu);
  if (hp.idle.size() < cap) hp.idle.push_back(std::move(h));
}

enum class Answer { ok, error, died, timed_out };

// Sends one job to the helper and waits for its answer until `deadline`.
Answer ask(Helper& h, const std::string& job, std::chrono::steady_clock::time_point deadline) {
  const std::string line = job + "\n";
  size_t sent = 0;
  while (sent < line.size()) {
    const ssize_t n = send(h.fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Answer::died;
    sent += size_t(n);
  }
  for (;;) {
    if (const auto nl = h.buf.find('\n'); nl != std::string::npos) {
      const std::string a = h.buf.substr(0, nl);
      h.buf.erase(0, nl + 1);
      return a == "ok" ? Answer::ok : Answer::error;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Answer::timed_out;
    pollfd pfd{h.fd, POLLIN, 0};
    const int n = poll(&pfd, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) return Answer::died;
    if (n <= 0) continue;
    char b[256];
    const ssize_t got = read(h.fd, b, sizeof b);
    if (got > 0) h.buf.append(b, size_t(got));
    else if (got == 0 || errno != EINTR) return Answer::died;
  }
}

// ---- availability ----

struct Probe {
  std::string reason, version;
};

Probe run_probe(const std::string& python) {
  const bool from_env = env::get("GEMMTUNE_PYTHON").has_value();
  const std::string who = from_env ? "GEMMTUNE_PYTHON=" + python : python;
  ProcessResult r;
  try {
    r = run_process({python, "-c", "import triton; print(triton.__version__)"}, kProbeTimeoutS);
  } catch (const Error& e) {
    return {e.what(), ""};
  }
  if (!r.started)
    return {who + " not found" + (r.spawn_errno == ENOENT ? std::string() : ": " + std::string(std::strerror(r.spawn_errno))) +
                (from_env ? "" : " (set GEMMTUNE_PYTHON to an interpreter with triton)"),
            ""};
  if (r.timed_out) return {python + " -c 'import triton' did not finish in " + std::to_string(int(kProbeTimeoutS)) + " s", ""};
  if (r.status != 0) {
    std::string why = last_line(r.err);
    if (why.empty()) why = "exit status " + std::to_string(r.status);
    return {python + " -c 'import triton' failed: " + why, ""};
  }
  std::string v = last_line(r.out);
  if (v.empty()) return {python + " -c 'import triton' printed no version", ""};
  return {"", v};
}

// ---- the cache ----

std::string base_dir() {
  if (jit::disk_cache_enabled()) return (fs::path(jit::kernel_cache_dir()) / "triton").string();
  return (fs::temp_directory_path() / ("gemmtune-triton-" + std::to_string(getuid()))).string();
}

std::string templates_hash() {
  static const std::string h = [] {
    jit::Sha256 s;
    for (const auto& [name, text] : templates()) s.field(name).field(text);
    return s.hex_digest();
  }();
  return h;
}

std::string unique_suffix() {
  static std::atomic<unsigned long> counter{0};
  return std::to_string(getpid()) + "." +
         std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()) % 1000000007) + "." +
         std::to_string(counter.fetch_add(1));
}

bool write_file(const fs::path& p, const std::string& data) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  return static_cast<bool>(out);
}

std::string read_file(const fs::path& p, std::size_t max_bytes) {
  gemmtune::detail::FileRead f = gemmtune::detail::read_regular_file(p.string(), max_bytes);
  if (f.status != gemmtune::detail::FileRead::ok) GT_THROW("triton: cannot read " + p.string() + (f.why.empty() ? "" : ": " + f.why));
  return f.data;
}

// The templates as files the helper imports: a directory named by their content, written once (temp + rename).
std::string template_dir() {
  const fs::path dir = fs::path(base_dir()) / ("src-" + templates_hash().substr(0, 24));
  auto intact = [&] {
    for (const auto& [name, text] : templates()) {
      gemmtune::detail::FileRead f = gemmtune::detail::read_regular_file((dir / name).string(), 1 << 22);
      if (f.status != gemmtune::detail::FileRead::ok || f.data != text) return false;
    }
    return true;
  };
  if (fs::is_directory(dir) && intact()) return dir.string();
  std::error_code ec;
  fs::create_directories(dir.parent_path(), ec);
  if (ec) GT_THROW("triton: cannot create " + dir.parent_path().string() + ": " + ec.message());
  if (fs::exists(dir)) {
    warn("damaged Triton template directory " + dir.string() + "; rewriting it");
    fs::remove_all(dir, ec);
  }
  const fs::path tmp = dir.string() + ".tmp." + unique_suffix();
  fs::create_directories(tmp, ec);
  if (ec) GT_THROW("triton: cannot create " + tmp.string() + ": " + ec.message());
  for (const auto& [name, text] : templates())
    if (!write_file(tmp / name, text)) GT_THROW("triton: cannot write " + (tmp / name).string());
  fs::rename(tmp, dir, ec);
  if (ec) {
    fs::remove_all(tmp, ec);  // a concurrent writer published the same content first
    if (!intact()) GT_THROW("triton: cannot publish the templates to " + dir.string());
  }
  return dir.string();
}

// The launch facts from the helper's meta.json (or a cache entry's copy of it); throws nlohmann::json::exception.
void fill_from_meta(Kernel& k, const nlohmann::json& m) {
  k.name = m.at("name").get<std::string>();
  k.num_warps = m.at("num_warps").get<int>();
  k.num_ctas = m.at("num_ctas").get<int>();
  k.shared = m.at("shared").get<int>();
  k.global_scratch_size = m.at("global_scratch_size").get<int>();
  k.global_scratch_align = m.at("global_scratch_align").get<int>();
  k.profile_scratch_size = m.at("profile_scratch_size").get<int>();
  k.profile_scratch_align = m.at("profile_scratch_align").get<int>();
  k.cooperative = m.at("launch_cooperative_grid").get<bool>();
  k.pdl = m.at("launch_pdl").get<bool>();
  k.triton_version = m.at("triton_version").get<std::string>();
  k.params.clear();
  for (const auto& p : m.at("params")) k.params.emplace_back(p.at(0).get<std::string>(), p.at(1).get<std::string>());
}

std::shared_ptr<Kernel> disk_load(const std::string& key, bool* corrupt) {
  *corrupt = false;
  const std::string path = disk_entry_path(key);
  int os_error = 0;
  auto reject = [&](const std::string& why) -> std::shared_ptr<Kernel> {
    *corrupt = true;
    // A file the system refused to read (EACCES, EIO) is unreadable, not corrupt: its content was never checked.
    warn(std::string(os_error ? "unreadable" : "corrupt") + " Triton kernel cache entry " + path + " (" + why +
         "); recompiling");
    return nullptr;
  };
  nlohmann::json meta;
  std::string image, why;
  switch (jit::detail::read_entry(path, kMagic, key, meta, image, why, &os_error)) {
    case jit::detail::EntryRead::missing:
      return nullptr;
    case jit::detail::EntryRead::corrupt:
      return reject(why);
    case jit::detail::EntryRead::ok:
      break;
  }
  auto k = std::make_shared<Kernel>();
  try {
    fill_from_meta(*k, meta.at("triton"));
  } catch (const nlohmann::json::exception&) {
    return reject("bad metadata");
  }
  k->key = key;
  k->image.assign(image.begin(), image.end());
  return k;
}

void disk_store(const Kernel& k, const nlohmann::json& triton_meta) {
  jit::detail::write_entry(disk_entry_path(k.key), kMagic, k.key, {{"triton", triton_meta}},
                           std::string_view(k.image.data(), k.image.size()));
}

struct MemoryCache {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const Kernel>> kernels;
};
MemoryCache& memory_cache() {
  static MemoryCache* m = new MemoryCache;  // never destroyed: compiles may run on pool threads at exit
  return *m;
}

std::shared_ptr<const Kernel> with_hit(const std::shared_ptr<const Kernel>& k, bool from_disk) {
  auto c = std::make_shared<Kernel>(*k);
  c->cache_hit = true;
  c->from_disk = from_disk;
  c->compile_ms = 0;
  return c;
}

}  // namespace

const std::map<std::string, std::string>& templates() { return jit::detail::embedded_triton_templates(); }

std::string python_exe() {
  return env::get("GEMMTUNE_PYTHON").value_or("python3");
}

std::string probe(const std::string& python, std::string* version) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<std::once_flag>> flags;
  static std::map<std::string, Probe> results;
  std::shared_ptr<std::once_flag> flag;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto& f = flags[python];
    if (!f) f = std::make_shared<std::once_flag>();
    flag = f;
  }
  std::call_once(*flag, [&] {
    Probe p = run_probe(python);
    std::lock_guard<std::mutex> lock(mu);
    results[python] = std::move(p);
  });
  std::lock_guard<std::mutex> lock(mu);
  const Probe& p = results[python];
  if (version) *version = p.version;
  return p.reason;
}

std::string disk_entry_path(const std::string& key) { return (fs::path(base_dir()) / (key + ".gttriton")).string(); }

void clear_memory_cache() {
  MemoryCache& mc = memory_cache();
  std::lock_guard<std::mutex> lock(mc.mutex);
  mc.kernels.clear();
}

std::string cache_key(const Request& r) {
  std::string version;
  if (std::string why = probe(python_exe(), &version); !why.empty()) GT_THROW("triton: " + why);
  jit::Sha256 s;
  s.field("gemmtune-triton-1").field(r.json).field(templates_hash()).field(version);
  return s.hex_digest();
}

std::shared_ptr<const Kernel> compile(const Request& r, const std::string& context) {
  const std::string key = cache_key(r);
  MemoryCache& mc = memory_cache();
  {
    std::lock_guard<std::mutex> lock(mc.mutex);
    if (auto it = mc.kernels.find(key); it != mc.kernels.end()) return with_hit(it->second, false);
  }
  const bool use_disk = jit::disk_cache_enabled();
  if (use_disk) {
    bool corrupt = false;
    if (std::shared_ptr<Kernel> k = disk_load(key, &corrupt)) {
      std::lock_guard<std::mutex> lock(mc.mutex);
      mc.kernels.emplace(key, k);
      return with_hit(k, true);
    }
  }
  const std::string tdir = template_dir();
  std::error_code ec;
  const fs::path job = fs::path(base_dir()) / ("job." + unique_suffix());
  fs::create_directories(job, ec);
  if (ec) GT_THROW("triton: cannot create " + job.string() + ": " + ec.message());
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code e;
      fs::remove_all(p, e);
    }
  } cleanup{job};
  if (!write_file(job / "request.json", r.json)) GT_THROW("triton: cannot write " + (job / "request.json").string());
  const double limit = env::positive("GEMMTUNE_TRITON_TIMEOUT_S", 600, 1e6);
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                  std::chrono::duration<double>(limit));
  const std::string killed = "triton: compile did not finish in " + std::to_string(int(limit)) +
                             " s (GEMMTUNE_TRITON_TIMEOUT_S); killed (" + context + ")";
  auto job_log = [&] {
    gemmtune::detail::FileRead f = gemmtune::detail::read_regular_file((job / "log.txt").string(), 1 << 22);
    return f.status == gemmtune::detail::FileRead::ok ? tail(f.data, 6000) : std::string();
  };
  if (env::get("GEMMTUNE_TRITON_WARM") != "0") {
    std::string err;
    std::unique_ptr<Helper> h = take_helper(python_exe(), tdir, &err);
    if (!h) GT_THROW("triton: " + err + " (" + context + ")");
    Answer a = ask(*h, job.string(), deadline);
    if (a == Answer::died && !fs::exists(job / "log.txt")) {
      // An idle helper that died before taking the job (killed from outside): once more with a fresh one.
      h = start_helper(python_exe(), tdir, &err);
      if (!h) GT_THROW("triton: " + err + " (" + context + ")");
      a = ask(*h, job.string(), deadline);
    }
    switch (a) {
      case Answer::ok: give_helper(std::move(h)); break;
      case Answer::error:
        give_helper(std::move(h));
        GT_THROW("triton: compile failed (" + context + "):\n" + job_log());
      case Answer::timed_out: h.reset(); GT_THROW(killed + "\n" + job_log());
      case Answer::died: {
        h.reset();
        std::string log = job_log();
        GT_THROW("triton: the compile helper (" + python_exe() + " compile_driver.py --serve) exited" +
                 (log.empty() ? std::string(" before the job; GEMMTUNE_TRITON_WARM=0 compiles in one-shot processes "
                                            "that report their errors")
                              : ":\n" + log) +
                 " (" + context + ")");
      }
    }
  } else {
    const ProcessResult pr =
        run_process({python_exe(), (fs::path(tdir) / "compile_driver.py").string(), tdir, job.string()}, limit);
    if (!pr.started)
      GT_THROW("triton: cannot start " + python_exe() + ": " + std::strerror(pr.spawn_errno) + " (" + context + ")");
    if (pr.timed_out) GT_THROW(killed + "\n" + tail(pr.err, 4000));
    if (pr.status != 0)
      GT_THROW("triton: compile failed (" + context + "):\n" + tail(pr.err + pr.out, 6000));
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  auto k = std::make_shared<Kernel>();
  k->key = key;
  nlohmann::json meta;
  try {
    const std::string image = read_file(job / "kernel.cubin", kMaxEntry);
    if (!jit::detail::is_elf(image.data(), image.size())) GT_THROW("triton: the helper wrote no CUBIN (" + context + ")");
    k->image.assign(image.begin(), image.end());
    meta = gemmtune::detail::parse_json(read_file(job / "meta.json", 1 << 20), "Triton metadata");
    fill_from_meta(*k, meta);
  } catch (const gemmtune::detail::InputError& e) {
    GT_THROW(std::string("triton: bad helper output: ") + e.what() + " (" + context + ")");
  } catch (const nlohmann::json::exception& e) {
    GT_THROW(std::string("triton: bad helper metadata: ") + e.what() + " (" + context + ")");
  }
  k->compile_ms = ms;
  if (use_disk) disk_store(*k, meta);
  {
    std::lock_guard<std::mutex> lock(mc.mutex);
    mc.kernels.emplace(key, k);
  }
  return k;
}

}  // namespace gemmtune::triton
