#pragma once
// Placement probe for the "gpc" tile order (src/backends/sm90/sm90_cluster_order.cpp): every CTA writes the SM it
// runs on (%smid) to out[blockIdx.x], then holds its SM for `hold` clocks so that a grid sized like a persistent
// kernel's is resident all at once, as the kernel's would be.
namespace gt_sm90 {

__device__ __forceinline__ void smid_probe(int* out, long long hold) {
  if (threadIdx.x == 0) {
    unsigned s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    out[blockIdx.x] = static_cast<int>(s);
  }
  const long long t0 = clock64();
  while (clock64() - t0 < hold) {
  }
}

}  // namespace gt_sm90
