// gemv backend on the GPU (both kernels: CUDA-core FMAs and mma=1): 1-16 vectors as the problem's rows (vec=m) or
// columns (vec=n), ragged row counts and K (K % 8 != 0, K % 64 != 0, K < 8), bf16 / f16 in, bf16 / f16 / f32 out,
// D row- and column-major, C with beta, batches with a broadcast weight matrix, padded leading dimensions, fused
// chains (GLU halves and interleaved), many configs per problem; checked by gpu_jobs.h (fresh random inputs, D
// poisoned, the double-precision reference; kernels compiled in parallel first).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backends/gemv/gemv_backend.h"
#include "backends/gemv/gemv_config.h"
#include "cuda/driver.h"
#include "cuda/memory.h"
#include "gemmtune/device.h"
#include "gemmtune/errors.h"
#include "gpu_jobs.h"
#include "gpu_test_util.h"
#include "jit/thread_pool.h"

namespace gemmtune {
namespace {

struct Spec {
  int64_t m, n, k, batch;
  const char* chain;
  DType in, out;
  Layout d;
  bool beta;
  int64_t extra;      // padding of every leading dimension beyond the multiple of 8 (and of batch strides)
  bool broadcast_w;   // one weight matrix for every batch (batch stride 0)
  bool alpha_one;
};

int64_t pad8(int64_t x, int64_t extra) { return (x + 7) / 8 * 8 + extra; }

Problem make(const Spec& s) {
  Problem p = Problem::make(s.m, s.n, s.k, s.in, s.out, Layout::row, Layout::col, s.batch);
  p.epilogue = parse_epilogue(s.chain);
  p.d.layout = s.d;
  p.c = p.d;
  p.alpha = s.alpha_one ? 1.0f : 0.75f;
  p.beta = s.beta ? -1.25f : 0.0f;
  p.a.ld = pad8(s.k, s.extra);
  p.b.ld = pad8(s.k, s.extra);
  p.d.ld = s.d == Layout::row ? s.n + s.extra / 2 : s.m + s.extra / 2;
  if (p.epilogue.has_glu() && s.d == Layout::row) p.d.ld = s.n / 2 + s.extra / 2;
  p.c.ld = p.d.ld;
  for (Operand* o : {&p.a, &p.b, &p.c, &p.d}) o->batch_stride = -1;
  p.resolve();
  for (Operand* o : {&p.a, &p.b, &p.c, &p.d}) o->batch_stride += s.batch > 1 ? 8 * s.extra : 0;
  if (s.broadcast_w && s.batch > 1) (s.m <= s.n ? p.b : p.a).batch_stride = 0;
  return p;
}

using test::Job;

// The gemv candidates of a test problem; a problem the checks refuse, or one with no candidate, fails the test.
std::vector<Candidate> candidates(const Problem& p) {
  if (std::string why = p.check(); !why.empty()) {
    ADD_FAILURE() << "bad test problem " << p.str() << ": " << why;
    return {};
  }
  auto be = make_gemv_backend();
  const auto all = be->enumerate(resolve(p), current_device());
  EXPECT_FALSE(all.empty()) << p.str() << ": " << be->supports(resolve(p), current_device());
  return all;
}

class GemvGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu_available()) GTEST_SKIP() << "no GPU";
    if (current_device().cc_major < 8) GTEST_SKIP() << "gemv needs sm_80+";
    cuda::ensure_context();
  }

  static size_t run_all(std::vector<Job>& jobs) { return test::run_jobs(*make_gemv_backend(), jobs); }
};

// Every enumerated config of each problem is a candidate the tuner may pick: the first four and every fifth of the
// rest (rotating), so that over the problems each knob value runs.
TEST_F(GemvGpu, ShapesLayoutsConfigs) {
  const Layout R = Layout::row, C = Layout::col;
  const DType bf = DType::bf16, f16 = DType::f16, f32 = DType::f32;
  const Spec specs[] = {
      {1, 4096, 4096, 1, "", bf, bf, R, false, 0, false, true},
      {1, 1000, 1000, 1, "", bf, bf, R, false, 8, false, false},   // ragged rows, K % 8 == 0 but not % 256
      {1, 333, 77, 1, "", f16, f32, R, true, 0, false, false},     // K % 8 = 5
      {2, 777, 3, 1, "", bf, bf, C, false, 0, false, false},       // K < 8
      {3, 1536, 1028, 2, "", bf, f16, R, true, 8, true, false},    // batches, one weight matrix
      {4, 2050, 4100, 1, "", f16, f16, C, false, 0, false, true},
      {5, 96, 8200, 3, "", bf, f32, R, false, 8, false, false},    // few rows, long K (ksplit)
      {8, 4099, 520, 1, "", bf, bf, R, true, 0, false, false},
      {7, 640, 1, 1, "", bf, bf, R, false, 0, false, false},       // K = 1
      {4096, 1, 2048, 1, "", bf, bf, R, false, 0, false, false},   // vec=n: one column of B
      {1000, 6, 999, 2, "", f16, f32, C, true, 8, true, false},    // vec=n, batches, broadcast A
      {300, 8, 64, 1, "", bf, bf, R, false, 0, false, true},
      {6, 8, 136, 1, "", bf, bf, R, false, 0, false, false},       // both orientations valid
      {12, 2050, 1000, 1, "", bf, bf, R, true, 8, false, false},   // 9-16 vectors: mma=1 only, K % 64 = 40
      {16, 4096, 4104, 2, "", f16, f32, C, false, 0, true, true},  // two n-blocks, broadcast weights
      {3000, 13, 520, 1, "", bf, bf, R, false, 8, false, false},   // vec=n, 13 columns
      {9, 100, 24, 1, "", bf, f16, R, true, 0, false, false},      // K < 64: only the ragged step
  };
  std::vector<Job> jobs;
  size_t rot = 0;
  for (const Spec& s : specs) {
    const Problem p = make(s);
    const auto all = candidates(p);
    if (all.empty()) continue;
    bool mma[2] = {}, ring = false;
    for (size_t i = 0; i < all.size(); ++i)
      if (i < 4 || (i + rot) % 5 == 0) {
        jobs.push_back({p, all[i], {}, {}});
        mma[gemv::Config::parse(all[i].config).mma] = true;
        ring |= gemv::Config::parse(all[i].config).ring > 0;
      }
    EXPECT_TRUE(mma[1]) << "no mma=1 config ran on " << p.str();
    for (size_t i = 0; i < all.size() && !ring; ++i)  // and a ring wherever one is listed (K >= 64)
      if (gemv::Config::parse(all[i].config).ring > 0) jobs.push_back({p, all[i], {}, {}}), ring = true;
    EXPECT_TRUE(ring || p.k < 64) << "no ring config ran on " << p.str();
    ++rot;
  }
  EXPECT_GT(run_all(jobs), 100u);
}

TEST_F(GemvGpu, Chains) {
  const char* const chains[] = {"bias",
                                "bias_row",
                                "gelu_tanh",
                                "row_scale,col_scale,gelu_erf,residual:f32",
                                "bias,residual",
                                "silu_glu",
                                "swiglu:interleave8",
                                "bias,gelu_tanh_glu:interleave64,col_scale:f32,residual"};
  struct Sh {
    int64_t m, n, k, batch;
  };
  const Sh shapes[] = {{1, 1024, 1000, 1}, {5, 384, 264, 3}, {700, 3, 200, 2}, {13, 640, 136, 1}};
  std::vector<Job> jobs;
  int v = 0;
  for (const char* chain : chains) {
    const bool glu = parse_epilogue(chain).has_glu();
    for (const Sh& sh : shapes)
      for (Layout d : {Layout::row, Layout::col}) {
        ++v;
        if (glu && sh.m > 16) continue;  // a GLU pairs B's columns: vec=m only (unit test: the refusal)
        const Spec s{sh.m, sh.n, sh.k, sh.batch, chain, v % 2 ? DType::bf16 : DType::f16,
                     v % 3 == 0 ? DType::f32 : DType::bf16, d, !glu && v % 4 == 1, (v % 2) * 8, v % 3 == 1,
                     v % 5 == 2};
        const Problem p = make(s);
        const auto all = candidates(p);
        if (all.empty()) continue;
        for (size_t i = 0; i < all.size() && i < 3; ++i) jobs.push_back({p, all[(i * 7 + v) % all.size()], {}, {}});
        // and the best-ranked config of the other kernel than the first pick's
        const bool first_mma = gemv::Config::parse(all[v % all.size()].config).mma;
        for (const Candidate& c : all)
          if (gemv::Config::parse(c.config).mma != first_mma) {
            jobs.push_back({p, c, {}, {}});
            break;
          }
        for (const Candidate& c : all)  // and the best-ranked ring
          if (gemv::Config::parse(c.config).ring > 0) {
            jobs.push_back({p, c, {}, {}});
            break;
          }
      }
  }
  EXPECT_GT(run_all(jobs), 100u);
}

// K split across CTAs (csplit): explicit configs, as the enumerator lists them only where the row groups are few and
// from 4 vectors. The 8 x 4096 x 14336 it is made for; ragged K (K % 64 = 40 and 8: the last CTA's last warp takes the
// ragged step) and rows; CTAs with no 64-k step at all (K = 200: 3 steps for up to 8 CTAs); batches (slots per
// batch) with one weight matrix; C with an f32 column-major D; a chain and a GLU; four launches on two streams with D
// poisoned before each (every group's count must be back to zero after a launch, per stream).
TEST_F(GemvGpu, CtaSplit) {
  const Layout R = Layout::row, C = Layout::col;
  const DType bf = DType::bf16, f16 = DType::f16, f32 = DType::f32;
  const Spec specs[] = {
      {8, 4096, 14336, 1, "", bf, bf, R, false, 0, false, true},
      {12, 2050, 1000, 1, "", bf, bf, R, true, 8, false, false},
      {5, 96, 200, 3, "", f16, f32, C, true, 8, true, false},
      {16, 1024, 4104, 2, "bias,gelu_tanh", bf, bf, R, false, 0, false, true},
      {8, 1024, 1000, 1, "silu_glu", bf, bf, R, false, 0, false, false},
  };
  const char* const configs[] = {
      "vec=m,warps=8,rows=16,ksplit=2,unroll=2,mma=1,csplit=4",
      "vec=m,warps=4,rows=16,ksplit=1,unroll=1,mma=1,ring=4,csplit=8",
      "vec=m,warps=4,rows=32,ksplit=2,unroll=1,mma=1,csplit=2",
      "vec=m,warps=8,rows=16,ksplit=8,unroll=1,mma=1,ring=4,csplit=2",
  };
  auto be = make_gemv_backend();
  std::vector<Job> jobs;
  int refused = 0;
  for (const Spec& s : specs) {
    const Problem p = make(s);
    for (const char* cfg : configs) {
      const Candidate cand{"gemv", cfg};
      if (!be->validate(resolve(p), cand, current_device()).empty()) {
        ++refused;  // rows=32 with a GLU (m-blocks of 8 gate and 8 up rows: rows 8 or 16)
        continue;
      }
      jobs.push_back({p, cand, {}, {}, 4});
    }
  }
  EXPECT_LE(refused, 1);
  EXPECT_EQ(run_all(jobs), 19u);
}

// Configs --config takes that the enumerator does not list: rings of 2, 3 and 8 stages (3 with 8 warps splitting K
// holds 48 KiB of ring beside the K slices' static buffer: more than a kernel gets without the shared-memory
// attribute, which the launch failed on before it was set for every ring), and kernels compiled for more CTAs an SM
// (occ) where the enumerator does not ask for it (each spill-free on these problems; more CTAs an SM, or other
// configs, spill at some: --config takes them, the compile reports the spills).
TEST_F(GemvGpu, ExplicitConfigs) {
  const Layout R = Layout::row;
  const DType bf = DType::bf16, f32 = DType::f32;
  const Spec specs[] = {
      {8, 4096, 4160, 1, "", bf, bf, R, false, 0, false, true},
      {16, 1000, 1000, 2, "", bf, f32, R, true, 8, false, false},
      {3, 2050, 520, 1, "bias,silu", bf, bf, R, false, 0, false, false},
  };
  const char* const configs[] = {
      "vec=m,warps=8,rows=16,ksplit=8,unroll=1,mma=1,ring=3",
      "vec=m,warps=8,rows=16,ksplit=8,unroll=1,mma=1,ring=2,occ=3",
      "vec=m,warps=4,rows=16,ksplit=4,unroll=1,mma=1,ring=8",
      "vec=m,warps=8,rows=16,ksplit=8,unroll=1,mma=1,occ=3",
      "vec=m,warps=4,rows=16,ksplit=2,unroll=1,mma=1,occ=6",
  };
  auto be = make_gemv_backend();
  std::vector<Job> jobs;
  for (const Spec& s : specs) {
    const Problem p = make(s);
    for (const char* cfg : configs) {
      const Candidate cand{"gemv", cfg};
      EXPECT_EQ(be->validate(resolve(p), cand, current_device()), "") << cfg;
      jobs.push_back({p, cand, {}, {}});
    }
  }
  EXPECT_EQ(run_all(jobs), 15u);
}

// Any pitch and pointer alignment (loads of 8, 4 or 2 bytes, gemv::load_bytes): K = 1, 2, 4 (mod 8) with packed rows;
// leading dimensions = 1, 2, 4 (mod 8) with slack; A and B pointers offset by 2, 4 or 8 bytes from an allocation
// (declared in Operand::align); 1, 3 and 16 vectors in both orientations; batches with odd batch strides; a fused
// chain. Per problem the two best-ranked configs, the best of the other kernel and the best K split across CTAs;
// fresh random inputs, D poisoned, the double-precision reference.
TEST_F(GemvGpu, AnyAlignment) {
  const Layout R = Layout::row, C = Layout::col;
  const DType bf = DType::bf16, f16 = DType::f16, f32 = DType::f32;
  struct Case {
    Spec s;
    int align_a, align_b;  // bytes; the pointers get exactly this alignment
  };
  const Case cases[] = {
      {{1, 1000, 4097, 1, "", bf, bf, R, false, 0, false, true}, 16, 16},     // K = 1 (mod 8), packed: 2-byte loads
      {{3, 1000, 4098, 1, "", f16, f32, R, true, 0, false, false}, 16, 16},   // K = 2: 4-byte
      {{16, 1000, 4100, 1, "", bf, bf, C, false, 0, false, false}, 16, 16},   // K = 4: 8-byte, two n-blocks
      {{3, 1000, 1000, 1, "", bf, bf, R, false, 1, false, false}, 16, 16},    // ld = 1 (mod 8), slack
      {{1, 777, 1000, 1, "", bf, f16, R, false, 2, false, true}, 16, 16},     // ld = 2
      {{16, 640, 1000, 1, "", f16, bf, R, true, 4, false, false}, 16, 16},    // ld = 4
      {{1, 1000, 1024, 1, "", bf, bf, R, false, 0, false, false}, 2, 16},     // A's pointer + 2 bytes
      {{3, 1000, 1024, 1, "", bf, bf, R, false, 0, false, false}, 16, 4},     // B's pointer + 4 bytes
      {{16, 1000, 1024, 1, "", bf, bf, R, false, 0, false, false}, 8, 8},     // both + 8 bytes
      {{1000, 3, 1001, 1, "", bf, bf, C, true, 0, false, false}, 4, 2},       // vec=n, odd K, both offset
      {{3, 512, 1000, 3, "", bf, bf, R, false, 1, false, false}, 16, 16},     // batches, odd batch strides
      {{1000, 16, 999, 2, "", f16, f32, C, false, 1, false, true}, 8, 16},    // vec=n, batches, odd strides
      {{3, 1000, 4100, 1, "bias,gelu_tanh", bf, bf, R, false, 0, false, false}, 2, 8},  // a chain
      {{8, 1024, 2050, 1, "silu_glu", bf, bf, R, false, 0, false, false}, 16, 4},       // a GLU, 4-byte loads
  };
  auto be = make_gemv_backend();
  const DeviceInfo dev = current_device();
  struct Run {
    Problem p;
    Candidate cand;
    CompileResult cr;
    std::string error;
  };
  std::vector<Run> runs;
  std::vector<int> widths;
  for (const Case& c : cases) {
    Problem p = make(c.s);
    p.a.align = c.align_a;
    p.b.align = c.align_b;
    widths.push_back(gemv::load_bytes(p));
    const auto all = candidates(p);
    if (all.empty()) continue;
    auto pick = [&](auto&& want) {
      for (size_t i = 2; i < all.size(); ++i)
        if (want(gemv::Config::parse(all[i].config))) return runs.push_back({p, all[i], {}, {}});
    };
    for (size_t i = 0; i < all.size() && i < 2; ++i) runs.push_back({p, all[i], {}, {}});
    const bool mma0 = gemv::Config::parse(all[0].config).mma;
    pick([&](const gemv::Config& g) { return g.mma != mma0; });
    pick([](const gemv::Config& g) { return g.csplit > 1; });
  }
  for (int w : {8, 4, 2}) EXPECT_NE(std::find(widths.begin(), widths.end(), w), widths.end()) << w;
  jit::parallel_for(runs.size(), int(std::max(2u, std::thread::hardware_concurrency())), [&](size_t i) {
    try {
      runs[i].cr = be->compile(resolve(runs[i].p), runs[i].cand, dev);
    } catch (const std::exception& e) {
      runs[i].error = e.what();
    }
  });
  std::mt19937_64 rng(std::random_device{}());
  // An operand's bytes `align` past a 256-byte aligned allocation (so aligned to exactly `align` when < 16).
  auto place = [](const std::vector<uint8_t>& v, int align) {
    const size_t off = align % 16;
    cuda::DeviceBuffer buf(v.size() + 16);
    if (!v.empty()) buf.upload(v.data(), v.size(), off);
    void* ptr = static_cast<char*>(buf.get()) + off;
    return std::pair<cuda::DeviceBuffer, void*>{std::move(buf), ptr};
  };
  for (const Run& r : runs) {
    SCOPED_TRACE(r.cand.str() + " on " + r.p.str() + " (" + gemv::load_path(r.p) + ")");
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.cr.spill_bytes, 0) << r.cr.log;
    const Problem& p = r.p;
    auto exe = be->load(resolve(p), r.cand, r.cr);
    const auto a = test::random_operand(p, Which::A, rng), b = test::random_operand(p, Which::B, rng);
    std::vector<uint8_t> cv;
    if (p.beta != 0.0f) cv = test::random_operand(p, Which::C, rng);
    const test::EpilogueData e = test::random_epilogue(p, rng);
    const std::vector<double> ref = test::apply_epilogue(p, test::reference_d(p, a, b, cv), e);
    auto [da, pa] = place(a, p.a.align);
    auto [db, pb] = place(b, p.b.align);
    auto dc = test::upload(cv), bias = test::upload(e.bias), res = test::upload(e.residual),
         rs = test::upload(e.row_scale), cs = test::upload(e.col_scale);
    std::vector<uint8_t> d = test::poisoned_operand(p, Which::D);
    auto dd = test::upload(d);
    GemmArgs args{pa, pb, cv.empty() ? nullptr : dc.get(), dd.get()};
    args.bias = bias.get(), args.residual = res.get(), args.row_scale = rs.get(), args.col_scale = cs.get();
    cuda::StreamOwner stream;
    exe->launch(args, stream.get());
    stream.sync();
    dd.download(d.data(), d.size());
    EXPECT_LE(test::normalized_error(p, d, ref), test::kJobTolerance);
    EXPECT_EQ(test::written_outside(p, d), 0);
  }
  EXPECT_GE(runs.size(), 28u);  // at least the two best of each case
}

// ---- fp8: a self-contained check of the gemv kernel's fp8 paths (the tuner-level fp8 suite is test_fp8.cpp) ----
// Inputs are random bit patterns with a bounded exponent (exact on the host, no NaN), scales uniform in [0.5, 2); the
// reference dequantizes in double, per 128-k block for block scaling; D (and amax) compared by normalized error.

// One fp8 / 16-bit element: random bits of dtype `t` with magnitudes in [2^-3, 2^3), and their value.
uint16_t random_bits(DType t, std::mt19937_64& rng) {
  const uint32_t r = static_cast<uint32_t>(rng());
  const uint32_t s = r >> 31, m = r & 0x3FF, e = (r >> 10) % 6;  // exponent 2^-3 .. 2^2
  switch (t) {
    case DType::e4m3: return static_cast<uint16_t>(s << 7 | (e + 4) << 3 | (m & 7));
    case DType::e5m2: return static_cast<uint16_t>(s << 7 | (e + 12) << 2 | (m & 3));
    case DType::f16: return static_cast<uint16_t>(s << 15 | (e + 12) << 10 | m);
    default: return static_cast<uint16_t>(s << 15 | (e + 124) << 7 | (m & 0x7F));  // bf16
  }
}
double value_of(DType t, uint32_t bits) {
  auto f = [](uint32_t s, int e, double frac) { return (s ? -1.0 : 1.0) * std::ldexp(frac, e); };
  switch (t) {
    case DType::e4m3: {
      const uint32_t e = (bits >> 3) & 15, m = bits & 7;
      return e ? f(bits >> 7, int(e) - 7, 1 + m / 8.0) : f(bits >> 7, -6, m / 8.0);
    }
    case DType::e5m2: {
      const uint32_t e = (bits >> 2) & 31, m = bits & 3;
      return e ? f(bits >> 7, int(e) - 15, 1 + m / 4.0) : f(bits >> 7, -14, m / 4.0);
    }
    case DType::f16: {
      const uint32_t e = (bits >> 10) & 31, m = bits & 0x3FF;
      return e ? f(bits >> 15, int(e) - 15, 1 + m / 1024.0) : f(bits >> 15, -14, m / 1024.0);
    }
    case DType::bf16: {
      const uint32_t u = bits << 16;
      float x;
      std::memcpy(&x, &u, 4);
      return x;
    }
    default: {  // f32
      float x;
      std::memcpy(&x, &bits, 4);
      return x;
    }
  }
}

struct Fp8Case {
  int64_t m, n, k;
  DType a, b, d;
  Scaling sc;
  bool amax, null_scale_a;
  float alpha;
};

// A (M x K row-major) and B (N x K: col-major K x N), packed; D row-major.
void run_fp8_case(const Fp8Case& c, std::mt19937_64& rng, int* ran) {
  Problem p = Problem::make(c.m, c.n, c.k, c.a, c.d, Layout::row, Layout::col);
  p.b.dtype = c.b;
  p.scaling = c.sc;
  p.amax = c.amax;
  p.alpha = c.alpha;
  p.resolve();
  ASSERT_EQ(p.check(), "") << p.str();
  const auto all = candidates(p);
  ASSERT_FALSE(all.empty()) << p.str();
  const int64_t kb = (c.k + 127) / 128;
  auto fill = [&](DType t, int64_t n, std::vector<uint8_t>& bytes, std::vector<double>& vals) {
    const size_t es = dtype_size(t);
    bytes.resize(size_t(n) * es);
    vals.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t u = random_bits(t, rng);
      std::memcpy(&bytes[size_t(i) * es], &u, es);  // little-endian: the low byte for fp8
      vals[size_t(i)] = value_of(t, u);
    }
  };
  std::vector<uint8_t> ab, bb;
  std::vector<double> av, bv;
  fill(c.a, c.m * c.k, ab, av);
  fill(c.b, c.n * c.k, bb, bv);
  std::uniform_real_distribution<float> uni(0.5f, 2.0f);
  std::vector<float> sa(size_t(p.scale_len(Which::A))), sb(size_t(p.scale_len(Which::B)));
  for (float& x : sa) x = uni(rng);
  for (float& x : sb) x = uni(rng);
  const float sd = 0.75f;
  // v(m, n) = alpha * sum_k A sa * B sb (block scaling: per 128-k block).
  std::vector<double> ref(size_t(c.m * c.n));
  double amax = 0;
  for (int64_t m = 0; m < c.m; ++m)
    for (int64_t n = 0; n < c.n; ++n) {
      double v = 0;
      for (int64_t b = 0; b < kb; ++b) {
        double part = 0;
        for (int64_t k = b * 128; k < std::min(c.k, b * 128 + 128); ++k)
          part += av[size_t(m * c.k + k)] * bv[size_t(n * c.k + k)];
        double s = 1;
        if (c.sc == Scaling::tensor) s = (c.null_scale_a ? 1.0 : sa[0]) * sb[0];
        if (c.sc == Scaling::row) s = (c.null_scale_a ? 1.0 : sa[size_t(m)]) * sb[size_t(n)];
        if (c.sc == Scaling::block) s = double(sa[size_t(b * c.m + m)]) * sb[size_t((n / 128) * kb + b)];
        v += part * s;
      }
      v *= c.alpha;
      amax = std::max(amax, std::abs(v));
      ref[size_t(m * c.n + n)] = c.d == DType::e4m3 ? std::clamp(v * sd, -448.0, 448.0) : v;
    }
  const size_t ds = dtype_size(c.d);
  const double tol = c.d == DType::e4m3 ? 0.05 : 1e-2;
  auto be = make_gemv_backend();
  const DeviceInfo dev = current_device();
  auto da = test::upload(ab), db = test::upload(bb);
  cuda::DeviceBuffer dsa(sa.size() * 4), dsb(sb.size() * 4), dsd(4), dam(4), dd(size_t(c.m * c.n) * ds);
  dsa.upload(sa.data(), sa.size() * 4);
  dsb.upload(sb.data(), sb.size() * 4);
  dsd.upload(&sd, 4);
  for (size_t i = 0; i < all.size(); ++i) {
    if (i >= 3 && i % 7 != 0) continue;
    SCOPED_TRACE(all[i].str() + " on " + p.str());
    const CompileResult cr = be->compile(resolve(p), all[i], dev);
    ASSERT_EQ(cr.spill_bytes, 0) << cr.log;
    auto exe = be->load(resolve(p), all[i], cr);
    std::vector<uint8_t> d(size_t(c.m * c.n) * ds, 0xFF);  // NaN in every output type
    dd.upload(d.data(), d.size());
    const float nan = std::numeric_limits<float>::quiet_NaN();
    dam.upload(&nan, 4);
    GemmArgs args{da.get(), db.get(), nullptr, dd.get()};
    args.scale_a = c.null_scale_a ? nullptr : static_cast<const float*>(dsa.get());
    args.scale_b = static_cast<const float*>(dsb.get());
    args.scale_d = static_cast<const float*>(dsd.get());
    args.amax = static_cast<float*>(dam.get());
    cuda::StreamOwner stream;
    for (int rep = 0; rep < 2; ++rep) exe->launch(args, stream.get());  // the second meets the first's state
    stream.sync();
    dd.download(d.data(), d.size());
    double se = 0, sr = 0;
    for (size_t j = 0; j < ref.size(); ++j) {
      uint32_t bits = 0;
      std::memcpy(&bits, &d[j * ds], ds);
      const double o = value_of(c.d, bits);
      se += (o - ref[j]) * (o - ref[j]);
      sr += ref[j] * ref[j];
    }
    const double err = std::sqrt(se / std::max(sr, 1e-30));
    EXPECT_LE(err, tol);  // also false for NaN
    if (c.amax) {
      float got = 0;
      dam.download(&got, 4);
      EXPECT_NEAR(got, amax, 1e-2 * amax);
    }
    ++*ran;
  }
}

TEST_F(GemvGpu, Fp8) {
  const DeviceInfo& info = current_device();
  if (info.cc_major < 9 && !(info.cc_major == 8 && info.cc_minor >= 9)) GTEST_SKIP() << "fp8 needs sm_89+";
  const DType e4 = DType::e4m3, e5 = DType::e5m2, bf = DType::bf16, f16 = DType::f16, f32 = DType::f32;
  const Fp8Case cases[] = {
      {4, 1000, 1100, e4, e4, bf, Scaling::block, false, false, 1.0f},   // K % 128 = 76, ragged rows
      {16, 640, 2048, e4, e4, f32, Scaling::block, false, false, 0.5f},  // two n-blocks
      {1000, 5, 300, e4, e4, bf, Scaling::block, false, false, 1.0f},    // vec=n: the weights are A
      {3, 777, 520, bf, e4, f32, Scaling::row, false, true, 1.0f},       // weight-only, no scale_a
      {12, 512, 640, f16, e5, f16, Scaling::tensor, false, false, 1.0f},
      {8, 640, 384, e4, e4, e4, Scaling::row, true, false, 1.0f},        // e4m3 D with amax
      {1, 4096, 4096, e5, e4, bf, Scaling::tensor, false, false, 1.0f},
      {600, 4, 256, bf, e4, bf, Scaling::tensor, false, false, 1.0f},    // vec=n, 16-bit weights, fp8 vectors
      {5, 1024, 1024, bf, e5, bf, Scaling::row, false, false, 1.0f},     // e5m2 to bf16
  };
  std::mt19937_64 rng(std::random_device{}());
  int ran = 0;
  for (const Fp8Case& c : cases) run_fp8_case(c, rng, &ran);
  EXPECT_GE(ran, 24);
}

TEST_F(GemvGpu, MisalignedPointerThrows) {
  Problem p = Problem::make(1, 256, 256, DType::bf16, DType::bf16);
  p.resolve();
  auto be = make_gemv_backend();
  const Candidate cand = be->enumerate(resolve(p), current_device()).front();
  auto exe = be->load(resolve(p), cand, be->compile(resolve(p), cand, current_device()));
  cuda::DeviceBuffer a(256 * 2 + 64), b(256 * 256 * 2 + 64), d(256 * 2);
  EXPECT_THROW(exe->launch({static_cast<char*>(a.get()) + 2, b.get(), nullptr, d.get()}, nullptr), Error);
  EXPECT_THROW(exe->launch({a.get(), static_cast<char*>(b.get()) + 8, nullptr, d.get()}, nullptr), Error);
  const Problem f = [] {
    Problem q = Problem::make(1, 256, 256, DType::bf16, DType::bf16);
    q.epilogue = parse_epilogue("bias");
    return q.resolve();
  }();
  const Candidate fc = be->enumerate(resolve(f), current_device()).front();
  auto fe = be->load(resolve(f), fc, be->compile(resolve(f), fc, current_device()));
  EXPECT_THROW(fe->launch({a.get(), b.get(), nullptr, d.get()}, nullptr), Error);  // the bias is missing
}

}  // namespace
}  // namespace gemmtune
