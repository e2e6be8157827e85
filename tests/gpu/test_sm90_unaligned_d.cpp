// sm90 with a D that TMA cannot store, on the GPU: D pitches of 1, 2 and 4 (mod 8) elements, D base pointers offset
// by 2, 4 and 8 bytes, ragged M and N, a column-major D with odd M, an odd D batch stride, C of odd ld (and a C base
// off 16 bytes), each epilogue op kind (GLU halves and interleaved included), f32 and f16 D, the ragged-N edge copy of
// a TMA-stored D, epi=warp pieces, 112-byte strips and swap=1; coop and ping-pong. Each against the double-precision
// CPU reference (gpu_test_util.h) with D poisoned with NaN, and every byte outside D's logical elements (the padding
// between rows, the bytes before the offset base and a guard zone after the end) checked untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/sm90/sm90_backend.h"
#include "backends/sm90/sm90_config.h"
#include "cuda/driver.h"
#include "cuda/memory.h"
#include "gemmtune/device.h"
#include "gemmtune/errors.h"
#include "gpu_test_util.h"
#include "jit/thread_pool.h"

namespace gemmtune {
namespace {

constexpr size_t kGuard = 256;  // poisoned bytes after D's span

struct Case {
  Problem p;
  int d_off = 0;  // D's base pointer is this many bytes past a 256-byte aligned allocation (the residual's too)
  int c_off = 0;  // C's
  Candidate cand;
  CompileResult cr;
  std::string compile_error;
};

struct Spec {
  int64_t m, n, k, batch = 1;
  DType out = DType::bf16;
  Layout ld_layout = Layout::row;
  int64_t ldd = 0, d_bs = -1;  // 0 / -1: packed
  int d_off = 0;
  const char* chain = "none";
  float beta = 0.0f;
  int64_t ldc = 0;
  int c_off = 0;
};

Problem make(const Spec& s) {
  Problem p = Problem::make(s.m, s.n, s.k, DType::bf16, s.out, Layout::row, Layout::col, s.batch);
  p.epilogue = parse_epilogue(s.chain);
  p.alpha = 0.75f;
  p.beta = s.beta;
  p.d.layout = s.ld_layout;
  p.d.ld = s.ldd;
  p.d.batch_stride = s.d_bs;
  p.d.align = s.d_off ? s.d_off : 16;
  p.c = p.d;
  p.c.ld = s.ldc;
  p.c.batch_stride = -1;
  p.c.align = s.c_off ? s.c_off : 16;
  p.resolve();
  return p;
}

// The first coop and the first ping-pong candidate without swap, or the configs given.
std::vector<Candidate> candidates(const Problem& p, const std::vector<const char*>& configs) {
  std::vector<Candidate> out;
  if (!configs.empty()) {
    for (const char* c : configs) out.push_back({"sm90", c});
    return out;
  }
  bool got[2] = {false, false};
  for (const Candidate& c : make_sm90_backend()->enumerate(resolve(p), current_device())) {
    const sm90::Config cfg = sm90::Config::parse(c.config);
    if (cfg.swap || got[cfg.pingpong]) continue;
    got[cfg.pingpong] = true;
    out.push_back(c);
  }
  return out;
}

// Host bytes `v` placed `off` bytes into a device buffer (the bytes before stay poisoned).
cuda::DeviceBuffer upload_at(const std::vector<uint8_t>& v, int off, size_t extra = 0) {
  if (v.empty()) return {};
  std::vector<uint8_t> h(off + v.size() + extra, 0xFF);
  std::copy(v.begin(), v.end(), h.begin() + off);
  cuda::DeviceBuffer buf(h.size());
  buf.upload(h.data(), h.size());
  return buf;
}

std::string run_case(const Backend& be, const Case& c, std::mt19937_64& rng) {
  const Problem& p = c.p;
  if (!c.compile_error.empty()) return "compile: " + c.compile_error;
  if (c.cr.spill_bytes > 0) return "SKIP spills " + std::to_string(c.cr.spill_bytes) + " bytes";
  auto exe = be.load(resolve(p), c.cand, c.cr);
  const auto a = test::random_operand(p, Which::A, rng), b = test::random_operand(p, Which::B, rng);
  std::vector<uint8_t> cv;
  if (p.beta != 0.0f) cv = test::random_operand(p, Which::C, rng);
  const test::EpilogueData e = test::random_epilogue(p, rng);
  const std::vector<double> ref = test::apply_epilogue(p, test::reference_d(p, a, b, cv), e);
  // The residual is D-shaped and sits at D's offset where its element size allows (its pairs follow D's alignment).
  const int res_off =
      p.epilogue.has(EpiOpKind::residual) && c.d_off % dtype_size(p.epilogue_dtype(EpiOpKind::residual)) == 0
          ? c.d_off
          : 0;
  auto da = upload_at(a, 0), db = upload_at(b, 0), dc = upload_at(cv, c.c_off), bias = upload_at(e.bias, 0),
       res = upload_at(e.residual, res_off), rs = upload_at(e.row_scale, 0), cs = upload_at(e.col_scale, 0);
  const size_t span = test::span_bytes(p, Which::D), total = c.d_off + span + kGuard;
  const std::vector<uint8_t> poison(total, 0xFF);
  cuda::DeviceBuffer dd(total);
  auto at = [](const cuda::DeviceBuffer& buf, int off) -> void* {
    return buf.get() ? static_cast<char*>(buf.get()) + off : nullptr;
  };
  GemmArgs args{da.get(), db.get(), at(dc, c.c_off), at(dd, c.d_off)};
  args.bias = bias.get(), args.residual = at(res, res_off), args.row_scale = rs.get(), args.col_scale = cs.get();
  std::vector<uint8_t> out(total);
  for (int i = 0; i < 2; ++i) {  // the second launch reuses the first's tensor maps
    dd.upload(poison.data(), total);
    exe->launch(args, nullptr);
    GT_CU(cuCtxSynchronize());
  }
  dd.download(out.data(), total);
  int64_t outside = 0;
  for (size_t i = 0; i < size_t(c.d_off); ++i) outside += out[i] != 0xFF;
  for (size_t i = c.d_off + span; i < total; ++i) outside += out[i] != 0xFF;
  const std::vector<uint8_t> d(out.begin() + c.d_off, out.begin() + c.d_off + span);
  outside += test::written_outside(p, d);
  const double err = test::normalized_error(p, d, ref);
  if (!(err <= 1e-2) || outside)
    return "err=" + std::to_string(err) + " bytes-written-outside=" + std::to_string(outside);
  return "";
}

class Sm90UnalignedDGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu_available()) GTEST_SKIP() << "no GPU";
    if (current_device().cc_major != 9) GTEST_SKIP() << "not Hopper";
    cuda::ensure_context();
  }
};

TEST_F(Sm90UnalignedDGpu, EveryStoreClass) {
  struct Row {
    Spec s;
    std::vector<const char*> configs;  // empty: the first coop and ping-pong candidates
  };
  const std::vector<Row> rows = {
      // D pitch classes 1, 2, 4 (mod 8) with base offsets 0, 2, 4, 8; ragged M and N.
      {{300, 333, 200, 1, DType::bf16, Layout::row, 337, -1, 0}, {}},
      {{300, 333, 200, 1, DType::bf16, Layout::row, 338, -1, 2}, {}},
      {{300, 333, 200, 1, DType::f16, Layout::row, 340, -1, 4}, {}},
      {{300, 333, 200, 1, DType::bf16, Layout::row, 337, -1, 8}, {}},
      {{257, 1024, 128, 1, DType::bf16, Layout::row, 1025, -1, 2}, {}},  // whole tiles along N, odd pitch
      // A TMA pitch with a base below 16 bytes; the ragged-N edge copy of a TMA-stored D.
      {{300, 344, 200, 1, DType::bf16, Layout::row, 344, -1, 8}, {}},
      {{300, 333, 200, 1, DType::bf16, Layout::row, 344, -1, 0}, {}},
      // f32 D: odd pitch, base 4 bytes off.
      {{300, 333, 200, 1, DType::f32, Layout::row, 337, -1, 4}, {}},
      // Column-major D with odd M (the view's pitch is M).
      {{301, 256, 200, 1, DType::bf16, Layout::col, 0, -1, 0}, {}},
      {{301, 256, 200, 1, DType::f32, Layout::col, 303, -1, 4}, {}},
      // Batches with an odd D batch stride.
      {{130, 200, 136, 3, DType::bf16, Layout::row, 200, 130 * 200 + 1, 0}, {}},
      {{130, 200, 136, 2, DType::f32, Layout::row, 201, 130 * 201 + 3, 4}, {}},
      // beta != 0: C of odd ld; C's base 2 bytes off with an even ld.
      {{300, 333, 200, 1, DType::bf16, Layout::row, 337, -1, 2, "none", -1.25f, 335, 0}, {}},
      {{300, 334, 200, 1, DType::bf16, Layout::row, 338, -1, 8, "none", 0.5f, 336, 2}, {}},
      // Each op kind.
      {{300, 333, 200, 1, DType::bf16, Layout::row, 337, -1, 2, "bias,gelu_tanh"}, {}},
      {{300, 334, 200, 1, DType::bf16, Layout::row, 338, -1, 4, "residual"}, {}},  // residual pairs
      {{300, 333, 200, 1, DType::f16, Layout::row, 341, -1, 2, "row_scale,col_scale,gelu_erf,residual:f32"}, {}},
      {{301, 256, 200, 1, DType::bf16, Layout::col, 0, -1, 0, "bias_row,silu,residual"}, {}},
      {{300, 672, 200, 1, DType::bf16, Layout::row, 337, -1, 2, "silu_glu"}, {}},
      {{300, 512, 200, 1, DType::bf16, Layout::row, 258, -1, 4, "swiglu:interleave8"}, {}},
      {{300, 512, 200, 1, DType::bf16, Layout::row, 259, -1, 0, "gelu_tanh_glu:interleave64"}, {}},
      // epi=warp pieces (128-byte strips and a tail), 112-byte unswizzled strips (tile N 168), the stream-K tail.
      {{300, 1000, 520, 1, DType::bf16, Layout::row, 1001, -1, 2},
       {"tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=8,epi=warp",
        "tile=128x168x64,stages=5,cluster=1x2,sched=coop,raster=m,group=8",
        "tile=128x128x64,stages=6,cluster=1x1,sched=coop,raster=m,group=4,tail=sk"}},
      // Wider tiles: 128-byte strips x 4 (coop 128x256), 144-byte unswizzled strips (36 words: the (row, word) loop),
      // 64-byte strips (tile N 160); f32 D in 128-byte and 64-byte strips.
      {{300, 1000, 256, 1, DType::bf16, Layout::row, 1001, -1, 2},
       {"tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=m,group=8",
        "tile=128x144x64,stages=5,cluster=1x1,sched=coop,raster=m,group=8",
        "tile=128x160x64,stages=5,cluster=1x1,sched=pingpong,raster=m,group=8"}},
      {{300, 333, 256, 1, DType::f32, Layout::row, 337, -1, 4},
       {"tile=128x128x64,stages=4,cluster=1x1,sched=coop,raster=m,group=8",
        "tile=128x144x64,stages=4,cluster=1x1,sched=pingpong,raster=m,group=8"}},
      // swap=1: element stores from registers.
      {{16, 1001, 256, 1, DType::bf16, Layout::row, 1003, -1, 2, "bias,residual"},
       {"tile=64x16x64,stages=16,cluster=1x1,sched=pingpong,raster=m,group=6,swap=1"}},
  };
  auto be = make_sm90_backend();
  const DeviceInfo dev = current_device();
  std::vector<Case> cases;
  for (const Row& r : rows) {
    const Problem p = make(r.s);
    if (std::string why = p.check(); !why.empty()) {
      ADD_FAILURE() << "bad test problem " << p.str() << ": " << why;
      continue;
    }
    const std::vector<Candidate> cands = candidates(p, r.configs);
    EXPECT_FALSE(cands.empty()) << p.str();
    for (const Candidate& c : cands) {
      Case k;
      k.p = p;
      k.d_off = r.s.d_off;
      k.c_off = r.s.c_off;
      k.cand = c;
      cases.push_back(k);
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  jit::parallel_for(cases.size(), int(std::max(2u, std::thread::hardware_concurrency())), [&](size_t i) {
    try {
      cases[i].cr = be->compile(resolve(cases[i].p), cases[i].cand, dev);
    } catch (const std::exception& e) {
      cases[i].compile_error = e.what();
    }
  });
  std::printf("%zu cases compiled in %.1f s\n", cases.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  std::mt19937_64 rng(std::random_device{}());
  int ran = 0;
  for (const Case& c : cases) {
    std::string r;
    try {
      r = run_case(*be, c, rng);
    } catch (const std::exception& e) {
      r = std::string("threw: ") + e.what();
    }
    if (r.rfind("SKIP", 0) == 0) {
      std::printf("skip %s on %s: %s\n", c.cand.str().c_str(), c.p.str().c_str(), r.c_str());
      continue;
    }
    ++ran;
    EXPECT_EQ(r, "") << c.cand.str() << " on " << c.p.str() << " (D base +" << c.d_off << " bytes, C +" << c.c_off
                     << ")";
  }
  EXPECT_GT(ran, int(cases.size()) * 3 / 4);
}

// The launch checks what the kernel needs of each pointer: a D less aligned than its element, a C that the kernel
// reads in pairs less aligned than a pair, and a D that the kernel TMA-stores less aligned than 16 bytes.
TEST_F(Sm90UnalignedDGpu, LaunchChecksPointers) {
  auto be = make_sm90_backend();
  const DeviceInfo dev = current_device();
  cuda::DeviceBuffer a(1 << 20), b(1 << 20), c(1 << 20), d(1 << 20);
  char* dp = static_cast<char*>(d.get());
  char* cp = static_cast<char*>(c.get());
  {
    const Problem p = make({128, 129, 64, 1, DType::bf16, Layout::row, 0, -1, 2});  // staged D, 2-byte aligned
    const Candidate cand = candidates(p, {}).front();
    auto exe = be->load(resolve(p), cand, be->compile(resolve(p), cand, dev));
    EXPECT_NO_THROW(exe->launch({a.get(), b.get(), nullptr, dp + 2}, nullptr));
    EXPECT_THROW(exe->launch({a.get(), b.get(), nullptr, dp + 1}, nullptr), Error);
  }
  {
    const Problem p = make({128, 128, 64, 1, DType::bf16, Layout::row, 0, -1, 0, "none", 0.5f});  // TMA D, pair C
    const Candidate cand = candidates(p, {}).front();  // not swap=1, which stores D without TMA
    auto exe = be->load(resolve(p), cand, be->compile(resolve(p), cand, dev));
    EXPECT_NO_THROW(exe->launch({a.get(), b.get(), cp, dp}, nullptr));
    EXPECT_THROW(exe->launch({a.get(), b.get(), cp + 2, dp}, nullptr), Error);
    EXPECT_THROW(exe->launch({a.get(), b.get(), cp, dp + 8}, nullptr), Error);
  }
  GT_CU(cuCtxSynchronize());
}

}  // namespace
}  // namespace gemmtune
