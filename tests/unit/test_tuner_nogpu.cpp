// The tuner's behaviour on a machine without a GPU (CI): clear errors, never a crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <optional>
#include <set>
#include <vector>
#include <string>

#include "gemmtune/gemm.h"
#include "tuner/evaluate.h"
#include "tuner/pipeline.h"
#include "tuner/serialize.h"
#include "tuner/select.h"
#include "tuner/worker_client.h"

using namespace gemmtune;

namespace gemmtune {
// gtest prints a Status by its name.
inline void PrintTo(Status s, std::ostream* os) { *os << to_string(s); }
}  // namespace gemmtune

TEST(TunerNoGpu, TuneSaysThereIsNoGpu) {
  if (gpu_available()) GTEST_SKIP() << "a GPU is present";
  Tuner t;
  try {
    t.tune(Problem::make(256, 256, 256, DType::bf16, DType::bf16));
    FAIL() << "expected NoGpuError";
  } catch (const NoGpuError& e) {
    EXPECT_FALSE(std::string(e.what()).empty());
  }
}

TEST(TunerNoGpu, InvalidProblemIsRejectedBeforeTheGpu) {
  Tuner t;
  try {
    t.tune(Problem::make(0, 256, 256, DType::bf16, DType::bf16));
    FAIL() << "expected Error";
  } catch (const NoGpuError&) {
    FAIL() << "problem validation must come first";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("M, N, K must be >= 1"), std::string::npos) << e.what();
  }
}

TEST(TunerNoGpu, UnknownBackendIsNamed) {
  TuneOptions o;
  o.backends = {"nosuch"};
  try {
    list_candidates(Problem::make(64, 64, 64, DType::bf16, DType::bf16), DeviceInfo::assumed_sm90(), o.backends);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown backend 'nosuch'"), std::string::npos) << e.what();
  }
}

TEST(TunerNoGpu, ListsSm90CandidatesWithoutGpu) {
  const auto cs = list_candidates(Problem::make(4096, 4096, 4096, DType::bf16, DType::bf16), DeviceInfo::assumed_sm90(),
                                  {"sm90"});
  EXPECT_FALSE(cs.empty());
  for (const auto& c : cs) EXPECT_EQ(c.backend, "sm90");
}

// The lists hold only candidates of the problem's fp8 accumulation mode: sm90 acc=promote for exact and acc=fast for
// fast; gemv (fp32 accumulation) for exact only. (cuBLASLt lists with a GPU only: tests/gpu/test_cublaslt.cpp checks
// its fast_accum per mode.)
TEST(TunerNoGpu, ListsOnlyTheProblemsFp8AccumulationMode) {
  for (Fp8Accum mode : {Fp8Accum::exact, Fp8Accum::fast}) {
    Problem p = Problem::make(16, 4096, 4096, DType::e4m3, DType::bf16);
    p.scaling = Scaling::row;
    p.fp8_accum = mode;
    const std::string want = mode == Fp8Accum::fast ? "acc=fast" : "acc=promote";
    int sm90 = 0, gemv = 0;
    for (const Candidate& c : list_candidates(p, DeviceInfo::assumed_sm90(), {"sm90", "gemv"})) {
      sm90 += c.backend == "sm90", gemv += c.backend == "gemv";
      if (c.backend == "sm90") EXPECT_NE(c.config.find(want), std::string::npos) << c.str() << " for " << p.str();
    }
    EXPECT_GT(sm90, 0) << p.str();
    EXPECT_EQ(gemv > 0, mode == Fp8Accum::exact) << p.str();
  }
}

TEST(TunerNoGpu, WorkerIsFoundAndRejectsEmptyInput) {
  setenv("GEMMTUNE_WORKER", GEMMTUNE_WORKER_PATH, 1);
  auto w = find_worker();
  ASSERT_TRUE(w);
  EXPECT_EQ(*w, GEMMTUNE_WORKER_PATH);
  const std::string cmd = std::string(GEMMTUNE_WORKER_PATH) + " </dev/null 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_TRUE(f);
  char buf[512] = {};
  const size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  const int st = pclose(f);
  EXPECT_NE(st, 0);
  EXPECT_NE(std::string(buf, n).find("expected JSON request lines"), std::string::npos) << buf;
  setenv("GEMMTUNE_WORKER", "/nonexistent/gemmtune-worker", 1);
  EXPECT_FALSE(find_worker());
  unsetenv("GEMMTUNE_WORKER");
}

namespace {
CandidateResult timed(const char* cfg, double us, Status status = Status::ok) {
  CandidateResult r;
  r.candidate = Candidate::parse(cfg);
  r.status = status;
  r.us_median = us;
  return r;
}
}  // namespace

// The runoff and the pick, on the numbers of gate_up_m2048 measured on an H200: an optimistic one-at-a-time outlier (cuBLASLt's default, 628 us) at the top must not push a 691 us contender out of
// the runoff, and a candidate outside the runoff must not win on its one-at-a-time number.
TEST(TunerSelect, RunoffBandFromTheFourthFastestAndPickAmongTheRaced) {
  std::vector<CandidateResult> rs = {
      timed("sm90:tile=128x192x64,stages=4,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc,tail=sk", 664.35),
      timed("sm90:tile=128x160x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=10", 704.32),
      timed("cublaslt:default", 628.35),
      timed("cublaslt:algo=66,tile=128x256,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=4,cluster=2x1x1,inner=0",
            691.10),
      timed("cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0",
            672.00),
      timed("cublaslt:algo=66,tile=168x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0",
            673.60),
      timed("cublaslt:algo=66,tile=128x192,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=4,cluster=2x1x1,inner=0",
            826.24),
      timed("sm90:tile=128x192x64,stages=4,cluster=1x2,sched=pingpong,raster=m,group=8,tiles=gpc,tail=sk", 0,
            Status::wrong_result),
  };
  std::vector<size_t> m = runoff_members(rs, false);
  std::sort(m.begin(), m.end());
  // The 4 fastest (2, 0, 4, 5) and, within 8% of the 4th (673.6 -> 727.5), 691.1 and 704.3; never the failed one.
  EXPECT_EQ(m, (std::vector<size_t>{0, 1, 2, 3, 4, 5}));
  // Side-by-side numbers replace the raced ones; a candidate left out keeps its first number but cannot win on it.
  std::vector<CandidateResult> after = rs;
  after[0].us_median = 699.68, after[2].us_median = 726.16, after[4].us_median = 692.93, after[5].us_median = 695.20;
  EXPECT_EQ(pick_winner(after, {0, 2, 4, 5}), 4);
  EXPECT_EQ(pick_winner(after, {}), 3);  // no runoff: the fastest of all, 691.1 on its first number
  // An explicit list races everything that ran; fewer than two: no runoff.
  EXPECT_EQ(runoff_members(rs, true).size(), 7u);
  EXPECT_TRUE(runoff_members({rs[0], rs[7]}, false).empty());
  EXPECT_EQ(pick_winner({rs[7]}, {}), -1);
}

// The timing's buffer sets (H200: L2 60 MiB): at least 2x L2 of other sets between two reads of one set, so never a
// single set when memory holds two (a 224 MiB set on its own ran 6% fast on the H200: the previous launch's lines).
TEST(TunerTiming, BufferSetsKeepTwiceL2BetweenReadsOfOneSet) {
  const size_t MiB = size_t(1) << 20, l2 = 60 * MiB;
  EXPECT_EQ(timing_set_count(224 * MiB, l2, 100), 2u);  // 1x28672x4096 bf16: two sets, not one
  EXPECT_EQ(timing_set_count(112 * MiB, l2, 100), 3u);  // 1x4096x14336: 112 MiB between reads is < 120
  EXPECT_EQ(timing_set_count(120 * MiB, l2, 100), 2u);  // exactly 2x L2
  EXPECT_EQ(timing_set_count(32 * MiB, l2, 100), 5u);   // 4 others = 128 MiB (three, 96 MiB, are too few)
  EXPECT_EQ(timing_set_count(4096, l2, 1000), 64u);     // tiny problems: capped
  EXPECT_EQ(timing_set_count(224 * MiB, l2, 1), 1u);    // memory for one set only
  EXPECT_EQ(timing_set_count(0, l2, 0), 1u);
  for (size_t set = MiB; set < 2048 * MiB; set += 7 * MiB) {
    const size_t n = timing_set_count(set, l2, 1 << 20);
    EXPECT_GE(n, 2u) << set;
    if (n < 64) EXPECT_GE((n - 1) * set, 2 * l2) << set;
    if (n > 2) EXPECT_LT((n - 2) * set, 2 * l2) << set;  // no more than needed
  }
}

// Every status prints as one word and parses back; the JSON of the result cache and the worker carries that word.
TEST(CandidateStatus, RoundTripsThroughItsName) {
  std::set<std::string> names;
  for (int i = 0; i <= int(Status::skipped); ++i) {
    const Status s = static_cast<Status>(i);
    const std::string name = to_string(s);
    EXPECT_TRUE(names.insert(name).second) << name << " twice";
    EXPECT_EQ(status_from_string(name), s) << name;
    CandidateResult r;
    r.candidate = Candidate{"sm90", "tile=128x128x64"};
    r.status = s;
    const nlohmann::json j = to_json(r);
    EXPECT_EQ(j.at("status"), name);
    EXPECT_EQ(result_from_json(j).status, s) << name;
  }
  EXPECT_EQ(std::string(to_string(Status::ok)), "ok");
  EXPECT_EQ(std::string(to_string(Status::compile_error)), "compile_error");
  EXPECT_EQ(std::string(to_string(Status::spills)), "spills");
  EXPECT_FALSE(status_from_string("OK"));
  EXPECT_FALSE(status_from_string(""));
  nlohmann::json bad = to_json(CandidateResult{});
  bad["status"] = "exploded";
  EXPECT_THROW(result_from_json(bad), Error);
}

namespace {

// The parsed config of FakeBackend: the config string, and the number of the parse() that made it.
struct FakeConfig {
  std::string config;
  int parse_no = 0;
};

// An executable that only remembers which parsed config it was loaded from.
class FakeExecutable final : public Executable {
 public:
  FakeExecutable(Candidate c, int parse_no) : parse_no(parse_no), cand_(std::move(c)) {}
  void launch(const GemmArgs&, Stream) override {}
  const Candidate& candidate() const override { return cand_; }
  const int parse_no;  // FakeConfig::parse_no of the config it was loaded from

 private:
  Candidate cand_;
};

// A backend that exists only here: configs "c0".."c<n-1>"; the ones in `spill` compile with spilled registers,
// "broken" does not compile, "bad" is not valid, "garbled" does not parse. It counts its parse() calls, and every
// stage reads the parsed config, never the string.
class FakeBackend final : public Backend {
 public:
  FakeBackend(std::string name, std::set<std::string> spill) : name_(std::move(name)), spill_(std::move(spill)) {}
  std::string name() const override { return name_; }
  std::string supports(const ResolvedProblem&, const DeviceInfo&) const override { return ""; }
  std::vector<Candidate> enumerate(const ResolvedProblem&, const BackendAnalysis&, const DeviceInfo&) const override {
    std::vector<Candidate> out;
    for (int i = 0; i < 10; ++i) out.push_back({name_, "c" + std::to_string(i)});
    return out;
  }
  std::shared_ptr<const BackendConfig> parse(const Candidate& c) const override {
    const int no = ++parses;
    if (c.config == "garbled") throw Error(name_ + ": cannot parse '" + c.config + "'");
    return std::make_shared<const BackendConfigOf<FakeConfig>>(FakeConfig{c.config, no});
  }
  using Backend::compile, Backend::enumerate, Backend::load, Backend::path, Backend::validate;
  std::string validate(const ResolvedProblem&, const BackendAnalysis&, const Candidate&, const BackendConfig& cfg,
                       const DeviceInfo&) const override {
    return config(cfg) == "bad" ? name_ + ": bad config" : "";
  }
  CompileResult compile(const ResolvedProblem&, const BackendAnalysis&, const Candidate&, const BackendConfig& cfg,
                        const DeviceInfo&) const override {
    if (config(cfg) == "broken") throw Error(name_ + ": ptxas failed");
    CompileResult r;
    r.compiled = true, r.compile_ms = 1, r.registers = 168;
    r.spill_bytes = spill_.count(config(cfg)) ? 96 : 0;
    return r;
  }
  std::unique_ptr<Executable> load(const ResolvedProblem&, const BackendAnalysis&, const Candidate& c,
                                   const BackendConfig& cfg, const CompileResult&) const override {
    return std::make_unique<FakeExecutable>(c, config_of<FakeConfig>(cfg, name_).parse_no);
  }

  mutable std::atomic<int> parses{0};

 private:
  const std::string& config(const BackendConfig& cfg) const { return config_of<FakeConfig>(cfg, name_).config; }
  std::string name_;
  std::set<std::string> spill_;
};

std::vector<std::string> configs_of(const std::vector<PreparedCandidate>& v, std::optional<Status> only = {}) {
  std::vector<std::string> out;
  for (const auto& pc : v)
    if (!only || pc.status() == *only) out.push_back(pc.candidate().str());
  return out;
}

}  // namespace

// A compile whose ptxas report shows spills is a failed candidate of its own kind, with the byte count.
TEST(Pipeline, CompileOneRejectsSpills) {
  const Problem p = Problem::make(256, 256, 256, DType::bf16, DType::bf16);
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  auto fake = std::make_shared<FakeBackend>("fake", std::set<std::string>{"c1"});
  auto run = [&](const std::string& config) {
    PreparedCandidate pc;
    pc.result.candidate = {"fake", config};
    pc.backend = fake;
    compile_one(resolve(p), dev, pc);
    return pc;
  };
  PreparedCandidate clean = run("c0");
  EXPECT_EQ(clean.status(), Status::pending);  // compiled clean, ready to be verified
  ASSERT_TRUE(clean.compiled);
  EXPECT_EQ(clean.result.spill_bytes, 0);
  EXPECT_EQ(clean.result.registers, 168);
  PreparedCandidate spilled = run("c1");
  EXPECT_EQ(spilled.status(), Status::spills);
  EXPECT_EQ(spilled.result.spill_bytes, 96);
  EXPECT_NE(spilled.result.reason.find("96 bytes"), std::string::npos) << spilled.result.reason;
  EXPECT_EQ(run("broken").status(), Status::compile_error);
  EXPECT_EQ(run("bad").status(), Status::unsupported);
  const PreparedCandidate garbled = run("garbled");
  EXPECT_EQ(garbled.status(), Status::unsupported);
  EXPECT_EQ(garbled.result.reason, "fake: cannot parse 'garbled'");
  EXPECT_FALSE(garbled.compiled);
  EXPECT_EQ(make_prepared({"nosuch", "x"}).status(), Status::unsupported);
}

// Top-k after spills: each backend compiles in rank order until top_k compiled clean (or its list ends), so a tune
// times as many candidates as asked for; the spilled ones stay in the report, in rank order.
TEST(Pipeline, SpilledCandidateGivesItsSlotToTheNextInRank) {
  const Problem p = Problem::make(256, 256, 256, DType::bf16, DType::bf16);
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  auto a = std::make_shared<FakeBackend>("fa", std::set<std::string>{"c1", "c3"});
  auto b = std::make_shared<FakeBackend>(
      "fb", std::set<std::string>{"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"});
  std::vector<RankedList> lists(2);
  lists[0].backend = a, lists[0].ranked = a->enumerate(resolve(p), dev);
  lists[1].backend = b, lists[1].ranked = b->enumerate(resolve(p), dev);
  int calls = 0;
  const CompileFn compile = [&](PreparedCandidate& pc) {
    ++calls;
    compile_one(resolve(p), dev, pc);
  };
  for (int threads : {1, 3}) {
    calls = 0;
    std::vector<PreparedCandidate> got = prepare_ranked(lists, 3, threads, compile);
    EXPECT_EQ(configs_of(got),
              (std::vector<std::string>{"fa:c0", "fa:c1", "fa:c2", "fa:c3", "fa:c4", "fb:c0", "fb:c1", "fb:c2",
                                        "fb:c3", "fb:c4", "fb:c5", "fb:c6", "fb:c7", "fb:c8", "fb:c9"}));
    EXPECT_EQ(configs_of(got, Status::pending), (std::vector<std::string>{"fa:c0", "fa:c2", "fa:c4", "fb:c9"}));
    EXPECT_EQ(configs_of(got, Status::spills).size(), 11u);
    EXPECT_EQ(calls, 15) << "nothing compiled twice, nothing past the fill";
  }
  // No spills: exactly the top k, the same candidates top_candidates() lists.
  auto clean = std::make_shared<FakeBackend>("fc", std::set<std::string>{});
  std::vector<RankedList> one(1);
  one[0].backend = clean, one[0].ranked = clean->enumerate(resolve(p), dev);
  std::vector<std::string> listed;
  for (const Candidate& c : top_candidates(one, 4)) listed.push_back(c.str());
  EXPECT_EQ(configs_of(prepare_ranked(one, 4, 2, compile)), listed);
  EXPECT_EQ(prepare_ranked(one, 0, 2, compile).size(), 10u);  // top_k 0: all
}

// The pipeline parses each candidate's config once: prepare_ranked (validate + compile), a copy of a prepared
// candidate (the runoff's), and load_prepared all use the parsed config compile_one made.
TEST(Pipeline, EachConfigIsParsedOnce) {
  const Problem p = Problem::make(256, 256, 256, DType::bf16, DType::bf16);
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  auto a = std::make_shared<FakeBackend>("fa", std::set<std::string>{"c1"});
  auto b = std::make_shared<FakeBackend>("fb", std::set<std::string>{});
  std::vector<RankedList> lists(2);
  lists[0].backend = a, lists[0].ranked = a->enumerate(resolve(p), dev);
  lists[1].backend = b, lists[1].ranked = b->enumerate(resolve(p), dev);
  const CompileFn compile = [&](PreparedCandidate& pc) { compile_one(resolve(p), dev, pc); };
  std::vector<PreparedCandidate> got = prepare_ranked(lists, 3, 2, compile);
  ASSERT_EQ(got.size(), 7u);  // fa: c0, c1 (spills), c2, c3; fb: c0..c2
  EXPECT_EQ(a->parses + b->parses, 7);
  std::set<int> seen;
  for (PreparedCandidate& pc : got) {
    ASSERT_TRUE(pc.config) << pc.candidate().str();
    compile_one(resolve(p), dev, pc);  // a second pass over a prepared candidate parses nothing
    if (pc.status() != Status::pending) continue;
    PreparedCandidate copy = pc;  // as the runoff takes it: shares the parsed config and the artifact
    for (const PreparedCandidate* x : {&pc, &copy}) {
      auto exe = load_prepared(resolve(p), *x);
      ASSERT_TRUE(exe);
      const int no = static_cast<const FakeExecutable&>(*exe).parse_no;
      EXPECT_EQ(no, config_of<FakeConfig>(*pc.config, pc.candidate().backend).parse_no);
      if (x == &pc) EXPECT_TRUE(seen.insert(no + 100 * (pc.backend == b)).second);
    }
  }
  EXPECT_EQ(seen.size(), 6u);
  EXPECT_EQ(a->parses + b->parses, 7) << "validate, compile and load must not parse again";

  // A candidate named by the caller (Tuner::load's path): make_prepared + compile_one + load_prepared, one parse.
  PreparedCandidate one;
  one.result.candidate = {"fb", "c5"};
  one.backend = b;
  compile_one(resolve(p), dev, one);
  ASSERT_EQ(one.status(), Status::pending);
  EXPECT_TRUE(load_prepared(resolve(p), one));
  EXPECT_EQ(b->parses, 4);

  // The string forms (single calls outside a pipeline) parse on each call, and say the same.
  EXPECT_EQ(b->validate(resolve(p), Candidate{"fb", "bad"}, dev), "fb: bad config");
  EXPECT_EQ(b->validate(resolve(p), Candidate{"fb", "garbled"}, dev), "fb: cannot parse 'garbled'");
  EXPECT_EQ(b->parses, 6);
}

// For the real backends, the pipeline's parse-once path says what the string form of validate() says about a config
// it rejects: a malformed one (cuBLASLt names a problem it cannot run first), a mismatched epilogue mode, a
// non-canonical spelling.
TEST(Pipeline, ParsedPathRejectsAsValidateDoes) {
  Problem plain = Problem::make(256, 256, 256, DType::bf16, DType::bf16);
  plain.resolve();
  Problem col_c = plain;  // cuBLASLt reads C only in D's layout
  col_c.beta = 1.0f, col_c.c.layout = Layout::col, col_c.c.ld = 0;
  col_c.resolve();
  Problem fused = plain;
  fused.epilogue = parse_epilogue("bias,gelu_tanh");
  fused.resolve();
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  const struct {
    const Problem* p;
    Candidate c;
  } cases[] = {
      {&plain, {"sm90", "garbage"}},          {&plain, {"sm90", "tile=128x256x64"}},
      {&plain, {"gemv", "nonsense=1"}},       {&plain, {"cublaslt", "garbage"}},
      {&col_c, {"cublaslt", "garbage"}},      {&col_c, {"cublaslt", "default,epi=bogus"}},
      {&fused, {"cublaslt", "garbage"}},      {&fused, {"cublaslt", "default"}},
      {&plain, {"cublaslt", "default,epi=bogus"}},
  };
  for (const auto& t : cases) {
    const std::string why = find_backend(t.c.backend)->validate(resolve(*t.p), t.c, dev);
    ASSERT_FALSE(why.empty()) << t.c.str();
    PreparedCandidate pc = make_prepared(t.c);
    compile_one(resolve(*t.p), dev, pc);
    EXPECT_EQ(pc.status(), Status::unsupported) << t.c.str();
    EXPECT_EQ(pc.result.reason, why) << t.c.str() << " on " << t.p->str();
  }
}

// Without a GPU the enumeration leaves out the backend that needs one (cuBLASLt) with a note, and lists the others.
TEST(Pipeline, OfflineEnumerationSkipsBackendsThatNeedTheGpu) {
  if (gpu_available()) GTEST_SKIP() << "a GPU is present";
  Problem p = Problem::make(4096, 4096, 4096, DType::bf16, DType::bf16);
  p.resolve();
  const auto lists = enumerate_ranked(resolve(p), DeviceInfo::assumed_sm90(), {});
  bool sm90 = false;
  for (const RankedList& l : lists) {
    if (l.backend->name() == "cublaslt") {
      EXPECT_TRUE(l.needs_gpu);
      EXPECT_TRUE(l.ranked.empty());
      EXPECT_NE(l.note().find("needs a GPU"), std::string::npos) << l.note();
    }
    if (l.backend->name() == "sm90") sm90 = !l.ranked.empty();
  }
  EXPECT_TRUE(sm90);
  const auto top = list_candidates(p, DeviceInfo::assumed_sm90(), {}, 2);
  EXPECT_EQ(top, top_candidates(lists, 2));
}
