"""The torch ops' C++ hot path on the GPU: after one call (the Python path plans, tunes and fills the C++ table) the
same metadata launches from C++, with the same kernel, so the result is bit for bit the Python path's; on another
stream, in a CUDA graph, from a new thread, and on another device when there is one.

Run on the GPU host: python3 -m pytest -q tests/python/gpu/test_native_ops.py
"""
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import gemmtune.torch as gt  # noqa: E402
from gemmtune.torch import _native_ops as N  # noqa: E402
from gemmtune.torch import ops  # noqa: E402

pytestmark = pytest.mark.skipif(not N.loaded, reason=f"no C++ hot path: {N.reason}")
DEV = torch.device("cuda")
BF = torch.bfloat16


@pytest.fixture(autouse=True)
def quick_tuning():
    old = dict(gt.options())
    gt.set_options(top_k=2, progress=False)
    gt.clear_selections()
    yield
    gt.set_options(**{k: old[k] for k in ("tune", "top_k", "progress") if k in old})


def _linear(m, n, k, epilogue="none", bias=False, lead=()):
    def make():
        a = torch.randn(*lead, m, k, device=DEV, dtype=BF)
        w = torch.randn(n, k, device=DEV, dtype=BF)
        kw = {"epilogue": epilogue}
        if bias:
            kw["bias"] = torch.randn(n, device=DEV, dtype=BF)
        return a, w, kw
    return make


def _mm(shape_a, shape_b, dtype=BF):
    return lambda: (torch.randn(*shape_a, device=DEV, dtype=dtype), torch.randn(*shape_b, device=DEV, dtype=dtype), {})


CASES = [
    ("linear", _linear(37, 192, 256, lead=(3,))),
    ("linear", _linear(64, 384, 256, epilogue="silu_glu")),
    ("linear", _linear(48, 320, 128, bias=True)),
    ("linear", _linear(48, 320, 128, epilogue="gelu_tanh", bias=True)),
    ("mm", _mm((100, 72), (72, 136))),
    ("bmm", _mm((4, 33, 64), (4, 64, 48), torch.float16)),
]


def call(op, a, b, kw):
    return getattr(torch.ops.gemmtune, op)(a, b, **kw)


def python_path(op, a, b, kw):
    return {"mm": ops._mm, "bmm": ops._bmm, "linear": ops._linear}[op](a, b, **kw)


@pytest.mark.parametrize("op, make", CASES)
def test_hit_is_the_python_path_bit_for_bit(op, make):
    a, b, kw = make()
    first = call(op, a, b, kw)  # a miss: Python plans, tunes, fills the table
    assert torch.ops.gemmtune._native_size() >= 1
    again = call(op, a, b, kw)  # a hit in C++
    want = python_path(op, a, b, kw)
    assert torch.equal(again, want) and torch.equal(first, want)


def test_other_stream_and_graph():
    a, b, _ = CASES[0][1]()
    want = call("linear", a, b, {"epilogue": "none"})
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        got = call("linear", a, b, {"epilogue": "none"})
    torch.cuda.current_stream().wait_stream(s)
    assert torch.equal(got, want)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = call("linear", a, b, {"epilogue": "none"})
    a.copy_(torch.randn_like(a))
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, python_path("linear", a, b, {"epilogue": "none"}))


def test_hit_from_a_new_thread():
    """A thread that has made no CUDA call: the C++ path makes the device's context current before its launch."""
    import threading
    a, b, _ = CASES[0][1]()
    want = call("linear", a, b, {"epilogue": "none"})
    torch.cuda.synchronize()
    got, errors = [], []

    def worker():
        try:
            got.append(call("linear", a, b, {"epilogue": "none"}))
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert not errors and torch.equal(got[0], want)


def test_backward_through_the_twin():
    """A call that needs a gradient goes to the Python autograd.Function (the _py_ twin): the same forward, and the
    backward of the Python path."""
    x = torch.randn(32, 128, device=DEV, dtype=BF, requires_grad=True)
    w = torch.randn(64, 128, device=DEV, dtype=BF)
    y = torch.ops.gemmtune.linear(x, w)
    with torch.no_grad():
        assert torch.equal(y, python_path("linear", x, w, {}))
    y.float().sum().backward()
    want = torch.ones(32, 64, device=DEV, dtype=BF) @ w
    assert (x.grad.float() - want.float()).abs().max().item() <= 2e-2 * want.float().abs().max().item()


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="one GPU")
def test_second_device():
    a = torch.randn(64, 128, device="cuda:1", dtype=BF)
    w = torch.randn(96, 128, device="cuda:1", dtype=BF)
    call("linear", a, w, {"epilogue": "none"})
    got = call("linear", a, w, {"epilogue": "none"})  # a hit, launched on cuda:1 while cuda:0 is current
    assert got.device == a.device and torch.equal(got, python_path("linear", a, w, {"epilogue": "none"}))


# Inductor's extern kernels (gemmtune/torch/inductor.py): the out= operators, each mode of addmm's input.
OUT_CASES = [
    ("inductor_mm", lambda: ((torch.randn(100, 72, device=DEV, dtype=BF), torch.randn(72, 136, device=DEV, dtype=BF)),
                             {}, (100, 136))),
    ("inductor_mm", lambda: ((torch.randn(3, 40, 64, device=DEV, dtype=BF),
                              torch.randn(3, 64, 48, device=DEV, dtype=BF)), {}, (3, 40, 48))),
    ("inductor_addmm", lambda: ((torch.randn(1, 136, device=DEV, dtype=BF).expand(100, 136),
                                 torch.randn(100, 72, device=DEV, dtype=BF),
                                 torch.randn(136, 72, device=DEV, dtype=BF).t()),
                                {"alpha": 1.0, "beta": 1.0, "mode": "bias"}, (100, 136))),
    ("inductor_addmm", lambda: ((torch.randn(100, 1, device=DEV, dtype=BF).expand(100, 136),
                                 torch.randn(100, 72, device=DEV, dtype=BF),
                                 torch.randn(72, 136, device=DEV, dtype=BF)),
                                {"alpha": 0.5, "beta": 1.0, "mode": "bias_row"}, (100, 136))),
    ("inductor_addmm", lambda: ((torch.randn(100, 136, device=DEV, dtype=BF),
                                 torch.randn(100, 72, device=DEV, dtype=BF),
                                 torch.randn(72, 136, device=DEV, dtype=BF)),
                                {"alpha": 1.0, "beta": 0.5, "mode": "c"}, (100, 136))),
]


@pytest.mark.parametrize("op, make", OUT_CASES)
def test_inductor_out_ops_hit_bit_for_bit(op, make):
    from gemmtune.torch import inductor
    args, kw, shape = make()
    py = {"inductor_mm": inductor.gemmtune_mm, "inductor_addmm": inductor.gemmtune_addmm}[op]
    want = torch.full(shape, float("nan"), device=DEV, dtype=BF)
    py(*args, out=want, **kw)  # the Python path: plans, tunes, fills the table
    n = torch.ops.gemmtune._native_size()
    assert n >= 1
    calls = []
    real = inductor._dispatch.gemm
    try:
        inductor._dispatch.gemm = lambda *a, **k: calls.append(1) or real(*a, **k)
        got = torch.full(shape, float("nan"), device=DEV, dtype=BF)
        getattr(torch.ops.gemmtune, op)(*args, out=got, **kw)  # a hit in C++: no Python call
    finally:
        inductor._dispatch.gemm = real
    assert calls == [] and torch.equal(got, want)
    if op == "inductor_mm":
        ref = args[0].float() @ args[1].float()
    else:
        ref = kw["alpha"] * (args[1].float() @ args[2].float()) + \
            (1.0 if kw["mode"] != "c" else kw["beta"]) * args[0].float()
    assert (want.float() - ref).abs().max().item() <= 2e-2 * ref.abs().max().item() + 1e-2


def test_compiled_graph_launches_from_cpp():
    """Under torch.compile (max-autotune without CUDA graphs) a small GEMM, below the Python kernels' host-cost floor,
    is offered; once warm the compiled graph's gemmtune calls do not enter Python."""
    from gemmtune.torch import inductor
    x = torch.randn(16, 512, device=DEV, dtype=BF)
    w = torch.randn(512, 1024, device=DEV, dtype=BF)
    bias = torch.randn(1024, device=DEV, dtype=BF)
    gt.enable(fuse=False, choices=True)
    old_force = inductor._FORCE
    try:
        inductor._FORCE = True  # only the gemmtune choice, so the generated code calls it
        torch._dynamo.reset()
        with torch._inductor.config.patch(max_autotune=True, fx_graph_cache=False):
            f = torch.compile(lambda x, w, b: torch.addmm(b, x, w) + 0, mode="max-autotune-no-cudagraphs")
            f(x, w, bias)
            calls = []
            real = inductor._dispatch.gemm
            inductor._dispatch.gemm = lambda *a, **k: calls.append(1) or real(*a, **k)
            try:
                got = f(x, w, bias)
            finally:
                inductor._dispatch.gemm = real
    finally:
        inductor._FORCE = old_force
        gt.disable()
        torch._dynamo.reset()
    assert inductor.stats()["choices_offered"] >= 1 and calls == []
    ref = x.float() @ w.float() + bias.float()
    assert (got.float() - ref).abs().max().item() <= 2e-2 * ref.abs().max().item()


def test_max_autotune_with_cuda_graphs_captures_and_replays():
    """mode="max-autotune" (CUDA graphs on): the compiled graph with gemmtune's choice is captured once and replayed;
    every replay computes on that call's inputs."""
    from gemmtune.torch import inductor
    w = torch.randn(384, 768, device=DEV, dtype=BF) / 16
    bias = torch.randn(768, device=DEV, dtype=BF)

    def run():
        with torch._inductor.config.patch(max_autotune=True, fx_graph_cache=False):
            f = torch.compile(lambda x: torch.relu(torch.addmm(bias, x, w)), mode="max-autotune")
            outs = []
            for _ in range(4):  # warm-up, record, then replays
                x = torch.randn(48, 384, device=DEV, dtype=BF)
                outs.append((x, f(x).clone()))
            return outs
    outs = _forced(run)
    assert inductor.stats()["choices_offered"] >= 1, inductor.stats()
    for x, got in outs:
        ref = torch.relu(x.float() @ w.float() + bias.float())
        assert (got.float() - ref).abs().max().item() <= 2e-2 * ref.abs().max().item()


class _MmRelu(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(256, 384, device=DEV, dtype=BF) / 16, requires_grad=False)

    def forward(self, x):
        return torch.relu(x @ self.w)


def _forced(fn):
    """fn() with only gemmtune's choice kept for each GEMM, so the generated code calls it."""
    from gemmtune.torch import inductor
    gt.enable(fuse=False, choices=True)
    old = inductor._FORCE
    inductor._FORCE = True
    inductor.reset_stats()
    try:
        torch._dynamo.reset()
        return fn()
    finally:
        inductor._FORCE = old
        gt.disable()
        torch._dynamo.reset()


def test_cpp_wrapper_calls_gemmtune():
    from gemmtune.torch import inductor
    m, x = _MmRelu(), torch.randn(100, 256, device=DEV, dtype=BF)

    def run():
        with torch._inductor.config.patch(cpp_wrapper=True, fx_graph_cache=False):
            f = torch.compile(m, mode="max-autotune-no-cudagraphs")
            f(x)
            return f(x)
    got = _forced(run)
    assert inductor.stats()["choices_offered"] >= 1, inductor.stats()
    ref = torch.relu(x.float() @ m.w.float())
    assert (got.float() - ref).abs().max().item() <= 2e-2 * ref.abs().max().item()


def _aoti_child(path, io_path):
    """Loads the package in a new Python process that imports gemmtune.torch and runs it on the saved input; exits 0
    when the output is right."""
    import os
    import subprocess
    import sys
    script = (
        "import faulthandler, sys, torch, gemmtune.torch\n"
        "faulthandler.enable()\n"
        "faulthandler.dump_traceback_later(240, exit=True)\n"  # where it stands if it does not finish
        "gemmtune.torch.set_options(top_k=2, progress=False)\n"  # the parent's: its selection is in the cache
        f"io = torch.load({str(io_path)!r})\n"
        f"model = torch._inductor.aoti_load_package({str(path)!r})\n"
        "got = model(io['x'].cuda()).float().cpu()\n"
        "err = (got - io['ref']).abs().max().item()\n"
        "print('size', torch.ops.gemmtune._native_size(), 'err', err, flush=True)\n"
        "sys.exit(0 if err <= 2e-2 * io['ref'].abs().max().item() else 1)\n")
    # Loading takes a while: aoti_load_package builds Inductor's CPU vector-ISA probes (C++ compiles) in a new process.
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=dict(os.environ),
                          timeout=300)


def test_aot_inductor_package_in_a_fresh_process(tmp_path):
    """A model exported and packaged by AOTInductor with gemmtune's choice runs in a new process that imports
    gemmtune.torch: the package's C++ calls gemmtune::mm, whose first call takes the selection from the result
    cache. The same model packaged without gemmtune is loaded first: where that fails too, the host's AOTInductor
    cannot load packages at all and the test says so instead of failing."""
    import zipfile
    from gemmtune.torch import inductor
    m, x = _MmRelu(), torch.randn(100, 256, device=DEV, dtype=BF)
    io_path = tmp_path / "io.pt"
    torch.save({"x": x.cpu(), "ref": torch.relu(x.float() @ m.w.float()).cpu()}, io_path)

    def export(name):
        with torch._inductor.config.patch(max_autotune=True, fx_graph_cache=False):
            ep = torch.export.export(m, (x,))
            return torch._inductor.aoti_compile_and_package(ep, package_path=str(tmp_path / name))
    torch._dynamo.reset()
    control = _aoti_child(export("plain.pt2"), io_path)
    if control.returncode != 0:
        pytest.skip(f"a package without gemmtune does not load and run in a new process on this host either "
                    f"(exit status {control.returncode}): {(control.stdout + control.stderr)[-600:]}")
    path = _forced(lambda: export("m.pt2"))
    assert inductor.stats()["choices_offered"] >= 1, inductor.stats()
    with zipfile.ZipFile(path) as z:
        assert any(b"gemmtune::mm" in z.read(n) for n in z.namelist() if n.endswith((".json", ".cpp"))), z.namelist()
    r = _aoti_child(path, io_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "size 1" in r.stdout, r.stdout  # the call reached gemmtune::mm, whose Python miss filled the C++ table
