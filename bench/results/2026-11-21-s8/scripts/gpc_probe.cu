// Session-8 experiment tool, kept with the call that ran it; the library's probe is
// src/backends/sm90/sm90_cluster_order.cpp.
// gpc_probe: which SMs share a GPC, learned from thread-block clusters (a cluster always runs inside one GPC).
// Launches clusters of several sizes that fill the GPU, records %smid per CTA and joins the SMs that ever shared a
// cluster (union-find). Prints one line per SM: "smid gpc" (gpc = a dense group index), then the groups, then where
// a persistent grid of clusters of 2 (and of 1) lands (blockIdx -> smid), for the tile-order experiments.
// Build: nvcc -arch=sm_90a -O2 -o gpc_probe gpc_probe.cu      Run: ./gpc_probe > gpc_map.txt
#include <cuda_runtime.h>
#include <cstdio>
#include <map>
#include <numeric>
#include <vector>

__global__ void record_smid(int* out) {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  if (threadIdx.x == 0) out[blockIdx.x] = static_cast<int>(s);
  // Hold the SM a little so that every CTA of the grid is resident at once.
  long long t0 = clock64();
  while (clock64() - t0 < 2000000) {
  }
}

static int find(std::vector<int>& p, int x) { return p[x] == x ? x : p[x] = find(p, p[x]); }

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

static int launch(int cluster, int clusters, std::vector<int>& smid) {
  int* d = nullptr;
  const int n = cluster * clusters;
  CK(cudaMalloc(&d, n * sizeof(int)));
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(n);
  cfg.blockDim = dim3(128);
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cluster;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  CK(cudaLaunchKernelEx(&cfg, record_smid, d));
  CK(cudaDeviceSynchronize());
  smid.resize(n);
  CK(cudaMemcpy(smid.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost));
  CK(cudaFree(d));
  return 0;
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CK(cudaFuncSetAttribute(record_smid, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  // Large shared memory per CTA: one CTA per SM.
  CK(cudaFuncSetAttribute(record_smid, cudaFuncAttributeMaxDynamicSharedMemorySize, 0));
  std::vector<int> parent(sms);
  std::iota(parent.begin(), parent.end(), 0);
  for (int cluster : {16, 12, 10, 9, 8, 6, 4}) {
    for (int clusters = 1; clusters * cluster <= sms; ++clusters) {
      // Only counts that fit at once matter; a launch that does not fit still runs (in waves) and is still valid.
      std::vector<int> s;
      if (launch(cluster, clusters, s)) return 1;
      for (int c = 0; c < clusters; ++c)
        for (int i = 1; i < cluster; ++i) parent[find(parent, s[c * cluster + i])] = find(parent, s[c * cluster]);
    }
  }
  std::map<int, int> group_of_root;
  std::vector<int> gpc(sms);
  for (int s = 0; s < sms; ++s) {
    int r = find(parent, s);
    if (!group_of_root.count(r)) group_of_root[r] = static_cast<int>(group_of_root.size());
    gpc[s] = group_of_root[r];
  }
  printf("# smid gpc (%zu groups)\n", group_of_root.size());
  for (int s = 0; s < sms; ++s) printf("%d %d\n", s, gpc[s]);
  for (size_t g = 0; g < group_of_root.size(); ++g) {
    printf("# group %zu:", g);
    for (int s = 0; s < sms; ++s) if (gpc[s] == static_cast<int>(g)) printf(" %d", s);
    printf("\n");
  }
  for (int cluster : {2, 1}) {
    std::vector<int> s;
    if (launch(cluster, sms / cluster, s)) return 1;
    printf("# persistent grid, cluster %d: blockIdx -> smid (gpc)\n#", cluster);
    for (size_t b = 0; b < s.size(); ++b) printf(" %d(%d)", s[b], gpc[s[b]]);
    printf("\n");
  }
  return 0;
}
