#pragma once
// Problem options shared by the subcommands (cutlass_profiler style: --m --n --k --A bf16:row ...), their parsing
// into a gemmtune::Problem, and the one-line usage errors that come out of it.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "backends/backend.h"
#include "core/input.h"
#include "gemmtune/gemm.h"

namespace gemmtune::cli {

// A bad argument: printed as "error: <what>", exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

inline std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    size_t q = s.find(sep, pos);
    out.push_back(trim(s.substr(pos, q == std::string::npos ? std::string::npos : q - pos)));
    if (q == std::string::npos) break;
    pos = q + 1;
  }
  return out;
}

// The lines of `s` (without their '\n').
inline std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    const size_t q = s.find('\n', pos);
    out.push_back(s.substr(pos, q == std::string::npos ? std::string::npos : q - pos));
    if (q == std::string::npos) return out;
    pos = q + 1;
  }
}

// A user's value quoted in a message: at most ~60 characters (a 10,000-op --epilogue is not echoed whole).
inline std::string brief(const std::string& s) { return s.size() > 60 ? s.substr(0, 57) + "..." : s; }

// First line of a possibly multi-line message (NVRTC logs), for tables and one-line errors.
inline std::string first_line(const std::string& s) {
  size_t q = s.find('\n');
  return q == std::string::npos ? s : s.substr(0, q);
}

// A library error as one line for a user: its first line without the " [file.cpp:123]" the library appends for
// developers (gemmtune's source position means nothing to someone who typed a bad --config).
inline std::string user_message(const std::string& what) {
  std::string s = first_line(what);
  const size_t open = s.rfind(" [");
  if (open != std::string::npos && s.back() == ']') {
    const std::string loc = s.substr(open + 2, s.size() - open - 3);
    const size_t colon = loc.rfind(':');
    const bool digits = colon != std::string::npos && colon + 1 < loc.size() &&
                        std::all_of(loc.begin() + colon + 1, loc.end(), [](unsigned char c) { return std::isdigit(c); });
    if (digits && loc.find('.') < colon && loc.find(' ') == std::string::npos) s.resize(open);
  }
  return s;
}

// "column"/"col"/"c"/"colmajor"/"column-major" and "row"/"r"/"rowmajor"/"row-major", like cutlass_profiler.
inline std::optional<Layout> parse_layout_arg(const std::string& text) {
  std::string s = lower(trim(text));
  if (s == "row" || s == "r" || s == "rowmajor" || s == "row-major" || s == "row_major") return Layout::row;
  if (s == "column" || s == "col" || s == "c" || s == "colmajor" || s == "column-major" || s == "col-major" ||
      s == "column_major" || s == "col_major")
    return Layout::col;
  return std::nullopt;
}

// An integer option's text, checked before CLI11 converts it: CLI11 parses with strtoll and keeps the clamped
// value of an out-of-range number (9223372036854775808 became INT64_MAX), and narrows to int without a word.
template <class T>
CLI::Validator integer_in_range() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::string t = trim(text);
        const char* b = t.data() + (t.size() > 1 && t[0] == '+' ? 1 : 0);
        T v{};
        auto [p, ec] = std::from_chars(b, t.data() + t.size(), v);
        if (ec == std::errc::result_out_of_range)
          return fmt::format("{} is out of range (at most {})", t, std::numeric_limits<T>::max());
        if (t.empty() || ec != std::errc() || p != t.data() + t.size()) return fmt::format("{} is not an integer", t);
        return "";
      },
      "INT");
}

struct OperandSpec {
  DType dtype;
  Layout layout;
};

// "dtype[:layout]" -> OperandSpec. `opt` names the option in the message (e.g. "--A").
inline OperandSpec parse_operand(const std::string& opt, const std::string& text, Layout default_layout) {
  auto parts = split(text, ':');
  if (parts.size() > 2 || parts[0].empty())
    throw UsageError(fmt::format("{} '{}': expected dtype[:layout], e.g. bf16:row or f16:column", opt, brief(text)));
  auto dt = parse_dtype(lower(parts[0]));
  if (!dt)
    throw UsageError(fmt::format("{} '{}': unknown dtype '{}' (expected bf16, f16, f32, e4m3 or e5m2)", opt, text,
                                 parts[0]));
  Layout l = default_layout;
  if (parts.size() == 2) {
    auto pl = parse_layout_arg(parts[1]);
    if (!pl)
      throw UsageError(
          fmt::format("{} '{}': unknown layout '{}' (expected row/r or column/col/c)", opt, text, parts[1]));
    l = *pl;
  }
  return {*dt, l};
}

// Everything that describes a problem on the command line or in a suite entry.
struct ProblemArgs {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  // Grouped GEMMs (gemmtune/problem.h): --groups G with --m (the total rows: contiguous) or with --masked-m M_max
  // (masked).
  int64_t groups = 1, masked_m = 0;
  CLI::Option* shape_opt[4] = {};  // --m, --groups, --masked-m, --batch on the command line
  std::string A = "bf16:row", B = "bf16:col", C, D = "bf16:row";  // C defaults to D
  int64_t lda = 0, ldb = 0, ldc = 0, ldd = 0;
  int64_t align[4] = {16, 16, 16, 16};  // A, B, C, D: bytes the base pointers are a multiple of (Operand::align)
  // Batch strides: -1 (the default) = packed; an explicit 0 broadcasts A, B or C to every batch (Problem's convention).
  int64_t bsa = -1, bsb = -1, bsc = -1, bsd = -1;
  CLI::Option* bs_opt[4] = {};  // the command-line options, to tell an explicit value from the default
  // Read as double and converted in build(): a nonzero value that fp32 cannot hold is an error, not 0 or inf.
  double alpha = 1.0, beta = 0.0;
  std::string epilogue;
  std::string scaling = "none";
  std::string fp8_accum = "exact";
  bool amax = false;

  void add_to(CLI::App* app) {
    auto integer = [&](const char* name, int64_t& v, const char* help) {
      return app->add_option(name, v, help)->check(integer_in_range<int64_t>())->group("Problem");
    };
    // --m is required unless --masked-m gives the rows: build() says so, naming both.
    shape_opt[0] = integer("--m", m, "REQUIRED (but for --masked-m): rows of A and D; with --groups, of all groups");
    integer("--n", n, "columns of B and D")->required();
    integer("--k", k, "reduction dimension")->required();
    shape_opt[3] = integer("--batch", batch, "batch count (default 1)");
    shape_opt[1] = integer("--groups", groups,
                           "a grouped GEMM of G groups, each with its own B (mixture-of-experts): with --m, "
                           "consecutive row ranges of A and D (contiguous); with --masked-m, G matrices (masked)");
    shape_opt[2] =
        integer("--masked-m", masked_m, "with --groups, instead of --m: M_max, the rows of each group's A and D");
    app->add_option("--A", A, "A (M x K) as dtype:layout, e.g. bf16:row (default)")->group("Problem");
    app->add_option("--B", B, "B (K x N) as dtype:layout, e.g. bf16:col (default; = W N x K row-major)")
        ->group("Problem");
    app->add_option("--C", C, "C (M x N) as dtype:layout (default: as D)")->group("Problem");
    app->add_option("--D", D, "D (M x N) as dtype:layout (default bf16:row)")->group("Problem");
    integer("--lda", lda, "leading dimension of A in elements (default packed)");
    integer("--ldb", ldb, "leading dimension of B");
    integer("--ldc", ldc, "leading dimension of C");
    integer("--ldd", ldd, "leading dimension of D");
    bs_opt[0] = integer("--batch-stride-a", bsa,
                        "elements between batches of A (default packed; 0 = one A for every batch)");
    bs_opt[1] = integer("--batch-stride-b", bsb,
                        "elements between batches (or groups) of B (default packed; 0 = one B for every batch)");
    bs_opt[2] = integer("--batch-stride-c", bsc,
                        "elements between batches of C (default packed; 0 = one C for every batch)");
    bs_opt[3] = integer("--batch-stride-d", bsd, "elements between batches of D (default packed)");
    for (int i = 0; i < 4; ++i)
      integer(i == 0 ? "--align-a" : i == 1 ? "--align-b" : i == 2 ? "--align-c" : "--align-d", align[i],
              i == 0 ? "bytes A's base pointer is a multiple of: 16 (default), 8, 4 or 2 (a sliced view)"
                     : "likewise for B, C, D");
    app->add_option("--alpha", alpha, "D = alpha*A*B + beta*C (default 1)")->group("Problem");
    app->add_option("--beta", beta, "(default 0: C is not read)")->group("Problem");
    app->add_option("--epilogue", epilogue, "fused epilogue chain, e.g. bias,gelu_tanh | silu_glu | bias,residual (see gemmtune/epilogue.h)")->group("Problem");
    app->add_option("--scaling", scaling,
                    "fp8 inputs: tensor (one scale each for A and B) | row (per row of A, per column of B) | block "
                    "(A per row and 128 K, B per 128x128; see gemmtune/problem.h)")
        ->group("Problem");
    app->add_option("--fp8-accum", fp8_accum,
                    "fp8 A and B: exact (default; fp32 promotion at least every 128 K, torch's use_fast_accum=False) | "
                    "fast (K accumulated in the tensor core, use_fast_accum=True)")
        ->group("Problem");
    app->add_flag("--amax", amax, "e4m3 D: also write max |v| over D (before scale_d) for delayed scaling")
        ->group("Problem");
  }

  // Builds, resolves and checks the problem. Throws UsageError with one line naming what is wrong.
  Problem build(const std::string& where = "") const {
    auto ctx = [&](const std::string& msg) { return where.empty() ? msg : where + ": " + msg; };
    auto given = [&](int i) { return shape_opt[i] && shape_opt[i]->count() > 0; };
    const bool has_m = given(0), has_groups = given(1), has_masked = given(2), has_batch = given(3);
    if (has_m && has_masked)
      throw UsageError(ctx("--m and --masked-m together: a masked grouped GEMM gives its rows per group with "
                           "--masked-m (M_max), a contiguous one its total rows with --m"));
    if (has_masked && !has_groups)
      throw UsageError(ctx("--masked-m needs --groups G (the number of matrices of M_max rows)"));
    if (!has_m && !has_masked) throw UsageError(ctx("--m is required (or --masked-m with --groups)"));
    const int64_t rows = has_masked ? masked_m : m;
    for (auto [name, v] : {std::pair{has_masked ? "--masked-m" : "--m", rows}, {"--n", n}, {"--k", k},
                           {"--batch", batch}, {"--groups", groups}})
      if (v <= 0) throw UsageError(ctx(fmt::format("{} must be a positive integer (got {})", name, v)));
    if (has_groups && has_batch && batch != 1)
      throw UsageError(ctx(fmt::format("--groups with --batch {}: a grouped GEMM takes no batch (--groups G with --m "
                                       "is one A of all rows; with --masked-m, G matrices)",
                                       batch)));
    for (auto [name, v] : {std::pair{"--lda", lda}, {"--ldb", ldb}, {"--ldc", ldc}, {"--ldd", ldd}})
      if (v < 0) throw UsageError(ctx(fmt::format("{} must be >= 0 (got {}; 0 = packed)", name, v)));
    const int64_t bs[4] = {bsa, bsb, bsc, bsd};
    for (int i = 0; i < 4; ++i)  // only a value given on the command line can be negative: the default is -1
      if (bs[i] < 0 && bs_opt[i] && bs_opt[i]->count() > 0)
        throw UsageError(ctx(fmt::format("--batch-stride-{} must be >= 0 (got {}; 0 = one matrix for every batch)",
                                         "abcd"[i], bs[i])));

    auto operand = [&](const std::string& opt, const std::string& text, Layout layout) {
      try {
        return parse_operand(opt, text, layout);
      } catch (const UsageError& e) {
        throw UsageError(ctx(e.what()));
      }
    };
    OperandSpec a = operand("--A", A, Layout::row);
    OperandSpec b = operand("--B", B, Layout::col);
    OperandSpec d = operand("--D", D, Layout::row);
    OperandSpec c = C.empty() ? d : operand("--C", C, d.layout);

    Problem p = Problem::make(rows, n, k, a.dtype, d.dtype, a.layout, b.layout, batch);
    if (has_groups) {
      p.grouping = has_masked ? Grouping::masked : Grouping::contiguous;
      p.groups = groups;
    }
    p.a.dtype = a.dtype;
    p.b.dtype = b.dtype;
    p.c.dtype = c.dtype;
    p.c.layout = c.layout;
    p.d.dtype = d.dtype;
    p.d.layout = d.layout;
    p.a.ld = lda, p.b.ld = ldb, p.c.ld = ldc, p.d.ld = ldd;
    for (int i = 0; i < 4; ++i) {
      if (align[i] != 2 && align[i] != 4 && align[i] != 8 && align[i] != 16)
        throw UsageError(ctx(fmt::format("--align-{} must be 2, 4, 8 or 16 (got {})", "abcd"[i], align[i])));
    }
    p.a.align = int(align[0]), p.b.align = int(align[1]), p.c.align = int(align[2]), p.d.align = int(align[3]);
    p.a.batch_stride = bsa, p.b.batch_stride = bsb, p.c.batch_stride = bsc, p.d.batch_stride = bsd;
    for (auto [name, v, dst] : {std::tuple{"--alpha", alpha, &p.alpha}, {"--beta", beta, &p.beta}})
      if (const std::string why = detail::to_fp32(v, *dst); !why.empty())
        throw UsageError(ctx(fmt::format("{} {}", name, why)));
    const std::optional<Scaling> sc = parse_scaling(trim(scaling));
    if (!sc)
      throw UsageError(ctx(fmt::format("--scaling '{}': expected none, tensor, row or block", scaling)));
    p.scaling = *sc;
    const std::optional<Fp8Accum> fa = parse_fp8_accum(trim(fp8_accum));
    if (!fa) throw UsageError(ctx(fmt::format("--fp8-accum '{}': expected exact or fast", fp8_accum)));
    p.fp8_accum = *fa;
    p.amax = amax;
    std::string ep = lower(trim(epilogue));
    if (!ep.empty() && ep != "none") {
      try {
        p.epilogue = parse_epilogue(epilogue);
      } catch (const Error& e) {
        // The library's message starts with "epilogue '<spec>': "; the option name says that already.
        std::string why = user_message(e.what());
        if (const std::string pre = "epilogue '" + epilogue + "': "; why.starts_with(pre)) why = why.substr(pre.size());
        if (why.starts_with("epilogue: ")) why = why.substr(10);
        throw UsageError(ctx(fmt::format("--epilogue '{}': {}", brief(epilogue), why)));
      }
    }

    // A leading dimension smaller than the contiguous extent makes rows (or columns) overlap: say which and why.
    struct Ld {
      const char* opt;
      Which which;
      int64_t ld;
      Layout layout;
      const char* rows;
      const char* cols;
      int64_t r, c;
    };
    for (const Ld& x :
         {Ld{"--lda", Which::A, lda, a.layout, "M", "K", rows, k}, Ld{"--ldb", Which::B, ldb, b.layout, "K", "N", k, n},
          Ld{"--ldc", Which::C, ldc, c.layout, "M", "N", rows, n},
          Ld{"--ldd", Which::D, ldd, d.layout, "M", p.epilogue.has_glu() ? "N/2" : "N", rows, p.n_out()}}) {
      if (x.ld == 0) continue;
      bool row = x.layout == Layout::row;
      int64_t need = row ? x.c : x.r;
      if (x.ld < need)
        throw UsageError(ctx(fmt::format("{} {} is smaller than {}={} ({} is {} x {} {}-major, so {} >= {})", x.opt,
                                         x.ld, row ? x.cols : x.rows, need, which_name(x.which), x.rows, x.cols,
                                         row ? "row" : "column", x.opt + 2, row ? x.cols : x.rows)));
    }

    p.resolve();
    std::string why = p.check();
    if (!why.empty()) throw UsageError(ctx(user_message(why)));
    return p;
  }
};

// "sm90,cublaslt" -> validated names. Unknown names are a usage error listing the known ones.
inline std::vector<std::string> parse_backends(const std::string& list) {
  std::vector<std::string> out;
  if (trim(list).empty()) return out;
  for (const std::string& name : split(list, ',')) {
    if (name.empty()) throw UsageError(fmt::format("--backends '{}': empty backend name", list));
    if (!find_backend(name)) {
      std::vector<std::string> known;
      for (const auto& b : all_backends()) known.push_back(b->name());
      throw UsageError(fmt::format("--backends: unknown backend '{}' (known: {})", name,
                                   known.empty() ? std::string("none") : fmt::format("{}", fmt::join(known, ", "))));
    }
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

// "backend:config" -> Candidate with a known backend. A malformed line is a usage error.
inline Candidate parse_config_arg(const std::string& line) {
  std::string s = trim(line);
  size_t colon = s.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size())
    throw UsageError(fmt::format("--config '{}': expected backend:config as printed by gemmtune list/tune, e.g. "
                                 "cublaslt:default",
                                 line));
  Candidate c;
  try {
    c = Candidate::parse(s);
  } catch (const Error& e) {
    throw UsageError(fmt::format("--config '{}': {}", line, user_message(e.what())));
  }
  parse_backends(c.backend);  // unknown backend -> usage error
  return c;
}

}  // namespace gemmtune::cli
