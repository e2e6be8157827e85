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

#include "gemmtune/errors.h"
#include "tuner/evaluate.h"
#include "tuner/serialize.h"

extern char** environ;

namespace gemmtune {

namespace fs = std::filesystem;

std::optional<std::string> find_worker() {
  auto ok = [](const fs::path& p) { return access(p.c_str(), X_OK) == 0; };
  if (const char* e = std::getenv("GEMMTUNE_WORKER"); e && *e) {
    if (ok(e)) return std::string(e);
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

class Worker {
 public:
  explicit Worker(const std::string& path) {
    int in[2], out[2];
    if (pipe(in) || pipe(out)) throw Error(std::string("pipe: ") + std::strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, in[1]);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    char* argv[] = {const_cast<char*>(path.c_str()), nullptr};
    const int rc = posix_spawn(&pid_, path.c_str(), &fa, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = out[0];
    fcntl(to_, F_SETFD, FD_CLOEXEC);
    fcntl(from_, F_SETFD, FD_CLOEXEC);
    if (rc != 0) {
      close(to_), close(from_);
      throw Error("cannot start worker " + path + ": " + std::strerror(rc));
    }
  }
  ~Worker() {
    if (to_ >= 0) close(to_);
    if (from_ >= 0) close(from_);
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  void send(const std::string& line) {
    std::string s = line + "\n";
    size_t off = 0;
    while (off < s.size()) {
      ssize_t w = write(to_, s.data() + off, s.size() - off);
      if (w <= 0) throw Error("worker closed its input");
      off += size_t(w);
    }
    close(to_);
    to_ = -1;
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
      if (n <= 0) return std::nullopt;
      buf_.append(tmp, size_t(n));
    }
  }
  // Exit description after the worker ended (waits for it).
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
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string buf_;
};

nlohmann::json options_json(const TuneOptions& o) {
  return {{"min_time_ms", o.min_time_ms}, {"min_iters", o.min_iters},         {"warmup_iters", o.warmup_iters},
          {"settle_ms", o.settle_ms},     {"max_candidate_s", o.max_candidate_s}, {"tolerance", o.tolerance},
          {"interleave", o.interleave}};
}

}  // namespace

void evaluate_in_worker(const std::string& path, const Problem& p, std::vector<PreparedCandidate>& cands,
                        const TuneOptions& o) {
  auto progress = [&](const std::string& s) {
    if (o.progress) o.progress(s);
  };
  auto pending = [&] {
    for (const auto& c : cands)
      if (c.status() == Status::pending) return true;
    return false;
  };
  int restarts = 0;
  TuneOptions wo = o;  // interleave turns off after a worker died while timing side by side
  while (pending()) {
    if (restarts > int(cands.size()) + 1) throw Error("worker keeps failing; giving up");
    Worker w(path);
    nlohmann::json req = {{"problem", to_json(p)}, {"options", options_json(wo)}, {"results", nlohmann::json::array()}};
    std::vector<size_t> map;  // request index -> results index
    for (size_t i = 0; i < cands.size(); ++i)
      if (cands[i].status() == Status::pending) req["results"].push_back(to_json(cands[i].result)), map.push_back(i);
    w.send(req.dump());
    constexpr size_t kNone = ~size_t(0);
    size_t in_flight = kNone;  // the candidate between its "begin" and its "result"
    size_t timing = 0;  // candidates being timed side by side (after the worker's "timing" event)
    double timeout = o.max_candidate_s + 120;  // the first candidate waits for setup (inputs, reference GEMM)
    for (;;) {
      bool timed_out = false;
      auto line = w.read_line(timeout, timed_out);
      if (!line) {
        const std::string how = timed_out ? "" : w.end_status();
        if (timing > 0 && pending()) {
          // Not one candidate's fault as far as we can tell: time the rest one at a time, which attributes it.
          progress("  worker " + (timed_out ? "timed out" : how) + " while timing " + std::to_string(timing) +
                   " candidates side by side; timing them again one at a time");
          wo.interleave = false;
        } else if (in_flight != kNone) {
          CandidateResult& r = cands[map[in_flight]].result;
          if (timed_out) {
            r.status = Status::timeout;
            r.reason = "no result within " + std::to_string(int(timeout)) + " s; worker killed";
          } else {
            r.status = Status::crashed, r.reason = "worker process " + how + " while running this candidate";
          }
          progress("  " + r.candidate.str() + ": " + to_string(r.status) + " (" + r.reason + ")");
        } else if (pending()) {
          throw Error(timed_out ? "worker did not start within " + std::to_string(int(timeout)) + " s"
                                : "worker " + how + " before running any candidate (run gemmtune-worker by hand?)");
        }
        break;
      }
      nlohmann::json ev;
      try {
        ev = nlohmann::json::parse(*line);
      } catch (const std::exception&) {
        progress("worker: " + *line);  // stray output from a library: pass it on
        continue;
      }
      const std::string kind = ev.value("event", "");
      if (kind == "begin") {
        in_flight = ev.at("index").get<size_t>();
        timeout = o.max_candidate_s + 10;
      } else if (kind == "timing") {
        in_flight = kNone;
        timing = ev.at("indices").size();
        timeout = o.max_candidate_s * double(timing) + 10;
        progress("  timing " + std::to_string(timing) + " verified candidates side by side");
      } else if (kind == "result") {
        const size_t i = ev.at("index").get<size_t>();
        cands[map[i]].result = result_from_json(ev.at("result"));
        if (o.progress) {
          const auto& r = cands[map[i]].result;
          const bool ok = r.status == Status::ok;
          char buf[160];
          if (ok)
            std::snprintf(buf, sizeof(buf), "%9.2f us %8.1f TFLOP/s  err %.1e", r.us_median, r.tflops, r.error);
          else
            std::snprintf(buf, sizeof(buf), "%s", to_string(r.status));
          progress("  " + r.candidate.str() + "  " + buf + (ok ? "" : ": " + r.reason));
        }
        in_flight = kNone;
      } else if (kind == "fatal") {
        throw Error("worker: " + ev.value("message", std::string("unknown error")));
      }
    }
    ++restarts;
  }
}

int worker_main() {
  std::string line;
  if (!std::getline(std::cin, line)) {
    std::cerr << "gemmtune-worker: expected one JSON request line on stdin (it is started by the tuner)\n";
    return 2;
  }
  auto emit = [](const nlohmann::json& j) { std::cout << j.dump() << "\n" << std::flush; };
  try {
    const nlohmann::json req = nlohmann::json::parse(line);
    const Problem p = problem_from_json(req.at("problem"));
    TuneOptions o;
    const auto& oj = req.at("options");
    o.min_time_ms = oj.at("min_time_ms").get<double>();
    o.min_iters = oj.at("min_iters").get<int>();
    o.warmup_iters = oj.at("warmup_iters").get<int>();
    o.settle_ms = oj.value("settle_ms", 0.0);
    o.max_candidate_s = oj.at("max_candidate_s").get<double>();
    o.tolerance = oj.at("tolerance").get<double>();
    o.interleave = oj.value("interleave", true);
    std::vector<PreparedCandidate> cands;
    for (const auto& r : req.at("results")) {
      const CandidateResult res = result_from_json(r);
      PreparedCandidate pc = make_prepared(res.candidate);
      if (pc.backend) pc.result = res;  // the parent's compile numbers; status pending
      cands.push_back(std::move(pc));
    }
    EvaluateHooks hooks;
    // Test hook: GEMMTUNE_WORKER_CRASH_ON=<backend:config> makes the worker die (SIGSEGV) on that candidate, so the
    // tuner's crash recovery can be tested without a kernel that really corrupts the context.
    const char* crash_on = std::getenv("GEMMTUNE_WORKER_CRASH_ON");
    hooks.on_begin = [&](size_t i) {
      emit({{"event", "begin"}, {"index", i}});
      if (crash_on && cands[i].candidate().str() == crash_on) raise(SIGSEGV);
    };
    hooks.on_result = [&](size_t i, const CandidateResult& r) {
      emit({{"event", "result"}, {"index", i}, {"result", to_json(r)}});
    };
    // Test hook: GEMMTUNE_WORKER_CRASH_ON_TIMING=1 makes the worker die when the side-by-side timing starts.
    const char* crash_timing = std::getenv("GEMMTUNE_WORKER_CRASH_ON_TIMING");
    hooks.on_timing = [&](const std::vector<size_t>& indices) {
      emit({{"event", "timing"}, {"indices", indices}});
      if (crash_timing && std::string(crash_timing) == "1") raise(SIGSEGV);
    };
    evaluate(p, cands, o, hooks);
    return 0;
  } catch (const CudaError& e) {
    if (e.sticky) return 3;  // the crashed candidate was reported; the tuner restarts a worker for the rest
    emit({{"event", "fatal"}, {"message", e.what()}});
    return 1;
  } catch (const std::exception& e) {
    emit({{"event", "fatal"}, {"message", e.what()}});
    return 1;
  }
}

}  // namespace gemmtune
