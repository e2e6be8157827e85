#pragma once
// The problem classes of the kernel sweep (tests/sweep/sweep_main.cpp): every candidate any backend enumerates for
// each of these problems is compiled, verified against the reference and checked for writes outside D. Data only:
// a name, the problem, and what the class is there for. tests/unit/test_sweep_classes.cpp checks that the table
// stays valid and keeps covering what it must (pitch classes of every operand, layouts, odd sizes, K < 64, batches
// and broadcasts, every epilogue family, fp8 scalings, grouped problems with empty and 1-row groups): a class
// removed or changed so that a feature is no longer swept fails that test.
//
// Sizes are small (the sweep checks correctness, and it compiles and verifies thousands of kernels): the odd
// extents 4095 and 4097 appear in one dimension at a time, the others kept small.
#include <cstdint>
#include <string>
#include <vector>

#include "gemmtune/epilogue.h"
#include "gemmtune/problem.h"

namespace gemmtune::sweep {

struct SweepClass {
  std::string name;  // unique, [a-z0-9_]: what --filter matches and the tables show
  Problem problem;   // resolved
  std::string why;   // one line: what the class covers
};

namespace detail {

// A fluent wrapper over Problem so that the table below reads as data.
struct Spec {
  Problem p;

  Spec(int64_t m, int64_t n, int64_t k, DType in = DType::bf16, DType out = DType::bf16, Layout la = Layout::row,
       Layout lb = Layout::col)
      : p(Problem::make(m, n, k, in, out, la, lb)) {
    unresolve();
  }
  explicit Spec(Problem q) : p(std::move(q)) { unresolve(); }

  // Leading dimensions and batch strides back to "packed", so that done() packs them for the final layouts, batch
  // and epilogue (a GLU halves D's columns); ld() and stride() set explicit ones.
  void unresolve() {
    for (Which w : kOperands) op(w).ld = 0, op(w).batch_stride = -1;
  }

  Operand& op(Which w) { return const_cast<Operand&>(p.operand(w)); }
  // Leading dimensions in elements (0 = packed).
  Spec& ld(int64_t a, int64_t b, int64_t c, int64_t d) {
    op(Which::A).ld = a, op(Which::B).ld = b, op(Which::C).ld = c, op(Which::D).ld = d;
    return *this;
  }
  Spec& ld(Which w, int64_t v) { return op(w).ld = v, *this; }
  // Base-pointer alignment in bytes (Operand::align).
  Spec& align(int a, int b, int c, int d) {
    op(Which::A).align = a, op(Which::B).align = b, op(Which::C).align = c, op(Which::D).align = d;
    return *this;
  }
  Spec& align(Which w, int v) { return op(w).align = v, *this; }
  Spec& beta(float b, float alpha = 1.0f) { return p.beta = b, p.alpha = alpha, *this; }
  // D (and C, which must match it when read) column-major.
  Spec& d_col() {
    op(Which::C).layout = op(Which::D).layout = Layout::col;
    return *this;
  }
  Spec& c_dtype(DType t) { return op(Which::C).dtype = t, *this; }
  Spec& epi(const std::string& chain) { return p.epilogue = parse_epilogue(chain), *this; }
  Spec& batch(int64_t b) { return p.batch = b, *this; }
  // A batch stride in elements (0 broadcasts one matrix to every batch: A, B, C).
  Spec& stride(Which w, int64_t s) { return op(w).batch_stride = s, *this; }
  Spec& scaled(Scaling s) { return p.scaling = s, *this; }
  Spec& amax() { return p.amax = true, *this; }
  Spec& fast_accum() { return p.fp8_accum = Fp8Accum::fast, *this; }
  Spec& dtypes(DType a, DType b) {
    op(Which::A).dtype = a, op(Which::B).dtype = b;
    return *this;
  }
  Problem done() {
    p.resolve();
    return p;
  }
};

inline Problem grouped(Grouping g, int64_t groups, int64_t m, int64_t n, int64_t k, DType in = DType::bf16,
                       DType out = DType::bf16) {
  return Problem::make_grouped(g, groups, m, n, k, in, out);
}

}  // namespace detail

inline std::vector<SweepClass> sweep_classes() {
  using detail::grouped;
  using detail::Spec;
  constexpr DType bf16 = DType::bf16, f16 = DType::f16, f32 = DType::f32, e4m3 = DType::e4m3, e5m2 = DType::e5m2;
  constexpr Layout R = Layout::row, C = Layout::col;
  std::vector<SweepClass> t = {
      // ---- layouts of A and B: 16-byte pitches with an odd extent elsewhere, so that the TMA paths take them (odd
      // pitches are the subject of the pitch classes below) ----
      {"layout_rc", Spec(128, 256, 192).done(), "A row, B col (y = x W^T), aligned: the baseline"},
      {"layout_rr", Spec(127, 136, 64, bf16, bf16, R, R).done(), "A row, B row, odd M"},
      {"layout_cr", Spec(136, 120, 129, f16, f16, C, R).done(), "A col, B row, f16, odd K"},
      {"layout_cc", Spec(120, 127, 136, bf16, bf16, C, C).done(), "A col, B col, odd N (D pitch 2 bytes)"},
      {"d_col", Spec(96, 127, 128, bf16, bf16, R, C).d_col().done(), "col-major D, odd N"},
      {"d_col_beta_cr", Spec(129, 64, 72, f16, f16, C, R).d_col().beta(1.0f).done(),
       "col-major C and D with beta, A col, B row, odd M (A, C, D pitch 2 bytes)"},

      // ---- odd and extreme sizes ----
      {"m1_decode", Spec(1, 1024, 1024).done(), "M = 1 (decode, gemv)"},
      {"n1", Spec(256, 1, 256).done(), "N = 1: one output column (D pitch 2 bytes)"},
      {"k1", Spec(128, 128, 1).done(), "K = 1 (A and B pitch 2 bytes)"},
      {"mnk7", Spec(7, 7, 7).done(), "M = N = K = 7"},
      {"m4095", Spec(4095, 64, 64).done(), "M = 4095"},
      {"m4097_k40", Spec(4097, 72, 40).done(), "M = 4097 with K < 64"},
      {"n4095", Spec(33, 4095, 64).done(), "N = 4095: D pitch 2 bytes"},
      {"n4097_f32d", Spec(64, 4097, 96, bf16, f32).done(), "N = 4097, f32 D (4-byte pitch)"},
      {"k4095", Spec(64, 64, 4095).done(), "K = 4095: A and B pitch 2 bytes"},
      {"k4097", Spec(129, 127, 4097).done(), "K = 4097, odd M and N"},
      {"k8", Spec(128, 128, 8).done(), "K = 8 (< one MMA K-step of 16-bit inputs)"},
      {"k48_rr", Spec(100, 200, 48, bf16, bf16, R, R).done(), "K = 48 < 64, B row"},

      // ---- pitch classes and base-pointer alignment of every operand (beta reads C) ----
      {"pitch2", Spec(96, 80, 72).ld(73, 73, 81, 81).align(2, 2, 2, 2).beta(1.0f).done(),
       "A, B, C, D: odd leading dimensions (2-byte pitch), 2-byte aligned pointers"},
      {"pitch4", Spec(96, 80, 72, bf16, bf16, C, R).d_col().ld(98, 82, 98, 98).align(4, 4, 4, 4).beta(1.0f).done(),
       "A, B, C, D: 4-byte pitch and pointers (A col, B row, col-major C and D)"},
      {"pitch8", Spec(100, 120, 88).ld(92, 92, 124, 124).align(8, 8, 8, 8).beta(1.0f).done(),
       "A, B, C, D: 8-byte pitch and pointers"},
      {"pitch16_padded", Spec(128, 128, 128).ld(136, 136, 136, 136).beta(1.0f).done(),
       "A, B, C, D: 16-byte pitch with padding (gaps between rows that must stay untouched)"},
      {"pitch_mixed", Spec(120, 96, 100, f16, f16).ld(101, 104, 100, 98).align(2, 16, 8, 4).beta(0.5f, 2.0f).done(),
       "A 2-byte, B 16-byte, C 8-byte, D 4-byte pitch and alignment; alpha 2, beta 0.5"},
      {"pitch_f32_out", Spec(80, 64, 64, bf16, f32).ld(0, 0, 66, 66).align(16, 16, 8, 8).beta(1.0f).done(),
       "f32 C and D at an 8-byte pitch"},

      // ---- batches ----
      {"batch3", Spec(127, 64, 96).batch(3).done(), "3 packed batches, odd M"},
      {"batch4_bcast_b", Spec(64, 96, 128).batch(4).stride(Which::B, 0).done(), "4 batches sharing one B (batch stride 0)"},
      {"batch3_bcast_b_decode", Spec(4, 512, 256).batch(3).stride(Which::B, 0).done(),
       "3 decode batches (M = 4) sharing one B"},
      {"batch2_bcast_ac_padded",
       Spec(72, 64, 80).batch(2).stride(Which::A, 0).stride(Which::C, 0).stride(Which::D, 72 * 64 + 8).beta(1.0f).done(),
       "broadcast A and C, padded D batch stride"},

      // ---- epilogues ----
      {"epi_bias_gelu_tanh", Spec(128, 192, 64).epi("bias,gelu_tanh").done(), "bias (per column), gelu_tanh"},
      {"epi_bias_row_relu_dcol", Spec(127, 96, 64).d_col().epi("bias_row,relu").done(),
       "bias per row, relu, col-major D"},
      {"epi_gelu_erf_f32bias", Spec(96, 130, 80, f16, f16).epi("bias:f32,gelu").done(), "f32 bias, exact gelu"},
      {"epi_silu_scales", Spec(100, 64, 96).epi("row_scale,col_scale,silu").done(), "row and column scales, silu"},
      {"epi_sigmoid_residual", Spec(64, 136, 72).epi("sigmoid,residual").beta(1.0f, 0.5f).done(),
       "sigmoid, residual, beta C, alpha 0.5"},
      {"epi_silu_glu", Spec(96, 256, 128).epi("silu_glu").ld(Which::D, 136).done(),
       "SwiGLU (halves): D is M x N/2, on a padded pitch"},
      {"epi_gelu_glu_interleave", Spec(64, 256, 64).epi("bias,gelu_tanh_glu:interleave32,col_scale,residual").done(),
       "bias, gelu_tanh GLU interleaved by 32, col_scale and residual after it"},
      {"epi_sigmoid_glu_batch", Spec(33, 130, 64).batch(2).epi("glu").done(), "sigmoid GLU over 2 batches, N/2 odd"},

      // ---- fp8 ----
      {"fp8_e4m3_tensor_k200", Spec(128, 256, 200, e4m3, bf16).ld(208, 208, 0, 0).scaled(Scaling::tensor).done(),
       "e4m3, tensor scales, ragged K (not a multiple of 128) on 16-byte padded rows"},
      {"fp8_e4m3_tensor_k72_unaligned", Spec(64, 96, 72, e4m3, bf16).scaled(Scaling::tensor).fast_accum().done(),
       "e4m3, tensor scales, K = 72: 8-byte pitch of A and B (masked loads only: Triton, fp8_accum=fast)"},
      {"fp8_e5m2_row", Spec(96, 192, 320, e5m2, bf16).dtypes(e5m2, e4m3).scaled(Scaling::row).done(),
       "e5m2 A with e4m3 B, row scales, ragged K"},
      {"fp8_e4m3_block_ragged", Spec(100, 200, 336, e4m3, f16).scaled(Scaling::block).done(),
       "e4m3 block scales, ragged M, N and K blocks, f16 D"},
      {"fp8_e4m3_out_amax", Spec(128, 128, 192, e4m3, e4m3).scaled(Scaling::tensor).amax().done(),
       "e4m3 D with scale_d and amax, tensor scales"},
      {"fp8_block_out_amax", Spec(64, 256, 256, e4m3, e4m3).scaled(Scaling::block).amax().done(),
       "e4m3 D with amax, block scales"},
      {"fp8_weight_only_row", Spec(5, 384, 136, bf16, bf16).dtypes(bf16, e4m3).scaled(Scaling::row).done(),
       "bf16 A with e4m3 B (weight-only, skinny: M = 5), row scales"},
      {"fp8_e5m2_batch_tensor", Spec(64, 96, 96, e5m2, f32).batch(3).scaled(Scaling::tensor).done(),
       "e5m2, 3 batches, tensor scales, f32 D"},
      {"fp8_e4m3_row_fast_k200",
       Spec(128, 256, 200, e4m3, bf16).ld(208, 208, 0, 0).scaled(Scaling::row).fast_accum().done(),
       "e4m3, row scales, fp8_accum=fast (K accumulated in the tensor core), ragged K"},

      // ---- grouped (mixture-of-experts): the routings (tuner/routing.h) give empty and 1-row groups ----
      {"grouped_contig_g8_m10", grouped(Grouping::contiguous, 8, 10, 128, 128),
       "contiguous, 8 groups over 10 rows: 1-row and empty groups"},
      {"grouped_contig_g5_m12_epi", Spec(grouped(Grouping::contiguous, 5, 12, 192, 64)).epi("bias,silu").done(),
       "contiguous, 5 groups over 12 rows, bias and silu"},
      {"grouped_masked_g8_m3", grouped(Grouping::masked, 8, 3, 128, 96),
       "masked, 8 groups of at most 3 rows: 1-row and empty groups"},
      {"grouped_contig_fp8_row",
       Spec(grouped(Grouping::contiguous, 8, 9, 256, 208, e4m3, bf16)).scaled(Scaling::row).done(),
       "contiguous e4m3 row scales, 8 groups over 9 rows, ragged K"},
      {"grouped_contig_fp8_fast",
       Spec(grouped(Grouping::contiguous, 4, 40, 128, 256, e4m3, bf16)).scaled(Scaling::tensor).fast_accum().done(),
       "contiguous e4m3 tensor scales, fp8_accum=fast, 4 groups over 40 rows"},
      {"grouped_masked_fp8_block",
       Spec(grouped(Grouping::masked, 6, 4, 128, 256, e4m3, bf16)).scaled(Scaling::block).done(),
       "masked e4m3 block scales, 6 groups of at most 4 rows"},
  };
  for (auto& c : t) c.problem.resolve();
  return t;
}

}  // namespace gemmtune::sweep
