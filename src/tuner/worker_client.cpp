#include "tuner/worker_client.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "gemmtune/errors.h"
#include "gemmtune/progress.h"
#include "tuner/evaluate.h"
#include "tuner/fault_injection.h"
#include "tuner/routing.h"
#include "tuner/serialize.h"

#include "core/env.h"
#include "cuda/driver.h"

extern char** environ;

namespace gemmtune {

namespace fs = std::filesystem;

std::optional<std::string> find_worker() {
  auto ok = [](const fs::path& p) { return access(p.c_str(), X_OK) == 0; };
  if (const auto e = env::get("GEMMTUNE_WORKER")) {
    if (ok(*e)) return *e;
    return std::nullopt;
  }
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&find_worker), &info) && info.dli_fname) {
    const fs::path lib = fs::absolute(info.dli_fname).parent_path();
    for (const fs::path& p : {lib / "gemmtune-worker", lib / ".." / "libexec" / "gemmtune-worker"})
      if (ok(p)) return fs::weakly_canonical(p).string();
  }
  for (const char* p : {GEMMTUNE_WORKER_BUILD_PATH, GEMMTUNE_WORKER_INSTALL_PATH})
    if (ok(p)) return std::string(p);
  return std::nullopt;
}

namespace {

// The ordinal of the device whose context is current on this thread (the caller's, e.g. PyTorch's cuda:1), if any.
std::optional<int> current_ordinal() {
  const cuda::Driver& d = cuda::driver();  // never throws: without a driver the worker says so itself
  CUcontext ctx = nullptr;
  CUdevice dev = 0;
  if (d.loaded && d.cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx && d.cuCtxGetDevice(&dev) == CUDA_SUCCESS)
    return static_cast<int>(dev);  // a CUdevice is its ordinal among the visible devices
  return std::nullopt;
}

// The worker's environment: this process's, with GEMMTUNE_DEVICE set to the device current on the calling thread,
// so that the worker verifies and times on the GPU the caller tunes for (it has no context of ours to inherit).
std::vector<std::string> worker_env_list() {
  const std::optional<int> ord = current_ordinal();
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e)
    if (!ord || std::strncmp(*e, "GEMMTUNE_DEVICE=", 16) != 0) out.emplace_back(*e);
  if (ord) out.push_back("GEMMTUNE_DEVICE=" + std::to_string(*ord));
  return out;
}

// The part of a worker's environment that changes what it does (device, caches, test hooks): a kept worker serves a
// later request only while this is unchanged.
std::string worker_environment(const std::vector<std::string>& env) {
  std::string s;
  for (const std::string& e : env)
    if (e.starts_with("GEMMTUNE_") || e.starts_with("CUDA_")) s += e + '\n';
  return s;
}

class Worker {
 public:
  Worker(const std::string& path, const std::vector<std::string>& env)
      : path_(path), env_(worker_environment(env)), owner_(getpid()) {
    int in[2], out[2];
    // O_CLOEXEC from the start: a process spawned by another thread meanwhile must not inherit our ends (the worker
    // would then never see EOF on its stdin).
    if (pipe2(in, O_CLOEXEC)) throw Error(std::string("pipe: ") + std::strerror(errno));
    if (pipe2(out, O_CLOEXEC)) {
      close(in[0]), close(in[1]);
      throw Error(std::string("pipe: ") + std::strerror(errno));
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    char* argv[] = {const_cast<char*>(path.c_str()), nullptr};
    std::vector<char*> envp;
    for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    const int rc = posix_spawn(&pid_, path.c_str(), &fa, nullptr, argv, envp.data());
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = out[0];
    if (rc != 0) {
      pid_ = -1;
      throw Error("cannot start worker " + path + ": " + std::strerror(rc));
    }
  }
  ~Worker() {
    // A forked child of the tuner's process must not kill the parent's worker when it exits.
    if (getpid() != owner_) return;
    if (to_ >= 0) close(to_);
    if (from_ >= 0) close(from_);
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  const std::string& path() const { return path_; }
  const std::string& environment() const { return env_; }
  bool owned_here() const { return getpid() == owner_; }
  int requests = 0;

  void send(const std::string& line) {
    std::string s = line + "\n";
    size_t off = 0;
    // A worker that died leaves a broken pipe: EPIPE, not SIGPIPE (MSG_NOSIGNAL is for sockets; block the signal).
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    while (off < s.size()) {
      const ssize_t w = write(to_, s.data() + off, s.size() - off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      off += size_t(w);
    }
    // Consume a SIGPIPE raised while it was blocked, so it does not hit the process when unblocked.
    timespec zero{0, 0};
    while (sigtimedwait(&block, nullptr, &zero) > 0) {
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    // A short write is not reported here: the worker is dead, and reading its events says so.
  }
  // Next line, or nullopt at EOF or after `timeout_s` without a complete line (then timed_out = true).
  std::optional<std::string> read_line(double timeout_s, bool& timed_out) {
    timed_out = false;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    for (;;) {
      const auto nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) {
        timed_out = true;
        return std::nullopt;
      }
      pollfd pfd{from_, POLLIN, 0};
      const int pr = poll(&pfd, 1, int(std::min(left, 1.0) * 1000) + 1);
      if (pr < 0 && errno != EINTR) return std::nullopt;
      if (pr <= 0) continue;
      char tmp[65536];
      const ssize_t n = read(from_, tmp, sizeof(tmp));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return std::nullopt;
      buf_.append(tmp, size_t(n));
    }
  }
  // Ends the worker (it may have exited already) and describes how it ended.
  std::string end_status() {
    int st = 0;
    if (pid_ <= 0) return "ended";
    kill(pid_, SIGKILL);  // no-op when it already exited
    waitpid(pid_, &st, 0);
    pid_ = -1;
    if (WIFSIGNALED(st)) return std::string("killed by signal ") + strsignal(WTERMSIG(st));
    if (WIFEXITED(st)) return "exited with code " + std::to_string(WEXITSTATUS(st));
    return "ended";
  }

 private:
  std::string path_, env_;
  pid_t owner_;
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string buf_;
};

// The worker kept warm between the evaluations of this process (a tune's first timings and its runoff, the next
// problem's tune). It serves at most kMaxRequests requests, so that the modules it loaded do not pile up.
constexpr int kMaxRequests = 64;
std::mutex g_idle_mu;
Worker* g_idle = nullptr;  // owned; deleted at exit by IdleReaper

struct IdleReaper {
  ~IdleReaper() {
    std::lock_guard<std::mutex> lock(g_idle_mu);
    delete g_idle;
    g_idle = nullptr;
  }
} g_idle_reaper;

// A kept worker when one fits (reused = true), else a new one.
std::unique_ptr<Worker> acquire_worker(const std::string& path, bool& reused) {
  const std::vector<std::string> env = worker_env_list();
  {
    std::lock_guard<std::mutex> lock(g_idle_mu);
    std::unique_ptr<Worker> w(std::exchange(g_idle, nullptr));
    if (w && w->owned_here() && w->path() == path && w->environment() == worker_environment(env)) {
      reused = true;
      return w;
    }
    if (w && !w->owned_here()) (void)w.release();  // a forked child: the parent's worker is not ours to end
  }
  reused = false;
  return std::make_unique<Worker>(path, env);
}

void keep_worker(std::unique_ptr<Worker> w) {
  if (w->requests >= kMaxRequests) return;
  std::lock_guard<std::mutex> lock(g_idle_mu);
  delete std::exchange(g_idle, w.release());
}

nlohmann::json options_json(const TuneOptions& o) {
  return {{"min_time_ms", o.min_time_ms}, {"min_iters", o.min_iters},         {"warmup_iters", o.warmup_iters},
          {"settle_ms", o.settle_ms},     {"max_candidate_s", o.max_candidate_s}, {"tolerance", o.tolerance},
          {"interleave", o.interleave}};
}

bool pending(const std::vector<PreparedCandidate>& cands) {
  for (const auto& c : cands)
    if (c.status() == Status::pending) return true;
  return false;
}

// A failure a worker can leave behind for the next request (a context that may be damaged, memory written where
// it must not be): such a worker is not kept.
bool leaves_worker_suspect(Status s) {
  return s == Status::crashed || s == Status::timeout || s == Status::launch_error || s == Status::wrong_result ||
         s == Status::load_error;
}

// What the parent learned from one worker's events during one request.
struct RequestState {
  static constexpr size_t kNone = ~size_t(0);
  size_t in_flight = kNone;  // the candidate between its "begin" and its "result" (request index)
  size_t timing = 0;         // candidates being timed side by side (after "timing")
  int results = 0;
  std::string crashed;  // a candidate the worker reported crashed (context lost): the worker exits after it
  std::string fatal;    // the worker's last "fatal" message
  bool done = false;
  bool suspect = false;
  bool any_event = false;
};

std::string one_line(const std::string& s) { return s.substr(0, s.find('\n')); }

}  // namespace

void evaluate_in_worker(const std::string& path, const ResolvedProblem& p, std::vector<PreparedCandidate>& cands,
                        const TuneOptions& o) {
  auto progress = [&](const ProgressEvent& e) {
    if (o.progress) o.progress(e);
  };
  auto worker = [&](const std::string& text) { progress({.kind = ProgressKind::worker, .text = text}); };
  TuneOptions wo = o;               // interleave turns off after a worker died while timing side by side
  std::string after;                // the last failure survived ("" none): a setup failure after it is retried
  int setup_failures = 0;
  constexpr int kSetupRetries = 3;
  size_t rounds = 0;
  while (pending(cands)) {
    if (++rounds > 4 * cands.size() + 16) throw Error("worker keeps failing; giving up");  // each round resolves
    bool reused = false;
    std::unique_ptr<Worker> w = acquire_worker(path, reused);
    nlohmann::json req = {{"problem", to_json(p)},
                          {"options", options_json(wo)},
                          {"after_failure", !after.empty()},
                          {"setup_attempt", setup_failures},
                          {"results", nlohmann::json::array()}};
    std::vector<size_t> map;  // request index -> cands index
    for (size_t i = 0; i < cands.size(); ++i)
      if (cands[i].status() == Status::pending) req["results"].push_back(to_json(cands[i].result)), map.push_back(i);
    w->send(req.dump());
    ++w->requests;
    RequestState st;
    // The first event waits for the setup (a fresh worker: context, inputs, the reference GEMM).
    double timeout = o.max_candidate_s + 120;
    bool timed_out = false;
    for (;;) {
      auto line = w->read_line(timeout, timed_out);
      if (!line) break;
      nlohmann::json ev;
      try {
        ev = nlohmann::json::parse(*line);
      } catch (const std::exception&) {
        worker(*line);  // stray output from a library: pass it on
        continue;
      }
      const std::string kind = ev.value("event", "");
      st.any_event = true;
      try {
        if (kind == "begin") {
          st.in_flight = ev.at("index").get<size_t>();
          timeout = o.max_candidate_s + 10;
        } else if (kind == "timing") {
          st.in_flight = RequestState::kNone;
          st.timing = ev.at("indices").size();
          timeout = o.max_candidate_s * double(st.timing) + 10;
          progress({.kind = ProgressKind::timing, .count = size_t(st.timing)});
        } else if (kind == "result") {
          const size_t i = ev.at("index").get<size_t>();
          if (i >= map.size()) throw Error("result index out of range");
          CandidateResult& r = cands[map[i]].result;
          r = result_from_json(ev.at("result"));
          ++st.results;
          st.suspect = st.suspect || leaves_worker_suspect(r.status);
          if (r.status == Status::crashed) st.crashed = r.candidate.str();
          progress({.kind = ProgressKind::result, .result = r});
          st.in_flight = RequestState::kNone;
          st.timing = 0;
          timeout = o.max_candidate_s + 10;
        } else if (kind == "fatal") {
          st.fatal = ev.value("message", std::string("unknown error"));
        } else if (kind == "done") {
          st.done = true;
          break;
        }
      } catch (const std::exception& e) {
        worker(std::string("malformed event (") + e.what() + "): " + one_line(*line));
      }
    }
    if (st.done && st.fatal.empty()) {
      // Every candidate of the request has its result; one the worker passed over stays pending and would loop.
      for (size_t i : map)
        if (cands[i].status() == Status::pending)
          cands[i].result.status = Status::skipped, cands[i].result.reason = "the worker returned no result for it";
      if (!st.suspect) keep_worker(std::move(w));
      continue;
    }
    // The worker died, hung, or reported an error that was no candidate's result.
    const std::string how = timed_out ? "timed out" : st.done ? "stopped" : w->end_status();
    w.reset();
    if (reused && !st.any_event && !timed_out) continue;  // a kept worker that ended while idle: start a new one
    const std::string detail = st.fatal.empty() ? "worker " + how : one_line(st.fatal) + " (worker " + how + ")";
    if (st.timing > 0 && pending(cands)) {
      // Not one candidate's fault as far as we can tell: time the rest one at a time, which attributes it.
      worker(detail + " while timing " + std::to_string(st.timing) +
             " candidates side by side; timing them again one at a time");
      wo.interleave = false;
      after = "the side-by-side timing";
    } else if (st.in_flight != RequestState::kNone) {
      CandidateResult& r = cands[map[st.in_flight]].result;
      if (timed_out) {
        r.status = Status::timeout;
        r.reason = "no result within " + std::to_string(int(timeout)) + " s; worker killed";
      } else {
        r.status = Status::crashed;
        r.reason = st.fatal.empty() ? "worker process " + how + " while running this candidate"
                                    : one_line(st.fatal) + " (worker " + how + ")";
      }
      progress({.kind = ProgressKind::result, .result = r});
      after = r.candidate.str();
      setup_failures = 0;
    } else if (!st.crashed.empty() || st.results > 0) {
      // The crash was reported as that candidate's result (the context was lost: the worker exits after it), or the
      // worker died between candidates: a fresh one goes on with the rest.
      if (!st.crashed.empty()) after = st.crashed;
      setup_failures = 0;
    } else if (after.empty()) {
      // Before any candidate of a first worker: the environment (no GPU, too little memory, a worker that does not
      // run), not a candidate.
      throw Error(st.fatal.empty() ? "worker " + how + " before running any candidate (run gemmtune-worker by hand?)"
                                   : "worker: " + st.fatal);
    } else if (++setup_failures > kSetupRetries) {
      for (size_t i : map)
        if (cands[i].status() == Status::pending)
          cands[i].result.status = Status::skipped,
          cands[i].result.reason = "no worker could start after " + after + " failed: " + detail;
      worker(std::to_string(map.size()) + " candidates skipped: no worker could start after " + after + " failed (" +
             detail + ")");
    } else {
      worker("setup failed after " + after + " (" + detail + "); starting another");
      // The memory of a worker killed a moment ago may not be free yet.
      std::this_thread::sleep_for(std::chrono::milliseconds(250 << setup_failures));
    }
  }
}

void evaluate_candidates(const ResolvedProblem& p, std::vector<PreparedCandidate>& cands, const TuneOptions& o) {
  auto progress = [&](const ProgressEvent& e) {
    if (o.progress) o.progress(e);
  };
  if (o.isolation == Isolation::process) {
    if (const auto worker = find_worker()) return evaluate_in_worker(*worker, p, cands, o);
    progress({.kind = ProgressKind::warning,
              .text = "gemmtune-worker not found (set GEMMTUNE_WORKER); timing in-process"});
  }
  EvaluateHooks hooks;
  hooks.on_result = [&](size_t, const CandidateResult& r) { progress({.kind = ProgressKind::result, .result = r}); };
  hooks.on_timing = [&](const std::vector<size_t>& idx) {
    progress({.kind = ProgressKind::timing, .count = idx.size()});
  };
  evaluate(p, cands, o, hooks);
}

namespace {

TuneOptions options_from_json(const nlohmann::json& oj) {
  TuneOptions o;
  o.min_time_ms = oj.at("min_time_ms").get<double>();
  o.min_iters = oj.at("min_iters").get<int>();
  o.warmup_iters = oj.at("warmup_iters").get<int>();
  o.settle_ms = oj.value("settle_ms", 0.0);
  o.max_candidate_s = oj.at("max_candidate_s").get<double>();
  o.tolerance = oj.at("tolerance").get<double>();
  o.interleave = oj.value("interleave", true);
  return o;
}

// One request: evaluate() of its candidates with the events written as they happen. Returns false when the process
// must end (its CUDA context is lost).
bool serve(const std::string& line, const std::vector<FaultPlan>& faults,
           const std::function<void(const nlohmann::json&)>& emit) {
  bool crash_reported = false;
  try {
    const nlohmann::json req = nlohmann::json::parse(line);
    const ResolvedProblem p = resolve(problem_from_json(req.at("problem")));
    const TuneOptions o = options_from_json(req.at("options"));
    std::vector<PreparedCandidate> cands;
    for (const auto& r : req.at("results")) {
      const CandidateResult res = result_from_json(r);
      PreparedCandidate pc = make_prepared(res.candidate);
      if (pc.backend) pc.result = res;  // the parent's compile numbers; status pending
      cands.push_back(std::move(pc));
    }
    const bool after_failure = req.value("after_failure", false);
    for (const FaultPlan& f : faults)
      if (f.step == "setup" || (f.step == "restart_always" && after_failure) ||
          (f.step == "restart" && after_failure && req.value("setup_attempt", 0) == 0))
        inject_fault_now(f.kind, nullptr);
    EvaluateHooks hooks;
    hooks.on_begin = [&](size_t i) { emit({{"event", "begin"}, {"index", i}}); };
    hooks.on_result = [&](size_t i, const CandidateResult& r) {
      crash_reported = crash_reported || r.status == Status::crashed;
      emit({{"event", "result"}, {"index", i}, {"result", to_json(r)}});
    };
    hooks.on_timing = [&](const std::vector<size_t>& indices) { emit({{"event", "timing"}, {"indices", indices}}); };
    if (!faults.empty()) {
      // A fault at "timing" comes at the first launch after verification, which runs once per routing.
      const int verify_launches = int(std::max<size_t>(grouped_routings(p).size(), 1));
      hooks.wrap = [&, verify_launches](size_t, std::unique_ptr<Executable> exe) {
        for (const FaultPlan& f : faults) exe = wrap_with_fault(f, std::move(exe), f.step == "timing" ? verify_launches : 0);
        return exe;
      };
    }
    evaluate(p, cands, o, hooks);
    emit({{"event", "done"}});
    return true;
  } catch (const CudaError& e) {
    // A sticky error ends this process. When a candidate caused it, its result said so already; else (the setup, the
    // side-by-side timing) the message goes to the tuner, which knows what was going on.
    if (!e.sticky) {
      emit({{"event", "fatal"}, {"message", e.what()}});
      emit({{"event", "done"}});
      return true;
    }
    if (!crash_reported) emit({{"event", "fatal"}, {"message", e.what()}, {"sticky", true}});
    return false;
  } catch (const std::exception& e) {
    emit({{"event", "fatal"}, {"message", e.what()}});
    emit({{"event", "done"}});
    return true;
  }
}

}  // namespace

// Waits for the next request line; false when none comes within `idle_s` (GEMMTUNE_WORKER_IDLE_S): a kept worker
// holds a CUDA context (hundreds of MiB of GPU memory) that the user's own work may need.
bool next_request(std::string& line, double idle_s) {
  if (std::cin.rdbuf()->in_avail() <= 0) {
    pollfd pfd{0, POLLIN, 0};
    int rc;
    do rc = poll(&pfd, 1, int(std::min(idle_s, 86400.0) * 1000));
    while (rc < 0 && errno == EINTR);
    if (rc == 0) return false;
  }
  return static_cast<bool>(std::getline(std::cin, line));
}

int worker_main() {
  auto emit = [](const nlohmann::json& j) { std::cout << j.dump() << "\n" << std::flush; };
  std::vector<FaultPlan> faults;
  double idle_s = 60;
  try {
    faults = fault_plans_from_env();
    idle_s = env::positive("GEMMTUNE_WORKER_IDLE_S", 60, 86400);
  } catch (const std::exception& e) {
    emit({{"event", "fatal"}, {"message", e.what()}});
    return 2;
  }
  std::string line;
  bool any = false;
  while (next_request(line, idle_s)) {
    if (line.empty()) continue;
    any = true;
    if (!serve(line, faults, emit)) return 3;
  }
  if (!any) {
    std::cerr << "gemmtune-worker: expected JSON request lines on stdin (it is started by the tuner)\n";
    return 2;
  }
  return 0;
}

}  // namespace gemmtune
