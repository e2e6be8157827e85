"""torch.compile integration: gemmtune as one more timed GEMM choice, and a pass that fuses matmul + pointwise.

    import gemmtune.torch as gt
    gt.enable()                                    # choices=True, fuse=False (enable(fuse=True) adds the pass)
    y = torch.compile(model, mode="max-autotune-no-cudagraphs")(x)
    gt.stats()                                     # choices offered / refused, fusions made

Everything that touches Inductor internals is in this module, because they move between torch releases. Each
mechanism is checked when `enable()` runs; if something it needs is missing, `enable()` warns once naming it and
that mechanism stays off, so torch.compile behaves as plain torch. The internals used (torch 2.11):

* ``torch._inductor.choices.InductorChoices.get_template_configs`` and ``config.inductor_choices_class``: every GEMM
  lowering (``tuned_mm``, ``tuned_addmm``, ``tuned_bmm``, ``tuned_scaled_mm``) asks ``V.choices`` for its list of
  choices. A subclass that appends one gemmtune choice to that list is the extension point Inductor documents for
  out-of-tree heuristics, needs no patching of the lowerings, and puts gemmtune in the same benchmark as ATen,
  Triton and CUTLASS, so ``autotune_select_algorithm`` keeps whichever is fastest. The class is also set as the
  current thread's handler (``V.set_choices_handler``) because the handler is created lazily once per thread.
* ``select_algorithm.get_algorithm_selector_cache().add_preprocessing_fn``: the grouped lowerings
  (``tuned_grouped_mm``, ``tuned_scaled_grouped_mm``) build their list without ``V.choices``; a preprocessing
  function sees every list before it is timed and adds gemmtune's grouped choice to a list that holds ATen's.
* ``torch._inductor.select_algorithm.ExternKernelChoice``: the gemmtune choice is an extern kernel
  ``f(*inputs, out=..., **kw)``; generated code calls it as ``extern_kernels.gemmtune_<op>(...)``. It is the Python
  function that calls ``gemmtune.torch._dispatch.gemm``, or, with the ops' C++ hot path, an operator whose CUDA
  kernel launches that function's selection from C++. The problem is tuned when the choice is created (with example
  tensors of the IR nodes' sizes and strides), so Inductor's benchmark times the tuned kernel and not the tuning.
* ``torch._inductor.config.post_grad_custom_post_pass`` with a ``custom_graph_pass.CustomGraphPass`` (a ``uuid()``
  so the FX graph cache stays on): the fusion pass runs on the post-grad ATen graph, where activations are already
  decomposed (silu is ``x / (1 + exp(-x))`` in fp32 between two dtype casts). Rather than match one decomposition
  per activation and torch release, the pass takes the pointwise region that hangs off a matmul's output and
  identifies it by evaluating it on sample points against relu, gelu (tanh, erf), silu and sigmoid.

What the pass fuses into ``torch.ops.gemmtune.linear``: mm / addmm (and the reshapes around a 3-D linear), then a
bias add, activations, one GLU over the two halves of the output (``act(gate) * up`` with gate the first half, from
``chunk``/``split`` or two slices), and a residual add of a tensor of the output's shape. It rewrites only when every
inner value has a single user, the dtypes are bf16/f16, and the library plans the fused call without a refusal or a
copy.
A plain matmul (+ bias) is left to the autotuner, where the gemmtune choice competes.

Under ``cpp_wrapper`` / AOTInductor the choice (mm and bmm, with the C++ hot path only) is a fallback kernel of the
functional operator ``gemmtune::mm`` / ``bmm``, which generated C++ calls through the dispatcher.

Limits: with ``autotune_in_subproc`` its benchmark fails in the subprocess (Inductor then keeps another choice);
shapes must be static. ``stats()`` counts choices offered and refused (with reasons) and fusions made.
"""
from __future__ import annotations

import math
import operator
import threading
import warnings
from typing import Any, Optional

import torch

from . import _dispatch  # the launch path; looked up per call so tests can stand a reference in for gemm
from . import _native_ops, ops  # noqa: F401  (ops: the operators the choices call)
from .modules import _ACTIVATIONS

__all__ = ["enable", "disable", "enabled", "stats", "reset_stats"]

# Devices the choice and the fusion are offered for. The tests add "cpu" to exercise the mechanism with a reference
# implementation of _dispatch.gemm; the real ops run on CUDA only.
_CHOICE_DEVICES = ("cuda",)
_FUSE_DEVICES = ("cuda",)
# Keep only the gemmtune choice where it is offered (to see gemmtune's kernels in generated code when debugging).
_FORCE = False

_lock = threading.RLock()
_state: dict = {"choices": False, "fuse": False, "prior_choices_class": None, "prior_pass": None,
                "choices_class": None, "pass": None, "pass_cls": None}
_warned: set = set()
_stats: dict = {}


def reset_stats() -> None:
    _stats.clear()
    _stats.update(choices_offered=0, choices_refused=0, fusions=0, by_op={}, fused_epilogues={}, refusals=[])


reset_stats()


def stats() -> dict:
    """Counters since the last reset_stats(): gemmtune choices offered to Inductor's autotuner (by op), refused (with
    the last few reasons), and fusions made by the pass (by epilogue chain)."""
    s = dict(_stats)
    s["by_op"] = dict(s["by_op"])
    s["fused_epilogues"] = dict(s["fused_epilogues"])
    s["refusals"] = list(s["refusals"])
    return s


def _refuse(op: str, why: str) -> None:
    _stats["choices_refused"] += 1
    _stats["refusals"].append(f"{op}: {why}")
    del _stats["refusals"][:-20]


def _warn_once(msg: str) -> None:
    if msg not in _warned:
        _warned.add(msg)
        warnings.warn("gemmtune.torch.inductor: " + msg, RuntimeWarning, stacklevel=3)


def enabled() -> dict:
    """Which mechanisms are on: {'choices': bool, 'fuse': bool}."""
    return {"choices": _state["choices"], "fuse": _state["fuse"]}


# ---------------------------------------------------------------------------------------------------------------
# Problems from shapes, strides and dtypes (IR nodes and FX fake values alike)
# ---------------------------------------------------------------------------------------------------------------

def _ints(xs) -> Optional[list]:
    """Static ints, or None when any is symbolic."""
    out = []
    for x in xs:
        try:
            out.append(int(x))
        except (TypeError, ValueError):
            return None
    return out


def _meta(size, stride, offset, dtype) -> dict:
    """What the library reads of a tensor (_dispatch._meta) from an IR node's layout."""
    return {"shape": list(size), "strides": list(stride), "dtype": str(dtype),
            "align": (offset * dtype.itemsize) & 15 or 16}


# ---------------------------------------------------------------------------------------------------------------
# The extern kernels: what generated code calls. Each takes Inductor's inputs in Inductor's order, plus out=.
# ---------------------------------------------------------------------------------------------------------------

def gemmtune_mm(a, b, *, out):
    return _dispatch.gemm(a, b, out=out)


def gemmtune_bmm(a, b, *, out):
    return _dispatch.gemm(a, b, out=out)


def gemmtune_addmm(inp, a, b, *, alpha=1.0, beta=1.0, mode="c", out):
    # inp is addmm's input expanded to (M, N): a stride-0 row is a per-column bias, a stride-0 column a per-row bias.
    if mode == "bias":
        return _dispatch.gemm(a, b, out=out, epilogue="bias", bias=inp[0], alpha=alpha)
    if mode == "bias_row":
        return _dispatch.gemm(a, b, out=out, epilogue="bias_row", bias=inp[:, 0], alpha=alpha)
    return _dispatch.gemm(a, b, out=out, c=inp, alpha=alpha, beta=beta)


def gemmtune_scaled_mm(a, b, scale_a, scale_b, bias=None, *, out_dtype=None, use_fast_accum=False, scaling="tensor",
                       out):
    # torch._scaled_mm's scales, whose shapes say the scaling (the library checks it is the one planned).
    return _dispatch.gemm(a, b, out=out, scale_a=scale_a, scale_b=scale_b, bias=bias, scaling=scaling,
                          out_dtype=out_dtype, op="gemmtune.scaled_mm", kind="scaled_mm",
                          fp8_accum="fast" if use_fast_accum else "exact")


def gemmtune_grouped_mm(a, b, offs=None, *, out_dtype=None):
    # torch._grouped_mm's inputs as Inductor passes them (no bias); returns the new output.
    return ops._grouped_mm(a, b, offs, None, out_dtype)


def gemmtune_scaled_grouped_mm(a, b, scale_a, scale_b, offs=None, *, out_dtype=None, use_fast_accum=False):
    return ops._scaled_grouped_mm(a, b, scale_a, scale_b, offs, None, None, out_dtype, use_fast_accum)


_KERNELS = {"mm": gemmtune_mm, "addmm": gemmtune_addmm, "bmm": gemmtune_bmm, "scaled_mm": gemmtune_scaled_mm,
            "grouped_mm": gemmtune_grouped_mm, "scaled_grouped_mm": gemmtune_scaled_grouped_mm}
_ALLOC = ("grouped_mm", "scaled_grouped_mm")  # kernels that return their output (no out=)


def _native_kernels() -> dict:
    """With the ops' C++ hot path (_native_ops): op -> an operator generated code calls instead of the Python
    function, whose CUDA kernel launches a selection the Python function made from C++ (the Python function itself,
    registered as the _py_ twin, on a miss). Its CPU kernel is the Python function (the tests' reference gemm)."""
    if not _native_ops.load():
        return {}
    ops = torch.ops.gemmtune
    if hasattr(ops, "inductor_mm"):  # this module was reloaded: the operators stay registered
        return {"mm": ops.inductor_mm.default, "bmm": ops.inductor_mm.default, "addmm": ops.inductor_addmm.default}
    lib = torch.library.Library("gemmtune", "FRAGMENT")
    for name, fn, schema in (
            ("inductor_mm", gemmtune_mm, "(Tensor a, Tensor b, *, Tensor(a!) out) -> ()"),
            ("inductor_addmm", gemmtune_addmm, '(Tensor inp, Tensor a, Tensor b, *, float alpha=1.0, float beta=1.0, '
             'str mode="c", Tensor(a!) out) -> ()')):
        def impl(*args, _fn=fn, **kw) -> None:
            _fn(*args, **kw)
        lib.define(name + schema)
        lib.define("_py_" + name + schema)
        lib.impl("_py_" + name, impl, "CUDA")
        lib.impl(name, impl, "CPU")
    torch.ops.gemmtune._native_enable_inductor()
    _libs.append(lib)
    return {"mm": ops.inductor_mm.default, "bmm": ops.inductor_mm.default, "addmm": ops.inductor_addmm.default}


_libs: list = []  # the Library objects of the ops above (their registrations last as long as these do)
_NATIVE = _native_kernels()
_extern: dict = {}  # op -> ExternKernelChoice; registered once per process (Inductor refuses duplicate names)


# Under the C++ wrapper and AOTInductor the choice is a fallback kernel of the functional operator (generated C++ calls
# it through the dispatcher: aoti_torch_call_dispatcher, or AOTInductor's proxy executor), whose CUDA kernel is the C++
# hot path's. A packaged model needs `import gemmtune.torch` where it loads: a call the table has not seen yet goes
# to the Python path, which takes the selection from gemmtune's result cache (or tunes) and fills the table.
_DISPATCHED = {"mm": torch.ops.gemmtune.mm.default, "bmm": torch.ops.gemmtune.bmm.default} if _NATIVE else {}
_dispatched: dict = {}


def _dispatched_choice(op: str):
    if op not in _dispatched:
        from torch._inductor.select_algorithm import ExternKernelChoice, extern_kernels
        name = f"gemmtune_{op}_dispatched"
        if hasattr(extern_kernels, name):
            delattr(extern_kernels, name)
        _dispatched[op] = ExternKernelChoice(_DISPATCHED[op], None, name=name, has_out_variant=False,
                                             op_overload=_DISPATCHED[op], use_fallback_kernel=True)
    return _dispatched[op]


def _extern_choice(op: str):
    if op not in _extern:
        from torch._inductor.select_algorithm import ExternKernelChoice, extern_kernels
        name = "gemmtune_" + op
        if hasattr(extern_kernels, name):  # this module was reloaded: take the name over
            delattr(extern_kernels, name)
        _extern[op] = ExternKernelChoice(_NATIVE.get(op, _KERNELS[op]), None, name=name,
                                         has_out_variant=op not in _ALLOC)
    return _extern[op]


# ---------------------------------------------------------------------------------------------------------------
# Mechanism 1: the choice
# ---------------------------------------------------------------------------------------------------------------

_OPS = ("mm", "addmm", "bmm", "scaled_mm")


def _node_meta(node):
    """(size, stride, offset, dtype, device) of an IR node with a static layout, else None."""
    layout = node.get_layout()
    size, stride, off = _ints(layout.size), _ints(layout.stride), _ints([layout.offset])
    if size is None or stride is None or off is None:
        return None
    return size, stride, off[0], layout.dtype, layout.device


def _plan(op: str, nodes, layout, kwargs_in: dict):
    """(kwargs for the kernel, Problem) for gemmtune on these IR nodes, or a string saying why not."""
    metas = [_node_meta(n) for n in nodes]
    if any(m is None for m in metas):
        return "symbolic shapes or strides"
    out, out_stride = _ints(layout.size), _ints(layout.stride)
    if out is None or out_stride is None:
        return "symbolic output shape"
    if layout.device.type not in _CHOICE_DEVICES:
        return f"device {layout.device.type}"
    kwargs: dict = {}
    call: dict = {}
    tensors = {"out": _meta(out, out_stride, int(layout.offset), layout.dtype)}
    if op in ("mm", "bmm"):
        a, b = metas
        kind = "gemm"
    elif op == "addmm":
        inp, a, b = metas
        isz, ist, ioff, idt, _ = inp
        alpha, beta = float(kwargs_in.get("alpha", 1)), float(kwargs_in.get("beta", 1))
        if ist[0] == 0 and ist[1] == 1 and beta == 1.0 and idt == layout.dtype:
            mode, call = "bias", {"epilogue": "bias"}
            tensors["bias"] = _meta([isz[1]], [ist[1]], ioff, idt)
        elif ist[1] == 0 and ist[0] == 1 and beta == 1.0 and idt == layout.dtype:
            mode, call = "bias_row", {"epilogue": "bias_row"}
            tensors["bias"] = _meta([isz[0]], [ist[0]], ioff, idt)
        else:
            mode, call = "c", {"beta": beta}
            tensors["c"] = _meta(*inp[:4])
        call["alpha"] = alpha
        kind, kwargs = "gemm", {"alpha": alpha, "beta": beta, "mode": mode}
    else:  # scaled_mm
        a, b = metas[:2]
        tensors.update(scale_a=_meta(*metas[2][:4]), scale_b=_meta(*metas[3][:4]))
        if len(metas) > 4:
            tensors["bias"] = _meta(*metas[4][:4])
        fast = bool(kwargs_in.get("use_fast_accum"))
        kind, call = "scaled_mm", {"out_dtype": layout.dtype, "fp8_accum": "fast" if fast else "exact"}
        kwargs = {"out_dtype": kwargs_in.get("out_dtype"), "use_fast_accum": fast}
    if op != "scaled_mm" and (a[3] != b[3] or layout.dtype != a[3]):
        return "mixed dtypes"
    tensors.update(a=_meta(*a[:4]), b=_meta(*b[:4]))
    try:
        plan = _dispatch.plan_of(f"gemmtune.{op}", kind, tensors, **call)
    except Exception as e:  # noqa: BLE001 - the library's refusal (or its absence) is the reason not to offer
        return str(e)
    if plan.empty:
        return "empty output"
    if plan.copies:
        return f"{', '.join(_dispatch._ARGS[i] for i, _, _ in plan.copies)} would be copied on every call"
    if op == "scaled_mm":
        kwargs["scaling"] = plan.problem.scaling
    return kwargs, plan.problem


def _example(size, stride, offset, dtype, device):
    need = 1 + sum((s - 1) * st for s, st in zip(size, stride)) if all(size) else 0
    base = torch.empty(offset + need, dtype=torch.float32, device=device)
    if dtype.is_floating_point:
        base.normal_(0, 1)
    else:
        base.zero_()
    return base.to(dtype).as_strided(size, stride, offset)


def _tune(op: str, nodes, layout, kwargs: dict) -> None:
    """Runs the kernel once on example tensors of the nodes' sizes and strides: _dispatch.gemm tunes on the miss and
    keeps the selection, so Inductor's benchmark of the choice finds it in the in-process dict."""
    metas = [_node_meta(n) for n in nodes]
    args = [_example(*m) for m in metas]
    if op == "scaled_mm":
        args[2] = torch.ones_like(args[2])
        args[3] = torch.ones_like(args[3])
    out = _example(_ints(layout.size), _ints(layout.stride), int(layout.offset), layout.dtype, layout.device)
    _KERNELS[op](*args, out=out, **kwargs)


# Without CUDA graphs a compiled graph launches every kernel from Python, and where the gemmtune kernel is a Python
# function (ops without the C++ hot path: scaled_mm, or no libgemmtune_torch.so) it costs ~5 us of host time a call on
# a fast host, ~20 us on a slow one, while Inductor's benchmark of a choice counts GPU time only. Below this estimated
# GPU time (the problem's FLOPs at 700 TFLOP/s or its bytes at 3 TB/s, whichever is longer) the host cost outweighs
# what a faster kernel can gain, and on a Llama-3-8B decode step of 32 tokens the gemmtune choices it won made the
# step slower: the choice is not offered there. With CUDA graphs the host cost is gone and every size is offered, and
# so it is for the ops the C++ hot path serves (an operator call like ATen's extern mm).
MIN_GPU_US = 40.0


def _estimated_us(a_size, b_size, itemsize: int) -> Optional[float]:
    """A lower bound of a GEMM's GPU time in microseconds from its operands' sizes (A (..., M, K), B (..., K, N): the
    leading dims batches or groups), or None when one is unknown."""
    if a_size is None or b_size is None or len(a_size) < 2 or len(b_size) < 2:
        return None
    k, n = a_size[-1], b_size[-1]
    rows = math.prod(a_size[:-1])  # every batch's or group's rows
    el = max(1, itemsize)
    bytes_ = el * (rows * k + math.prod(b_size[:-2]) * k * n) + 2 * rows * n
    return max(2.0 * rows * n * k / 700e12, bytes_ / 3e12) * 1e6


def _too_small(op: str, a_size, b_size, itemsize: int) -> bool:
    """Refuses (and counts) a choice whose kernel is a Python function for a GEMM under MIN_GPU_US without CUDA
    graphs."""
    from torch._inductor import config
    if MIN_GPU_US <= 0 or config.triton.cudagraphs:
        return False
    est = _estimated_us(a_size, b_size, itemsize)
    if est is None or est >= MIN_GPU_US:
        return False
    _refuse(op, f"too small without CUDA graphs (~{est:.0f} us of GPU time, under MIN_GPU_US={MIN_GPU_US:g}: "
                "the Python call's host cost outweighs the gain)")
    return True


def _cpp_wrapper() -> bool:
    """Whether the graph being lowered gets a C++ wrapper (cpp_wrapper=True or AOTInductor)."""
    from torch._inductor import config
    from torch._inductor.virtualized import V
    graph = V.graph
    return bool(config.cpp_wrapper or getattr(graph, "cpp_wrapper", False) or getattr(graph, "aot_mode", False))


def _offered(op: str, choice):
    _stats["choices_offered"] += 1
    _stats["by_op"][op] = _stats["by_op"].get(op, 0) + 1
    return choice


def _offer(op: str, kernel_inputs, kwarg_overrides=None) -> Optional[Any]:
    """A bound gemmtune ChoiceCaller for this lowering, or None (and the refusal counted)."""
    from torch._inductor import config
    if not (config.max_autotune or config.max_autotune_gemm):
        return None
    cpp = _cpp_wrapper()
    if cpp and (op not in _DISPATCHED or not _NATIVE):
        _refuse(op, "cpp wrapper / AOTInductor: only mm and bmm, with the C++ hot path (generated C++ calls the "
                    "operator gemmtune::mm / bmm through the dispatcher)")
        return None
    nodes = list(kernel_inputs.nodes())
    a_node, b_node = nodes[-2:] if op != "scaled_mm" else nodes[:2]
    if op not in _NATIVE and _too_small(op, _ints(a_node.get_size()), _ints(b_node.get_size()),
                                        b_node.get_dtype().itemsize):
        return None
    layout = kernel_inputs.output_layout(flexible=False)
    scalars = dict(getattr(kernel_inputs, "_scalars", None) or {})
    if op == "scaled_mm":
        scalars.update(out_dtype=layout.dtype)
        for ov in (kwarg_overrides or {}).values():  # use_fast_accum reaches the ATen choice only this way
            if "use_fast_accum" in ov:
                scalars["use_fast_accum"] = ov["use_fast_accum"]
    plan = _plan(op, nodes, layout, scalars)
    if isinstance(plan, str):
        _refuse(op, plan)
        return None
    kwargs, _ = plan
    try:
        _tune(op, nodes, layout, kwargs)
        if cpp:  # the functional operator allocates its output: it must be the layout Inductor planned
            got = _DISPATCHED[op](*[_example(*_node_meta(n)) for n in nodes])
            if list(got.stride()) != _ints(layout.stride):
                _refuse(op, f"cpp wrapper / AOTInductor: gemmtune's output strides {list(got.stride())} are not "
                            f"Inductor's {_ints(layout.stride)}")
                return None
    except Exception as e:  # a problem gemmtune refuses or fails to tune is simply not offered
        _refuse(op, f"tuning failed: {type(e).__name__}: {e}")
        return None
    return _offered(op, (_dispatched_choice(op) if cpp else _extern_choice(op)).bind(nodes, layout, **kwargs))


# torch._grouped_mm and _scaled_grouped_mm: their lowering (torch/_inductor/kernel/mm_grouped.py) builds its list
# without asking V.choices, so the gemmtune choice joins it in a preprocessing function of the algorithm selector
# (select_algorithm.add_preprocessing_fn), which sees every list before it is timed: a list holding ATen's grouped
# choice is a grouped GEMM's, and its inputs and layout are the problem's.
_GROUPED_ATEN = {"_grouped_mm": "grouped_mm", "_scaled_grouped_mm": "scaled_grouped_mm"}


def _uniform_offs(like, groups: int, rows: int):
    """Group ends splitting `rows` rows evenly over `groups` groups (int32, on like's device): the routing gemmtune
    tunes a grouped problem with (its selection does not depend on the routing)."""
    ends = [(rows * (g + 1)) // groups for g in range(groups)]
    return torch.tensor(ends, dtype=torch.int32, device=like.device)


def _offer_grouped(op: str, aten_choice) -> Optional[Any]:
    if _cpp_wrapper():
        _refuse(op, "cpp wrapper / AOTInductor: the grouped choice is a Python function")
        return None
    nodes, layout, kw = list(aten_choice.input_nodes), aten_choice.layout, dict(aten_choice.kwargs)
    metas = [_node_meta(n) for n in nodes]
    out_size, out_stride = _ints(layout.size), _ints(layout.stride)
    if any(m is None for m in metas) or out_size is None or out_stride is None:
        _refuse(op, "symbolic shapes or strides")
        return None
    if layout.device.type not in _CHOICE_DEVICES:
        _refuse(op, f"device {layout.device.type}")
        return None
    a_dims, b_dims = len(metas[0][0]), len(metas[1][0])
    has_offs = len(nodes) == (3 if op == "grouped_mm" else 5)
    if not ((a_dims == 2 and b_dims == 3 and has_offs) or (a_dims == 3 and b_dims == 3 and not has_offs)):
        _refuse(op, f"{a_dims}-D x {b_dims}-D{' with offs' if has_offs else ''} (gemmtune groups rows: 2-D x 3-D "
                    "with offs, or 3-D x 3-D)")
        return None
    if _too_small(op, metas[0][0], metas[1][0], nodes[1].get_dtype().itemsize):
        return None
    try:
        args = [_example(*m) for m in metas]
        if has_offs:
            args[-1] = _uniform_offs(args[0], int(metas[1][0][0]), int(metas[0][0][0]))
        if op == "scaled_grouped_mm":
            args[2], args[3] = torch.ones_like(args[2]), torch.ones_like(args[3])
        got = _KERNELS[op](*args, **kw)  # tunes, and keeps the selection for Inductor's benchmark
        if list(got.shape) != out_size or list(got.stride()) != out_stride or got.dtype != layout.dtype:
            _refuse(op, f"gemmtune's output {list(got.shape)} strides {list(got.stride())} {got.dtype} is not "
                        f"Inductor's {out_size} {out_stride} {layout.dtype}")
            return None
    except Exception as e:  # noqa: BLE001 - a problem gemmtune refuses or fails to tune is not offered
        _refuse(op, f"tuning failed: {type(e).__name__}: {e}")
        return None
    return _offered(op, _extern_choice(op).bind(nodes, layout, **kw))


def _grouped_preprocess(choices: list) -> list:
    """The algorithm selector's preprocessing function: appends gemmtune's choice to a grouped GEMM's list."""
    if not _state["choices"]:
        return choices
    for c in choices:
        op = _GROUPED_ATEN.get(getattr(getattr(c, "choice", None), "name", None))
        if op is not None:
            try:
                g = _offer_grouped(op, c)
            except Exception as e:  # noqa: BLE001 - an internal that moved: no gemmtune choice, plain Inductor
                _warn_once(f"the gemmtune grouped choice is off for this compile ({type(e).__name__}: {e})")
                return choices
            if g is not None:
                return [g] if _FORCE else list(choices) + [g]
            return choices
    return choices


def _make_choices_class(base, name: str = "_GemmtuneChoices"):
    """InductorChoices (or the user's subclass) + one gemmtune choice appended to every GEMM lowering's list."""

    class _GemmtuneChoices(base):
        def get_template_configs(self, kernel_inputs, templates, op_name, kwarg_overrides=None):
            choices = super().get_template_configs(kernel_inputs, templates, op_name, kwarg_overrides)
            if op_name in _OPS and _state["choices"]:
                try:
                    c = _offer(op_name, kernel_inputs, kwarg_overrides)
                    if c is not None:
                        choices = [c] if _FORCE else list(choices) + [c]
                except Exception as e:  # an internal that moved: no gemmtune choice, plain Inductor
                    _warn_once(f"the gemmtune choice is off for this compile ({type(e).__name__}: {e})")
            return choices

    _GemmtuneChoices.__module__ = __name__
    _GemmtuneChoices.__name__ = _GemmtuneChoices.__qualname__ = name
    # Inductor hashes its config (this class included) into the FX graph cache key: pickled by reference.
    globals()[name] = _GemmtuneChoices
    return _GemmtuneChoices


def _enable_choices() -> bool:
    try:
        from torch._inductor import config
        from torch._inductor.choices import InductorChoices
        from torch._inductor.select_algorithm import ExternKernelChoice  # noqa: F401
        from torch._inductor.virtualized import V, _choices, threadlocal
        for owner, attr in ((config, "inductor_choices_class"), (config, "max_autotune"),
                            (InductorChoices, "get_template_configs"), (V, "set_choices_handler"),
                            (_choices, "_key")):
            if not hasattr(owner, attr):
                raise AttributeError(f"{getattr(owner, '__name__', owner)}.{attr}")
        from torch._inductor.select_algorithm import get_algorithm_selector_cache
        for op in _OPS + _ALLOC:
            _extern_choice(op)
        selector = get_algorithm_selector_cache()
        if _grouped_preprocess not in selector.preprocessing_fns:
            selector.add_preprocessing_fn(_grouped_preprocess)
    except Exception as e:
        _warn_once(f"the gemmtune autotuning choice is off: an Inductor internal it needs is missing ({e})")
        return False
    cls = _state["choices_class"]
    if cls is None or config.inductor_choices_class is not cls:
        prior = config.inductor_choices_class
        base = prior if isinstance(prior, type) and issubclass(prior, InductorChoices) else InductorChoices
        if prior is not None and base is InductorChoices:
            _warn_once("config.inductor_choices_class is not an InductorChoices subclass; gemmtune's replaces it "
                       "until disable()")
        cls = _make_choices_class(base)
        _state["prior_choices_class"] = prior
        _state["choices_class"] = cls
        config.inductor_choices_class = cls
    # This thread's handler was created before (lazily, from the config) or set by the user: keep its class and
    # state, with the gemmtune choice added.
    cur = getattr(threadlocal, _choices._key, None)
    if not isinstance(cur, (cls, _state.get("handler_cls") or ())):
        if cur is None or type(cur) in (InductorChoices, base):
            V.set_choices_handler(cls())
        elif isinstance(cur, InductorChoices):
            sub = _make_choices_class(type(cur), "_GemmtuneHandlerChoices")
            h = sub.__new__(sub)
            h.__dict__.update(vars(cur))
            _state["handler_cls"], _state["prior_handler"] = sub, cur
            V.set_choices_handler(h)
    _state["choices"] = True
    return True


def _disable_choices() -> None:
    _state["choices"] = False
    try:
        from torch._inductor.select_algorithm import get_algorithm_selector_cache
        fns = get_algorithm_selector_cache().preprocessing_fns
        if _grouped_preprocess in fns:
            fns.remove(_grouped_preprocess)
    except (ImportError, AttributeError):  # enable() warned already
        pass
    cls = _state["choices_class"]
    if cls is None:
        return
    from torch._inductor import config
    from torch._inductor.virtualized import _choices, threadlocal
    if config.inductor_choices_class is cls:
        config.inductor_choices_class = _state["prior_choices_class"]
    cur = getattr(threadlocal, _choices._key, None)
    if isinstance(cur, cls):
        delattr(threadlocal, _choices._key)  # the next use creates the configured handler again
    elif _state.get("handler_cls") and isinstance(cur, _state["handler_cls"]):
        setattr(threadlocal, _choices._key, _state["prior_handler"])
    _state["choices_class"] = None
    _state["handler_cls"] = _state["prior_handler"] = None


# ---------------------------------------------------------------------------------------------------------------
# Mechanism 2: the fusion pass
# ---------------------------------------------------------------------------------------------------------------

def _val(node):
    return node.meta.get("val") if hasattr(node, "meta") else None


def _is_pointwise(node) -> bool:
    if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
        return False
    if node.target is torch.ops.prims.convert_element_type.default:
        return True
    return torch.Tag.pointwise in node.target.tags


def _classify(v, sub: list, sink) -> Optional[str]:
    """Which activation the pointwise nodes `sub` (topological order, input v, output sink) compute, by evaluating
    them in float64 on sample points; dtype casts count as identity (gemmtune's epilogue math is fp32)."""
    x = torch.linspace(-8.0, 8.0, 257, dtype=torch.float64)
    env = {v: x}

    def arg(a):
        if isinstance(a, torch.fx.Node):
            return env[a]
        if isinstance(a, (list, tuple)):
            return type(a)(arg(t) for t in a)
        return a

    try:
        for n in sub:
            if n.target is torch.ops.prims.convert_element_type.default:
                env[n] = env[n.args[0]]
                continue
            kw = {k: arg(t) for k, t in n.kwargs.items() if k != "dtype"}
            env[n] = n.target(*arg(n.args), **kw)
        y = env[sink]
    except Exception:
        return None
    if not isinstance(y, torch.Tensor) or y.shape != x.shape:
        return None
    y = y.to(torch.float64)
    for name, f in _ACTIVATIONS.items():
        if torch.allclose(y, f(x), rtol=1e-5, atol=1e-6):
            return name
    return None


def _activation(v, order: dict, limit: int = 48):
    """(activation name, sink node) when the pointwise region hanging off v begins with an activation of v whose
    inner values have no other users, else None."""
    region, inset = [], set()
    frontier = sorted(v.users, key=order.__getitem__)
    while frontier and len(region) < limit:
        grown = False
        for u in frontier:
            if u in inset or not _is_pointwise(u):
                continue
            if all(i is v or i in inset for i in u.all_input_nodes):
                region.append(u)
                inset.add(u)
                grown = True
        if not grown:
            break
        frontier = sorted({w for n in region for w in n.users if w not in inset}, key=order.__getitem__)
    region.sort(key=order.__getitem__)
    vv = _val(v)
    for s in region:
        sub, stack = set(), [s]
        while stack:
            n = stack.pop()
            if n in sub:
                continue
            sub.add(n)
            stack.extend(i for i in n.all_input_nodes if i in inset)
        if any(u not in sub for u in v.users):
            continue
        if any(u not in sub for n in sub if n is not s for u in n.users):
            continue
        sv = _val(s)
        if sv is None or vv is None or sv.dtype != vv.dtype or tuple(sv.shape) != tuple(vv.shape):
            continue
        name = _classify(v, sorted(sub, key=order.__getitem__), s)
        if name is not None:
            return name, s
    return None


def _is_view(node) -> bool:
    aten = torch.ops.aten
    return node.op == "call_function" and node.target in (aten.view.default, aten.reshape.default,
                                                          aten._unsafe_view.default)


def _glu_halves(cur, order: dict):
    """(gate node, up node) when cur's only consumers split its last dim into two equal halves, else None."""
    aten = torch.ops.aten
    val = _val(cur)
    if val is None:
        return None
    nd, n = val.dim(), int(val.shape[-1])
    if n % 2:
        return None
    h = n // 2
    users = list(cur.users)

    def last(d):
        return d in (-1, nd - 1)

    if len(users) == 1 and users[0].op == "call_function":
        s = users[0]
        ok = False
        if s.target is aten.split.Tensor and s.args[1] == h:
            ok = last(s.args[2] if len(s.args) > 2 else s.kwargs.get("dim", 0))
        elif s.target is aten.split_with_sizes.default and list(s.args[1]) == [h, h]:
            ok = last(s.args[2] if len(s.args) > 2 else s.kwargs.get("dim", 0))
        if not ok or len(s.users) != 2:
            return None
        parts = {}
        for g in s.users:
            if g.target is not operator.getitem:
                return None
            parts[g.args[1]] = g
        if set(parts) != {0, 1}:
            return None
        return parts[0], parts[1]
    if len(users) == 2:
        parts = {}
        for s in users:
            if s.op != "call_function" or s.target is not aten.slice.Tensor:
                return None
            a = list(s.args) + [None] * (5 - len(s.args))
            dim, start, end, step = a[1] if a[1] is not None else 0, a[2] or 0, a[3], a[4] or 1
            if not last(dim) or step != 1:
                return None
            end = n if end is None else min(int(end), n)
            parts[(int(start), end)] = s
        if set(parts) != {(0, h), (h, n)}:
            return None
        return parts[(0, h)], parts[(h, n)]
    return None


class _Match:
    __slots__ = ("mm", "x", "b", "bias", "ops", "residual", "final", "glu", "linear")

    def __init__(self, mm, x, b, bias):
        self.mm, self.x, self.b, self.bias = mm, x, b, bias
        self.ops: list = ["bias"] if bias is not None else []
        self.residual = None
        self.final = mm
        self.glu = False
        self.linear = None


def _match(mm, order: dict) -> Optional[_Match]:
    """The longest fusable chain after an mm/addmm: views, a bias add, activations, one GLU, a residual add."""
    aten = torch.ops.aten
    val = _val(mm)
    if val is None or val.device.type not in _FUSE_DEVICES or val.dtype not in (torch.bfloat16, torch.float16):
        return None
    if mm.target is aten.addmm.default:
        if mm.kwargs.get("alpha", 1) != 1 or mm.kwargs.get("beta", 1) != 1:
            return None
        bias, x, b = mm.args[:3]
        bv = _val(bias)
        if bv is None or bv.dtype != val.dtype or tuple(bv.shape) not in ((val.shape[1],), (1, val.shape[1])):
            return None
    else:
        bias, (x, b) = None, mm.args[:2]
    xv, bv2 = _val(x), _val(b)
    if xv is None or bv2 is None or xv.dtype != val.dtype or bv2.dtype != val.dtype:
        return None
    m = _Match(mm, x, b, bias)
    cur = mm
    n_out = int(val.shape[1])
    while True:
        users = list(cur.users)
        if len(users) == 1:
            u = users[0]
            if _is_view(u) and _val(u) is not None and int(_val(u).shape[-1]) == n_out:
                cur = u
                continue
            if u.op == "call_function" and u.target is aten.add.Tensor and len(u.args) == 2 \
                    and u.kwargs.get("alpha", 1) == 1:
                other = u.args[1] if u.args[0] is cur else u.args[0]
                ov, cv, uv = _val(other), _val(cur), _val(u)
                if isinstance(other, torch.fx.Node) and other is not cur \
                        and all(t is not None for t in (ov, cv, uv)) \
                        and ov.dtype == cv.dtype == uv.dtype and tuple(uv.shape) == tuple(cv.shape):
                    if m.bias is None and not m.ops and tuple(ov.shape) in ((n_out,), (1, n_out)) and not m.glu:
                        m.bias, m.ops = other, ["bias"]
                        cur = u
                        continue
                    if m.residual is None and tuple(ov.shape) == tuple(cv.shape):
                        m.residual = other
                        m.ops.append("residual")
                        cur = u
                        continue
        act = _activation(cur, order)
        if act is not None:
            m.ops.append(act[0])
            cur = act[1]
            continue
        halves = None if (m.glu or m.residual is not None) else _glu_halves(cur, order)
        if halves is not None:
            gate, up = halves
            act = _activation(gate, order) if len(up.users) == 1 else None
            if act is not None:
                name, sink = act
                mul = next(iter(up.users))
                if len(sink.users) == 1 and next(iter(sink.users)) is mul and mul.target is aten.mul.Tensor \
                        and set(mul.args) == {sink, up} and _val(mul) is not None and _val(mul).dtype == val.dtype:
                    m.ops.append(name + "_glu")
                    m.glu = True
                    n_out //= 2
                    cur = mul
                    continue
        break
    m.final = cur
    if not [o for o in m.ops if o != "bias"]:
        return None  # a plain matmul (+ bias) is the autotuner's business
    return m


def _fusable(m: _Match) -> bool:
    """Whether the library plans the fused linear as it is (no refusal, no copy of an input). The residual reaches
    the op reshaped to the output's shape: it is planned as a packed matrix of D's shape."""
    xv, bv = _val(m.x), _val(m.b)
    if xv.dim() != 2 or bv.dim() != 2 or _ints(list(xv.shape) + list(bv.shape)) is None:
        return False
    metas = {"a": _dispatch._meta(xv, True), "b": _dispatch._meta(bv, True)}
    if m.bias is not None:
        metas["bias"] = _dispatch._meta(_val(m.bias), True)
    if m.residual is not None:
        n_out = int(bv.shape[1]) // (2 if m.glu else 1)
        metas["residual"] = {"shape": [int(xv.shape[0]), n_out], "strides": [n_out, 1],
                             "dtype": str(_val(m.residual).dtype)}
    try:
        plan = _dispatch.plan_of("gemmtune.linear", "gemm", metas, epilogue=",".join(m.ops))
    except Exception:  # noqa: BLE001 - refused: left as it is
        return False
    return not plan.empty and not plan.copies


def _fake_val(target, args):
    from torch._guards import detect_fake_mode
    vals = torch.utils._pytree.tree_map(lambda a: _val(a) if isinstance(a, torch.fx.Node) else a, list(args))
    mode = detect_fake_mode([v for v in torch.utils._pytree.tree_leaves(vals) if isinstance(v, torch.Tensor)])
    if mode is None:
        return target(*vals)
    with mode:
        return target(*vals)


def _rewrite(graph, m: _Match) -> None:
    made = []

    def add(target, args):
        with graph.inserting_before(m.final):
            node = graph.call_function(target, tuple(args))
        made.append(node)
        node.meta["val"] = _fake_val(target, args)
        return node

    try:
        _build(m, add)
    except Exception:
        for node in reversed(made):  # leave the graph as it was
            graph.erase_node(node)
        raise


def _build(m: _Match, add) -> None:
    aten = torch.ops.aten

    fv = _val(m.final)
    xv = _val(m.x)
    x = m.x
    # A 3-D linear reaches the matmul as view(x3, (M, K)): hand the op x3 when the output keeps x3's leading dims.
    if _is_view(x) and _val(x.args[0]) is not None:
        x3 = _val(x.args[0])
        if x3.dim() >= 2 and int(x3.shape[-1]) == int(xv.shape[1]) \
                and tuple(x3.shape[:-1]) == tuple(fv.shape[:-1]):
            x = x.args[0]
    b = m.b
    if b.op == "call_function" and b.target is aten.permute.default and list(b.args[1]) == [1, 0]:
        weight = b.args[0]
    else:
        weight = add(aten.permute.default, [b, [1, 0]])
    bias = m.bias
    if bias is not None and _val(bias).dim() == 2:
        bias = add(aten.reshape.default, [bias, [int(_val(bias).shape[-1])]])
    out_shape = list(_val(x).shape[:-1]) + [int(fv.shape[-1])]
    residual = m.residual
    if residual is not None and list(_val(residual).shape) != out_shape:
        residual = add(aten.reshape.default, [residual, out_shape])
    node = add(m.linear, [x, weight, bias, ",".join(m.ops), residual])
    if list(fv.shape) != out_shape:
        node = add(aten.reshape.default, [node, list(fv.shape)])
    m.final.replace_all_uses_with(node)


def _fuse(graph) -> int:
    """Rewrites every fusable chain in the post-grad graph into torch.ops.gemmtune.linear; returns how many."""
    aten = torch.ops.aten
    linear = getattr(getattr(torch.ops, "gemmtune", None), "linear", None)
    if linear is None:
        _warn_once("torch.ops.gemmtune.linear is not registered; the fusion pass does nothing")
        return 0
    linear = linear.default
    order = {n: i for i, n in enumerate(graph.nodes)}
    done = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in (aten.mm.default, aten.addmm.default):
            continue
        if node not in order or not node.users:
            continue
        try:
            m = _match(node, order)
            if m is None:
                continue
            if not _fusable(m):
                continue
        except Exception:
            continue
        m.linear = linear
        try:
            _rewrite(graph, m)
        except Exception as e:
            _warn_once(f"a fusion was skipped ({type(e).__name__}: {e})")
            continue
        done += 1
        epi = ",".join(m.ops)
        _stats["fusions"] += 1
        _stats["fused_epilogues"][epi] = _stats["fused_epilogues"].get(epi, 0) + 1
        order = {n: i for i, n in enumerate(graph.nodes)}
    if done:
        graph.eliminate_dead_code()
    return done


def _make_pass_class():
    from torch._inductor.custom_graph_pass import CustomGraphPass, get_hash_for_files

    class _FusionPass(CustomGraphPass):
        """gemmtune's post-grad pass, run after the pass that was installed before it (if any)."""

        def __init__(self, prior):
            self.prior = prior
            self.active = True

        def __call__(self, graph) -> None:
            if self.prior is not None:
                self.prior(graph)
            if not self.active:
                return
            try:
                _fuse(graph)
            except Exception as e:  # leave the graph to plain Inductor
                _warn_once(f"the fusion pass failed and was skipped ({type(e).__name__}: {e})")

        def uuid(self):
            prior = None
            if self.prior is not None:
                prior = self.prior.uuid() if hasattr(self.prior, "uuid") else None
                if prior is None:
                    return None  # an uncacheable prior pass keeps the graph uncacheable
            import gemmtune
            extra = f"{gemmtune.__version__}|{_FUSE_DEVICES}|{self.active}|{prior!r}"
            return get_hash_for_files((__file__,), extra).hex()

    _FusionPass.__module__ = __name__
    _FusionPass.__qualname__ = "_FusionPass"
    globals()["_FusionPass"] = _FusionPass
    _state["pass_cls"] = _FusionPass
    return _FusionPass


def _enable_fuse() -> bool:
    try:
        from torch._inductor import config
        if not hasattr(config, "post_grad_custom_post_pass"):
            raise AttributeError("torch._inductor.config.post_grad_custom_post_pass")
        for name in ("mm", "addmm", "split", "split_with_sizes", "slice", "permute", "reshape"):
            if not hasattr(torch.ops.aten, name):
                raise AttributeError(f"torch.ops.aten.{name}")
        cls = _state["pass_cls"] or _make_pass_class()
    except Exception as e:
        _warn_once(f"the fusion pass is off: an Inductor internal it needs is missing ({e})")
        return False
    cur = config.post_grad_custom_post_pass
    if isinstance(cur, cls):
        cur.active = True
    else:
        p = cls(cur)
        _state["pass"] = p
        config.post_grad_custom_post_pass = p
    _state["fuse"] = True
    return True


def _disable_fuse() -> None:
    _state["fuse"] = False
    p = _state["pass"]
    if p is None:
        return
    from torch._inductor import config
    if config.post_grad_custom_post_pass is p:
        config.post_grad_custom_post_pass = p.prior
        _state["pass"] = None
    else:  # another pass was chained on top of ours: keep the chain, make ours a no-op
        p.active = False


# ---------------------------------------------------------------------------------------------------------------

def enable(fuse: bool = False, choices: bool = True) -> dict:
    """Turns the torch.compile integration on (idempotent). `choices`: Inductor's max-autotune also times gemmtune
    for aten mm / addmm / bmm / _scaled_mm / _grouped_mm / _scaled_grouped_mm. `fuse`: a post-grad pass rewrites matmul + bias / activation / GLU /
    residual chains into torch.ops.gemmtune.linear. Returns enabled(); a mechanism whose Inductor internals are
    missing stays off with a warning, and torch.compile behaves as plain torch.

    The pass is off by default: a rewritten chain is gemmtune's fused kernel without a comparison, where Inductor
    would otherwise fuse the same pointwise ops into its own kernels, and on a Llama-3-8B-shaped decoder that was
    slower (docs/PERFORMANCE.md, "PyTorch")."""
    with _lock:
        if choices:
            _enable_choices()
        else:
            _disable_choices()
        if fuse:
            _enable_fuse()
        else:
            _disable_fuse()
        return enabled()


def disable() -> None:
    """Turns both mechanisms off and restores what Inductor's config held before enable() (idempotent)."""
    with _lock:
        _disable_choices()
        _disable_fuse()
