#pragma once
// Compiles a backend's candidates for one problem on every core (as the tuner's pipeline does) and hands back each
// one's result or error message, for the compile tests to check on the test's own thread.
#include <string>
#include <vector>

#include "backends/backend.h"
#include "jit/thread_pool.h"

namespace gemmtune::test {

struct CompiledEach {
  std::vector<CompileResult> res;  // res[i]: candidate i's, valid where err[i] is empty
  std::vector<std::string> err;    // the exception's message where compile() threw
};

inline CompiledEach compile_each(const Backend& be, const Problem& p, const std::vector<Candidate>& cands,
                                 const DeviceInfo& dev) {
  CompiledEach out{std::vector<CompileResult>(cands.size()), std::vector<std::string>(cands.size())};
  jit::parallel_for(cands.size(), 0, [&](size_t i) {
    try {
      out.res[i] = be.compile(resolve(p), cands[i], dev);
    } catch (const std::exception& e) {
      out.err[i] = e.what();
    }
  });
  return out;
}

}  // namespace gemmtune::test
