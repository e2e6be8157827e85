#include "backends/sm90/sm90_cluster_order.h"
#include "backends/sm90/sm90_plan.h"

#include <cuda.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <numeric>
#include <string>
#include <tuple>

#include "core/check.h"
#include "cuda/driver.h"
#include "cuda/memory.h"
#include "gemmtune/errors.h"
#include "jit/jit.h"

namespace gemmtune::sm90 {

std::vector<int> group_sms(int sms, const std::vector<std::vector<int>>& clusters) {
  std::vector<int> parent(static_cast<size_t>(std::max(sms, 0)));
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (const auto& c : clusters) {
    int first = -1;
    for (int s : c) {
      if (s < 0 || s >= sms) continue;  // a bad reading joins nothing
      if (first < 0)
        first = s;
      else
        parent[find(s)] = find(first);
    }
  }
  std::map<int, int> id;  // root -> dense group id, in order of first SM
  std::vector<int> group(parent.size());
  for (int s = 0; s < sms; ++s) {
    const int r = find(s);
    group[s] = id.emplace(r, static_cast<int>(id.size())).first->second;
  }
  return group;
}

std::vector<int> gpc_major_order(const std::vector<int>& placement, const std::vector<int>& group) {
  const int n = static_cast<int>(placement.size());
  const int groups = group.empty() ? 0 : *std::max_element(group.begin(), group.end()) + 1;
  auto group_of = [&](int i) {
    const int s = placement[i];
    return s >= 0 && s < static_cast<int>(group.size()) ? group[s] : groups + std::max(s, 0);
  };
  std::vector<int> by(n);
  std::iota(by.begin(), by.end(), 0);
  std::stable_sort(by.begin(), by.end(), [&](int a, int b) { return group_of(a) < group_of(b); });
  std::vector<int> order(n);
  for (int pos = 0; pos < n; ++pos) order[by[pos]] = pos;
  return order;
}

namespace {

// Probe launches change the probe function's attributes (shared memory, cluster size): one at a time.
std::mutex& probe_mutex() {
  static std::mutex mu;
  return mu;
}

CUfunction probe_kernel() {  // probe_mutex() held
  static std::shared_ptr<const jit::Cubin> cubin;
  if (!cubin)
    cubin = jit::compile(
        "#include \"sm90/sm90_smid_probe.cuh\"\n"
        "extern \"C\" __global__ void gt_sm90_smid_probe(int* out, long long hold) {\n"
        "  gt_sm90::smid_probe(out, hold);\n}\n",
        "gt_sm90_smid_probe", {}, "sm90 placement probe");
  return jit::load(*cubin);  // per context
}

// One launch of `clusters` clusters of `cs` CTAs: the SM of every CTA in blockIdx order (-1 where none was written).
// The launch's own result is returned in *launch (a cluster shape the device refuses is not an error here); errors
// after a successful launch throw.
// `out` holds at least cs * clusters ints.
std::vector<int> launch_probe(CUfunction f, cuda::DeviceBuffer& out, int cs, int clusters, int threads, int smem,
                              long long hold, CUresult* launch) {
  const int n = cs * clusters;
  std::vector<int> s(static_cast<size_t>(n), -1);
  out.upload(s.data(), s.size() * sizeof(int));
  void* ptr = out.get();
  void* args[2] = {&ptr, &hold};
  CUlaunchAttribute attr;
  const CUlaunchConfig lc = cluster_launch(attr, static_cast<unsigned>(n), cs, static_cast<unsigned>(threads), smem);
  // Whatever this process still has running would hold SMs and move the grid: measure an idle device.
  GT_CU(cuCtxSynchronize());
  *launch = cuda::cu().cuLaunchKernelEx(&lc, f, args, nullptr);
  if (*launch != CUDA_SUCCESS) return {};
  GT_CU(cuCtxSynchronize());
  out.download(s.data(), s.size() * sizeof(int));
  return s;
}

int current_device(int* sms) {
  cuda::ensure_context();
  CUdevice dev;
  GT_CU(cuCtxGetDevice(&dev));
  GT_CU(cuDeviceGetAttribute(sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  return static_cast<int>(dev);
}

}  // namespace

const std::vector<int>& device_sm_groups() {
  int sms = 0;
  const int dev = current_device(&sms);
  std::lock_guard<std::mutex> lock(probe_mutex());
  static std::map<int, std::vector<int>> cache;
  if (auto it = cache.find(dev); it != cache.end()) return it->second;
  const CUfunction f = probe_kernel();
  GT_CU(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 0));
  // Cluster sizes above 8 are "non-portable": allowed on the H100/H200; where the attribute is refused, 4-8 only.
  const bool large =
      cuda::cu().cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1) == CUDA_SUCCESS;
  // Every cluster count from 1 to a full GPU, for each size: the block scheduler places different counts
  // differently, and each cluster seen joins its SMs (~120 short launches, tens of ms once per device). A size the
  // device refuses (a MIG slice, a smaller part) is skipped; with none left every SM is its own group and the gpc
  // order degenerates to an SM-ordered one, still a valid permutation.
  std::vector<std::vector<int>> seen;
  cuda::DeviceBuffer out(static_cast<size_t>(sms) * sizeof(int));
  for (int cs : {16, 12, 10, 9, 8, 6, 4}) {
    if (cs > 8 && !large) continue;
    for (int clusters = 1; clusters * cs <= sms; ++clusters) {
      CUresult r = CUDA_SUCCESS;
      const std::vector<int> s = launch_probe(f, out, cs, clusters, 128, 0, 20000, &r);
      if (r != CUDA_SUCCESS) break;
      for (int c = 0; c < clusters; ++c) seen.emplace_back(s.begin() + c * cs, s.begin() + (c + 1) * cs);
    }
  }
  return cache.emplace(dev, group_sms(sms, seen)).first->second;
}

std::vector<int> probe_placement(int cs, int clusters, int smem) {
  GT_REQUIRE(cs >= 1 && clusters >= 1, "sm90: probe_placement needs at least one cluster of at least one CTA");
  int sms = 0;
  const int dev = current_device(&sms);
  std::lock_guard<std::mutex> lock(probe_mutex());
  static std::map<std::tuple<int, int, int, int>, std::vector<int>> cache;
  const auto key = std::make_tuple(dev, cs, clusters, smem);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const CUfunction f = probe_kernel();
  GT_CU(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem));
  // ~1 ms per CTA: the whole grid is resident at once, as a persistent kernel's is.
  CUresult r = CUDA_SUCCESS;
  cuda::DeviceBuffer out(static_cast<size_t>(cs) * clusters * sizeof(int));
  const std::vector<int> s = launch_probe(f, out, cs, clusters, 384, smem, 2000000, &r);
  if (r != CUDA_SUCCESS)
    GT_THROW("sm90: placement probe launch (" + std::to_string(clusters) + " clusters of " + std::to_string(cs) +
             " CTAs, " + std::to_string(smem) + " bytes of shared memory) failed: " + cuda::error_string(r));
  std::vector<int> first(static_cast<size_t>(clusters));
  for (int c = 0; c < clusters; ++c) first[c] = s[static_cast<size_t>(c) * cs];
  return cache.emplace(key, first).first->second;
}

}  // namespace gemmtune::sm90
