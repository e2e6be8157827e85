"""The optional C++ hot path of the torch ops (csrc/native_ops.cpp, built into libgemmtune_torch.so by `pip install
--no-build-isolation .` when the building Python can import torch): loaded when it was built for this very torch (its
C++ ABI is that build's), else the ops stay in Python and `reason` says why. GEMMTUNE_TORCH_NATIVE=0 keeps it
unloaded."""
from __future__ import annotations

import ctypes
import os

import torch

from .. import _native

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libgemmtune_torch.so")
loaded = False
reason = "not loaded yet"
KIND = {"mm": 1, "bmm": 2, "linear": 3, "gemm": 4}  # csrc/native_ops.cpp Kind ("gemm": the out= form)
_fns = None


def load() -> bool:
    """Loads the library once; True when the ops' CUDA kernels may be its."""
    global loaded, reason
    if loaded:
        return True
    if os.environ.get("GEMMTUNE_TORCH_NATIVE", "1") == "0":
        reason = "GEMMTUNE_TORCH_NATIVE=0"
        return False
    if not os.path.exists(PATH):
        reason = f"{PATH} is not there (built by `pip install --no-build-isolation .` where torch is installed)"
        return False
    try:
        with open(PATH + ".torch") as f:
            built_for = f.read().strip()
    except OSError:
        built_for = "an unknown torch"
    if built_for != torch.__version__:
        reason = f"{PATH} was built for torch {built_for}, this is torch {torch.__version__}: reinstall gemmtune"
        return False
    try:
        torch.ops.load_library(PATH)
    except Exception as e:  # noqa: BLE001 - any failure leaves the Python path in place, with the reason
        reason = f"{PATH} did not load: {type(e).__name__}: {e}"
        return False
    loaded, reason = True, ""
    return True


def serves(kind: str, rest, scaling=None, out_dtype=None, fp8_accum="exact") -> bool:
    """Whether the C++ table keys a call of this kind with these tensors besides a and b (_dispatch.gemm's `rest`:
    out, c, bias, residual, row_scale, col_scale, scale_a, scale_b, scale_d, amax metadata, or None for none) and
    these other arguments: mm and bmm take none, linear a bias, the out= form C, a bias and the output."""
    if scaling is not None or out_dtype is not None or fp8_accum != "exact" or kind not in KIND:
        return False
    if rest is None:
        return kind != "gemm"
    allowed = {"linear": (2,), "gemm": (0, 1, 2)}.get(kind, ())
    return all(m is None for i, m in enumerate(rest) if i not in allowed) and (kind != "gemm" or rest[0] is not None)


def remember(kind: str, e, a, b, epilogue: str, alpha: float, beta: float, c=None, bias=None, out=None) -> None:
    """Puts a plain selection in the C++ table: the next call of these tensors' metadata launches from C++."""
    global _fns
    if _fns is None:
        lib = _native.lib()
        _fns = (ctypes.cast(lib.gt_gemm_run, ctypes.c_void_p).value,
                ctypes.cast(lib.gt_use_device, ctypes.c_void_p).value)
    torch.ops.gemmtune._native_remember(KIND[kind], [a, b, c, bias, out], epilogue, alpha, beta, e.handle, _fns[0],
                                        _fns[1], list(e.out_shape), list(e.out_strides), e.out_dtype)


def clear() -> None:
    if loaded:
        torch.ops.gemmtune._native_clear()
