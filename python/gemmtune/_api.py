"""The Python face of gemmtune's C++ API (include/gemmtune): Problem, candidates, Tuner, Gemm, compile, bench."""
from __future__ import annotations

import copy
import ctypes
import dataclasses
import json
import numbers
import operator
import sys
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Sequence, Union

from . import _native
from ._errors import Error, InvalidInputError

DTYPES = ("bf16", "f16", "f32", "e4m3", "e5m2")
LAYOUTS = ("row", "col")
SCALINGS = ("none", "tensor", "row", "block")

Progress = Union[None, bool, Callable[["ProgressEvent"], None]]


class ProgressEvent(str):
    """One progress event of a tune or a compile (gemmtune/progress.h). As a str it is the event's line, the text the
    CLI prints; `kind` says what happened ("result", "compiled", "backend_skipped", "runoff_result", "warning", ...)
    and the fields its kind sets: `backend`, `result` (a CandidateResult), `count`, `total`, `ms`, `isolated`,
    `text`."""

    _FIELDS = {"kind": "", "backend": "", "count": 0, "total": 0, "ms": 0.0, "isolated": False, "text": ""}

    @staticmethod
    def from_json(doc: str) -> "ProgressEvent":
        j = json.loads(doc)
        e = ProgressEvent(j.get("line", ""))
        for k, default in ProgressEvent._FIELDS.items():
            setattr(e, k, j.get(k, default))
        e.result = CandidateResult.from_dict(j["result"]) if "result" in j else None
        return e


def _progress_fn(progress: Progress):
    """The C callback's side of `progress`: each event (JSON) as a ProgressEvent to the caller's function."""
    if progress is True:
        progress = lambda e: print(e, file=sys.stderr, flush=True)  # noqa: E731
    elif progress is False or progress is None:
        return None
    elif not callable(progress):
        raise TypeError("progress must be None, a bool or a callable taking one ProgressEvent (a str)")
    return lambda doc: progress(ProgressEvent.from_json(doc))


def _integer(name: str, v) -> int:
    """`v` as an exact int for the C++ side: an int (or a NumPy/PyTorch integer), never a float truncated (64.9 must
    not become 64) nor a bool; one that does not fit 64 bits is refused too (the library would read it narrowed)."""
    if isinstance(v, bool):
        raise InvalidInputError(f"{name} must be an integer (got {v!r})")
    try:
        i = operator.index(v)
    except TypeError:
        raise InvalidInputError(f"{name} must be an integer (got {v!r})") from None
    if not -(1 << 63) <= i < (1 << 63):
        raise InvalidInputError(f"{name} is out of the 64-bit range (got {i})")
    return i


def _number(name: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise InvalidInputError(f"{name} must be a number (got {v!r})")
    return float(v)


@dataclass
class Operand:
    """One matrix of a problem (gemmtune::Operand): dtype, layout, leading dimension and batch stride in elements
    (0 / -1: packed, filled in by resolve), and the byte alignment its base pointers guarantee (16, 8, 4 or 2)."""

    dtype: str = "bf16"
    layout: str = "row"
    ld: int = 0
    batch_stride: int = -1
    align: int = 16

    def _json(self, name: str = "Operand") -> dict:
        return {"dtype": self.dtype, "layout": self.layout, "ld": _integer(f"{name}.ld", self.ld),
                "batch_stride": _integer(f"{name}.batch_stride", self.batch_stride),
                "align": _integer(f"{name}.align", self.align)}


@dataclass
class Problem:
    """What to compute, with no pointers (gemmtune/problem.h):
    ``D[b] = epilogue(alpha * A[b] (M x K) @ B[b] (K x N) + beta * C[b])``.

    ``epilogue`` is a chain such as ``"bias,gelu_tanh"`` or ``"silu_glu"``; ``scaling`` is how fp8 inputs are
    dequantized (``tensor``, ``row``, ``block``); ``fp8_accum`` how fp8 A and B accumulate: ``"exact"`` (fp32
    promotion at least every 128 K, torch._scaled_mm's default) or ``"fast"`` (``use_fast_accum=True``).

    A grouped GEMM (mixture-of-experts) has ``groups`` = G and ``grouping``: ``"contiguous"`` (A and D hold M rows in
    total, split into G consecutive ranges; B holds G matrices) or ``"masked"`` (A, B and D hold G matrices each, of M
    rows for A and D; batch becomes G). The row split is a device array given at run time (``Gemm.run(group_rows=)``):
    G int32 cumulative row ends (contiguous, torch._grouped_mm's ``offs``) or row counts (masked)."""

    m: int
    n: int
    k: int
    batch: int = 1
    a: Operand = field(default_factory=lambda: Operand("bf16", "row"))
    b: Operand = field(default_factory=lambda: Operand("bf16", "col"))
    c: Operand = field(default_factory=lambda: Operand("bf16", "row"))
    d: Operand = field(default_factory=lambda: Operand("bf16", "row"))
    alpha: float = 1.0
    beta: float = 0.0
    epilogue: str = "none"
    scaling: str = "none"
    amax: bool = False
    accum: str = "f32"
    grouping: str = "none"
    groups: int = 1
    fp8_accum: str = "exact"

    @staticmethod
    def make(m: int, n: int, k: int, dtype: str = "bf16", out: Optional[str] = None, a_layout: str = "row",
             b_layout: str = "col", batch: int = 1, epilogue: str = "none", scaling: Optional[str] = None,
             groups: int = 1, grouping: Optional[str] = None) -> "Problem":
        """A packed problem with row-major D (and C) of dtype `out` (default: `dtype`; bf16 for fp8 inputs).
        The default layouts are y = x @ W.T with W stored (N, K) row-major. fp8 inputs default to tensor scaling.
        groups > 1 makes a grouped GEMM, contiguous unless `grouping` says "masked" (then `m` is M_max per group)."""
        fp8 = dtype in ("e4m3", "e5m2")
        out = out or ("bf16" if fp8 else dtype)
        if grouping is None:
            grouping = "none" if groups == 1 else "contiguous"
        return Problem(m, n, k, batch, Operand(dtype, a_layout), Operand(dtype, b_layout), Operand(out, "row"),
                       Operand(out, "row"), epilogue=epilogue, scaling=scaling or ("tensor" if fp8 else "none"),
                       grouping=grouping, groups=groups)

    # -- the C++ side's view of the problem ----------------------------------------------------------------------
    def to_json(self) -> str:
        return json.dumps({"m": _integer("Problem.m", self.m), "n": _integer("Problem.n", self.n),
                           "k": _integer("Problem.k", self.k), "batch": _integer("Problem.batch", self.batch),
                           "A": self.a._json("Problem.a"), "B": self.b._json("Problem.b"),
                           "C": self.c._json("Problem.c"), "D": self.d._json("Problem.d"),
                           "accum": self.accum, "alpha": _number("Problem.alpha", self.alpha),
                           "beta": _number("Problem.beta", self.beta), "epilogue": self.epilogue,
                           "scaling": self.scaling, "amax": bool(self.amax), "grouping": self.grouping,
                           "groups": _integer("Problem.groups", self.groups), "fp8_accum": self.fp8_accum})

    def info(self) -> dict:
        """Everything the library derives from the problem (resolved form, check, key, str, flops, ...)."""
        return _native.call_json("gt_problem_info", self.to_json())

    def check(self) -> str:
        """'' when gemmtune supports the problem, else one line naming what it refuses."""
        return self.info()["check"]

    def validate(self) -> "Problem":
        """Raises InvalidInputError when check() refuses the problem; returns self."""
        self._valid_info()
        return self

    def resolve(self) -> "Problem":
        """A copy with every packed leading dimension and batch stride filled in."""
        return problem_from_dict(self.info()["problem"])

    def _valid_info(self) -> dict:
        info = self.info()
        if info["check"]:
            raise InvalidInputError(info["check"])
        return info

    def key(self) -> str:
        return self._valid_info()["key"]

    def str(self) -> str:
        """The one-line form the CLI prints and accepts back."""
        return self._valid_info()["str"]

    def flops(self) -> float:
        return self._valid_info()["flops"]

    def min_bytes(self) -> float:
        return self._valid_info()["min_bytes"]

    def n_out(self) -> int:
        return self._valid_info()["n_out"]

    def scale_len(self, which: str) -> int:
        """fp32 values scale_a ('A') or scale_b ('B') holds under this problem's scaling."""
        if which not in ("A", "B"):
            raise ValueError("scale_len takes 'A' or 'B'")
        return self._valid_info()["scale_len_" + which.lower()]

    def epilogue_vector_len(self, kind: str) -> int:
        """Elements of the epilogue's vector operand `kind` (bias_col, bias_row, row_scale, col_scale); 0 if none."""
        return self._valid_info()["epilogue_vector_len"].get(kind, 0)

    def grouped(self) -> bool:
        """Whether this is a grouped GEMM (grouping contiguous or masked)."""
        return self.grouping != "none"

    def copy(self) -> "Problem":
        return copy.deepcopy(self)


def problem_from_dict(j: dict) -> Problem:
    op = lambda o: Operand(o["dtype"], o["layout"], o["ld"], o["batch_stride"], o.get("align", 16))  # noqa: E731
    return Problem(j["m"], j["n"], j["k"], j["batch"], op(j["A"]), op(j["B"]), op(j["C"]), op(j["D"]), j["alpha"],
                   j["beta"], j["epilogue"], j.get("scaling", "none"), j.get("amax", False), j.get("accum", "f32"),
                   j.get("grouping", "none"), j.get("groups", 1), j.get("fp8_accum", "exact"))


@dataclass(frozen=True)
class Candidate:
    """A backend and its config, printable as the one line ``backend:config`` that ``--config`` takes."""

    backend: str
    config: str

    def __str__(self) -> str:
        return f"{self.backend}:{self.config}"

    @staticmethod
    def parse(line: Union[str, "Candidate"]) -> "Candidate":
        if isinstance(line, Candidate):
            return line
        if not isinstance(line, str) or ":" not in line:
            raise InvalidInputError(f"a candidate is 'backend:config' (got {line!r})")
        b, c = line.split(":", 1)
        return Candidate(b, c)


@dataclass
class CandidateResult:
    """The fate of one candidate (gemmtune::CandidateResult); `status` is 'ok' or why not."""

    candidate: Candidate
    status: str
    reason: str = ""
    compile_ms: float = 0.0
    compile_cache_hit: bool = False
    registers: int = -1
    spill_bytes: int = -1
    smem_bytes: int = -1
    error: float = -1.0
    us_median: float = 0.0
    us_min: float = 0.0
    us_max: float = 0.0
    timed_iters: int = 0
    tflops: float = 0.0
    gbps: float = 0.0
    winner: bool = False
    extra: dict = field(default_factory=dict)  # compile reports: compiled, wall_ms, log

    @staticmethod
    def from_dict(j: dict) -> "CandidateResult":
        names = {f.name for f in dataclasses.fields(CandidateResult)} - {"candidate", "extra"}
        known = {k: v for k, v in j.items() if k in names}
        extra = {k: v for k, v in j.items() if k not in names and k not in ("backend", "config")}
        return CandidateResult(Candidate(j["backend"], j["config"]), **known, extra=extra)


@dataclass
class TuneReport:
    problem: Problem
    device: dict
    results: list
    winner: Optional[Candidate]
    cache_hit: bool
    wall_ms: float
    cache_key: str

    @staticmethod
    def from_dict(j: dict) -> "TuneReport":
        return TuneReport(problem_from_dict(j["problem"]), j["device"],
                          [CandidateResult.from_dict(r) for r in j["results"]],
                          Candidate.parse(j["winner"]) if j.get("winner") else None, j["cache_hit"], j["wall_ms"],
                          j["cache_key"])

    def result(self, candidate: Union[str, Candidate]) -> Optional[CandidateResult]:
        c = Candidate.parse(candidate)
        return next((r for r in self.results if r.candidate == c), None)


@dataclass
class CompileReport:
    problem: Problem
    device: dict
    candidates: list  # CandidateResult, with extra["compiled"], extra["wall_ms"], extra["log"]
    threads: int
    wall_ms: float


class Gemm:
    """A tuned, loaded GEMM for one problem (gemmtune::Gemm). run() launches it asynchronously on a stream."""

    __slots__ = ("_h", "_run", "_run_args", "_destroy", "_problem", "_candidate", "_grouped")

    def __init__(self, handle: int):
        L = _native.lib()
        self._h = handle
        self._run = L.gt_gemm_run
        self._run_args = L.gt_gemm_run_args
        self._destroy = L.gt_gemm_destroy
        info = _native.call_json("gt_gemm_info", handle)
        self._problem = problem_from_dict(info["problem"])
        self._candidate = Candidate.parse(info["candidate"])
        self._grouped = self._problem.grouped()

    @property
    def problem(self) -> Problem:
        return self._problem

    @property
    def candidate(self) -> Candidate:
        return self._candidate

    def run(self, a: int, b: int, d: int, c: int = 0, *, bias: int = 0, residual: int = 0, row_scale: int = 0,
            col_scale: int = 0, scale_a: int = 0, scale_b: int = 0, scale_d: int = 0, amax: int = 0,
            stream: int = 0, group_rows: int = 0) -> None:
        """Launches on `stream` (a CUstream handle as an int; 0 = the legacy default stream). Pointers are device
        addresses as ints; those the problem does not use may be 0. A grouped problem needs `group_rows`: G int32
        on the device, the cumulative row ends (contiguous) or the row counts (masked)."""
        self.run_raw(a, b, c, d, bias, residual, row_scale, col_scale, scale_a, scale_b, scale_d, amax, stream,
                     group_rows=group_rows)

    def run_raw(self, a, b, c, d, bias, residual, row_scale, col_scale, scale_a, scale_b, scale_d, amax,
                stream, *, group_rows: int = 0) -> None:
        """run() with positional pointers (the launch path of the torch ops)."""
        if group_rows or self._grouped:
            args = _native.GemmArgs(ctypes.sizeof(_native.GemmArgs), a, b, c, d, bias, residual, row_scale,
                                    col_scale, scale_a, scale_b, scale_d, amax, group_rows)
            st = self._run_args(self._h, ctypes.byref(args), stream)
        else:
            st = self._run(self._h, a, b, c, d, bias, residual, row_scale, col_scale, scale_a, scale_b, scale_d,
                           amax, stream)
        if st:
            _native.raise_for(st)

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            self._destroy(h)

    def __repr__(self) -> str:
        return f"Gemm({self._candidate}, {self._problem.str()})"


def _options(**kw) -> str:
    return json.dumps({k: v for k, v in kw.items() if v is not None})


def _names(xs: Optional[Iterable[str]]) -> Optional[list]:
    if xs is None:
        return None
    if isinstance(xs, str):
        return [s for s in xs.split(",") if s]
    return [str(x) for x in xs]


class Tuner:
    """The autotuner (gemmtune::Tuner): enumerate, rank, compile, verify, time, pick, persist.

    Options are TuneOptions' fields: backends (e.g. ["sm90", "cublaslt"]), top_k, only (candidates), use_cache,
    force, isolation ("process" or "in_process"), compile_threads, min_time_ms, min_iters, warmup_iters, settle_ms,
    max_candidate_s, interleave, tolerance, wait_compile (compile the not yet built candidates of slow-compile
    backends, cutlass: nvcc, tens of seconds each; False times only those built ahead and reports the others as
    skipped); progress: True prints progress lines on stderr, or a callable."""

    def __init__(self, backends: Optional[Sequence[str]] = None, top_k: int = 8,
                 only: Optional[Sequence[Union[str, Candidate]]] = None, use_cache: bool = True, force: bool = False,
                 isolation: str = "process", compile_threads: int = 0, min_time_ms: Optional[float] = None,
                 min_iters: Optional[int] = None, warmup_iters: Optional[int] = None, settle_ms: Optional[float] = None,
                 max_candidate_s: Optional[float] = None, interleave: Optional[bool] = None,
                 tolerance: Optional[float] = None, wait_compile: Optional[bool] = None,
                 progress: Progress = None):
        self.progress = _progress_fn(progress)
        self.options = {k: v for k, v in dict(
            backends=_names(backends), top_k=top_k, only=[str(Candidate.parse(c)) for c in only] if only else None,
            use_cache=use_cache, force=force, isolation=isolation, compile_threads=compile_threads,
            min_time_ms=min_time_ms, min_iters=min_iters, warmup_iters=warmup_iters, settle_ms=settle_ms,
            max_candidate_s=max_candidate_s, interleave=interleave, tolerance=tolerance,
            wait_compile=wait_compile).items() if v is not None}
        self._json = json.dumps(self.options)

    def tune(self, problem: Problem) -> TuneReport:
        """Tunes the problem (or answers from the result cache) and reports every candidate's fate."""
        return TuneReport.from_dict(_native.call_json("gt_tune", problem.to_json(), self._json,
                                                      progress=self.progress))

    def select(self, problem: Problem) -> Gemm:
        """tune() when needed, then loads the winner."""
        return Gemm(_native.select(problem.to_json(), self._json, self.progress))

    def bench(self, problem: Problem) -> dict:
        """What `gemmtune bench` does for one shape: tune, then the winner against cuBLASLt's default side by side.
        The dict has "tune" (a TuneReport), "reference", "compare" (CandidateResults), "status", "speedup"."""
        j = _native.call_json("gt_bench", problem.to_json(), self._json, progress=self.progress)
        j["tune"] = TuneReport.from_dict(j["tune"])
        j["compare"] = [CandidateResult.from_dict(r) for r in j["compare"]]
        return j

    @staticmethod
    def load(problem: Problem, candidate: Union[str, Candidate]) -> Gemm:
        """Loads exactly this candidate for the problem, without tuning."""
        return Gemm(_native.load(problem.to_json(), str(Candidate.parse(candidate))))


def candidates(problem: Problem, backends: Optional[Sequence[str]] = None, top_k: int = 0,
               assume_sms: Optional[int] = None) -> list:
    """The ranked candidates of every enabled backend, best first per backend (at most top_k each; 0 = all), without
    compiling or running them. assume_sms: list for an sm_90 GPU with that many SMs instead of the current GPU."""
    lines = _native.call_json("gt_list", problem.to_json(),
                              _options(backends=_names(backends), top_k=top_k, assume_sms=assume_sms))
    return [Candidate.parse(s) for s in lines]


def compile(problem: Problem, backends: Optional[Sequence[str]] = None, top_k: int = 8,
            only: Union[None, str, Candidate] = None, threads: int = 0, assume_sms: Optional[int] = None,
            progress: Progress = None) -> CompileReport:
    """Compiles the top candidates of a problem without running them (no GPU needed): what `gemmtune compile` does."""
    j = _native.call_json("gt_compile", problem.to_json(),
                          _options(backends=_names(backends), top_k=top_k,
                                   only=str(Candidate.parse(only)) if only else None, threads=threads,
                                   assume_sms=assume_sms), progress=_progress_fn(progress))
    return CompileReport(problem_from_dict(j["problem"]), j["device"],
                         [CandidateResult.from_dict(c) for c in j["candidates"]], j["threads"], j["wall_ms"])


def device() -> dict:
    """The current GPU's properties, or an assumed H100 (with "real": False) when there is none."""
    return _native.call_json("gt_device")["device"]


def gpu_available() -> bool:
    return bool(_native.call_json("gt_device")["available"])


def version() -> str:
    return _native.lib().gt_version().decode()


__all__ = ["Operand", "Problem", "Candidate", "CandidateResult", "TuneReport", "CompileReport", "Gemm", "Tuner",
           "candidates", "compile", "device", "gpu_available", "version", "Error"]
