// The pad backend's config (parse / print) and what it derives from a problem: which operands are aligned, the
// padded problem, the copies and their launch.
#include "backends/pad/pad_config.h"

#include <algorithm>

#include "common/pad_copy_params.cuh"  // kernels/: kPadCopyThreads
#include "gemmtune/errors.h"

namespace gemmtune::pad {

namespace {

constexpr int64_t kAlign = 16;        // bytes: TMA's and cuBLASLt's fast algorithms' pitch and pointer alignment
constexpr int64_t kCopyAlign = 256;   // bytes: where each copy starts in the workspace
constexpr unsigned kMaxGridYZ = 65535;

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }


// Lines and line length of an operand as stored: rows of a row-major matrix, columns of a column-major one.
int64_t lines_of(const Problem& p, Which w) {
  return p.operand(w).layout == Layout::row ? Problem::rows_of(w, p) : Problem::cols_of(w, p);
}
int64_t inner_of(const Problem& p, Which w) {
  return p.operand(w).layout == Layout::row ? Problem::cols_of(w, p) : Problem::rows_of(w, p);
}

// Whether the batch stride matters: several batches, each its own matrix (0 broadcasts one matrix).
bool strided_batch(const Problem& p, const Operand& o) { return p.batch > 1 && o.batch_stride != 0; }

}  // namespace

std::string Config::str() const {
  return std::string(a && b ? "a+b" : a ? "a" : "b") + ";" + inner.str();
}

Config Config::parse(const std::string& s) {
  const auto semi = s.find(';');
  if (semi == std::string::npos)
    throw Error("pad: config '" + s + "': expected '<a|b|a+b>;<backend>:<config>' (e.g. 'b;cublaslt:default')");
  Config c;
  const std::string ops = s.substr(0, semi), rest = s.substr(semi + 1);
  size_t pos = 0;
  for (;;) {
    const size_t plus = ops.find('+', pos);
    const std::string tok = ops.substr(pos, plus == std::string::npos ? std::string::npos : plus - pos);
    if (tok != "a" && tok != "b")
      throw Error("pad: config '" + s + "': copied operand '" + tok + "' is not 'a' or 'b' (expected a, b or a+b)");
    bool& flag = tok == "a" ? c.a : c.b;
    if (flag) throw Error("pad: config '" + s + "': operand '" + tok + "' named twice");
    flag = true;
    if (plus == std::string::npos) break;
    pos = plus + 1;
  }
  if (rest.empty()) throw Error("pad: config '" + s + "': no inner candidate after ';' (expected <backend>:<config>)");
  try {
    c.inner = Candidate::parse(rest);
  } catch (const Error& e) {
    throw Error("pad: config '" + s + "': inner candidate: " + e.what());
  }
  if (c.inner.backend == "pad") throw Error("pad: config '" + s + "': the inner candidate cannot be another pad");
  return c;
}

std::string misalignment(const Problem& p, Which w) {
  const Operand& o = p.operand(w);
  const int64_t es = static_cast<int64_t>(dtype_size(o.dtype));
  std::string why;
  auto add = [&](const std::string& s) { why += (why.empty() ? "" : ", ") + s; };
  if (o.ld * es % kAlign != 0)
    add(std::string("ld") + which_lower(w) + "=" + std::to_string(o.ld) + " (" + std::to_string(o.ld * es) +
        " bytes) is not a multiple of 16 bytes");
  if (strided_batch(p, o) && o.batch_stride * es % kAlign != 0)
    add("batch stride " + std::to_string(o.batch_stride) + " (" + std::to_string(o.batch_stride * es) +
        " bytes) is not a multiple of 16 bytes");
  if (o.align % kAlign != 0)
    add(which_name(w) + std::string("'s pointer is only ") + std::to_string(o.align) + "-byte aligned");
  return why;
}

bool aligned(const Problem& p, Which w) { return p.access_bytes(w) == kAlign; }

Problem padded_problem(const Problem& p, bool a, bool b) {
  Problem q = p;
  for (Which w : {Which::A, Which::B}) {
    if (!(w == Which::A ? a : b)) continue;
    Operand& o = w == Which::A ? q.a : q.b;
    const int64_t v = kAlign / static_cast<int64_t>(dtype_size(o.dtype));
    const bool strided = strided_batch(p, o);
    o.ld = round_up(inner_of(p, w), v);
    o.batch_stride = strided ? o.ld * lines_of(p, w) : 0;
    o.align = static_cast<int>(kAlign);
  }
  return q;
}

Copy copy_of(const Problem& p, Which w) {
  const Operand& o = p.operand(w);
  Copy c;
  c.which = w;
  c.elem_bytes = static_cast<int>(dtype_size(o.dtype));
  c.lines = lines_of(p, w);
  c.inner = inner_of(p, w);
  c.chunks = (c.inner * c.elem_bytes + kAlign - 1) / kAlign;
  c.src_ld = o.ld;
  c.dst_ld = c.chunks * kAlign / c.elem_bytes;
  const bool strided = strided_batch(p, o);
  c.batch = strided ? p.batch : 1;
  c.src_bs = strided ? o.batch_stride : 0;
  c.dst_bs = strided ? c.dst_ld * c.lines : 0;
  // Every line start is src + (b * src_bs + l * src_ld) * elem_bytes: as aligned as the pointer, the pitch and the
  // batch stride all are.
  c.load_bytes = p.access_bytes(w);
  return c;
}

CopyLaunch copy_launch(const Copy& c) {
  CopyLaunch l;
  // Threads a line: a power of two, at least 32 or the line's chunks (so that a warp reads and writes whole 512-byte
  // runs, or whole lines), at most a block; of those, the count that launches the fewest threads (few idle threads in
  // the last group of a line's chunks or of a block's lines), the larger on a tie.
  int64_t lanes = 1;
  while (lanes < std::min<int64_t>(c.chunks, 32)) lanes *= 2;
  int64_t best = -1;
  for (int64_t t = lanes; t <= gt_pad::kPadCopyThreads; t *= 2) {
    const int64_t per_block = gt_pad::kPadCopyThreads / t;
    const int64_t launched = (c.lines + per_block - 1) / per_block * ((c.chunks + t - 1) / t);
    if (best < 0 || launched <= best) best = launched, lanes = t;
  }
  while ((int64_t(1) << l.lane_bits) < lanes) ++l.lane_bits;
  const int64_t lines_per_block = gt_pad::kPadCopyThreads / lanes;
  l.grid[0] = static_cast<unsigned>((c.lines + lines_per_block - 1) / lines_per_block);
  l.grid[1] = static_cast<unsigned>(std::min<int64_t>((c.chunks + lanes - 1) / lanes, kMaxGridYZ));
  l.grid[2] = static_cast<unsigned>(std::min<int64_t>(c.batch, kMaxGridYZ));
  return l;
}

int64_t b_offset(const Problem& p, bool a) { return a ? round_up(copy_of(p, Which::A).bytes(), kCopyAlign) : 0; }

int64_t workspace_bytes(const Problem& p, bool a, bool b) {
  return b_offset(p, a) + (b ? round_up(copy_of(p, Which::B).bytes(), kCopyAlign) : 0);
}

std::string problem_reason(const Problem& p, const DeviceInfo& dev) {
  // The copies are of one (batched) matrix per operand; a grouped problem's B holds G matrices and its groups would
  // reach the inner backend without their group_rows.
  if (p.grouped())
    return "pad: grouped GEMMs are not supported (grouping=" + std::string(grouping_name(p.grouping)) + ")";
  const bool pa = !aligned(p, Which::A), pb = !aligned(p, Which::B);
  if (!pa && !pb) {
    const bool others = (p.beta == 0.0f || p.access_bytes(Which::C) == kAlign) && p.access_bytes(Which::D) == kAlign;
    return others ? "pad: every operand is aligned; nothing to pad"
                  : "pad: A and B are aligned; nothing to pad (it copies A and B, not C or D)";
  }
  for (const DType t : {p.a.dtype, p.b.dtype})
    if (const size_t es = dtype_size(t); es != 2 && es != 4)
      return "pad: the copy takes 2- and 4-byte elements, not " + std::string(dtype_name(t));
  const int64_t ws = workspace_bytes(p, pa, pb);
  if (dev.global_mem_bytes > 0 && ws > dev.global_mem_bytes / 4)
    return "pad: the padded copies need " + std::to_string(ws >> 20) + " MiB per stream, more than a quarter of the "
           "device's memory";
  return "";
}

}  // namespace gemmtune::pad
