// Grouped GEMMs (mixture-of-experts, gemmtune/problem.h "Grouped GEMMs") on the GPU:
//   - every candidate the sm90 backend lists for a grouped problem (the top two and a 1x2-cluster one), loaded through
//     the public API and run on several routings: fresh random inputs, D poisoned with 0xFF bytes (NaN in every
//     dtype), checked against a double-precision host reference computed group by group from the inputs as uploaded
//     (normalized error <= 1e-2 over the rows of the groups; every other byte of D still poisoned);
//   - the tuner's own grouped reference and compare (tuner/reference.h) against the same host reference, so that a
//     failure of the first kind points at a kernel;
//   - a grouped tune end to end (in process) whose winner must have been verified on every routing.
// Shapes: empty groups, groups of one row, group sizes not a multiple of 128, rows past the last group, G = 1, 8, 64,
// 256, masked counts 0..M_max, every epilogue op, e4m3 with row and block scales (B's per group). K is small so
// that the file runs in well under two minutes on an H100.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cuda/memory.h"
#include "gemmtune/gemm.h"
#include "gpu_test_util.h"
#include "tuner/reference.h"
#include "tuner/routing.h"

namespace gemmtune {
// gtest prints a Status by its name.
inline void PrintTo(Status s, std::ostream* os) { *os << to_string(s); }
}  // namespace gemmtune

using namespace gemmtune;

namespace {

constexpr double kTolerance = 1e-2;  // normalized error of a bf16/f16/f32 D (fp32 accumulation, output rounding)

class GroupedGpu : public test::GpuTest {
 protected:
  void SetUp() override {
    test::GpuTest::SetUp();
    if (IsSkipped()) return;
    if (current_device().cc_major != 9) GTEST_SKIP() << "not Hopper (sm90 grouped kernels)";
  }
};

struct Spec {
  Grouping how = Grouping::contiguous;
  int64_t m = 0, n = 256, k = 128, groups = 8;  // m: capacity (contiguous) or M_max (masked)
  DType in = DType::bf16, out = DType::bf16;
  std::string epilogue;
  Scaling scaling = Scaling::none;
  float alpha = 1.0f, beta = 0.0f;
};

// A packed grouped problem: row-major A, D and C, col-major B (W^T of row-major N x K expert weights).
Problem make_grouped(const Spec& s) {
  Problem p = Problem::make(s.m, s.n, s.k, s.in, s.out, Layout::row, Layout::col);
  p.grouping = s.how, p.groups = s.groups;
  p.batch = s.how == Grouping::masked ? s.groups : 1;
  if (!s.epilogue.empty()) p.epilogue = parse_epilogue(s.epilogue);
  p.scaling = s.scaling;
  p.alpha = s.alpha, p.beta = s.beta;
  p.c = p.d;
  for (Operand* o : {&p.a, &p.b, &p.c, &p.d}) o->ld = 0, o->batch_stride = -1;
  p.resolve();
  EXPECT_EQ(p.check(), "") << p.str();
  return p;
}

// Elements operand w spans: count(w) matrices (B holds G of them in a contiguous problem).
int64_t span_of(const Problem& p, Which w) {
  const Operand& o = p.operand(w);
  const int64_t rows = Problem::rows_of(w, p), cols = Problem::cols_of(w, p);
  const int64_t footprint = o.layout == Layout::row ? (rows - 1) * o.ld + cols : (cols - 1) * o.ld + rows;
  return o.batch_stride * (p.count(w) - 1) + footprint;
}

std::vector<uint8_t> random_span(DType t, int64_t n, std::mt19937_64& rng) {
  std::vector<uint8_t> v(size_t(n) * dtype_size(t));
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (int64_t i = 0; i < n; ++i) test::store_elem(t, v.data(), i, dist(rng));
  return v;
}

// Inputs of one problem, as uploaded.
struct Data {
  std::vector<uint8_t> a, b, c;
  test::EpilogueData e;
  test::Scales s;
};

Data make_data(const Problem& p, std::mt19937_64& rng) {
  Data d;
  d.a = random_span(p.a.dtype, span_of(p, Which::A), rng);
  d.b = random_span(p.b.dtype, span_of(p, Which::B), rng);
  if (p.beta != 0.0f) d.c = random_span(p.c.dtype, span_of(p, Which::C), rng);
  d.e = test::random_epilogue(p, rng);
  if (p.scaling != Scaling::none) d.s = test::random_scales(p, rng);
  return d;
}

// The scale of A[m, k] in matrix z (masked: the group) and of B_g[k, n], as problem.h lays them out for groups: A's
// follow its rows as stored, B's are per group (G times the ungrouped layout).
double scale_a(const Problem& p, const test::Scales& s, int64_t z, int64_t m, int64_t k) {
  const int64_t kb = (p.k + kScaleBlock - 1) / kScaleBlock;
  switch (p.scaling) {
    case Scaling::none: return 1.0;
    case Scaling::tensor: return s.a[0];
    case Scaling::row: return s.a[size_t(z * p.m + m)];
    case Scaling::block: return s.a[size_t(z * p.m * kb + (k / kScaleBlock) * p.m + m)];
  }
  return 1.0;
}

double scale_b(const Problem& p, const test::Scales& s, int64_t g, int64_t k, int64_t n) {
  const int64_t kb = (p.k + kScaleBlock - 1) / kScaleBlock, nb = (p.n + kScaleBlock - 1) / kScaleBlock;
  switch (p.scaling) {
    case Scaling::none: return 1.0;
    case Scaling::tensor: return s.b[0];
    case Scaling::row: return s.b[size_t(g * p.n + n)];
    case Scaling::block: return s.b[size_t(g * nb * kb + (n / kScaleBlock) * kb + k / kScaleBlock)];
  }
  return 1.0;
}

// Which rows a routing computes: in[(z * M + m)] is the group of row m of matrix z, -1 for a row of no group.
std::vector<int64_t> row_groups(const Problem& p, const std::vector<int32_t>& counts) {
  std::vector<int64_t> g(size_t(p.batch * p.m), -1);
  if (p.grouping == Grouping::masked) {
    for (int64_t z = 0; z < p.groups; ++z)
      for (int64_t m = 0; m < counts[size_t(z)]; ++m) g[size_t(z * p.m + m)] = z;
  } else {
    int64_t row = 0;
    for (int64_t z = 0; z < p.groups; ++z)
      for (int64_t i = 0; i < counts[size_t(z)]; ++i) g[size_t(row++)] = z;
  }
  return g;
}

// The grouped GEMM in double, then the epilogue: packed [batch][M][n_out()], rows of no group 0. Every input is
// dequantized by its own scale before the products.
std::vector<double> host_reference(const Problem& p, const Data& d, const std::vector<int64_t>& groups_of_rows) {
  const int64_t M = p.m, N = p.n, K = p.k;
  std::vector<double> gemm(size_t(p.batch * M * N), 0.0);
  std::vector<double> bt(static_cast<size_t>(N * K)), ar(static_cast<size_t>(K));
  for (int64_t g = 0; g < p.groups; ++g) {
    bool used = false;
    for (int64_t r : groups_of_rows) used |= r == g;
    if (!used) continue;
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n)
        bt[size_t(n * K + k)] =
            test::load_elem(p.b.dtype, d.b.data(), test::elem_offset(p.b, g, k, n)) * scale_b(p, d.s, g, k, n);
    for (int64_t z = 0; z < p.batch; ++z)
      for (int64_t m = 0; m < M; ++m) {
        if (groups_of_rows[size_t(z * M + m)] != g) continue;
        for (int64_t k = 0; k < K; ++k)
          ar[size_t(k)] =
              test::load_elem(p.a.dtype, d.a.data(), test::elem_offset(p.a, z, m, k)) * scale_a(p, d.s, z, m, k);
        for (int64_t n = 0; n < N; ++n) {
          double acc = 0;
          for (int64_t k = 0; k < K; ++k) acc += ar[size_t(k)] * bt[size_t(n * K + k)];
          double v = double(p.alpha) * acc;
          if (p.beta != 0.0f) v += double(p.beta) * test::load_elem(p.c.dtype, d.c.data(), test::elem_offset(p.c, z, m, n));
          gemm[size_t((z * M + m) * N + n)] = v;
        }
      }
  }
  return test::apply_epilogue(p, gemm, d.e);
}

// "" or what is wrong with D (as downloaded, its whole span) for the routing: the normalized error over the rows of
// the groups, non-finite outputs there, and bytes outside them (rows of no group, padding) that lost the poison.
std::string check_d(const Problem& p, const std::vector<uint8_t>& dbytes, const std::vector<double>& ref,
                    const std::vector<int64_t>& groups_of_rows) {
  const size_t es = dtype_size(p.d.dtype);
  std::vector<char> inside(dbytes.size(), 0);
  double num = 0, den = 0;
  int64_t nonfinite = 0;
  for (int64_t z = 0; z < p.batch; ++z)
    for (int64_t m = 0; m < p.m; ++m) {
      if (groups_of_rows[size_t(z * p.m + m)] < 0) continue;
      for (int64_t n = 0; n < p.n_out(); ++n) {
        const int64_t off = test::elem_offset(p.d, z, m, n);
        std::memset(&inside[size_t(off) * es], 1, es);
        const double o = test::load_elem(p.d.dtype, dbytes.data(), off);
        const double r = ref[size_t((z * p.m + m) * p.n_out() + n)];
        if (!std::isfinite(o)) {
          ++nonfinite;
          continue;
        }
        num += (o - r) * (o - r), den += r * r;
      }
    }
  int64_t outside = 0;
  for (size_t i = 0; i < dbytes.size(); ++i) outside += !inside[i] && dbytes[i] != 0xFF;
  const double err = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  if (nonfinite || outside || !(err <= kTolerance))
    return "normalized error " + std::to_string(err) + ", " + std::to_string(nonfinite) + " non-finite, " +
           std::to_string(outside) + " bytes written outside the groups";
  return "";
}

cuda::DeviceBuffer upload(const void* host, size_t bytes) {
  cuda::DeviceBuffer b(bytes);
  if (bytes) b.upload(host, bytes);
  return b;
}
cuda::DeviceBuffer upload(const std::vector<uint8_t>& v) { return upload(v.data(), v.size()); }
cuda::DeviceBuffer upload(const std::vector<float>& v) { return upload(v.data(), v.size() * sizeof(float)); }
cuda::DeviceBuffer upload(const std::vector<int32_t>& v) { return upload(v.data(), v.size() * sizeof(int32_t)); }

// The device copies of a problem's inputs and the GemmArgs that point at them (D and group_rows set per run).
struct DeviceData {
  cuda::DeviceBuffer a, b, c, bias, residual, row_scale, col_scale, sa, sb;
  GemmArgs args;
  explicit DeviceData(const Data& d)
      : a(upload(d.a)), b(upload(d.b)), c(upload(d.c)), bias(upload(d.e.bias)), residual(upload(d.e.residual)),
        row_scale(upload(d.e.row_scale)), col_scale(upload(d.e.col_scale)), sa(upload(d.s.a)), sb(upload(d.s.b)) {
    args.a = a.get(), args.b = b.get(), args.c = c.get();
    args.bias = bias.get(), args.residual = residual.get();
    args.row_scale = row_scale.get(), args.col_scale = col_scale.get();
    args.scale_a = static_cast<const float*>(sa.get()), args.scale_b = static_cast<const float*>(sb.get());
  }
};

// A ragged routing of `groups` groups of about `mean` rows: empty groups, one-row groups and sizes that are no
// multiple of 128.
std::vector<int32_t> ragged_counts(int64_t groups, int64_t mean, std::mt19937_64& rng) {
  if (groups == 1) return {int32_t(mean)};  // one plain GEMM over the first rows
  std::vector<int32_t> c(static_cast<size_t>(groups));
  std::uniform_int_distribution<int64_t> size(2, std::max<int64_t>(2, 2 * mean));
  for (int64_t g = 0; g < groups; ++g) c[size_t(g)] = int32_t(g % 5 == 0 ? 0 : g % 5 == 1 ? 1 : size(rng));
  if (groups > 2) c[2] = 129;  // a group one row past a 128-row tile
  return c;
}

// Masked counts: 0, 1, M_max and random ones in between.
std::vector<int32_t> masked_counts(int64_t groups, int64_t m_max, std::mt19937_64& rng) {
  std::uniform_int_distribution<int64_t> size(0, m_max);
  std::vector<int32_t> c(static_cast<size_t>(groups));
  for (int64_t g = 0; g < groups; ++g)
    c[size_t(g)] = int32_t(g % 4 == 0 ? 0 : g % 4 == 1 ? std::min<int64_t>(1, m_max) : g % 4 == 2 ? m_max : size(rng));
  if (groups == 1) c[0] = int32_t(std::max<int64_t>(1, m_max - 3));
  return c;
}

// The candidates to check: sm90's top `n` and its best 1x2-cluster one. A grouped problem sm90 must cover with none
// listed fails the test.
std::vector<Candidate> sm90_candidates(const Problem& p, size_t n) {
  std::vector<Candidate> all;
  try {
    all = list_candidates(p, current_device(), {"sm90"}, 0);
  } catch (const Error& e) {
    ADD_FAILURE() << "listing sm90 candidates for " << p.str() << " threw: " << e.what();
    return {};
  }
  if (all.empty()) {
    ADD_FAILURE() << "sm90 lists no candidate for the grouped problem " << p.str();
    return {};
  }
  std::vector<Candidate> out(all.begin(), all.begin() + std::min(n, all.size()));
  for (const Candidate& c : all)
    if (c.config.find("cluster=1x2") != std::string::npos) {
      if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
      break;
    }
  return out;
}

// Runs candidate `c` on problem p under each routing (row counts per group), D poisoned before each run; "" or the
// first failure, naming the routing.
std::string run_candidate(const Problem& p, const Candidate& c, const std::vector<std::vector<int32_t>>& routings,
                          std::mt19937_64& rng) {
  Gemm g;
  try {
    g = Tuner::load(p, c);
  } catch (const Error& e) {
    return std::string("load failed: ") + e.what();
  }
  const Data data = make_data(p, rng);
  DeviceData dev(data);
  const std::vector<uint8_t> poison(size_t(span_of(p, Which::D)) * dtype_size(p.d.dtype), 0xFF);
  cuda::DeviceBuffer dd(poison.size());
  cuda::StreamOwner stream;
  for (size_t r = 0; r < routings.size(); ++r) {
    const std::vector<int32_t> rows = group_rows_of(p, routings[r]);
    cuda::DeviceBuffer gr = upload(rows);
    dd.upload(poison.data(), poison.size());
    GemmArgs args = dev.args;
    args.d = dd.get();
    args.group_rows = static_cast<const int32_t*>(gr.get());
    try {
      g.run(args, stream.get());
      stream.sync();
    } catch (const Error& e) {
      return "routing " + std::to_string(r) + ": run failed: " + e.what();
    }
    std::vector<uint8_t> out(poison.size());
    dd.download(out.data(), out.size());
    const std::vector<int64_t> rg = row_groups(p, routings[r]);
    if (std::string why = check_d(p, out, host_reference(p, data, rg), rg); !why.empty())
      return "routing " + std::to_string(r) + ": " + why;
  }
  return "";
}

// Every listed candidate of each problem on its routings: the standard three plus `extra`.
void check_specs(const std::vector<Spec>& specs, size_t top, std::mt19937_64& rng,
                 const std::function<std::vector<int32_t>(const Problem&)>& extra) {
  for (const Spec& s : specs) {
    const Problem p = make_grouped(s);
    std::vector<std::vector<int32_t>> routings = grouped_routings(p);
    routings.push_back(extra(p));
    for (const Candidate& c : sm90_candidates(p, top))
      EXPECT_EQ(run_candidate(p, c, routings, rng), "") << c.str() << " on " << p.str();
  }
}

// A contiguous spec of `groups` groups whose capacity leaves `slack` rows past the ragged routing's last group.
Spec contiguous_spec(int64_t groups, int64_t mean, int64_t n, int64_t k, std::vector<int32_t>& counts,
                     std::mt19937_64& rng, int64_t slack = 37) {
  counts = ragged_counts(groups, mean, rng);
  Spec s;
  s.how = Grouping::contiguous, s.groups = groups, s.n = n, s.k = k;
  s.m = routed_rows(counts) + slack;
  return s;
}

}  // namespace

TEST_F(GroupedGpu, ContiguousBf16) {
  std::mt19937_64 rng(std::random_device{}());
  // (groups, mean rows, N, K): G = 1 (one plain GEMM), 8, 64, 256 (a few rows each: decode), N not a multiple of
  // the tile.
  const int64_t shapes[][4] = {{1, 300, 256, 128}, {8, 150, 256, 192}, {64, 40, 136, 64}, {256, 6, 200, 64}};
  for (const auto& sh : shapes) {
    std::vector<int32_t> counts;
    Spec s = contiguous_spec(sh[0], sh[1], sh[2], sh[3], counts, rng);
    check_specs({s}, 2, rng, [&](const Problem&) { return counts; });
  }
  // f16 in, f32 out, alpha and beta.
  std::vector<int32_t> counts;
  Spec s = contiguous_spec(8, 100, 128, 64, counts, rng);
  s.in = DType::f16, s.out = DType::f32, s.alpha = 0.75f, s.beta = -1.25f;
  check_specs({s}, 1, rng, [&](const Problem&) { return counts; });
}

TEST_F(GroupedGpu, MaskedBf16) {
  std::mt19937_64 rng(std::random_device{}());
  // (groups, M_max, N, K)
  const int64_t shapes[][4] = {{1, 200, 256, 128}, {8, 130, 256, 128}, {64, 64, 136, 64}, {256, 16, 128, 64}};
  for (const auto& sh : shapes) {
    Spec s;
    s.how = Grouping::masked, s.groups = sh[0], s.m = sh[1], s.n = sh[2], s.k = sh[3];
    check_specs({s}, 2, rng, [&](const Problem& p) { return masked_counts(p.groups, p.m, rng); });
  }
}

// Every epilogue op on one contiguous shape (and beta * C), the GLU on a masked one too.
TEST_F(GroupedGpu, EpilogueOps) {
  std::mt19937_64 rng(std::random_device{}());
  std::vector<int32_t> counts;
  const Spec base = contiguous_spec(8, 90, 256, 64, counts, rng);
  std::vector<Spec> specs;
  for (const char* epi : {"bias", "relu", "gelu_tanh", "silu", "silu_glu", "row_scale", "col_scale", "residual"}) {
    Spec s = base;
    s.epilogue = epi;
    specs.push_back(s);
  }
  Spec beta = base;
  beta.beta = 0.5f, beta.alpha = 1.5f;
  specs.push_back(beta);
  check_specs(specs, 1, rng, [&](const Problem&) { return counts; });
  Spec glu;
  glu.how = Grouping::masked, glu.groups = 8, glu.m = 96, glu.n = 256, glu.k = 64, glu.epilogue = "bias,silu_glu";
  check_specs({glu}, 1, rng, [&](const Problem& p) { return masked_counts(p.groups, p.m, rng); });
}

// e4m3 A and B with row and block scales: A's by row as stored, B's per group.
TEST_F(GroupedGpu, Fp8RowAndBlockScales) {
  std::mt19937_64 rng(std::random_device{}());
  for (Scaling sc : {Scaling::row, Scaling::block}) {
    std::vector<int32_t> counts;
    Spec s = contiguous_spec(8, 120, 384, 384, counts, rng);
    s.in = DType::e4m3, s.out = DType::bf16, s.scaling = sc;
    check_specs({s}, 2, rng, [&](const Problem&) { return counts; });
    Spec m;
    m.how = Grouping::masked, m.groups = 8, m.m = 140, m.n = 384, m.k = 384;
    m.in = DType::e4m3, m.out = DType::bf16, m.scaling = sc;
    check_specs({m}, 1, rng, [&](const Problem& p) { return masked_counts(p.groups, p.m, rng); });
  }
}

// The tuner's GPU reference and compare (what verifies every grouped candidate) against this file's host reference,
// on the same inputs: the two readings of the grouped layouts must agree.
TEST_F(GroupedGpu, TunerReferenceMatchesHostReference) {
  std::mt19937_64 rng(std::random_device{}());
  std::vector<int32_t> counts;
  std::vector<std::pair<Spec, std::vector<int32_t>>> cases;
  Spec c = contiguous_spec(64, 20, 136, 64, counts, rng);
  cases.push_back({c, counts});
  c.epilogue = "bias,silu_glu", c.n = 272;
  cases.push_back({c, counts});
  c.epilogue = "row_scale,residual", c.beta = 0.5f, c.n = 136;
  cases.push_back({c, counts});
  for (Scaling sc : {Scaling::tensor, Scaling::row, Scaling::block}) {
    Spec f = contiguous_spec(8, 60, 264, 320, counts, rng);
    f.in = DType::e4m3, f.scaling = sc;
    cases.push_back({f, counts});
    Spec m = f;
    m.how = Grouping::masked, m.m = 70;
    cases.push_back({m, masked_counts(8, 70, rng)});
  }
  Spec m;
  m.how = Grouping::masked, m.groups = 16, m.m = 50, m.n = 136, m.k = 64, m.epilogue = "gelu_tanh,col_scale";
  cases.push_back({m, masked_counts(16, 50, rng)});
  for (auto& [spec, routing] : cases) {
    const Problem p = make_grouped(spec);
    SCOPED_TRACE(p.str());
    const Data data = make_data(p, rng);
    DeviceData dev(data);
    const std::vector<int32_t> rows = group_rows_of(p, routing);
    cuda::DeviceBuffer gr = upload(rows);
    GemmArgs args = dev.args;
    args.group_rows = static_cast<const int32_t*>(gr.get());
    const size_t n_ref = size_t(p.batch * p.m * p.n_out());
    cuda::DeviceBuffer ref(n_ref * sizeof(float));
    cuda::StreamOwner stream;
    reference_gemm(p, args, static_cast<float*>(ref.get()), stream.get());
    stream.sync();
    std::vector<float> got(n_ref);
    ref.download(got.data(), got.size() * sizeof(float));
    const std::vector<int64_t> rg = row_groups(p, routing);
    const std::vector<double> want = host_reference(p, data, rg);
    double num = 0, den = 0;
    for (size_t i = 0; i < n_ref; ++i)
      if (rg[i / size_t(p.n_out())] >= 0) num += (got[i] - want[i]) * (got[i] - want[i]), den += want[i] * want[i];
    EXPECT_LE(std::sqrt(num / den), 1e-5);
    // D as an exact kernel would write it: the groups' rows rounded to D's dtype, the rest poisoned as fill_nan does.
    std::vector<uint8_t> d(size_t(span_of(p, Which::D)) * dtype_size(p.d.dtype));
    cuda::DeviceBuffer dd(d.size());
    fill_nan(dd.get(), p.d.dtype, span_of(p, Which::D), stream.get());
    stream.sync();
    dd.download(d.data(), d.size());
    for (int64_t z = 0; z < p.batch; ++z)
      for (int64_t i = 0; i < p.m; ++i)
        if (rg[size_t(z * p.m + i)] >= 0)
          for (int64_t j = 0; j < p.n_out(); ++j)
            test::store_elem(p.d.dtype, d.data(), test::elem_offset(p.d, z, i, j),
                             want[size_t((z * p.m + i) * p.n_out() + j)]);
    dd.upload(d.data(), d.size());
    ErrorStats st = compare_to_reference(p, dd.get(), static_cast<const float*>(ref.get()), stream.get(), nullptr,
                                         args.group_rows);
    EXPECT_TRUE(st.ok(kTolerance)) << "normalized " << st.normalized << ", non-finite " << st.nonfinite
                                   << ", outside " << st.outside_writes;
    EXPECT_EQ(st.outside_writes, 0u);
    // One element of a row of no group written: the compare must see it (and only it).
    int64_t stray = -1;
    for (int64_t z = 0; z < p.batch && stray < 0; ++z)
      for (int64_t i = 0; i < p.m && stray < 0; ++i)
        if (rg[size_t(z * p.m + i)] < 0) stray = test::elem_offset(p.d, z, i, p.n_out() / 2);
    ASSERT_GE(stray, 0) << "the routing must leave a row of no group";
    test::store_elem(p.d.dtype, d.data(), stray, 0.0);
    dd.upload(d.data(), d.size());
    st = compare_to_reference(p, dd.get(), static_cast<const float*>(ref.get()), stream.get(), nullptr,
                              args.group_rows);
    EXPECT_EQ(st.outside_writes, 1u);
    EXPECT_FALSE(st.ok(kTolerance));
  }
}

// The tuner end to end on grouped problems (in process): a winner, verified on every routing, timed on all three
// (min_iters each), and right on a ragged routing of its own.
TEST_F(GroupedGpu, TunesEndToEnd) {
  std::mt19937_64 rng(std::random_device{}());
  TuneOptions o;
  o.isolation = Isolation::in_process;
  o.use_cache = false;
  o.top_k = 2;
  o.min_iters = 10;
  o.min_time_ms = 6;
  o.warmup_iters = 2;
  o.settle_ms = 20;
  std::vector<int32_t> counts;
  Spec contiguous = contiguous_spec(8, 120, 256, 128, counts, rng);
  Spec masked;
  masked.how = Grouping::masked, masked.groups = 8, masked.m = 128, masked.n = 256, masked.k = 128;
  for (const Spec& s : {contiguous, masked}) {
    const Problem p = make_grouped(s);
    SCOPED_TRACE(p.str());
    const TuneReport rep = Tuner(o).tune(p);
    std::string fates;
    for (const CandidateResult& r : rep.results) {
      fates += "\n  " + r.candidate.str() + ": " + std::string(to_string(r.status)) + " " + r.reason;
      EXPECT_NE(r.status, Status::wrong_result) << r.candidate.str() << ": " << r.reason;
    }
    ASSERT_TRUE(rep.winner) << "no winner:" << fates;
    const auto win = std::find_if(rep.results.begin(), rep.results.end(),
                                  [&](const CandidateResult& r) { return r.candidate == *rep.winner; });
    ASSERT_NE(win, rep.results.end());
    EXPECT_EQ(win->status, Status::ok) << win->reason;
    EXPECT_GE(win->error, 0.0);
    EXPECT_LE(win->error, kTolerance);
    EXPECT_GT(win->us_median, 0.0);
    EXPECT_GT(win->tflops, 0.0);
    EXPECT_GE(win->timed_iters, 3 * o.min_iters);  // every routing timed
    std::vector<std::vector<int32_t>> routings = {
        p.grouping == Grouping::masked ? masked_counts(p.groups, p.m, rng) : counts};
    EXPECT_EQ(run_candidate(p, *rep.winner, routings, rng), "") << rep.winner->str();
  }
}
