#include "tuner/fault_injection.h"

#include <csignal>
#include <cstdlib>
#include <algorithm>
#include <mutex>

#include "cuda/driver.h"
#include "gemmtune/errors.h"
#include "jit/jit.h"

#include "core/env.h"

namespace gemmtune {

namespace {

const char* const kKinds[] = {"trap", "illegal_address", "misaligned", "hang", "wrong", "oob_write", "segv", "abort"};
const char* const kSteps[] = {"verify", "timing", "setup", "restart", "restart_always"};

std::string fault_source() {
  return "#include \"test/fault.cuh\"\nusing namespace gemmtune::test;\n"
         "extern \"C\" __global__ void gt_fault_trap() { fault_trap(); }\n"
         "extern \"C\" __global__ void gt_fault_illegal_address(unsigned* out) { fault_illegal_address(out); }\n"
         "extern \"C\" __global__ void gt_fault_misaligned(const char* live, unsigned* out) { fault_misaligned(live, "
         "out); }\n"
         "extern \"C\" __global__ void gt_fault_hang() { fault_hang(); }\n"
         "extern \"C\" __global__ void gt_fault_write(char* p, int n) { fault_write(p, n); }\n";
}

CUfunction fault_kernel(const std::string& name) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  static std::shared_ptr<const jit::Cubin> cubin;
  if (!cubin) cubin = jit::compile(fault_source(), "gt_fault_trap", {}, "fault injection");
  CUmodule mod = nullptr;
  GT_CU(cuFuncGetModule(&mod, jit::load(*cubin)));
  CUfunction f = nullptr;
  GT_CU(cuModuleGetFunction(&f, mod, name.c_str()));
  return f;
}

void launch1(const std::string& name, void** params, Stream s, unsigned threads = 1) {
  GT_CU(cuLaunchKernel(fault_kernel(name), 1, 1, 1, threads, 1, 1, 0, reinterpret_cast<CUstream>(s), params, nullptr));
}

// Launches the fault of `kind` on `s` (the GPU kinds), or dies (segv, abort). `live`: a device address that is
// mapped (the misaligned load's base), `scratch`: 4 writable bytes.
void fault(const std::string& kind, Stream s, const void* live, void* scratch) {
  if (kind == "segv") std::raise(SIGSEGV);
  if (kind == "abort") std::abort();
  if (kind == "trap") {
    launch1("gt_fault_trap", nullptr, s);
  } else if (kind == "illegal_address") {
    void* params[] = {&scratch};
    launch1("gt_fault_illegal_address", params, s);
  } else if (kind == "misaligned") {
    void* params[] = {&live, &scratch};
    launch1("gt_fault_misaligned", params, s);
  } else if (kind == "hang") {
    launch1("gt_fault_hang", nullptr, s);
  }
}

class FaultyExecutable final : public Executable {
 public:
  FaultyExecutable(std::string kind, std::unique_ptr<Executable> inner, int at)
      : kind_(std::move(kind)), inner_(std::move(inner)), at_(at) {}
  void launch(const GemmArgs& args, Stream stream) override {
    const bool now = launches_++ == at_;
    if (!now) return inner_->launch(args, stream);
    if (kind_ == "wrong") return;
    if (kind_ == "oob_write") {
      inner_->launch(args, stream);
      char* before = static_cast<char*>(args.d) - 16;
      int n = 16;
      void* params[] = {&before, &n};
      launch1("gt_fault_write", params, stream, 32);
      return;
    }
    // D is a live allocation of at least 16 bytes past its pointer's guard; its first bytes serve as scratch.
    fault(kind_, stream, args.d, args.d);
  }
  const Candidate& candidate() const override { return inner_->candidate(); }

 private:
  std::string kind_;
  std::unique_ptr<Executable> inner_;
  int at_;
  int launches_ = 0;
};

bool one_of(const std::string& v, const char* const* list, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (v == list[i]) return true;
  return false;
}

}  // namespace

std::vector<FaultPlan> fault_plans_from_env() {
  std::vector<FaultPlan> plans;
  const auto value = env::get("GEMMTUNE_WORKER_FAULT");
  if (!value) return plans;
  const std::string& all = *value;
  for (size_t start = 0; start <= all.size();) {
    const size_t end = std::min(all.find(';', start), all.size());
    const std::string v = all.substr(start, end - start);
    start = end + 1;
    const size_t c1 = v.find(','), c2 = c1 == std::string::npos ? c1 : v.find(',', c1 + 1);
    if (c2 == std::string::npos)
      throw Error("GEMMTUNE_WORKER_FAULT: '" + v + "': expected <kind>,<step>,<candidate>");
    FaultPlan p{v.substr(0, c1), v.substr(c1 + 1, c2 - c1 - 1), v.substr(c2 + 1)};
    if (!one_of(p.kind, kKinds, std::size(kKinds)))
      throw Error("GEMMTUNE_WORKER_FAULT: unknown kind '" + p.kind + "'");
    if (!one_of(p.step, kSteps, std::size(kSteps)))
      throw Error("GEMMTUNE_WORKER_FAULT: unknown step '" + p.step + "' (verify, timing, setup, restart, restart_always)");
    plans.push_back(std::move(p));
  }
  return plans;
}

void inject_fault_now(const std::string& kind, Stream stream) {
  cuda::ensure_context();
  if (kind == "wrong" || kind == "oob_write") return;  // nothing to get wrong before a candidate runs
  void* scratch = nullptr;
  CUdeviceptr buf = 0;
  GT_CU(cuMemAlloc(&buf, 64));
  scratch = reinterpret_cast<void*>(buf);
  fault(kind, stream, scratch, scratch);
  GT_CU(cuStreamSynchronize(reinterpret_cast<CUstream>(stream)));
}

std::unique_ptr<Executable> wrap_with_fault(const FaultPlan& plan, std::unique_ptr<Executable> exe, int at) {
  if (plan.step != "verify" && plan.step != "timing") return exe;
  if (plan.candidate != "*" && plan.candidate != exe->candidate().str()) return exe;
  return std::make_unique<FaultyExecutable>(plan.kind, std::move(exe), at);
}

}  // namespace gemmtune
