#pragma once
// The fused epilogue of a GEMM: what happens to v = alpha*A*B + beta*C before it is stored in D.
//
// A chain of ops applied in order to every fp32 value v at its (row, col). Written as a comma-separated list, each op
// optionally followed by ':'-separated parameters:
//
//   bias[:dtype]          v += bias[col]   one value per column (the y = x·Wᵀ + b case); also spelled bias_col
//   bias_row[:dtype]      v += bias[row]   one value per row (length M)
//   relu | gelu_tanh | gelu_erf (= gelu, PyTorch's default) | silu (= swish) | sigmoid      v = act(v)
//   <act>_glu[:halves | :interleave<B>]   gated linear unit: out = act(gate) * up, N_out = N / 2
//                         (swiglu = silu_glu, glu = sigmoid_glu). halves: gate = columns [0, N/2), up = [N/2, N).
//                         interleave<B>: blocks of B columns alternate gate, up, gate, up...: output block j
//                         (columns [jB, jB+B)) = act(columns [2jB, 2jB+B)) * columns [2jB+B, 2jB+2B).
//   row_scale[:dtype]     v *= row_scale[row]   (length M)
//   col_scale[:dtype]     v *= col_scale[col]   (length of the current columns: N before a GLU, N/2 after)
//   residual[:dtype][:layout]   v += R[row, col], R shaped like D (M x N_out, D's layout, ld and batch stride)
//
// Ops before a GLU act on the GEMM's M x N columns (both gate and up values, each at its own column); ops after it on
// D's M x N/2 columns. A bias or col_scale therefore has N elements before a GLU and N/2 after it. Vectors (bias,
// scales) are shared by all batches; the residual has one matrix per batch. An unspecified dtype (or residual
// layout) means D's. Each of bias/bias_row, row_scale, col_scale, residual appears at most once (one pointer each in
// GemmArgs), a GLU at most once, and the residual after the GLU (it is D-shaped). A GLU needs beta == 0.
//
// A chain has at most kMaxEpilogueOps ops: the operands allow five (a bias, row_scale, col_scale, residual and GLU)
// and real chains add an activation or two; a longer one is a mistake or an attack, whose code (one fused function
// per op) would take minutes and gigabytes to compile.
//
// Examples: "bias,gelu_tanh", "silu_glu", "swiglu:interleave64", "bias:f32,residual", "row_scale,col_scale,relu".
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gemmtune/types.h"

namespace gemmtune {

inline constexpr int kMaxEpilogueOps = 16;

enum class EpiOpKind : uint8_t { bias_col, bias_row, act, glu, row_scale, col_scale, residual };
enum class Activation : uint8_t { relu, gelu_tanh, gelu_erf, silu, sigmoid };
enum class GluLayout : uint8_t { halves, interleaved };

std::string_view activation_name(Activation a);  // "relu", "gelu_tanh", "gelu_erf", "silu", "sigmoid"

struct EpiOp {
  EpiOpKind kind = EpiOpKind::act;
  Activation act = Activation::relu;   // act: the function; glu: the gate's activation
  std::optional<DType> dtype;          // bias*, *_scale, residual: element type; unset = D's dtype
  std::optional<Layout> layout;        // residual only; unset = D's layout (the only one accepted)
  GluLayout glu = GluLayout::halves;   // glu only
  int64_t glu_block = 0;               // glu interleaved: block width in columns (>= 1)

  bool takes_vector() const;  // bias*, *_scale: reads a vector
  std::string key() const;    // canonical, e.g. "bias:f32", "silu_glu:interleave64", "gelu_tanh"
  bool operator==(const EpiOp&) const = default;
};

struct Epilogue {
  std::vector<EpiOp> ops;  // application order; empty = identity

  bool empty() const { return ops.empty(); }
  // "none" or the ops' canonical keys joined by ','. parse_epilogue(key()) == *this.
  std::string key() const;
  // The same chain with every unset dtype / residual layout filled in (what Problem::key() prints: canonical).
  Epilogue with_defaults(DType d_dtype, Layout d_layout) const;
  // Shape-independent validity: "" or why the chain is not valid (Problem::check() adds the shape checks).
  std::string check() const;

  const EpiOp* find(EpiOpKind k) const;  // first op of that kind, nullptr if none
  bool has(EpiOpKind k) const { return find(k) != nullptr; }
  bool has_glu() const { return has(EpiOpKind::glu); }
  int glu_index() const;  // index of the GLU in ops, -1 if none
  bool operator==(const Epilogue&) const = default;
};

// Parses "none" or a chain as documented above (case-insensitive, blanks ignored); throws gemmtune::Error naming the
// bad op on an unknown op or parameter. Structural rules (order, duplicates) are Epilogue::check()'s.
Epilogue parse_epilogue(const std::string& spec);

}  // namespace gemmtune
