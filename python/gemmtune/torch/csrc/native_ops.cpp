// The hot path of gemmtune's torch ops in C++: a call whose tensors' metadata a Python call already planned, tuned
// and found plain (no copies; no epilogue tensor but linear's bias) is a table lookup, one output allocation and one
// launch here,
// without Python. Everything else (the plan, tuning, loading, copies, errors) stays in gemmtune/torch/_dispatch.py,
// which this library calls back through the dispatcher on a miss (the ops gemmtune::_py_<op>), and which fills the
// table after such a call (gemmtune::_native_remember).
//
// Built against torch's C++ API only (no pybind11, no CUDA headers): loaded with torch.ops.load_library, it serves
// the torch it was built for, whatever the Python version. The gemmtune library is reached through the two C ABI
// functions Python hands over as addresses (gt_gemm_run, gt_use_device), so this library does not link it.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>

#include <array>
#include <bitset>
#include <initializer_list>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using RunFn = int (*)(const void* g, const void* a, const void* b, const void* c, void* d, const void* bias,
                      const void* residual, const void* row_scale, const void* col_scale, const float* scale_a,
                      const float* scale_b, const float* scale_d, float* amax, void* stream);
using UseDeviceFn = int (*)(int ordinal);

struct Entry {
  const void* handle = nullptr;  // the gt_gemm, owned (and kept alive past clear) by _dispatch.py
  RunFn run = nullptr;
  UseDeviceFn use_device = nullptr;
  std::vector<int64_t> shape, strides;  // the output's
  at::ScalarType dtype = at::kBFloat16;
};

// The op kinds the table serves, as _native_ops.py numbers them: the functional ops' (they allocate the output) and
// the out= form Inductor's generated code calls (kind "gemm" of _dispatch.gemm with an output).
enum Kind : int64_t { kMm = 1, kBmm = 2, kLinear = 3, kGemmOut = 4 };

// The tensors of a call in the table's order: A, B, C, the bias, the output (the absent ones null).
using Tensors = std::array<const at::Tensor*, 5>;

// What makes a call's plan: the kind, the epilogue, alpha and beta, and of each tensor the sizes, strides, dtype, the
// pointer's offset from 16 bytes and the device (the key _dispatch.gemm builds, in bytes).
std::string make_key(int64_t kind, const Tensors& ts, c10::string_view epilogue, double alpha, double beta) {
  std::string k;
  k.reserve(512 + epilogue.size());
  auto put = [&k](auto v) { k.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(kind);
  for (const at::Tensor* t : ts) {
    if (t == nullptr) {
      put(int64_t{-1});
      continue;
    }
    put(t->dim());
    for (int64_t s : t->sizes()) put(s);
    for (int64_t s : t->strides()) put(s);
    put(static_cast<int64_t>(t->scalar_type()));
    put(static_cast<int64_t>(reinterpret_cast<uintptr_t>(t->data_ptr()) & 15));
    put(static_cast<int64_t>(t->get_device()));
  }
  put(alpha);
  put(beta);
  k.append(epilogue.data(), epilogue.size());
  return k;
}

struct Table {
  std::shared_mutex mu;
  std::unordered_map<std::string, Entry> map;
};

Table& table() {
  static Table t;
  return t;
}

// Devices whose primary context this thread has made current (the library launches with the driver API, which
// needs one; a thread the CUDA runtime has not touched, e.g. an autograd worker, has none).
thread_local std::bitset<64> bound;

bool lookup(Kind kind, const Tensors& ts, c10::string_view epilogue, double alpha, double beta, Entry& out) {
  const std::string k = make_key(kind, ts, epilogue, alpha, beta);
  Table& t = table();
  std::shared_lock lock(t.mu);
  auto it = t.map.find(k);
  if (it == t.map.end()) return false;
  out = it->second;
  return true;
}

const void* ptr(const at::Tensor* t) { return t == nullptr ? nullptr : t->data_ptr(); }

// The launch of a hit into d (allocated here from the entry's output plan when d is undefined): false when the
// library refused it (the Python path then raises its error).
bool launch(const Entry& e, const Tensors& ts, at::Tensor& d) {
  const at::Tensor& a = *ts[0];
  const c10::Device dev = a.device();
  const int ord = dev.index();
  if (ord < 0 || ord >= 64) return false;
  // The library launches into the thread's current context: a's device's, as a torch op would (a no-op when it is
  // current already).
  const c10::DeviceGuard device_guard(dev);
  if (!bound.test(ord)) {
    if (e.use_device == nullptr || e.use_device(ord) != 0) return false;
    bound.set(ord);
  }
  if (!d.defined()) d = at::empty_strided(e.shape, e.strides, a.options().dtype(e.dtype));
  const c10::Stream stream = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(dev);
  return e.run(e.handle, a.data_ptr(), ts[1]->data_ptr(), ptr(ts[2]), d.data_ptr(), ptr(ts[3]), nullptr, nullptr,
               nullptr, nullptr, nullptr, nullptr, nullptr, stream.native_handle()) == 0;
}

// A functional op's call from the table: the new output, or an undefined tensor on a miss.
at::Tensor table_call(Kind kind, const at::Tensor& a, const at::Tensor& b, const at::Tensor* bias,
                      c10::string_view epilogue) {
  const Tensors ts{&a, &b, nullptr, bias, nullptr};
  Entry e;
  at::Tensor d;
  if (lookup(kind, ts, epilogue, 1.0, 0.0, e) && !launch(e, ts, d)) d = at::Tensor();
  return d;
}

// An operator's typed handle: the ops themselves, and their Python implementations (registered by ops.py and
// inductor.py as gemmtune::_py_<name>, called below autograd: the op's own autograd kernel already ran).
template <class Sig>
c10::TypedOperatorHandle<Sig> op_handle(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").template typed<Sig>();
}

using MmSig = at::Tensor(const at::Tensor&, const at::Tensor&);
using LinearSig = at::Tensor(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                             c10::string_view, const std::optional<at::Tensor>&);

// The operators mm and bmm and their Python twins (one kernel template for both).
constexpr char kMmOp[] = "gemmtune::mm", kMmTwin[] = "gemmtune::_py_mm";
constexpr char kBmmOp[] = "gemmtune::bmm", kBmmTwin[] = "gemmtune::_py_bmm";

template <Kind K, const char* Twin>
at::Tensor mm_cuda(const at::Tensor& a, const at::Tensor& b) {
  if (at::Tensor d = table_call(K, a, b, nullptr, "none"); d.defined()) return d;
  static auto op = op_handle<MmSig>(Twin);
  at::AutoDispatchBelowADInplaceOrView guard;
  return op.call(a, b);
}

at::Tensor linear_cuda(const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
                       c10::string_view epilogue, const std::optional<at::Tensor>& residual) {
  if (!residual.has_value())
    if (at::Tensor d = table_call(kLinear, x, w, bias ? &*bias : nullptr, epilogue); d.defined()) return d;
  static auto op = op_handle<LinearSig>("gemmtune::_py_linear");
  at::AutoDispatchBelowADInplaceOrView guard;
  return op.call(x, w, bias, epilogue, residual);
}

// The extern kernels of Inductor's generated code (gemmtune/torch/inductor.py: inductor_mm serves mm and bmm,
// inductor_addmm addmm with its input as a bias, a per-row bias or C), writing into Inductor's buffer. The addmm
// modes read the input as inductor.gemmtune_addmm does, so that both build the same key.
using MmOutSig = void(const at::Tensor&, const at::Tensor&, at::Tensor&);
using AddmmOutSig = void(const at::Tensor&, const at::Tensor&, const at::Tensor&, double, double, c10::string_view,
                         at::Tensor&);

bool out_call(const Tensors& ts, c10::string_view epilogue, double alpha, double beta, at::Tensor& out) {
  Entry e;
  return lookup(kGemmOut, ts, epilogue, alpha, beta, e) && launch(e, ts, out);
}

void inductor_mm_cuda(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  if (out_call({&a, &b, nullptr, nullptr, &out}, "none", 1.0, 0.0, out)) return;
  static auto op = op_handle<MmOutSig>("gemmtune::_py_inductor_mm");
  op.call(a, b, out);
}

void inductor_addmm_cuda(const at::Tensor& inp, const at::Tensor& a, const at::Tensor& b, double alpha, double beta,
                         c10::string_view mode, at::Tensor& out) {
  bool hit = false;
  if (mode == "bias" || mode == "bias_row") {
    const at::Tensor bias = mode == "bias" ? inp.select(0, 0) : inp.select(1, 0);
    hit = out_call({&a, &b, nullptr, &bias, &out}, mode, alpha, 0.0, out);
  } else if (mode == "c") {
    hit = out_call({&a, &b, &inp, nullptr, &out}, "none", alpha, beta, out);
  }
  if (hit) return;
  static auto op = op_handle<AddmmOutSig>("gemmtune::_py_inductor_addmm");
  op.call(inp, a, b, alpha, beta, mode, out);
}

// The Autograd kernels: with no gradient to record, straight below autograd to the CUDA kernels above (no Python on
// an inference call); otherwise the op's _py_ twin, whose Python Autograd kernel records the backward
// (gemmtune/torch/ops.py) and whose CUDA kernel is the Python implementation.
bool needs_grad(std::initializer_list<const at::Tensor*> ts) {
  if (!at::GradMode::is_enabled()) return false;
  for (const at::Tensor* t : ts)
    if (t != nullptr && t->defined() && t->requires_grad()) return true;
  return false;
}

template <const char* Op, const char* Twin>
at::Tensor mm_autograd(c10::DispatchKeySet ks, const at::Tensor& a, const at::Tensor& b) {
  if (needs_grad({&a, &b})) {
    static auto twin = op_handle<MmSig>(Twin);
    return twin.call(a, b);
  }
  static auto op = op_handle<MmSig>(Op);
  at::AutoDispatchBelowADInplaceOrView guard;
  return op.redispatch(ks & c10::after_ADInplaceOrView_keyset, a, b);
}

at::Tensor linear_autograd(c10::DispatchKeySet ks, const at::Tensor& x, const at::Tensor& w,
                           const std::optional<at::Tensor>& bias, c10::string_view epilogue,
                           const std::optional<at::Tensor>& residual) {
  if (needs_grad({&x, &w, bias ? &*bias : nullptr, residual ? &*residual : nullptr})) {
    static auto twin = op_handle<LinearSig>("gemmtune::_py_linear");
    return twin.call(x, w, bias, epilogue, residual);
  }
  static auto op = op_handle<LinearSig>("gemmtune::linear");
  at::AutoDispatchBelowADInplaceOrView guard;
  return op.redispatch(ks & c10::after_ADInplaceOrView_keyset, x, w, bias, epilogue, residual);
}

// After a Python call of these tensors (A, B, C, the bias, the output: absent ones None) that selected a plain
// GEMM: the table's entry for them.
void remember(int64_t kind, const c10::List<std::optional<at::Tensor>>& tensors, c10::string_view epilogue,
              double alpha, double beta, int64_t handle, int64_t run, int64_t use_device, at::IntArrayRef out_shape,
              at::IntArrayRef out_strides, at::ScalarType out_dtype) {
  TORCH_CHECK(kind >= kMm && kind <= kGemmOut, "gemmtune::_native_remember: unknown kind ", kind);
  TORCH_CHECK(handle != 0 && run != 0 && use_device != 0, "gemmtune::_native_remember: null handle or function");
  TORCH_CHECK(tensors.size() == 5, "gemmtune::_native_remember: 5 tensors (a, b, c, bias, out), not ",
              tensors.size());
  TORCH_CHECK(out_shape.size() == out_strides.size(), "gemmtune::_native_remember: out_shape and out_strides differ "
              "in length");
  std::vector<std::optional<at::Tensor>> held(tensors.begin(), tensors.end());
  Tensors ts{};
  for (size_t i = 0; i < ts.size(); ++i) ts[i] = held[i] ? &*held[i] : nullptr;
  TORCH_CHECK(ts[0] != nullptr && ts[1] != nullptr, "gemmtune::_native_remember: a and b are needed");
  TORCH_CHECK((ts[4] != nullptr) == (kind == kGemmOut), "gemmtune::_native_remember: an output goes with kind ",
              static_cast<int64_t>(kGemmOut), " only");
  TORCH_CHECK(kind == kGemmOut || (ts[2] == nullptr && (ts[3] == nullptr || kind == kLinear)),
              "gemmtune::_native_remember: C or a bias with a kind that takes none");
  Entry e;
  e.handle = reinterpret_cast<const void*>(handle);
  e.run = reinterpret_cast<RunFn>(run);
  e.use_device = reinterpret_cast<UseDeviceFn>(use_device);
  e.shape.assign(out_shape.begin(), out_shape.end());
  e.strides.assign(out_strides.begin(), out_strides.end());
  e.dtype = out_dtype;
  std::string k = make_key(kind, ts, epilogue, alpha, beta);
  Table& t = table();
  std::unique_lock lock(t.mu);
  t.map[std::move(k)] = std::move(e);
}

void clear() {
  Table& t = table();
  std::unique_lock lock(t.mu);
  t.map.clear();
}

int64_t size() {
  Table& t = table();
  std::shared_lock lock(t.mu);
  return static_cast<int64_t>(t.map.size());
}

// The CUDA and Autograd kernels of gemmtune::mm, bmm and linear, registered when Python asks (ops.py, after it defined the ops
// and their _py_ twins), so that nothing depends on the order in which the two libraries load.
void enable() {
  static std::once_flag once;
  static std::unique_ptr<torch::Library> cuda, autograd;
  std::call_once(once, [] {
    cuda = std::make_unique<torch::Library>(torch::Library::IMPL, "gemmtune", c10::DispatchKey::CUDA, __FILE__,
                                            __LINE__);
    cuda->impl("mm", TORCH_FN((mm_cuda<kMm, kMmTwin>)));
    cuda->impl("bmm", TORCH_FN((mm_cuda<kBmm, kBmmTwin>)));
    cuda->impl("linear", TORCH_FN(linear_cuda));
    autograd = std::make_unique<torch::Library>(torch::Library::IMPL, "gemmtune", c10::DispatchKey::Autograd,
                                                __FILE__, __LINE__);
    autograd->impl("mm", TORCH_FN((mm_autograd<kMmOp, kMmTwin>)));
    autograd->impl("bmm", TORCH_FN((mm_autograd<kBmmOp, kBmmTwin>)));
    autograd->impl("linear", TORCH_FN(linear_autograd));
  });
}

// The CUDA kernels of Inductor's extern ops, registered once inductor.py defined them.
void enable_inductor() {
  static std::once_flag once;
  static std::unique_ptr<torch::Library> cuda;
  std::call_once(once, [] {
    cuda = std::make_unique<torch::Library>(torch::Library::IMPL, "gemmtune", c10::DispatchKey::CUDA, __FILE__,
                                            __LINE__);
    cuda->impl("inductor_mm", TORCH_FN(inductor_mm_cuda));
    cuda->impl("inductor_addmm", TORCH_FN(inductor_addmm_cuda));
  });
}

}  // namespace

// The table's own ops: called from Python with CPU or CUDA tensors (only their metadata and pointers are read).
TORCH_LIBRARY_FRAGMENT(gemmtune, m) {
  m.def("_native_remember(int kind, Tensor?[] tensors, str epilogue, float alpha, float beta, int handle, int run, "
        "int use_device, int[] out_shape, int[] out_strides, ScalarType out_dtype) -> ()",
        TORCH_FN(remember));
  m.def("_native_clear() -> ()", TORCH_FN(clear));
  m.def("_native_size() -> int", TORCH_FN(size));
  m.def("_native_enable() -> ()", TORCH_FN(enable));
  m.def("_native_enable_inductor() -> ()", TORCH_FN(enable_inductor));
}
