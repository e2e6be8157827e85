// sm90 load=cp on the GPU: A and B that TMA cannot load (pitches of 2 or 4 (mod 8) elements, base pointers offset by
// 4 or 8 bytes, batch strides off 16 bytes), alone or beside an operand TMA loads, every A/B layout pair, ragged M, N
// and K (K neither a multiple of 64 nor of 8), batch, beta != 0, a fused chain and a GLU. Fresh random inputs, D poisoned with NaN (padding included),
// normalized error against the double CPU reference at most 1e-2, no byte outside D's elements written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "backends/sm90/sm90_backend.h"
#include "backends/sm90/sm90_config.h"
#include "cuda/memory.h"
#include "gemmtune/device.h"
#include "gemmtune/epilogue.h"
#include "gpu_jobs.h"
#include "gpu_test_util.h"

namespace gemmtune {
namespace {

struct Case {
  int64_t m, n, k, batch;
  Layout a, b;
  int64_t lda_extra, ldb_extra;  // added to the packed leading dimension (elements)
  int a_off, b_off;              // bytes the A / B pointers sit past a 256-byte aligned allocation
  int64_t bs_extra;              // added to every packed batch stride (elements)
  bool beta;
  const char* epilogue;  // "" for none
  const char* config;
};

Problem make_problem(const Case& c) {
  Problem p = Problem::make(c.m, c.n, c.k, DType::bf16, DType::bf16, c.a, c.b, c.batch);
  p.alpha = 0.75f;
  p.beta = c.beta ? -1.25f : 0.0f;
  if (*c.epilogue) p.epilogue = parse_epilogue(c.epilogue);
  p.a.ld = (c.a == Layout::row ? c.k : c.m) + c.lda_extra;
  p.b.ld = (c.b == Layout::row ? p.n : c.k) + c.ldb_extra;
  p.d.ld = (p.n_out() + 7) / 8 * 8;
  p.c = p.d;
  p.a.align = c.a_off == 0 ? 16 : c.a_off;
  p.b.align = c.b_off == 0 ? 16 : c.b_off;
  for (Operand* o : {&p.a, &p.b, &p.c, &p.d}) o->batch_stride = -1;
  p.resolve();
  if (c.batch > 1)
    for (Operand* o : {&p.a, &p.b}) o->batch_stride += c.bs_extra;
  return p;
}

// Uploads `v` at `off` bytes into a fresh allocation; returns the allocation (keep it alive) and sets `ptr`.
cuda::DeviceBuffer upload_at(const std::vector<uint8_t>& v, int off, const void*& ptr) {
  cuda::DeviceBuffer buf(v.size() + 16);
  ptr = static_cast<const uint8_t*>(buf.get()) + off;
  buf.upload(v.data(), v.size(), static_cast<size_t>(off));
  return buf;
}

// "" when D is right after two launches, "SKIP ..." when the kernel spills, else what went wrong.
std::string run_case(const Case& c, std::mt19937_64& rng) {
  const Problem p = make_problem(c);
  auto be = make_sm90_backend();
  const DeviceInfo& dev = current_device();
  const Candidate cand{"sm90", c.config};
  if (std::string r = be->validate(resolve(p), cand, dev); !r.empty()) return "invalid: " + r;
  const CompileResult cr = be->compile(resolve(p), cand, dev);
  if (cr.spill_bytes > 0) return test::spill_skip(cr);
  auto exe = be->load(resolve(p), cand, cr);
  const auto a = test::random_operand(p, Which::A, rng), b = test::random_operand(p, Which::B, rng);
  std::vector<uint8_t> cv;
  if (p.beta != 0.0f) cv = test::random_operand(p, Which::C, rng);
  const test::EpilogueData e = test::random_epilogue(p, rng);
  const std::vector<double> ref = test::apply_epilogue(p, test::reference_d(p, a, b, cv), e);
  const void *pa = nullptr, *pb = nullptr;
  auto da = upload_at(a, c.a_off, pa), db = upload_at(b, c.b_off, pb);
  auto dc = test::upload(cv), bias = test::upload(e.bias), res = test::upload(e.residual);
  std::vector<uint8_t> d = test::poisoned_operand(p, Which::D);
  auto dd = test::upload(d);
  GemmArgs args{pa, pb, cv.empty() ? nullptr : dc.get(), dd.get()};
  args.bias = bias.get(), args.residual = res.get();
  cuda::StreamOwner s;
  for (int i = 0; i < 2; ++i) {
    dd.upload(d.data(), d.size());
    exe->launch(args, s.get());
    s.sync();
  }
  dd.download(d.data(), d.size());
  const double err = test::normalized_error(p, d, ref);
  const int64_t outside = test::written_outside(p, d);
  if (!(err <= test::kJobTolerance) || outside)
    return "err=" + std::to_string(err) + " bytes-written-outside=" + std::to_string(outside);
  return "";
}

class Sm90UnalignedAB : public test::GpuTest {};

constexpr Layout R = Layout::row, C = Layout::col;
constexpr const char* kCoop = "tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=m,group=8,load=cp";
constexpr const char* kCoop128 = "tile=128x128x64,stages=5,cluster=1x1,sched=coop,raster=n,group=4,load=cp";
constexpr const char* kPingpong = "tile=128x128x64,stages=5,cluster=1x1,sched=pingpong,raster=m,group=8,load=cp";
constexpr const char* kPingpong64 = "tile=64x192x64,stages=4,cluster=1x1,sched=pingpong,raster=n,group=8,load=cp";

TEST_F(Sm90UnalignedAB, Matrix) {
  const std::vector<Case> cases = {
      // K-major A and B, pitches 2 and 4 (mod 8) elements: 4- and 8-byte pieces; ragged M, N, K (K % 8 != 0).
      {300, 260, 1001, 1, R, C, 1, 3, 0, 0, 0, false, "", kCoop},
      {300, 260, 1001, 1, R, C, 3, 1, 0, 0, 0, false, "", kPingpong},
      {300, 260, 1001, 1, R, C, 1, 3, 0, 0, 0, false, "", kPingpong64},
      // M-major A, N-major B (tile N a multiple of 64), and the mixed pairs.
      {298, 254, 777, 1, C, R, 2, 4, 0, 0, 0, false, "", kCoop128},
      {298, 254, 777, 1, C, R, 4, 6, 0, 0, 0, false, "", kPingpong},
      {301, 250, 700, 1, C, C, 5, 2, 0, 0, 0, false, "", kCoop},
      {301, 250, 700, 1, R, R, 0, 4, 0, 0, 0, false, "", kPingpong},
      // Pitches on 16 bytes, pointers 4 and 8 bytes off.
      {256, 384, 512, 1, R, C, 0, 0, 4, 8, 0, false, "", kCoop},
      {256, 384, 512, 1, C, R, 0, 0, 8, 4, 0, false, "", kPingpong},
      // Batches whose strides are 2 / 4 (mod 8) elements, one batch pitch aligned.
      {200, 136, 300, 3, R, C, 0, 0, 0, 0, 2, false, "", kCoop128},
      {200, 136, 300, 3, C, R, 4, 0, 0, 0, 4, false, "", kPingpong},
      // beta != 0, a fused chain, a GLU over B's halves.
      {260, 300, 1000, 1, R, C, 2, 2, 0, 0, 0, true, "", kCoop},
      {260, 300, 1000, 1, R, R, 2, 2, 0, 4, 0, false, "bias,gelu_tanh", kPingpong},
      {260, 512, 1000, 1, R, C, 4, 2, 0, 0, 0, false, "silu_glu", kCoop},
      // A sliced A (8 bytes off) beside a TMA B, with a stream-K tail (split: 16 tiles over more CTAs); B's GLU halves
      // by TMA beside a 4-byte A.
      {512, 512, 2048, 1, R, C, 0, 0, 8, 0, 0, false, "",
       "tile=128x128x64,stages=5,cluster=1x1,sched=coop,raster=m,group=8,tail=sk,load=cp"},
      {260, 512, 512, 1, R, C, 2, 0, 0, 0, 0, false, "silu_glu", kPingpong},
  };
  std::mt19937_64 rng(std::random_device{}());
  int ran = 0;
  for (const Case& c : cases) {
    const Problem p = make_problem(c);
    const std::string r = run_case(c, rng);
    if (test::is_skip(r)) {
      std::printf("skip %s | %s: %s\n", p.str().c_str(), c.config, r.c_str());
      continue;
    }
    ++ran;
    EXPECT_EQ(r, "") << "sm90:" << c.config << " on " << p.str() << " ("
                     << sm90::load_path(p, sm90::kernel_view(resolve(p))) << ")";
  }
  EXPECT_GT(ran, 10);
}

// The enumerated lists of unaligned problems run: their first candidates, whatever the ranking picks (at 16 rows the
// decode tiles, swap=1 among them).
TEST_F(Sm90UnalignedAB, EnumeratedTop) {
  auto be = make_sm90_backend();
  std::mt19937_64 rng(std::random_device{}());
  for (const Case& c : {Case{600, 264, 4100, 1, R, C, 0, 0, 0, 0, 0, false, "", ""},
                        Case{16, 1000, 4100, 1, R, C, 0, 0, 0, 0, 0, false, "", ""}}) {
    const Problem p = make_problem(c);
    const std::vector<Candidate> list = be->enumerate(resolve(p), current_device());
    ASSERT_FALSE(list.empty()) << be->supports(resolve(p), current_device());
    for (size_t i = 0; i < std::min<size_t>(3, list.size()); ++i) {
      Case ci = c;
      ci.config = list[i].config.c_str();
      const std::string r = run_case(ci, rng);
      if (test::is_skip(r)) continue;
      EXPECT_EQ(r, "") << list[i].str() << " on " << p.str();
    }
  }
}

}  // namespace
}  // namespace gemmtune
