// pad backend on the GPU: A and/or B with pitches of 1, 2 and 4 elements mod 8, base pointers offset by 2, 4 and 8
// bytes, odd batch strides and a broadcast operand, both layouts of each, bf16 / f16 / f32; the first pad candidate of
// each inner backend as enumerated, against the double-precision CPU reference with fresh random inputs and a
// NaN-poisoned D before every launch; launches 1-2 on one stream, 3 on another (its own workspace).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/backend.h"
#include "backends/pad/pad_config.h"
#include "cuda/driver.h"
#include "cuda/memory.h"
#include "gemmtune/errors.h"
#include "gpu_test_util.h"
#include "jit/thread_pool.h"

namespace gemmtune {
namespace {

constexpr double kTolerance = 1e-2;

struct Case {
  int64_t m, n, k;
  Layout la, lb;
  int64_t lda = 0, ldb = 0;    // 0: packed
  int align_a = 16, align_b = 16;  // the pointer is offset by this many bytes from a 256-byte boundary (16: none)
  int64_t batch = 1;
  int64_t bs_a = -1, bs_b = -1;  // -1: packed
  DType in = DType::bf16;
  Layout ld = Layout::row;
  float beta = 0.0f;
};

Problem problem_of(const Case& c) {
  Problem p = Problem::make(c.m, c.n, c.k, c.in, c.in == DType::f32 ? DType::f32 : c.in, c.la, c.lb, c.batch);
  p.d.layout = p.c.layout = c.ld;
  p.d.ld = p.c.ld = 0;
  p.d.batch_stride = p.c.batch_stride = -1;
  p.a.ld = c.lda, p.b.ld = c.ldb;
  p.a.batch_stride = c.bs_a, p.b.batch_stride = c.bs_b;
  p.a.align = c.align_a, p.b.align = c.align_b;
  p.alpha = 0.75f;
  p.beta = c.beta;
  p.resolve();
  return p;
}

// A buffer holding `v` at `offset` bytes past its 256-byte aligned start.
struct Placed {
  cuda::DeviceBuffer buf;
  size_t offset = 0;
  void* ptr() const { return static_cast<char*>(buf.get()) + offset; }
};
Placed place(const std::vector<uint8_t>& v, int align) {
  Placed p;
  p.offset = align % 16;
  p.buf = cuda::DeviceBuffer(v.size() + 16);
  p.buf.upload(v.data(), v.size(), p.offset);
  return p;
}

struct Job {
  Problem p;
  Candidate cand;
  CompileResult cr;
  std::string compile_error;
};

// "" or what went wrong.
std::string run_job(const Backend& be, const Job& j, std::mt19937_64& rng) {
  if (!j.compile_error.empty()) return "compile: " + j.compile_error;
  const Problem& p = j.p;
  auto exe = be.load(resolve(p), j.cand, j.cr);
  if (!(exe->candidate() == j.cand)) return "executable reports candidate " + exe->candidate().str();
  const auto a = test::random_operand(p, Which::A, rng), b = test::random_operand(p, Which::B, rng);
  std::vector<uint8_t> c;
  if (p.beta != 0.0f) c = test::random_operand(p, Which::C, rng);
  const std::vector<double> ref = test::reference_d(p, a, b, c);
  const Placed da = place(a, p.a.align), db = place(b, p.b.align);
  Placed dc;
  if (!c.empty()) dc = place(c, 16);
  const std::vector<uint8_t> poison = test::poisoned_operand(p, Which::D);
  cuda::DeviceBuffer dd(poison.size());
  GemmArgs args{da.ptr(), db.ptr(), c.empty() ? nullptr : dc.ptr(), dd.get()};
  cuda::StreamOwner s[2];
  std::string out;
  for (int i = 0; i < 3; ++i) {
    dd.upload(poison.data(), poison.size());  // every launch must write all of D
    const cuda::StreamOwner& st = s[i / 2];
    exe->launch(args, st.get());
    st.sync();
    std::vector<uint8_t> d(poison.size());
    dd.download(d.data(), d.size());
    const double err = test::normalized_error(p, d, ref);
    const int64_t outside = test::written_outside(p, d);
    if (!(err <= kTolerance) || outside)
      out += "launch " + std::to_string(i + 1) + " (stream " + std::to_string(i / 2 + 1) + "): err=" +
             std::to_string(err) + " bytes-written-outside=" + std::to_string(outside) + "; ";
  }
  return out;
}

class PadGpu : public test::GpuTest {};

TEST_F(PadGpu, UnalignedOperandsMatchTheReference) {
  cuda::ensure_context();
  const DeviceInfo dev = current_device();
  auto be = find_backend("pad");
  ASSERT_TRUE(be);
  const Layout R = Layout::row, C = Layout::col;
  std::vector<Case> cases;
  auto add = [&](Case c) { cases.push_back(c); };
  // A's pitch 1, 2, 4 elements mod 8 (row-major A: ld >= K).
  add({136, 200, 128, R, C, 137});
  add({136, 200, 128, R, C, 138});
  add({136, 200, 128, R, C, 132});
  // B's pitch: column-major (ld >= K) 1 mod 8, row-major (ld >= N) 2 mod 8.
  add({136, 200, 128, R, C, 0, 129});
  add({136, 200, 128, R, R, 0, 202});
  // Both: column-major A 4 mod 8, column-major B 1 mod 8.
  add({136, 200, 128, C, C, 140, 129});
  // Pointers offset by 2, 4, 8 bytes, pitches aligned; then an offset with an odd pitch beside it.
  {
    Case c{136, 200, 128, R, C};
    c.align_a = 2;
    add(c);
    c.align_a = 16, c.align_b = 4;
    add(c);
    Case d{136, 200, 128, R, R, 0, 201};
    d.align_a = 8;
    add(d);
  }
  // Packed ragged shapes whose K makes both pitches odd (K = 100: 200 bytes), and a decode-sized M (gemv inside).
  add({77, 200, 100, R, C});
  add({4, 200, 100, R, C});
  // Batches: an odd batch stride of A beside a broadcast B with an odd pitch; an odd batch stride alone.
  {
    Case c{136, 200, 128, R, C, 129, 132};
    c.batch = 3, c.bs_a = 129 * 136 + 3, c.bs_b = 0;
    add(c);
    Case d{136, 200, 128, R, C};
    d.batch = 3, d.bs_b = 128 * 200 + 1;
    add(d);
  }
  // f16 with column-major A and a 2-byte pointer; beta with C; f32 (cuBLASLt inside); column-major D with an odd N.
  {
    Case c{136, 200, 128, C, R, 137};
    c.in = DType::f16, c.align_a = 2;
    add(c);
    Case b{136, 200, 128, R, C, 131};
    b.beta = 0.5f;
    add(b);
    Case f{136, 200, 128, R, C, 129};
    f.in = DType::f32, f.align_a = 4;
    add(f);
    Case d{136, 199, 128, R, R};
    d.ld = C;
    add(d);
  }

  // The first candidate of each inner backend, as pad enumerates them.
  std::vector<Job> jobs;
  for (const Case& c : cases) {
    const Problem p = problem_of(c);
    ASSERT_EQ(p.check(), "") << p.str();
    ASSERT_EQ(be->supports(resolve(p), dev), "") << p.str();
    std::map<std::string, bool> seen;
    for (const Candidate& cand : be->enumerate(resolve(p), dev)) {
      const std::string inner = pad::Config::parse(cand.config).inner.backend;
      if (seen[inner]) continue;
      seen[inner] = true;
      jobs.push_back({p, cand, {}, ""});
    }
    EXPECT_FALSE(seen.empty()) << "no pad candidates for " << p.str();
  }
  jit::parallel_for(jobs.size(), int(std::max(2u, std::thread::hardware_concurrency())), [&](size_t i) {
    try {
      jobs[i].cr = be->compile(resolve(jobs[i].p), jobs[i].cand, dev);
    } catch (const std::exception& e) {
      jobs[i].compile_error = e.what();
    }
  });
  std::mt19937_64 rng(std::random_device{}());
  std::map<std::string, int> ran;
  for (const Job& j : jobs) {
    std::string r;
    try {
      r = run_job(*be, j, rng);
    } catch (const std::exception& e) {
      r = std::string("threw: ") + e.what();
    }
    EXPECT_EQ(r, "") << j.cand.str() << " on " << j.p.str();
    ++ran[pad::Config::parse(j.cand.config).inner.backend];
  }
  for (const auto& [inner, n] : ran) std::printf("%d pad jobs with %s inside\n", n, inner.c_str());
  EXPECT_GT(ran["sm90"], 0);
  EXPECT_GT(ran["cublaslt"], 0);
  EXPECT_GT(ran["gemv"], 0);
}

// A pointer less aligned than the problem declares is refused, not read misaligned.
TEST_F(PadGpu, MisalignedPointerIsRefused) {
  cuda::ensure_context();
  const DeviceInfo dev = current_device();
  auto be = find_backend("pad");
  ASSERT_TRUE(be);
  Problem p = Problem::make(64, 64, 64, DType::bf16, DType::bf16);
  p.a.align = 8;
  p.resolve();
  const auto cands = be->enumerate(resolve(p), dev);
  ASSERT_FALSE(cands.empty());
  auto exe = be->load(resolve(p), cands[0], be->compile(resolve(p), cands[0], dev));
  cuda::DeviceBuffer a(64 * 64 * 2 + 16), b(64 * 64 * 2), d(64 * 64 * 2);
  GemmArgs args{static_cast<char*>(a.get()) + 2, b.get(), nullptr, d.get()};
  cuda::StreamOwner s;
  try {
    exe->launch(args, s.get());
    FAIL() << "launched with a 2-byte aligned A declared 8-byte aligned";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pad: the A pointer is not 8-byte aligned"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gemmtune
