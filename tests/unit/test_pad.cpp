// pad backend without a GPU: config round trip and errors, the alignment rule, the padded problem's fields, the copy's
// geometry (every chunk of every line written exactly once), enumeration only where an operand needs the copy, and
// NVRTC compilation of the copy kernel at every element and load width.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "backends/backend.h"
#include "backends/pad/pad_backend.h"
#include "backends/pad/pad_config.h"
#include "common/pad_copy_params.cuh"
#include "gemmtune/errors.h"
#include "jit/jit.h"
#include "gemmtune/tuner.h"
#include "tuner/pipeline.h"

namespace gemmtune {
namespace {

const DeviceInfo kDev = DeviceInfo::assumed_sm90();

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::shared_ptr<Backend> pad_backend() {
  auto b = find_backend("pad");
  EXPECT_TRUE(b) << "pad is not registered";
  return b;
}

// bf16 TN (A row-major, B column-major, D row-major) unless given.
Problem make(int64_t m, int64_t n, int64_t k, Layout la = Layout::row, Layout lb = Layout::col,
             DType in = DType::bf16, int64_t batch = 1) {
  return Problem::make(m, n, k, in, DType::bf16, la, lb, batch);
}

TEST(PadConfig, RoundTrip) {
  for (const char* s : {"a;sm90:tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8",
                        "b;cublaslt:default", "a+b;cublaslt:algo=66,tile=128x256,stages=64x4,splitk=1,red=0",
                        "b;gemv:vec=m,warps=8,rows=2,ksplit=4,unroll=4"}) {
    const pad::Config c = pad::Config::parse(s);
    EXPECT_EQ(c.str(), s);
    EXPECT_EQ(pad::Config::parse(c.str()), c);
  }
  const pad::Config c = pad::Config::parse("b+a;cublaslt:default");
  EXPECT_TRUE(c.a && c.b);
  EXPECT_EQ(c.inner, (Candidate{"cublaslt", "default"}));
  EXPECT_EQ(c.str(), "a+b;cublaslt:default");
  // The whole candidate line goes through the CLI's parser: the inner ':' stays in the config.
  const Candidate line = Candidate::parse("pad:b;sm90:tile=128x256x64,stages=4");
  EXPECT_EQ(line.backend, "pad");
  EXPECT_EQ(pad::Config::parse(line.config).inner.backend, "sm90");
}

TEST(PadConfig, BadStringsNameTheBadPart) {
  const std::pair<const char*, const char*> cases[] = {
      {"sm90:tile=128x256x64", "expected '<a|b|a+b>;<backend>:<config>'"},
      {"c;cublaslt:default", "copied operand 'c'"},
      {";cublaslt:default", "copied operand ''"},
      {"a+;cublaslt:default", "copied operand ''"},
      {"a+a;cublaslt:default", "operand 'a' named twice"},
      {"b;", "no inner candidate"},
      {"b;cublaslt", "inner candidate: config 'cublaslt': expected 'backend:config'"},
      {"b;pad:a;cublaslt:default", "cannot be another pad"},
  };
  for (const auto& [s, want] : cases) {
    try {
      pad::Config::parse(s);
      ADD_FAILURE() << s << " parsed";
    } catch (const Error& e) {
      EXPECT_TRUE(has(e.what(), "pad: config '" + std::string(s) + "'")) << e.what();
      EXPECT_TRUE(has(e.what(), want)) << s << ": " << e.what();
    }
  }
  // The backend's parse() also names an unknown inner backend and the inner backend's own parse error.
  auto be = pad_backend();
  try {
    be->parse({"pad", "b;nosuch:x"});
    ADD_FAILURE() << "an unknown inner backend parsed";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "unknown inner backend 'nosuch'")) << e.what();
  }
  try {
    be->parse({"pad", "b;sm90:bogus=1"});
    ADD_FAILURE() << "a bad sm90 config parsed";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "pad: config 'b;sm90:bogus=1': inner candidate: sm90")) << e.what();
  }
  EXPECT_THROW(be->parse({"sm90", "b;cublaslt:default"}), Error);
}

TEST(PadProblem, AlignmentRule) {
  Problem p = make(256, 256, 4096);
  EXPECT_TRUE(pad::aligned(p, Which::A));
  EXPECT_TRUE(pad::aligned(p, Which::B));
  p.a.ld = 4100;  // 8200 bytes
  EXPECT_FALSE(pad::aligned(p, Which::A));
  EXPECT_TRUE(has(pad::misalignment(p, Which::A), "lda=4100 (8200 bytes) is not a multiple of 16 bytes"))
      << pad::misalignment(p, Which::A);
  p.a.ld = 4104;
  EXPECT_TRUE(pad::aligned(p, Which::A));
  p.b.align = 8;
  EXPECT_TRUE(has(pad::misalignment(p, Which::B), "B's pointer is only 8-byte aligned")) << pad::misalignment(p, Which::B);
  // A batch stride counts only with several batches, and a broadcast (0) is aligned.
  Problem q = make(64, 64, 64, Layout::row, Layout::col, DType::bf16, 3);
  q.a.batch_stride = 64 * 64 + 4;
  q.b.batch_stride = 0;
  EXPECT_FALSE(pad::aligned(q, Which::A));
  EXPECT_TRUE(has(pad::misalignment(q, Which::A), "batch stride 4100 (8200 bytes)")) << pad::misalignment(q, Which::A);
  EXPECT_TRUE(pad::aligned(q, Which::B));
  // f32: 4 elements make 16 bytes.
  Problem f = make(64, 64, 68, Layout::row, Layout::col, DType::f32);
  EXPECT_TRUE(pad::aligned(f, Which::A));
  f.a.ld = 70;
  EXPECT_FALSE(pad::aligned(f, Which::A));
}

TEST(PadProblem, PaddedFields) {
  // Row-major A with K=4100: lines of K, the pitch rounded up to 8 bf16 elements.
  Problem p = make(2048, 4096, 4100);
  p.a.align = 4;
  const Problem q = pad::padded_problem(p, true, false);
  EXPECT_EQ(q.a.ld, 4104);
  EXPECT_EQ(q.a.align, 16);
  EXPECT_EQ(q.a.batch_stride, 0);
  EXPECT_EQ(q.a.layout, Layout::row);
  EXPECT_EQ(q.b, p.b);  // not copied: unchanged, ld 4100 included
  EXPECT_EQ(q.d, p.d);
  EXPECT_EQ(q.m, p.m);
  EXPECT_EQ(q.k, p.k);  // the logical K: readers stop there
  EXPECT_EQ(q.check(), "");
  EXPECT_TRUE(pad::aligned(q, Which::A));
  EXPECT_FALSE(pad::aligned(q, Which::B));

  // Column-major B (K x N) with a sliced pitch and an odd batch stride: packed, batch stride = pitch x N.
  Problem b = make(64, 96, 100, Layout::row, Layout::col, DType::bf16, 3);
  b.b.ld = 101;
  b.b.batch_stride = 101 * 96 + 1;
  b.b.align = 2;
  const Problem qb = pad::padded_problem(b, false, true);
  EXPECT_EQ(qb.b.ld, 104);
  EXPECT_EQ(qb.b.batch_stride, 104 * 96);
  EXPECT_EQ(qb.b.align, 16);
  EXPECT_EQ(qb.check(), "");

  // A broadcast operand stays one matrix.
  Problem bc = make(64, 96, 100, Layout::col, Layout::col, DType::bf16, 4);
  bc.a.ld = 65;  // column-major A: lines of M = 64
  bc.a.batch_stride = 0;
  const Problem qbc = pad::padded_problem(bc, true, false);
  EXPECT_EQ(qbc.a.ld, 64);
  EXPECT_EQ(qbc.a.batch_stride, 0);
  EXPECT_EQ(pad::copy_of(bc, Which::A).batch, 1);

  // f32 rounds to 4 elements.
  Problem f = make(64, 64, 70, Layout::row, Layout::row, DType::f32);
  EXPECT_EQ(pad::padded_problem(f, true, false).a.ld, 72);

  // The copy writes exactly the operand the padded problem describes.
  for (const Problem* x : {&p, &b, &bc, &f})
    for (Which w : {Which::A, Which::B}) {
      const Problem q = pad::padded_problem(*x, true, true);
      const Operand& o = w == Which::A ? q.a : q.b;
      const pad::Copy c = pad::copy_of(*x, w);
      EXPECT_EQ(c.dst_ld, o.ld) << which_name(w) << " of " << x->str();
      EXPECT_EQ(c.dst_bs, o.batch_stride) << which_name(w) << " of " << x->str();
      EXPECT_EQ(c.elem_bytes * c.dst_ld % 16, 0);
    }
}

TEST(PadProblem, Copy) {
  Problem p = make(2048, 4096, 4100);
  p.a.align = 8;
  pad::Copy c = pad::copy_of(p, Which::A);
  EXPECT_EQ(c.which, Which::A);
  EXPECT_EQ(c.elem_bytes, 2);
  EXPECT_EQ(c.lines, 2048);
  EXPECT_EQ(c.inner, 4100);
  EXPECT_EQ(c.chunks, 513);
  EXPECT_EQ(c.dst_ld, 4104);
  EXPECT_EQ(c.src_ld, 4100);
  EXPECT_EQ(c.load_bytes, 8);  // 8200-byte pitch, 8-byte pointer
  EXPECT_EQ(c.bytes(), 2048 * 4104 * 2);
  // The load width is what the pointer, the pitch and the batch stride all allow.
  p.a.align = 2;
  EXPECT_EQ(pad::copy_of(p, Which::A).load_bytes, 2);
  p.a.align = 16;
  p.a.ld = 4101;
  EXPECT_EQ(pad::copy_of(p, Which::A).load_bytes, 2);
  p.a.ld = 4102;
  EXPECT_EQ(pad::copy_of(p, Which::A).load_bytes, 4);
  p.a.ld = 4104;
  EXPECT_EQ(pad::copy_of(p, Which::A).load_bytes, 16);
  Problem bt = make(64, 64, 64, Layout::row, Layout::col, DType::bf16, 2);
  bt.a.batch_stride = 64 * 64 + 2;
  EXPECT_EQ(pad::copy_of(bt, Which::A).load_bytes, 4);
  Problem f = make(64, 64, 70, Layout::row, Layout::row, DType::f32);
  f.a.align = 4;
  EXPECT_EQ(pad::copy_of(f, Which::A).load_bytes, 4);
  EXPECT_EQ(pad::copy_of(f, Which::A).chunks, 18);

  // The workspace: each copy at a multiple of 256 bytes.
  Problem ab = make(100, 96, 100);
  ab.b.ld = 101;
  EXPECT_EQ(pad::b_offset(ab, true), (100 * 104 * 2 + 255) / 256 * 256);
  EXPECT_EQ(pad::workspace_bytes(ab, true, true), pad::b_offset(ab, true) + (96 * 104 * 2 + 255) / 256 * 256);
  EXPECT_EQ(pad::workspace_bytes(ab, false, true), (96 * 104 * 2 + 255) / 256 * 256);
}

// The kernel's index arithmetic (kernels/common/pad_copy.cuh pad_copy) run over the whole launch on the host: every
// (batch, line, chunk) is written exactly once and nothing else is.
void expect_covered(const pad::Copy& c) {
  const pad::CopyLaunch l = pad::copy_launch(c);
  SCOPED_TRACE("lines=" + std::to_string(c.lines) + " chunks=" + std::to_string(c.chunks) +
               " batch=" + std::to_string(c.batch) + " lane_bits=" + std::to_string(l.lane_bits));
  ASSERT_LE(l.lane_bits, 8);
  ASSERT_GE(l.grid[0], 1u);
  ASSERT_LE(l.grid[1], 65535u);
  ASSERT_LE(l.grid[2], 65535u);
  const int threads = gt_pad::kPadCopyThreads, lanes = 1 << l.lane_bits;
  std::vector<int> hits(static_cast<size_t>(c.batch * c.lines * c.chunks), 0);
  int64_t busy = 0, launched = 0;
  for (unsigned bx = 0; bx < l.grid[0]; ++bx)
    for (unsigned by = 0; by < l.grid[1]; ++by)
      for (unsigned bz = 0; bz < l.grid[2]; ++bz)
        for (int t = 0; t < threads; ++t) {
          ++launched;
          const int64_t line = int64_t(bx) * (threads >> l.lane_bits) + (t >> l.lane_bits);
          if (line >= c.lines) continue;
          for (int64_t b = bz; b < c.batch; b += l.grid[2])
            for (int64_t ch = int64_t(by) * lanes + (t & (lanes - 1)); ch < c.chunks;
                 ch += int64_t(l.grid[1]) * lanes) {
              ++hits[static_cast<size_t>((b * c.lines + line) * c.chunks + ch)];
              ++busy;
            }
        }
  for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i], 1) << "chunk " << i;
  // Few idle threads: at least half of those launched copy a chunk (short lines share a block), once there are
  // blocks enough to fill.
  if (c.lines * c.chunks >= 4 * threads) EXPECT_GE(2 * busy, launched);
}

TEST(PadProblem, CopyLaunchCoversEveryChunkOnce) {
  for (int64_t inner : {1, 7, 8, 9, 24, 100, 255, 256, 257, 4100, 4095, 8200})
    for (int64_t lines : {1, 3, 64, 129}) {
      pad::Copy c;
      c.elem_bytes = 2;
      c.lines = lines;
      c.inner = inner;
      c.chunks = (inner * 2 + 15) / 16;
      c.batch = lines == 3 ? 5 : 1;
      expect_covered(c);
    }
  // Many lines of 513 chunks (K=4100 bf16) take a warp each (17 rounds of 32 chunks: 544 threads a line); a single
  // one takes a block (3 rounds of 256: 768 threads, not 8 warps' 17 rounds, 4352).
  pad::Copy k;
  k.elem_bytes = 2, k.lines = 2048, k.inner = 4100, k.chunks = 513;
  EXPECT_EQ(pad::copy_launch(k).lane_bits, 5);
  k.lines = 1;
  EXPECT_EQ(pad::copy_launch(k).lane_bits, 8);
}

TEST(PadBackend, NoCandidatesWhereEverythingIsAligned) {
  auto be = pad_backend();
  Problem batched = make(512, 512, 128, Layout::row, Layout::col, DType::bf16, 32);
  Problem bcast = make(512, 512, 128, Layout::row, Layout::col, DType::bf16, 8);
  bcast.b.batch_stride = 0;
  Problem oddd = make(2048, 50257, 768);  // only D's pitch is odd: pad copies A and B only
  for (Problem p : {make(4096, 4096, 4096), make(1, 4096, 4096), make(4096, 4096, 4096, Layout::col, Layout::row),
                    make(64, 64, 64, Layout::row, Layout::row, DType::f32), batched, bcast, oddd}) {
    p.resolve();
    const std::string why = be->supports(resolve(p), kDev);
    EXPECT_TRUE(has(why, "nothing to pad")) << p.str() << ": " << why;
    EXPECT_TRUE(be->enumerate(resolve(p), kDev).empty()) << p.str();
    EXPECT_TRUE(has(pad::path(resolve(p)), "nothing to pad")) << pad::path(resolve(p));
    for (const Candidate& c : list_candidates(p, kDev, {})) EXPECT_NE(c.backend, "pad") << c.str();
  }
  EXPECT_EQ(be->supports(resolve(make(4096, 4096, 4096)), kDev), "pad: every operand is aligned; nothing to pad");
  Problem d = make(2048, 50257, 768);
  d.resolve();
  EXPECT_TRUE(has(be->supports(resolve(d), kDev), "not C or D")) << be->supports(resolve(d), kDev);
}

// An unaligned grouped problem is not padded: the copy knows one matrix per batch and the inner backend would get the
// groups without their group_rows.
TEST(PadBackend, RefusesGroupedProblems) {
  auto be = pad_backend();
  for (Grouping g : {Grouping::contiguous, Grouping::masked}) {
    Problem p = make(2048, 4096, 4100);  // K = 4100: A's and B's pitches need the copy
    p.grouping = g;
    p.groups = 8;
    p.a.batch_stride = p.b.batch_stride = p.c.batch_stride = p.d.batch_stride = -1;
    p.resolve();
    ASSERT_EQ(p.check(), "") << p.str();
    const std::string why = be->supports(resolve(p), kDev);
    EXPECT_EQ(why, "pad: grouped GEMMs are not supported (grouping=" + std::string(grouping_name(g)) + ")");
    EXPECT_TRUE(be->enumerate(resolve(p), kDev).empty()) << p.str();
    EXPECT_EQ(pad::path(resolve(p)), why);
  }
}

TEST(PadBackend, EnumeratesWhereAnOperandNeedsTheCopy) {
  auto be = pad_backend();
  // K = 4100: lda and ldb (K-contiguous A and B) are 8200 bytes.
  Problem p = make(2048, 4096, 4100);
  p.resolve();
  EXPECT_EQ(be->supports(resolve(p), kDev), "");
  const std::vector<Candidate> cands = be->enumerate(resolve(p), kDev);
  ASSERT_FALSE(cands.empty());
  std::map<std::string, int> per;
  for (const Candidate& c : cands) {
    EXPECT_EQ(c.backend, "pad");
    const pad::Config cfg = pad::Config::parse(c.config);
    EXPECT_TRUE(cfg.a && cfg.b) << c.str();
    EXPECT_NE(cfg.inner.backend, "pad");
    ++per[cfg.inner.backend];
    EXPECT_EQ(be->validate(resolve(p), c, kDev), "") << c.str();
  }
  EXPECT_EQ(per["sm90"], 4);  // cuBLASLt's need a GPU to enumerate; gemv does not take M=2048, N=4096
  // The registry's enumeration lists them (what `gemmtune list` prints).
  int listed = 0;
  for (const Candidate& c : list_candidates(p, kDev, {})) listed += c.backend == "pad";
  EXPECT_EQ(listed, int(cands.size()));
  EXPECT_TRUE(
      has(pad::path(resolve(p)), "copies A (lda=4100 (8200 bytes) is not a multiple of 16 bytes) and B (ldb=4100"))
      << pad::path(resolve(p));

  // Only B: N = 4095 with B row-major, D column-major (so that D stays aligned for sm90).
  Problem b = make(2048, 4095, 4096, Layout::row, Layout::row);
  b.d.layout = Layout::col;
  b.d.ld = 0;
  b.resolve();
  const auto bc = be->enumerate(resolve(b), kDev);
  ASSERT_FALSE(bc.empty());
  for (const Candidate& c : bc) EXPECT_TRUE(has(c.config, "b;sm90:")) << c.str();
  EXPECT_TRUE(has(pad::path(resolve(b)), "copies B (ldb=4095 (8190 bytes)")) << pad::path(resolve(b));

  // A pointer below 16 bytes, the pitch aligned.
  Problem al = make(2048, 4096, 4096);
  al.a.align = 2;
  al.resolve();
  const auto ac = be->enumerate(resolve(al), kDev);
  ASSERT_FALSE(ac.empty());
  EXPECT_TRUE(has(ac[0].config, "a;sm90:")) << ac[0].str();

  // gemv on the padded problem: a decode token against weights of an odd K.
  Problem g = make(1, 4096, 4100);
  g.resolve();
  std::map<std::string, int> gper;
  for (const Candidate& c : be->enumerate(resolve(g), kDev)) ++gper[pad::Config::parse(c.config).inner.backend];
  EXPECT_GE(gper["gemv"], 1);
}

TEST(PadBackend, ValidateReasons) {
  auto be = pad_backend();
  Problem p = make(2048, 4096, 4100);
  p.resolve();
  const std::vector<Candidate> cands = be->enumerate(resolve(p), kDev);
  ASSERT_FALSE(cands.empty());
  const std::string inner = pad::Config::parse(cands[0].config).inner.str();
  // Only A copied: the inner kernel meets B's odd pitch on the padded problem.
  std::string why = be->validate(resolve(p), {"pad", "a;" + inner}, kDev);
  EXPECT_TRUE(has(why, "pad: on the padded problem: sm90")) << why;
  EXPECT_TRUE(has(why, "ldb")) << why;
  // Not canonical.
  why = be->validate(resolve(p), {"pad", "b+a;" + inner}, kDev);
  EXPECT_TRUE(has(why, "not canonical (expected 'a+b;")) << why;
  // Copying an aligned operand.
  Problem a = make(2048, 4096, 4096);
  a.b.ld = 4100;
  a.resolve();
  why = be->validate(resolve(a), {"pad", "a+b;" + inner}, kDev);
  EXPECT_EQ(why, "pad: the config copies A, which is aligned already (nothing to pad)");
  // A problem with nothing to pad says so first.
  Problem ok = make(4096, 4096, 4096);
  ok.resolve();
  EXPECT_EQ(be->validate(resolve(ok), {"pad", "a+b;" + inner}, kDev), "pad: every operand is aligned; nothing to pad");
  EXPECT_EQ(be->validate(resolve(ok), {"pad", "x;" + inner}, kDev), "pad: every operand is aligned; nothing to pad");
  // A parse error is the reason.
  EXPECT_TRUE(has(be->validate(resolve(p), {"pad", "x;" + inner}, kDev), "copied operand 'x'"));
}

// The copy kernel at every element and load width (2-byte elements: loads of 2, 4, 8, 16 bytes; 4-byte: 4, 8, 16):
// each compiles without spills, one unit per width pair whatever the shape.
TEST(PadCompile, CopyKernelAtEveryWidth) {
  std::map<std::string, std::string> names;  // kernel name -> widths
  for (int es : {2, 4})
    for (int lb : {2, 4, 8, 16}) {
      if (lb < es) continue;
      pad::Copy c;
      c.elem_bytes = es, c.load_bytes = lb, c.lines = 7 * lb, c.inner = 100 + es;
      const JitUnit u = pad::copy_unit(c, kDev);
      EXPECT_EQ(u.arch, "sm_90a");
      const auto cubin = jit::compile(u.source, u.name, {u.arch, u.flags}, "pad copy test");
      EXPECT_EQ(cubin->spill_bytes, 0) << u.source;
      EXPECT_GT(cubin->registers, 0);
      EXPECT_LE(cubin->registers, 40) << u.source;  // a copy: few registers, full occupancy
      const std::string widths = std::to_string(es) + "/" + std::to_string(lb);
      EXPECT_TRUE(names.emplace(u.name, widths).second) << widths << " shares a name with " << names[u.name];
      c.lines = 3, c.inner = 5;
      EXPECT_EQ(pad::copy_unit(c, kDev).name, u.name);
    }
  EXPECT_EQ(names.size(), 7u);
}

// A pad candidate compiles through the backend: the inner kernel's report, the copies' cubins in the artifact.
TEST(PadCompile, CandidateWithSm90Inner) {
  auto be = pad_backend();
  Problem p = make(256, 256, 4096);
  p.a.ld = 4100, p.b.align = 8;
  p.resolve();
  const auto cands = be->enumerate(resolve(p), kDev);
  ASSERT_FALSE(cands.empty()) << p.str();
  EXPECT_TRUE(has(cands[0].config, "a+b;sm90:")) << cands[0].str();
  const CompileResult r = be->compile(resolve(p), cands[0], kDev);
  EXPECT_TRUE(r.compiled);
  EXPECT_TRUE(r.artifact);
  EXPECT_EQ(r.spill_bytes, 0) << cands[0].str();
  EXPECT_GT(r.registers, 0);
  EXPECT_GT(r.smem_bytes, 100 * 1024);  // the sm90 kernel's shared memory, not the copy's
}

TEST(PadCompile, BadCandidateIsAClearError) {
  auto be = pad_backend();
  Problem p = make(2048, 4096, 4100);
  p.resolve();
  try {
    be->compile(resolve(p), {"pad", "a;sm90:tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8"}, kDev);
    ADD_FAILURE() << "compiled";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "pad: on the padded problem")) << e.what();
  }
}

}  // namespace
}  // namespace gemmtune
