// Epilogues on the GPU: every op and a few chains, D row- and column-major, ragged shapes and batches, through the
// cuBLASLt backend's fused (epi=fused) and separate (epi=separate: GEMM + JIT elementwise kernel) paths, against the
// double-precision CPU reference; and the tuner's GPU reference (reference_gemm) against the same CPU reference.
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cublaslt/cublaslt_backend.h"
#include "cuda/driver.h"
#include "cuda/memory.h"
#include "gemmtune/errors.h"
#include "gpu_test_util.h"
#include "tuner/reference.h"

namespace gemmtune {
namespace {

constexpr double kTolerance = 1e-2;

const char* const kChains[] = {
    "bias",          "bias_row",          "relu",          "gelu_tanh",          "gelu_erf",
    "silu",          "sigmoid",           "row_scale",     "col_scale",          "residual",
    "bias,relu",     "bias,gelu_tanh",    "bias_row,relu", "bias,residual",      "silu_glu",
    "gelu_tanh_glu", "silu_glu:interleave16", "bias,silu_glu,residual", "row_scale,col_scale,gelu_erf",
    "bias:f32,gelu_tanh", "silu_glu,col_scale:f32,residual:f32"};

struct Shape {
  int64_t m, n, k, batch;
};
const Shape kShapes[] = {{1, 32, 8, 1}, {37, 96, 72, 1}, {130, 160, 40, 3}};

Problem make(const Shape& s, const std::string& chain, Layout ld, DType out) {
  Problem p;
  p.m = s.m, p.n = s.n, p.k = s.k, p.batch = s.batch;
  p.a = {DType::bf16, Layout::row, 0, -1};
  p.b = {DType::bf16, Layout::col, 0, -1};
  p.c = {out, ld, 0, -1};
  p.d = {out, ld, 0, -1};
  p.epilogue = parse_epilogue(chain);
  p.resolve();
  return p;
}

struct Device {
  cuda::DeviceBuffer a, b, d, bias, residual, row_scale, col_scale;
};

cuda::DeviceBuffer upload(const std::vector<uint8_t>& v) {
  if (v.empty()) return {};
  cuda::DeviceBuffer buf(v.size());
  buf.upload(v.data(), v.size());
  return buf;
}

class EpilogueGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu_available()) GTEST_SKIP() << "no GPU";
    cuda::ensure_context();
  }
};

// Runs every cuBLASLt candidate mode for the problem (fused when the chain maps, separate always); "" when all match.
std::string check_cublaslt(const Problem& p, std::mt19937_64& rng, int* ran_fused) {
  auto be = make_cublaslt_backend();
  const DeviceInfo& dev = current_device();
  if (std::string why = be->supports(resolve(p), dev); !why.empty()) return "supports: " + why;
  const auto a = test::random_operand(p, Which::A, rng), b = test::random_operand(p, Which::B, rng);
  const test::EpilogueData e = test::random_epilogue(p, rng);
  const std::vector<double> ref = test::apply_epilogue(p, test::reference_d(p, a, b, {}), e);
  Device dv;
  dv.a = upload(a), dv.b = upload(b);
  dv.bias = upload(e.bias), dv.residual = upload(e.residual), dv.row_scale = upload(e.row_scale);
  dv.col_scale = upload(e.col_scale);
  dv.d = cuda::DeviceBuffer(test::span_bytes(p, Which::D));
  std::ostringstream errs;
  for (const char* mode : {"fused", "separate"}) {
    const Candidate cand{"cublaslt", std::string("default,epi=") + mode};
    const std::string why = be->validate(resolve(p), cand, dev);
    if (!why.empty()) {
      if (std::string(mode) == "separate") errs << "separate rejected: " << why << "; ";
      continue;  // fused: the chain has no cuBLASLt epilogue
    }
    if (std::string(mode) == "fused") ++*ran_fused;
    const std::vector<uint8_t> poison = test::poisoned_operand(p, Which::D);
    dv.d.upload(poison.data(), poison.size());
    try {
      CompileResult cr = be->compile(resolve(p), cand, dev);
      auto exe = be->load(resolve(p), cand, cr);
      GemmArgs args{dv.a.get(), dv.b.get(), nullptr, dv.d.get()};
      args.bias = dv.bias.get(), args.residual = dv.residual.get(), args.row_scale = dv.row_scale.get();
      args.col_scale = dv.col_scale.get();
      cuda::StreamOwner stream;
      exe->launch(args, stream.get());
      exe->launch(args, stream.get());
      stream.sync();
    } catch (const Error& ex) {
      errs << mode << " threw: " << ex.what() << "; ";
      continue;
    }
    std::vector<uint8_t> d(poison.size());
    dv.d.download(d.data(), d.size());
    const double err = test::normalized_error(p, d, ref);
    if (!(err <= kTolerance)) errs << mode << ": normalized error " << err << "; ";
    if (int64_t n = test::written_outside(p, d)) errs << mode << ": " << n << " bytes written outside D; ";
  }
  return errs.str();
}

TEST_F(EpilogueGpu, CublasLtFusedAndSeparateMatchReference) {
  std::mt19937_64 rng(std::random_device{}());
  int fused = 0;
  for (const char* chain : kChains)
    for (Layout ld : {Layout::row, Layout::col})
      for (DType out : {DType::bf16, DType::f32})
        for (const Shape& s : kShapes) {
          const Problem p = make(s, chain, ld, out);
          ASSERT_EQ(p.check(), "") << p.str();
          EXPECT_EQ(check_cublaslt(p, rng, &fused), "") << p.str();
        }
  EXPECT_GT(fused, 0) << "no chain ran through cuBLASLt's fused epilogue";
}

TEST_F(EpilogueGpu, EnumerateTagsEveryCandidate) {
  auto be = make_cublaslt_backend();
  const Problem fusable = make({256, 512, 128, 1}, "bias,gelu_tanh", Layout::row, DType::bf16);
  const auto fc = be->enumerate(resolve(fusable), current_device());
  ASSERT_FALSE(fc.empty());
  EXPECT_EQ(fc.front().config, "default,epi=fused");
  EXPECT_EQ(fc.back().config, "default,epi=separate");  // the unfused baseline is always a candidate
  const Problem glu = make({256, 512, 128, 1}, "silu_glu", Layout::row, DType::bf16);
  for (const Candidate& c : be->enumerate(resolve(glu), current_device()))
    EXPECT_NE(c.config.find(",epi=separate"), std::string::npos) << c.config;
}

// The tuner's GPU reference (fp32, JIT) against the double CPU reference, epilogue included.
TEST_F(EpilogueGpu, TunerReferenceMatchesCpuReference) {
  std::mt19937_64 rng(std::random_device{}());
  for (const char* chain : kChains)
    for (Layout ld : {Layout::row, Layout::col}) {
      const Problem p = make({37, 96, 72, 2}, chain, ld, DType::f32);
      const auto a = test::random_operand(p, Which::A, rng), b = test::random_operand(p, Which::B, rng);
      const test::EpilogueData e = test::random_epilogue(p, rng);
      const std::vector<double> want = test::apply_epilogue(p, test::reference_d(p, a, b, {}), e);
      Device dv;
      dv.a = upload(a), dv.b = upload(b);
      dv.bias = upload(e.bias), dv.residual = upload(e.residual), dv.row_scale = upload(e.row_scale);
      dv.col_scale = upload(e.col_scale);
      GemmArgs args{dv.a.get(), dv.b.get(), nullptr, nullptr};
      args.bias = dv.bias.get(), args.residual = dv.residual.get(), args.row_scale = dv.row_scale.get();
      args.col_scale = dv.col_scale.get();
      cuda::DeviceBuffer ref(want.size() * sizeof(float));
      cuda::StreamOwner stream;
      reference_gemm(p, args, static_cast<float*>(ref.get()), stream.get());
      stream.sync();
      std::vector<float> got(want.size());
      ref.download(got.data(), got.size() * sizeof(float));
      double num = 0, den = 0;
      for (size_t i = 0; i < want.size(); ++i) num += (got[i] - want[i]) * (got[i] - want[i]), den += want[i] * want[i];
      EXPECT_LE(std::sqrt(num / den), 1e-5) << chain << " " << p.str();
    }
}

}  // namespace
}  // namespace gemmtune
