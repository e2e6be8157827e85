#pragma once
// The pad backend's config and the facts it derives from a problem (pure host code, no GPU):
//   a+b;sm90:tile=128x256x64,...      copy A and B into aligned workspaces, run that sm90 candidate on the copies
//   b;cublaslt:default                copy B only, run cuBLASLt's default on the problem with the copy of B
// The part before ';' names the copied operands ("a", "b" or "a+b"); the rest is the inner candidate as its own
// backend prints it ("backend:config"), on the padded problem (padded_problem()).
//
// An operand is aligned when its pitch, its batch stride (batch > 1) and its base pointer (Operand::align) are all
// multiples of 16 bytes: what TMA and cuBLASLt's fastest algorithms need. Its padded form is packed, with its pitch
// rounded up to a whole number of 16-byte chunks, 16-byte aligned.
#include <cstdint>
#include <string>

#include "gemmtune/candidate.h"
#include "gemmtune/device.h"
#include "gemmtune/problem.h"

namespace gemmtune::pad {

struct Config {
  bool a = false, b = false;  // the copied operands (at least one)
  Candidate inner;            // what runs on the padded problem; never another pad candidate

  // "a;<inner>", "b;<inner>" or "a+b;<inner>".
  std::string str() const;
  // Throws gemmtune::Error naming the bad part. Accepts the operands in either order ("b+a"); str() is canonical.
  static Config parse(const std::string& s);
  bool operator==(const Config&) const = default;
};

// `which` is A or B throughout.
bool aligned(const Problem& p, Which which);
// "" when the operand is aligned, else why not, e.g. "ldb=4095 (8190 bytes) is not a multiple of 16 bytes".
std::string misalignment(const Problem& p, Which which);

// `p` (resolved) with the copied operands replaced by their packed, 16-byte pitched, 16-byte aligned copies.
Problem padded_problem(const Problem& p, bool a, bool b);

// The copy of one operand: its source as lines of contiguous elements (gt_pad::PadCopyParams) and the packed copy.
struct Copy {
  Which which = Which::A;
  int elem_bytes = 2;
  int load_bytes = 2;  // the widest load that every source line start allows: 2, 4, 8 or 16 (>= elem_bytes)
  int64_t lines = 0, inner = 0, chunks = 0;  // chunks: 16-byte chunks of a packed line
  int64_t src_ld = 0, src_bs = 0, dst_ld = 0, dst_bs = 0;
  int64_t batch = 1;  // matrices copied: 1 for a broadcast operand (batch stride 0) or batch 1

  int64_t bytes() const { return dst_ld * lines * batch * elem_bytes; }  // of the packed copy
};
Copy copy_of(const Problem& p, Which which);

// The launch of one copy (kernels/common/pad_copy.cuh): 2^lane_bits threads a line, the grid's x, y, z.
struct CopyLaunch {
  int lane_bits = 0;
  unsigned grid[3] = {1, 1, 1};
};
CopyLaunch copy_launch(const Copy& c);

// Bytes of the per-stream workspace of a config's copies, each copy starting at a multiple of 256 bytes; the offset of
// B's copy within it.
int64_t workspace_bytes(const Problem& p, bool a, bool b);
int64_t b_offset(const Problem& p, bool a);

// "" when pad can run the problem (A or B is unaligned and can be copied), else "pad: <why>".
std::string problem_reason(const Problem& p, const DeviceInfo& dev);

}  // namespace gemmtune::pad
