"""The launch paths of the core binding on the GPU: Gemm.run through gt_gemm_run_args (the argument struct) computes
the same GEMM as through gt_gemm_run, and a grouped problem without group_rows, or through gt_gemm_run, is refused
with a message, never launched.

Tolerance: D is bf16; it is compared with an fp32 torch matmul of the same bf16 inputs by the normalized max error
max|d - ref| / max|ref| <= 1e-2 (bf16 output rounding is ~4e-3; a wrong pointer or field is of order 1).

Run on the GPU host: python3 -m pytest -q tests/python/gpu/test_run_args.py
"""
import ctypes

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import gemmtune as gt  # noqa: E402
from gemmtune import _native  # noqa: E402

TOL = 1e-2
DEV = torch.device("cuda")


@pytest.fixture(autouse=True)
def bind_device():
    torch.cuda.init()
    assert _native.lib().gt_use_device(torch.cuda.current_device()) == 0, _native.lib().gt_last_error()


def first_candidate(p):
    cands = gt.candidates(p, backends=["sm90"], top_k=1)
    if not cands:
        pytest.skip(f"sm90 lists no candidate for {p.str()}")
    return cands[0]


def norm_err(d, ref):
    return ((d.float() - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()


@pytest.mark.parametrize("m,n,k", [(256, 512, 128), (77, 200, 136), (1000, 64, 64)])
def test_run_args_path_computes_the_gemm(m, n, k):
    # An ungrouped problem ignores group_rows: with it set, run() goes through gt_gemm_run_args.
    p = gt.Problem.make(m, n, k, "bf16")
    g = gt.Tuner.load(p, first_candidate(p))
    a = torch.randn(m, k, device=DEV, dtype=torch.bfloat16)
    w = torch.randn(n, k, device=DEV, dtype=torch.bfloat16)  # B = w.T, column-major K x N
    ref = a.float() @ w.float().T
    rows = torch.tensor([m], device=DEV, dtype=torch.int32)
    stream = torch.cuda.current_stream().cuda_stream
    for group_rows in (0, rows.data_ptr()):
        d = torch.full((m, n), float("nan"), device=DEV, dtype=torch.bfloat16)
        g.run(a.data_ptr(), w.data_ptr(), d.data_ptr(), stream=stream, group_rows=group_rows)
        torch.cuda.synchronize()
        err = norm_err(d, ref)
        assert err <= TOL, f"{p.str()} group_rows={'set' if group_rows else 0}: error {err:.3g}"


def test_grouped_problem_needs_group_rows():
    p = gt.Problem.make(512, 256, 128, "bf16", groups=4)
    g = gt.Tuner.load(p, first_candidate(p))
    a = torch.randn(512, 128, device=DEV, dtype=torch.bfloat16)
    w = torch.randn(4, 256, 128, device=DEV, dtype=torch.bfloat16)
    d = torch.empty(512, 256, device=DEV, dtype=torch.bfloat16)
    stream = torch.cuda.current_stream().cuda_stream
    with pytest.raises(gt.Error, match="group_rows"):
        g.run(a.data_ptr(), w.data_ptr(), d.data_ptr(), stream=stream)
    # The pointer-list entry point has no group_rows: it refuses a grouped problem and names the one that has.
    L = _native.lib()
    st = L.gt_gemm_run(g._h, a.data_ptr(), w.data_ptr(), 0, d.data_ptr(), 0, 0, 0, 0, 0, 0, 0, 0, stream)
    assert st == 2, "gt_gemm_run took a grouped problem"
    assert "gt_gemm_run_args" in L.gt_last_error().decode()
    # A struct too small for the pointers is refused before anything is launched.
    args = _native.GemmArgs(ctypes.sizeof(ctypes.c_void_p))
    assert L.gt_gemm_run_args(g._h, ctypes.byref(args), stream) == 2
    assert "too small" in L.gt_last_error().decode()
