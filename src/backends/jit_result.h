#pragma once
// The CompileResult of a JIT-compiled kernel (sm90, gemv, cuBLASLt's separate epilogue): the ptxas report and log of
// the kernel cache's cubin, which load() gets back as the artifact. compile_ms is the caller's to set.
#include <memory>

#include "backends/backend.h"
#include "jit/jit.h"

namespace gemmtune {

inline CompileResult jit_compile_result(const std::shared_ptr<const jit::Cubin>& cubin, int dynamic_smem = 0) {
  CompileResult r;
  r.compiled = true;
  r.cache_hit = cubin->cache_hit;
  r.registers = cubin->registers;
  r.spill_bytes = cubin->spill_bytes;
  r.smem_bytes = cubin->smem_static + dynamic_smem;
  r.log = cubin->log;
  r.artifact = std::static_pointer_cast<const void>(cubin);
  return r;
}

}  // namespace gemmtune
