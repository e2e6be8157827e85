#pragma once
// The plan of one call of a binding's GEMM op, from its tensors' metadata: the rules that turn tensors into a Problem
// (which tensors make which operand, the scaling their scales' shapes say, the epilogue chain's tensors, the output
// shape, which inputs must be copied to be runnable), kept here once so that no binding re-derives them.
//
// The call (JSON, gt_call_plan in gemmtune/c_api.h):
//   {"op": "gemmtune.mm" (named in every message), "kind": one of kCallKinds,
//    "tensors": {name: {"shape": [..], "strides": [..] (elements), "dtype": "bf16" | "torch.bfloat16" | ...,
//                       "align": bytes the data pointer is a multiple of (16 at most; 16 when left out)}},
//    "epilogue": a chain (gemmtune/epilogue.h), "alpha", "beta", "scaling": null | name, "fp8_accum": "exact"
//    (default) | "fast" (fp8 a and b: torch._scaled_mm's use_fast_accum), "out_dtype": null | dtype}
// Tensor names: a, b, out, c, bias, residual, row_scale, col_scale, scale_a, scale_b, scale_d, amax, offs (the
// cumulative row ends of a contiguous grouped call, the row counts of a masked one). A dtype is gemmtune's name or
// torch's spelling; messages repeat it as given.
//
// The answer: {"empty": true when the output has no element (nothing to launch), "out": {"shape", "strides",
// "dtype", "from": per dim the input dim it equals, [tensor name, dim], or half of, [name, dim, 2] (a traced graph
// keeps symbolic sizes through it)} (what to allocate), "out_direct" (a given out is D as it is), and unless empty:
// "problem" (the problem JSON), "str", "key" (Problem::key(): what a selection may be shared by), "scaling",
// "epilogue" (the chain with its tensors' dtypes), "copies": {name: {"shape", "strides"}} (inputs to copy into a
// fresh tensor of these strides before the launch), "unused": [names] (given tensors the launch passes as null)}.
// A call gemmtune refuses throws detail::InputError "<op>: <why>".
#include <nlohmann/json.hpp>

namespace gemmtune {

// mm, bmm, linear (x (..., K) @ weight (N, K)^T), scaled_mm (torch._scaled_mm's scales), gemm (2-D or 3-D a and b,
// out, c, every epilogue tensor, fp8 scales as gemmtune's flat vectors), grouped (torch._grouped_mm: contiguous or
// batched), grouped_masked, scaled_grouped (torch._scaled_grouped_mm).
inline constexpr const char* kCallKinds[] = {"mm", "bmm", "linear", "scaled_mm", "gemm", "grouped", "grouped_masked",
                                             "scaled_grouped"};

nlohmann::json plan_call(const nlohmann::json& call);

}  // namespace gemmtune
