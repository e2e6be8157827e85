// libFuzzer target: the CLI's problem options (tools/gemmtune/cli_problem.h) and Problem::check/resolve/str behind
// them. The input is an argument list, one argument per line. Every outcome must be a value or a one-line usage
// error; an accepted problem's str() must parse back to the same problem.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli_problem.h"

using namespace gemmtune;

namespace {

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size() && out.size() < 64) {
    const size_t nl = s.find('\n', start);
    out.push_back(s.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return out;
}

// Parses `args` as `gemmtune list` would; nullopt-like false on a usage error.
bool build(const std::vector<std::string>& args, Problem* out) {
  CLI::App app{"fuzz"};
  cli::ProblemArgs pa;
  pa.add_to(&app);
  std::vector<std::string> rev(args.rbegin(), args.rend());  // CLI11 takes them reversed
  try {
    app.parse(rev);
    *out = pa.build();
    return true;
  } catch (const CLI::Error&) {
  } catch (const cli::UsageError&) {
  }
  return false;
}

// "--m=4 --n=8 ..." -> {"--m=4", "--n=8", ...}
std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t sp = s.find(' ', start);
    if (sp == std::string::npos) sp = s.size();
    if (sp > start) out.push_back(s.substr(start, sp - start));
    start = sp + 1;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Problem p;
  if (!build(lines(std::string(reinterpret_cast<const char*>(data), size)), &p)) return 0;
  (void)p.key();
  (void)p.flops();
  (void)p.min_bytes();
  // str() pastes back: the same problem (and so the same cache key).
  Problem q;
  if (!build(words(p.str()), &q)) std::abort();
  if (q.key() != p.key()) std::abort();
  return 0;
}
