"""The optional C++ hot path of the torch ops (csrc/native_ops.cpp, built into libgemmtune_torch.so by `pip install .`
when the building Python can import torch): loaded when it was built for this very torch (its C++ ABI is that
build's), else the ops stay in Python and `reason` says why. GEMMTUNE_TORCH_NATIVE=0 keeps it unloaded."""
from __future__ import annotations

import ctypes
import os

import torch

from .. import _native

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libgemmtune_torch.so")
loaded = False
reason = "not loaded yet"
KIND = {"mm": 1, "bmm": 2, "linear": 3}  # csrc/native_ops.cpp Kind
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
        reason = f"{PATH} is not there (built by `pip install .` when torch is importable at build time)"
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


def remember(kind: str, a, b, epilogue: str, e, bias=None) -> None:
    """Puts a plain selection in the C++ table: the next call of these tensors' metadata launches from C++."""
    global _fns
    if _fns is None:
        lib = _native.lib()
        _fns = (ctypes.cast(lib.gt_gemm_run, ctypes.c_void_p).value,
                ctypes.cast(lib.gt_use_device, ctypes.c_void_p).value)
    torch.ops.gemmtune._native_remember(a, b, bias, KIND[kind], epilogue, e.handle, _fns[0], _fns[1],
                                        list(e.out_shape), list(e.out_strides), e.out_dtype)


def clear() -> None:
    if loaded:
        torch.ops.gemmtune._native_clear()
