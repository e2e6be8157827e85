#include "core/input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace gemmtune::detail {

namespace {

// Deepest nesting of arrays and objects in `text`, stopping once it passes `limit` (strings are skipped, so a '['
// inside a string does not count).
int nesting_depth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > deepest && (deepest = depth) > limit) return deepest;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

std::string type_word(const nlohmann::json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& what, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes)
    throw InputError(what + ": larger than " + std::to_string(limits.max_bytes) + " bytes");
  if (nesting_depth(text, limits.max_depth) > limits.max_depth)
    throw InputError(what + ": nested deeper than " + std::to_string(limits.max_depth) + " levels");
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 2: ..." -> from "parse error" on.
    std::string why = e.what();
    const size_t p = why.find("] ");
    if (why.starts_with("[json.exception") && p != std::string::npos) why = why.substr(p + 2);
    throw InputError(what + ": not valid JSON (" + why + ")");
  }
}

FileRead read_regular_file(const std::string& path, std::size_t max_bytes, Follow follow) {
  FileRead r;
  const int nofollow = follow == Follow::entry ? O_NOFOLLOW : 0;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | nofollow | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return r;
    r.status = FileRead::rejected;
    if (err == ELOOP && follow == Follow::entry) {
      r.why = "a symbolic link";
    } else {
      r.why = std::strerror(err);
      r.error = err;
    }
    return r;
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  r.status = FileRead::rejected;
  if (::fstat(fd, &st) != 0) {
    r.error = errno;
    r.why = std::strerror(r.error);
    return r;
  }
  if (!S_ISREG(st.st_mode)) {
    r.why = S_ISDIR(st.st_mode) ? "a directory, not a file" : "not a regular file";
    return r;
  }
  if (st.st_size < 0 || std::uint64_t(st.st_size) > max_bytes) {
    r.why = "larger than " + std::to_string(max_bytes) + " bytes";
    return r;
  }
  r.data.resize(std::size_t(st.st_size));
  std::size_t got = 0;
  while (got < r.data.size()) {
    const ssize_t n = ::read(fd, r.data.data() + got, r.data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      r.error = errno;
      r.why = std::strerror(r.error);
      r.data.clear();
      return r;
    }
    if (n == 0) break;  // shrank while reading: the caller's checks judge what is there
    got += std::size_t(n);
  }
  r.data.resize(got);
  r.status = FileRead::ok;
  return r;
}

std::string to_fp32(double v, float& out) {
  if (std::isnan(v)) {
    out = float(v);
    return "";
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  if (std::fabs(v) > double(std::numeric_limits<float>::max()))
    return std::string("is out of the range of a float (got ") + buf + ")";
  const float f = float(v);
  if (f == 0.0f && v != 0.0)
    return std::string("is too small for a float (got ") + buf + ", which would be 0)";
  out = f;
  return "";
}

std::string json_brief(const nlohmann::json& v) {
  // ASCII only: a string's control bytes, C1 controls and other non-ASCII come out as \uXXXX, never raw onto a
  // terminal.
  std::string s = v.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

Fields::Fields(const nlohmann::json& j, std::string where) : j_(j), where_(std::move(where)) {
  if (!j_.is_object()) throw InputError(where_ + ": expected a JSON object, got " + type_word(j_));
}

void Fields::fail(const char* key, const std::string& msg) const {
  throw InputError(where_ + ": \"" + key + "\" " + msg);
}

bool Fields::has(const char* key) const { return j_.contains(key); }

const nlohmann::json& Fields::at(const char* key) const {
  auto it = j_.find(key);
  if (it == j_.end()) throw InputError(where_ + ": missing \"" + key + "\"");
  return *it;
}

int64_t Fields::integer(const char* key) const {
  const nlohmann::json& v = at(key);
  if (v.is_number_integer() && !v.is_number_unsigned()) return v.get<int64_t>();
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() <= uint64_t(INT64_MAX)) return int64_t(v.get<uint64_t>());
    fail(key, "is out of range (got " + json_brief(v) + ")");
  }
  fail(key, "must be an integer (got " + json_brief(v) + ")");
}

int64_t Fields::integer(const char* key, int64_t fallback) const { return has(key) ? integer(key) : fallback; }

double Fields::number(const char* key) const {
  const nlohmann::json& v = at(key);
  if (!v.is_number()) fail(key, "must be a number (got " + json_brief(v) + ")");
  const double d = v.get<double>();
  if (!std::isfinite(d)) fail(key, "must be finite (got " + json_brief(v) + ")");
  return d;
}

double Fields::number(const char* key, double fallback) const { return has(key) ? number(key) : fallback; }

std::string Fields::string(const char* key) const {
  const nlohmann::json& v = at(key);
  if (!v.is_string()) fail(key, "must be a string (got " + json_brief(v) + ")");
  return v.get<std::string>();
}

std::string Fields::string(const char* key, const std::string& fallback) const {
  return has(key) ? string(key) : fallback;
}

bool Fields::boolean(const char* key, bool fallback) const {
  if (!has(key)) return fallback;
  const nlohmann::json& v = at(key);
  if (!v.is_boolean()) fail(key, "must be true or false (got " + json_brief(v) + ")");
  return v.get<bool>();
}

void Fields::only(std::initializer_list<const char*> known) const {
  for (auto it = j_.begin(); it != j_.end(); ++it) {
    bool ok = false;
    for (const char* k : known) ok = ok || it.key() == k;
    if (ok) continue;
    std::string list;
    for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    throw InputError(where_ + ": unknown key \"" + json_brief(it.key()).substr(1, std::string::npos) +
                     " (known: " + list + ")");
  }
}

}  // namespace gemmtune::detail
