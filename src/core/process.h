#pragma once
// A child process with a deadline, for the backends whose compilers are other programs (Triton's helper, nvcc).
#include <spawn.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace gemmtune {

struct ProcessResult {
  bool started = false;   // false: it could not be started (spawn_errno says why)
  int spawn_errno = 0;
  int status = -1;        // its exit status; -1 when it did not exit on its own (a signal, the deadline)
  bool timed_out = false;
  std::string out, err;   // stdout and stderr, the first MiB of each
  std::string output() const { return out + err; }
};

// Runs argv (a PATH lookup when argv[0] has no '/') in `cwd` (empty: this process's), in a process group of its own,
// stdin from /dev/null, collecting stdout and stderr. Past `timeout_s` the whole group is killed (a compiler's own
// children too: ptxas, cicc). Never throws for the child's sake; an empty argv is a gemmtune::Error.
ProcessResult run_process(const std::vector<std::string>& argv, double timeout_s, const std::string& cwd = "");

// Starts argv with the file actions `fa` in a process group of its own (so a deadline can kill it with its children),
// signal mask and dispositions reset. Returns 0 and sets *pid, or the errno of the failed spawn. run_process and
// long-lived helpers (Triton's warm compile helpers) both start their children here.
int spawn_in_own_group(const std::vector<std::string>& argv, const posix_spawn_file_actions_t* fa, pid_t* pid);

}  // namespace gemmtune
