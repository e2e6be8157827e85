"""The torch ops' C++ hot path (libgemmtune_torch.so) without a GPU: that the package loads it when it was built for
this torch, the ops' wiring (the CUDA kernels of mm, bmm and linear are its, their Python implementations the _py_
twins it falls back to), and its selection table. A launch needs a GPU: tests/python/gpu/test_native_ops.py."""
import pytest

torch = pytest.importorskip("torch")

import gemmtune  # noqa: E402
import gemmtune.torch  # noqa: E402,F401
from gemmtune.torch import _native_ops as N  # noqa: E402

pytestmark = pytest.mark.skipif(not N.loaded, reason=f"no C++ hot path: {N.reason}")


def test_ops_wired():
    """The ops' CUDA and Autograd kernels are the library's (no Python on an inference call); their _py_ twins hold
    the Python implementation and the autograd.Function that records a backward."""
    for name in ("mm", "bmm", "linear"):
        dump = torch._C._dispatch_dump(f"gemmtune::{name}")
        for key in ("CUDA:", "Autograd[alias]:"):
            line = next(ln for ln in dump.splitlines() if ln.startswith(key))
            assert "native_ops.cpp" in line, dump
        twin = torch._C._dispatch_dump(f"gemmtune::_py_{name}")
        for key in ("CUDA:", "Autograd[alias]:"):
            line = next(ln for ln in twin.splitlines() if ln.startswith(key))
            assert "ops.py" in line, twin
        # A traced call that needs a gradient records the twin (AOTAutograd): it has the op's fake implementation.
        assert "Meta:" in twin or "fake" in twin.lower(), twin


def test_table_remembers_and_clears():
    class Entry:
        handle, out_shape, out_strides, out_dtype = 1, (4, 16), (16, 1), torch.bfloat16
    gemmtune.torch.clear_selections()
    a, b = torch.randn(4, 8, dtype=torch.bfloat16), torch.randn(16, 8, dtype=torch.bfloat16)
    out = torch.empty(4, 16, dtype=torch.bfloat16)
    N.remember("linear", Entry(), a, b, "none", 1.0, 0.0)
    N.remember("linear", Entry(), a, b, "none", 1.0, 0.0)  # the same metadata: one entry
    N.remember("linear", Entry(), a, b, "none", 1.0, 0.0, bias=torch.randn(16, dtype=torch.bfloat16))  # another
    N.remember("mm", Entry(), a, b.t(), "none", 1.0, 0.0)
    N.remember("gemm", Entry(), a, b.t(), "none", 1.0, 0.0, out=out)  # the out= form: its own kind
    N.remember("gemm", Entry(), a, b.t(), "none", 2.0, 0.0, out=out)  # alpha is in the key
    N.remember("gemm", Entry(), a, b.t(), "none", 1.0, 1.0, c=out, out=out)
    assert torch.ops.gemmtune._native_size() == 6
    with pytest.raises(RuntimeError, match="C or a bias with a kind that takes none"):
        N.remember("mm", Entry(), a, b.t(), "none", 1.0, 0.0, bias=torch.randn(16, dtype=torch.bfloat16))
    with pytest.raises(RuntimeError, match="an output goes with kind 4 only"):
        N.remember("mm", Entry(), a, b.t(), "none", 1.0, 0.0, out=out)
    gemmtune.torch.clear_selections()
    assert torch.ops.gemmtune._native_size() == 0


def test_serves():
    """Which calls of _dispatch.gemm the table keys (`rest`: out, c, bias, residual, ... metadata, or None)."""
    m = ("meta",)
    none = [None] * 10
    assert N.serves("mm", None) and N.serves("linear", None) and not N.serves("gemm", None)
    assert N.serves("linear", tuple(m if i == 2 else None for i in range(10)))
    assert not N.serves("mm", tuple(m if i == 2 else None for i in range(10)))
    assert N.serves("gemm", tuple(m if i in (0, 1, 2) else None for i in range(10)))
    assert not N.serves("gemm", tuple(m if i in (0, 3) else None for i in range(10)))  # a residual
    assert not N.serves("gemm", tuple(none))  # no output
    assert not N.serves("scaled_mm", None)
    assert not N.serves("mm", None, fp8_accum="fast") and not N.serves("gemm", (m,) + (None,) * 9, scaling="row")


def test_inductor_kernels_are_operators():
    """With the hot path, the Inductor choice's extern kernels are the operators whose CUDA kernel is the library's
    (the Python functions their _py_ twins and CPU kernels)."""
    from gemmtune.torch import inductor
    assert set(inductor._NATIVE) == {"mm", "bmm", "addmm"}
    for name in ("inductor_mm", "inductor_addmm"):
        dump = torch._C._dispatch_dump(f"gemmtune::{name}")
        cuda = next(ln for ln in dump.splitlines() if ln.startswith("CUDA:"))
        assert "native_ops.cpp" in cuda, dump
        twin = torch._C._dispatch_dump(f"gemmtune::_py_{name}")
        assert "inductor.py" in next(ln for ln in twin.splitlines() if ln.startswith("CUDA:")), twin


def test_cpu_tensors_still_refused():
    a, w = torch.randn(4, 8, dtype=torch.bfloat16), torch.randn(16, 8, dtype=torch.bfloat16)
    with pytest.raises(gemmtune.InvalidInputError, match="CPU tensors"):
        torch.ops.gemmtune.linear(a, w)


def test_version_mismatch_is_refused(monkeypatch, tmp_path):
    lib = tmp_path / "libgemmtune_torch.so"
    lib.write_bytes(b"")
    (tmp_path / "libgemmtune_torch.so.torch").write_text("0.0.0\n")
    monkeypatch.setattr(N, "PATH", str(lib))
    monkeypatch.setattr(N, "loaded", False)
    assert not N.load() and "built for torch 0.0.0" in N.reason
