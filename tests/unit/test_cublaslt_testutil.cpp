// The host helpers of the GPU tests (tests/gpu/gpu_test_util.h) checked on the CPU, so that a GPU failure is the
// kernel's and not the reference's.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "gpu/gpu_test_util.h"

namespace gemmtune {
namespace {

TEST(GpuTestUtil, F16ConversionRoundTripsEveryValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = test::f16_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(test::f16_to_float(test::float_to_f16(f))));
      continue;
    }
    EXPECT_EQ(test::float_to_f16(f), h) << h << " " << f;
  }
  EXPECT_EQ(test::float_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(test::float_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(test::float_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(test::float_to_f16(1e6f), 0x7c00);
  EXPECT_EQ(test::float_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie -> even
  EXPECT_EQ(test::float_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie -> even (up)
  EXPECT_EQ(test::float_to_f16(std::ldexp(1.0f, -24)), 0x0001);
}

TEST(GpuTestUtil, Bf16ConversionRoundTripsAndRoundsToEven) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = test::bf16_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(test::float_to_bf16(f), h);
  }
  EXPECT_EQ(test::float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // tie -> even
  EXPECT_EQ(test::float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie -> even (up)
  EXPECT_TRUE(std::isnan(test::bf16_to_float(0xFFFF)));
  EXPECT_TRUE(std::isnan(test::f16_to_float(0xFFFF)));
}

// The same logical matrices stored in every layout, padded and batched, give the same reference D; a hand-computed
// entry checks the arithmetic itself.
TEST(GpuTestUtil, ReferenceIsLayoutInvariant) {
  const int64_t M = 5, N = 7, K = 3, B = 2;
  std::mt19937_64 rng(1);
  std::normal_distribution<float> dist;
  std::vector<double> A(B * M * K), Bm(B * K * N), C(B * M * N);
  for (auto& x : A) x = test::bf16_to_float(test::float_to_bf16(dist(rng)));
  for (auto& x : Bm) x = test::bf16_to_float(test::float_to_bf16(dist(rng)));
  for (auto& x : C) x = test::bf16_to_float(test::float_to_bf16(dist(rng)));
  std::vector<double> first;
  for (int li = 0; li < 8; ++li) {
    Problem p;
    p.m = M, p.n = N, p.k = K, p.batch = B, p.alpha = 2.0f, p.beta = 0.5f;
    p.a = {DType::bf16, li & 1 ? Layout::col : Layout::row, 0, -1};
    p.b = {DType::bf16, li & 2 ? Layout::col : Layout::row, 0, -1};
    p.c = {DType::bf16, li & 4 ? Layout::col : Layout::row, 0, -1};
    p.d = p.c;
    p.a.ld = (p.a.layout == Layout::row ? K : M) + 3;  // padded
    p.a.batch_stride = p.a.ld * (p.a.layout == Layout::row ? M : K) + 5;
    p.resolve();
    std::vector<uint8_t> a(test::span_bytes(p, Which::A), 0xFF), b(test::span_bytes(p, Which::B), 0xFF),
        c(test::span_bytes(p, Which::C), 0xFF);
    for (int64_t bi = 0; bi < B; ++bi) {
      for (int64_t i = 0; i < M; ++i)
        for (int64_t k = 0; k < K; ++k)
          test::store_elem(DType::bf16, a.data(), test::elem_offset(p.a, bi, i, k), A[(bi * M + i) * K + k]);
      for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < N; ++j)
          test::store_elem(DType::bf16, b.data(), test::elem_offset(p.b, bi, k, j), Bm[(bi * K + k) * N + j]);
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j)
          test::store_elem(DType::bf16, c.data(), test::elem_offset(p.c, bi, i, j), C[(bi * M + i) * N + j]);
    }
    const auto ref = test::reference_d(p, a, b, c);
    if (first.empty()) {
      first = ref;
      const int64_t bi = 1, i = 4, j = 6;
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += A[(bi * M + i) * K + k] * Bm[(bi * K + k) * N + j];
      EXPECT_DOUBLE_EQ(ref[(bi * M + i) * N + j], 2.0 * acc + 0.5 * C[(bi * M + i) * N + j]);
    } else {
      EXPECT_EQ(ref, first) << "layout combo " << li;
    }
    // D stored from the reference: error 0, nothing written outside; one poisoned element makes the error NaN.
    std::vector<uint8_t> d(test::span_bytes(p, Which::D), 0xFF);
    for (int64_t bi = 0; bi < B; ++bi)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j)
          test::store_elem(p.d.dtype, d.data(),
                           test::elem_offset(p.d, bi, i, j), ref[(bi * M + i) * N + j]);
    EXPECT_LT(test::normalized_error(p, d, ref), 1e-2);
    EXPECT_EQ(test::written_outside(p, d), 0);
    std::vector<uint8_t> d2 = d;
    d2[test::elem_offset(p.d, 1, 2, 3) * 2] = 0xFF;
    d2[test::elem_offset(p.d, 1, 2, 3) * 2 + 1] = 0xFF;
    EXPECT_TRUE(std::isnan(test::normalized_error(p, d2, ref)));
  }
}

}  // namespace
}  // namespace gemmtune
