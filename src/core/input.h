#pragma once
// Reading files that gemmtune does not trust: cache entries (which are imported from other machines), cache exports
// and benchmark suites. Bounded in size and nesting, regular files only, and every malformed field named.
// Internal (src/): the CLI includes it to map InputError to exit status 2.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "gemmtune/errors.h"

namespace gemmtune::detail {

// A malformed input file or field: the user's (or another machine's) data, not a gemmtune failure.
class InputError : public Error {
 public:
  using Error::Error;
};

// Bounds for one JSON document. nlohmann's parser is iterative, but dump() and several accessors recurse once per
// nesting level, so a document 100,000 levels deep overflows the stack after it parsed: the depth is checked first.
struct JsonLimits {
  std::size_t max_bytes = std::size_t(256) << 20;
  int max_depth = 64;
};

// Parses `text` as one JSON document within `limits`; throws InputError "<what>: <why>".
nlohmann::json parse_json(std::string_view text, const std::string& what, const JsonLimits& limits = {});

// The outcome of reading a file that should be a regular file of bounded size.
struct FileRead {
  enum Status { ok, missing, rejected } status = missing;
  std::string data;  // ok: the whole file
  std::string why;   // rejected: one phrase, e.g. "not a regular file", "larger than 1048576 bytes", strerror
  int error = 0;     // rejected because the system refused to open or read it (EACCES, EIO, ...): its errno; else 0
  // Rejected because it could not be read (error != 0), not because of what it is or holds.
  bool unreadable() const { return status == rejected && error != 0; }
};

// Whether read_regular_file follows a symbolic link at the path's last component. A cache entry is a file inside the
// cache directory, which a link must not lead out of (`entry`: not followed). A file the user names on the command
// line or in a call (`user`: a suite, an export to import) is followed, as any program opens a file it is given.
enum class Follow { entry, user };

// Opens `path` without blocking on a FIFO and reads it only when it is a regular file of at most `max_bytes` (checked
// with fstat before reading; no more than that size is read, should the file grow meanwhile). Follow::entry does not
// follow a symlink at its last component. A missing file is `missing`; anything else that is not a readable regular
// file is `rejected` with the reason.
FileRead read_regular_file(const std::string& path, std::size_t max_bytes, Follow follow = Follow::entry);

// Typed access to the fields of one JSON object, for cache records and suite entries: every error names `where` and
// the field, e.g. `suite.json shape #2: "m" must be an integer (got 16.5)`. Throws InputError.
class Fields {
 public:
  Fields(const nlohmann::json& j, std::string where);

  bool has(const char* key) const;
  int64_t integer(const char* key) const;  // required
  int64_t integer(const char* key, int64_t fallback) const;
  double number(const char* key) const;
  double number(const char* key, double fallback) const;
  std::string string(const char* key) const;
  std::string string(const char* key, const std::string& fallback) const;
  bool boolean(const char* key, bool fallback) const;
  const nlohmann::json& at(const char* key) const;  // required, any type
  // Throws on a key not in `known` (a typo such as "lda " or "epilog" must not silently mean the default).
  void only(std::initializer_list<const char*> known) const;
  const std::string& where() const { return where_; }

 private:
  [[noreturn]] void fail(const char* key, const std::string& msg) const;
  const nlohmann::json& j_;
  std::string where_;
};

// `v` as the fp32 the kernels take: "" with `out` set, else why not, to follow the value's name: "is out of the range
// of a float (got 1e+39)", "is too small for a float (got 1e-50, which would be 0)". A nonzero value never silently
// becomes 0 or infinity. NaN passes (Problem::check() names it).
std::string to_fp32(double v, float& out);

// Bounds shared by every entry point (the CLI's options, the C ABI's option objects), so that a value one of them
// accepts the other does too.
inline constexpr int kMaxAssumedSms = 1024;     // --arch-sms, "assume_sms": an assumed sm_90 GPU (H100/H200: 132)
inline constexpr int kMaxTopK = 1 << 20;        // --top-k, "top_k"
inline constexpr int kMaxThreads = 1024;        // --threads, "threads", "compile_threads"
inline constexpr int kMaxIters = 1 << 24;       // --min-iters, --warmup
inline constexpr double kMaxTimeValue = 1e9;    // --min-time-ms, --settle-ms, --max-candidate-s, --tolerance (finite)

// A short rendering of a JSON value for messages (at most ~40 characters).
std::string json_brief(const nlohmann::json& v);

}  // namespace gemmtune::detail
