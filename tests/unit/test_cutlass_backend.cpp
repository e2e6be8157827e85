// The cutlass backend without nvcc runs: config lines, the rules, enumeration, availability, the generated unit, and
// the tuner's rule for slow-compile candidates that are not built yet.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "backends/cutlass/cutlass_backend.h"
#include "backends/cutlass/cutlass_codegen.h"
#include "backends/cutlass/cutlass_config.h"
#include "backends/cutlass/cutlass_nvcc.h"
#include "core/process.h"
#include "tuner/pipeline.h"

using namespace gemmtune;
using cutlass_be::Config;
using cutlass_be::Sched;

namespace {

namespace fs = std::filesystem;

// Sets an environment variable for the scope, restoring the old value.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(const char* n, const std::string& v) : name(n) {
    if (const char* o = std::getenv(n)) old = o;
    setenv(n, v.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old) setenv(name.c_str(), old->c_str(), 1);
    else unsetenv(name.c_str());
  }
};

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(CutlassConfig, PrintsAndParsesBack) {
  for (const char* line : {"sched=coop,tile=128x256x64,cluster=2x1", "sched=pingpong,tile=64x128x64,cluster=1x1",
                           "sched=coop,tile=256x128x64,cluster=1x2"}) {
    const Config c = Config::parse(line);
    EXPECT_EQ(c.str(), line);
    EXPECT_EQ(Config::parse(c.str()), c);
  }
  const Config c = Config::parse("sched=pingpong,tile=64x128x64,cluster=2x1");
  EXPECT_EQ(c.sched, Sched::pingpong);
  EXPECT_EQ(c.tile_m, 64);
  EXPECT_EQ(c.tile_n, 128);
  EXPECT_EQ(c.cluster_m, 2);
}

TEST(CutlassConfig, BadLinesNameTheField) {
  auto why = [](const std::string& line) {
    try {
      Config::parse(line);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("parsed");
  };
  EXPECT_TRUE(contains(why("sched=warp,tile=128x128x64,cluster=1x1"), "sched must be coop or pingpong"));
  EXPECT_TRUE(contains(why("sched=coop,tile=128x128,cluster=1x1"), "tile must be 3"));
  EXPECT_TRUE(contains(why("sched=coop,tile=128x128x64,cluster=1x1x1"), "cluster must be 2"));
  EXPECT_TRUE(contains(why("sched=coop,tile=128xax64,cluster=1x1"), "tile must be 3 positive"));
  EXPECT_TRUE(contains(why("sched=coop,tile=128x128x64"), "required"));
  EXPECT_TRUE(contains(why("sched=coop,tile=128x128x64,cluster=1x1,stages=4"), "unknown key 'stages'"));
  EXPECT_TRUE(contains(why("sched=coop,sched=coop,tile=128x128x64,cluster=1x1"), "given twice"));
  EXPECT_TRUE(contains(why("tile"), "expected key=value"));
}

TEST(CutlassConfig, RulesNameWhatIsWrong) {
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  const Problem p = Problem::make(1024, 1024, 1024, DType::bf16, DType::bf16).resolve();
  auto reason = [&](const std::string& line) { return cutlass_be::config_reason(Config::parse(line), p, dev); };
  EXPECT_EQ(reason("sched=coop,tile=128x256x64,cluster=2x1"), "");
  EXPECT_EQ(reason("sched=pingpong,tile=64x128x64,cluster=1x1"), "");
  EXPECT_TRUE(contains(reason("sched=coop,tile=64x128x64,cluster=1x1"), "M tile >= 128"));
  EXPECT_TRUE(contains(reason("sched=pingpong,tile=256x128x64,cluster=1x1"), "64 or 128"));
  EXPECT_TRUE(contains(reason("sched=coop,tile=256x256x64,cluster=1x1"), "do not fit"));
  EXPECT_TRUE(contains(reason("sched=coop,tile=128x128x32,cluster=1x1"), "K tile must be 64"));
  EXPECT_TRUE(contains(reason("sched=coop,tile=128x128x64,cluster=2x2"), "cluster must be"));
  EXPECT_TRUE(contains(reason("sched=coop,tile=128x96x64,cluster=1x1"), "N tile"));
}

TEST(CutlassConfig, ProblemsItRefusesAreNamed) {
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  auto reason = [&](Problem p) { return cutlass_be::problem_reason(p.resolve(), dev); };
  EXPECT_EQ(reason(Problem::make(1000, 4096, 4096, DType::bf16, DType::bf16)), "");  // odd M: TMA bounds it
  EXPECT_EQ(reason(Problem::make(256, 256, 256, DType::f16, DType::f32, Layout::col, Layout::row, 3)), "");
  EXPECT_TRUE(contains(reason(Problem::make(256, 256, 100, DType::bf16, DType::bf16)), "A is not 16-byte aligned"));
  EXPECT_TRUE(contains(reason(Problem::make(256, 250, 256, DType::bf16, DType::bf16)), "not 16-byte aligned"));
  Problem fp8 = Problem::make(256, 256, 256, DType::e4m3, DType::bf16);
  fp8.scaling = Scaling::tensor;
  EXPECT_EQ(reason(fp8), "");
  fp8.scaling = Scaling::row;
  EXPECT_EQ(reason(fp8), "");
  fp8.scaling = Scaling::block;
  EXPECT_TRUE(contains(reason(fp8), "fp8 scaling 'block' is not supported"));
  fp8.scaling = Scaling::tensor;
  fp8.b.layout = Layout::row;
  fp8.b.ld = 0;
  EXPECT_TRUE(contains(reason(fp8), "K-major"));
  Problem fp8_out = Problem::make(256, 256, 256, DType::e4m3, DType::e4m3);
  fp8_out.scaling = Scaling::tensor;
  EXPECT_TRUE(contains(reason(fp8_out), "D must be bf16, f16 or f32"));
  Problem mixed = Problem::make(256, 256, 256, DType::bf16, DType::bf16);
  mixed.b.dtype = DType::e4m3;
  mixed.scaling = Scaling::tensor;
  EXPECT_TRUE(contains(reason(mixed), "both fp8"));
  Problem cold = Problem::make(256, 256, 256, DType::bf16, DType::bf16);
  cold.d.layout = Layout::col;
  EXPECT_EQ(reason(cold), "");
  cold.beta = 1.0f;
  EXPECT_TRUE(contains(reason(cold), "C must have D's layout"));
  cold.c.layout = Layout::col;
  EXPECT_EQ(reason(cold), "");
  Problem cold_odd = Problem::make(255, 256, 256, DType::bf16, DType::bf16);
  cold_odd.d.layout = Layout::col;
  EXPECT_TRUE(contains(reason(cold_odd), "D's contiguous extent (255 elements)"));
  Problem glu = Problem::make(256, 256, 256, DType::bf16, DType::bf16);
  glu.epilogue = parse_epilogue("silu_glu");
  EXPECT_TRUE(contains(reason(glu), "gated linear units"));
  Problem res = Problem::make(256, 256, 256, DType::bf16, DType::bf16);
  res.epilogue = parse_epilogue("bias,residual");
  EXPECT_EQ(reason(res), "");
  Problem res_narrow = Problem::make(256, 260, 256, DType::bf16, DType::f32);  // f32 D: ld 260 is 16-byte aligned
  res_narrow.epilogue = parse_epilogue("residual:bf16");                        // a bf16 residual's rows are not
  EXPECT_TRUE(contains(reason(res_narrow), "residual (bf16, D's ld 260) is not 16-byte aligned"));
  EXPECT_TRUE(contains(reason(Problem::make_grouped(Grouping::contiguous, 4, 256, 256, 256, DType::bf16, DType::bf16)),
                       "grouped problems are not supported"));
  Problem bcast = Problem::make(256, 256, 256, DType::bf16, DType::bf16, Layout::row, Layout::col, 2);
  bcast.b.batch_stride = 0;
  EXPECT_TRUE(contains(reason(bcast), "broadcast"));
  DeviceInfo ampere = dev;
  ampere.cc_major = 8;
  EXPECT_TRUE(contains(cutlass_be::problem_reason(Problem::make(256, 256, 256, DType::bf16, DType::bf16).resolve(),
                                                  ampere),
                       "sm_90a"));
}

TEST(CutlassConfig, EnumeratesAFewValidConfigsBestFirst) {
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  for (Problem p : {Problem::make(4096, 4096, 4096, DType::bf16, DType::bf16),
                    Problem::make(1000, 4096, 4096, DType::bf16, DType::bf16),
                    Problem::make(128, 8192, 1024, DType::f16, DType::f32, Layout::row, Layout::row),
                    Problem::make(64, 64, 64, DType::bf16, DType::bf16)}) {
    p.resolve();
    const auto cs = cutlass_be::enumerate_configs(p, dev);
    ASSERT_GE(cs.size(), 3u) << p.str();
    EXPECT_LE(cs.size(), cutlass_be::kMaxConfigs) << p.str();
    std::set<std::string> seen;
    double prev = 0;
    for (const Config& c : cs) {
      EXPECT_EQ(cutlass_be::config_reason(c, p, dev), "") << c.str();
      EXPECT_TRUE(seen.insert(c.str()).second) << "duplicate " << c.str();
      const double cost = cutlass_be::estimate_cost(c, p, dev);
      EXPECT_GE(cost, prev) << c.str();
      prev = cost;
    }
  }
  // One tile along M: no cluster along M (it would multicast to nobody).
  Problem small = Problem::make(64, 4096, 4096, DType::bf16, DType::bf16).resolve();
  for (const Config& c : cutlass_be::enumerate_configs(small, dev)) EXPECT_EQ(c.cluster_m, 1) << c.str();
  // Unsupported: nothing.
  Problem glu = Problem::make(256, 256, 256, DType::bf16, DType::bf16).resolve();
  glu.epilogue = parse_epilogue("swiglu");
  EXPECT_TRUE(cutlass_be::enumerate_configs(glu, dev).empty());
}

TEST(CutlassAvailability, MissingHeadersAndNvccAreNamed) {
  const fs::path nowhere = fs::temp_directory_path() / "gemmtune-no-cutlass-here";
  {
    ScopedEnv dir("CUTLASS_DIR", nowhere.string());
    cutlass_be::Toolchain tc;
    const std::string why = cutlass_be::find_toolchain(tc);
    EXPECT_TRUE(contains(why, "CUTLASS_DIR=" + nowhere.string())) << why;
    EXPECT_TRUE(contains(why, "cutlass/cutlass.h")) << why;
  }
  {
    // No CUTLASS_DIR and a Python without the package, no nvcc anywhere.
    ScopedEnv dir("CUTLASS_DIR", "");
    unsetenv("CUTLASS_DIR");
    ScopedEnv py("GEMMTUNE_PYTHON", "/nonexistent/python3");
    ScopedEnv cxx("CUDACXX", "/nonexistent/nvcc");
    ScopedEnv home("CUDA_HOME", "/nonexistent");
    ScopedEnv path("PATH", "/nonexistent");
    cutlass_be::Toolchain tc;
    const std::string why = cutlass_be::find_toolchain(tc);
    EXPECT_TRUE(contains(why, "no CUTLASS headers")) << why;
    EXPECT_TRUE(contains(why, "nvidia-cutlass") || contains(why, "/nonexistent/python3")) << why;
    if (access("/usr/local/cuda/bin/nvcc", X_OK) != 0) EXPECT_TRUE(contains(why, "no nvcc")) << why;
  }
  {
    // A CUTLASS_DIR that holds the headers is found (a fake tree: cutlass.h and version.h).
    const fs::path fake = fs::temp_directory_path() / "gemmtune-fake-cutlass";
    fs::create_directories(fake / "include" / "cutlass");
    std::ofstream(fake / "include" / "cutlass" / "cutlass.h") << "#pragma once\n";
    std::ofstream(fake / "include" / "cutlass" / "version.h")
        << "#define CUTLASS_MAJOR 4\n#define CUTLASS_MINOR 2\n#define CUTLASS_PATCH 0\n";
    ScopedEnv dir("CUTLASS_DIR", fake.string());
    cutlass_be::Toolchain tc;
    cutlass_be::find_toolchain(tc);
    EXPECT_EQ(tc.include_dir, (fake / "include").string());
    EXPECT_EQ(tc.cutlass_version, "4.2.0");
    fs::remove_all(fake);
  }
}

TEST(CutlassAvailability, BackendIsRegisteredBeforePad) {
  std::vector<std::string> names;
  for (const auto& b : all_backends()) names.push_back(b->name());
  auto at = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) - names.begin(); };
  ASSERT_LT(at("cutlass"), static_cast<long>(names.size()));
  EXPECT_LT(at("cublaslt"), at("cutlass"));
  EXPECT_LT(at("cutlass"), at("pad"));
  auto b = find_backend("cutlass");
  EXPECT_TRUE(b->slow_compile());
}

TEST(CutlassCodegen, InstantiatesTheConfigAndTheProblem) {
  Problem p = Problem::make(1000, 4096, 4096, DType::bf16, DType::bf16).resolve();
  const std::string s = cutlass_unit_source(p, "sched=coop,tile=128x256x64,cluster=2x1");
  for (const char* part : {"using TileShape = cute::Shape<cute::_128, cute::_256, cute::_64>;",
                           "using ClusterShape = cute::Shape<cute::_2, cute::_1, cute::_1>;",
                           "cutlass::gemm::KernelTmaWarpSpecializedCooperative",
                           "using EpiSchedule = cutlass::epilogue::TmaWarpSpecializedCooperative;",
                           "using EA = cutlass::bfloat16_t;", "using LA = cutlass::layout::RowMajor;",
                           "using LB = cutlass::layout::ColumnMajor;", "using EC = void;",
                           "a.mainloop.dA = cute::make_stride(x.lda, cute::Int<1>{}, x.bsa);",
                           "a.mainloop.dB = cute::make_stride(x.ldb, cute::Int<1>{}, x.bsb);",
                           "StageCountAutoCarveout", "struct GtCutlassArgs", "gt_cutlass_run", "gt_cutlass_ident"})
    EXPECT_TRUE(contains(s, part)) << part << "\n" << s;
  EXPECT_TRUE(contains(s, cutlass_be::unit_ident(Config::parse("sched=coop,tile=128x256x64,cluster=2x1"), p)));
  EXPECT_FALSE(contains(s, "ptr_C"));  // beta == 0: C is never read

  Problem q = Problem::make(256, 256, 256, DType::f16, DType::f32, Layout::col, Layout::row, 2).resolve();
  q.beta = 0.5f;
  q.c.dtype = DType::bf16;
  const std::string t = cutlass_unit_source(q, "sched=pingpong,tile=64x128x64,cluster=1x1");
  for (const char* part : {"cutlass::gemm::KernelTmaWarpSpecializedPingpong", "using EpiSchedule = cutlass::epilogue::TmaWarpSpecialized;",
                           "using EA = cutlass::half_t;", "using LA = cutlass::layout::ColumnMajor;",
                           "using LB = cutlass::layout::RowMajor;", "using EC = cutlass::bfloat16_t;",
                           "using ED = float;", "a.mainloop.dA = cute::make_stride(cute::Int<1>{}, x.lda, x.bsa);",
                           "a.mainloop.dB = cute::make_stride(cute::Int<1>{}, x.ldb, x.bsb);", "a.epilogue.ptr_C",
                           "cutlass::homogeneous_multiply_add", "fu::Sm90SrcFetch<EC>"})
    EXPECT_TRUE(contains(t, part)) << part << "\n" << t;
  // A unit names its config and problem: two configs, two units.
  EXPECT_NE(cutlass_be::unit_key(s), cutlass_be::unit_key(cutlass_unit_source(p, "sched=coop,tile=128x256x64,cluster=1x2")));
  EXPECT_THROW(cutlass_unit_source(p, "sched=coop"), Error);
}

// fp8: K tile 128, the fp8 element types, and the scales folded into the alpha term as the scaling says.
TEST(CutlassCodegen, Fp8ScalesFoldIntoTheAlphaTerm) {
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  Problem p = Problem::make(1024, 1024, 1024, DType::e4m3, DType::bf16).resolve();
  p.scaling = Scaling::tensor;
  for (const Config& c : cutlass_be::enumerate_configs(p, dev)) EXPECT_EQ(c.tile_k, 128) << c.str();
  EXPECT_TRUE(contains(cutlass_be::config_reason(Config::parse("sched=coop,tile=128x128x64,cluster=1x1"), p, dev),
                       "K tile must be 128"));
  const std::string s = cutlass_unit_source(p, "sched=coop,tile=128x128x128,cluster=1x1");
  EXPECT_TRUE(contains(s, "using EA = cutlass::float_e4m3_t;")) << s;
  EXPECT_TRUE(contains(s, "cute::_128, cute::_128, cute::_128")) << s;
  EXPECT_TRUE(contains(s, "fu::Sm90ScalarBroadcast<float, cute::Stride<cute::_0, cute::_0, cute::_0>, 3>")) << s;
  EXPECT_TRUE(contains(s, "{nullptr, x.scale_a, x.scale_b}")) << s;
  // The accumulation mode picks the schedule: promoted every 128 K (exact) or CUTLASS's FP8FastAccum one (fast).
  EXPECT_TRUE(contains(s, "cutlass::gemm::KernelTmaWarpSpecializedCooperative>::CollectiveOp")) << s;
  Problem fast = p;
  fast.fp8_accum = Fp8Accum::fast;
  const std::string sf = cutlass_unit_source(fast, "sched=pingpong,tile=128x128x128,cluster=1x1");
  EXPECT_TRUE(contains(sf, "cutlass::gemm::KernelTmaWarpSpecializedPingpongFP8FastAccum>::CollectiveOp")) << sf;
  EXPECT_NE(cutlass_be::unit_ident(Config::parse("sched=coop,tile=128x128x128,cluster=1x1"), fast),
            cutlass_be::unit_ident(Config::parse("sched=coop,tile=128x128x128,cluster=1x1"), p));
  p.scaling = Scaling::row;
  p.epilogue = parse_epilogue("bias,relu");
  const cutlass_be::FusionCode f = cutlass_be::generate_fusion(p);
  EXPECT_TRUE(contains(f.types, "using NScaleB = fu::Sm90EVT<fu::Sm90Compute<cutlass::multiplies, float, float")) << f.types;
  EXPECT_TRUE(contains(f.types, ", NScaleB, fu::Sm90ColBroadcast<0, TileShape, float, float")) << f.types;
  EXPECT_TRUE(contains(f.args, "{x.scale_b}")) << f.args;
  EXPECT_TRUE(contains(f.args, "{x.scale_a}")) << f.args;
  // The scaling is part of what the object is built for.
  Problem t = p;
  t.scaling = Scaling::tensor;
  const Config c = Config::parse("sched=coop,tile=128x128x128,cluster=1x1");
  EXPECT_NE(cutlass_be::unit_ident(c, p), cutlass_be::unit_ident(c, t));
}

// Every epilogue op becomes its EVT node, in the chain's order, fp32 inside and D's type at the root.
TEST(CutlassCodegen, EpilogueChainBecomesAVisitorTree) {
  struct Case {
    const char* chain;
    std::vector<std::string> parts;
  };
  const Case cases[] = {
      {"none", {"using N0 = fu::Sm90EVT<fu::Sm90Compute<cutlass::multiplies, ED, float", "using Fusion = N0;"}},
      {"bias", {"Sm90Compute<cutlass::plus, ED, float", "fu::Sm90RowBroadcast<0, TileShape, cutlass::bfloat16_t",
                "x.bias"}},
      {"bias_row:f32", {"fu::Sm90ColBroadcast<0, TileShape, float, float", "x.bias"}},
      {"relu", {"cutlass::epilogue::thread::ReLu, ED"}},
      {"gelu_tanh", {"cutlass::epilogue::thread::GELU_taylor, ED"}},
      {"gelu_erf", {"cutlass::epilogue::thread::GELU, ED"}},
      {"silu", {"cutlass::epilogue::thread::SiLu, ED"}},
      {"sigmoid", {"cutlass::epilogue::thread::Sigmoid, ED"}},
      {"row_scale", {"Sm90Compute<cutlass::multiplies, ED, float", "fu::Sm90ColBroadcast", "x.row_scale"}},
      {"col_scale:f16", {"fu::Sm90RowBroadcast<0, TileShape, cutlass::half_t", "x.col_scale"}},
      {"residual", {"AuxLoadDescriptor<EpiDesc, LD, cutlass::bfloat16_t>", "fu::Sm90AuxLoad<ResDesc::Stages",
                    "x.residual", "cute::make_stride(x.ldd, cute::Int<1>{}, x.bsd)"}},
      {"bias,gelu_tanh,row_scale,col_scale",
       {"using N1 = fu::Sm90EVT<fu::Sm90Compute<cutlass::plus, float, float", ", N0, fu::Sm90RowBroadcast",
        "using N2 = fu::Sm90EVT<fu::Sm90Compute<cutlass::epilogue::thread::GELU_taylor, float, float", ", N1>;",
        "using N3 = fu::Sm90EVT<fu::Sm90Compute<cutlass::multiplies, float, float", ", N2, fu::Sm90ColBroadcast",
        "using N4 = fu::Sm90EVT<fu::Sm90Compute<cutlass::multiplies, ED, float", ", N3, fu::Sm90RowBroadcast",
        "using Fusion = N4;"}},
  };
  for (const Case& c : cases) {
    Problem p = Problem::make(256, 256, 256, DType::bf16, DType::bf16).resolve();
    p.epilogue = parse_epilogue(c.chain);
    const cutlass_be::FusionCode f = cutlass_be::generate_fusion(p);
    for (const auto& part : c.parts)
      EXPECT_TRUE(contains(f.types, part) || contains(f.args, part)) << c.chain << ": " << part << "\n" << f.types;
    // The arguments nest as the tree does: one brace pair per node, balanced.
    int depth = 0, max_depth = 0;
    for (char ch : f.args) {
      depth += ch == '{' ? 1 : ch == '}' ? -1 : 0;
      max_depth = std::max(max_depth, depth);
      ASSERT_GE(depth, 0) << c.chain << ": " << f.args;
    }
    EXPECT_EQ(depth, 0) << c.chain << ": " << f.args;
    EXPECT_GE(max_depth, static_cast<int>(p.epilogue.ops.size()) + 2) << c.chain << ": " << f.args;
    EXPECT_TRUE(contains(f.args, "x.alpha")) << f.args;
  }
  // With beta: beta * C + alpha * acc first.
  Problem p = Problem::make(256, 256, 256, DType::bf16, DType::bf16).resolve();
  p.beta = 1.0f;
  p.epilogue = parse_epilogue("relu");
  const cutlass_be::FusionCode f = cutlass_be::generate_fusion(p);
  EXPECT_TRUE(contains(f.types, "using NAlpha = fu::Sm90EVT<fu::Sm90Compute<cutlass::multiplies, float, float"));
  EXPECT_TRUE(contains(f.types, "using N0 = fu::Sm90EVT<fu::Sm90Compute<cutlass::homogeneous_multiply_add, float"));
  EXPECT_TRUE(contains(f.args, "{{{{x.beta}}, {}, {{{x.alpha}}, {}, {}}, {}}, {}}")) << f.args;
}

namespace {

// A backend whose compiles are "slow" (or not): configs c0..c9, the ones in `built` compiled already.
class FakeSlowBackend final : public Backend {
 public:
  FakeSlowBackend(std::string name, bool slow, std::set<std::string> built)
      : name_(std::move(name)), slow_(slow), built_(std::move(built)) {}
  std::string name() const override { return name_; }
  bool slow_compile() const override { return slow_; }
  bool is_compiled(const ResolvedProblem&, const BackendAnalysis&, const Candidate& c, const BackendConfig&,
                   const DeviceInfo&) const override {
    return !slow_ || built_.count(c.config) > 0;
  }
  std::string supports(const ResolvedProblem&, const DeviceInfo&) const override { return ""; }
  std::vector<Candidate> enumerate(const ResolvedProblem&, const BackendAnalysis&, const DeviceInfo&) const override {
    std::vector<Candidate> out;
    for (int i = 0; i < 10; ++i) out.push_back({name_, "c" + std::to_string(i)});
    return out;
  }
  std::shared_ptr<const BackendConfig> parse(const Candidate& c) const override {
    return std::make_shared<const BackendConfigOf<std::string>>(c.config);
  }
  using Backend::compile, Backend::enumerate, Backend::load, Backend::path, Backend::validate;
  std::string validate(const ResolvedProblem&, const BackendAnalysis&, const Candidate&, const BackendConfig&,
                       const DeviceInfo&) const override {
    return "";
  }
  CompileResult compile(const ResolvedProblem&, const BackendAnalysis&, const Candidate&, const BackendConfig&,
                        const DeviceInfo&) const override {
    CompileResult r;
    r.compiled = true;
    return r;
  }
  std::unique_ptr<Executable> load(const ResolvedProblem&, const BackendAnalysis&, const Candidate&,
                                   const BackendConfig&, const CompileResult&) const override {
    return nullptr;
  }

 private:
  std::string name_;
  bool slow_;
  std::set<std::string> built_;
};

}  // namespace

// A tune that does not wait: a slow backend's unbuilt candidates are taken out of its list (the built ones fill its
// top-k slots) and the unbuilt ones among its first top_k come back as skipped, with the reason; a fast backend's
// list is untouched.
TEST(CompileAhead, UnbuiltSlowCandidatesAreSkippedAndGiveUpTheirSlots) {
  const Problem p = Problem::make(256, 256, 256, DType::bf16, DType::bf16).resolve();
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  std::vector<RankedList> lists(2);
  lists[0].backend = std::make_shared<FakeSlowBackend>("fast", false, std::set<std::string>{});
  lists[1].backend = std::make_shared<FakeSlowBackend>("slow", true, std::set<std::string>{"c3", "c7"});
  for (auto& l : lists) l.ranked = l.backend->enumerate(resolve(p), dev);
  const auto skipped = take_uncompiled(lists, resolve(p), dev, 4);
  EXPECT_EQ(lists[0].ranked.size(), 10u);
  ASSERT_EQ(lists[1].ranked.size(), 2u);
  EXPECT_EQ(lists[1].ranked[0].config, "c3");
  EXPECT_EQ(lists[1].ranked[1].config, "c7");
  ASSERT_EQ(skipped.size(), 3u);  // c0, c1, c2: the first four less the built c3
  for (size_t i = 0; i < skipped.size(); ++i) {
    EXPECT_EQ(skipped[i].candidate().str(), "slow:c" + std::to_string(i));
    EXPECT_EQ(skipped[i].status(), Status::skipped);
    EXPECT_TRUE(contains(skipped[i].result.reason, "not compiled yet")) << skipped[i].result.reason;
    EXPECT_TRUE(contains(skipped[i].result.reason, "--wait-compile")) << skipped[i].result.reason;
  }
  // The built ones are what the top-k compile takes: both of them, nothing unbuilt.
  const auto prepared = prepare_ranked(lists, 4, 1, [&](PreparedCandidate& pc) { compile_one(resolve(p), dev, pc); });
  size_t slow = 0;
  for (const auto& pc : prepared)
    if (pc.candidate().backend == "slow") {
      ++slow;
      EXPECT_EQ(pc.status(), Status::pending) << pc.candidate().str();
    }
  EXPECT_EQ(slow, 2u);

  // top_k 0 (all): every unbuilt one is reported.
  std::vector<RankedList> all(1);
  all[0].backend = lists[1].backend;
  all[0].ranked = all[0].backend->enumerate(resolve(p), dev);
  EXPECT_EQ(take_uncompiled(all, resolve(p), dev, 0).size(), 8u);
}

TEST(CompileAhead, CutlassIsCompiledOnlyWhenItsObjectIsCached) {
  auto b = find_backend("cutlass");
  ASSERT_TRUE(b);
  if (!b->unavailable().empty()) GTEST_SKIP() << "cutlass unavailable: " << b->unavailable();
  const fs::path dir = fs::temp_directory_path() / "gemmtune-test-cutlass-empty-cache";
  fs::remove_all(dir);
  ScopedEnv cache("GEMMTUNE_CACHE_DIR", dir.string());
  const Problem p = Problem::make(4096, 4096, 4096, DType::bf16, DType::bf16).resolve();
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  const Candidate c{"cutlass", "sched=coop,tile=128x256x64,cluster=1x2"};
  EXPECT_FALSE(b->is_compiled(resolve(p), *b->analyze(resolve(p)), c, *b->parse(c), dev));
  // The object for the unit's key on disk: compiled (is_compiled only looks; a bad file is build()'s to reject).
  const std::string key = cutlass_be::unit_key(cutlass_unit_source(p, c.config));
  fs::create_directories(dir / "kernels" / "cutlass");
  std::ofstream(dir / "kernels" / "cutlass" / (key + ".so")) << "x";
  EXPECT_TRUE(b->is_compiled(resolve(p), *b->analyze(resolve(p)), c, *b->parse(c), dev));
  fs::remove_all(dir);
}

// `gemmtune compile --suite FILE` compiles every shape of the suite (here with the fast sm90 backend), and refuses
// --suite beside a problem's own options or a problem without --n / --k, naming the option.
TEST(CompileAhead, CompileTakesASuite) {
#ifdef GEMMTUNE_CLI_PATH
  const std::string cli = GEMMTUNE_CLI_PATH;
#else
  const std::string cli;
#endif
  if (cli.empty() || access(cli.c_str(), X_OK) != 0) GTEST_SKIP() << "gemmtune CLI not built";
  const fs::path dir = fs::temp_directory_path() / ("gemmtune-test-suite-" + std::to_string(getpid()));
  fs::create_directories(dir);
  ScopedEnv cache("GEMMTUNE_CACHE_DIR", (dir / "cache").string());
  const fs::path suite = dir / "s.json";
  std::ofstream(suite) << R"({"name": "t", "shapes": [{"name": "first", "m": 256, "n": 256, "k": 256},)"
                          R"( {"name": "second", "m": 128, "n": 512, "k": 128, "epilogue": "bias"}]})";
  const auto ok = run_process(
      {cli, "compile", "--suite", suite.string(), "--backends", "sm90", "--top-k", "1", "--json"}, 300);
  EXPECT_EQ(ok.status, 0) << ok.output();
  EXPECT_TRUE(contains(ok.output(), "shape first")) << ok.output();
  EXPECT_TRUE(contains(ok.output(), "shape second")) << ok.output();
  EXPECT_TRUE(contains(ok.output(), "\"shapes\"")) << ok.output();
  const auto both = run_process({cli, "compile", "--suite", suite.string(), "--m", "64"}, 60);
  EXPECT_EQ(both.status, 2) << both.output();
  EXPECT_TRUE(contains(both.output(), "--suite and --m/--n/--k exclude each other")) << both.output();
  const auto none = run_process({cli, "compile", "--m", "64", "--k", "64"}, 60);
  EXPECT_EQ(none.status, 2) << none.output();
  EXPECT_TRUE(contains(none.output(), "--n is required (or --suite FILE)")) << none.output();
  const auto missing = run_process({cli, "compile", "--suite", (dir / "nope.json").string()}, 60);
  EXPECT_EQ(missing.status, 2) << missing.output();
  EXPECT_TRUE(contains(missing.output(), "nope.json")) << missing.output();
  fs::remove_all(dir);
}

TEST(CutlassNvcc, PtxasReportGivesRegistersAndSpills) {
  int regs = 0, spill = 0;
  cutlass_be::ptxas_resources(
      "ptxas info    : Compiling entry function '_ZN7cutlass13device_kernel' for 'sm_90a'\n"
      "ptxas info    : Function properties for _ZN7cutlass13device_kernel\n"
      "    0 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 1 barriers\n"
      "ptxas info    : Used 16 registers\n",
      regs, spill);
  EXPECT_EQ(regs, 168);
  EXPECT_EQ(spill, 12);
  cutlass_be::ptxas_resources("no report", regs, spill);
  EXPECT_EQ(regs, -1);
  EXPECT_EQ(spill, -1);
}
