"""Tensors -> the library's plan of a call, the in-process selection cache, the launch on the current stream.

`gemm()` (plain ops) and `grouped()` (grouped ops) are the launch paths of every op. A call builds a key from what
changes the plan (the op kind, shapes, strides, dtypes, pointer alignments, devices, the epilogue, alpha/beta,
scaling) and looks it up in one dict; only a miss asks the library for the plan (gt_call_plan: the Problem, its
refusal with the reason, the output's shape and strides, which inputs need a copy, the key a selection may be shared
by) and tunes, or loads the winner chosen for the same Problem key (another token count of a grouped call's bucket).
The hit path allocates nothing but the output (through torch's caching allocator), never synchronizes, calls the
library once (the launch) and launches on ``torch.cuda.current_stream()``.

Every rule (which problem the tensors make, what is refused, the fp8 scaling their scales' shapes say, the epilogue
chain's tensors) is the library's (src/capi/call_plan.h); this module only reads tensors' metadata and applies the
plan: copies into the strides it names, the output it allocates.
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Callable, Optional

import torch

from .. import _native
from . import _native_ops
from .._api import Problem, Tuner, problem_from_dict
from .._errors import Error, InvalidInputError

_TORCH = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32, "e4m3": torch.float8_e4m3fn,
          "e5m2": torch.float8_e5m2}
# The tensors of a call, in the order the launch reads them.
_ARGS = ("a", "b", "c", "bias", "residual", "row_scale", "col_scale", "scale_a", "scale_b", "scale_d", "amax",
         "offs")
_INDEX = {name: i for i, name in enumerate(_ARGS)}

# -- options -----------------------------------------------------------------------------------------------------

_DEFAULTS = {"tune": "auto", "backends": None, "top_k": 8, "progress": None, "isolation": "process",
             "use_cache": True}
_opts = dict(_DEFAULTS)


def options() -> dict:
    """The options the dispatcher tunes with (see set_options)."""
    return dict(_opts)


def set_options(**kw) -> None:
    """tune: "auto" (tune a problem on its first call, the default) or "never" (raise gemmtune.Error naming the
    untuned problem); backends, top_k, progress, isolation, use_cache: passed to gemmtune.Tuner. Selections made
    before stay (clear_selections() drops them)."""
    bad = sorted(set(kw) - set(_DEFAULTS))
    if bad:
        raise InvalidInputError(f"gemmtune.torch.set_options: unknown option(s) {bad}; known: {sorted(_DEFAULTS)}")
    if "tune" in kw and kw["tune"] not in ("auto", "never"):
        raise InvalidInputError(f"gemmtune.torch.set_options: tune must be 'auto' or 'never' (got {kw['tune']!r})")
    _opts.update(kw)


# -- the plan of a call (the library's) --------------------------------------------------------------------------


def _size(v) -> int:
    """A size or stride as the library reads it. A traced graph's symbolic one counts as the value it was traced with
    (read without a guard: the output keeps the symbol, Plan.out_from); a data-dependent one, which has no such value,
    as 8192."""
    if not isinstance(v, torch.SymInt):
        return v
    # Imported here: the module costs ~0.5 s to import, and a tracing process has it loaded already.
    import torch.fx.experimental.symbolic_shapes as symbolic
    hint = getattr(symbolic, "size_hint", None) or symbolic.hint_int  # hint_int before torch 2.11
    return hint(v, fallback=8192)


def _meta(t, fake: bool) -> dict:
    """What the library reads of a tensor. A fake or meta tensor has no address: it counts as 16-byte aligned."""
    return {"shape": [_size(n) for n in t.shape], "strides": [_size(n) for n in t.stride()], "dtype": str(t.dtype),
            "align": 16 if fake or t.device.type == "meta" else (t.data_ptr() & 15 or 16)}


@dataclass
class Plan:
    """The library's plan of one call (built on a miss and by the fake implementations; testable on CPU)."""

    empty: bool                   # the output has no element: nothing to launch
    out_shape: tuple
    out_strides: tuple
    out_dtype: torch.dtype
    out_direct: bool              # the given out is D as it is
    out_from: tuple = ()          # per output dim: the input dim it equals, (name, dim), or half of, (name, dim, 2)
    problem: Optional[Problem] = None
    problem_text: str = ""
    key: str = ""                 # Problem::key(): a selection for it serves every call of the same key
    epilogue: str = "none"
    copies: tuple = ()            # (index in _ARGS, shape, strides) of each input copied before the launch
    unused: tuple = ()            # indices in _ARGS of given tensors the launch passes as null

    def fix(self, **tensors) -> dict:
        """The call's tensors by name, with the plan's copies made."""
        ts = [tensors.get(name) for name in _ARGS]
        _apply(self.copies, ts)
        return dict(zip(_ARGS, ts))


def build(op, a, b, *, kind="gemm", fake=False, epilogue="none", alpha=1.0, beta=0.0, scaling=None, out_dtype=None,
          fp8_accum="exact", **tensors) -> Plan:
    """The Plan of one call of `kind` (src/capi/call_plan.h: mm, bmm, linear, scaled_mm, gemm, grouped,
    grouped_masked, scaled_grouped); raises InvalidInputError with the library's reason, naming `op`."""
    if not isinstance(epilogue, str):
        raise InvalidInputError(f"{op}: epilogue must be a str (a gemmtune chain such as 'silu_glu' or "
                                f"'bias,gelu_tanh'), got {type(epilogue).__name__}")
    metas = {name: _meta(t, fake) for name, t in {"a": a, "b": b, **tensors}.items() if t is not None}
    return plan_of(op, kind, metas, epilogue=epilogue, alpha=alpha, beta=beta, scaling=scaling, out_dtype=out_dtype,
                   fp8_accum=fp8_accum)


def plan_of(op, kind, metas: dict, epilogue="none", alpha=1.0, beta=0.0, scaling=None, out_dtype=None,
            fp8_accum="exact") -> Plan:
    """build() from the tensors' metadata ({name: {"shape", "strides", "dtype", "align"}}): for callers that have
    sizes and strides but no tensors (Inductor's IR nodes)."""
    call = {"op": op, "kind": kind, "epilogue": epilogue, "alpha": float(alpha), "beta": float(beta),
            "scaling": scaling, "fp8_accum": fp8_accum, "out_dtype": None if out_dtype is None else str(out_dtype),
            "tensors": metas}
    j = _native.call_json("gt_call_plan", json.dumps(call))
    out = j["out"]
    p = Plan(j["empty"], tuple(out["shape"]), tuple(out["strides"]), _TORCH[out["dtype"]], j["out_direct"],
             tuple(tuple(f) for f in out["from"]))
    if not p.empty:
        p.problem = problem_from_dict(j["problem"])
        p.problem_text, p.key, p.epilogue = j["str"], j["key"], j["epilogue"]
        p.copies = tuple((_INDEX[n], tuple(c["shape"]), tuple(c["strides"])) for n, c in j["copies"].items())
        p.unused = tuple(_INDEX[n] for n in j["unused"])
    return p


def fake_out(like, plan: Plan, tensors: Optional[dict] = None):
    """The (uninitialized) output tensor of a call, as the launch allocates it. Given the call's tensors by name, an
    output dim that is a symbolic input dim (a graph traced with dynamic shapes) is that symbol, and so are the
    strides that follow from it."""
    shape, strides = plan.out_shape, plan.out_strides
    if tensors:
        sym = tuple(n if tensors.get(f[0]) is None else tensors[f[0]].shape[f[1]] // (f[2] if len(f) > 2 else 1)
                    for f, n in zip(plan.out_from, shape))
        if any(isinstance(n, torch.SymInt) for n in sym):
            shape, strides = sym, _row_major_like(sym, plan.out_shape, plan.out_strides)
    return torch.empty_strided(shape, strides, dtype=plan.out_dtype, device=like.device)


def _row_major_like(sym, shape, strides):
    """The strides of `sym` when (shape, strides) is row-major with a pitch (the last dim's stride 1, the rows'
    pitch >= the row, the outer dims packed on it); otherwise `strides` as they are."""
    n = len(shape)
    if n < 2 or strides[-1] != 1 or any(strides[i] != strides[i + 1] * shape[i + 1] for i in range(n - 2)):
        return strides
    out = [1] * n
    if strides[-2] == shape[-1]:
        out[-2] = sym[-1]
    else:
        int(sym[-1])  # a padded pitch is that of this width only: the graph is specialized (guarded) on it
        out[-2] = strides[-2]
    for i in range(n - 3, -1, -1):
        out[i] = out[i + 1] * sym[i + 1]
    return tuple(out)


def _apply(copies, ts) -> None:
    for i, shape, strides in copies:
        t = ts[i]
        ts[i] = torch.empty_strided(shape, strides, dtype=t.dtype, device=t.device).copy_(t.reshape(shape))


# -- the selection cache -----------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Entry:
    """What a hit needs: the loaded Gemm, its run function and handle, the output, and the plan's copies."""

    gemm: object                 # gemmtune.Gemm (kept alive: it owns the handle)
    run: Optional[Callable]      # gt_gemm_run (plain problems); grouped ones launch through gemm.run_raw
    handle: int
    torch_device: torch.device
    out_shape: tuple
    out_strides: tuple
    out_dtype: torch.dtype
    out_direct: bool
    copies: tuple
    unused: tuple
    plain: bool                  # nothing to copy or drop: the short launch (plain ops: with no optional tensor)
    problem_str: str
    key: str


_sel: dict = {}
_retired: list = []
_lock = threading.Lock()
_tls = threading.local()


def selections() -> dict:
    """{problem str: candidate str} of every problem this process selected a GEMM for."""
    return {e.problem_str: str(e.gemm.candidate) for e in list(_sel.values())}


def clear_selections() -> None:
    """Forgets every selection (the next call of each problem selects again, from the result cache if enabled).
    The loaded kernels stay loaded: launches still in flight and CUDA graphs captured before may use them."""
    with _lock:
        _retired.extend(_sel.values())
        _sel.clear()
        _native_ops.clear()


def _m(t):
    return None if t is None else (t.shape, t.stride(), t.dtype, t.data_ptr() & 15, t.get_device())


def gemm(a, b, out=None, *, epilogue="none", bias=None, residual=None, row_scale=None, col_scale=None, c=None,
         alpha=1.0, beta=0.0, scale_a=None, scale_b=None, scale_d=None, amax=None, scaling=None, out_dtype=None,
         op="gemmtune.gemm", kind="gemm", fp8_accum="exact"):
    """D = epilogue(alpha * a @ b + beta * c), written to `out` (in place) or to a new tensor of dtype `out_dtype`
    (default: a's; bf16 for fp8 inputs). `kind` says how the library reads the tensors (src/capi/call_plan.h):
    "gemm" takes a (M, K) or (batch, M, K) and b (K, N) or (batch, K, N), the epilogue's tensors in gemmtune's chain
    grammar (a bias not named by the chain is added first) and fp8 scales as gemmtune's flat fp32 vectors (`scaling`
    inferred from their sizes when None); "linear" takes x (..., K) and the weight (N, K) as nn.Linear's; "mm",
    "bmm" and "scaled_mm" take torch.mm's, torch.bmm's and torch._scaled_mm's arguments. `fp8_accum` ("exact" or
    "fast": torch._scaled_mm's use_fast_accum) is how fp8 a and b accumulate."""
    dev = a.get_device()
    if dev >= 0 and dev != _current_device():
        # The library launches into the current context: make it a's device's for this call, as torch ops do.
        with torch.cuda.device(dev):
            return gemm(a, b, out, epilogue=epilogue, bias=bias, residual=residual, row_scale=row_scale,
                        col_scale=col_scale, c=c, alpha=alpha, beta=beta, scale_a=scale_a, scale_b=scale_b,
                        scale_d=scale_d, amax=amax, scaling=scaling, out_dtype=out_dtype, op=op, kind=kind,
                        fp8_accum=fp8_accum)
    pa, pb = a.data_ptr(), b.data_ptr()
    if out is None and c is None and bias is None and residual is None and row_scale is None and \
            col_scale is None and scale_a is None and scale_b is None and scale_d is None and amax is None:
        rest = None
    else:
        rest = (_m(out), _m(c), _m(bias), _m(residual), _m(row_scale), _m(col_scale), _m(scale_a), _m(scale_b),
                _m(scale_d), _m(amax))
    key = (a.shape, a.stride(), a.dtype, pa & 15, dev, b.shape, b.stride(), b.dtype, pb & 15, b.get_device(),
           epilogue, alpha, beta, scaling, out_dtype, kind, fp8_accum, rest)
    e = _sel.get(key)
    if e is None:
        e = _miss(key, op, a, dict(kind=kind, epilogue=epilogue, alpha=alpha, beta=beta, scaling=scaling,
                                   out_dtype=out_dtype, fp8_accum=fp8_accum),
                  dict(a=a, b=b, out=out, c=c, bias=bias, residual=residual, row_scale=row_scale, col_scale=col_scale,
                       scale_a=scale_a, scale_b=scale_b, scale_d=scale_d, amax=amax))
        if isinstance(e, Plan):  # an empty output: nothing to launch
            return out if out is not None else fake_out(a, e)
        if e.plain and _native_ops.loaded and _native_ops.serves(kind, rest, scaling, out_dtype, fp8_accum):
            # The ops' C++ kernel serves the next call of these tensors' metadata (the same key as here: kind, the
            # metadata of a, b, C, the bias and the output, the epilogue, alpha and beta; the others are None).
            _native_ops.remember(kind, e, a, b, epilogue, alpha, beta, c, bias, out)
    ready = getattr(_tls, "ready", None)
    if ready is None or dev not in ready:
        _bind_context(dev)
    if rest is None and e.plain:  # the plain GEMM: the common case, kept short
        d = torch.empty(e.out_shape, dtype=e.out_dtype, device=e.torch_device)
        st = e.run(e.handle, pa, pb, 0, d.data_ptr(), 0, 0, 0, 0, 0, 0, 0, 0, _raw_stream(dev))
        if st:
            _native.raise_for(st)
        return d
    return _launch(e, dev, out, [a, b, c, bias, residual, row_scale, col_scale, scale_a, scale_b, scale_d, amax, None])


def grouped(a, b, offs=None, bias=None, out_dtype=None, scale_a=None, scale_b=None, scale_d=None, *,
            kind="grouped", op="gemmtune.grouped_mm", epilogue="none", fp8_accum="exact"):
    """The launch of every grouped op (ops.py documents the forms): returns the new output tensor."""
    dev = a.get_device()
    if dev >= 0 and dev != _current_device():
        with torch.cuda.device(dev):
            return grouped(a, b, offs, bias, out_dtype, scale_a, scale_b, scale_d, kind=kind, op=op,
                           epilogue=epilogue, fp8_accum=fp8_accum)
    key = (a.shape, a.stride(), a.dtype, a.data_ptr() & 15, dev, b.shape, b.stride(), b.dtype, b.data_ptr() & 15,
           b.get_device(), epilogue, out_dtype, kind, fp8_accum, _m(offs), _m(bias), _m(scale_a), _m(scale_b),
           _m(scale_d))
    e = _sel.get(key)
    if e is None:
        e = _miss(key, op, a, dict(kind=kind, epilogue=epilogue, out_dtype=out_dtype, fp8_accum=fp8_accum),
                  dict(a=a, b=b, offs=offs, bias=bias, scale_a=scale_a, scale_b=scale_b, scale_d=scale_d))
        if isinstance(e, Plan):
            return fake_out(a, e)
    ready = getattr(_tls, "ready", None)
    if ready is None or dev not in ready:
        _bind_context(dev)
    if not e.plain:
        return _launch(e, dev, None, [a, b, None, bias, None, None, None, scale_a, scale_b, None, None, offs])
    d = torch.empty_strided(e.out_shape, e.out_strides, dtype=e.out_dtype, device=e.torch_device)
    e.gemm.run_raw(a.data_ptr(), b.data_ptr(), 0, d.data_ptr(), 0 if bias is None else bias.data_ptr(), 0, 0, 0,
                   0 if scale_a is None else scale_a.data_ptr(), 0 if scale_b is None else scale_b.data_ptr(), 0, 0,
                   _raw_stream(dev), group_rows=0 if offs is None else offs.data_ptr())
    return d


def _launch(e: _Entry, dev: int, out, ts: list):
    """The launch with the plan's copies made, the unused tensors dropped, into `out` or a new output."""
    if e.copies:
        _apply(e.copies, ts)
    for i in e.unused:
        ts[i] = None
    d = out if e.out_direct else torch.empty_strided(e.out_shape, e.out_strides, dtype=e.out_dtype,
                                                     device=e.torch_device)
    p = [0 if t is None else t.data_ptr() for t in ts]
    if e.run is None:
        e.gemm.run_raw(p[0], p[1], p[2], d.data_ptr(), *p[3:11], _raw_stream(dev), group_rows=p[11])
    else:
        st = e.run(e.handle, p[0], p[1], p[2], d.data_ptr(), *p[3:11], _raw_stream(dev))
        if st:
            _native.raise_for(st)
    if out is not None and d is not out:
        out.copy_(d)
        return out
    return d


def _current_device() -> int:
    return torch._C._cuda_getDevice()


try:
    _raw_stream = torch._C._cuda_getCurrentRawStream  # what Inductor's generated code calls: no Stream object
except AttributeError:  # pragma: no cover - a torch without it
    def _raw_stream(dev):
        return torch.cuda.current_stream(dev).cuda_stream


def _bind_context(dev: int) -> None:
    """Makes device `dev`'s primary context current on this thread, once per thread: the library launches with the
    driver API, which needs a current context, and a thread that has made no CUDA runtime call has none."""
    if dev >= 0:
        st = _native.lib().gt_use_device(dev)
        if st:
            _native.raise_for(st)
    ready = getattr(_tls, "ready", None)
    if ready is None:
        ready = _tls.ready = set()
    ready.add(dev)


# -- a miss: the plan, the tuning (or the winner of the same Problem key) ------------------------------------------


def _miss(key, op, a, call: dict, tensors: dict):
    check_devices(op, a, **{n: t for n, t in tensors.items() if n != "a"})
    plan = build(op, **call, **tensors)
    if plan.empty:
        return plan
    if torch.cuda.is_current_stream_capturing():
        raise Error(f"{op}: {plan.problem_text} has no selection yet and the current stream is capturing a CUDA "
                    "graph, where gemmtune cannot tune or load a kernel: run the op once with these shapes before "
                    "the capture")
    dev = a.get_device()
    with _lock:
        e = _sel.get(key)
        if e is not None:
            return e
        with torch.cuda.device(dev):
            _bind_context(dev)
            g = None
            # Another call of the same Problem key (a grouped call's other token count of the bucket): its winner,
            # loaded for this problem without tuning.
            chosen = next((x for x in _sel.values() if x.key == plan.key), None)
            if chosen is not None:
                try:
                    g = chosen.gemm if chosen.problem_str == plan.problem_text else \
                        Tuner.load(plan.problem, chosen.gemm.candidate)
                except Error:  # the winner does not take this problem: tune it as one of its own
                    g = None
            if g is None:
                if _opts["tune"] == "never":
                    raise Error(f"{op}: {plan.problem_text} is not tuned in this process and gemmtune.torch."
                                "set_options(tune='never') forbids tuning: tune it first (set_options(tune='auto') "
                                "and one call, or `gemmtune tune`)")
                g = Tuner(backends=_opts["backends"], top_k=_opts["top_k"], use_cache=_opts["use_cache"],
                          isolation=_opts["isolation"], progress=_opts["progress"]).select(plan.problem)
        grouped_problem = plan.problem.grouping != "none"
        e = _Entry(g, None if grouped_problem else g._run, None if grouped_problem else g._h, a.device,
                   plan.out_shape, plan.out_strides, plan.out_dtype, plan.out_direct, plan.copies, plan.unused,
                   not plan.copies and not plan.unused, plan.problem_text, plan.key)
        _sel[key] = e
        return e


def check_devices(op, a, **tensors) -> None:
    """Every tensor on one CUDA device, a's."""
    if a.device.type != "cuda":
        raise InvalidInputError(f"{op}: a is on {a.device}; gemmtune runs on CUDA tensors: move the inputs to the GPU "
                                "(.cuda())")
    for name, t in tensors.items():
        if t is not None and t.device != a.device:
            raise InvalidInputError(f"{op}: {name} is on {t.device} but a is on {a.device}: put every tensor of the "
                                    "call on one GPU")
