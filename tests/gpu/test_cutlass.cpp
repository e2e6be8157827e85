// cutlass backend on the GPU (CUTLASS 3.x sm90 kernels built by nvcc): its default list (the top candidates) and a
// cooperative and a ping-pong config across layouts of A and B, ragged shapes (odd M; N and K multiples of 8, which
// TMA needs), padded leading dimensions and batch strides, bf16 / f16 in, bf16 / f16 / f32 out, column-major D,
// beta * C with C in another dtype, batches, every epilogue op the backend takes and a chain of them, fp8 with tensor
// and row scaling; each job compiled first (in
// parallel, through the shared-object cache) and checked by gpu_jobs.h: fresh random inputs, D poisoned, the
// double-precision host reference, normalized error <= 1e-2, nothing written outside D. Then one tune end to end with
// only the cutlass backend: without --wait-compile nothing is built and it says so; with it the winner is a verified
// cutlass candidate; afterwards the cached winner answers. Skipped without a GPU, on a non-Hopper GPU, or when the
// backend is unavailable (no CUTLASS headers or nvcc). The first run compiles ~25 kernels (nvcc, tens of seconds
// each, all cores); later runs hit the kernel cache.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <random>
#include <thread>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "gemmtune/gemm.h"
#include "gemmtune/progress.h"
#include "gemmtune/tuner.h"
#include "gpu_jobs.h"
#include "gpu_test_util.h"
#include "jit/thread_pool.h"

namespace gemmtune {
inline void PrintTo(Status s, std::ostream* os) { *os << to_string(s); }
}  // namespace gemmtune

using namespace gemmtune;

namespace {

namespace fs = std::filesystem;

constexpr const char* kCoop = "sched=coop,tile=128x128x64,cluster=1x1";
constexpr const char* kPing = "sched=pingpong,tile=64x128x64,cluster=1x1";

class CutlassGpu : public test::GpuTest {
 protected:
  void SetUp() override {
    test::GpuTest::SetUp();
    if (IsSkipped()) return;
    if (current_device().cc_major != 9 || current_device().cc_minor != 0) GTEST_SKIP() << "not sm_90 (Hopper)";
    backend_ = find_backend("cutlass");
    ASSERT_TRUE(backend_);
    if (const std::string why = backend_->unavailable(); !why.empty()) GTEST_SKIP() << "cutlass unavailable: " << why;
  }
  std::shared_ptr<Backend> backend_;
};

struct Spec {
  int64_t m, n, k, batch = 1;
  DType in = DType::bf16, out = DType::bf16;
  Layout la = Layout::row, lb = Layout::col;
  const char* chain = "none";
  float alpha = 1.0f, beta = 0.0f;
  DType c = DType::bf16;
  int64_t pad = 0;  // elements added to every leading dimension (a multiple of 8: TMA's 16 bytes)
};

Problem make(const Spec& s) {
  Problem p = Problem::make(s.m, s.n, s.k, s.in, s.out, s.la, s.lb, s.batch);
  p.epilogue = parse_epilogue(s.chain);
  p.alpha = s.alpha, p.beta = s.beta;
  p.c = p.d;
  p.c.dtype = s.c;
  if (s.pad) {
    p.a.ld = (s.la == Layout::row ? s.k : s.m) + s.pad;
    p.b.ld = (s.lb == Layout::row ? s.n : s.k) + s.pad;
    p.d.ld = p.c.ld = s.n + s.pad;
  }
  for (Operand* o : {&p.a, &p.b, &p.c, &p.d}) o->batch_stride = -1;
  p.resolve();
  // Batches apart by more than their matrices (a multiple of 8 elements keeps every batch 16-byte aligned).
  if (s.pad && s.batch > 1)
    for (Operand* o : {&p.a, &p.b, &p.c, &p.d}) o->batch_stride += 8 * s.pad;
  EXPECT_EQ(p.check(), "") << p.str();
  return p;
}

}  // namespace

TEST_F(CutlassGpu, DefaultListAndEveryFormAgainstTheReference) {
  const DeviceInfo dev = current_device();
  std::vector<test::Job> jobs;
  auto add = [&](const Spec& s, const std::string& config) {
    const Problem p = make(s);
    const Candidate c{"cutlass", config};
    ASSERT_EQ(backend_->validate(resolve(p), c, dev), "") << c.str() << " on " << p.str();
    test::Job j;
    j.p = p, j.cand = c, j.launches = 4;
    jobs.push_back(std::move(j));
  };
  // The default list: the top four of two shapes.
  for (const Spec& s : {Spec{520, 512, 256}, Spec{136, 1024, 512, 1, DType::f16, DType::f16}}) {
    const auto cands = backend_->enumerate(resolve(make(s)), dev);
    ASSERT_GE(cands.size(), 4u);
    for (size_t i = 0; i < 4; ++i) add(s, cands[i].config);
  }
  // Layouts of A and B, f16 in, f32 out; both schedules.
  for (Layout la : {Layout::row, Layout::col})
    for (Layout lb : {Layout::row, Layout::col})
      for (const char* cfg : {kCoop, kPing}) add(Spec{264, 392, 200, 1, DType::f16, DType::f32, la, lb}, cfg);
  // Ragged M (odd, one row, below and above a tile), N and K multiples of 8 but not of the tiles; padded leading
  // dimensions; batches with gaps between them.
  for (int64_t m : {1, 7, 333, 1000})
    for (const char* cfg : {kCoop, kPing}) add(Spec{m, 264, 136}, cfg);
  add(Spec{200, 136, 72, 1, DType::bf16, DType::bf16, Layout::row, Layout::col, "none", 1.0f, 0.0f, DType::bf16, 24},
      kCoop);
  add(Spec{77, 128, 64, 3, DType::bf16, DType::bf16, Layout::row, Layout::col, "none", 1.0f, 0.0f, DType::bf16, 8},
      kPing);
  add(Spec{300, 256, 128, 4}, kCoop);
  // alpha and beta * C, C in the output dtype and in another one.
  add(Spec{333, 264, 136, 1, DType::bf16, DType::bf16, Layout::row, Layout::col, "none", 0.75f, -1.25f, DType::bf16},
      kCoop);
  add(Spec{333, 264, 136, 2, DType::bf16, DType::f32, Layout::row, Layout::col, "relu", 0.75f, 0.5f, DType::f32},
      kPing);
  // Every epilogue op on its own, vectors in D's dtype and in others, and a chain (order matters: scale after act).
  for (const char* chain : {"bias", "bias_row", "relu", "gelu_tanh", "gelu_erf", "silu", "sigmoid", "row_scale",
                            "col_scale", "residual", "bias:f32,gelu_tanh", "bias_row:f16,silu,row_scale:f32,col_scale",
                            "bias,gelu_erf,residual:f32"})
    add(Spec{333, 264, 136, 1, DType::bf16, DType::bf16, Layout::row, Layout::col, chain, 0.75f}, kPing);
  add(Spec{250, 392, 128, 2, DType::f16, DType::f16, Layout::row, Layout::col, "bias,relu,col_scale", 1.0f, -1.0f,
           DType::f16},
      kCoop);
  // Column-major D (and C): M a multiple of 8 (D's contiguous extent), vectors and scales still by logical row/col.
  for (const char* cfg : {kCoop, kPing}) {
    Spec s{264, 200, 136, 1, DType::bf16, DType::bf16, Layout::row, Layout::col, "bias,silu,row_scale,residual", 0.75f,
           0.5f};
    Problem p = make(s);
    p.d.layout = p.c.layout = Layout::col;
    p.d.ld = p.c.ld = 0;
    p.d.batch_stride = p.c.batch_stride = -1;
    p.resolve();
    ASSERT_EQ(p.check(), "") << p.str();
    const Candidate c{"cutlass", cfg};
    ASSERT_EQ(backend_->validate(resolve(p), c, dev), "") << c.str() << " on " << p.str();
    test::Job j;
    j.p = p, j.cand = c, j.launches = 4;
    jobs.push_back(std::move(j));
  }
  test::run_jobs(*backend_, jobs);
}

// fp8 (e4m3 A and B, K-major) with tensor and row scaling, bf16 / f32 D, beta * C and a chain: fresh random fp8
// operands and scales in [0.5, 2), the double-precision reference of the dequantized inputs (gpu_test_util.h
// reference_scaled), D poisoned, normalized error <= 1e-2, nothing written outside D; two launches per stream.
TEST_F(CutlassGpu, Fp8TensorAndRowScaling) {
  const DeviceInfo dev = current_device();
  struct F8 {
    int64_t m, n, k, batch;
    Scaling scaling;
    DType out;
    const char* chain;
    float beta;
    const char* config;
  };
  const F8 specs[] = {
      {520, 512, 256, 1, Scaling::tensor, DType::bf16, "none", 0.0f, "sched=coop,tile=128x128x128,cluster=1x1"},
      {333, 264, 384, 1, Scaling::tensor, DType::bf16, "bias,gelu_tanh", 0.0f, "sched=pingpong,tile=64x128x128,cluster=1x1"},
      {333, 264, 384, 2, Scaling::tensor, DType::bf16, "none", 0.0f, "sched=coop,tile=128x128x128,cluster=1x1"},
      {333, 264, 384, 1, Scaling::row, DType::bf16, "none", 0.0f, "sched=coop,tile=128x128x128,cluster=1x1"},
      {1000, 512, 256, 1, Scaling::row, DType::f32, "relu", 0.5f, "sched=pingpong,tile=64x128x128,cluster=1x1"},
      {77, 136, 128, 1, Scaling::row, DType::bf16, "bias,silu,col_scale", -1.0f, "sched=coop,tile=128x256x128,cluster=1x1"},
  };
  std::vector<test::Job> jobs;
  for (const F8& f : specs) {
    Problem p = Problem::make(f.m, f.n, f.k, DType::e4m3, f.out, Layout::row, Layout::col, f.batch);
    p.scaling = f.scaling;
    p.epilogue = parse_epilogue(f.chain);
    p.alpha = 0.75f, p.beta = f.beta;
    p.c = p.d;
    p.resolve();
    ASSERT_EQ(p.check(), "") << p.str();
    const Candidate c{"cutlass", f.config};
    ASSERT_EQ(backend_->validate(resolve(p), c, dev), "") << c.str() << " on " << p.str();
    test::Job j;
    j.p = p, j.cand = c;
    jobs.push_back(std::move(j));
  }
  jit::parallel_for(jobs.size(), int(std::max(2u, std::thread::hardware_concurrency())), [&](size_t i) {
    try {
      jobs[i].cr = backend_->compile(resolve(jobs[i].p), jobs[i].cand, dev);
    } catch (const std::exception& e) {
      jobs[i].compile_error = e.what();
    }
  });
  std::mt19937_64 rng(std::random_device{}());
  for (const test::Job& j : jobs) {
    SCOPED_TRACE(j.cand.str() + " on " + j.p.str());
    ASSERT_EQ(j.compile_error, "");
    const Problem& p = j.p;
    auto exe = backend_->load(resolve(p), j.cand, j.cr);
    const auto a = test::random_operand(p, Which::A, rng), b = test::random_operand(p, Which::B, rng);
    std::vector<uint8_t> cbuf;
    if (p.beta != 0.0f) cbuf = test::random_operand(p, Which::C, rng);
    const test::Scales sc = test::random_scales(p, rng);
    const test::EpilogueData e = test::random_epilogue(p, rng);
    const std::vector<double> ref = test::apply_epilogue(p, test::reference_scaled(p, a, b, cbuf, sc), e);
    auto up = [](const void* data, size_t bytes) {
      cuda::DeviceBuffer buf(bytes);
      if (bytes) buf.upload(data, bytes);
      return buf;
    };
    auto da = test::upload(a), db = test::upload(b), dc = test::upload(cbuf), bias = test::upload(e.bias),
         rs = test::upload(e.row_scale), cs = test::upload(e.col_scale);
    auto sa = up(sc.a.data(), sc.a.size() * sizeof(float)), sb = up(sc.b.data(), sc.b.size() * sizeof(float));
    std::vector<uint8_t> d = test::poisoned_operand(p, Which::D);
    auto dd = test::upload(d);
    GemmArgs args{da.get(), db.get(), cbuf.empty() ? nullptr : dc.get(), dd.get()};
    args.bias = bias.get(), args.row_scale = rs.get(), args.col_scale = cs.get();
    args.scale_a = static_cast<const float*>(sa.get()), args.scale_b = static_cast<const float*>(sb.get());
    cuda::StreamOwner streams[2];
    for (int i = 0; i < 4; ++i) {
      dd.upload(d.data(), d.size());
      exe->launch(args, streams[i / 2].get());
      streams[i / 2].sync();
    }
    dd.download(d.data(), d.size());
    EXPECT_LE(test::normalized_error(p, d, ref), 1e-2);
    EXPECT_EQ(test::written_outside(p, d), 0);
    // A missing scale is refused, naming it.
    GemmArgs no_scale = args;
    no_scale.scale_b = nullptr;
    EXPECT_THROW(exe->launch(no_scale, streams[0].get()), Error);
  }
}

// A tune with only the cutlass backend, in a fresh cache: without wait_compile there is nothing built to time (and
// the error says how to build it); with it the winner is a verified cutlass kernel; then the cached winner answers,
// and select() runs it correctly.
TEST_F(CutlassGpu, TuneWaitsForCompilesOnlyWhenAsked) {
  const std::optional<std::string> old = std::getenv("GEMMTUNE_CACHE_DIR") ? std::optional<std::string>(
                                                                                 std::getenv("GEMMTUNE_CACHE_DIR"))
                                                                           : std::nullopt;
  char tmpl[] = "/tmp/gemmtune-cutlass-tune-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  setenv("GEMMTUNE_CACHE_DIR", dir.c_str(), 1);  // the worker inherits it
  TuneOptions o;
  o.backends = {"cutlass"};
  o.top_k = 2;
  o.min_iters = 10, o.min_time_ms = 5, o.warmup_iters = 2;
  std::vector<std::string> lines;
  o.progress = [&](const ProgressEvent& e) { lines.push_back(to_string(e)); };
  Problem p = Problem::make(1000, 1024, 512, DType::bf16, DType::bf16);
  p.epilogue = parse_epilogue("bias,gelu_tanh");
  try {
    Tuner(o).tune(p);
    ADD_FAILURE() << "a tune with nothing built timed something";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not compiled yet"), std::string::npos) << e.what();
  }
  bool said = false;
  for (const auto& l : lines) said |= l.find("cutlass: 2 skipped") != std::string::npos;
  EXPECT_TRUE(said) << "no progress line on the skipped candidates";

  o.wait_compile = true;
  const TuneReport rep = Tuner(o).tune(p);
  ASSERT_TRUE(rep.winner);
  EXPECT_EQ(rep.winner->backend, "cutlass");
  int ok = 0;
  for (const auto& r : rep.results) {
    EXPECT_NE(r.status, Status::skipped) << r.candidate.str();
    ok += r.status == Status::ok;
  }
  EXPECT_EQ(ok, 2);

  o.wait_compile = false;
  const TuneReport again = Tuner(o).tune(p);
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(*again.winner, *rep.winner);
  Gemm g = Tuner(o).select(p);
  EXPECT_EQ(g.candidate(), *rep.winner);

  if (old) setenv("GEMMTUNE_CACHE_DIR", old->c_str(), 1);
  else unsetenv("GEMMTUNE_CACHE_DIR");
  fs::remove_all(dir);
}
