#pragma once
// Resource usage of a compiled kernel: from the ptxas report in the NVRTC log, or from the CUBIN itself.
#include <string>
#include <vector>

#include "jit/jit.h"

namespace gemmtune::jit::detail {

// Fills registers, spill_bytes, smem_static, stack_bytes of `c` from the ptxas -v report for `kernel_name`.
// Leaves fields untouched when the report is missing.
void parse_ptxas(const std::string& log, const std::string& kernel_name, Cubin& c);

// Fallback: registers and stack frame from the CUBIN's .nv.info section (no spills or smem there).
void resources_from_elf(const std::vector<char>& image, const std::string& kernel_name, Cubin& c);

}  // namespace gemmtune::jit::detail
