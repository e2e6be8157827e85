#pragma once
// The "gpc" static tile order (Config tiles=gpc, kernels/sm90/sm90_tile_stream.cuh): cluster ids handed out GPC by
// GPC, so that the clusters of one GPC take consecutive tiles, which share an operand; the L2 request coalescer then
// merges their identical reads (docs/PERFORMANCE.md). The kernel takes its cluster id from a permutation table
// indexed by blockIdx.x / cluster size, so any table is correct and the placement it assumes only decides the speed.
#include <vector>

namespace gemmtune::sm90 {

// SMs grouped by the clusters they ran in together (a cluster runs inside one GPC): `clusters` lists the SM ids of
// each observed cluster; returns a group id in [0, groups) for each SM in [0, sms) (SMs never seen share nothing:
// each gets its own group). Pure; union-find.
std::vector<int> group_sms(int sms, const std::vector<std::vector<int>>& clusters);

// The permutation for a grid whose cluster i runs on SM `placement[i]` (its first CTA): clusters sorted by (group of
// that SM, i); order[i] = the sorted position of cluster i. SMs outside `group` count as their own group. Pure.
std::vector<int> gpc_major_order(const std::vector<int>& placement, const std::vector<int>& group);

// On the current context's device (probe launches, cached per device): the SM groups, from clusters of 4-16 CTAs.
const std::vector<int>& device_sm_groups();

// On the current context's device (cached): where a grid of `clusters` clusters of `cs` CTAs of 384 threads with
// `smem` bytes of dynamic shared memory lands: the SM of each cluster's first CTA, in blockIdx order.
std::vector<int> probe_placement(int cs, int clusters, int smem);

}  // namespace gemmtune::sm90
