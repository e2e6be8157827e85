"""Tensors -> gemmtune Problem + pointers, the in-process selection cache, the launch on the current stream.

`gemm()` is the one launch path of every op. A call builds a key from what changes the Problem (shapes, strides,
dtypes, pointer alignments, devices, the epilogue, alpha/beta, scaling) and looks it up in a dict; only a miss builds
a Problem, checks it and tunes (or loads the remembered winner). The hit path allocates nothing but the output
(through torch's caching allocator), never synchronizes, and launches on ``torch.cuda.current_stream()``.

Inputs: `a` is (M, K) or (batch, M, K), `b` is the GEMM's B, (K, N) or (batch, K, N). A matrix whose last two dims
have no unit stride (or an fp8 matrix at an odd address) is copied (packed, row-major); every other view (row- or
column-major, sliced, batch-broadcast with a zero batch stride) is passed as it is.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Optional

import torch

from .. import _native
from .._api import Operand, Problem, Tuner
from .._errors import Error, InvalidInputError

_DTYPES = {torch.bfloat16: "bf16", torch.float16: "f16", torch.float32: "f32", torch.float8_e4m3fn: "e4m3",
           torch.float8_e5m2: "e5m2"}
_FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)
_INPUT_DTYPES = (torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.float8_e5m2)
_VECTOR_OPS = {"bias": "bias", "bias_col": "bias", "bias_row": "bias", "row_scale": "row_scale",
               "col_scale": "col_scale", "residual": "residual"}
_VECTOR_KIND = {"bias": "bias_col", "bias_col": "bias_col", "bias_row": "bias_row", "row_scale": "row_scale",
                "col_scale": "col_scale"}
_DTYPE_WORDS = ("bf16", "f16", "f32", "e4m3", "e5m2")

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


# -- the selection cache -----------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Entry:
    """What a hit needs: the loaded Gemm, its run function and handle, the output, and the input fixes."""

    gemm: object                 # gemmtune.Gemm (kept alive: it owns the handle)
    run: Callable
    handle: int
    device: int
    torch_device: torch.device
    out_shape: tuple
    out_dtype: torch.dtype
    fix: Optional[Callable]      # (a, b, c, bias, residual, row_scale, col_scale, scale_a, scale_b) -> same, copied
    out_direct: bool             # out given and usable as D as it is
    problem_str: str


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


def _m(t):
    return (t.shape, t.stride(), t.dtype, t.data_ptr() & 15, t.get_device())


def gemm(a, b, out=None, *, epilogue="none", bias=None, residual=None, row_scale=None, col_scale=None, c=None,
         alpha=1.0, beta=0.0, scale_a=None, scale_b=None, scale_d=None, amax=None, scaling=None, out_dtype=None,
         op="gemmtune.gemm", linear=False):
    """D = epilogue(alpha * a @ b + beta * c), written to `out` (in place) or to a new row-major tensor of dtype
    `out_dtype` (default: a's; bf16 for fp8 inputs). See the module doc for the shapes; the epilogue's tensors
    follow gemmtune's chain grammar (a bias not named by the chain is added first). fp8 scales are fp32 vectors in
    gemmtune's conventions (include/gemmtune/problem.h); `scaling` is inferred from their sizes when None.

    linear=True is nn.Linear's form, the one gemmtune.linear takes without building views on each call: `a` is
    x (..., K), `b` is the weight (N, K), the residual and the result are (..., N or N/2)."""
    dev = a.get_device()
    if dev >= 0 and dev != _current_device():
        # The library launches into the current context: make it a's device's for this call, as torch ops do.
        with torch.cuda.device(dev):
            return gemm(a, b, out, epilogue=epilogue, bias=bias, residual=residual, row_scale=row_scale,
                        col_scale=col_scale, c=c, alpha=alpha, beta=beta, scale_a=scale_a, scale_b=scale_b,
                        scale_d=scale_d, amax=amax, scaling=scaling, out_dtype=out_dtype, op=op, linear=linear)
    pa, pb = a.data_ptr(), b.data_ptr()
    if out is None and c is None and bias is None and residual is None and row_scale is None and \
            col_scale is None and scale_a is None and scale_b is None and scale_d is None and amax is None:
        rest = None
    else:
        rest = (None if out is None else _m(out), None if c is None else _m(c),
                None if bias is None else _m(bias), None if residual is None else _m(residual),
                None if row_scale is None else _m(row_scale), None if col_scale is None else _m(col_scale),
                None if scale_a is None else _m(scale_a), None if scale_b is None else _m(scale_b),
                None if scale_d is None else _m(scale_d), None if amax is None else _m(amax))
    key = (a.shape, a.stride(), a.dtype, pa & 15, dev, b.shape, b.stride(), b.dtype, pb & 15,
           b.get_device(), epilogue, alpha, beta, scaling, out_dtype, linear, rest)
    e = _sel.get(key)
    if e is None:
        e = _miss(key, op, a, b, out, c, bias, residual, row_scale, col_scale, scale_a, scale_b, scale_d, amax,
                  epilogue, alpha, beta, scaling, out_dtype, linear)
        if isinstance(e, tuple):  # an empty output: nothing to launch
            return out if out is not None else a.new_empty(e[0], dtype=e[1])
    ready = getattr(_tls, "ready", None)
    if ready is None or dev not in ready:
        _bind_context(dev)
    if rest is None and e.fix is None:  # the plain GEMM: the common case, kept short
        d = torch.empty(e.out_shape, dtype=e.out_dtype, device=e.torch_device)
        st = e.run(e.handle, pa, pb, 0, d.data_ptr(), 0, 0, 0, 0, 0, 0, 0, 0, _raw_stream(dev))
        if st:
            _native.raise_for(st)
        return d
    if e.fix is not None:
        a, b, c, bias, residual, row_scale, col_scale, scale_a, scale_b = e.fix(
            a, b, c, bias, residual, row_scale, col_scale, scale_a, scale_b)
        pa, pb = a.data_ptr(), b.data_ptr()
    d = out if e.out_direct else torch.empty(e.out_shape, dtype=e.out_dtype, device=e.torch_device)
    st = e.run(e.handle, pa, pb, 0 if c is None else c.data_ptr(), d.data_ptr(),
               0 if bias is None else bias.data_ptr(), 0 if residual is None else residual.data_ptr(),
               0 if row_scale is None else row_scale.data_ptr(), 0 if col_scale is None else col_scale.data_ptr(),
               0 if scale_a is None else scale_a.data_ptr(), 0 if scale_b is None else scale_b.data_ptr(),
               0 if scale_d is None else scale_d.data_ptr(), 0 if amax is None else amax.data_ptr(),
               _raw_stream(dev))
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


# -- a miss: the Problem, its check, the tuning ------------------------------------------------------------------


def _miss(key, op, a, b, out, c, bias, residual, row_scale, col_scale, scale_a, scale_b, scale_d, amax, epilogue,
          alpha, beta, scaling, out_dtype, linear):
    check_devices(op, a, b=b, out=out, c=c, bias=bias, residual=residual, row_scale=row_scale, col_scale=col_scale,
                  scale_a=scale_a, scale_b=scale_b, scale_d=scale_d, amax=amax)
    plan = build(op, a, b, out=out, c=c, bias=bias, residual=residual, row_scale=row_scale, col_scale=col_scale,
                 scale_a=scale_a, scale_b=scale_b, scale_d=scale_d, amax=amax, epilogue=epilogue, alpha=alpha,
                 beta=beta, scaling=scaling, out_dtype=out_dtype, linear=linear)
    if isinstance(plan, tuple):
        return plan
    dev = a.get_device()
    if torch.cuda.is_current_stream_capturing():
        raise Error(f"{op}: {plan.problem_text} has no selection yet and the current stream is capturing a CUDA "
                    "graph, where gemmtune cannot tune or load a kernel: run the op once with these shapes before "
                    "the capture")
    with _lock:
        e = _sel.get(key)
        if e is not None:
            return e
        if _opts["tune"] == "never":
            raise Error(f"{op}: {plan.problem_text} is not tuned in this process and gemmtune.torch.set_options("
                        "tune='never') forbids tuning: tune it first (set_options(tune='auto') and one call, or "
                        "`gemmtune tune`)")
        with torch.cuda.device(dev):
            _bind_context(dev)
            g = Tuner(backends=_opts["backends"], top_k=_opts["top_k"], use_cache=_opts["use_cache"],
                      isolation=_opts["isolation"], progress=_opts["progress"]).select(plan.problem)
        e = _Entry(g, g._run, g._h, dev, a.device, plan.out_shape, plan.out_dtype, plan.fix, plan.out_direct,
                   plan.problem_text)
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


@dataclass
class Plan:
    """A call's Problem and what the launch does around it (built on a miss; testable on CPU and meta tensors)."""

    problem: Problem
    problem_text: str
    out_shape: tuple
    out_dtype: torch.dtype
    fix: Optional[Callable]
    out_direct: bool
    epilogue: str


def layout_of(rows: int, cols: int, s0: int, s1: int, itemsize: int, batch: int = 1, bs: int = 0):
    """(layout, ld) of a rows x cols matrix with element strides (s0, s1), or None when it has no usable unit stride.
    The stride of a size-1 dim means nothing: it is normalized, and the ld of a single row (column) is padded to 16
    bytes when the batch stride leaves room, so a vector counts as aligned."""
    q = max(1, 16 // itemsize)

    def pad(n):
        p = -(-n // q) * q
        return p if batch <= 1 or bs == 0 or bs >= p else n

    row_ok = (cols == 1 or s1 == 1) and (rows == 1 or s0 >= max(cols, 1))
    col_ok = (rows == 1 or s0 == 1) and (cols == 1 or s1 >= max(rows, 1))
    if row_ok and (not col_ok or cols >= rows):
        return "row", (s0 if rows > 1 else pad(cols))
    if col_ok:
        return "col", (s1 if cols > 1 else pad(rows))
    return None


def _align(t) -> int:
    p = t.data_ptr()
    return 16 if p % 16 == 0 else (p & -p)


def _dtype_name(op, name, t, allowed) -> str:
    if t.dtype not in allowed:
        hint = ("cast it to torch.bfloat16 or torch.float16 (or run under torch.autocast('cuda'))"
                if t.dtype == torch.float32 else "use bfloat16, float16 or float8 (e4m3fn / e5m2) inputs")
        raise InvalidInputError(f"{op}: {name} has dtype {t.dtype}, which gemmtune does not take as a GEMM input: "
                                + hint)
    return _DTYPES[t.dtype]


def parse_chain(epilogue: str) -> list:
    """The chain as [(name, [params])], lower-cased and without blanks ('none' -> [])."""
    s = "".join(str(epilogue).split()).lower()
    if s in ("", "none"):
        return []
    ops = []
    for part in s.split(","):
        bits = part.split(":")
        ops.append((bits[0], bits[1:]))
    return ops


def has_glu(epilogue: str) -> bool:
    """Whether the chain ends in N/2 output columns (a gated linear unit)."""
    return any(n.endswith("_glu") or n in ("swiglu", "glu") for n, _ in parse_chain(epilogue))


def with_bias(epilogue: str) -> str:
    """The chain with a bias first unless it names one (bias, bias_col or bias_row)."""
    ops = parse_chain(epilogue)
    if any(n in ("bias", "bias_col", "bias_row") for n, _ in ops):
        return epilogue
    return "bias" if not ops else "bias," + str(epilogue)


def _annotate(op, epilogue, tensors) -> str:
    """The chain with each vector op's dtype made explicit from its tensor; a tensor the chain does not use, or an
    op without its tensor, is an error."""
    ops = parse_chain(epilogue)
    used = set()
    out = []
    for name, params in ops:
        arg = _VECTOR_OPS.get(name)
        if arg is None:
            out.append(":".join([name] + params))
            continue
        t = tensors.get(arg)
        if t is None:
            raise InvalidInputError(f"{op}: the epilogue {epilogue!r} has '{name}' but no {arg} tensor was given")
        used.add(arg)
        if t.dtype not in (torch.bfloat16, torch.float16, torch.float32):
            raise InvalidInputError(f"{op}: {arg} has dtype {t.dtype}; epilogue tensors are bfloat16, float16 or "
                                    "float32")
        want = _DTYPES[t.dtype]
        given = [p for p in params if p in _DTYPE_WORDS]
        if given and given[0] != want:
            raise InvalidInputError(f"{op}: the epilogue names '{name}:{given[0]}' but {arg} has dtype {t.dtype}: "
                                    "make them agree")
        if not given:
            params = [want] + params
        out.append(":".join([name] + params))
    for arg, t in tensors.items():
        if t is not None and arg not in used:
            raise InvalidInputError(f"{op}: {arg} was given but the epilogue {epilogue!r} has no op that reads it "
                                    f"(add '{arg}' to the chain)")
    return ",".join(out) if out else "none"


def _matrix(op, name, t, allowed_dims=(2, 3)):
    if t.dim() not in allowed_dims:
        raise InvalidInputError(f"{op}: {name} must be 2-D (rows, cols) or 3-D (batch, rows, cols), got shape "
                                f"{tuple(t.shape)}")


def _operand_of(op, name, t, batch, dtype):
    """(Operand, needs_copy) of a 2-D or 3-D matrix as the GEMM sees it."""
    rows, cols = t.shape[-2], t.shape[-1]
    s0, s1 = t.stride(-2), t.stride(-1)
    tb = t.shape[0] if t.dim() == 3 else 1
    bs = (t.stride(0) if tb > 1 else 0) if t.dim() == 3 else 0
    es = t.element_size()
    lay = layout_of(rows, cols, s0, s1, es, batch, bs)
    align = _align(t)
    if lay is None or align < max(2, es):
        # A packed copy: row-major, 16-byte aligned (a fresh allocation), each batch its own matrix.
        ld = cols if rows > 1 else layout_of(rows, cols, cols, 1, es, batch, rows * cols)[1]
        return Operand(dtype, "row", ld, (rows * cols if tb > 1 else 0), 16), True
    return Operand(dtype, lay[0], lay[1], bs, align), False


def _contig_fix(i):
    # A copy even of a contiguous tensor: one at a misaligned address is copied for the alignment.
    def f(args):
        args[i] = args[i].clone(memory_format=torch.contiguous_format)
    return f


def build(op, a, b, out=None, *, c=None, bias=None, residual=None, row_scale=None, col_scale=None, scale_a=None,
          scale_b=None, scale_d=None, amax=None, epilogue="none", alpha=1.0, beta=0.0, scaling=None, out_dtype=None,
          linear=False, names=("a", "b")):
    """The Plan of one call, or (shape, dtype) of its output when that is empty. Checks everything but the devices;
    raises InvalidInputError naming the argument, or with the library's check() message."""
    if linear:
        return _build_linear(op, a, b, out, c=c, bias=bias, residual=residual, row_scale=row_scale,
                             col_scale=col_scale, scale_a=scale_a, scale_b=scale_b, scale_d=scale_d, amax=amax,
                             epilogue=epilogue, alpha=alpha, beta=beta, scaling=scaling, out_dtype=out_dtype)
    na, nb = names
    _matrix(op, na, a)
    _matrix(op, nb, b)
    ta = _dtype_name(op, na, a, _INPUT_DTYPES)
    tb = _dtype_name(op, nb, b, _INPUT_DTYPES)
    M, K = a.shape[-2], a.shape[-1]
    K2, N = b.shape[-2], b.shape[-1]
    if K != K2:
        raise InvalidInputError(f"{op}: a is {tuple(a.shape)} and b is {tuple(b.shape)}: the inner dims (K) differ "
                                f"({K} vs {K2})")
    ba = a.shape[0] if a.dim() == 3 else 1
    bb = b.shape[0] if b.dim() == 3 else 1
    if ba != bb and ba != 1 and bb != 1:
        raise InvalidInputError(f"{op}: batch sizes differ (a {ba}, b {bb}) and neither is 1")
    batch = max(ba, bb)
    batched = a.dim() == 3 or b.dim() == 3
    glu = has_glu(epilogue)
    if glu and N % 2:
        raise InvalidInputError(f"{op}: the epilogue {epilogue!r} has a GLU, which needs an even N (got N={N})")
    n_out = N // 2 if glu else N
    if bias is not None and not any(n in ("bias", "bias_col", "bias_row") for n, _ in parse_chain(epilogue)):
        epilogue = with_bias(epilogue)
    chain = _annotate(op, epilogue, {"bias": bias, "residual": residual, "row_scale": row_scale,
                                     "col_scale": col_scale})
    fp8 = a.dtype in _FP8 or b.dtype in _FP8
    if out is not None:
        if out_dtype is not None and out.dtype != out_dtype:
            raise InvalidInputError(f"{op}: out has dtype {out.dtype} but out_dtype is {out_dtype}")
        d_dtype = out.dtype
    else:
        d_dtype = out_dtype or (torch.bfloat16 if fp8 else a.dtype)
    if d_dtype not in (torch.bfloat16, torch.float16, torch.float32, torch.float8_e4m3fn):
        raise InvalidInputError(f"{op}: output dtype {d_dtype} is not one gemmtune writes (bfloat16, float16, float32, "
                                "float8_e4m3fn)")
    td = _DTYPES[d_dtype]
    out_shape = (batch, M, n_out) if batched else (M, n_out)
    if out is not None and tuple(out.shape) != out_shape:
        raise InvalidInputError(f"{op}: out has shape {tuple(out.shape)}, the result is {out_shape}")
    if M == 0 or N == 0 or batch == 0:
        return out_shape, d_dtype
    if K == 0:
        raise InvalidInputError(f"{op}: K is 0 (a is {tuple(a.shape)}, b is {tuple(b.shape)}); gemmtune needs K >= 1")

    fixes = []
    opa, ca = _operand_of(op, "a", a, batch, ta)
    if ca:
        fixes.append(_contig_fix(0))
    opb, cb = _operand_of(op, "b", b, batch, tb)
    if cb:
        fixes.append(_contig_fix(1))
    # D: the given out when it is a usable matrix, else a packed row-major tensor (copied into out after the run).
    out_direct = False
    if out is not None:
        opd, cd = _operand_of(op, "out", out, batch, td)
        out_direct = not cd and (batch == 1 or opd.batch_stride != 0)
        if not out_direct:
            opd = None
    else:
        opd = None
    if opd is None:
        ld = n_out if M > 1 else layout_of(M, n_out, n_out, 1, d_dtype.itemsize, batch, M * n_out)[1]
        opd = Operand(td, "row", ld, M * n_out if batch > 1 else 0, 16)
        d_strides = (M * n_out, n_out, 1) if batched else (n_out, 1)
    else:
        d_strides = tuple(out.stride())
    # C: read only when beta != 0.
    beta = float(beta)
    if beta != 0.0:
        if c is None:
            raise InvalidInputError(f"{op}: beta={beta} needs c (the matrix added as beta * c)")
        if glu:
            raise InvalidInputError(f"{op}: a GLU epilogue needs beta == 0 (its output has N/2 columns)")
        _matrix(op, "c", c)
        if tuple(c.shape[-2:]) != (M, N) or (c.dim() == 3 and c.shape[0] not in (1, batch)):
            raise InvalidInputError(f"{op}: c has shape {tuple(c.shape)}, it must be ({M}, {N}) or (batch, {M}, {N})")
        tc = _dtype_name(op, "c", c, (torch.bfloat16, torch.float16, torch.float32))
        opc, cc = _operand_of(op, "c", c, batch, tc)
        if cc:
            fixes.append(_contig_fix(2))
    else:  # as torch.addmm: with beta == 0, c is not read
        opc = Operand(td, "row", opd.ld, opd.batch_stride, 16)
    # The residual is shaped like D, with D's strides: a residual laid out otherwise is copied into D's layout.
    if residual is not None:
        if tuple(residual.shape) != out_shape:
            raise InvalidInputError(f"{op}: residual has shape {tuple(residual.shape)}, it must have the output's "
                                    f"shape {out_shape}")
        if tuple(residual.stride()) != d_strides or _align(residual) < 16:
            def fix_res(args, shape=out_shape, strides=d_strides):
                r = args[4]
                args[4] = torch.empty_strided(shape, strides, dtype=r.dtype, device=r.device).copy_(r)
            fixes.append(fix_res)
    # Vectors: 1-D (or any shape with one non-1 dim), contiguous; lengths are checked against the chain below.
    vecs = {"bias": (3, bias), "row_scale": (5, row_scale), "col_scale": (6, col_scale)}
    for name, (i, t) in vecs.items():
        if t is None:
            continue
        if sum(1 for s in t.shape if s != 1) > 1:
            raise InvalidInputError(f"{op}: {name} must be a vector, got shape {tuple(t.shape)}")
        if (t.numel() > 1 and t.stride()[[j for j, s in enumerate(t.shape) if s != 1][0]] != 1) or _align(t) < 16:
            fixes.append(_contig_vec_fix(i))
    # fp8 scales.
    amax_flag = amax is not None
    sc = "none"
    if fp8:
        sc = scaling or _infer_scaling(op, M, N, K, scale_a, scale_b, a.dtype in _FP8)
        for i, name, t in ((7, "scale_a", scale_a), (8, "scale_b", scale_b)):
            if t is None:
                continue
            if t.dtype != torch.float32:
                raise InvalidInputError(f"{op}: {name} has dtype {t.dtype}; fp8 scales are float32")
            if not t.is_contiguous() or _align(t) < 4:
                fixes.append(_contig_fix(i))
        for name, t in (("scale_d", scale_d), ("amax", amax)):
            if t is not None and (t.dtype != torch.float32 or t.numel() != 1):
                raise InvalidInputError(f"{op}: {name} must be a float32 tensor of one element (got {t.dtype}, "
                                        f"{t.numel()} elements)")
    elif scaling not in (None, "none") or scale_a is not None or scale_b is not None:
        raise InvalidInputError(f"{op}: scales and scaling apply to float8 inputs (a is {a.dtype}, b is {b.dtype})")
    p = Problem(M, N, K, batch, opa, opb, opc, opd, float(alpha), beta, chain, sc, amax_flag)
    try:
        info = p.info()
    except Error as e:  # the chain's parser refuses it
        raise InvalidInputError(f"{op}: {e}") from None
    if info["check"]:
        raise InvalidInputError(f"{op}: {info['check']}")
    for name, kind in (("bias", None), ("row_scale", "row_scale"), ("col_scale", "col_scale")):
        t = {"bias": bias, "row_scale": row_scale, "col_scale": col_scale}[name]
        if t is None:
            continue
        if kind is None:
            kind = "bias_row" if any(n == "bias_row" for n, _ in parse_chain(chain)) else "bias_col"
        want = info["epilogue_vector_len"].get(kind, 0)
        if t.numel() != want:
            raise InvalidInputError(f"{op}: {name} has {t.numel()} elements, the epilogue {chain!r} needs {want} "
                                    f"({'M' if kind in ('bias_row', 'row_scale') else 'the columns at its place'})")
    if fp8:
        for name, t, which in (("scale_a", scale_a, "a"), ("scale_b", scale_b, "b")):
            want = info[f"scale_len_{which}"]
            if t is None:
                if not (which == "a" and a.dtype not in _FP8):
                    raise InvalidInputError(f"{op}: {name} is required with {sc} scaling ({want} float32 values)")
            elif t.numel() != want:
                raise InvalidInputError(f"{op}: {name} has {t.numel()} elements, {sc} scaling needs {want}")
    return Plan(p, info["str"], out_shape, d_dtype, _apply_fixes(tuple(fixes)) if fixes else None, out_direct,
                chain)


def _apply_fixes(fixes):
    """One function over the call's tensors that applies each fix (a copy into a usable layout) in turn."""
    def fix(*args):
        args = list(args)
        for f in fixes:
            f(args)
        return tuple(args)
    return fix


def _contig_vec_fix(i):
    def f(args):
        t = args[i]
        args[i] = t.reshape(-1).clone() if t.is_contiguous() else t.reshape(-1).contiguous()
    return f


def _infer_scaling(op, M, N, K, scale_a, scale_b, a_fp8) -> str:
    if scale_b is None:
        raise InvalidInputError(f"{op}: float8 inputs need scale_b (and scale_a for a float8 a)")
    na = scale_a.numel() if scale_a is not None else 1
    nb = scale_b.numel()
    kb, nbk = -(-K // 128), -(-N // 128)
    if na == 1 and nb == 1:
        return "tensor"
    if (na == M or not a_fp8) and nb == N:
        return "row"
    if na == M * kb and nb == nbk * kb:
        return "block"
    raise InvalidInputError(f"{op}: scale_a has {na} and scale_b {nb} elements, which is no scaling gemmtune knows "
                            f"for M={M}, N={N}, K={K}: tensor (1, 1), row ({M}, {N}) or block ({M * kb}, {nbk * kb})")


def _build_linear(op, x, weight, out, **kw):
    """build() for x (..., K) @ weight (N, K).T: the Plan of the flattened 2-D GEMM, with the output shaped
    (..., N_out) and fixes that take the call's own tensors. A flattening that needs a copy is one of the fixes."""
    if out is not None:
        raise InvalidInputError(f"{op}: out is not taken in the linear form")
    if x.dim() < 1:
        raise InvalidInputError(f"{op}: x must have at least one dim (..., K)")
    if weight.dim() != 2:
        raise InvalidInputError(f"{op}: weight must be 2-D (N, K) as nn.Linear's, got {tuple(weight.shape)}")
    N, K = weight.shape
    if x.shape[-1] != K:
        raise InvalidInputError(f"{op}: x is {tuple(x.shape)} and weight is {tuple(weight.shape)}: K differs "
                                f"({x.shape[-1]} vs {K})")
    glu = has_glu(kw["epilogue"])
    n_out = N // 2 if glu and N % 2 == 0 else N
    lead = tuple(x.shape[:-1])
    residual = kw.pop("residual")
    if residual is not None and tuple(residual.shape) != lead + (n_out,):
        raise InvalidInputError(f"{op}: residual has shape {tuple(residual.shape)}, it must have the output's shape "
                                f"{lead + (n_out,)}")
    x2 = x.reshape(-1, K)
    r2 = None if residual is None else residual.reshape(-1, n_out)
    plan = build(op, x2, weight.t(), residual=r2, names=("x", "weight"), **kw)
    if isinstance(plan, tuple):
        return lead + (n_out,), plan[1]
    plan.out_shape = lead + (n_out,)
    # The launch uses the call's pointers as they are, which is right when flattening made views (same address).
    flat_x = x.dim() != 2 and not _is_view_of(x2, x)
    flat_r = residual is not None and residual.dim() != 2 and not _is_view_of(r2, residual)
    inner = plan.fix
    if inner is not None or flat_x or flat_r:
        def fix(x, w, c, bias, residual, row_scale, col_scale, scale_a, scale_b, _inner=inner, _K=K, _n=n_out):
            args = (x.reshape(-1, _K), w.t(), c, bias, None if residual is None else residual.reshape(-1, _n),
                    row_scale, col_scale, scale_a, scale_b)
            return _inner(*args) if _inner is not None else args
        plan.fix = fix
    return plan


def _is_view_of(v, t) -> bool:
    """Whether reshape gave a view of t: a copy is a new allocation, at another address."""
    return v.data_ptr() == t.data_ptr()
