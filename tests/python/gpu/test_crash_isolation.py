"""No candidate can sink a tune, through Python: the core API, the torch ops and torch.compile's extern choice.
The worker's fault injection (GEMMTUNE_WORKER_FAULT, src/tuner/fault_injection.h) makes one candidate fail for real
on the GPU; the op must still return the right answer from another candidate.

On the GPU host:
    PYTHONPATH=python GEMMTUNE_LIBRARY=build/libgemmtune.so python3 -m pytest tests/python/gpu/test_crash_isolation.py
"""
import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

import gemmtune  # noqa: E402
import gemmtune.torch as gt  # noqa: E402
from gemmtune.torch import inductor  # noqa: E402

bf = torch.bfloat16


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMMTUNE_CACHE_DIR", str(tmp_path))
    saved = gt.options()
    lines = []
    gt.set_options(top_k=2, use_cache=False, progress=lines.append)
    gt.clear_selections()
    yield lines
    gt.set_options(**saved)
    gt.clear_selections()
    os.environ.pop("GEMMTUNE_WORKER_FAULT", None)


def close(out, ref, tol=2e-2):
    out, ref = out.double(), ref.double()
    err = (out - ref).abs().max().item()
    assert err <= tol * max(ref.abs().max().item(), 1e-6), err


def test_sliced_lm_head(isolated):
    """The issue's repro: a sliced activation and a sliced weight (pitches 4200 and 4100 elements)."""
    big = torch.randn(3000, 4200, device="cuda", dtype=bf)
    w = torch.randn(5003, 4100, device="cuda", dtype=bf)
    a, b = big[:512, :4096], w[:5003, :4096].t()
    y = torch.ops.gemmtune.mm(a, b)
    close(y, a.float() @ b.float())


@pytest.mark.parametrize("kind", ["trap", "illegal_address", "misaligned"])
@pytest.mark.parametrize("step", ["verify", "timing"])
def test_mm_survives_a_sticky_error(isolated, kind, step):
    m, n, k = 320, 384, 256
    victim = gemmtune.candidates(gemmtune.Problem.make(m, n, k), backends=["sm90"], top_k=1)[0]
    os.environ["GEMMTUNE_WORKER_FAULT"] = f"{kind},{step},{victim}"
    x = torch.randn(m, k, device="cuda", dtype=bf)
    w = torch.randn(n, k, device="cuda", dtype=bf)
    y = torch.ops.gemmtune.mm(x, w.t())
    torch.cuda.synchronize()
    close(y, x.float() @ w.float().t())
    assert any(str(victim) in line and "crashed" in line for line in isolated), "the fault did not fire:\n" + \
        "\n".join(isolated)


def test_tuner_api_records_the_crash(isolated):
    p = gemmtune.Problem.make(256, 256, 256)
    cands = gemmtune.candidates(p, backends=["cublaslt"], top_k=3)
    assert len(cands) >= 2
    os.environ["GEMMTUNE_WORKER_FAULT"] = f"trap,verify,{cands[0]}"
    rep = gemmtune.Tuner(backends=["cublaslt"], top_k=3, use_cache=False, min_time_ms=2, settle_ms=0).tune(p)
    fates = {str(r.candidate): r.status for r in rep.results}
    assert fates[str(cands[0])] == "crashed", fates
    assert rep.winner is not None and str(rep.winner) != str(cands[0])


def test_compile_extern_choice_fails_soft_when_every_candidate_crashes(isolated, monkeypatch):
    """torch.compile with gemmtune among the choices: when no gemmtune candidate survives, Inductor keeps its own."""
    monkeypatch.setattr(inductor, "MIN_GPU_US", 0.0)
    os.environ["GEMMTUNE_WORKER_FAULT"] = "misaligned,verify,*"
    x = torch.randn(256, 512, device="cuda", dtype=bf)
    w = torch.randn(384, 512, device="cuda", dtype=bf)
    gt.enable()
    torch._dynamo.reset()
    try:
        with torch._inductor.config.patch(fx_graph_cache=False), torch.no_grad():
            y = torch.compile(lambda a, b: a @ b.t(), mode="max-autotune-no-cudagraphs")(x, w)
    finally:
        gt.disable()
        torch._dynamo.reset()
    close(y, x.float() @ w.float().t())
