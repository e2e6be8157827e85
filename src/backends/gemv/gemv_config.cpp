// gemv config: the canonical line (parse / print), the kernel view of a problem, and the sizes a launch needs
// (kernels/gemv/gemv_params.cuh, which the kernels read too).
#include "backends/gemv/gemv_config.h"

#include "backends/config_fields.h"
#include "gemv/gemv_params.cuh"  // kernels/: the kernels' sizes

namespace gemmtune::gemv {
namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The mma kernel's m-blocks of 16 W rows per warp (8 output rows each with a GLU) and n-blocks of 8 vectors.
int m_blocks(const Config& c, const Problem& p) { return c.rows / (p.epilogue.has_glu() ? 8 : 16); }
int n_blocks(const Config& c, const Problem& p) {
  return gt_gemv::mma_vector_blocks(static_cast<int>(c.vec_m ? p.m : p.n));
}

using config::Form;
const config::Fields<Config>& fields() {
  static const config::Fields<Config> f{
      "gemv",
      {config::choice<&Config::vec_m>("vec", Form::required, {{"m", true}, {"n", false}}),
       config::integer<&Config::warps>("warps", Form::required),
       config::integer<&Config::rows>("rows", Form::required),
       config::integer<&Config::ksplit>("ksplit", Form::required),
       config::integer<&Config::unroll>("unroll", Form::required),
       config::choice<&Config::mma>("mma", Form::optional, {{"0", false}, {"1", true}}),
       config::integer<&Config::ring>("ring", Form::optional),
       config::integer<&Config::csplit>("csplit", Form::optional),
       config::integer<&Config::occ>("occ", Form::optional)}};
  return f;
}
}  // namespace

std::string Config::str() const { return fields().str(*this); }
Config Config::parse(const std::string& s) { return fields().parse(s); }

View make_view(const Problem& p, bool vec_m) {
  View v;
  v.batch = p.batch;
  v.k = p.k;
  v.t = vec_m ? p.m : p.n;
  v.r = vec_m ? p.n : p.m;
  v.r_out = vec_m ? p.n_out() : p.m;
  v.w_is_b = vec_m;
  const Operand& w = vec_m ? p.b : p.a;
  const Operand& x = vec_m ? p.a : p.b;
  const bool many = p.batch > 1;
  v.ldw = w.ld;
  v.w_batch = many ? w.batch_stride : 0;
  v.ldx = x.ld;
  v.x_batch = many ? x.batch_stride : 0;
  // Output (t, r) is D(m, n) = (t, r) with vec=m, (r, t) with vec=n; row-major D(m, n) at m * ld + n.
  auto strides = [&](const Operand& o, int64_t& st, int64_t& sr, int64_t& sb) {
    const bool t_is_m = vec_m;
    const int64_t sm = o.layout == Layout::row ? o.ld : 1, sn = o.layout == Layout::row ? 1 : o.ld;
    st = t_is_m ? sm : sn;
    sr = t_is_m ? sn : sm;
    sb = many ? o.batch_stride : 0;
  };
  strides(p.d, v.d_t, v.d_r, v.d_batch);
  if (p.beta != 0.0f) strides(p.c, v.c_t, v.c_r, v.c_batch);
  return v;
}
DType w_dtype(const Config& c, const Problem& p) { return c.vec_m ? p.b.dtype : p.a.dtype; }
DType x_dtype(const Config& c, const Problem& p) { return c.vec_m ? p.a.dtype : p.b.dtype; }
DType mma_dtype(const Problem& p) {
  return p.a.dtype == DType::bf16 || p.b.dtype == DType::bf16 ? DType::bf16 : DType::f16;
}
int x_chunk_loads(const Config& c, const Problem& p) {
  return is_fp8(w_dtype(c, p)) && !is_fp8(x_dtype(c, p)) ? 2 : 1;
}
int mma_step_k(const Config& c, const Problem& p) { return is_fp8(w_dtype(c, p)) ? 128 : 64; }

// Static shared memory of the mma kernel: the K slices' meeting buffer (gemv_mma.cuh `red`).
int64_t static_smem(const Config& c, const Problem& p) {
  if (!c.mma || c.ksplit == 1) return 0;
  return int64_t(gt_gemv::mma_red_floats(c.warps, m_blocks(c, p), n_blocks(c, p), c.ksplit)) * 4;
}

int ring_bytes(const Config& c, const Problem& p) { return gt_gemv::mma_ring_bytes(c.ring, c.warps, m_blocks(c, p)); }

int64_t grid_x(const Config& c, const View& v) {
  return cdiv(v.r_out, static_cast<int64_t>(c.rows) * (c.warps / c.ksplit));
}

int64_t csplit_ws_floats(const Config& c, const Problem& p) {
  if (c.csplit == 1) return 0;
  // kernels/gemv/gemv_mma.cuh gather_split: a slot per row group (batch x grid x warps / ksplit).
  return csplit_counts(c, p) * gt_gemv::mma_csplit_slot_floats(c.csplit, m_blocks(c, p), n_blocks(c, p));
}

int64_t csplit_counts(const Config& c, const Problem& p) {
  if (c.csplit == 1) return 0;
  const View v = make_view(p, c.vec_m);
  return v.batch * grid_x(c, v) * (c.warps / c.ksplit);
}
}  // namespace gemmtune::gemv
