#include "tuner/reference.h"

#include <cuda.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "core/check.h"
#include "cuda/driver.h"
#include "cuda/memory.h"
#include "gemmtune/errors.h"
#include "jit/jit.h"
#include "core/dtype_code.h"

namespace gemmtune {

// Two kinds of units, compiled on first use and cached like any kernel: "util" (fills, compares, the epilogue, the
// spin kernel) and one unit per GEMM dtype combination "gemm_<abc>". One unit with all 27 GEMM instantiations took
// ~7 s to compile, paid by the first tune on a machine; a single instantiation takes well under a second.
std::string reference_unit_source(const std::string& unit) {
  std::string s = "#include \"reference/gemm_ref.cuh\"\nusing namespace gemmtune_ref;\n";
  if (unit.rfind("gemm_", 0) == 0) {
    // gemm_<abc> (fp32 accumulation) or gemm_<abc>s (scaled: fp64).
    const std::string t = unit.substr(5);
    const bool scaled = t.size() == 4 && t[3] == 's';
    s += "extern \"C\" __global__ void __launch_bounds__(256) gt_ref_gemm_" + t +
         "(const void* a, const void* b, const void* c, float* d, RefParams p) { " +
         (scaled ? "gemm_ref_scaled<" : "gemm_ref<") + t.substr(0, 1) + "," + t.substr(1, 1) + "," + t.substr(2, 1) +
         ">(a, b, c, d, p); }\n";
    return s;
  }
  s += "extern \"C\" __global__ void gt_ref_fill_uniform(float* p, long long n, unsigned long long seed, float lo, "
       "float hi) { fill_uniform(p, n, seed, lo, hi); }\n";
  for (int t = 0; t < 5; ++t) {
    const std::string ts = std::to_string(t);
    s += "extern \"C\" __global__ void gt_ref_fill_" + ts +
         "(void* p, long long n, unsigned long long seed, float scale) { fill_normal<" + ts + ">(p, n, seed, scale); }\n";
    s += "extern \"C\" __global__ void gt_ref_compare_" + ts +
         "(const void* o, const float* r, long long m, long long n, long long batch, long long ldd, long long bsd, int "
         "row, double* sums, unsigned long long* counts, const float* scale_d, int grouping, long long groups, const int* "
         "group_rows) { compare<" +
         ts + ">(o, r, m, n, batch, ldd, bsd, row, sums, counts, scale_d, grouping, groups, group_rows); }\n";
  }
  for (int t = 0; t < 5; ++t) {
    const std::string ts = std::to_string(t);
    s += "extern \"C\" __global__ void gt_ref_poison_outside_" + ts +
         "(void* p, long long lo, long long hi, Geo g) { poison_outside<" + ts + ">(p, lo, hi, g); }\n";
    s += "extern \"C\" __global__ void gt_ref_count_outside_" + ts +
         "(const void* p, long long lo, long long hi, Geo g, unsigned long long* n) { count_outside<" + ts +
         ">(p, lo, hi, g, n); }\n";
  }
  s += "extern \"C\" __global__ void gt_ref_epilogue(const float* in, float* out, RefEpi e) { epilogue_ref(in, out, e); "
       "}\n";
  return s;
}

namespace {

// The kernel `name` (gt_ref_gemm_<abc> lives in unit gemm_<abc>, everything else in util) in the current context.
CUfunction get(const std::string& name) {
  const std::string gemm_prefix = "gt_ref_gemm_";
  const std::string unit = name.rfind(gemm_prefix, 0) == 0 ? "gemm_" + name.substr(gemm_prefix.size()) : "util";
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  static std::map<std::string, std::shared_ptr<const jit::Cubin>> cubins;
  auto& cubin = cubins[unit];
  // The unit's first kernel names the cubin; jit::load gives it in this context, its module holds the others.
  if (!cubin) cubin = jit::compile(reference_unit_source(unit), unit == "util" ? "gt_ref_fill_0" : name, {}, "reference kernels");
  CUmodule mod = nullptr;
  GT_CU(cuFuncGetModule(&mod, jit::load(*cubin)));
  static std::map<std::pair<CUmodule, std::string>, CUfunction> fns;
  auto it = fns.find({mod, name});
  if (it != fns.end()) return it->second;
  CUfunction f;
  GT_CU(cuModuleGetFunction(&f, mod, name.c_str()));
  fns[{mod, name}] = f;
  return f;
}

void launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned block, void** params, Stream s) {
  GT_CU(cuLaunchKernel(f, gx, gy, gz, block, 1, 1, 0, reinterpret_cast<CUstream>(s), params, nullptr));
}

}  // namespace

void gpu_spin(uint64_t ns, Stream s) {
  unsigned long long v = ns;
  void* params[] = {&v};
  launch(get("gt_ref_spin"), 1, 1, 1, 32, params, s);
}

int64_t operand_span(const Problem& p, Which which) {
  const Operand& o = p.operand(which);
  const int64_t rows = Problem::rows_of(which, p), cols = Problem::cols_of(which, p);
  const int64_t outer = o.layout == Layout::row ? rows : cols, inner = o.layout == Layout::row ? cols : rows;
  return o.batch_stride * (p.count(which) - 1) + o.ld * (outer - 1) + inner;  // count: B's G matrices, grouped
}

OperandGeometry operand_geometry(const Problem& p, Which which) {
  const Operand& o = p.operand(which);
  const int64_t rows = Problem::rows_of(which, p), cols = Problem::cols_of(which, p);
  OperandGeometry g;
  g.outer = o.layout == Layout::row ? rows : cols;
  g.inner = o.layout == Layout::row ? cols : rows;
  g.ld = o.ld, g.bs = o.batch_stride, g.count = p.count(which);
  g.span = operand_span(p, which);
  g.disjoint = g.ld >= g.inner && (g.count <= 1 || g.bs == 0 || g.bs >= g.ld * (g.outer - 1) + g.inner);
  return g;
}

namespace {

// gemm_ref.cuh's Geo.
struct Geo {
  long long outer, inner, ld, bs, count;
};

Geo geo_of(const OperandGeometry& g) { return {g.outer, g.inner, g.ld, g.bs, g.count}; }

unsigned grid_of(int64_t n, int64_t cap) { return unsigned(std::clamp<int64_t>((n + 255) / 256, 1, cap)); }

}  // namespace

void poison_outside(void* data, DType dtype, int64_t lo, int64_t hi, const OperandGeometry& g, Stream s) {
  GT_REQUIRE(g.disjoint, "poison_outside: the operand's matrices overlap");
  CUfunction f = get("gt_ref_poison_outside_" + std::to_string(kernel_dtype_code(dtype)));
  long long l = lo, h = hi;
  Geo geo = geo_of(g);
  void* params[] = {&data, &l, &h, &geo};
  launch(f, grid_of(hi - lo, 132 * 16), 1, 1, 256, params, s);
}

uint64_t count_outside(const void* data, DType dtype, int64_t lo, int64_t hi, const OperandGeometry& g, Stream s) {
  GT_REQUIRE(g.disjoint, "count_outside: the operand's matrices overlap");
  CUfunction f = get("gt_ref_count_outside_" + std::to_string(kernel_dtype_code(dtype)));
  cuda::DeviceBuffer n(sizeof(unsigned long long));
  GT_CU(cuMemsetD8Async(n.ptr(), 0, n.bytes(), reinterpret_cast<CUstream>(s)));
  long long l = lo, h = hi;
  Geo geo = geo_of(g);
  void* np = n.get();
  void* params[] = {&data, &l, &h, &geo, &np};
  launch(f, grid_of(hi - lo, 132 * 8), 1, 1, 256, params, s);
  GT_CU(cuStreamSynchronize(reinterpret_cast<CUstream>(s)));
  unsigned long long host = 0;
  n.download(&host, sizeof(host));
  return host;
}

void fill_normal(void* ptr, DType dtype, int64_t count, uint64_t seed, float scale, Stream s) {
  CUfunction f = get("gt_ref_fill_" + std::to_string(kernel_dtype_code(dtype)));
  long long n = count;
  unsigned long long sd = seed;
  void* params[] = {&ptr, &n, &sd, &scale};
  launch(f, unsigned(std::min<int64_t>((count + 255) / 256, 132 * 16)), 1, 1, 256, params, s);
}

void fill_uniform(float* ptr, int64_t count, uint64_t seed, float lo, float hi, Stream s) {
  CUfunction f = get("gt_ref_fill_uniform");
  long long n = count;
  unsigned long long sd = seed;
  void* params[] = {&ptr, &n, &sd, &lo, &hi};
  launch(f, unsigned(std::min<int64_t>((count + 255) / 256, 132 * 16)), 1, 1, 256, params, s);
}

// The patterns are gemm_ref.cuh's Poison<>: the compare of a grouped problem checks them bit for bit.
void fill_nan(void* ptr, DType dtype, int64_t count, Stream s) {
  const auto stream = reinterpret_cast<CUstream>(s);
  const auto p = reinterpret_cast<CUdeviceptr>(ptr);
  switch (dtype) {
    case DType::bf16: GT_CU(cuMemsetD16Async(p, 0x7FC0, size_t(count), stream)); break;
    case DType::f16: GT_CU(cuMemsetD16Async(p, 0x7E00, size_t(count), stream)); break;
    case DType::f32: GT_CU(cuMemsetD32Async(p, 0x7FC00000u, size_t(count), stream)); break;
    case DType::e4m3:
    case DType::e5m2: GT_CU(cuMemsetD8Async(p, 0x7F, size_t(count), stream)); break;  // NaN in both formats
  }
}

namespace {

// Host mirror of gemmtune_ref::RefEpi.
struct RefEpi {
  int nops = 0, glu_at = -1, glu_block = 0, glu_act = 0;
  int kind[16] = {}, act[16] = {}, dt[16] = {};
  const void* bias = nullptr;
  const void* residual = nullptr;
  const void* row_scale = nullptr;
  const void* col_scale = nullptr;
  long long res_ld = 0, res_bs = 0;
  int res_row = 1;
  long long m = 0, n = 0, n_out = 0, batch = 1;
};

void reference_epilogue(const Problem& p, const GemmArgs& args, const float* in, float* out, Stream s) {
  const auto& ops = p.epilogue.ops;
  GT_REQUIRE(ops.size() <= 16, "reference epilogue: at most 16 ops");
  RefEpi e;
  e.nops = int(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const EpiOp& op = ops[i];
    e.kind[i] = int(op.kind);
    e.act[i] = int(op.act);
    e.dt[i] = kernel_dtype_code(op.dtype ? *op.dtype : p.epilogue_default_dtype());
    if (op.kind == EpiOpKind::glu) {
      e.glu_at = int(i);
      e.glu_act = int(op.act);
      e.glu_block = op.glu == GluLayout::interleaved ? int(op.glu_block) : 0;
    }
    auto need = [&](const void* ptr, const char* what) {
      GT_REQUIRE(ptr, std::string("reference epilogue: GemmArgs::") + what + " is null for '" + p.epilogue.key() + "'");
      return ptr;
    };
    switch (op.kind) {
      case EpiOpKind::bias_col:
      case EpiOpKind::bias_row: e.bias = need(args.bias, "bias"); break;
      case EpiOpKind::row_scale: e.row_scale = need(args.row_scale, "row_scale"); break;
      case EpiOpKind::col_scale: e.col_scale = need(args.col_scale, "col_scale"); break;
      case EpiOpKind::residual: e.residual = need(args.residual, "residual"); break;
      default: break;
    }
  }
  e.res_ld = p.d.ld, e.res_bs = p.d.batch_stride, e.res_row = p.d.layout == Layout::row;
  e.m = p.m, e.n = p.n, e.n_out = p.n_out(), e.batch = p.batch;
  void* params[] = {&in, &out, &e};
  const int64_t total = p.m * p.n_out() * p.batch;
  launch(get("gt_ref_epilogue"), unsigned(std::min<int64_t>((total + 255) / 256, 132 * 16)), 1, 1, 256, params, s);
}

// Scale values between consecutive matrices of operand `which` (the groups of a grouped problem): row and block
// scales are per matrix, a tensor scale is shared.
long long per_matrix_scales(const Problem& p, Which which) {
  if (p.scaling != Scaling::row && p.scaling != Scaling::block) return 0;
  return p.scale_len(which) / std::max<int64_t>(p.count(which), 1);
}

}  // namespace

void reference_gemm(const Problem& p, const GemmArgs& args, float* ref, Stream s) {
  GT_REQUIRE(!p.grouped() || args.group_rows, "reference GEMM: a grouped problem needs GemmArgs::group_rows");
  // With an epilogue the GEMM goes to a temporary M x N buffer first (a GLU reads two of its columns per output).
  std::optional<cuda::DeviceBuffer> tmp;
  float* gemm_out = ref;
  if (!p.epilogue.empty()) {
    tmp.emplace(size_t(p.m * p.n * p.batch) * sizeof(float));
    gemm_out = static_cast<float*>(tmp->get());
  }
  // A grouped reference leaves the rows of no group unwritten: zeros there keep the epilogue's input defined (the
  // compare skips those rows).
  if (p.grouped()) {
    const auto stream = reinterpret_cast<CUstream>(s);
    GT_CU(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(gemm_out), 0, size_t(p.m * p.n * p.batch), stream));
    if (gemm_out != ref)
      GT_CU(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(ref), 0, size_t(p.m * p.n_out() * p.batch), stream));
  }
  const int tc = p.beta != 0.0f ? kernel_dtype_code(p.c.dtype) : gt::kF32;
  const bool scaled = p.scaling != Scaling::none;
  if (scaled) GT_REQUIRE(args.scale_b && (args.scale_a || !is_fp8(p.a.dtype)), "reference GEMM: scale_a/scale_b null");
  CUfunction f = get("gt_ref_gemm_" + std::to_string(kernel_dtype_code(p.a.dtype)) + std::to_string(kernel_dtype_code(p.b.dtype)) +
                     std::to_string(tc) + (scaled ? "s" : ""));
  struct {
    long long m, n, k, batch, lda, ldb, ldc, bsa, bsb, bsc;
    int a_row, b_row, c_row;
    float alpha, beta;
    int scaling;
    const float* sa;
    const float* sb;
    int grouping;
    long long groups;
    const int32_t* group_rows;
    long long sa_bs, sb_bs;
  } rp{p.m, p.n, p.k, p.batch, p.a.ld, p.b.ld, p.c.ld, p.a.batch_stride, p.b.batch_stride, p.c.batch_stride,
       p.a.layout == Layout::row, p.b.layout == Layout::row, p.c.layout == Layout::row, p.alpha, p.beta,
       int(p.scaling), args.scale_a, args.scale_b, int(p.grouping), p.groups, args.group_rows,
       per_matrix_scales(p, Which::A), per_matrix_scales(p, Which::B)};
  const void* a = args.a;
  const void* b = args.b;
  const void* c = p.beta != 0.0f ? args.c : nullptr;
  void* params[] = {&a, &b, &c, &gemm_out, &rp};
  GT_REQUIRE(p.batch <= 65535, "reference GEMM: batch > 65535 not supported");
  launch(f, unsigned((p.n + 63) / 64), unsigned((p.m + 63) / 64), unsigned(p.batch), 256, params, s);
  if (tmp) {
    reference_epilogue(p, args, gemm_out, ref, s);
    // The temporary is freed (cuMemFree synchronizes) only after the epilogue kernel is done with it.
    GT_CU(cuStreamSynchronize(reinterpret_cast<CUstream>(s)));
  }
}

ErrorStats compare_to_reference(const Problem& p, const void* d, const float* ref, Stream s, const float* scale_d,
                                const int32_t* group_rows) {
  CUfunction f = get("gt_ref_compare_" + std::to_string(kernel_dtype_code(p.d.dtype)));
  GT_REQUIRE(scale_d || !is_fp8(p.d.dtype), "compare_to_reference: an fp8 D needs its scale_d");
  GT_REQUIRE(group_rows || !p.grouped(), "compare_to_reference: a grouped problem needs its group_rows");
  cuda::DeviceBuffer acc(2 * sizeof(double) + 3 * sizeof(unsigned long long));
  GT_CU(cuMemsetD8Async(acc.ptr(), 0, acc.bytes(), reinterpret_cast<CUstream>(s)));
  double* sums = static_cast<double*>(acc.get());
  auto* counts = reinterpret_cast<unsigned long long*>(static_cast<char*>(acc.get()) + 2 * sizeof(double));
  long long m = p.m, n = p.n_out(), batch = p.batch, ldd = p.d.ld, bsd = p.d.batch_stride;
  int row = p.d.layout == Layout::row;
  int grouping = int(p.grouping);
  long long groups = p.groups;
  void* params[] = {&d,    &ref,    &m,       &n,        &batch,    &ldd,    &bsd,
                    &row,  &sums,   &counts,  &scale_d,  &grouping, &groups, &group_rows};
  const int64_t total = p.m * p.n_out() * p.batch;
  launch(f, unsigned(std::min<int64_t>((total + 255) / 256, 132 * 8)), 1, 1, 256, params, s);
  GT_CU(cuStreamSynchronize(reinterpret_cast<CUstream>(s)));
  double host[2];
  unsigned long long counts_h[3] = {};
  acc.download(host, sizeof(host));
  acc.download(counts_h, sizeof(counts_h), 2 * sizeof(double));
  ErrorStats e;
  e.nonfinite = counts_h[0];
  e.outside_writes = counts_h[2];
  const uint32_t amax_bits = static_cast<uint32_t>(counts_h[1]);
  std::memcpy(&e.ref_amax, &amax_bits, sizeof(float));
  e.normalized = host[1] > 0 ? std::sqrt(host[0] / host[1]) : std::sqrt(host[0]);
  return e;
}

}  // namespace gemmtune
