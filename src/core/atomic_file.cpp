#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include "core/input.h"
#include "gemmtune/errors.h"

namespace gemmtune::detail {

namespace fs = std::filesystem;

namespace {

std::string errno_text(int err) { return std::strerror(err); }

// Unique among processes (pid), threads and calls of one process (counter) and, should a pid be reused while a dead
// writer's file remains, random bits.
std::string temp_name() {
  static std::atomic<unsigned long long> counter{0};
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::string(kTmpPrefix) + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1)) + "-" +
         std::to_string(rng() % 1000000007ull);
}

bool write_all(int fd, std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::write(fd, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    s.remove_prefix(std::size_t(n));
  }
  return true;
}

const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view content) {
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string tmp = (dir / temp_name()).string();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd < 0) throw Error("cannot write " + path + ": cannot create a temp file in " + dir.string() + " (" +
                          errno_text(errno) + ")");
  const bool written = write_all(fd, content) && ::fsync(fd) == 0;
  const int err = errno;
  const bool closed = ::close(fd) == 0;
  if (!written || !closed) {
    ::unlink(tmp.c_str());
    throw Error("cannot write " + path + ": " + errno_text(written ? errno : err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int rerr = errno;
    ::unlink(tmp.c_str());
    throw Error("cannot write " + path + ": " + errno_text(rerr));
  }
  // The rename is durable once the directory is: best effort, as some file systems refuse fsync on a directory.
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

std::string output_target(const std::string& path) {
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) != 0) {
    if (errno == ENOENT) return path;
    throw InputError("'" + path + "': " + errno_text(errno));
  }
  if (S_ISREG(lst.st_mode)) return path;
  if (!S_ISLNK(lst.st_mode))
    throw InputError("'" + path + "' is " + kind_of(lst.st_mode) + ", not a regular file: name a file to write");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw InputError("'" + path + "' is a symbolic link to a file that cannot be reached (" + errno_text(errno) +
                     "): name a file to write");
  if (!S_ISREG(st.st_mode))
    throw InputError("'" + path + "' is a symbolic link to " + kind_of(st.st_mode) +
                     ", not a regular file: name a file to write");
  std::error_code ec;
  const fs::path real = fs::canonical(path, ec);
  if (ec) throw InputError("'" + path + "': " + ec.message());
  return real.string();
}

}  // namespace gemmtune::detail
