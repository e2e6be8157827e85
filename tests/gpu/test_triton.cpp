// triton backend on the GPU: the backend's own top candidates (and its best masked one) for A and B row/col, ragged
// and unaligned shapes (odd M/N/K, ld = K + 3, A and B at 2-byte aligned base pointers), each epilogue op, beta·C,
// batches (one broadcast B), a column-major D, fp8 (e4m3) with tensor and row scaling; every kernel launched twice
// on fresh random inputs with D poisoned, against the double-precision CPU reference (normalized error <= 1e-2, no
// byte outside D written). Then one end-to-end tune restricted to the triton backend. Skips without a GPU or triton.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/backend.h"
#include "backends/triton/triton_config.h"
#include "cuda/driver.h"
#include "cuda/memory.h"
#include "gemmtune/gemm.h"
#include "gemmtune/tuner.h"
#include "gpu_test_util.h"
#include "jit/thread_pool.h"

namespace gemmtune {
namespace {

namespace fs = std::filesystem;

constexpr double kTolerance = 1e-2;
constexpr size_t kTop = 3;  // the backend's best candidates per problem (plus its best masked one)

struct Case {
  Problem p;
  int64_t base_offset = 0;  // bytes A and B start past a 256-byte aligned allocation (2: a sliced view)
};

Problem make(int64_t m, int64_t n, int64_t k, Layout la, Layout lb, const char* chain = "", DType in = DType::bf16,
             DType out = DType::bf16, int64_t batch = 1) {
  Problem p = Problem::make(m, n, k, in, out, la, lb, batch);
  p.epilogue = parse_epilogue(chain);
  p.resolve();
  return p;
}

struct Job {
  size_t case_index;
  Candidate cand;
  CompileResult cr;
  std::string compile_error;
};

cuda::DeviceBuffer upload_at(const void* data, size_t bytes, int64_t offset) {
  if (bytes == 0) return {};
  cuda::DeviceBuffer buf(bytes + size_t(offset));
  std::vector<uint8_t> staged(bytes + size_t(offset), 0);
  std::memcpy(staged.data() + offset, data, bytes);
  buf.upload(staged.data(), staged.size());
  return buf;
}
cuda::DeviceBuffer upload(const std::vector<uint8_t>& v) { return upload_at(v.data(), v.size(), 0); }
cuda::DeviceBuffer upload(const std::vector<float>& v) { return upload_at(v.data(), v.size() * sizeof(float), 0); }

// "" or what is wrong with one compiled candidate on fresh random inputs.
std::string run_job(const Backend& be, const Case& cs, const Job& j, std::mt19937_64& rng) {
  const Problem& p = cs.p;
  if (!j.compile_error.empty()) return "compile: " + j.compile_error;
  auto exe = be.load(resolve(p), j.cand, j.cr);
  const auto a = test::random_operand(p, Which::A, rng), b = test::random_operand(p, Which::B, rng);
  std::vector<uint8_t> c;
  if (p.beta != 0.0f) c = test::random_operand(p, Which::C, rng);
  const test::EpilogueData e = test::random_epilogue(p, rng);
  const bool scaled = p.scaling != Scaling::none;
  const test::Scales s = scaled ? test::random_scales(p, rng) : test::Scales{};
  const std::vector<double> ref = test::apply_epilogue(
      p, scaled ? test::reference_scaled(p, a, b, c, s) : test::reference_d(p, a, b, c), e);
  auto da = upload_at(a.data(), a.size(), cs.base_offset), db = upload_at(b.data(), b.size(), cs.base_offset);
  auto dc = upload(c), bias = upload(e.bias), res = upload(e.residual), rs = upload(e.row_scale),
       cols = upload(e.col_scale), sa = upload(s.a), sb = upload(s.b);
  std::vector<uint8_t> d = test::poisoned_operand(p, Which::D);
  auto dd = upload(d);
  GemmArgs args{static_cast<const char*>(da.get()) + cs.base_offset,
                static_cast<const char*>(db.get()) + cs.base_offset, c.empty() ? nullptr : dc.get(), dd.get()};
  args.bias = bias.get(), args.residual = res.get(), args.row_scale = rs.get(), args.col_scale = cols.get();
  args.scale_a = static_cast<const float*>(sa.get());
  args.scale_b = static_cast<const float*>(sb.get());
  cuda::StreamOwner stream;
  for (int i = 0; i < 2; ++i) {  // the second launch reuses the first's scratch
    dd.upload(d.data(), d.size());
    exe->launch(args, stream.get());
    stream.sync();
  }
  dd.download(d.data(), d.size());
  const double err = test::normalized_error(p, d, ref);
  const int64_t outside = test::written_outside(p, d);
  if (!(err <= kTolerance) || outside)
    return "err=" + std::to_string(err) + " bytes-written-outside=" + std::to_string(outside);
  return "";
}

class TritonGpu : public test::GpuTest {
 protected:
  void SetUp() override {
    test::GpuTest::SetUp();
    if (IsSkipped()) return;
    be_ = find_backend("triton");
    ASSERT_TRUE(be_);
    if (std::string why = be_->unavailable(); !why.empty()) GTEST_SKIP() << "triton unavailable: " << why;
  }

  // The top candidates of each case (and the best masked one where it is not among them), compiled in parallel,
  // then each run and checked.
  void run_cases(const std::vector<Case>& cases) {
    const DeviceInfo dev = current_device();
    std::vector<Job> jobs;
    for (size_t i = 0; i < cases.size(); ++i) {
      const Problem& p = cases[i].p;
      ASSERT_EQ(p.check(), "") << p.str();
      ASSERT_EQ(be_->supports(resolve(p), dev), "") << p.str();
      const std::vector<Candidate> all = be_->enumerate(resolve(p), dev);
      ASSERT_FALSE(all.empty()) << p.str();
      bool masked = false;
      for (size_t k = 0; k < std::min(kTop, all.size()); ++k) {
        jobs.push_back({i, all[k], {}, {}});
        masked |= all[k].config.rfind("tmpl=masked", 0) == 0;
      }
      for (size_t k = kTop; k < all.size() && !masked; ++k)
        if (all[k].config.rfind("tmpl=masked", 0) == 0) {
          jobs.push_back({i, all[k], {}, {}});
          masked = true;
        }
    }
    const auto t0 = std::chrono::steady_clock::now();
    jit::parallel_for(jobs.size(), int(std::max(2u, std::thread::hardware_concurrency())), [&](size_t i) {
      try {
        jobs[i].cr = be_->compile(resolve(cases[jobs[i].case_index].p), jobs[i].cand, dev);
      } catch (const std::exception& e) {
        jobs[i].compile_error = e.what();
      }
    });
    std::printf("%zu triton jobs compiled in %.1f s\n", jobs.size(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    std::mt19937_64 rng(std::random_device{}());
    int failed = 0;
    for (const Job& j : jobs) {
      std::string r;
      try {
        r = run_job(*be_, cases[j.case_index], j, rng);
      } catch (const std::exception& e) {
        r = std::string("threw: ") + e.what();
      }
      failed += !r.empty();
      EXPECT_EQ(r, "") << j.cand.str() << " on " << cases[j.case_index].p.str();
    }
    std::printf("%zu triton jobs run, %d failed\n", jobs.size(), failed);
  }

  std::shared_ptr<Backend> be_;
};

TEST_F(TritonGpu, Layouts) {
  std::vector<Case> cases;
  for (Layout la : {Layout::row, Layout::col})
    for (Layout lb : {Layout::row, Layout::col}) {
      cases.push_back({make(512, 384, 256, la, lb)});
      cases.push_back({make(200, 136, 264, la, lb, "", DType::f16, DType::f32)});
    }
  run_cases(cases);
}

TEST_F(TritonGpu, RaggedAndUnaligned) {
  std::vector<Case> cases;
  cases.push_back({make(1000, 999, 1001, Layout::row, Layout::col)});  // odd everything: masked only
  cases.push_back({make(17, 33, 65, Layout::row, Layout::row)});
  cases.push_back({make(3, 4096, 515, Layout::row, Layout::col)});  // decode, ragged K
  Problem ld = make(300, 260, 250, Layout::row, Layout::col);
  ld.a.ld = 253;  // K + 3
  ld.b.ld = 253;
  ld.resolve();
  cases.push_back({ld});
  Problem col = make(129, 127, 200, Layout::col, Layout::row);
  col.a.ld = 131;
  col.b.ld = 130;
  cases.push_back({col});
  // A and B at a 2-byte aligned base (a sliced view): declared align=2.
  Problem sliced = make(256, 256, 256, Layout::row, Layout::col);
  sliced.a.align = sliced.b.align = 2;
  cases.push_back({sliced, 2});
  // A column-major D with a padded pitch.
  Problem dcol = make(200, 120, 136, Layout::row, Layout::col);
  dcol.d = {DType::bf16, Layout::col, 208, -1};
  dcol.resolve();
  cases.push_back({dcol});
  run_cases(cases);
}

TEST_F(TritonGpu, EachEpilogueOpAndBeta) {
  std::vector<Case> cases;
  for (const char* chain : {"bias", "bias_row", "relu", "gelu_tanh", "gelu_erf", "silu", "sigmoid", "row_scale",
                            "col_scale", "residual", "bias:f32,gelu_tanh,row_scale,col_scale,residual"}) {
    cases.push_back({make(264, 200, 136, Layout::row, Layout::col, chain)});
  }
  // beta·C (a column-major C beside a row-major D), alpha != 1, and the chain on top.
  Problem bc = make(250, 190, 130, Layout::row, Layout::col, "bias,silu");
  bc.alpha = 0.75f;
  bc.beta = -1.25f;
  bc.c = {DType::bf16, Layout::col, 0, -1};
  bc.resolve();
  cases.push_back({bc});
  Problem f32c = make(128, 256, 512, Layout::col, Layout::col, "", DType::f16, DType::f32);
  f32c.beta = 0.5f;
  f32c.c.dtype = DType::f32;
  cases.push_back({f32c});
  run_cases(cases);
}

TEST_F(TritonGpu, Batched) {
  std::vector<Case> cases;
  cases.push_back({make(256, 384, 512, Layout::row, Layout::col, "", DType::bf16, DType::bf16, 4)});
  Problem bcast = make(96, 80, 130, Layout::row, Layout::col, "bias", DType::f16, DType::f16, 3);
  bcast.b.batch_stride = 0;  // one B for every batch
  bcast.beta = 0.5f;
  bcast.resolve();
  cases.push_back({bcast});
  run_cases(cases);
}

TEST_F(TritonGpu, Fp8TensorAndRow) {
  std::vector<Case> cases;
  for (Scaling sc : {Scaling::tensor, Scaling::row}) {
    Problem p = make(256, 384, 512, Layout::row, Layout::col, "", DType::e4m3, DType::bf16);
    p.scaling = sc;
    cases.push_back({p});
    Problem q = make(200, 328, 400, Layout::row, Layout::col, "bias,gelu_tanh", DType::e4m3, DType::bf16);
    q.scaling = sc;
    cases.push_back({q});
  }
  run_cases(cases);
}

TEST_F(TritonGpu, TuneRestrictedToTriton) {
  char tmpl[] = "/tmp/gemmtune-triton-tune-XXXXXX";
  ASSERT_TRUE(mkdtemp(tmpl));
  const std::string dir = tmpl;
  const char* old = std::getenv("GEMMTUNE_CACHE_DIR");
  const std::string saved = old ? old : "";
  setenv("GEMMTUNE_CACHE_DIR", dir.c_str(), 1);  // the worker inherits it
  TuneOptions o;
  o.backends = {"triton"};
  o.top_k = 4;
  o.min_iters = 10;
  o.min_time_ms = 5;
  o.warmup_iters = 2;
  Tuner t(o);
  Problem p = make(777, 512, 300, Layout::row, Layout::col, "bias,relu");
  p.a.ld = 303;
  p.resolve();
  const TuneReport rep = t.tune(p);
  ASSERT_TRUE(rep.winner) << "no winner";
  EXPECT_EQ(rep.winner->backend, "triton");
  Gemm g = t.select(p);
  EXPECT_EQ(g.candidate().backend, "triton");
  std::mt19937_64 rng(42);
  const auto a = test::random_operand(p, Which::A, rng), b = test::random_operand(p, Which::B, rng);
  const test::EpilogueData e = test::random_epilogue(p, rng);
  const std::vector<double> ref = test::apply_epilogue(p, test::reference_d(p, a, b, {}), e);
  auto da = upload(a), db = upload(b), bias = upload(e.bias);
  std::vector<uint8_t> d = test::poisoned_operand(p, Which::D);
  auto dd = upload(d);
  GemmArgs args{da.get(), db.get(), nullptr, dd.get()};
  args.bias = bias.get();
  g.run(args);
  GT_CU(cuCtxSynchronize());
  dd.download(d.data(), d.size());
  EXPECT_LE(test::normalized_error(p, d, ref), kTolerance) << g.candidate().str();
  EXPECT_EQ(test::written_outside(p, d), 0);
  if (old)
    setenv("GEMMTUNE_CACHE_DIR", saved.c_str(), 1);
  else
    unsetenv("GEMMTUNE_CACHE_DIR");
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
}  // namespace gemmtune
