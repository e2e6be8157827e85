#pragma once
// Device-code generation for epilogue chains (kernels/epilogue/epilogue_ops.cuh) and the host mirrors of its
// parameter structs. Pure strings: no GPU needed (the sources compile without one).
#include <string>

#include "gemmtune/problem.h"

namespace gemmtune::epi {

// Element type code of the kernels: 0 = bf16, 1 = f16, 2 = f32. Throws gemmtune::Error for fp8.
int dtype_code(DType t);

// The chain's C++ type, e.g. "gemmtune_epi::Epi<gemmtune_epi::Ops<gemmtune_epi::BiasCol<0>, ...>, ...>".
// Valid for any problem whose check_epilogue() passes (the empty chain included).
std::string chain_type(const Problem& p);

// Host mirror of gemmtune_epi::EpiParams (same members, same order: the kernel argument's layout).
struct EpiParams {
  const void* bias = nullptr;
  const void* residual = nullptr;
  const void* row_scale = nullptr;
  const void* col_scale = nullptr;
  long long res_ld = 0;
  long long res_bs = 0;
  int res_row = 1;
  long long glu_half = 0;
  long long batch = 0;
};
// From the problem (residual geometry = D's, glu_half = N/2) and the call's pointers. Throws gemmtune::Error when
// the chain needs a pointer that is null.
EpiParams make_params(const Problem& p, const GemmArgs& args);
// True when every operand pointer of `e` is aligned to `elems` of its own dtype (a kernel reading one element, or a
// pair of them, at a time).
bool operands_aligned(const Problem& p, const EpiParams& e, int elems = 1);

// Host mirror of gemmtune_epi::EwParams: the separate elementwise epilogue kernel.
struct EwParams {
  const void* in = nullptr;  // the GEMM's output, M x N (alpha/beta applied), D's dtype, layout `in_row`
  long long in_ld = 0, in_bs = 0;
  int in_row = 1;
  void* out = nullptr;  // D
  long long out_ld = 0, out_bs = 0;
  int out_row = 1;
  long long m = 0, n_out = 0, batch = 1;
};

// One NVRTC translation unit: the elementwise kernel `kernel_name` for this problem's chain, reading an intermediate
// of dtype `in` (launch: 1-D grid, 256 threads, args (EwParams, EpiParams)).
std::string elementwise_source(const Problem& p, DType in, const std::string& kernel_name);

}  // namespace gemmtune::epi
