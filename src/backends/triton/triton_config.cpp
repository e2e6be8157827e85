// triton config: the canonical line, the rules, the ranking and the compile request of a config for a problem.
#include "backends/triton/triton_config.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "backends/config_fields.h"
#include "backends/jit_backend.h"

namespace gemmtune::triton {
namespace {

constexpr int kMaxOps = 8;              // the templates' epilogue slots E0..E7
constexpr int kDefaultSmem = 232448;    // sm90's opt-in shared memory per block, when the device does not say
constexpr int kMaxAccRegs = 128;        // fp32 accumulator registers a thread may hold (the rest: addresses, loads)

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
bool pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

// The templates' op codes (kernels/triton/gemm_epilogue.py).
int op_code(const EpiOp& op) {
  switch (op.kind) {
    case EpiOpKind::bias_col: return 1;
    case EpiOpKind::bias_row: return 2;
    case EpiOpKind::row_scale: return 8;
    case EpiOpKind::col_scale: return 9;
    case EpiOpKind::residual: return 10;
    case EpiOpKind::act:
      switch (op.act) {
        case Activation::relu: return 3;
        case Activation::gelu_tanh: return 4;
        case Activation::gelu_erf: return 5;
        case Activation::silu: return 6;
        case Activation::sigmoid: return 7;
      }
      break;
    case EpiOpKind::glu: break;
  }
  return -1;
}

bool is_16bit(DType t) { return t == DType::bf16 || t == DType::f16; }

// A row of the tile table: block tile, pipeline depth, warps. bk is for 16-bit inputs; fp8 takes twice as many k
// (the same bytes a stage).
struct Tile {
  int bm, bn, bk, stages, warps;
};
// Persistent TMA tiles (Inductor's persistent mm configs for sm90 and the wgmma shapes around them).
constexpr Tile kTmaTiles[] = {
    {128, 256, 64, 3, 8}, {256, 128, 64, 3, 8}, {128, 128, 64, 4, 8}, {128, 128, 64, 3, 4}, {128, 128, 128, 3, 8},
    {128, 64, 64, 4, 4},  {64, 128, 64, 4, 4},  {64, 256, 64, 4, 8},  {64, 64, 64, 5, 4},   {64, 64, 128, 4, 4},
    {64, 32, 128, 4, 4},  {64, 16, 128, 4, 4},
};
// Masked tiles (Inductor's mm configs), down to the small-M shapes of decode.
constexpr Tile kMaskedTiles[] = {
    {128, 128, 64, 3, 8}, {128, 128, 32, 4, 4}, {128, 64, 32, 4, 4}, {64, 128, 32, 4, 4}, {128, 256, 64, 3, 8},
    {64, 64, 64, 3, 4},   {64, 64, 32, 4, 4},   {64, 32, 64, 5, 4},  {32, 64, 128, 4, 4}, {32, 128, 64, 4, 4},
    {16, 64, 128, 4, 4},  {16, 128, 128, 3, 4}, {32, 32, 128, 4, 4}, {16, 32, 128, 5, 4},
};

// Multiply-adds an SM does in the time it streams one byte from memory (H100: ~3.8e12 MAC/s against ~25 GB/s per SM).
constexpr double kMacPerByte = 150;

// The ranking cost: waves of programs times the time of one, the larger of its MMA work (over a throughput that grows
// with the tile's arithmetic intensity, bm·bn / (bm + bn), and saturates near 128 x 128) and its loads (rows and
// columns past the matrix are not read: TMA zero-fills them, masks skip them), in MAC units.
double cost(const Config& c, const Problem& p, const DeviceInfo& dev) {
  const int64_t tiles = cdiv(p.m, c.bm) * cdiv(p.n, c.bn) * p.batch;
  const int smem = std::max(smem_estimate(c, p), 1);
  const int optin = dev.smem_per_block_optin > 0 ? dev.smem_per_block_optin : kDefaultSmem;
  const int regs = std::min(255, c.bm * c.bn / (32 * c.warps) + 64);
  const int occ = std::clamp(std::min(optin / smem, 65536 / (32 * c.warps * regs)), 1, 4);
  const int64_t slots = int64_t(std::max(dev.sm_count, 1)) * occ;
  const double waves = double(cdiv(tiles, slots)) * occ;
  const double intensity = double(c.bm) * c.bn / (c.bm + c.bn);
  double eff = intensity / (intensity + 48.0);
  if (c.tmpl == Template::masked) {
    if (tma_ok(p)) eff /= 1.25;              // the same tile by TMA: no address math, no masks in the main loop
    if (c.bm < 64 && p.m > 32) eff /= 1.5;   // below 64 rows no wgmma: only where M itself is that small
  }
  const double kpad = double(cdiv(p.k, c.bk) * c.bk);
  const double mma = double(c.bm) * c.bn * kpad / eff;
  const double loads = kMacPerByte * kpad *
                       (double(std::min<int64_t>(c.bm, p.m)) * dtype_size(p.a.dtype) +
                        double(std::min<int64_t>(c.bn, p.n)) * dtype_size(p.b.dtype));
  // The two overlap, never perfectly: the smaller one still counts a little (and breaks ties toward less padding).
  return waves * (std::max(mma, loads) + 0.25 * std::min(mma, loads));
}

using config::Form;
const config::Fields<Config>& fields() {
  static const config::Fields<Config> f{
      "triton",
      {config::choice<&Config::tmpl>("tmpl", Form::required, {{"tma", Template::tma}, {"masked", Template::masked}}),
       config::integer<&Config::bm>("bm", Form::required), config::integer<&Config::bn>("bn", Form::required),
       config::integer<&Config::bk>("bk", Form::required), config::integer<&Config::stages>("stages", Form::required),
       config::integer<&Config::warps>("warps", Form::required), config::integer<&Config::gm>("gm", Form::required)}};
  return f;
}

}  // namespace

std::string triton_dtype(DType t) {
  switch (t) {
    case DType::bf16: return "bf16";
    case DType::f16: return "fp16";
    case DType::f32: return "fp32";
    case DType::e4m3: return "fp8e4nv";
    case DType::e5m2: return "fp8e5";
  }
  return "?";
}

std::string Config::str() const { return fields().str(*this); }
Config Config::parse(const std::string& s) { return fields().parse(s); }

bool tma_ok(const Problem& p) { return p.access_bytes(Which::A) == 16 && p.access_bytes(Which::B) == 16; }

int smem_estimate(const Config& c, const Problem& p) {
  const int64_t stage = int64_t(c.bm) * c.bk * dtype_size(p.a.dtype) + int64_t(c.bk) * c.bn * dtype_size(p.b.dtype);
  return static_cast<int>(std::min<int64_t>(stage * std::max(c.stages, 1), int64_t(1) << 30));
}

std::string problem_reason(const Problem& p, const DeviceInfo& dev) {
  if (dev.cc_major != 9 || dev.cc_minor != 0)
    return "triton: the templates are compiled for sm_90a; the device is " + dev.arch();
  if (p.grouped()) return "triton: grouped problems are not supported";
  if (p.epilogue.has_glu()) return "triton: gated linear units (" + p.epilogue.key() + ") are not supported";
  if (p.epilogue.ops.size() > size_t(kMaxOps))
    return "triton: an epilogue chain of more than " + std::to_string(kMaxOps) + " ops is not supported";
  const bool fp8 = is_fp8(p.a.dtype) || is_fp8(p.b.dtype);
  if (fp8) {
    if (!is_fp8(p.a.dtype) || !is_fp8(p.b.dtype))
      return std::string("triton: fp8 needs both A and B in fp8 (A is ") + std::string(dtype_name(p.a.dtype)) +
             ", B " + std::string(dtype_name(p.b.dtype)) + ")";
    if (p.scaling != Scaling::tensor && p.scaling != Scaling::row)
      return "triton: fp8 scaling '" + std::string(scaling_name(p.scaling)) + "' is not supported (tensor, row)";
    // tl.dot of two fp8 blocks without max_num_imprecise_acc takes Triton's sm_90 default (2^30): the tensor core
    // accumulates all of K and nothing is promoted into fp32.
    if (p.fp8_accum != Fp8Accum::fast)
      return "triton: fp8_accum=exact is not served: the templates' fp8 tl.dot accumulates all of K in the tensor "
             "core (Triton's sm_90 default max_num_imprecise_acc), which is fp8_accum=fast";
  } else {
    if (!is_16bit(p.a.dtype) || p.b.dtype != p.a.dtype)
      return "triton: inputs must be bf16 or f16 (both the same) or fp8, not A " + std::string(dtype_name(p.a.dtype)) +
             " and B " + std::string(dtype_name(p.b.dtype));
  }
  if (is_fp8(p.d.dtype)) return "triton: an fp8 D (" + std::string(dtype_name(p.d.dtype)) + ") is not supported";
  if (p.amax) return "triton: amax is not supported";
  if (p.beta != 0.0f && is_fp8(p.c.dtype)) return "triton: an fp8 C is not supported";
  constexpr int64_t kI32 = (int64_t(1) << 31) - 1;
  if (p.batch > 65535) return "triton: batch above 65535 is not supported (grid axis)";
  if (cdiv(p.m, 16) * cdiv(p.n, 16) > kI32) return "triton: too many output tiles for one grid";
  return "";
}

std::string config_reason(const Config& c, const Problem& p, const DeviceInfo& dev) {
  if (std::string r = problem_reason(p, dev); !r.empty()) return r;
  const std::string cs = " (" + c.str() + ")";
  for (auto [name, v] : {std::pair{"bm", c.bm}, {"bn", c.bn}, {"bk", c.bk}})
    if (!pow2(v) || v < 16 || v > 256)
      return std::string("triton: ") + name + "=" + std::to_string(v) + " must be a power of two in 16..256" + cs;
  if (is_fp8(p.a.dtype) && c.bk < 32) return "triton: fp8 needs bk >= 32 (one fp8 MMA's k)" + cs;
  if (c.warps != 4 && c.warps != 8) return "triton: warps must be 4 or 8" + cs;
  if (c.stages < 1 || c.stages > 8) return "triton: stages must be 1..8" + cs;
  if (c.gm < 1 || c.gm > 64) return "triton: gm must be 1..64" + cs;
  if (c.bm * c.bn / (32 * c.warps) > kMaxAccRegs)
    return "triton: a " + std::to_string(c.bm) + "x" + std::to_string(c.bn) + " tile over " + std::to_string(c.warps) +
           " warps holds " + std::to_string(c.bm * c.bn / (32 * c.warps)) + " fp32 accumulators a thread (at most " +
           std::to_string(kMaxAccRegs) + ")" + cs;
  const int optin = dev.smem_per_block_optin > 0 ? dev.smem_per_block_optin : kDefaultSmem;
  if (const int s = smem_estimate(c, p); s > optin)
    return "triton: " + std::to_string(c.stages) + " stages of A and B tiles need " + std::to_string(s) +
           " bytes of shared memory; the device allows " + std::to_string(optin) + cs;
  if (c.tmpl == Template::tma) {
    if (c.bm < 64) return "triton: tmpl=tma needs bm >= 64 (one warpgroup MMA's rows)" + cs;
    if (!tma_ok(p))
      return "triton: tmpl=tma needs 16-byte aligned A and B (base, ld, batch stride); A rows start on " +
             std::to_string(p.access_bytes(Which::A)) + "-byte, B on " + std::to_string(p.access_bytes(Which::B)) +
             "-byte boundaries (tmpl=masked takes any)" + cs;
  }
  return "";
}

std::vector<Config> enumerate_configs(const Problem& p, const DeviceInfo& dev, size_t limit) {
  if (!problem_reason(p, dev).empty()) return {};
  const int kmul = is_fp8(p.a.dtype) ? 2 : 1;
  std::vector<std::pair<double, Config>> ranked;
  auto add = [&](Template t, const Tile& tile) {
    Config c;
    c.tmpl = t;
    c.bm = tile.bm;
    c.bn = tile.bn;
    c.bk = std::min(tile.bk * kmul, 256);
    c.stages = tile.stages;
    c.warps = tile.warps;
    c.gm = 8;
    if (!config_reason(c, p, dev).empty()) return;
    for (const auto& [_, o] : ranked)
      if (o == c) return;
    ranked.emplace_back(cost(c, p, dev), c);
  };
  for (const Tile& t : kTmaTiles) add(Template::tma, t);
  for (const Tile& t : kMaskedTiles) add(Template::masked, t);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<Config> out;
  for (const auto& [_, c] : ranked) out.push_back(c);
  // Keep a few masked candidates in the list even where TMA ranks first: they are the fallback the tuner still has
  // when the TMA ones fail, and the masked template wins some ragged shapes that the cost does not see.
  constexpr size_t kMinMasked = 3;
  if (out.size() > limit) {
    std::vector<Config> head(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(limit));
    size_t masked = std::count_if(head.begin(), head.end(), [](const Config& c) { return c.tmpl == Template::masked; });
    for (size_t i = limit; i < out.size() && masked < kMinMasked; ++i) {
      if (out[i].tmpl != Template::masked) continue;
      // Replace the worst-ranked TMA entry of the head.
      for (size_t j = head.size(); j-- > 0;) {
        if (head[j].tmpl == Template::tma) {
          head.erase(head.begin() + static_cast<std::ptrdiff_t>(j));
          head.push_back(out[i]);
          ++masked;
          break;
        }
      }
    }
    out = std::move(head);
  }
  return out;
}

Request make_request(const Config& c, const Problem& p) {
  Request r;
  const bool tma = c.tmpl == Template::tma;
  r.module = r.kernel = tma ? "matmul_tma_persistent" : "matmul_masked";
  r.num_warps = c.warps;
  const bool has_c = p.beta != 0.0f;
  auto ptr = [](DType t) { return std::string(1, '*').append(triton_dtype(t)); };
  auto vec = [&](std::initializer_list<EpiOpKind> kinds) {
    for (EpiOpKind k : kinds)
      if (p.epilogue.has(k)) return ptr(p.epilogue_dtype(k));
    return std::string("*fp32");
  };
  r.params = {{"a_ptr", ptr(p.a.dtype)},
              {"b_ptr", ptr(p.b.dtype)},
              {"c_ptr", has_c ? ptr(p.c.dtype) : "*fp32"},
              {"d_ptr", ptr(p.d.dtype)},
              {"bias_ptr", vec({EpiOpKind::bias_col, EpiOpKind::bias_row})},
              {"res_ptr", vec({EpiOpKind::residual})},
              {"rs_ptr", vec({EpiOpKind::row_scale})},
              {"cs_ptr", vec({EpiOpKind::col_scale})},
              {"sa_ptr", "*fp32"},
              {"sb_ptr", "*fp32"}};
  for (const char* n : {"M", "N", "K", "batch"}) r.params.emplace_back(n, "i32");
  for (const char* n : {"lda", "ldb", "ldc", "ldd", "sbat_a", "sbat_b", "sbat_c", "sbat_d"}) r.params.emplace_back(n, "i64");
  r.params.emplace_back("alpha", "fp32");
  r.params.emplace_back("beta", "fp32");

  nlohmann::json constexprs = {
      {"A_ROW", p.a.layout == Layout::row ? 1 : 0}, {"B_ROW", p.b.layout == Layout::row ? 1 : 0},
      {"C_ROW", p.c.layout == Layout::row ? 1 : 0}, {"D_ROW", p.d.layout == Layout::row ? 1 : 0},
      {"HAS_C", has_c ? 1 : 0},
      {"SCALING", p.scaling == Scaling::tensor ? 1 : p.scaling == Scaling::row ? 2 : 0},
      {"BM", c.bm}, {"BN", c.bn}, {"BK", c.bk}, {"GM", c.gm}};
  for (int i = 0; i < kMaxOps; ++i)
    constexprs["E" + std::to_string(i)] = i < int(p.epilogue.ops.size()) ? op_code(p.epilogue.ops[size_t(i)]) : 0;
  if (tma) {
    constexprs["STAGES"] = c.stages;
    constexprs["BATCHED"] = p.batch > 1 ? 1 : 0;
  }
  // Divisibility hints: the largest power of two (up to 16) that divides each pointer's alignment in bytes and each
  // pitch, batch stride and size in elements. Triton's own launcher specializes only on 16; passing 8, 4 or 2 as
  // well lets a K or pitch that is even but not a multiple of 16 still load in 4- or 8-byte vectors (cp.async),
  // where no hint would leave 2-byte loads. Each holds for every call: sizes, pitches and strides are the problem's,
  // and launch() checks each pointer against its operand's declared alignment.
  nlohmann::json div = nlohmann::json::object();
  auto pow2 = [](int64_t v) {
    int64_t d = 1;
    while (d < 16 && v % (2 * d) == 0) d *= 2;
    return d;
  };
  auto hint = [&](const std::string& n, int64_t v) {
    if (const int64_t d = pow2(v); d > 1) div[n] = d;
  };
  hint("a_ptr", p.a.align);
  hint("b_ptr", p.b.align);
  if (has_c) hint("c_ptr", p.c.align);
  hint("d_ptr", p.d.align);
  // A batch stride is added to the base pointer before the tile offsets: without its hint no load vectorizes (and
  // none is pipelined) even when the base and pitches are aligned. An unbatched operand's stride is passed as 0.
  for (Which w : kOperands) {
    if (w == Which::C && !has_c) continue;
    const int64_t stride = p.count(w) > 1 ? p.operand(w).batch_stride : 0;
    hint(std::string("sbat_") + which_lower(w), stride == 0 ? 16 : stride);
  }
  // The problem's own sizes: a K that is a multiple of 16 keeps the K mask constant over whole vectors.
  hint("M", p.m);
  hint("N", p.n);
  hint("K", p.k);
  hint("lda", p.a.ld);
  hint("ldb", p.b.ld);
  if (has_c) hint("ldc", p.c.ld);
  hint("ldd", p.d.ld);
  nlohmann::json sig = nlohmann::json::object();
  for (const auto& [n, t] : r.params) sig[n] = t;
  for (const auto& [n, _] : constexprs.items()) sig[n] = "constexpr";
  // The driver wants the signature in the kernel's argument order; an object keeps its keys sorted, so the order
  // travels as a list beside it.
  nlohmann::json order = nlohmann::json::array();
  for (const auto& [n, _] : r.params) order.push_back(n);
  static const char* kConstOrder[] = {"A_ROW", "B_ROW", "C_ROW", "D_ROW", "HAS_C", "SCALING", "E0", "E1", "E2",
                                      "E3",    "E4",    "E5",    "E6",    "E7",    "BM",      "BN", "BK", "GM"};
  for (const char* n : kConstOrder) order.push_back(n);
  if (tma) {
    order.push_back("STAGES");
    order.push_back("BATCHED");
  }
  nlohmann::json req = {{"module", r.module},         {"kernel", r.kernel},     {"signature", sig},
                        {"order", order},             {"constexprs", constexprs}, {"divisibility", div},
                        {"num_warps", c.warps},       {"num_stages", c.stages}, {"arch", 90}};
  // The kernel's symbol, unique to the request: kernels of different configs or problem classes never share a name
  // (in a profile, or a module cache keyed by name).
  r.symbol = jit_kernel_name(std::string("gt_triton_") + (tma ? "tma" : "masked"), req.dump());
  req["symbol"] = r.symbol;
  r.json = req.dump();
  return r;
}

}  // namespace gemmtune::triton
