"""The ctypes binding of gemmtune's C ABI (include/gemmtune/c_api.h).

The library is found next to this package (``gemmtune/lib``, where the wheel puts it), or at ``$GEMMTUNE_LIBRARY``
(a build tree's ``libgemmtune.so``). ctypes releases the GIL during every call, so a tuning in one thread does not
stop another.
"""
from __future__ import annotations

import ctypes
import json
import os
import sys
import threading
from pathlib import Path

from ._errors import CudaError, Error, InvalidInputError, NoGpuError

# The triton backend compiles in a helper process: the interpreter of this program, whose triton the user installed.
os.environ.setdefault("GEMMTUNE_PYTHON", sys.executable)

_GT_OK, _GT_ERROR, _GT_INVALID, _GT_NO_GPU, _GT_CUDA_ERROR = range(5)

PROGRESS_FN = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_void_p)


class GemmArgs(ctypes.Structure):
    """gt_gemm_args (gemmtune/c_api.h): the pointers of one call; `size` is this struct's size."""

    _fields_ = [("size", ctypes.c_uint32)] + [(name, ctypes.c_void_p) for name in (
        "a", "b", "c", "d", "bias", "residual", "row_scale", "col_scale", "scale_a", "scale_b", "scale_d", "amax",
        "group_rows")]

_lib = None
_lock = threading.Lock()


def _library_path() -> str:
    env = os.environ.get("GEMMTUNE_LIBRARY")
    if env:
        return env
    here = Path(__file__).resolve().parent / "lib"
    for name in ("libgemmtune.so", "libgemmtune.so.0"):
        if (here / name).exists():
            return str(here / name)
    raise ImportError(
        f"gemmtune: the native library is not in {here} (install the package with `pip install .`, "
        "or point GEMMTUNE_LIBRARY at a build's libgemmtune.so)")


def lib() -> ctypes.CDLL:
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is None:
            _lib = _load(_library_path())
    return _lib


def _load(path: str) -> ctypes.CDLL:
    L = ctypes.CDLL(path)
    vp = ctypes.c_void_p
    L.gt_version.restype = ctypes.c_char_p
    L.gt_version.argtypes = []
    L.gt_last_error.restype = ctypes.c_char_p
    L.gt_last_error.argtypes = []
    L.gt_last_cuda_error.restype = ctypes.c_int
    L.gt_last_cuda_error.argtypes = [ctypes.POINTER(ctypes.c_int)]
    L.gt_free.restype = None
    L.gt_free.argtypes = [vp]
    L.gt_use_device.argtypes = [ctypes.c_int]
    L.gt_use_device.restype = ctypes.c_int
    L.gt_device.argtypes = [ctypes.POINTER(vp)]
    L.gt_problem_info.argtypes = [ctypes.c_char_p, ctypes.POINTER(vp)]
    L.gt_call_plan.argtypes = [ctypes.c_char_p, ctypes.POINTER(vp)]
    L.gt_list.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(vp)]
    for name in ("gt_compile", "gt_tune", "gt_bench"):
        getattr(L, name).argtypes = [ctypes.c_char_p, ctypes.c_char_p, PROGRESS_FN, vp, ctypes.POINTER(vp)]
    L.gt_select.argtypes = [ctypes.c_char_p, ctypes.c_char_p, PROGRESS_FN, vp, ctypes.POINTER(vp)]
    L.gt_load.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(vp)]
    L.gt_gemm_info.argtypes = [vp, ctypes.POINTER(vp)]
    L.gt_gemm_run.argtypes = [vp] * 14
    L.gt_gemm_run_args.argtypes = [vp, ctypes.POINTER(GemmArgs), vp]
    L.gt_gemm_destroy.restype = None
    L.gt_gemm_destroy.argtypes = [vp]
    L.gt_cache.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(vp)]
    for name in ("gt_device", "gt_problem_info", "gt_call_plan", "gt_list", "gt_compile", "gt_tune", "gt_bench", "gt_select",
                 "gt_load", "gt_gemm_info", "gt_gemm_run", "gt_gemm_run_args", "gt_cache"):
        getattr(L, name).restype = ctypes.c_int
    return L


def raise_for(status: int) -> None:
    """Raises the exception that matches a non-zero gt_status, with this thread's message."""
    L = lib()
    msg = (L.gt_last_error() or b"").decode("utf-8", "replace")
    if status == _GT_INVALID:
        raise InvalidInputError(msg)
    if status == _GT_NO_GPU:
        raise NoGpuError(msg)
    if status == _GT_CUDA_ERROR:
        sticky = ctypes.c_int(0)
        code = L.gt_last_cuda_error(ctypes.byref(sticky))
        raise CudaError(msg, code, bool(sticky.value))
    raise Error(msg)


def _call(name: str, *args, progress=None, free=None) -> int:
    """Calls gt_<name>, whose last argument is a pointer it returns (after the progress callback of gt_compile, gt_tune,
    gt_select and gt_bench), and returns that pointer. An exception of `progress` cannot cross the C boundary: it is
    re-raised after the call, once `free` released the result."""
    L = lib()
    out = ctypes.c_void_p()
    enc = [a.encode() if isinstance(a, str) else a for a in args]
    errors = []
    if name in ("gt_compile", "gt_tune", "gt_select", "gt_bench"):
        def cb(event_json, _user):
            try:
                progress(event_json.decode("utf-8", "replace"))
            except BaseException as e:  # noqa: BLE001 - re-raised after the call
                errors.append(e)

        enc += [PROGRESS_FN(cb) if progress is not None else PROGRESS_FN(), None]
    st = getattr(L, name)(*enc, ctypes.byref(out))
    if errors:
        if out.value and free is not None:
            free(out)
        raise errors[0]
    if st != _GT_OK:
        raise_for(st)
    return out.value


def call_json(name: str, *args, progress=None):
    """Calls a gt_* function whose last argument is a `char**` JSON result, and returns the parsed document."""
    L = lib()
    out = ctypes.c_void_p(_call(name, *args, progress=progress, free=L.gt_free))
    try:
        return json.loads(ctypes.string_at(out.value).decode("utf-8"))
    finally:
        L.gt_free(out)


def select(problem_json: str, options_json: str, progress=None) -> int:
    return _call("gt_select", problem_json, options_json, progress=progress, free=lib().gt_gemm_destroy)


def load(problem_json: str, candidate: str) -> int:
    return _call("gt_load", problem_json, candidate)
