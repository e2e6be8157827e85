#include "backends/cublaslt/cublaslt_algos.h"

#include "backends/cublaslt/cublaslt_library.h"

namespace gemmtune::cublaslt {
namespace {

constexpr uint64_t kMaxWorkspace = 32ull << 20;  // what the heuristic may ask for
constexpr int kHeuristicCount = 32;

cublasLtMatrixLayout_t layout(const LtMatrix& m, int32_t batch) {
  cublasLtMatrixLayout_t l = nullptr;
  GT_LT(lt().cublasLtMatrixLayoutCreate(&l, m.type, m.rows, m.cols, m.ld));
  if (batch > 1) {
    GT_LT(lt().cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)));
    int64_t stride = m.stride;
    GT_LT(lt().cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  }
  return l;
}

template <class T>
T get_cfg(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr, const char* what) {
  T v{};
  size_t written = 0;
  cublasStatus_t s = lt().cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof(v), &written);
  if (s != CUBLAS_STATUS_SUCCESS) lt_fail(s, what, __FILE__, __LINE__);
  return v;
}

AlgoConfig config_of(const cublasLtMatmulAlgo_t& algo) {
  AlgoConfig c;
  c.algo = get_cfg<int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID, "get ALGO_CONFIG_ID");
  c.tile = get_cfg<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, "get ALGO_CONFIG_TILE_ID");
  c.stages = get_cfg<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, "get ALGO_CONFIG_STAGES_ID");
  c.splitk = get_cfg<int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, "get ALGO_CONFIG_SPLITK_NUM");
  c.reduction = get_cfg<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, "get ALGO_CONFIG_REDUCTION_SCHEME");
  c.swizzle = get_cfg<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, "get ALGO_CONFIG_CTA_SWIZZLING");
  c.custom = get_cfg<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, "get ALGO_CONFIG_CUSTOM_OPTION");
  c.cluster = get_cfg<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, "get ALGO_CONFIG_CLUSTER_SHAPE_ID");
  c.inner = get_cfg<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, "get ALGO_CONFIG_INNER_SHAPE_ID");
  return c;
}

uint32_t cap_u32(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr) {
  uint32_t v = 0;
  size_t written = 0;
  if (lt().cublasLtMatmulAlgoCapGetAttribute(&algo, attr, &v, sizeof(v), &written) != CUBLAS_STATUS_SUCCESS) return 1;
  return v == 0 ? 1 : v;
}

}  // namespace

LtDescs::LtDescs(const LtProblem& lp) {
  try {
    GT_LT(lt().cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    int32_t ta = lp.transa, tb = lp.transb;
    GT_LT(lt().cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    GT_LT(lt().cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    if (lp.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
      cublasLtEpilogue_t ep = lp.epilogue;
      GT_LT(lt().cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof(ep)));
    }
    // The heuristic reads pointers' alignment, not their data: a 16-byte aligned stand-in until launch sets the
    // real pointer. Scale modes and the fp8 pointers (scales, amax) change which kernels are valid, so the heuristic
    // sees them all.
    const void* stand_in = reinterpret_cast<const void*>(uintptr_t(1) << 20);
    if (lp.fp8) {
      if (lp.scale_mode_a != CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F || lp.scale_mode_b != CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F) {
        int32_t ma = lp.scale_mode_a, mb = lp.scale_mode_b;
        GT_LT(lt().cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &ma, sizeof(ma)));
        GT_LT(lt().cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mb, sizeof(mb)));
      }
      GT_LT(lt().cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &stand_in, sizeof(stand_in)));
      GT_LT(lt().cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &stand_in, sizeof(stand_in)));
      const int8_t fast = lp.fast_accum ? 1 : 0;
      GT_LT(lt().cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast)));
      if (lp.d_scale)
        GT_LT(lt().cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &stand_in, sizeof(stand_in)));
      if (lp.amax)
        GT_LT(lt().cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, &stand_in, sizeof(stand_in)));
    }
    if (lp.bias) {
      int32_t bt = lp.bias_type;
      GT_LT(lt().cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof(bt)));
      GT_LT(lt().cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &stand_in, sizeof(stand_in)));
    }
    a = layout(lp.a, lp.batch);
    b = layout(lp.b, lp.batch);
    c = layout(lp.c, lp.batch);
    d = layout(lp.d, lp.batch);
    GT_LT(lt().cublasLtMatmulPreferenceCreate(&pref));
    uint64_t ws = kMaxWorkspace;
    GT_LT(lt().cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    // The pointers' alignment the problem declares (Operand::align), so the heuristic picks only algorithms that
    // take such pointers (a sliced view's, off 16 bytes).
    const cublasLtMatmulPreferenceAttributes_t attrs[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    const LtMatrix* mats[4] = {&lp.a, &lp.b, &lp.c, &lp.d};
    for (int i = 0; i < 4; ++i) {
      told[i] = mats[i]->align;
      GT_LT(lt().cublasLtMatmulPreferenceSetAttribute(pref, attrs[i], &told[i], sizeof(told[i])));
    }
  } catch (...) {
    release();
    throw;
  }
}

void LtDescs::release() {
  if (pref) lt().cublasLtMatmulPreferenceDestroy(pref);
  for (auto* l : {&a, &b, &c, &d})
    if (*l) lt().cublasLtMatrixLayoutDestroy(*l);
  if (op) lt().cublasLtMatmulDescDestroy(op);
  pref = nullptr, a = b = c = d = nullptr, op = nullptr;
}

std::string algo_from_config(const AlgoConfig& c, const LtProblem& lp, cublasLtMatmulAlgo_t& algo) {
  cublasStatus_t s = lt().cublasLtMatmulAlgoInit(lt_handle(), CUBLAS_COMPUTE_32F, CUDA_R_32F, lp.a.type, lp.b.type,
                                            lp.c.type, lp.d.type, c.algo, &algo);
  if (s != CUBLAS_STATUS_SUCCESS)
    return "cublaslt: lt().cublasLtMatmulAlgoInit(algo=" + std::to_string(c.algo) + ") failed: " + status_name(s);
  struct Set {
    cublasLtMatmulAlgoConfigAttributes_t attr;
    const void* v;
    size_t n;
    const char* name;
  };
  const Set sets[] = {
      {CUBLASLT_ALGO_CONFIG_TILE_ID, &c.tile, sizeof(c.tile), "tile"},
      {CUBLASLT_ALGO_CONFIG_STAGES_ID, &c.stages, sizeof(c.stages), "stages"},
      {CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &c.splitk, sizeof(c.splitk), "splitk"},
      {CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &c.reduction, sizeof(c.reduction), "red"},
      {CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &c.swizzle, sizeof(c.swizzle), "swizzle"},
      {CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &c.custom, sizeof(c.custom), "custom"},
      {CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &c.cluster, sizeof(c.cluster), "cluster"},
      {CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, &c.inner, sizeof(c.inner), "inner"},
  };
  for (const Set& set : sets) {
    s = lt().cublasLtMatmulAlgoConfigSetAttribute(&algo, set.attr, set.v, set.n);
    if (s != CUBLAS_STATUS_SUCCESS) return std::string("cublaslt: cannot set ") + set.name + ": " + status_name(s);
  }
  return "";
}

Checked check_algo(const cublasLtMatmulAlgo_t& algo, const LtDescs& ds) {
  Checked r;
  cublasLtMatmulHeuristicResult_t res{};
  cublasStatus_t s = lt().cublasLtMatmulAlgoCheck(lt_handle(), ds.op, ds.a, ds.b, ds.c, ds.d, &algo, &res);
  if (s != CUBLAS_STATUS_SUCCESS) {
    r.reason = "cublaslt: cublasLtMatmulAlgoCheck rejects the algorithm: " + status_name(s);
    return r;
  }
  r.workspace = res.workspaceSize;
  if (r.workspace > kMaxWorkspace)
    r.reason = "cublaslt: algorithm needs " + std::to_string(r.workspace) + " bytes of workspace (limit " +
               std::to_string(kMaxWorkspace) + ")";
  const cublasLtMatmulAlgoCapAttributes_t caps[4] = {
      CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i) {
    r.align[i] = cap_u32(algo, caps[i]);
    if (r.reason.empty() && r.align[i] > ds.told[i])
      r.reason = "cublaslt: algorithm needs " + std::to_string(r.align[i]) + "-byte aligned " + "ABCD"[i] +
                 " (cuBLASLt's operand order; the problem declares " + std::to_string(ds.told[i]) + ")";
  }
  return r;
}

std::vector<cublasLtMatmulHeuristicResult_t> heuristic(const LtDescs& ds, int count) {
  std::vector<cublasLtMatmulHeuristicResult_t> res(count);
  int returned = 0;
  cublasStatus_t s =
      lt().cublasLtMatmulAlgoGetHeuristic(lt_handle(), ds.op, ds.a, ds.b, ds.c, ds.d, ds.pref, count, res.data(), &returned);
  if (s == CUBLAS_STATUS_NOT_SUPPORTED) returned = 0;  // no algorithm for this problem
  else if (s != CUBLAS_STATUS_SUCCESS) lt_fail(s, "cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__);
  res.resize(returned);
  std::erase_if(res, [](const auto& r) { return r.state != CUBLAS_STATUS_SUCCESS; });
  return res;
}

std::vector<Candidate> list_algos(const Problem& p, EpiMode mode, std::optional<bool> fast_accum) {
  const LtProblem lp = map_problem(p, mode, fast_accum.value_or(false));
  LtDescs ds(lp);
  std::vector<Candidate> out;
  const auto res = heuristic(ds, kHeuristicCount);
  if (res.empty()) return out;
  auto config = [&](const std::string& algo) { return CandidateConfig{algo, fast_accum, mode}.str(); };
  out.push_back({kName, config(kDefaultConfig)});
  std::vector<std::string> seen;
  for (size_t i = 0; i < res.size(); ++i) {
    std::string cfg = config_of(res[i].algo).str();
    bool dup = false;
    for (const auto& s : seen) dup = dup || s == cfg;
    seen.push_back(cfg);
    // res[0] is what `default` resolves to: listing it again would time the same kernel twice.
    if (dup || i == 0) continue;
    if (!check_algo(res[i].algo, ds).reason.empty()) continue;
    out.push_back({kName, config(cfg)});
  }
  return out;
}

}  // namespace gemmtune::cublaslt
