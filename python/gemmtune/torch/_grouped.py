"""Grouped GEMMs (mixture-of-experts) from tensors: the Problem, the selection cache, the launch.

Three forms, each one Problem (include/gemmtune/problem.h, "Grouped GEMMs"):

  contiguous  a (M, K) with groups of consecutive rows, b (G, K, N), offs int32 (G,) cumulative row ends on the
              device (torch._grouped_mm's 2-D x 3-D form): grouping=contiguous, groups=G, M = a's rows;
  masked      a (G, M_max, K), b (G, K, N), counts int32 (G,) valid rows per group on the device (DeepGEMM's
              masked layout): grouping=masked, groups=G;
  batched     a (G, M, K), b (G, K, N), no offsets (torch._grouped_mm's 3-D x 3-D form): an ordinary batched GEMM.

b is usually the expert weights (G, N, K) seen as (G, K, N) through .transpose(-2, -1): a column-major B per
group, read without a copy. The output is allocated as torch._grouped_mm allocates it: row-major with its row pitch
padded to 16 bytes, so D is always TMA-storable. Rows of D that belong to no group (contiguous: rows at or past
offs[-1]; masked: rows past a group's count) are not written: their values are undefined, as torch's.

Epilogue: every op takes a gemmtune chain (include/gemmtune/epilogue.h) applied to each group's output, as
gemmtune.torch.ops.linear takes one: a given bias is added first unless the chain names it, and a GLU ("silu_glu",
the gate/up projection of a SwiGLU expert) makes the output N/2 columns wide. The grouped ops take no residual,
row or column scale tensor, so chains that read one (residual, row_scale, col_scale, bias_row) are refused.

Selections: the token count of a contiguous problem changes every step, so a selection is looked up in two steps.
The exact key (every tensor's shape, strides, dtype, alignment, device) finds a loaded Gemm; on a miss, the bucket
key (the same with M rounded up to a power of two, as Problem::key() buckets it) finds the candidate chosen for
another M of the bucket, which is loaded for this M without tuning. Only a miss of both tunes. Entries live in
gemmtune.torch's selection dict, so selections() lists them and clear_selections() drops them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import torch

from .._api import Operand, Problem, Tuner
from .._errors import Error, InvalidInputError
from . import _dispatch

_FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)
_HALF = (torch.bfloat16, torch.float16)
_OUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
_BLOCK = 128  # K (and N, for B) extent of one fp8 block scale (gemmtune::kScaleBlock)


def _need(cond, op, msg):
    if not cond:
        raise InvalidInputError(f"{op}: {msg}")


def bucket(m: int) -> int:
    """The M a contiguous problem's key holds for m rows: the next power of two (Problem::key())."""
    b = 1
    while b < m:
        b *= 2
    return b


def padded_ld(n: int, dtype: torch.dtype) -> int:
    """Elements per output row: n rounded up to 16 bytes (torch._grouped_mm's output pitch)."""
    q = max(1, 16 // dtype.itemsize)
    return -(-n // q) * q


# -- shapes and dtypes (shared by the launch and the fake implementations) ---------------------------------------


@dataclass(frozen=True)
class Shape:
    """What a call computes, from its tensors' shapes and dtypes alone (so the fakes can derive it)."""

    form: str          # contiguous | masked | batched
    m: int             # contiguous: a's rows (the capacity); masked: M_max; batched: rows per batch
    n: int
    k: int
    groups: int
    out_shape: tuple
    out_strides: tuple
    out_dtype: torch.dtype
    scaling: str       # none | row | block
    epilogue: str      # the chain, with a given bias first unless it names one (dtypes not filled in yet)


def _form(op, a, b, offs, masked):
    """The form of a call, or an error naming the form torch would compute but gemmtune does not."""
    _need(a.dim() in (2, 3) and b.dim() in (2, 3), op,
          f"mat_a and mat_b must be 2-D or 3-D, got {tuple(a.shape)} and {tuple(b.shape)}")
    if masked:
        _need(a.dim() == 3 and b.dim() == 3, op,
              f"the masked form takes a (G, M_max, K) and b (G, K, N), got {tuple(a.shape)} and {tuple(b.shape)}")
        return "masked"
    if a.dim() == 2 and b.dim() == 2:
        raise InvalidInputError(
            f"{op}: mat_a {tuple(a.shape)} and mat_b {tuple(b.shape)} are both 2-D: that is the K-grouped form "
            "(groups over the contraction dim, the weight gradient dW_g = dY_g^T X_g), which gemmtune does not "
            "compute; use torch._grouped_mm for it")
    if a.dim() == 3 and b.dim() == 2:
        raise InvalidInputError(
            f"{op}: mat_a {tuple(a.shape)} is 3-D and mat_b {tuple(b.shape)} is 2-D: that is the N-grouped form "
            "(groups over B's columns), which gemmtune does not compute; use torch._grouped_mm for it")
    if a.dim() == 2:
        _need(offs is not None, op, f"mat_a {tuple(a.shape)} is 2-D and mat_b {tuple(b.shape)} is 3-D: the "
              "contiguous form needs offs (int32 (G,) cumulative row ends)")
        return "contiguous"
    _need(offs is None, op, f"mat_a {tuple(a.shape)} and mat_b {tuple(b.shape)} are 3-D: a batched GEMM, which "
          "takes no offs (pass 2-D mat_a for the contiguous form, or use grouped_mm_masked for per-group counts)")
    return "batched"


def _check_offs(op, name, offs, groups):
    _need(offs.dtype == torch.int32, op, f"{name} has dtype {offs.dtype}; it must be torch.int32")
    _need(offs.dim() == 1, op, f"{name} must be 1-D (G,), got shape {tuple(offs.shape)}")
    _need(offs.shape[0] == groups, op, f"{name} has {offs.shape[0]} elements but mat_b holds {groups} groups "
          "(one per group)")
    _need(offs.shape[0] <= 1 or offs.stride(0) == 1, op,
          f"{name} must be contiguous (stride 1), got stride {offs.stride(0)}: pass {name}.contiguous()")


def _scaling_of(op, form, a, b, scale_a, scale_b, m, n, k, groups):
    """'row' or 'block' from the scale tensors' shapes (torch._scaled_grouped_mm's row-wise shapes, or the
    block-wise extension), or an error listing the shapes gemmtune takes."""
    for name, t in (("scale_a", scale_a), ("scale_b", scale_b)):
        _need(t.dtype == torch.float32, op, f"{name} has dtype {t.dtype}; gemmtune takes float32 scales")
    sa, sb = tuple(scale_a.shape), tuple(scale_b.shape)
    kb, nb = -(-k // _BLOCK), -(-n // _BLOCK)
    if form == "contiguous":
        row = ((m,), (groups, n))
        block = ((m, kb), (groups, kb, nb))
    else:
        row = ((groups, m), (groups, n))
        block = ((groups, m, kb), (groups, kb, nb))
    if (sa, sb) == row:
        return "row"
    if (sa, sb) == block:
        return "block"
    raise InvalidInputError(
        f"{op}: scale_a {sa} with scale_b {sb} is no scaling gemmtune takes here (M={m}, N={n}, K={k}, G={groups}): "
        f"row-wise (scale_a {row[0]}, scale_b {row[1]}) or block-wise 1x128 A with 128x128 B per group "
        f"(scale_a {block[0]}, scale_b {block[1]})")


# Chain ops that read a tensor the grouped ops have no argument for.
_NO_OPERAND = ("residual", "row_scale", "col_scale", "bias_row")


def _chain_of(op, epilogue, bias, n):
    """(chain, n_out, bias length) of an epilogue: the chain with a given bias first unless it names one, the
    output's columns (N/2 after a GLU) and the columns at the bias's place in the chain."""
    if not isinstance(epilogue, str):
        raise InvalidInputError(f"{op}: epilogue must be a str (a gemmtune chain such as 'silu_glu' or "
                                f"'bias,gelu_tanh'), got {type(epilogue).__name__}")
    ops = _dispatch.parse_chain(epilogue)
    for name, _ in ops:
        if name in _NO_OPERAND:
            raise InvalidInputError(f"{op}: the epilogue {epilogue!r} has '{name}', which reads a tensor the grouped "
                                    f"ops do not take (their one epilogue tensor is a bias shared by every group): "
                                    f"{', '.join(_NO_OPERAND)} are not supported here; apply it in torch on the "
                                    "output")
    named = any(name in ("bias", "bias_col") for name, _ in ops)
    if named and bias is None:
        raise InvalidInputError(f"{op}: the epilogue {epilogue!r} has 'bias' but no bias tensor was given" +
                                (" (grouped_mm_masked takes none: drop 'bias' from the chain)"
                                 if op.endswith("_masked") else " (pass bias, (N,))"))
    chain = _dispatch.with_bias(epilogue) if bias is not None and not named else epilogue
    ops = _dispatch.parse_chain(chain)
    glu = [i for i, (name, _) in enumerate(ops) if _dispatch.has_glu(name)]
    _need(not glu or n % 2 == 0, op, f"the epilogue {epilogue!r} has a GLU, which needs an even N (got N={n})")
    n_out = n // 2 if glu else n
    at = [i for i, (name, _) in enumerate(ops) if name in ("bias", "bias_col")]
    n_bias = n_out if glu and at and at[0] > glu[0] else n
    return chain if ops else "none", n_out, n_bias


def shape_of(op, a, b, offs=None, bias=None, out_dtype=None, scale_a=None, scale_b=None, masked=False,
             epilogue="none") -> Shape:
    """The Shape of a call; raises InvalidInputError for every bad shape, dtype or argument (no device checks)."""
    form = _form(op, a, b, offs, masked)
    scaled = scale_a is not None or scale_b is not None
    if scaled:
        _need(scale_a is not None and scale_b is not None, op, "give both scale_a and scale_b")
        _need(a.dtype in _FP8 and b.dtype in _FP8, op,
              f"mat_a and mat_b must be float8 (e4m3fn / e5m2), got {a.dtype} and {b.dtype}")
    else:
        for name, t in (("mat_a", a), ("mat_b", b)):
            if t.dtype not in _HALF:
                hint = (" (cast it, or run under torch.autocast('cuda'))" if t.dtype == torch.float32 else
                        " (float8 inputs go through scaled_grouped_mm)" if t.dtype in _FP8 else "")
                raise InvalidInputError(f"{op}: {name} has dtype {t.dtype}; grouped_mm takes bfloat16 or float16 "
                                        f"inputs{hint}")
        _need(a.dtype == b.dtype, op, f"mat_a is {a.dtype} and mat_b is {b.dtype}: give them one dtype")
    groups = b.shape[0]
    k, k2, n = a.shape[-1], b.shape[-2], b.shape[-1]
    _need(k == k2, op, f"mat_a is {tuple(a.shape)} and mat_b is {tuple(b.shape)}: the contraction dims (K) differ "
          f"({k} vs {k2})")
    if form == "contiguous":
        m = a.shape[0]
        _check_offs(op, "offs", offs, groups)
    else:
        _need(a.shape[0] == groups, op, f"mat_a holds {a.shape[0]} groups and mat_b {groups}: they must match")
        m = a.shape[1]
        if form == "masked":
            _check_offs(op, "counts", offs, groups)
    if out_dtype is None:
        out_dtype = torch.bfloat16 if scaled else a.dtype
    _need(out_dtype in _OUT_DTYPES, op, f"out_dtype {out_dtype} is not one gemmtune writes here (bfloat16, float16, "
          "float32)")
    chain, n_out, n_bias = _chain_of(op, epilogue, bias, n)
    if bias is not None:
        where = "" if n_bias == n else " (the bias follows the GLU: N/2 values)"
        _need(bias.dim() == 1 and bias.shape[0] == n_bias, op,
              f"bias has shape {tuple(bias.shape)}; gemmtune adds one bias of {n_bias} values{where} shared by every "
              "group (per-group biases are not supported: add them in torch)")
        _need(bias.dtype in _OUT_DTYPES, op, f"bias has dtype {bias.dtype}; it must be bfloat16, float16 or float32")
    sc = _scaling_of(op, form, a, b, scale_a, scale_b, m, n, k, groups) if scaled else "none"
    ld = padded_ld(n_out, out_dtype)
    if form == "contiguous":
        out_shape, out_strides = (m, n_out), (ld, 1)
    else:
        out_shape, out_strides = (groups, m, n_out), (m * ld, ld, 1)
    return Shape(form, m, n, k, groups, out_shape, out_strides, out_dtype, sc, chain)


def empty_out(like, s: Shape):
    """The (uninitialized) output tensor of a call, as the launch and the fakes allocate it."""
    return torch.empty_strided(s.out_shape, s.out_strides, dtype=s.out_dtype, device=like.device)


# -- the Problem of a call -----------------------------------------------------------------------------------------


@dataclass
class GroupedPlan:
    """A call's Problem and what the launch does around it (built on a miss; testable on CPU and meta tensors)."""

    problem: Problem
    problem_text: str
    shape: Shape
    fix: Optional[Callable]   # (a, b, bias, scale_a, scale_b) -> the same, with copies where the layout needs one


def _copy_fix(i, fn):
    def f(args):
        args[i] = fn(args[i])
    return f


def _packed(t):
    return t.clone(memory_format=torch.contiguous_format)


def make_problem(m, n, k, batch, a, b, c, d, chain, scaling, grouping, groups) -> Problem:
    """A grouped (or batched) Problem. One place that names the grouping fields, so they reach the library."""
    return Problem(m, n, k, batch, a, b, c, d, alpha=1.0, beta=0.0, epilogue=chain, scaling=scaling, amax=False,
                   grouping=grouping, groups=groups)


def build(op, a, b, offs=None, bias=None, out_dtype=None, scale_a=None, scale_b=None, masked=False,
          epilogue="none") -> GroupedPlan:
    """The Plan of one call, or a Shape when the output is empty. Checks everything but the devices; raises
    InvalidInputError naming the argument, or with the library's check() message."""
    s = shape_of(op, a, b, offs, bias, out_dtype, scale_a, scale_b, masked, epilogue)
    if s.m == 0 or s.n == 0 or s.groups == 0:  # nothing to compute (no group owns a row)
        return s
    _need(s.k >= 1, op, f"K is 0 (mat_a {tuple(a.shape)}, mat_b {tuple(b.shape)}); gemmtune needs K >= 1")
    ta, tb, td = _dispatch._DTYPES[a.dtype], _dispatch._DTYPES[b.dtype], _dispatch._DTYPES[s.out_dtype]
    batch = 1 if s.form == "contiguous" else s.groups
    fixes = []
    opa, ca = _dispatch._operand_of(op, "mat_a", a, batch, ta)
    if ca:
        fixes.append(_copy_fix(0, _packed))
    # B holds G matrices even when A holds one: its batch stride is read from the tensor (0 for an expanded one).
    opb, cb = _dispatch._operand_of(op, "mat_b", b, s.groups, tb)
    if cb:
        fixes.append(_copy_fix(1, _packed))
    ld = s.out_strides[-2]
    opd = Operand(td, "row", ld, s.m * ld if batch > 1 else 0, 16)
    opc = Operand(td, "row", ld, opd.batch_stride, 16)
    # The chain with the bias's dtype filled in from its tensor (a dtype the chain names must agree with it).
    chain = _dispatch._annotate(op, s.epilogue, {"bias": bias})
    if bias is not None and (bias.stride(0) != 1 or _dispatch._align(bias) < 16):
        fixes.append(_copy_fix(2, lambda t: t.contiguous().clone()))
    if s.scaling != "none":
        for i, t in ((3, scale_a), (4, scale_b)):
            if s.scaling == "block" or not t.is_contiguous() or _dispatch._align(t) < 4:
                fixes.append(_copy_fix(i, _block_scales if s.scaling == "block" else _packed))
    grouping = {"contiguous": "contiguous", "masked": "masked", "batched": "none"}[s.form]
    p = make_problem(s.m, s.n, s.k, batch, opa, opb, opc, opd, chain, s.scaling, grouping,
                     s.groups if grouping != "none" else 1)
    try:
        info = p.info()
    except Error as e:
        raise InvalidInputError(f"{op}: {e}") from None
    if info["check"]:
        raise InvalidInputError(f"{op}: {info['check']}")
    if s.scaling != "none":
        for name, t, which in (("scale_a", scale_a, "a"), ("scale_b", scale_b, "b")):
            want = info[f"scale_len_{which}"]
            _need(t.numel() == want, op, f"{name} has {t.numel()} elements, {s.scaling} scaling of "
                  f"{info['str']} needs {want}")
    return GroupedPlan(p, info["str"], s, _dispatch._apply_fixes(tuple(fixes)) if fixes else None)


def _block_scales(t):
    """torch's block-scale shapes -> gemmtune's order (include/gemmtune/problem.h): A's (.., M, Kb) becomes
    (.., Kb, M), each group's B (Kb, Nb) becomes (Nb, Kb), both packed."""
    return t.transpose(-2, -1).contiguous()


# -- the launch ----------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Entry:
    gemm: object
    device: int
    torch_device: torch.device
    out_shape: tuple
    out_strides: tuple
    out_dtype: torch.dtype
    fix: Optional[Callable]
    problem_str: str


def _meta(t):
    return None if t is None else (t.shape, t.stride(), t.dtype, t.data_ptr() & 15, t.get_device())


def _key(kind, a, b, offs, bias, scale_a, scale_b, out_dtype, masked, epilogue, m_of_key):
    # Scale shapes follow M (row and block scaling of A): they enter the key with their M replaced as well.
    sa = None if scale_a is None else (tuple(scale_a.shape[1:]) if not masked and a.dim() == 2 else
                                       tuple(scale_a.shape), scale_a.stride(), scale_a.dtype, scale_a.get_device())
    return (kind, masked, (m_of_key,) + tuple(a.shape[1:]), a.stride(), a.dtype, a.data_ptr() & 15, a.get_device(),
            b.shape, b.stride(), b.dtype, b.data_ptr() & 15, b.get_device(),
            None if offs is None else (offs.shape, offs.stride(), offs.dtype, offs.get_device()),
            _meta(bias), sa, _meta(scale_b), out_dtype, epilogue)


def grouped_gemm(a, b, offs=None, bias=None, out_dtype=None, scale_a=None, scale_b=None, masked=False,
                 op="gemmtune.grouped_mm", epilogue="none"):
    """The launch of every grouped op: see the module doc. Returns the new output tensor."""
    dev = a.get_device()
    if dev >= 0 and dev != _dispatch._current_device():
        with torch.cuda.device(dev):
            return grouped_gemm(a, b, offs, bias, out_dtype, scale_a, scale_b, masked, op, epilogue)
    contiguous = a.dim() == 2
    key = _key("grouped", a, b, offs, bias, scale_a, scale_b, out_dtype, masked, epilogue, a.shape[0])
    e = _dispatch._sel.get(key)
    if e is None:
        e = _miss(key, op, a, b, offs, bias, out_dtype, scale_a, scale_b, masked, contiguous, epilogue)
        if isinstance(e, Shape):
            return empty_out(a, e)
    ready = getattr(_dispatch._tls, "ready", None)
    if ready is None or dev not in ready:
        _dispatch._bind_context(dev)
    if e.fix is not None:
        a, b, bias, scale_a, scale_b = e.fix(a, b, bias, scale_a, scale_b)
    d = torch.empty_strided(e.out_shape, e.out_strides, dtype=e.out_dtype, device=e.torch_device)
    e.gemm.run_raw(a.data_ptr(), b.data_ptr(), 0, d.data_ptr(), 0 if bias is None else bias.data_ptr(), 0, 0, 0,
                   0 if scale_a is None else scale_a.data_ptr(), 0 if scale_b is None else scale_b.data_ptr(), 0, 0,
                   _dispatch._raw_stream(dev), group_rows=0 if offs is None else offs.data_ptr())
    return d


def _check_devices(op, a, **tensors):
    _dispatch.check_devices(op, a, **tensors)


def _miss(key, op, a, b, offs, bias, out_dtype, scale_a, scale_b, masked, contiguous, epilogue):
    _check_devices(op, a, mat_b=b, bias=bias, scale_a=scale_a, scale_b=scale_b,
                   **{"counts" if masked else "offs": offs})
    plan = build(op, a, b, offs, bias, out_dtype, scale_a, scale_b, masked, epilogue)
    if isinstance(plan, Shape):
        return plan
    if torch.cuda.is_current_stream_capturing():
        raise Error(f"{op}: {plan.problem_text} has no selection yet and the current stream is capturing a CUDA "
                    "graph, where gemmtune cannot tune or load a kernel: run the op once with these shapes before "
                    "the capture")
    dev = a.get_device()
    bkey = _key("grouped-bucket", a, b, offs, bias, scale_a, scale_b, out_dtype, masked, epilogue,
                bucket(a.shape[0]) if contiguous else a.shape[0])
    with _dispatch._lock:
        e = _dispatch._sel.get(key)
        if e is not None:
            return e
        with torch.cuda.device(dev):
            _dispatch._bind_context(dev)
            g = None
            chosen = _dispatch._sel.get(bkey)
            if chosen is not None:
                try:
                    g = Tuner.load(plan.problem, chosen.gemm.candidate)
                except Error:  # the bucket's winner does not take this M: tune it as a problem of its own
                    g = None
            if g is None:
                if _dispatch._opts["tune"] == "never":
                    raise Error(f"{op}: {plan.problem_text} is not tuned in this process and gemmtune.torch."
                                "set_options(tune='never') forbids tuning: tune it first (set_options(tune='auto') "
                                "and one call, or `gemmtune tune`)")
                o = _dispatch._opts
                g = Tuner(backends=o["backends"], top_k=o["top_k"], use_cache=o["use_cache"],
                          isolation=o["isolation"], progress=o["progress"]).select(plan.problem)
        s = plan.shape
        e = _Entry(g, dev, a.device, s.out_shape, s.out_strides, s.out_dtype, plan.fix, plan.problem_text)
        _dispatch._sel[key] = e
        if bkey not in _dispatch._sel:
            _dispatch._sel[bkey] = e
        return e
