// cutlass backend on the GPU (CUTLASS 3.x sm90 kernels built by nvcc): its default list (the top candidates) and a
// cooperative and a ping-pong config across layouts of A and B, ragged shapes (odd M; N and K multiples of 8, which
// TMA needs), padded leading dimensions and batch strides, bf16 / f16 in, bf16 / f16 / f32 out, beta * C with C in
// another dtype, batches, every epilogue op the backend takes and a chain of them; each job compiled first (in
// parallel, through the shared-object cache) and checked by gpu_jobs.h: fresh random inputs, D poisoned, the
// double-precision host reference, normalized error <= 1e-2, nothing written outside D. Then one tune end to end with
// only the cutlass backend: without --wait-compile nothing is built and it says so; with it the winner is a verified
// cutlass candidate; afterwards the cached winner answers. Skipped without a GPU, on a non-Hopper GPU, or when the
// backend is unavailable (no CUTLASS headers or nvcc). The first run compiles ~25 kernels (nvcc, tens of seconds
// each, all cores); later runs hit the kernel cache.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "gemmtune/gemm.h"
#include "gemmtune/tuner.h"
#include "gpu_jobs.h"
#include "gpu_test_util.h"

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
    ASSERT_EQ(backend_->validate(p, c, dev), "") << c.str() << " on " << p.str();
    test::Job j;
    j.p = p, j.cand = c, j.launches = 4;
    jobs.push_back(std::move(j));
  };
  // The default list: the top four of two shapes.
  for (const Spec& s : {Spec{520, 512, 256}, Spec{136, 1024, 512, 1, DType::f16, DType::f16}}) {
    const auto cands = backend_->enumerate(make(s), dev);
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
                            "col_scale", "bias:f32,gelu_tanh", "bias_row:f16,silu,row_scale:f32,col_scale"})
    add(Spec{333, 264, 136, 1, DType::bf16, DType::bf16, Layout::row, Layout::col, chain, 0.75f}, kPing);
  add(Spec{250, 392, 128, 2, DType::f16, DType::f16, Layout::row, Layout::col, "bias,relu,col_scale", 1.0f, -1.0f,
           DType::f16},
      kCoop);
  test::run_jobs(*backend_, jobs);
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
  o.progress = [&](const std::string& l) { lines.push_back(l); };
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
