"""torch.ops.gemmtune.*: the custom ops, and plain functions of the same names for eager callers.

    torch.ops.gemmtune.mm(Tensor a, Tensor b) -> Tensor                              as torch.mm
    torch.ops.gemmtune.bmm(Tensor a, Tensor b) -> Tensor                             as torch.bmm
    torch.ops.gemmtune.linear(Tensor x, Tensor weight, Tensor? bias=None, str epilogue="none",
                              Tensor? residual=None) -> Tensor                        epilogue(x @ weight.T [+ bias])
    torch.ops.gemmtune.scaled_mm(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias=None,
                                 Tensor? scale_result=None, ScalarType? out_dtype=None,
                                 bool use_fast_accum=False) -> Tensor                 as torch._scaled_mm
    torch.ops.gemmtune.grouped_mm(Tensor mat_a, Tensor mat_b, Tensor? offs=None, Tensor? bias=None,
                                  ScalarType? out_dtype=None, str epilogue="none") -> Tensor
                                                                                      as torch._grouped_mm
    torch.ops.gemmtune.grouped_mm_masked(Tensor a, Tensor b, Tensor counts, ScalarType? out_dtype=None,
                                         str epilogue="none") -> Tensor               masked groups (G, M_max, K)
    torch.ops.gemmtune.scaled_grouped_mm(Tensor mat_a, Tensor mat_b, Tensor scale_a, Tensor scale_b,
                                         Tensor? offs=None, Tensor? bias=None, Tensor? scale_result=None,
                                         ScalarType? out_dtype=None, bool use_fast_accum=False,
                                         str epilogue="none") -> Tensor               as torch._scaled_grouped_mm

``use_fast_accum`` is the problem's fp8 accumulation mode (``Problem.fp8_accum``): False (torch's default) is served
only by kernels that promote into fp32 at least every 128 K, True only by kernels that accumulate K in the tensor
core; block scaling promotes by definition and takes False only.

The ops are defined with ``torch.library.Library`` (define + impl), not ``torch.library.custom_op``: custom_op's
wrapper adds Python layers to every call (on a CPU mock of the launch, a call through custom_op cost about twice
the dispatcher time of define + impl), and these ops are on the hot path. Each has
a fake implementation (torch.compile, export, FakeTensorMode, meta tensors) and an AutocastCUDA rule that casts
float32 inputs to the autocast dtype, as F.linear's would be. mm, bmm and linear without an epilogue have a backward
(through torch.matmul); the other ops refuse a backward with a clear error.

``gemmtune.torch.ops.mm/bmm/linear/scaled_mm`` call the same implementation directly when nothing needs the
dispatcher (no tracing or compiling, no autograd, no autocast, no dispatch or function modes, plain tensors), and go
through ``torch.ops.gemmtune.*`` otherwise.
"""
from __future__ import annotations

import torch
from torch import Tensor

from .._errors import InvalidInputError
from . import _dispatch, _native_ops

_NS = "gemmtune"
_lib = torch.library.Library(_NS, "DEF")
_lib.define("mm(Tensor a, Tensor b) -> Tensor")
_lib.define("bmm(Tensor a, Tensor b) -> Tensor")
_lib.define('linear(Tensor x, Tensor weight, Tensor? bias=None, str epilogue="none", Tensor? residual=None) '
            "-> Tensor")
_lib.define("scaled_mm(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias=None, "
            "Tensor? scale_result=None, ScalarType? out_dtype=None, bool use_fast_accum=False) -> Tensor")


# -- the implementations (every shape, dtype and argument rule is the library's: _dispatch.build) ----------------


def _mm(a: Tensor, b: Tensor) -> Tensor:
    return _dispatch.gemm(a, b, op="gemmtune.mm", kind="mm")


def _bmm(a: Tensor, b: Tensor) -> Tensor:
    return _dispatch.gemm(a, b, op="gemmtune.bmm", kind="bmm")


def _linear(x: Tensor, weight: Tensor, bias=None, epilogue: str = "none", residual=None) -> Tensor:
    return _dispatch.gemm(x, weight, bias=bias, residual=residual, epilogue=epilogue, op="gemmtune.linear",
                          kind="linear")


def _fp8_accum(use_fast_accum: bool) -> str:
    # torch's use_fast_accum is the problem's accumulation mode: only kernels of that mode serve the call.
    return "fast" if use_fast_accum else "exact"


def _scaled_mm(a: Tensor, b: Tensor, scale_a: Tensor, scale_b: Tensor, bias=None, scale_result=None,
               out_dtype=None, use_fast_accum: bool = False) -> Tensor:
    return _dispatch.gemm(a, b, bias=bias, scale_a=scale_a, scale_b=scale_b, scale_d=scale_result,
                          out_dtype=out_dtype, op="gemmtune.scaled_mm", kind="scaled_mm",
                          fp8_accum=_fp8_accum(use_fast_accum))


# With the C++ hot path (_native_ops) the CUDA kernels of mm, bmm and linear are its: a call whose selection it holds
# launches from C++, any other goes to the Python implementation, registered as the op's _py_ twin (same schema).
if _native_ops.load():
    for _name, _fn, _schema in (("mm", _mm, "(Tensor a, Tensor b) -> Tensor"),
                                ("bmm", _bmm, "(Tensor a, Tensor b) -> Tensor"),
                                ("linear", _linear, '(Tensor x, Tensor weight, Tensor? bias=None, str epilogue="none", '
                                 "Tensor? residual=None) -> Tensor")):
        _lib.define("_py_" + _name + _schema)
        _lib.impl("_py_" + _name, _fn, "CUDA")
    torch.ops.gemmtune._native_enable()
else:
    _lib.impl("mm", _mm, "CUDA")
    _lib.impl("bmm", _bmm, "CUDA")
    _lib.impl("linear", _linear, "CUDA")
_lib.impl("scaled_mm", _scaled_mm, "CUDA")


def cpu_kernel(name, *args, **kwargs):
    """What a gemmtune op does with CPU tensors: refuse them. (A test that runs compiled graphs on CPU replaces this
    function with a reference.)"""
    raise InvalidInputError(f"gemmtune.{name}: the inputs are CPU tensors; gemmtune runs on CUDA tensors: move "
                            "them to the GPU (.cuda())")


def _cpu_entry(name):
    def entry(*args, **kwargs):
        return cpu_kernel(name, *args, **kwargs)
    return entry


for _name in ("mm", "bmm", "linear", "scaled_mm"):
    _lib.impl(_name, _cpu_entry(_name), "CPU")


# -- fake (meta) implementations ---------------------------------------------------------------------------------


def _fake(kind, op, a, b, **kw):
    """The output a call would allocate; the fakes refuse what the launch would, so a compiled graph fails at trace
    time."""
    return _dispatch.fake_out(a, _dispatch.build(op, a, b, kind=kind, fake=True, **kw), {"a": a, "b": b})


@torch.library.register_fake(f"{_NS}::mm", lib=_lib)
def _mm_fake(a, b):
    return _fake("mm", "gemmtune.mm", a, b)


@torch.library.register_fake(f"{_NS}::bmm", lib=_lib)
def _bmm_fake(a, b):
    return _fake("bmm", "gemmtune.bmm", a, b)


@torch.library.register_fake(f"{_NS}::linear", lib=_lib)
def _linear_fake(x, weight, bias=None, epilogue="none", residual=None):
    return _fake("linear", "gemmtune.linear", x, weight, bias=bias, epilogue=epilogue, residual=residual)


@torch.library.register_fake(f"{_NS}::scaled_mm", lib=_lib)
def _scaled_mm_fake(a, b, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None, use_fast_accum=False):
    return _fake("scaled_mm", "gemmtune.scaled_mm", a, b, scale_a=scale_a, scale_b=scale_b, bias=bias,
                 scale_d=scale_result, out_dtype=out_dtype, fp8_accum=_fp8_accum(use_fast_accum))


# The _py_ twins trace as the ops do: a call that needs a gradient reaches the twin from the op's Autograd kernel, also
# when AOTAutograd traces a compiled training graph.
if _native_ops.loaded:
    for _name, _fake_fn in (("mm", _mm_fake), ("bmm", _bmm_fake), ("linear", _linear_fake)):
        torch.library.register_fake(f"{_NS}::_py_{_name}", _fake_fn, lib=_lib)


# -- autocast ----------------------------------------------------------------------------------------------------

_AUTOCAST_KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU) | torch._C.DispatchKeySet(
    torch._C.DispatchKey.AutocastCUDA)


def _autocast(opname):
    def kernel(*args):
        dt = torch.get_autocast_dtype("cuda")

        def cast(t):
            if isinstance(t, Tensor) and t.is_floating_point() and t.dtype == torch.float32 and t.is_cuda:
                return t.to(dt)
            return t
        with torch._C._ExcludeDispatchKeyGuard(_AUTOCAST_KEYS):
            return getattr(torch.ops.gemmtune, opname)(*[cast(t) for t in args])
    return kernel


for _name in ("mm", "bmm", "linear"):
    _lib.impl(_name, _autocast(_name), "AutocastCUDA")


# -- autograd ----------------------------------------------------------------------------------------------------


def _setup_mm(ctx, inputs, output):
    ctx.save_for_backward(*inputs[:2])


def _mm_backward(ctx, grad):
    a, b = ctx.saved_tensors
    ga = grad @ b.mT.to(grad.dtype) if ctx.needs_input_grad[0] else None
    gb = a.mT.to(grad.dtype) @ grad if ctx.needs_input_grad[1] else None
    return ga, gb


def _setup_linear(ctx, inputs, output):
    x, weight, bias, epilogue, residual = inputs
    ctx.epilogue = epilogue
    ctx.has_bias = bias is not None
    ctx.save_for_backward(x, weight)


def _bias_only(epilogue: str) -> bool:
    """Whether a chain adds at most a bias, whose gradient needs no pre-activation output (which a fused op never
    stores)."""
    ops = "".join(epilogue.split()).lower().split(",")
    return all(op.split(":")[0] in ("bias", "bias_col", "none", "") for op in ops)


def _linear_backward(ctx, grad):
    if not _bias_only(ctx.epilogue):
        raise NotImplementedError(
            f"gemmtune.linear with epilogue {ctx.epilogue!r} has no backward: use it for inference (torch.no_grad()), "
            "or F.linear and the activation in torch for training")
    x, weight = ctx.saved_tensors
    g2 = grad.reshape(-1, grad.shape[-1])
    gx = (g2 @ weight.to(grad.dtype)).view(x.shape) if ctx.needs_input_grad[0] else None
    gw = g2.t() @ x.reshape(-1, x.shape[-1]).to(grad.dtype) if ctx.needs_input_grad[1] else None
    gb = g2.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
    return gx, gw, gb, None, None


def _scaled_mm_backward(ctx, *grads):
    raise NotImplementedError("gemmtune.scaled_mm has no backward (neither has torch._scaled_mm): use it for "
                              "inference")


_AFTER_AUTOGRAD = torch._C._after_autograd_keyset
_below_autograd = torch._C._AutoDispatchBelowAutograd
_any_requires_grad = torch._C._any_requires_grad


def _register_autograd(opname, setup, backward, lib=_lib):
    """The Autograd kernel: with no input needing a gradient it goes straight below autograd (the common inference
    call: about half the host time of torch.library.register_autograd's kernel on a CPU mock); otherwise an
    autograd.Function records the backward."""
    op = getattr(getattr(torch.ops, lib.ns), opname).default
    # The dispatcher leaves trailing arguments at their defaults out of a Python kernel's arguments.
    defaults = tuple(a.default_value if a.has_default_value() else None for a in op._schema.arguments)

    class Fn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            keyset = args[-1]
            with _below_autograd():
                out = op.redispatch(keyset & _AFTER_AUTOGRAD, *args[:-1])
            args = args[:-1]
            setup(ctx, (*args, *defaults[len(args):]), out)
            return out

        @staticmethod
        def backward(ctx, grad):
            return (*backward(ctx, grad), None)

    Fn.__name__ = Fn.__qualname__ = f"gemmtune_{opname}_autograd"

    def kernel(keyset, *args):
        if _grad_enabled() and _any_requires_grad(*args):
            return Fn.apply(*args, keyset)
        with _below_autograd():
            return op.redispatch(keyset & _AFTER_AUTOGRAD, *args)

    lib.impl(opname, kernel, "Autograd", with_keyset=True)


_grad_enabled = torch.is_grad_enabled
# With the C++ hot path its Autograd kernels go straight below autograd when no gradient is needed (no Python on an
# inference call) and call the _py_ twin otherwise, which records the backward here.
_twin = "_py_" if _native_ops.loaded else ""
_register_autograd(_twin + "mm", _setup_mm, _mm_backward)
_register_autograd(_twin + "bmm", _setup_mm, _mm_backward)
_register_autograd(_twin + "linear", _setup_linear, _linear_backward)
_register_autograd("scaled_mm", lambda ctx, inputs, output: None, _scaled_mm_backward)


# -- the plain functions -----------------------------------------------------------------------------------------

_is_compiling = torch.compiler.is_compiling
_autocast_on = torch._C._is_any_autocast_enabled
_dispatch_modes = torch._C._len_torch_dispatch_stack
_function_modes = torch._C._is_torch_function_mode_enabled
_functorch = torch._C._are_functorch_transforms_active
_PLAIN = (Tensor, torch.nn.Parameter)  # subclasses (FakeTensor, DTensor, ...) go through the dispatcher


def _direct(*ts) -> bool:
    """Whether a call can skip the dispatcher: eager, nothing to record for autograd, no autocast, no modes, plain
    tensors."""
    if _is_compiling() or _autocast_on() or _dispatch_modes() or _function_modes() or _functorch() or \
            not ts[0].is_cuda:
        return False
    g = _grad_enabled()
    for t in ts:
        if t is not None and (type(t) not in _PLAIN or (g and t.requires_grad)):
            return False
    return True


def mm(a: Tensor, b: Tensor) -> Tensor:
    """a @ b for 2-D a (M, K) and b (K, N), as torch.mm."""
    if not _native_ops.loaded and _direct(a, b):
        return _mm(a, b)
    return torch.ops.gemmtune.mm(a, b)


def bmm(a: Tensor, b: Tensor) -> Tensor:
    """Batched a @ b for 3-D a (B, M, K) and b (B, K, N), as torch.bmm (an expanded, stride-0 batch is read as is)."""
    if not _native_ops.loaded and _direct(a, b):
        return _bmm(a, b)
    return torch.ops.gemmtune.bmm(a, b)


def linear(x: Tensor, weight: Tensor, bias=None, epilogue: str = "none", residual=None) -> Tensor:
    """epilogue(x @ weight.T (+ bias)) for x (..., K) and weight (N, K) as nn.Linear's. `epilogue` is a gemmtune
    chain ("gelu_tanh", "silu_glu", "bias,relu", "residual", ...); a given bias is added first unless the chain names
    it; a GLU halves the output's last dim; a residual has the output's shape."""
    if not _native_ops.loaded and _direct(x, weight, bias, residual):
        return _linear(x, weight, bias, epilogue, residual)
    return torch.ops.gemmtune.linear(x, weight, bias, epilogue, residual)


def scaled_mm(a: Tensor, b: Tensor, scale_a: Tensor, scale_b: Tensor, bias=None, scale_result=None, out_dtype=None,
              use_fast_accum: bool = False) -> Tensor:
    """As torch._scaled_mm: fp8 a (M, K) and b (K, N) with fp32 scales, tensor-wise (one element each), row-wise
    ((M, 1) and (1, N)) or block-wise ((M, ceil(K/128)) and (ceil(K/128), ceil(N/128)))."""
    if _direct(a, b, scale_a, scale_b, bias, scale_result):
        return _scaled_mm(a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum)
    return torch.ops.gemmtune.scaled_mm(a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum)


# -- grouped GEMMs (mixture-of-experts) ---------------------------------------------------------------------------
#
# Three forms, each one Problem (include/gemmtune/problem.h, "Grouped GEMMs"): contiguous (mat_a (M, K) with groups of
# consecutive rows ending at offs, int32 (G,) on the device; mat_b (G, K, N): torch._grouped_mm's 2-D x 3-D form),
# masked (a (G, M_max, K), b (G, K, N), counts int32 (G,) valid rows per group: DeepGEMM's layout) and batched (3-D x
# 3-D without offs). b is usually the expert weights (G, N, K) seen through .transpose(-2, -1): read without a copy.
# The output is allocated as torch._grouped_mm allocates it (row-major, its pitch padded to 16 bytes); rows that
# belong to no group are not written. The epilogue chain applies to each group's output; its one tensor is a bias
# shared by every group. A contiguous call's selection serves every token count of its M bucket (Problem::key()).

# torch._grouped_mm's arguments keep their places; the epilogue chain comes last.
_lib.define("grouped_mm(Tensor mat_a, Tensor mat_b, Tensor? offs=None, Tensor? bias=None, ScalarType? out_dtype=None, "
            'str epilogue="none") -> Tensor')
_lib.define('grouped_mm_masked(Tensor a, Tensor b, Tensor counts, ScalarType? out_dtype=None, str epilogue="none") '
            "-> Tensor")
_lib.define("scaled_grouped_mm(Tensor mat_a, Tensor mat_b, Tensor scale_a, Tensor scale_b, Tensor? offs=None, "
            "Tensor? bias=None, Tensor? scale_result=None, ScalarType? out_dtype=None, bool use_fast_accum=False, "
            'str epilogue="none") -> Tensor')
_GROUPED = ("grouped_mm", "grouped_mm_masked", "scaled_grouped_mm")


def _grouped_mm(mat_a: Tensor, mat_b: Tensor, offs=None, bias=None, out_dtype=None, epilogue: str = "none") -> Tensor:
    return _dispatch.grouped(mat_a, mat_b, offs, bias, out_dtype, op="gemmtune.grouped_mm", epilogue=epilogue)


def _grouped_mm_masked(a: Tensor, b: Tensor, counts: Tensor, out_dtype=None, epilogue: str = "none") -> Tensor:
    return _dispatch.grouped(a, b, counts, None, out_dtype, kind="grouped_masked", op="gemmtune.grouped_mm_masked",
                             epilogue=epilogue)


def _scaled_grouped_mm(mat_a: Tensor, mat_b: Tensor, scale_a: Tensor, scale_b: Tensor, offs=None, bias=None,
                       scale_result=None, out_dtype=None, use_fast_accum: bool = False,
                       epilogue: str = "none") -> Tensor:
    return _dispatch.grouped(mat_a, mat_b, offs, bias, out_dtype, scale_a, scale_b, scale_result,
                             kind="scaled_grouped", op="gemmtune.scaled_grouped_mm", epilogue=epilogue,
                             fp8_accum=_fp8_accum(use_fast_accum))


_lib.impl("grouped_mm", _grouped_mm, "CUDA")
_lib.impl("grouped_mm_masked", _grouped_mm_masked, "CUDA")
_lib.impl("scaled_grouped_mm", _scaled_grouped_mm, "CUDA")
for _name in _GROUPED:
    _lib.impl(_name, _cpu_entry(_name), "CPU")


@torch.library.register_fake(f"{_NS}::grouped_mm", lib=_lib)
def _grouped_mm_fake(mat_a, mat_b, offs=None, bias=None, out_dtype=None, epilogue="none"):
    return _fake("grouped", "gemmtune.grouped_mm", mat_a, mat_b, offs=offs, bias=bias, out_dtype=out_dtype,
                 epilogue=epilogue)


@torch.library.register_fake(f"{_NS}::grouped_mm_masked", lib=_lib)
def _grouped_mm_masked_fake(a, b, counts, out_dtype=None, epilogue="none"):
    return _fake("grouped_masked", "gemmtune.grouped_mm_masked", a, b, offs=counts, out_dtype=out_dtype,
                 epilogue=epilogue)


@torch.library.register_fake(f"{_NS}::scaled_grouped_mm", lib=_lib)
def _scaled_grouped_mm_fake(mat_a, mat_b, scale_a, scale_b, offs=None, bias=None, scale_result=None, out_dtype=None,
                            use_fast_accum=False, epilogue="none"):
    return _fake("scaled_grouped", "gemmtune.scaled_grouped_mm", mat_a, mat_b, scale_a=scale_a, scale_b=scale_b,
                 offs=offs, bias=bias, scale_d=scale_result, out_dtype=out_dtype, epilogue=epilogue,
                 fp8_accum=_fp8_accum(use_fast_accum))


for _name in ("grouped_mm", "grouped_mm_masked"):
    _lib.impl(_name, _autocast(_name), "AutocastCUDA")


def _setup_grouped(ctx, inputs, output):
    mat_a, mat_b, offs, bias, out_dtype, epilogue = inputs
    ctx.has_bias = bias is not None
    ctx.epilogue = epilogue
    ctx.save_for_backward(mat_a, mat_b, offs)


def _grouped_mm_backward(ctx, grad):
    """The gradients through torch's own grouped GEMMs: dA_g = dY_g B_g^T (the same contiguous form) and
    dB_g = A_g^T dY_g (the K-grouped form gemmtune does not compute). A chain beyond the bias has none (as linear's):
    its gradient would need the pre-activation output, which the fused op never stores."""
    if not _bias_only(ctx.epilogue):
        raise NotImplementedError(
            f"gemmtune.grouped_mm with epilogue {ctx.epilogue!r} has no backward: use it for inference "
            "(torch.no_grad()), or gemmtune.grouped_mm without an epilogue and the activation in torch for training")
    a, b, offs = ctx.saved_tensors
    grad = grad.to(a.dtype)
    ga = gb = gbias = None
    if offs is None:  # the batched form
        if ctx.needs_input_grad[0]:
            ga = torch.bmm(grad, b.transpose(-2, -1))
        if ctx.needs_input_grad[1]:
            gb = torch.bmm(a.transpose(-2, -1), grad)
        if ctx.has_bias and ctx.needs_input_grad[3]:
            gbias = grad.sum((0, 1))
        return ga, gb, None, gbias, None, None
    g16 = _pitch16(grad)
    if ctx.needs_input_grad[0]:
        # Rows past offs[-1] belong to no group: their gradient is 0 (torch leaves them undefined).
        ga = torch._grouped_mm(g16, _pitch16(b.transpose(-2, -1)), offs)
        ga = ga.masked_fill(_unrouted(offs, a.shape[0])[:, None], 0)
    if ctx.needs_input_grad[1]:
        gb = torch._grouped_mm(_pitch16(a.t()), g16, offs)
    if ctx.has_bias and ctx.needs_input_grad[3]:
        gbias = grad.masked_fill(_unrouted(offs, grad.shape[0])[:, None], 0).sum(0)
    return ga, gb, None, gbias, None, None


def _pitch16(t):
    """t itself when torch's grouped GEMMs take its strides (a unit stride and a 16-byte pitch), else a row-major
    copy with its pitch padded to 16 bytes."""
    q = max(1, 16 // t.element_size())
    s0, s1 = t.stride(-2), t.stride(-1)
    if (s1 == 1 and s0 % q == 0 and s0 >= t.shape[-1]) or (s0 == 1 and s1 % q == 0 and s1 >= t.shape[-2]):
        return t
    cols = t.shape[-1]
    return t.new_empty(tuple(t.shape[:-1]) + (-(-cols // q) * q,))[..., :cols].copy_(t)


def _unrouted(offs, rows):
    """A (rows,) bool mask of the rows at or past offs[-1], without a host sync."""
    return torch.arange(rows, device=offs.device) >= offs[-1].to(torch.int64)


def _grouped_masked_backward(ctx, *grads):
    raise NotImplementedError("gemmtune.grouped_mm_masked has no backward: use it for inference (torch.no_grad()), "
                              "or gemmtune.grouped_mm / torch._grouped_mm in training")


def _scaled_grouped_backward(ctx, *grads):
    raise NotImplementedError("gemmtune.scaled_grouped_mm has no backward (neither has torch._scaled_grouped_mm): "
                              "use it for inference")


_register_autograd("grouped_mm", _setup_grouped, _grouped_mm_backward)
_register_autograd("grouped_mm_masked", lambda ctx, inputs, output: None, _grouped_masked_backward)
_register_autograd("scaled_grouped_mm", lambda ctx, inputs, output: None, _scaled_grouped_backward)


def grouped_mm(mat_a: Tensor, mat_b: Tensor, offs=None, bias=None, out_dtype=None, epilogue: str = "none") -> Tensor:
    """As torch._grouped_mm: mat_a (total_M, K) with groups of consecutive rows ending at offs (int32 (G,),
    cumulative, on the GPU) and mat_b (G, K, N), typically expert weights (G, N, K).transpose(-2, -1); or 3-D
    mat_a (G, M, K) and mat_b (G, K, N) without offs (a batched GEMM). bias: (N,) shared by every group. Output
    rows past offs[-1] are not written (undefined). `epilogue` is a gemmtune chain applied to every group
    ("silu_glu", "gelu_tanh", "bias,relu", ...): a given bias is added first unless the chain names it; a GLU halves
    the output's columns."""
    if _direct(mat_a, mat_b, offs, bias):
        return _grouped_mm(mat_a, mat_b, offs, bias, out_dtype, epilogue)
    return torch.ops.gemmtune.grouped_mm(mat_a, mat_b, offs, bias, out_dtype, epilogue)


def grouped_mm_masked(a: Tensor, b: Tensor, counts: Tensor, out_dtype=None, epilogue: str = "none") -> Tensor:
    """Masked groups (DeepGEMM's layout, one shape for CUDA graphs): a (G, M_max, K), b (G, K, N), counts int32
    (G,) on the GPU; group g computes rows [0, counts[g]) of out[g]. The other rows of the (G, M_max, N) output are
    not written (undefined). `epilogue`: a chain as grouped_mm's, without a bias (this op takes none)."""
    if _direct(a, b, counts):
        return _grouped_mm_masked(a, b, counts, out_dtype, epilogue)
    return torch.ops.gemmtune.grouped_mm_masked(a, b, counts, out_dtype, epilogue)


def scaled_grouped_mm(mat_a: Tensor, mat_b: Tensor, scale_a: Tensor, scale_b: Tensor, offs=None, bias=None,
                      scale_result=None, out_dtype=None, use_fast_accum: bool = False,
                      epilogue: str = "none") -> Tensor:
    """As torch._scaled_grouped_mm: fp8 mat_a (total_M, K) row-major and mat_b (G, K, N) column-major with offs,
    or 3-D mat_a (G, M, K) without. Row-wise scales: scale_a (total_M,) (3-D: (G, M)) and scale_b (G, N), float32.
    Block-wise (1x128 A, 128x128 B per group): scale_a (total_M, ceil(K/128)) (3-D: (G, M, ceil(K/128))) and
    scale_b (G, ceil(K/128), ceil(N/128)). Output bfloat16 unless out_dtype says otherwise. `epilogue`: a chain as
    grouped_mm's, applied to the dequantized result."""
    if _direct(mat_a, mat_b, scale_a, scale_b, offs, bias, scale_result):
        return _scaled_grouped_mm(mat_a, mat_b, scale_a, scale_b, offs, bias, scale_result, out_dtype,
                                  use_fast_accum, epilogue)
    return torch.ops.gemmtune.scaled_grouped_mm(mat_a, mat_b, scale_a, scale_b, offs, bias, scale_result, out_dtype,
                                                use_fast_accum, epilogue)


__all__ = ["mm", "bmm", "linear", "scaled_mm", "grouped_mm", "grouped_mm_masked", "scaled_grouped_mm"]
