#pragma once
// The triton backend's config: one canonical, parseable line, e.g.
//   tmpl=tma,bm=128,bn=256,bk=64,stages=3,warps=8,gm=8      (kernels/triton/matmul_tma_persistent.py)
//   tmpl=masked,bm=64,bn=128,bk=32,stages=4,warps=4,gm=8    (kernels/triton/matmul_masked.py)
// tmpl: the template (tma: persistent, A and B by TMA through device-side descriptors, 16-byte aligned operands only;
// masked: masked pointer loads, any alignment and pitch); bm, bn, bk: the block tile (powers of two, 16..256); stages:
// the software pipeline's depth (Triton's num_stages); warps: warps per program (num_warps: 4 or 8); gm: rows of
// tiles walked together (GROUP_M: the L2 swizzle).
// In layers: config (parse / print), rules (the one validity function of enumerate(), validate() and errors:
// problem_reason, config_reason), heuristics (enumerate_configs: a wave-quantization cost ranks a table of tiles like
// Inductor's mm configs), and the compile request (the kernel's arguments as the template declares them).
#include <string>
#include <utility>
#include <vector>

#include "gemmtune/device.h"
#include "gemmtune/problem.h"

namespace gemmtune::triton {

enum class Template { tma, masked };

struct Config {
  Template tmpl = Template::masked;
  int bm = 128, bn = 128, bk = 64;
  int stages = 3;
  int warps = 4;
  int gm = 8;

  std::string str() const;
  static Config parse(const std::string& s);  // throws gemmtune::Error naming the bad field
  bool operator==(const Config&) const = default;
};

// "" when the backend runs the problem at all, else "triton: <why>".
std::string problem_reason(const Problem& p, const DeviceInfo& dev);
// "" when the config is valid for the problem (problem_reason included), else "triton: <why>".
std::string config_reason(const Config& c, const Problem& p, const DeviceInfo& dev);
// Shared memory the config's pipeline needs (stages x the A and B tiles), bytes.
int smem_estimate(const Config& c, const Problem& p);
// Whether A and B can go through TMA (16-byte aligned bases, pitches and batch strides).
bool tma_ok(const Problem& p);
// Valid configs, best first (at most `limit`).
std::vector<Config> enumerate_configs(const Problem& p, const DeviceInfo& dev, size_t limit = 12);

// One argument of the kernel as Triton compiles it: name and Triton type ("*bf16", "i32", "i64", "fp32").
using Param = std::pair<std::string, std::string>;

// What the compile driver (kernels/triton/compile_driver.py) gets: the template's module and function, the JSON
// request, and the run-time parameters the launch passes, in order (the compiled kernel's must match).
struct Request {
  std::string module, kernel;
  std::string symbol;         // the compiled kernel's name: "gt_triton_<tmpl>_<16 hex digits of the request>"
  std::string json;           // canonical (sorted keys, no blanks): part of the cache key
  std::vector<Param> params;  // the non-constexpr arguments, in the kernel's order
  int num_warps = 4;
};
Request make_request(const Config& c, const Problem& p);

// Triton's spelling of a dtype in a signature ("bf16", "fp16", "fp32", "fp8e4nv", "fp8e5").
std::string triton_dtype(DType t);

}  // namespace gemmtune::triton
