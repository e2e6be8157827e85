// triton backend without a GPU: config round trip and bad configs, problem and config reasons, enumeration for
// several problems, availability with a missing interpreter, and (TritonCompile: label `compile`) real compiles of a
// few candidates to sm_90a cubins, served from the memory and disk caches, a corrupt entry a miss, a hung compile
// killed. The compile tests skip where triton cannot be imported.
#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/triton/triton_backend.h"
#include "backends/triton/triton_compile.h"
#include "backends/triton/triton_config.h"
#include "gemmtune/epilogue.h"
#include "gemmtune/errors.h"

namespace gemmtune {
namespace {

namespace fs = std::filesystem;
using triton::Config;
using triton::Template;

const DeviceInfo kDev = DeviceInfo::assumed_sm90();

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

Problem make(int64_t m, int64_t n, int64_t k, DType in = DType::bf16, DType out = DType::bf16,
             Layout la = Layout::row, Layout lb = Layout::col, const char* chain = "") {
  Problem p = Problem::make(m, n, k, in, out, la, lb);
  p.epilogue = parse_epilogue(chain);
  // fp8: the mode the templates serve (their fp8 tl.dot accumulates K in the tensor core).
  if (is_fp8(in)) p.scaling = Scaling::row, p.fp8_accum = Fp8Accum::fast;
  p.resolve();
  return p;
}

TEST(TritonConfig, RoundTrip) {
  for (const char* s : {"tmpl=tma,bm=128,bn=256,bk=64,stages=3,warps=8,gm=8",
                        "tmpl=masked,bm=16,bn=64,bk=128,stages=4,warps=4,gm=1"}) {
    EXPECT_EQ(Config::parse(s).str(), s);
  }
  Config c;
  c.tmpl = Template::tma;
  c.bm = 64;
  EXPECT_EQ(Config::parse(c.str()), c);
}

TEST(TritonConfig, BadLines) {
  for (const char* s : {"", "tmpl=tmx,bm=128,bn=128,bk=64,stages=3,warps=8,gm=8", "tmpl=tma,bm=128",
                        "tmpl=tma,bm=12x,bn=128,bk=64,stages=3,warps=8,gm=8",
                        "tmpl=tma,bm=128,bn=128,bk=64,stages=3,warps=8,gm=8,foo=1",
                        "tmpl=tma,bm=128,bm=128,bn=128,bk=64,stages=3,warps=8,gm=8", "tmpl"}) {
    EXPECT_THROW(Config::parse(s), Error) << s;
  }
}

TEST(TritonConfig, Reasons) {
  const Problem p = make(1024, 1024, 1024);
  auto reason = [&](const char* s, const Problem& q) { return triton::config_reason(Config::parse(s), q, kDev); };
  EXPECT_EQ(reason("tmpl=tma,bm=128,bn=256,bk=64,stages=3,warps=8,gm=8", p), "");
  EXPECT_TRUE(has(reason("tmpl=tma,bm=96,bn=128,bk=64,stages=3,warps=8,gm=8", p), "power of two"));
  EXPECT_TRUE(has(reason("tmpl=tma,bm=128,bn=128,bk=64,stages=3,warps=2,gm=8", p), "warps"));
  EXPECT_TRUE(has(reason("tmpl=tma,bm=256,bn=256,bk=64,stages=3,warps=8,gm=8", p), "accumulators"));
  EXPECT_TRUE(has(reason("tmpl=tma,bm=128,bn=256,bk=128,stages=4,warps=8,gm=8", p), "shared memory"));
  EXPECT_TRUE(has(reason("tmpl=tma,bm=32,bn=128,bk=64,stages=3,warps=4,gm=8", p), "bm >= 64"));
  EXPECT_TRUE(has(reason("tmpl=masked,bm=128,bn=128,bk=64,stages=0,warps=4,gm=8", p), "stages"));
  Problem u = p;
  u.a.ld = 1027;  // 2-byte rows: no TMA
  EXPECT_TRUE(has(reason("tmpl=tma,bm=128,bn=128,bk=64,stages=3,warps=8,gm=8", u), "tmpl=masked takes any"));
  EXPECT_EQ(reason("tmpl=masked,bm=128,bn=128,bk=64,stages=3,warps=8,gm=8", u), "");
  // The backend's validate() also wants the canonical spelling.
  auto b = find_backend("triton");
  ASSERT_TRUE(b);
  EXPECT_TRUE(
      has(b->validate(resolve(p), Candidate{"triton", "bm=128,tmpl=tma,bn=128,bk=64,stages=3,warps=8,gm=8"}, kDev),
          "not canonical"));
}

TEST(TritonConfig, ProblemReasons) {
  auto reason = [](const Problem& p) { return triton::problem_reason(p, kDev); };
  EXPECT_EQ(reason(make(512, 512, 512)), "");
  EXPECT_EQ(reason(make(512, 512, 512, DType::e4m3, DType::bf16)), "");
  Problem exact = make(512, 512, 512, DType::e4m3, DType::bf16);
  exact.fp8_accum = Fp8Accum::exact;
  EXPECT_TRUE(has(reason(exact), "fp8_accum=exact is not served")) << reason(exact);
  Problem g = Problem::make_grouped(Grouping::contiguous, 4, 512, 256, 256, DType::bf16, DType::bf16);
  g.resolve();
  EXPECT_TRUE(has(reason(g), "grouped problems are not supported"));
  EXPECT_TRUE(has(reason(make(512, 512, 512, DType::bf16, DType::bf16, Layout::row, Layout::col, "silu_glu")), "gated"));
  Problem blk = make(512, 512, 512, DType::e4m3, DType::bf16);
  blk.scaling = Scaling::block;
  EXPECT_TRUE(has(reason(blk), "block"));
  EXPECT_TRUE(has(reason(make(512, 512, 512, DType::e4m3, DType::e4m3)), "fp8 D"));
  EXPECT_TRUE(has(reason(make(512, 512, 512, DType::f32, DType::f32)), "inputs must be"));
  DeviceInfo ampere = kDev;
  ampere.cc_major = 8;
  EXPECT_TRUE(has(triton::problem_reason(make(512, 512, 512), ampere), "sm_90a"));
}

TEST(TritonConfig, Enumerate) {
  auto all_valid = [](const Problem& p, const std::vector<Config>& cs) {
    for (const Config& c : cs) EXPECT_EQ(triton::config_reason(c, p, kDev), "") << c.str();
  };
  // Aligned and large: TMA ranks first, a few masked stay in the list; 8..16 candidates.
  const Problem big = make(4096, 4096, 4096);
  std::vector<Config> cs = triton::enumerate_configs(big, kDev);
  ASSERT_GE(cs.size(), 8u);
  EXPECT_LE(cs.size(), 16u);
  EXPECT_EQ(cs.front().tmpl, Template::tma);
  EXPECT_GE(std::count_if(cs.begin(), cs.end(), [](const Config& c) { return c.tmpl == Template::masked; }), 3);
  all_valid(big, cs);
  // Unaligned (ld = K + 3, a 2-byte aligned base): masked only.
  Problem u = make(1000, 999, 1001);
  u.a.ld = 1004;
  u.b.align = 2;
  cs = triton::enumerate_configs(u, kDev);
  ASSERT_GE(cs.size(), 8u);
  for (const Config& c : cs) EXPECT_EQ(c.tmpl, Template::masked) << c.str();
  all_valid(u, cs);
  // Decode (memory-bound): the first config spreads the weight over at least one program per SM.
  cs = triton::enumerate_configs(make(8, 4096, 4096), kDev);
  ASSERT_FALSE(cs.empty());
  EXPECT_GE((8 + cs.front().bm - 1) / cs.front().bm * (4096 / cs.front().bn), kDev.sm_count) << cs.front().str();
  // fp8 with an epilogue: bk >= 32 everywhere.
  const Problem f8 = make(512, 4096, 4096, DType::e4m3, DType::bf16, Layout::row, Layout::col, "bias,gelu_tanh");
  cs = triton::enumerate_configs(f8, kDev);
  ASSERT_GE(cs.size(), 8u);
  all_valid(f8, cs);
  // Refused problems list nothing.
  Problem g = Problem::make_grouped(Grouping::contiguous, 4, 512, 256, 256, DType::bf16, DType::bf16);
  g.resolve();
  EXPECT_TRUE(triton::enumerate_configs(g, kDev).empty());
}

TEST(TritonConfig, RequestParams) {
  const Problem p = make(300, 200, 100, DType::bf16, DType::f32, Layout::col, Layout::row, "bias:f32,relu,residual");
  const triton::Request r = triton::make_request(Config::parse("tmpl=masked,bm=64,bn=64,bk=32,stages=3,warps=4,gm=8"), p);
  ASSERT_EQ(r.params.size(), 24u);
  EXPECT_EQ(r.params[0], (triton::Param{"a_ptr", "*bf16"}));
  EXPECT_EQ(r.params[3], (triton::Param{"d_ptr", "*fp32"}));
  EXPECT_EQ(r.params[4], (triton::Param{"bias_ptr", "*fp32"}));
  EXPECT_EQ(r.params[23], (triton::Param{"beta", "fp32"}));
  EXPECT_TRUE(has(r.json, "\"E0\":1")) << r.json;
  EXPECT_TRUE(has(r.json, "\"E1\":3"));
  EXPECT_TRUE(has(r.json, "\"E2\":10"));
  EXPECT_TRUE(has(r.json, "\"A_ROW\":0"));
}

// The op codes the request carries are the ones the embedded epilogue template branches on.
TEST(TritonConfig, OpCodesMatchTheTemplate) {
  const auto& t = triton::templates();
  ASSERT_TRUE(t.count("gemm_epilogue.py"));
  ASSERT_TRUE(t.count("compile_driver.py") && t.count("matmul_masked.py") && t.count("matmul_tma_persistent.py"));
  const std::string& epi = t.at("gemm_epilogue.py");
  const std::pair<const char*, const char*> ops[] = {
      {"bias", "OP_BIAS_COL"},         {"bias_row", "OP_BIAS_ROW"},   {"relu", "OP_RELU"},
      {"gelu_tanh", "OP_GELU_TANH"},   {"gelu_erf", "OP_GELU_ERF"},   {"silu", "OP_SILU"},
      {"sigmoid", "OP_SIGMOID"},       {"row_scale", "OP_ROW_SCALE"}, {"col_scale", "OP_COL_SCALE"},
      {"residual", "OP_RESIDUAL"}};
  for (const auto& [chain, name] : ops) {
    const Problem p = make(256, 256, 256, DType::bf16, DType::bf16, Layout::row, Layout::col, chain);
    const triton::Request r = triton::make_request(Config::parse("tmpl=masked,bm=64,bn=64,bk=32,stages=3,warps=4,gm=8"), p);
    const auto at = r.json.find("\"E0\":");
    ASSERT_NE(at, std::string::npos);
    const std::string code = r.json.substr(at + 5, r.json.find_first_of(",}", at) - at - 5);
    EXPECT_TRUE(has(epi, std::string(name) + " = " + code + "\n")) << chain << " is E0=" << code;
    EXPECT_TRUE(has(epi, "OP == " + code + ":")) << chain << ": no branch for code " << code;
  }
}

TEST(TritonBackend, UnavailableWithoutInterpreter) {
  ScopedEnv py("GEMMTUNE_PYTHON", "/nonexistent/gemmtune-test/python3");
  auto b = find_backend("triton");
  ASSERT_TRUE(b);
  const std::string why = b->unavailable();
  EXPECT_TRUE(has(why, "GEMMTUNE_PYTHON=/nonexistent/gemmtune-test/python3 not found")) << why;
  EXPECT_TRUE(b->enumerate(resolve(make(1024, 1024, 1024)), kDev).empty());
  try {
    b->compile(resolve(make(1024, 1024, 1024)),
               Candidate{"triton", "tmpl=tma,bm=128,bn=128,bk=64,stages=3,warps=8,gm=8"}, kDev);
    ADD_FAILURE() << "compile without an interpreter did not throw";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "not found")) << e.what();
  }
  // An interpreter that runs but cannot import triton (here one that fails at once).
  EXPECT_TRUE(has(triton::probe("false"), "-c 'import triton' failed")) << triton::probe("false");
}

// ---- compiles (label `compile`) ----

class TritonCompile : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = triton::probe(triton::python_exe()); !why.empty()) GTEST_SKIP() << "triton unavailable: " << why;
    std::string tmpl = (fs::temp_directory_path() / "gemmtune_triton_XXXXXX").string();
    ASSERT_TRUE(::mkdtemp(tmpl.data()));
    dir_ = tmpl;
    cache_env_.emplace("GEMMTUNE_CACHE_DIR", dir_.c_str());
    no_disk_env_.emplace("GEMMTUNE_NO_DISK_CACHE", nullptr);
    triton::clear_memory_cache();
  }
  void TearDown() override {
    triton::clear_memory_cache();
    no_disk_env_.reset();
    cache_env_.reset();
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  static std::shared_ptr<const triton::Kernel> kernel_of(const CompileResult& r) {
    return std::static_pointer_cast<const triton::Kernel>(r.artifact);
  }
  static void expect_cubin(const CompileResult& r, const char* symbol) {
    ASSERT_TRUE(r.compiled);
    auto k = kernel_of(r);
    ASSERT_TRUE(k);
    ASSERT_GE(k->image.size(), 4u);
    EXPECT_EQ(std::memcmp(k->image.data(), "\x7f" "ELF", 4), 0);
    EXPECT_EQ(k->name.rfind(symbol, 0), 0u) << k->name;  // gt_triton_<tmpl>_<hash of the request>
    EXPECT_EQ(k->name.size(), std::strlen(symbol) + 17);
    EXPECT_EQ(k->params.size(), 24u);
    EXPECT_FALSE(k->triton_version.empty());
    EXPECT_GE(k->shared, 0);
    EXPECT_EQ(r.smem_bytes, k->shared);
  }

  std::string dir_;
  std::optional<ScopedEnv> cache_env_, no_disk_env_;
};

TEST_F(TritonCompile, MaskedChainCachedInMemoryAndOnDisk) {
  auto b = find_backend("triton");
  Problem p = make(1000, 999, 1001, DType::bf16, DType::bf16, Layout::row, Layout::col,
                   "bias,gelu_tanh,row_scale,col_scale,residual");
  p.a.ld = 1004;
  p.beta = 0.5f;
  const Candidate c{"triton", "tmpl=masked,bm=64,bn=64,bk=32,stages=3,warps=4,gm=8"};
  ASSERT_EQ(b->validate(resolve(p), c, kDev), "");
  const CompileResult r1 = b->compile(resolve(p), c, kDev);
  expect_cubin(r1, "gt_triton_masked");
  EXPECT_FALSE(r1.cache_hit);
  EXPECT_GT(r1.compile_ms, 0);
  std::printf("triton compile (masked, 5-op chain): %.0f ms\n", r1.compile_ms);
  const CompileResult r2 = b->compile(resolve(p), c, kDev);
  EXPECT_TRUE(r2.cache_hit);
  EXPECT_EQ(kernel_of(r2)->image, kernel_of(r1)->image);
  EXPECT_FALSE(kernel_of(r2)->from_disk);
  triton::clear_memory_cache();
  const CompileResult r3 = b->compile(resolve(p), c, kDev);
  EXPECT_TRUE(r3.cache_hit);
  EXPECT_TRUE(kernel_of(r3)->from_disk);
  EXPECT_EQ(kernel_of(r3)->image, kernel_of(r1)->image);
  EXPECT_EQ(kernel_of(r3)->params, kernel_of(r1)->params);

  // A corrupt disk entry (a flipped byte in the cubin) is a miss with a warning: compiled again, then rewritten.
  const std::string entry = triton::disk_entry_path(kernel_of(r1)->key);
  ASSERT_TRUE(fs::exists(entry)) << entry;
  {
    std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-10, std::ios::end);
    f.put('\x5a');
  }
  triton::clear_memory_cache();
  const CompileResult r4 = b->compile(resolve(p), c, kDev);
  EXPECT_FALSE(r4.cache_hit);
  expect_cubin(r4, "gt_triton_masked");
  // Garbage in place of the entry: also a miss.
  { std::ofstream(entry, std::ios::trunc) << "not an entry"; }
  triton::clear_memory_cache();
  EXPECT_FALSE(b->compile(resolve(p), c, kDev).cache_hit);
}

TEST_F(TritonCompile, TmaBatchedHasScratch) {
  auto b = find_backend("triton");
  Problem p = Problem::make(512, 384, 256, DType::bf16, DType::bf16, Layout::col, Layout::row, 3);
  p.beta = 1.0f;
  p.resolve();
  const Candidate c{"triton", "tmpl=tma,bm=128,bn=128,bk=64,stages=3,warps=8,gm=8"};
  ASSERT_EQ(b->validate(resolve(p), c, kDev), "");
  const CompileResult r = b->compile(resolve(p), c, kDev);
  expect_cubin(r, "gt_triton_tma");
  // Device-side TMA descriptors live in the global scratch.
  EXPECT_GT(kernel_of(r)->global_scratch_size, 0);
  std::printf("triton compile (tma, batched): %.0f ms\n", r.compile_ms);
}

TEST_F(TritonCompile, Fp8RowAndTensor) {
  auto b = find_backend("triton");
  Problem p = make(256, 512, 1024, DType::e4m3, DType::bf16, Layout::row, Layout::col, "bias");
  const CompileResult r1 =
      b->compile(resolve(p), Candidate{"triton", "tmpl=tma,bm=128,bn=128,bk=128,stages=3,warps=8,gm=8"}, kDev);
  expect_cubin(r1, "gt_triton_tma");
  p.scaling = Scaling::tensor;
  p.a.ld = 1040;  // 16-byte rows still; the masked template anyway
  const CompileResult r2 =
      b->compile(resolve(p), Candidate{"triton", "tmpl=masked,bm=64,bn=64,bk=64,stages=3,warps=4,gm=8"}, kDev);
  expect_cubin(r2, "gt_triton_masked");
}

TEST_F(TritonCompile, HungCompileIsKilled) {
  ScopedEnv t("GEMMTUNE_TRITON_TIMEOUT_S", "0.05");
  auto b = find_backend("triton");
  const Problem p = make(640, 640, 640);
  try {
    b->compile(resolve(p), Candidate{"triton", "tmpl=masked,bm=32,bn=32,bk=32,stages=2,warps=4,gm=4"}, kDev);
    ADD_FAILURE() << "a compile past its deadline did not throw";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "did not finish")) << e.what();
  }
}

// The warm helpers this process started (children running compile_driver.py --serve).
std::vector<pid_t> own_helpers() {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    std::ifstream stat(e.path() / "stat");
    std::string pid, comm, state;
    long ppid = 0;
    if (!(stat >> pid >> comm >> state >> ppid) || ppid != ::getpid()) continue;
    std::ifstream cmd(e.path() / "cmdline");
    const std::string line((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
    if (has(line, "compile_driver.py") && has(line, "--serve")) out.push_back(pid_t(std::stol(name)));
  }
  return out;
}

TEST_F(TritonCompile, DeadHelperIsReplacedAndOneShotWorks) {
  auto b = find_backend("triton");
  const Problem p = make(384, 384, 384);
  EXPECT_TRUE(b->compile(resolve(p), Candidate{"triton", "tmpl=masked,bm=64,bn=64,bk=64,stages=2,warps=4,gm=8"}, kDev)
                  .compiled);
  const std::vector<pid_t> helpers = own_helpers();
  ASSERT_FALSE(helpers.empty()) << "no warm helper left after a compile";
  // Killed, not reaped: the pool reaps its helpers (a pid reaped here could be reused before the pool signals it).
  for (pid_t h : helpers) ::kill(h, SIGKILL);
  EXPECT_TRUE(b->compile(resolve(p), Candidate{"triton", "tmpl=masked,bm=64,bn=32,bk=64,stages=2,warps=4,gm=8"}, kDev)
                  .compiled);
  ScopedEnv oneshot("GEMMTUNE_TRITON_WARM", "0");
  EXPECT_TRUE(b->compile(resolve(p), Candidate{"triton", "tmpl=masked,bm=32,bn=64,bk=64,stages=2,warps=4,gm=8"}, kDev)
                  .compiled);
}

TEST_F(TritonCompile, BadConfigRefusedBeforeCompiling) {
  auto b = find_backend("triton");
  try {
    b->compile(resolve(make(512, 512, 512)), Candidate{"triton", "tmpl=tma,bm=256,bn=256,bk=64,stages=3,warps=8,gm=8"},
               kDev);
    ADD_FAILURE() << "an invalid config compiled";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "accumulators")) << e.what();
  }
}

}  // namespace
}  // namespace gemmtune
