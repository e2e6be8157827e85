#pragma once
// The pad backend ("pad"): pad-and-run. When A or B cannot be loaded by the fast kernels as it is (a pitch or batch
// stride not a multiple of 16 bytes, a base pointer below 16-byte alignment), each launch copies that operand into a
// packed, 16-byte pitched per-stream workspace (kernels/common/pad_copy.cuh) and runs another backend's candidate for
// the padded problem on the copy. It wraps the other registered backends' candidates, so every backend gains the
// path; the tuner times the copy with the GEMM, as Inductor's own padding decision does. Problems whose A and B are
// aligned get no pad candidates. Config: pad_config.h.
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/jit_backend.h"
#include "backends/pad/pad_config.h"
#include "gemmtune/problem.h"

namespace gemmtune {

// `inner`: the backends whose candidates it wraps (the registry's others; pad never asks the registry itself).
std::shared_ptr<Backend> make_pad_backend(std::vector<std::shared_ptr<Backend>> inner);

namespace pad {

// The copy kernel's JIT unit (kernels/common/pad_copy.cuh) for the device's architecture: specialised on the element
// and load widths only, so every candidate of every problem with the same widths shares one compile.
JitUnit copy_unit(const Copy& c, const DeviceInfo& dev);

// One short phrase on what pad does for the (resolved) problem, for `list`: e.g. "copies B (ldb=4095 (8190 bytes) is
// not a multiple of 16 bytes) into a 16-byte pitched workspace, then runs the aligned kernel"; else why it refuses.
std::string path(const ResolvedProblem& p);

}  // namespace pad

}  // namespace gemmtune
