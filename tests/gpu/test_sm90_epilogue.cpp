// sm90 fused epilogues on the GPU: every op and a few chains (GLU halves and interleaved included), D row- and
// column-major, ragged shapes, batches and padded leading dimensions, several configs (coop, ping-pong, clusters),
// against the double-precision CPU reference (gpu_test_util.h: reference_d + apply_epilogue). D is poisoned with NaN
// (padding included: writes outside M x n_out fail too). Kernels are compiled in parallel first.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "backends/sm90/sm90_backend.h"
#include "backends/sm90/sm90_config.h"
#include "cuda/driver.h"
#include "cuda/memory.h"
#include "gemmtune/device.h"
#include "gemmtune/errors.h"
#include "gpu_jobs.h"
#include "gpu_test_util.h"

namespace gemmtune {
namespace {

struct Shape {
  int64_t m, n, k, batch;
};

int64_t pad8(int64_t x, int64_t extra) { return (x + 7) / 8 * 8 + extra; }

// alpha 0.75, or 1 when the v-th problem's rotation picks it (the kernels specialise alpha == 1 at compile time).
Problem make(const Shape& s, const std::string& chain, Layout ld, DType out, Layout la, Layout lb, bool beta,
             int64_t extra, bool alpha_one = false) {
  Problem p = Problem::make(s.m, s.n, s.k, DType::bf16, out, la, lb, s.batch);
  p.epilogue = parse_epilogue(chain);
  p.d.layout = ld;
  p.c = p.d;
  p.alpha = alpha_one ? 1.0f : 0.75f;
  p.beta = beta ? -1.25f : 0.0f;
  const int64_t no = p.n_out();
  p.a.ld = pad8(la == Layout::row ? s.k : s.m, extra);
  p.b.ld = pad8(lb == Layout::row ? s.n : s.k, extra);
  p.d.ld = pad8(ld == Layout::row ? no : s.m, extra);
  p.c.ld = p.d.ld;
  for (Operand* o : {&p.a, &p.b, &p.c, &p.d}) o->batch_stride = -1;
  p.resolve();
  for (Operand* o : {&p.a, &p.b, &p.c, &p.d}) o->batch_stride += s.batch > 1 ? 8 * extra : 0;
  return p;
}

using test::Job;

// Up to `n` candidates of the problem, spread over schedules and cluster shapes.
std::vector<Candidate> pick(const Problem& p, size_t n, size_t rot) {
  auto be = make_sm90_backend();
  const auto all = be->enumerate(resolve(p), current_device());
  std::vector<Candidate> out;
  if (all.empty()) return out;
  out.push_back(all.front());
  // Then the first candidate of another (sched, cluster) family, rotating which family by `rot`.
  std::vector<Candidate> fam;
  std::vector<std::string> seen{""};
  for (const Candidate& c : all) {
    const auto cfg = sm90::Config::parse(c.config);
    const std::string f = std::to_string(cfg.pingpong) + std::to_string(cfg.cm) + std::to_string(cfg.cn);
    if (std::find(seen.begin(), seen.end(), f) != seen.end()) continue;
    seen.push_back(f);
    if (c != all.front()) fam.push_back(c);
  }
  for (size_t i = 0; i < fam.size() && out.size() < n; ++i) out.push_back(fam[(i + rot) % fam.size()]);
  return out;
}

class Sm90EpilogueGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu_available()) GTEST_SKIP() << "no GPU";
    if (current_device().cc_major != 9) GTEST_SKIP() << "not Hopper";
    cuda::ensure_context();
  }
};

TEST_F(Sm90EpilogueGpu, ChainsLayoutsShapesConfigs) {
  const char* const chains[] = {"bias",
                                "bias_row",
                                "relu",
                                "gelu_tanh",
                                "gelu_erf",
                                "silu",
                                "sigmoid",
                                "row_scale",
                                "col_scale",
                                "residual",
                                "bias,gelu_tanh",
                                "bias:f32,relu",
                                "bias,residual",
                                "row_scale,col_scale,gelu_erf,residual:f32",
                                "silu_glu",
                                "gelu_tanh_glu:interleave64",
                                "swiglu:interleave8",
                                "bias,silu_glu:interleave16,col_scale:f32,residual"};
  // Ragged M/N/K, batches; N a multiple of 128 where a GLU needs gate/up blocks to tile it.
  const Shape shapes[] = {{130, 256, 200, 1}, {37, 384, 72, 3}, {300, 640, 1000, 1}};
  const Layout L[2] = {Layout::row, Layout::col};
  std::vector<Job> jobs;
  int v = 0;
  for (const char* chain : chains) {
    const bool glu = parse_epilogue(chain).has_glu();
    for (Layout ld : L) {
      if (glu && ld == Layout::col) continue;  // rejected by sm90 (tested in the unit test)
      for (const Shape& s : shapes) {
        ++v;
        const DType out = v % 3 == 0 ? DType::f32 : v % 3 == 1 ? DType::bf16 : DType::f16;
        const Problem p =
            make(s, chain, ld, out, L[v % 2], L[(v / 2) % 2], !glu && v % 4 == 1, (v % 2) * 8, v % 5 == 2);
        if (std::string why = p.check(); !why.empty()) {
          ADD_FAILURE() << "bad test problem " << p.str() << ": " << why;
          continue;
        }
        for (const Candidate& c : pick(p, 2, size_t(v))) jobs.push_back({p, c, {}, {}});
      }
    }
  }
  test::run_jobs(*make_sm90_backend(), jobs);
  EXPECT_GT(jobs.size(), 60u);
}

// Every chain x config x shape, rotating D's layout and dtype, the A/B layouts and beta; a pair the config cannot run
// is printed and skipped.
static void run_chains(const std::vector<const char*>& chains, const std::vector<const char*>& configs,
                const std::vector<Shape>& shapes) {
  std::vector<Job> jobs;
  int v = 0;
  for (const char* chain : chains)
    for (const char* cfg : configs)
      for (const Shape& s : shapes) {
        ++v;
        const bool glu = parse_epilogue(chain).has_glu();
        const Problem p = make(s, chain, glu ? Layout::row : (v % 2 ? Layout::col : Layout::row),
                               v % 3 == 0 ? DType::f32 : DType::bf16, Layout::row, Layout::col, !glu && v % 4 == 1, 0);
        if (!p.check().empty()) continue;  // a shape the chain cannot take (a GLU on an odd N) is no job
        jobs.push_back({p, {"sm90", cfg}, {}, {}});
      }
  auto be = make_sm90_backend();
  const DeviceInfo dev = current_device();
  std::mt19937_64 rng(std::random_device{}());
  int ran = 0;
  for (Job& j : jobs) {
    if (std::string why = be->validate(resolve(j.p), j.cand, dev); !why.empty()) {
      std::printf("skip %s on %s: %s\n", j.cand.str().c_str(), j.p.str().c_str(), why.c_str());
      continue;
    }
    std::string r;
    try {
      j.cr = be->compile(resolve(j.p), j.cand, dev);
      r = test::run_job(*be, j, rng);
    } catch (const std::exception& e) {
      r = std::string("threw: ") + e.what();
    }
    if (test::is_skip(r)) {
      std::printf("skip %s on %s: %s\n", j.cand.str().c_str(), j.p.str().c_str(), r.c_str());
      continue;
    }
    ++ran;
    EXPECT_EQ(r, "") << j.cand.str() << " on " << j.p.str();
  }
  EXPECT_GT(ran, int(jobs.size()) / 3);
}

// Fused chains on the stream-K tail: the tail cluster adds the head's partial before the chain runs (a chain applied
// to a partial sum would be wrong). Shapes with a partial last round on 66 / 132 clusters, ragged K.
TEST_F(Sm90EpilogueGpu, StreamKTailChains) {
  run_chains({"bias,gelu_tanh", "row_scale,col_scale,gelu_erf,residual:f32", "silu_glu", "relu"},
             {"tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc,tail=sk",
              "tile=128x128x64,stages=6,cluster=1x1,sched=coop,raster=m,group=4,tail=sk"},
             {{1536, 1536, 520, 1}, {1280, 1792, 200, 2}});
}

// Fused chains on tile N = 168 (unswizzled 112-byte epilogue strips; 88-row B parts on 2 CTAs along M), with ragged N
// (the edge copy), C and batches.
TEST_F(Sm90EpilogueGpu, TileN168Chains) {
  run_chains({"bias,gelu_tanh", "row_scale,col_scale,gelu_erf,residual:f32", "relu", "bias_row,silu"},
             {"tile=128x168x64,stages=5,cluster=1x2,sched=coop,raster=m,group=8",
              "tile=64x168x64,stages=6,cluster=1x1,sched=pingpong,raster=n,group=4",
              "tile=128x168x64,stages=5,cluster=2x1,sched=coop,raster=n,group=8"},
             {{1000, 1003, 520, 1}, {300, 680, 200, 2}});
}

// Fused chains with epi=warp (16-row pieces per warp, 8-row for coop 128x144 with 6 stages; 128-byte strips and a
// tail strip), with C, f32 D, the edge copy and the stream-K tail; a GLU is refused by config_reason (a skip).
TEST_F(Sm90EpilogueGpu, WarpStripChains) {
  run_chains({"bias,gelu_tanh", "row_scale,col_scale,gelu_erf,residual:f32", "relu", "bias_row,silu", "silu_glu"},
             {"tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=8,epi=warp",
              "tile=128x168x64,stages=5,cluster=1x2,sched=coop,raster=m,group=8,epi=warp",
              "tile=128x128x64,stages=6,cluster=1x1,sched=coop,raster=m,group=4,tail=sk,epi=warp",
              "tile=64x128x64,stages=7,cluster=1x1,sched=pingpong,raster=n,group=4,epi=warp",
              "tile=128x144x64,stages=6,cluster=2x1,sched=coop,raster=m,group=8,epi=warp"},
             {{1000, 1003, 520, 1}, {300, 680, 200, 2}});
}

// Fused chains with swap=1 (decode tiles: D stored transposed straight from the registers, the chain applied per
// element with D's coordinates), row- and col-major D, f32 D, C, ragged M / N, batches; a GLU is refused (a skip).
TEST_F(Sm90EpilogueGpu, SwapChains) {
  run_chains({"bias,gelu_tanh", "row_scale,col_scale,gelu_erf,residual:f32", "bias_row,silu", "bias,residual",
              "silu_glu"},
             {"tile=64x16x64,stages=16,cluster=1x1,sched=pingpong,raster=m,group=6,swap=1",
              "tile=128x32x64,stages=10,cluster=2x1,sched=coop,raster=m,group=3,swap=1",
              "tile=64x48x64,stages=14,cluster=1x1,sched=pingpong,raster=m,group=5,swap=1"},
             {{16, 4096, 4096, 1}, {37, 1000, 520, 2}, {5, 333, 200, 1}});
}

// An epilogue operand the chain needs but the call lacks is a clear error, not a fault.
TEST_F(Sm90EpilogueGpu, MissingOperandThrows) {
  const Problem p = make({128, 128, 64, 1}, "bias,relu", Layout::row, DType::bf16, Layout::row, Layout::col, false, 0);
  auto be = make_sm90_backend();
  const Candidate cand = be->enumerate(resolve(p), current_device()).front();
  auto exe = be->load(resolve(p), cand, be->compile(resolve(p), cand, current_device()));
  cuda::DeviceBuffer a(128 * 64 * 2), b(128 * 64 * 2), d(128 * 128 * 2);
  EXPECT_THROW(exe->launch({a.get(), b.get(), nullptr, d.get()}, nullptr), Error);
}

}  // namespace
}  // namespace gemmtune
