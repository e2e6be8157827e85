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
  std::vector<int64_t> shape, strides;  // the output's
  at::ScalarType dtype = at::kBFloat16;
};

// The op kinds the table serves, as _dispatch.py names them.
enum Kind : int64_t { kMm = 1, kBmm = 2, kLinear = 3 };

// What makes a call's plan: the kind, the epilogue, and of A, B and the bias (when there is one) the sizes, strides,
// dtype, the pointer's offset from 16 bytes and the device (the key _dispatch.gemm builds, in bytes).
void put_tensor(std::string& k, const at::Tensor& t) {
  auto put = [&k](int64_t v) { k.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(t.dim());
  for (int64_t s : t.sizes()) put(s);
  for (int64_t s : t.strides()) put(s);
  put(static_cast<int64_t>(t.scalar_type()));
  put(static_cast<int64_t>(reinterpret_cast<uintptr_t>(t.data_ptr()) & 15));
  put(t.get_device());
}

std::string make_key(Kind kind, const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
                     c10::string_view epilogue) {
  std::string k;
  k.reserve(288 + epilogue.size());
  const int64_t kd = kind * 2 + (bias.has_value() ? 1 : 0);
  k.append(reinterpret_cast<const char*>(&kd), sizeof kd);
  put_tensor(k, a);
  put_tensor(k, b);
  if (bias.has_value()) put_tensor(k, *bias);
  k.append(epilogue.data(), epilogue.size());
  return k;
}

struct Table {
  std::shared_mutex mu;
  std::unordered_map<std::string, Entry> map;
  UseDeviceFn use_device = nullptr;
};

Table& table() {
  static Table t;
  return t;
}

// Devices whose primary context this thread has made current (the library launches with the driver API, which
// needs one; a thread the CUDA runtime has not touched, e.g. an autograd worker, has none).
thread_local std::bitset<64> bound;

bool lookup(Kind kind, const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
            c10::string_view epilogue, Entry& out) {
  const std::string k = make_key(kind, a, b, bias, epilogue);
  Table& t = table();
  std::shared_lock lock(t.mu);
  auto it = t.map.find(k);
  if (it == t.map.end()) return false;
  out = it->second;
  return true;
}

// The launch of a hit: false when the library refused it (the Python path then raises its error).
bool launch(const Entry& e, const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias,
            at::Tensor& d) {
  const c10::Device dev = a.device();
  const int ord = dev.index();
  if (ord < 0 || ord >= 64) return false;
  // The library launches into the thread's current context: a's device's, as a torch op would (a no-op when it is
  // current already).
  const c10::DeviceGuard device_guard(dev);
  if (!bound.test(ord)) {
    UseDeviceFn use = table().use_device;
    if (use == nullptr || use(ord) != 0) return false;
    bound.set(ord);
  }
  d = at::empty_strided(e.shape, e.strides, a.options().dtype(e.dtype));
  const c10::Stream stream = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(dev);
  return e.run(e.handle, a.data_ptr(), b.data_ptr(), nullptr, d.data_ptr(), bias ? bias->data_ptr() : nullptr,
               nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, stream.native_handle()) == 0;
}

// The Python implementation of an op (registered by ops.py as gemmtune::_py_<name>), called below autograd: the
// op's own autograd kernel already ran.
template <class Sig>
c10::TypedOperatorHandle<Sig> py_op(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").template typed<Sig>();
}

using MmSig = at::Tensor(const at::Tensor&, const at::Tensor&);
using LinearSig = at::Tensor(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                             c10::string_view, const std::optional<at::Tensor>&);

at::Tensor mm_cuda(const at::Tensor& a, const at::Tensor& b) {
  Entry e;
  at::Tensor d;
  if (lookup(kMm, a, b, std::nullopt, "none", e) && launch(e, a, b, std::nullopt, d)) return d;
  static auto op = py_op<MmSig>("gemmtune::_py_mm");
  at::AutoDispatchBelowADInplaceOrView guard;
  return op.call(a, b);
}

at::Tensor bmm_cuda(const at::Tensor& a, const at::Tensor& b) {
  Entry e;
  at::Tensor d;
  if (lookup(kBmm, a, b, std::nullopt, "none", e) && launch(e, a, b, std::nullopt, d)) return d;
  static auto op = py_op<MmSig>("gemmtune::_py_bmm");
  at::AutoDispatchBelowADInplaceOrView guard;
  return op.call(a, b);
}

at::Tensor linear_cuda(const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias,
                       c10::string_view epilogue, const std::optional<at::Tensor>& residual) {
  if (!residual.has_value()) {
    Entry e;
    at::Tensor d;
    if (lookup(kLinear, x, w, bias, epilogue, e) && launch(e, x, w, bias, d)) return d;
  }
  static auto op = py_op<LinearSig>("gemmtune::_py_linear");
  at::AutoDispatchBelowADInplaceOrView guard;
  return op.call(x, w, bias, epilogue, residual);
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

template <class Sig>
c10::TypedOperatorHandle<Sig> op_handle(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").template typed<Sig>();
}

at::Tensor mm_autograd(c10::DispatchKeySet ks, const at::Tensor& a, const at::Tensor& b) {
  if (needs_grad({&a, &b})) {
    static auto twin = py_op<MmSig>("gemmtune::_py_mm");
    return twin.call(a, b);
  }
  static auto op = op_handle<MmSig>("gemmtune::mm");
  at::AutoDispatchBelowADInplaceOrView guard;
  return op.redispatch(ks & c10::after_ADInplaceOrView_keyset, a, b);
}

at::Tensor bmm_autograd(c10::DispatchKeySet ks, const at::Tensor& a, const at::Tensor& b) {
  if (needs_grad({&a, &b})) {
    static auto twin = py_op<MmSig>("gemmtune::_py_bmm");
    return twin.call(a, b);
  }
  static auto op = op_handle<MmSig>("gemmtune::bmm");
  at::AutoDispatchBelowADInplaceOrView guard;
  return op.redispatch(ks & c10::after_ADInplaceOrView_keyset, a, b);
}

at::Tensor linear_autograd(c10::DispatchKeySet ks, const at::Tensor& x, const at::Tensor& w,
                           const std::optional<at::Tensor>& bias, c10::string_view epilogue,
                           const std::optional<at::Tensor>& residual) {
  if (needs_grad({&x, &w, bias ? &*bias : nullptr, residual ? &*residual : nullptr})) {
    static auto twin = py_op<LinearSig>("gemmtune::_py_linear");
    return twin.call(x, w, bias, epilogue, residual);
  }
  static auto op = op_handle<LinearSig>("gemmtune::linear");
  at::AutoDispatchBelowADInplaceOrView guard;
  return op.redispatch(ks & c10::after_ADInplaceOrView_keyset, x, w, bias, epilogue, residual);
}

// After a Python call of these tensors that selected a plain GEMM: the table's entry for them.
void remember(const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& bias, int64_t kind,
              c10::string_view epilogue, int64_t handle, int64_t run, int64_t use_device, at::IntArrayRef out_shape,
              at::IntArrayRef out_strides, at::ScalarType out_dtype) {
  TORCH_CHECK(kind == kMm || kind == kBmm || kind == kLinear, "gemmtune::_native_remember: unknown kind ", kind);
  TORCH_CHECK(handle != 0 && run != 0 && use_device != 0, "gemmtune::_native_remember: null handle or function");
  Entry e;
  e.handle = reinterpret_cast<const void*>(handle);
  e.run = reinterpret_cast<RunFn>(run);
  TORCH_CHECK(out_shape.size() == out_strides.size(), "gemmtune::_native_remember: out_shape and out_strides differ "
              "in length");
  TORCH_CHECK(!bias.has_value() || kind == kLinear, "gemmtune::_native_remember: a bias with mm or bmm");
  e.shape.assign(out_shape.begin(), out_shape.end());
  e.strides.assign(out_strides.begin(), out_strides.end());
  e.dtype = out_dtype;
  std::string k = make_key(static_cast<Kind>(kind), a, b, bias, epilogue);
  Table& t = table();
  std::unique_lock lock(t.mu);
  t.use_device = reinterpret_cast<UseDeviceFn>(use_device);
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
    cuda->impl("mm", TORCH_FN(mm_cuda));
    cuda->impl("bmm", TORCH_FN(bmm_cuda));
    cuda->impl("linear", TORCH_FN(linear_cuda));
    autograd = std::make_unique<torch::Library>(torch::Library::IMPL, "gemmtune", c10::DispatchKey::Autograd,
                                                __FILE__, __LINE__);
    autograd->impl("mm", TORCH_FN(mm_autograd));
    autograd->impl("bmm", TORCH_FN(bmm_autograd));
    autograd->impl("linear", TORCH_FN(linear_autograd));
  });
}

}  // namespace

// The table's own ops: called from Python with CPU or CUDA tensors (only their metadata and pointers are read).
TORCH_LIBRARY_FRAGMENT(gemmtune, m) {
  m.def("_native_remember(Tensor a, Tensor b, Tensor? bias, int kind, str epilogue, int handle, int run, "
        "int use_device, int[] out_shape, int[] out_strides, ScalarType out_dtype) -> ()",
        TORCH_FN(remember));
  m.def("_native_clear() -> ()", TORCH_FN(clear));
  m.def("_native_size() -> int", TORCH_FN(size));
  m.def("_native_enable() -> ()", TORCH_FN(enable));
}
