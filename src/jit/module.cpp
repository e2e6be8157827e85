// Module loading: one cuModuleLoadData per (cubin key, context), kept for the life of the process.
#include <map>
#include <mutex>
#include <utility>

#include "core/check.h"
#include "cuda/driver.h"
#include "gemmtune/errors.h"
#include "jit/jit.h"

namespace gemmtune::jit {

namespace {
struct Loaded {
  CUmodule module = nullptr;
  CUfunction function = nullptr;
};
struct ModuleCache {
  std::mutex mutex;
  std::map<std::pair<std::string, CUcontext>, Loaded> modules;
};
ModuleCache& module_cache() {
  static ModuleCache* m = new ModuleCache;  // never destroyed: unloading at exit races with driver teardown
  return *m;
}
}  // namespace

CUfunction load(const Cubin& cubin) {
  GT_REQUIRE(!cubin.image.empty(), "jit::load: empty cubin for kernel '" + cubin.kernel_name + "'");
  const cuda::Driver& d = cuda::cu();
  CUcontext ctx = nullptr;
  GT_CU(cuCtxGetCurrent(&ctx));
  if (!ctx) {
    cuda::ensure_context();
    GT_CU(cuCtxGetCurrent(&ctx));
  }
  auto id = std::make_pair(cubin.key.empty() ? cubin.kernel_name : cubin.key, ctx);
  ModuleCache& mc = module_cache();
  {
    std::lock_guard<std::mutex> lock(mc.mutex);
    if (auto it = mc.modules.find(id); it != mc.modules.end()) return it->second.function;
  }
  // Load outside the lock (it can take milliseconds); a racing loader of the same key loses and unloads its copy.
  Loaded l;
  GT_CU(cuModuleLoadData(&l.module, cubin.image.data()));
  CUresult r = d.cuModuleGetFunction(&l.function, l.module, cubin.kernel_name.c_str());
  if (r != CUDA_SUCCESS) {
    d.cuModuleUnload(l.module);
    GT_THROW("jit::load: kernel '" + cubin.kernel_name + "' not found in its cubin (is it extern \"C\"?): " +
             cuda::error_string(r));
  }
  std::lock_guard<std::mutex> lock(mc.mutex);
  auto [it, inserted] = mc.modules.emplace(id, l);
  if (!inserted) d.cuModuleUnload(l.module);
  return it->second.function;
}

}  // namespace gemmtune::jit
