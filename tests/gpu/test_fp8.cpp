// Scaled fp8 GEMMs on the GPU, backend-agnostic: for each problem, every backend that supports it runs its first few
// enumerated candidates on fresh random inputs (fp8 values from N(0,1), scales uniform in [0.5, 2)), D and amax
// poisoned with NaN, against the fp64 dequantized CPU reference (gpu_test_util.h): normalized RMS error <= 1e-2
// (0.05 for an e4m3 D, compared with saturate(v * scale_d)), nothing outside D written, amax within 1e-2 of max |v|.
// A problem no backend takes fails, unless the test lists it as refused with the reason it expects. The last test
// shows on adversarial inputs that fp8_accum=exact keeps fp32 accuracy and fast does not.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "cuda/memory.h"
#include "gemmtune/errors.h"
#include "gemmtune/gemm.h"
#include "gpu_test_util.h"
#include "jit/thread_pool.h"
#include "tuner/reference.h"

namespace gemmtune {
namespace {

constexpr int kPerBackend = 4;          // candidates per backend and problem: the heuristics' first ones
constexpr double kTolerance = 1e-2;     // normalized RMS error of a 16/32-bit D; amax's relative error
constexpr double kTolE4m3 = 0.05;       // an e4m3 D: 3 mantissa bits of rounding on top of the GEMM's error

struct Case {
  Problem p;
  bool null_scale_a = false;  // a 16-bit A: scale_a null (= 1)
  bool saturate = false;      // scale_d so that the largest |v * scale_d| reach about 2 x 448
  // A problem gemmtune accepts but no backend runs (yet): every backend must refuse it, one of them with a reason
  // containing this. A backend that takes it fails the test, so that the entry is dropped once it runs.
  const char* refused = nullptr;
  // sm90 configs to run instead of every backend's first enumerated ones (each must be valid for the problem).
  std::vector<std::string> sm90_configs = {};
};

// An fp8 (or weight-only) problem: A row-major, B col-major (the layout rule), D row-major of `out`.
Problem fp8_problem(int64_t m, int64_t n, int64_t k, Scaling sc, DType out, DType a = DType::e4m3,
                    DType b = DType::e4m3, const std::string& epilogue = "", bool amax = false) {
  Problem p = Problem::make(m, n, k, a, out);
  p.b.dtype = b;
  p.scaling = sc;
  p.amax = amax;
  if (!epilogue.empty()) p.epilogue = parse_epilogue(epilogue);
  p.resolve();
  return p;
}

struct Job {
  size_t problem;  // index into the cases
  std::shared_ptr<Backend> be;
  Candidate cand;
  CompileResult cr;
  std::string compile_error;
};

cuda::DeviceBuffer upload(const void* data, size_t bytes) {
  if (bytes == 0) return {};
  cuda::DeviceBuffer buf(bytes);
  buf.upload(data, bytes);
  return buf;
}
cuda::DeviceBuffer upload(const std::vector<uint8_t>& v) { return upload(v.data(), v.size()); }
cuda::DeviceBuffer upload(const std::vector<float>& v) { return upload(v.data(), v.size() * sizeof(float)); }

// One problem's inputs and what D must hold.
struct Data {
  std::vector<uint8_t> a, b, c;
  test::EpilogueData e;
  test::Scales s;
  std::vector<double> v;         // the final values (after the epilogue), packed [batch][M][n_out]
  std::vector<double> expected;  // what D holds: v, or saturate(v * scale_d) for an e4m3 D
  double amax = 0;               // max |v|
};

Data make_data(const Case& cs, std::mt19937_64& rng) {
  const Problem& p = cs.p;
  Data d;
  d.a = test::random_operand(p, Which::A, rng);
  d.b = test::random_operand(p, Which::B, rng);
  if (p.beta != 0.0f) d.c = test::random_operand(p, Which::C, rng);
  d.e = test::random_epilogue(p, rng);
  d.s = test::random_scales(p, rng, cs.null_scale_a);
  d.v = test::apply_epilogue(p, test::reference_scaled(p, d.a, d.b, d.c, d.s), d.e);
  d.amax = test::max_abs(d.v);
  if (p.d.dtype == DType::e4m3) {
    // Without saturation, scale_d brings the largest |v| to about 300 (all of e4m3's range used, none clipped).
    d.s.d = float((cs.saturate ? 2 * 448.0 : 300.0) / std::max(d.amax, 1e-30));
    d.expected = test::e4m3_expected(d.v, d.s.d);
  } else {
    d.expected = d.v;
  }
  return d;
}

// Runs one compiled candidate twice (D and amax poisoned before each launch); "" or what is wrong.
std::string run_job(const Case& cs, const Job& j, const Data& data) {
  const Problem& p = cs.p;
  if (!j.compile_error.empty()) return "compile: " + j.compile_error;
  if (j.cr.spill_bytes > 0) return "SKIP spills " + std::to_string(j.cr.spill_bytes) + " bytes";
  auto exe = j.be->load(resolve(p), j.cand, j.cr);
  auto da = upload(data.a), db = upload(data.b), dc = upload(data.c), bias = upload(data.e.bias),
       res = upload(data.e.residual), rs = upload(data.e.row_scale), cols = upload(data.e.col_scale);
  auto sa = upload(data.s.a), sb = upload(data.s.b), sd = upload(&data.s.d, sizeof(float));
  const float nan = std::nanf("");
  cuda::DeviceBuffer amax = upload(&nan, sizeof(float));
  std::vector<uint8_t> d = test::poisoned_operand(p, Which::D);
  auto dd = upload(d);
  GemmArgs args{da.get(), db.get(), data.c.empty() ? nullptr : dc.get(), dd.get()};
  args.bias = bias.get(), args.residual = res.get(), args.row_scale = rs.get(), args.col_scale = cols.get();
  args.scale_a = static_cast<const float*>(sa.get());
  args.scale_b = static_cast<const float*>(sb.get());
  args.scale_d = p.d.dtype == DType::e4m3 ? static_cast<const float*>(sd.get()) : nullptr;
  args.amax = p.amax ? static_cast<float*>(amax.get()) : nullptr;
  cuda::StreamOwner stream;
  for (int i = 0; i < 2; ++i) {  // the second launch meets what the first left (counters, a written amax)
    dd.upload(d.data(), d.size());
    amax.upload(&nan, sizeof(float));
    exe->launch(args, stream.get());
    stream.sync();
  }
  dd.download(d.data(), d.size());
  std::ostringstream bad;
  const double tol = p.d.dtype == DType::e4m3 ? kTolE4m3 : kTolerance;
  const double err = test::normalized_error(p, d, data.expected);
  if (!(err <= tol)) bad << "normalized error " << err << " (tolerance " << tol << "); ";
  if (int64_t n = test::written_outside(p, d)) bad << n << " bytes written outside D; ";
  if (p.amax) {
    float got = nan;
    amax.download(&got, sizeof(float));
    if (!(std::fabs(got - data.amax) <= kTolerance * data.amax))
      bad << "amax " << got << ", reference " << data.amax << "; ";
  }
  if (cs.saturate) {
    // Values well past 448 (beyond any accumulation error) must store exactly +-448.
    int64_t past = 0, wrong = 0;
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t jn = 0; jn < p.n_out(); ++jn) {
        const double want = data.v[static_cast<size_t>(i * p.n_out() + jn)] * data.s.d;
        if (std::fabs(want) < 448.0 * 1.05) continue;
        ++past;
        const double o = test::load_elem(p.d.dtype, d.data(), test::elem_offset(p.d, 0, i, jn));
        wrong += o != std::copysign(448.0, want);
      }
    if (past == 0) bad << "no output past 448 (the test's scale_d is wrong); ";
    if (wrong) bad << wrong << " of " << past << " outputs past 448 are not saturated to +-448; ";
  }
  return bad.str();
}

// Runs every case through every backend that takes it (kPerBackend candidates each, compiled in parallel first).
void run_cases(const std::vector<Case>& cases) {
  const DeviceInfo dev = current_device();
  std::vector<Job> jobs;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Problem& p = cases[i].p;
    ASSERT_EQ(p.check(), "") << p.str();
    std::string why_none;
    size_t before = jobs.size();
    if (!cases[i].sm90_configs.empty()) {
      const auto be = find_backend("sm90");
      for (const std::string& cfg : cases[i].sm90_configs) {
        const Candidate c{"sm90", cfg};
        EXPECT_EQ(be->validate(resolve(p), c, dev), "") << c.str() << " for " << p.str();
        jobs.push_back({i, be, c, {}, {}});
      }
      continue;
    }
    for (const auto& be : all_backends()) {
      if (std::string why = be->supports(resolve(p), dev); !why.empty()) {
        why_none += "\n  " + be->name() + ": " + why;
        continue;
      }
      std::vector<Candidate> cands;
      try {
        cands = be->enumerate(resolve(p), dev);
      } catch (const std::exception& e) {
        ADD_FAILURE() << be->name() << " enumerate threw on " << p.str() << ": " << e.what();
        continue;
      }
      if (cands.empty()) why_none += "\n  " + be->name() + ": supports() but enumerates nothing";
      for (size_t c = 0; c < cands.size() && c < size_t(kPerBackend); ++c) jobs.push_back({i, be, cands[c], {}, {}});
    }
    if (cases[i].refused) {
      EXPECT_EQ(jobs.size(), before) << p.str() << " is listed as refused, but a backend takes it";
      EXPECT_NE(why_none.find(cases[i].refused), std::string::npos)
          << p.str() << ": expected a refusal naming '" << cases[i].refused << "', got:" << why_none;
    } else if (jobs.size() == before) {
      ADD_FAILURE() << "no backend runs " << p.str() << why_none;
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  jit::parallel_for(jobs.size(), 0, [&](size_t i) {
    try {
      jobs[i].cr = jobs[i].be->compile(resolve(cases[jobs[i].problem].p), jobs[i].cand, dev);
    } catch (const std::exception& e) {
      jobs[i].compile_error = e.what();
    }
  });
  std::printf("%zu candidates for %zu problems compiled in %.1f s\n", jobs.size(), cases.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  std::mt19937_64 rng(std::random_device{}());
  for (size_t i = 0; i < cases.size(); ++i) {
    const Data data = make_data(cases[i], rng);
    int ran = 0, any = 0;
    for (const Job& j : jobs) {
      if (j.problem != i) continue;
      ++any;
      std::string r;
      try {
        r = run_job(cases[i], j, data);
      } catch (const std::exception& e) {
        r = std::string("threw: ") + e.what();
      }
      if (r.rfind("SKIP", 0) == 0) {
        std::printf("skip %s on %s: %s\n", j.cand.str().c_str(), cases[i].p.str().c_str(), r.c_str());
        continue;
      }
      ++ran;
      EXPECT_EQ(r, "") << j.cand.str() << " on " << cases[i].p.str();
    }
    if (any > 0) EXPECT_GT(ran, 0) << "every candidate for " << cases[i].p.str() << " spills";
  }
}

using test::FreshCache;

class Fp8Gpu : public test::GpuTest {};

const Scaling kScalings[] = {Scaling::tensor, Scaling::row, Scaling::block};

TEST_F(Fp8Gpu, EveryScalingAndOutput) {
  std::vector<Case> cases;
  for (Scaling sc : kScalings) {
    for (DType out : {DType::bf16, DType::f16, DType::f32, DType::e4m3})
      cases.push_back({fp8_problem(256, 384, 512, sc, out)});
    cases.push_back({fp8_problem(256, 384, 512, sc, DType::e4m3, DType::e4m3, DType::e4m3, "", /*amax=*/true)});
  }
  run_cases(cases);
}

TEST_F(Fp8Gpu, RaggedShapes) {
  // K = 400 is not a multiple of 128 (a partial last scale block); N = 328 leaves a partial 128-column block of B's
  // block scales. K and N keep 16-byte rows of the fp8 operands.
  std::vector<Case> cases;
  for (Scaling sc : kScalings) {
    cases.push_back({fp8_problem(200, 328, 400, sc, DType::bf16)});
    cases.push_back({fp8_problem(72, 136, 272, sc, DType::f32)});
  }
  // K = 784 (7 k-blocks): promoted accumulation runs one straight run of 4 and then the 3 left one at a time (runs of
  // 2: three, then one).
  cases.push_back({fp8_problem(200, 328, 784, Scaling::block, DType::bf16)});
  // M not a multiple of 4: A's block scales go one row per copy (sm90_scale_loader.cuh), over three row tiles.
  cases.push_back({fp8_problem(301, 328, 784, Scaling::block, DType::bf16)});
  // An e4m3 D whose rows are not a multiple of 16 bytes (N = 328) has no backend: sm90 stores an e4m3 D by TMA only
  // and cuBLASLt's fp8 needs 16-byte rows. N = 336 runs.
  cases.push_back({fp8_problem(200, 328, 400, Scaling::row, DType::e4m3, DType::e4m3, DType::e4m3, "", true), false,
                   false, "an e4m3 D needs rows TMA can store whole"});
  cases.push_back({fp8_problem(200, 336, 400, Scaling::row, DType::e4m3, DType::e4m3, DType::e4m3, "", true)});
  run_cases(cases);
}

TEST_F(Fp8Gpu, E5m2Inputs) {
  std::vector<Case> cases;
  for (Scaling sc : {Scaling::tensor, Scaling::row}) {
    cases.push_back({fp8_problem(256, 256, 256, sc, DType::bf16, DType::e5m2, DType::e4m3)});
    cases.push_back({fp8_problem(256, 256, 256, sc, DType::bf16, DType::e4m3, DType::e5m2)});
  }
  cases.push_back({fp8_problem(256, 256, 256, Scaling::tensor, DType::bf16, DType::e5m2, DType::e5m2)});
  run_cases(cases);
}

TEST_F(Fp8Gpu, AlphaBetaAndBatch) {
  std::vector<Case> cases;
  Problem p = fp8_problem(256, 256, 256, Scaling::tensor, DType::bf16);
  p.alpha = 0.75f, p.beta = 0.5f;
  cases.push_back({p});
  Problem q = Problem::make(128, 256, 256, DType::e4m3, DType::bf16, Layout::row, Layout::col, 2);
  q.scaling = Scaling::tensor;
  cases.push_back({q});
  run_cases(cases);
}

TEST_F(Fp8Gpu, EpilogueFamilies) {
  std::vector<Case> cases;
  for (const char* chain : {"bias", "gelu_tanh", "silu_glu", "residual", "row_scale,col_scale", "bias,relu"})
    cases.push_back({fp8_problem(256, 384, 512, Scaling::row, DType::bf16, DType::e4m3, DType::e4m3, chain)});
  cases.push_back({fp8_problem(256, 384, 512, Scaling::block, DType::bf16, DType::e4m3, DType::e4m3, "bias,gelu_tanh")});
  cases.push_back({fp8_problem(256, 384, 512, Scaling::tensor, DType::e4m3, DType::e4m3, DType::e4m3, "bias", true)});
  run_cases(cases);
}

TEST_F(Fp8Gpu, DecodeAndWeightOnly) {
  std::vector<Case> cases;
  for (int64_t m : {1, 4, 16}) {
    for (Scaling sc : kScalings) cases.push_back({fp8_problem(m, 1024, 512, sc, DType::bf16)});
    for (Scaling sc : {Scaling::tensor, Scaling::row})
      cases.push_back({fp8_problem(m, 1024, 512, sc, DType::bf16, DType::bf16, DType::e4m3), /*null_scale_a=*/true});
  }
  cases.push_back({fp8_problem(4, 1024, 400, Scaling::block, DType::f32)});  // ragged K at decode
  run_cases(cases);
}

TEST_F(Fp8Gpu, E4m3OutputSaturates) {
  std::vector<Case> cases;
  for (Scaling sc : {Scaling::tensor, Scaling::row}) {
    Case c{fp8_problem(256, 384, 512, sc, DType::e4m3, DType::e4m3, DType::e4m3, "", true)};
    c.saturate = true;
    cases.push_back(c);
  }
  run_cases(cases);
}

// Block scales at tile N 144 and 160: a tile spans two 128-column B blocks, split where it starts (a multiple of 16 or
// 32 into a block). N = 2000 and 4144 put the 144-wide tiles' origins at all 8 such offsets, N = 1000 the 160-wide
// ones' at all 4; each N ends in a partial tile (the 160-wide one at N = 1000 and 2000 with its second block past N)
// and 4144 in a partial block; M = 1000 and 520 leave a partial row tile. Each in the 1x1, 2x1 and 1x2 clusters, with
// bf16, f32 and e4m3 D; the same tiles with tensor and row scales (fast and promoted accumulation) take one scale per
// tile or column.
TEST_F(Fp8Gpu, Tiles144And160) {
  auto configs = [](const char* acc) {
    std::vector<std::string> out;
    for (int bn : {144, 160})
      for (const char* cluster : {"1x1", "2x1", "1x2"})
        out.push_back("tile=128x" + std::to_string(bn) + "x128,stages=4,cluster=" + cluster +
                      ",sched=coop,raster=m,group=8,acc=" + acc);
    return out;
  };
  std::vector<Case> cases;
  auto add = [&](Problem p, Fp8Accum mode) {
    p.fp8_accum = mode;
    Case c{p};
    c.sm90_configs = configs(mode == Fp8Accum::fast ? "fast" : "promote");
    cases.push_back(c);
  };
  add(fp8_problem(1000, 1000, 1024, Scaling::block, DType::bf16), Fp8Accum::exact);
  add(fp8_problem(1000, 2000, 512, Scaling::block, DType::f32), Fp8Accum::exact);
  add(fp8_problem(520, 4144, 2048, Scaling::block, DType::bf16), Fp8Accum::exact);
  add(fp8_problem(1000, 2000, 1024, Scaling::block, DType::e4m3), Fp8Accum::exact);
  add(fp8_problem(1000, 2000, 1024, Scaling::tensor, DType::bf16), Fp8Accum::fast);
  add(fp8_problem(1000, 1000, 512, Scaling::row, DType::f32), Fp8Accum::fast);
  add(fp8_problem(1000, 1000, 512, Scaling::row, DType::bf16), Fp8Accum::exact);
  run_cases(cases);
}

// Problems gemmtune refuses as a whole, each with the reason it must give.
TEST_F(Fp8Gpu, RefusedProblemsSayWhy) {
  struct Refused {
    Problem p;
    const char* reason;
  };
  Problem e5m2_d = fp8_problem(256, 256, 256, Scaling::tensor, DType::bf16);
  e5m2_d.d.dtype = DType::e5m2;
  Problem b_row = Problem::make(256, 256, 256, DType::e4m3, DType::bf16, Layout::row, Layout::row);
  b_row.scaling = Scaling::row;
  Problem a_col = Problem::make(256, 256, 256, DType::e4m3, DType::bf16, Layout::col, Layout::col);
  a_col.scaling = Scaling::row;
  Problem no_scaling = fp8_problem(256, 256, 256, Scaling::none, DType::bf16);
  for (const Refused& r : {Refused{e5m2_d, "D=e5m2 is not supported"}, Refused{b_row, "fp8 B must be col-major"},
                           Refused{a_col, "fp8 A must be row-major"}, Refused{no_scaling, "need a scaling"}}) {
    EXPECT_NE(r.p.check().find(r.reason), std::string::npos) << r.p.str() << ": " << r.p.check();
    FreshCache cache;
    Tuner t;
    EXPECT_THROW(t.select(r.p), Error) << r.p.str();
  }
}

// The tuner's GPU reference (fp32, JIT) against this file's fp64 CPU reference: two readings of problem.h's scale
// layouts that must agree, so that a failure above points at a kernel, not at a reference. The fp8 compare (an e4m3
// D against saturate(ref * scale_d), and max |ref| for amax) is checked on a D encoded on the host.
TEST_F(Fp8Gpu, TunerReferenceMatchesCpuReference) {
  std::mt19937_64 rng(std::random_device{}());
  std::vector<Case> cases;
  for (Scaling sc : kScalings) {
    cases.push_back({fp8_problem(200, 328, 400, sc, DType::f32)});
    cases.push_back({fp8_problem(72, 136, 272, sc, DType::e4m3, DType::e5m2, DType::e4m3, "bias,gelu_tanh", true)});
  }
  cases.push_back({fp8_problem(16, 264, 400, Scaling::row, DType::bf16, DType::bf16, DType::e4m3, "silu_glu"), true});
  cases.push_back({fp8_problem(256, 384, 512, Scaling::tensor, DType::e4m3, DType::e4m3, DType::e4m3, "", true), false,
                   /*saturate=*/true});
  for (const Case& cs : cases) {
    const Problem& p = cs.p;
    ASSERT_EQ(p.check(), "") << p.str();
    const Data data = make_data(cs, rng);
    auto da = upload(data.a), db = upload(data.b), bias = upload(data.e.bias), sa = upload(data.s.a),
         sb = upload(data.s.b), sd = upload(&data.s.d, sizeof(float));
    GemmArgs args{da.get(), db.get(), nullptr, nullptr};
    args.bias = bias.get();
    args.scale_a = static_cast<const float*>(sa.get());
    args.scale_b = static_cast<const float*>(sb.get());
    cuda::DeviceBuffer ref(data.v.size() * sizeof(float));
    cuda::StreamOwner stream;
    reference_gemm(p, args, static_cast<float*>(ref.get()), stream.get());
    stream.sync();
    std::vector<float> got(data.v.size());
    ref.download(got.data(), got.size() * sizeof(float));
    double num = 0, den = 0;
    for (size_t i = 0; i < got.size(); ++i) num += (got[i] - data.v[i]) * (got[i] - data.v[i]), den += data.v[i] * data.v[i];
    EXPECT_LE(std::sqrt(num / den), 1e-5) << p.str();
    // D as a kernel that rounds exactly would write it.
    std::vector<uint8_t> d = test::poisoned_operand(p, Which::D);
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n_out(); ++j)
        test::store_elem(p.d.dtype, d.data(), test::elem_offset(p.d, 0, i, j),
                         data.expected[static_cast<size_t>(i * p.n_out() + j)]);
    auto dd = upload(d);
    const ErrorStats st = compare_to_reference(p, dd.get(), static_cast<const float*>(ref.get()), stream.get(),
                                               p.d.dtype == DType::e4m3 ? static_cast<const float*>(sd.get()) : nullptr);
    EXPECT_TRUE(st.ok(p.d.dtype == DType::e4m3 ? kTolE4m3 : kTolerance))
        << p.str() << ": normalized " << st.normalized << ", non-finite " << st.nonfinite;
    EXPECT_EQ(test::normalized_error(p, d, data.expected) <= (p.d.dtype == DType::e4m3 ? kTolE4m3 : kTolerance), true)
        << p.str();
    EXPECT_LE(std::fabs(st.ref_amax - data.amax), 1e-5 * data.amax) << p.str();
  }
}

// ---- the tuner, end to end ----

TuneOptions quick() {
  TuneOptions o;
  o.top_k = 2;
  o.min_iters = 10;
  o.min_time_ms = 5;
  o.warmup_iters = 2;
  return o;
}

TEST_F(Fp8Gpu, TunerSelectsAndRunsAScaledGemm) {
  FreshCache cache;
  Tuner t(quick());
  const Case cs{fp8_problem(256, 384, 512, Scaling::row, DType::e4m3, DType::e4m3, DType::e4m3, "", true)};
  const Problem& p = cs.p;
  Gemm g = t.select(p);
  std::mt19937_64 rng(std::random_device{}());
  const Data data = make_data(cs, rng);
  auto da = upload(data.a), db = upload(data.b), sa = upload(data.s.a), sb = upload(data.s.b),
       sd = upload(&data.s.d, sizeof(float));
  const float nan = std::nanf("");
  cuda::DeviceBuffer amax = upload(&nan, sizeof(float));
  std::vector<uint8_t> d = test::poisoned_operand(p, Which::D);
  auto dd = upload(d);
  GemmArgs args{da.get(), db.get(), nullptr, dd.get()};
  args.scale_a = static_cast<const float*>(sa.get());
  args.scale_b = static_cast<const float*>(sb.get());
  args.scale_d = static_cast<const float*>(sd.get());
  args.amax = static_cast<float*>(amax.get());
  cuda::StreamOwner stream;
  g.run(args, stream.get());
  stream.sync();
  dd.download(d.data(), d.size());
  EXPECT_LE(test::normalized_error(p, d, data.expected), kTolE4m3) << g.candidate().str();
  EXPECT_EQ(test::written_outside(p, d), 0) << g.candidate().str();
  float got = nan;
  amax.download(&got, sizeof(float));
  EXPECT_LE(std::fabs(got - data.amax), kTolerance * data.amax) << "amax " << got << " vs " << data.amax;

  // Each missing scale pointer is refused before anything is launched, naming the pointer.
  for (int which = 0; which < 4; ++which) {
    GemmArgs bad = args;
    const char* name = which == 0 ? "scale_a" : which == 1 ? "scale_b" : which == 2 ? "scale_d" : "amax";
    if (which == 0) bad.scale_a = nullptr;
    if (which == 1) bad.scale_b = nullptr;
    if (which == 2) bad.scale_d = nullptr;
    if (which == 3) bad.amax = nullptr;
    try {
      g.run(bad, stream.get());
      ADD_FAILURE() << "Gemm::run took a null " << name;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
}

// ---- the accumulation mode is the problem's ----

// fp8_accum=exact promises fp32 accumulation (promotion at least every 128 K); fast lets the tensor core accumulate
// all of K in its reduced precision (about 14 mantissa bits on Hopper's fp8 wgmma). The inputs make the two differ,
// and make what fp32 accumulation may lose computable:
//   each row m of A: one large value a[m, 0] = +-e4m3 in [256, 448] (alone in its 128-K block: the rest of k < 128 is
//   0) and one 0.5 in each 32-K chunk past the first block, at a position that varies with m; each column n of B:
//   b[0, n] = +-e4m3 in [256, 448], b[k, n] = 0.5 for k >= 128. Signs agree (row sign x column sign on both), so every
//   D[m, n] = p0 + s * 0.25 * (K - 128) / 32, |p0| in [2^16, 2^17.7]: a large product, then 508 small ones of the same
//   sign (s), one per wgmma k-step.
// fp32 promoted every 128 K: a block's products sum exactly in the tensor core (p0 alone: at most 8 significant bits;
// or four 0.25s), and the fp32 accumulator takes K/128 additions, each rounding by at most u = 2^-24 of the running
// sum, which never exceeds S = sum_k |a_k b_k|. So |error| <= B = (K/128) * u * S (about 1.5 here; all the partial
// sums are in fact exact in fp32: 20 significant bits at most). exact must stay within 2B.
// fast: from the first k-step on the accumulator holds |p0| >= 2^16; with 14 bits its resolution is 2^3 or more, and
// each step's 0.25 is dropped (truncated or rounded away: it stays below the resolution for any accumulator under 19
// bits), so D loses up to 508 * 0.25 = 127, far beyond 2B: fast must exceed 2B, which shows the test can tell them
// apart. Scales are 1 and D is f32, so nothing else rounds.
TEST_F(Fp8Gpu, ExactAccumulationKeepsWhatFastLoses) {
  constexpr int64_t M = 256, N = 256, K = 16384;
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_int_distribution<int> mantissa(0, 6), sign(0, 1);  // e4m3 values 256, 288, ..., 448 (2^8 x 1.mmm)
  auto big = [&] { return (sign(rng) ? -1.0 : 1.0) * (256.0 + 32.0 * mantissa(rng)); };
  Problem base = fp8_problem(M, N, K, Scaling::tensor, DType::f32);
  std::vector<uint8_t> a(static_cast<size_t>(M * K), 0), b(static_cast<size_t>(K * N), 0);
  std::vector<double> am(M), bn(N);
  for (int64_t m = 0; m < M; ++m) {
    am[m] = big();
    test::store_elem(DType::e4m3, a.data(), test::elem_offset(base.a, 0, m, 0), am[m]);
    for (int64_t k = 128 + (m * 7) % 32; k < K; k += 32)
      test::store_elem(DType::e4m3, a.data(), test::elem_offset(base.a, 0, m, k), std::copysign(0.5, am[m]));
  }
  for (int64_t n = 0; n < N; ++n) {
    bn[n] = big();
    test::store_elem(DType::e4m3, b.data(), test::elem_offset(base.b, 0, 0, n), bn[n]);
    for (int64_t k = 128; k < K; ++k)
      test::store_elem(DType::e4m3, b.data(), test::elem_offset(base.b, 0, k, n), std::copysign(0.5, bn[n]));
  }
  // The fp64 reference of the dequantized inputs (what is stored, read back; over A's nonzeros) and the fp32 bound B
  // of every output.
  std::vector<double> ref(static_cast<size_t>(M * N));
  double bound = 0;
  for (int64_t m = 0; m < M; ++m) {
    std::vector<std::pair<int64_t, double>> nz;
    for (int64_t k = 0; k < K; ++k)
      if (const double av = test::load_elem(DType::e4m3, a.data(), test::elem_offset(base.a, 0, m, k)); av != 0)
        nz.emplace_back(k, av);
    for (int64_t n = 0; n < N; ++n) {
      double v = 0, s = 0;
      for (const auto& [k, av] : nz) {
        const double pr = av * test::load_elem(DType::e4m3, b.data(), test::elem_offset(base.b, 0, k, n));
        v += pr, s += std::fabs(pr);
      }
      ref[static_cast<size_t>(m * N + n)] = v;
      bound = std::max(bound, double(K / 128) * std::ldexp(1.0, -24) * s);
    }
  }
  ASSERT_GT(bound, 0);
  auto da = upload(a), db = upload(b);
  const std::vector<float> one{1.0f};
  auto sa = upload(one), sb = upload(one);
  const std::string tile = "tile=128x128x128,stages=4,cluster=1x1,sched=coop,raster=m,group=8,acc=";
  double err[2] = {0, 0};
  for (Fp8Accum mode : {Fp8Accum::exact, Fp8Accum::fast}) {
    Problem p = base;
    p.fp8_accum = mode;
    const Candidate own{"sm90", tile + (mode == Fp8Accum::exact ? "promote" : "fast")};
    const Candidate other{"sm90", tile + (mode == Fp8Accum::exact ? "fast" : "promote")};
    // Forcing a config of the other mode is refused, naming both.
    try {
      Tuner::load(p, other);
      ADD_FAILURE() << other.str() << " loaded for " << p.str();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("fp8_accum=") + std::string(fp8_accum_name(mode))),
                std::string::npos)
          << e.what();
    }
    Gemm g = Tuner::load(p, own);
    std::vector<uint8_t> d = test::poisoned_operand(p, Which::D);
    auto dd = upload(d);
    GemmArgs args{da.get(), db.get(), nullptr, dd.get()};
    args.scale_a = static_cast<const float*>(sa.get());
    args.scale_b = static_cast<const float*>(sb.get());
    cuda::StreamOwner stream;
    g.run(args, stream.get());
    stream.sync();
    dd.download(d.data(), d.size());
    double& e = err[mode == Fp8Accum::fast];
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        const double got = test::load_elem(DType::f32, d.data(), test::elem_offset(p.d, 0, m, n));
        const double diff = std::fabs(got - ref[static_cast<size_t>(m * N + n)]);
        e = std::isnan(diff) ? INFINITY : std::max(e, diff);
      }
    std::printf("%s with %s: max |D - fp64| = %g, fp32 bound 2B = %g\n", own.str().c_str(), p.str().c_str(), e,
                2 * bound);
  }
  EXPECT_LE(err[0], 2 * bound) << "fp8_accum=exact (acc=promote) lost more than fp32 accumulation may";
  EXPECT_GT(err[1], 2 * bound) << "fp8_accum=fast (acc=fast) kept what the tensor core's accumulator cannot: the "
                                  "inputs no longer tell the modes apart";
}

}  // namespace
}  // namespace gemmtune
