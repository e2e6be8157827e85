// The class table of the kernel sweep (tests/sweep/sweep_classes.h): valid problems, unique names, and every feature
// the sweep must cover still covered by at least one class, so that an edit of the table cannot silently drop one.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "gemmtune/device.h"
#include "gemmtune/tuner.h"
#include "sweep/sweep_classes.h"
#include "tuner/pipeline.h"
#include "tuner/routing.h"

using namespace gemmtune;
using sweep::SweepClass;

namespace {

const std::vector<SweepClass>& classes() {
  static const std::vector<SweepClass> t = sweep::sweep_classes();
  return t;
}

// Whether some class satisfies `pred`; the test names the requirement when none does.
void expect_covered(const std::string& what, const std::function<bool(const Problem&)>& pred) {
  const bool any =
      std::any_of(classes().begin(), classes().end(), [&](const SweepClass& c) { return pred(c.problem); });
  EXPECT_TRUE(any) << "no sweep class covers: " << what;
}

bool has_op(const Problem& p, EpiOpKind k) { return p.epilogue.has(k); }

bool has_act(const Problem& p, Activation a) {
  for (const EpiOp& op : p.epilogue.ops)
    if (op.kind == EpiOpKind::act && op.act == a) return true;
  return false;
}

bool has_glu(const Problem& p, GluLayout l) {
  const EpiOp* g = p.epilogue.find(EpiOpKind::glu);
  return g && g->glu == l;
}

bool any_dim(const Problem& p, int64_t v) { return p.m == v || p.n == v || p.k == v; }

// Some routing of the grouped problem has a group of exactly `rows` rows.
bool routing_has_group_of(const Problem& p, int32_t rows) {
  for (const auto& r : grouped_routings(p))
    if (std::find(r.begin(), r.end(), rows) != r.end()) return true;
  return false;
}

}  // namespace

TEST(SweepClasses, AboutFortyValidUniquelyNamed) {
  EXPECT_GE(classes().size(), 36u);
  EXPECT_LE(classes().size(), 56u);
  std::set<std::string> names;
  const std::regex name_re("[a-z0-9_]+");
  for (const SweepClass& c : classes()) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(std::regex_match(c.name, name_re)) << "class names are [a-z0-9_]+ (--filter matches them)";
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate class name";
    EXPECT_FALSE(c.why.empty());
    Problem p = c.problem;
    p.resolve();
    EXPECT_EQ(p, c.problem) << "the table holds resolved problems";
    EXPECT_EQ(p.check(), "") << p.str();
    EXPECT_NO_THROW(p.validate());
  }
}

// Sizes stay small: the sweep compiles and verifies every candidate of every class within minutes.
TEST(SweepClasses, ProblemsStaySmall) {
  for (const SweepClass& c : classes()) {
    const Problem& p = c.problem;
    EXPECT_LE(p.flops(), 2.0 * 4097 * 256 * 256) << c.name << ": " << p.str();
    int large = (p.m > 1100) + (p.n > 1100) + (p.k > 1100);
    EXPECT_LE(large, 1) << c.name << ": at most one large dimension at a time";
  }
}

TEST(SweepClasses, CoverPitchClassesOfEveryOperand) {
  for (Which w : kOperands) {
    for (int bytes : {2, 4, 8, 16}) {
      expect_covered(std::string(which_name(w)) + " on a " + std::to_string(bytes) + "-byte pitch", [&](const Problem& p) {
        if (w == Which::C && p.beta == 0.0f) return false;  // C is read only with beta
        return p.access_bytes(w) == bytes;
      });
      if (bytes < 16)
        expect_covered(std::string(which_name(w)) + " with a " + std::to_string(bytes) + "-byte aligned base pointer",
                       [&](const Problem& p) {
                         if (w == Which::C && p.beta == 0.0f) return false;
                         return p.operand(w).align == bytes;
                       });
    }
    // A leading dimension past the packed one leaves gaps that must stay untouched (D) and unread (inputs).
    expect_covered(std::string(which_name(w)) + " padded (ld above the packed value)", [&](const Problem& p) {
      if (w == Which::C && p.beta == 0.0f) return false;
      const Operand& o = p.operand(w);
      const int64_t packed = o.layout == Layout::row ? Problem::cols_of(w, p) : Problem::rows_of(w, p);
      return o.ld > packed;
    });
  }
}

TEST(SweepClasses, CoverLayouts) {
  for (Layout la : {Layout::row, Layout::col})
    for (Layout lb : {Layout::row, Layout::col})
      expect_covered(std::string("A ") + std::string(layout_name(la)) + ", B " + std::string(layout_name(lb)),
                     [&](const Problem& p) { return p.a.layout == la && p.b.layout == lb; });
  expect_covered("col-major D", [](const Problem& p) { return p.d.layout == Layout::col; });
  expect_covered("col-major C read (beta)", [](const Problem& p) { return p.c.layout == Layout::col && p.beta != 0; });
  expect_covered("16-bit f16", [](const Problem& p) { return p.a.dtype == DType::f16; });
  expect_covered("f32 D", [](const Problem& p) { return p.d.dtype == DType::f32; });
}

TEST(SweepClasses, CoverOddSizes) {
  for (int64_t v : {1, 7, 127, 129, 4095, 4097})
    expect_covered("a dimension of " + std::to_string(v), [&](const Problem& p) { return any_dim(p, v); });
  for (int64_t v : {4095, 4097}) {
    expect_covered("M = " + std::to_string(v), [&](const Problem& p) { return p.m == v; });
    expect_covered("N = " + std::to_string(v), [&](const Problem& p) { return p.n == v; });
    expect_covered("K = " + std::to_string(v), [&](const Problem& p) { return p.k == v; });
  }
  expect_covered("M = 1", [](const Problem& p) { return p.m == 1; });
  expect_covered("N = 1", [](const Problem& p) { return p.n == 1; });
  expect_covered("K = 1", [](const Problem& p) { return p.k == 1; });
  expect_covered("K < 64", [](const Problem& p) { return p.k < 64; });
  expect_covered("K < 64, not a multiple of 16", [](const Problem& p) { return p.k < 64 && p.k % 16 != 0; });
}

TEST(SweepClasses, CoverBatches) {
  expect_covered("batch > 1", [](const Problem& p) { return p.batch > 1 && !p.grouped(); });
  for (Which w : {Which::A, Which::B, Which::C})
    expect_covered(std::string("broadcast ") + which_name(w) + " (batch stride 0)", [&](const Problem& p) {
      if (w == Which::C && p.beta == 0.0f) return false;
      return p.batch > 1 && !p.grouped() && p.operand(w).batch_stride == 0;
    });
  expect_covered("a padded D batch stride", [](const Problem& p) {
    return p.batch > 1 && !p.grouped() && p.d.batch_stride > p.m * p.n_out();
  });
}

TEST(SweepClasses, CoverEveryEpilogueFamily) {
  expect_covered("bias (per column)", [](const Problem& p) { return has_op(p, EpiOpKind::bias_col); });
  expect_covered("bias_row", [](const Problem& p) { return has_op(p, EpiOpKind::bias_row); });
  expect_covered("an f32 bias", [](const Problem& p) {
    const EpiOp* b = p.epilogue.find(EpiOpKind::bias_col);
    return b && b->dtype == DType::f32;
  });
  for (Activation a : {Activation::relu, Activation::gelu_tanh, Activation::gelu_erf, Activation::silu,
                       Activation::sigmoid})
    expect_covered("activation " + std::string(activation_name(a)), [&](const Problem& p) { return has_act(p, a); });
  expect_covered("GLU (halves)", [](const Problem& p) { return has_glu(p, GluLayout::halves); });
  expect_covered("GLU (interleaved)", [](const Problem& p) { return has_glu(p, GluLayout::interleaved); });
  for (Activation a : {Activation::silu, Activation::gelu_tanh, Activation::sigmoid})
    expect_covered("GLU gated by " + std::string(activation_name(a)), [&](const Problem& p) {
      const EpiOp* g = p.epilogue.find(EpiOpKind::glu);
      return g && g->act == a;
    });
  expect_covered("residual", [](const Problem& p) { return has_op(p, EpiOpKind::residual); });
  expect_covered("row_scale", [](const Problem& p) { return has_op(p, EpiOpKind::row_scale); });
  expect_covered("col_scale", [](const Problem& p) { return has_op(p, EpiOpKind::col_scale); });
  expect_covered("ops after a GLU", [](const Problem& p) {
    const int g = p.epilogue.glu_index();
    return g >= 0 && size_t(g) + 1 < p.epilogue.ops.size();
  });
  expect_covered("beta with C", [](const Problem& p) { return p.beta != 0.0f; });
  expect_covered("beta not 1", [](const Problem& p) { return p.beta != 0.0f && p.beta != 1.0f; });
  expect_covered("alpha not 1", [](const Problem& p) { return p.alpha != 1.0f; });
}

TEST(SweepClasses, CoverFp8) {
  for (Scaling s : {Scaling::tensor, Scaling::row, Scaling::block})
    expect_covered("fp8 with " + std::string(scaling_name(s)) + " scaling", [&](const Problem& p) {
      return is_fp8(p.a.dtype) && p.scaling == s && !p.grouped();
    });
  expect_covered("e4m3 A", [](const Problem& p) { return p.a.dtype == DType::e4m3; });
  expect_covered("e5m2 A", [](const Problem& p) { return p.a.dtype == DType::e5m2; });
  expect_covered("fp8, K not a multiple of 128", [](const Problem& p) { return is_fp8(p.b.dtype) && p.k % 128 != 0; });
  expect_covered("block scales, K and N not multiples of 128", [](const Problem& p) {
    return p.scaling == Scaling::block && p.k % 128 != 0 && p.n % 128 != 0;
  });
  expect_covered("e4m3 D with amax", [](const Problem& p) { return p.d.dtype == DType::e4m3 && p.amax; });
  expect_covered("weight-only fp8 (16-bit A, fp8 B)", [](const Problem& p) {
    return !is_fp8(p.a.dtype) && is_fp8(p.b.dtype);
  });
  expect_covered("batched fp8", [](const Problem& p) { return is_fp8(p.a.dtype) && p.batch > 1 && !p.grouped(); });
  // Each accumulation mode lists only its own kernels: fast ones are swept only by fast problems.
  for (bool grouped : {false, true})
    expect_covered(std::string("fp8_accum=fast") + (grouped ? ", grouped" : ""), [&](const Problem& p) {
      return p.fp8_product() && p.fp8_accum == Fp8Accum::fast && p.grouped() == grouped;
    });
}

TEST(SweepClasses, CoverGroupedWithEmptyAndOneRowGroups) {
  for (Grouping g : {Grouping::contiguous, Grouping::masked}) {
    const std::string name(grouping_name(g));
    expect_covered(name + " grouped", [&](const Problem& p) { return p.grouping == g; });
    expect_covered(name + " grouped with an empty group in some routing",
                   [&](const Problem& p) { return p.grouping == g && routing_has_group_of(p, 0); });
    expect_covered(name + " grouped with a 1-row group in some routing",
                   [&](const Problem& p) { return p.grouping == g && routing_has_group_of(p, 1); });
    expect_covered(name + " grouped fp8",
                   [&](const Problem& p) { return p.grouping == g && is_fp8(p.a.dtype); });
  }
  expect_covered("grouped with an epilogue", [](const Problem& p) { return p.grouped() && !p.epilogue.empty(); });
}

// No class is refused by every backend: one lists candidates here, needs a GPU to list them (cublaslt), or is an
// optional backend not installed here. A class every backend refuses sweeps nothing.
TEST(SweepClasses, EachTakenBySomeBackend) {
  const DeviceInfo dev = DeviceInfo::assumed_sm90();
  for (const SweepClass& c : classes()) {
    bool taken = false;
    std::string why;
    for (const RankedList& l : enumerate_ranked(resolve(c.problem), dev, {})) {
      taken |= !l.ranked.empty() || l.needs_gpu || l.unavailable;
      why += "\n  " + l.note();
    }
    EXPECT_TRUE(taken) << c.name << " (" << c.problem.str() << "): every backend refuses it:" << why;
  }
}

// The classes the sweep's CUTLASS subset names exist (tests/sweep/sweep_main.cpp keeps the list; a renamed class
// would silently drop out of it). Checked against the source, which is not linked here.
TEST(SweepClasses, CutlassSubsetNamesExist) {
  std::ifstream f(std::string(GEMMTUNE_SOURCE_DIR) + "/tests/sweep/sweep_main.cpp");
  ASSERT_TRUE(f) << "cannot read tests/sweep/sweep_main.cpp";
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string src = ss.str();
  const size_t at = src.find("kCutlassSubset = {");
  ASSERT_NE(at, std::string::npos);
  const std::string list = src.substr(at, src.find("};", at) - at);
  std::set<std::string> names;
  for (const SweepClass& c : classes()) names.insert(c.name);
  const std::regex quoted("\"([a-z0-9_]+)\"");
  int n = 0;
  for (auto it = std::sregex_iterator(list.begin(), list.end(), quoted); it != std::sregex_iterator(); ++it, ++n)
    EXPECT_TRUE(names.count((*it)[1].str())) << "kCutlassSubset names an unknown class: " << (*it)[1].str();
  EXPECT_GT(n, 0);
}
