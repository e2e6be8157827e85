"""gemmtune.torch's ops and dispatcher without a GPU: fake implementations, the Problem built from strides, error
paths, the selection cache's hit path and the capture guard (with a mocked launch)."""
import threading

import pytest

torch = pytest.importorskip("torch")

import gemmtune  # noqa: E402
import gemmtune.torch as gt  # noqa: E402
from gemmtune.torch import _dispatch as D  # noqa: E402
from gemmtune.torch import ops  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

bf, f16 = torch.bfloat16, torch.float16
e4m3 = torch.float8_e4m3fn


def rnd(*shape, dtype=bf):
    return torch.randn(*shape).to(dtype)


# -- fake implementations --------------------------------------------------------------------------------------


@pytest.mark.parametrize("lead", [(), (7,), (2, 3), (1, 1, 5)])
@pytest.mark.parametrize("epilogue,n_out", [("none", 96), ("gelu_tanh", 96), ("silu_glu", 48), ("bias,relu", 96),
                                            ("gelu_glu:interleave16", 48)])
def test_linear_fake_shapes(lead, epilogue, n_out):
    with FakeTensorMode():
        x = torch.empty(*lead, 64, device="cuda", dtype=bf)
        w = torch.empty(96, 64, device="cuda", dtype=bf)
        bias = torch.empty(96, device="cuda", dtype=bf) if "bias" in epilogue else None
        y = torch.ops.gemmtune.linear(x, w, bias, epilogue)
        assert tuple(y.shape) == (*lead, n_out) and y.dtype == bf and y.device.type == "cuda"
        r = torch.empty(*lead, n_out, device="cuda", dtype=bf)
        chain = "residual" if epilogue == "none" else epilogue + ",residual"
        assert tuple(torch.ops.gemmtune.linear(x, w, bias, chain, r).shape) == (*lead, n_out)


def test_mm_bmm_scaled_mm_fake():
    with FakeTensorMode():
        a = torch.empty(33, 64, device="cuda", dtype=f16)
        b = torch.empty(64, 17, device="cuda", dtype=f16)
        y = torch.ops.gemmtune.mm(a, b)
        assert tuple(y.shape) == (33, 17) and y.dtype == f16
        y = torch.ops.gemmtune.bmm(a.expand(4, 33, 64), b.expand(4, 64, 17))
        assert tuple(y.shape) == (4, 33, 17)
        a8 = torch.empty(32, 64, device="cuda", dtype=e4m3)
        b8 = torch.empty(48, 64, device="cuda", dtype=e4m3).t()
        one = torch.ones((), device="cuda")
        assert torch.ops.gemmtune.scaled_mm(a8, b8, one, one).dtype == e4m3  # torch._scaled_mm's default
        y = torch.ops.gemmtune.scaled_mm(a8, b8, one, one, out_dtype=bf)
        assert tuple(y.shape) == (32, 48) and y.dtype == bf


def _traced_out(fn, *inputs):
    """The output value of fn traced with every input size symbolic (as torch.compile's dynamic shapes)."""
    from torch.fx.experimental.proxy_tensor import make_fx
    gm = make_fx(fn, tracing_mode="symbolic")(*inputs)
    out = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    return out.meta["val"]


def hints(sizes):
    return [D._size(n) for n in sizes]


def test_fakes_keep_symbolic_sizes():
    """A graph traced with dynamic shapes: the output's sizes and strides are the inputs' symbols, not the values
    traced with, so the graph serves every size (the library reads the traced values, the symbols stay)."""
    x, w = rnd(6, 5, 64), rnd(96, 64)
    y = _traced_out(lambda x, w: torch.ops.gemmtune.linear(x, w, None, "silu_glu"), x, w)
    assert all(isinstance(n, torch.SymInt) for n in y.shape)
    assert hints(y.shape) == [6, 5, 48] and hints(y.stride()) == [240, 48, 1]
    assert y.stride()[0] == y.shape[1] * y.shape[2] and y.stride()[1] == y.shape[2]
    a, b = rnd(4, 33, 64, dtype=f16), rnd(4, 64, 17, dtype=f16)
    y = _traced_out(torch.ops.gemmtune.bmm, a, b)
    assert hints(y.shape) == [4, 33, 17] and all(isinstance(n, torch.SymInt) for n in y.shape)
    assert y.stride()[0] == y.shape[1] * y.shape[2]
    y = _traced_out(torch.ops.gemmtune.mm, a[0], b[0])
    assert hints(y.shape) == [33, 17] and all(isinstance(n, torch.SymInt) for n in y.shape)


def test_meta_tensors_and_plain_functions():
    x = torch.empty(5, 7, 64, device="meta", dtype=bf)
    w = torch.empty(96, 64, device="meta", dtype=bf)
    assert tuple(torch.ops.gemmtune.linear(x, w, None, "silu_glu").shape) == (5, 7, 48)
    assert tuple(ops.linear(x, w, None, "silu_glu").shape) == (5, 7, 48)
    assert tuple(ops.mm(x[0], w.t()).shape) == (7, 96)
    assert tuple(ops.bmm(x, w.t().expand(5, 64, 96)).shape) == (5, 7, 96)


@pytest.mark.parametrize("call,match", [
    (lambda a, w: torch.ops.gemmtune.mm(a, w), "inner dims"),
    (lambda a, w: torch.ops.gemmtune.mm(a[None], w.t()), "2-D"),
    (lambda a, w: torch.ops.gemmtune.bmm(a.expand(2, 8, 64), w.t().expand(3, 64, 96)), "batch sizes"),
    (lambda a, w: torch.ops.gemmtune.linear(a, w[:, :32]), "K differs"),
    (lambda a, w: torch.ops.gemmtune.linear(a, w[:95], None, "silu_glu"), "even N"),
    (lambda a, w: torch.ops.gemmtune.linear(a, w, None, "residual", torch.empty(8, 95, device="cuda", dtype=bf)),
     "output's shape"),
    (lambda a, w: torch.ops.gemmtune.linear(a.float(), w.float()), "float32"),
    (lambda a, w: torch.ops.gemmtune.scaled_mm(a, w.t(), torch.ones(()), torch.ones(())), "float8"),
])
def test_fake_errors(call, match):
    with FakeTensorMode():
        a = torch.empty(8, 64, device="cuda", dtype=bf)
        w = torch.empty(96, 64, device="cuda", dtype=bf)
        with pytest.raises(gemmtune.InvalidInputError, match=match):
            call(a, w)


def test_export_keeps_the_ops():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(rnd(96, 64), requires_grad=False)

        def forward(self, x):
            return ops.linear(x, self.w, None, "gelu_tanh") + torch.ops.gemmtune.mm(x.reshape(-1, 64),
                                                                                     self.w.t()).view(2, 3, 96)

    ep = torch.export.export(M(), (rnd(2, 3, 64),))
    targets = {str(n.target) for n in ep.graph.nodes}
    assert "gemmtune.linear.default" in targets and "gemmtune.mm.default" in targets


def test_compile_fullgraph_traces_without_breaks():
    graphs = []

    def backend(gm, inputs):
        graphs.append(gm)
        return gm.forward

    def f(x, w, b):
        return ops.linear(x, w, b, "silu_glu") * 2

    x, w, b = rnd(4, 64), rnd(96, 64), rnd(96)
    torch._dynamo.reset()
    compiled = torch.compile(f, backend=backend, fullgraph=True)
    with pytest.raises(gemmtune.InvalidInputError, match="CPU tensors"):  # traced fine; the CPU run refuses
        compiled(x, w, b)
    assert len(graphs) == 1
    assert any(str(n.target).startswith("gemmtune.linear") for n in graphs[0].graph.nodes)


def test_autocast_kernel_casts_float32():
    kernel = ops._autocast("linear")
    with FakeTensorMode():
        x = torch.empty(8, 64, device="cuda")
        w = torch.empty(96, 64, device="cuda")
        bias = torch.empty(96, device="cuda")
        y = kernel(x, w, bias, "bias,gelu_tanh", None)
        assert y.dtype == torch.get_autocast_dtype("cuda")


# -- the Problem built from tensors ----------------------------------------------------------------------------


def plan(a, b, **kw):
    return D.build("test", a, b, **kw)


def test_row_and_col_major_views():
    a, w = rnd(64, 128), rnd(96, 128)
    p = plan(a, w.t()).problem
    assert (p.m, p.n, p.k) == (64, 96, 128)
    assert (p.a.layout, p.a.ld, p.b.layout, p.b.ld) == ("row", 128, "col", 128)
    p = plan(a.t().contiguous().t(), w.t().contiguous()).problem
    assert (p.a.layout, p.a.ld, p.b.layout, p.b.ld) == ("col", 64, "row", 96)
    p = plan(rnd(64, 200)[:, :128], rnd(300, 96)[:128]).problem  # padded leading dims
    assert (p.a.ld, p.b.layout, p.b.ld) == (200, "row", 96)


def test_size_one_dims_are_normalized():
    p = plan(rnd(1, 100), rnd(96, 100).t()).problem  # M = 1: A's row stride means nothing
    assert p.a.layout == "row" and p.a.ld >= 100 and p.a.ld % 8 == 0
    p = plan(rnd(64, 1), rnd(1, 96)).problem  # K = 1: a column vector times a row vector
    assert p.a.layout == "col" and p.b.layout == "row"
    p = plan(rnd(1, 64).t(), rnd(1, 96)).problem  # a (64, 1) with strides (1, 64)
    assert p.a.layout == "col" and p.a.ld % 8 == 0


def test_odd_alignment_slices():
    a = rnd(64, 130)[:, 1:129]  # starts 2 bytes past an aligned address
    p = plan(a, rnd(96, 128).t()).problem
    assert p.a.align == 2 and p.a.ld == 130
    p = plan(rnd(64, 136)[:, 4:132], rnd(96, 128).t()).problem
    assert p.a.align == 8


def test_no_unit_stride_is_copied():
    a = rnd(64, 256)[:, ::2]
    pl = plan(a, rnd(96, 128).t())
    assert pl.copies and (pl.problem.a.layout, pl.problem.a.ld, pl.problem.a.align) == ("row", 128, 16)
    fixed = pl.fix(a=a)["a"]
    assert fixed.is_contiguous() and torch.equal(fixed, a)


def test_fp8_at_odd_address_is_copied():
    a = rnd(32, 65, dtype=e4m3)[:, 1:]
    pl = plan(a, rnd(48, 64, dtype=e4m3).t(), scale_a=torch.ones(1), scale_b=torch.ones(1), out_dtype=bf)
    assert pl.copies and pl.problem.a.align == 16 and pl.problem.scaling == "tensor"
    a_odd = rnd(32 * 64 + 1, dtype=e4m3)[1:].view(32, 64)  # contiguous, at an odd address
    pl = plan(a_odd, rnd(48, 64, dtype=e4m3).t(), scale_a=torch.ones(1), scale_b=torch.ones(1), out_dtype=bf)
    fixed = pl.fix(a=a_odd)["a"]
    assert fixed.data_ptr() % 16 == 0 and torch.equal(fixed.view(torch.uint8), a_odd.view(torch.uint8))


def test_batch_broadcast_and_strides():
    a = rnd(64, 128).expand(4, 64, 128)
    b = rnd(4, 96, 128).transpose(1, 2)
    p = plan(a, b).problem
    assert p.batch == 4 and p.a.batch_stride == 0 and p.b.batch_stride == 96 * 128 and p.b.layout == "col"
    assert D.build("test", a, b).out_shape == (4, 64, 96)
    p = plan(rnd(3, 64, 128), rnd(128, 96)).problem  # a 2-D b is shared by every batch
    assert p.batch == 3 and p.b.batch_stride == 0 and p.a.batch_stride == 64 * 128


def test_epilogue_dtypes_are_explicit():
    a, w = rnd(64, 128), rnd(96, 128)
    pl = plan(a, w.t(), bias=torch.randn(96), epilogue="gelu_tanh")
    assert pl.epilogue == "bias:f32,gelu_tanh"
    pl = plan(a, w.t(), residual=rnd(64, 48), epilogue="silu_glu,residual")
    assert pl.epilogue == "silu_glu,residual:bf16" and pl.out_shape == (64, 48)
    with pytest.raises(gemmtune.InvalidInputError, match="make them agree"):
        plan(a, w.t(), bias=torch.randn(96), epilogue="bias:bf16")


def test_residual_in_another_layout_is_copied():
    a, w = rnd(64, 128), rnd(96, 128)
    r = rnd(96, 64).t()
    pl = plan(a, w.t(), residual=r, epilogue="residual")
    res = pl.fix(residual=r)["residual"]
    assert res.stride() == (96, 1) and torch.equal(res, r)


def test_linear_form_flattens_leading_dims():
    x, w = rnd(2, 5, 64), rnd(96, 64)
    pl = D.build("gemmtune.linear", x, w, kind="linear", epilogue="silu_glu")
    assert pl.out_shape == (2, 5, 48) and not pl.copies and pl.problem.m == 10 and pl.problem.b.layout == "col"
    xs = rnd(5, 2, 64).transpose(0, 1)  # cannot be flattened without a copy
    pl = D.build("gemmtune.linear", xs, w, kind="linear")
    x2 = pl.fix(a=xs)["a"]
    assert x2.is_contiguous() and torch.equal(x2, xs) and pl.problem.a.ld == 64


def test_fp8_scalings():
    a, b = rnd(64, 256, dtype=e4m3), rnd(96, 256, dtype=e4m3).t()
    def scaled(sa, sb):
        return D.build("t", a, b, kind="scaled_mm", scale_a=sa, scale_b=sb, out_dtype=bf)

    pl = scaled(torch.ones(64, 1), torch.ones(1, 96))
    assert pl.problem.scaling == "row" and not pl.copies
    ta = torch.arange(64 * 2, dtype=torch.float32).view(64, 2)  # (M, K/128), row-major as given
    tb = torch.arange(2 * 1, dtype=torch.float32).view(2, 1)
    pl = scaled(ta, tb)
    assert pl.problem.scaling == "block"
    # gemmtune reads scale_a[(k/128)*M + m] and scale_b[(n/128)*ceil(K/128) + k/128]: the copy's memory order
    fixed = pl.fix(scale_a=ta, scale_b=tb)
    sa, sb = fixed["scale_a"], fixed["scale_b"]
    assert sa.t().reshape(-1)[1 * 64 + 5] == ta[5, 1] and sb.data_ptr() == tb.data_ptr()
    outer = ta.t().contiguous().t()  # torch's outer-dim-major layout: no copy
    assert not scaled(outer, tb).copies
    p = plan(a, b, scale_a=sa.t().reshape(-1), scale_b=sb.reshape(-1), scaling="block", out_dtype=bf).problem
    assert p.scaling == "block"
    with pytest.raises(gemmtune.InvalidInputError, match="no scaling gemmtune supports"):
        scaled(torch.ones(64, 2), torch.ones(2, 96))  # 1x128 B scales


@pytest.mark.parametrize("kw,match", [
    (dict(a=rnd(8, 64, dtype=torch.float32)), "float32.*cast"),
    (dict(a=torch.ones(8, 64, dtype=torch.int8)), "int8"),
    (dict(b=rnd(63, 96)), "inner dims"),
    (dict(epilogue="bias"), "no bias tensor"),
    (dict(bias=rnd(95)), "95 elements"),
    (dict(bias=rnd(96, 2)), "vector"),
    (dict(residual=rnd(8, 95), epilogue="residual"), "output's shape"),
    (dict(residual=rnd(8, 96)), "no op that reads it"),
    (dict(epilogue="bogus_op"), "bogus"),
    (dict(epilogue="residual,silu_glu", residual=rnd(8, 48)), "residual"),
    (dict(beta=1.0), "needs c"),
    (dict(out=rnd(8, 95)), "out has shape"),
    (dict(out_dtype=torch.int32), "output dtype"),
    (dict(scale_a=torch.ones(1)), "float8"),
])
def test_build_errors(kw, match):
    args = dict(a=rnd(8, 64), b=rnd(96, 64).t())
    args.update(kw)
    with pytest.raises(gemmtune.InvalidInputError, match=match):
        D.build("gemmtune.test", args.pop("a"), args.pop("b"), **args)


def test_cpu_tensors_are_refused_with_the_op_name():
    a, w = rnd(8, 64), rnd(96, 64)
    with pytest.raises(gemmtune.InvalidInputError, match="gemmtune.linear.*CUDA"):
        torch.ops.gemmtune.linear(a, w)
    with pytest.raises(gemmtune.InvalidInputError, match="gemmtune.mm.*CUDA"):
        torch.ops.gemmtune.mm(a, w.t())
    with pytest.raises(gemmtune.InvalidInputError, match="gemmtune.mm.*cpu"):
        D.gemm(a, w.t(), op="gemmtune.mm")


def test_empty_outputs_launch_nothing():
    y = D.build("t", rnd(0, 64), rnd(96, 64).t())
    assert y.empty and (y.out_shape, y.out_dtype) == ((0, 96), bf)


# -- the hit path and the capture guard, with a mocked launch ----------------------------------------------------


class _FakeGemm:
    candidate = "mock:cfg"


@pytest.fixture
def mocked(monkeypatch):
    """_dispatch on CPU tensors: the device check passes, selection returns a mock whose run records its pointers."""
    calls, selects = [], []

    def run(h, *ptrs):
        calls.append(ptrs)
        return 0

    class Tuner:
        def __init__(self, **kw):
            self.kw = kw

        def select(self, problem):
            selects.append(problem)
            g = _FakeGemm()
            g._run, g._h = run, 1
            return g

    monkeypatch.setattr(D, "check_devices", lambda *a, **k: None)
    monkeypatch.setattr(D, "Tuner", Tuner)
    # The Python path under test: with the C++ hot path loaded, ops.* would go through the dispatcher (CPU: refused).
    monkeypatch.setattr(D._native_ops, "loaded", False)
    monkeypatch.setattr(D, "_raw_stream", lambda dev: 1234)
    monkeypatch.setattr(D, "_bind_context", lambda dev: None)
    monkeypatch.setattr(D._tls, "ready", {-1}, raising=False)
    monkeypatch.setattr(torch.cuda, "device", lambda dev: _Null())
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)
    D.clear_selections()
    yield calls, selects
    D.clear_selections()
    D.set_options(**D._DEFAULTS)


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def test_hit_path_selects_once_and_passes_pointers(mocked):
    calls, selects = mocked
    a, w, bias = rnd(8, 64), rnd(96, 64), rnd(96)
    for _ in range(3):
        y = D.gemm(a, w.t(), bias=bias, epilogue="gelu_tanh", op="gemmtune.linear")
    assert len(selects) == 1 and len(calls) == 3 and y.shape == (8, 96)
    pa, pb, pc, pd, pbias = calls[-1][:5]
    assert (pa, pb, pc, pbias) == (a.data_ptr(), w.data_ptr(), 0, bias.data_ptr()) and pd == y.data_ptr()
    assert calls[-1][-1] == 1234  # the current stream
    assert list(D.selections().values()) == ["mock:cfg"]
    D.gemm(a[:4], w.t(), bias=bias, epilogue="gelu_tanh")  # another shape: another selection
    assert len(selects) == 2


def test_use_fast_accum_is_the_problems_accumulation(mocked):
    """torch._scaled_mm's use_fast_accum reaches the plan as the problem's fp8_accum: each mode its own selection."""
    calls, selects = mocked
    a, w, one = rnd(64, 256, dtype=e4m3), rnd(96, 256, dtype=e4m3), torch.ones(())
    for fast in (False, True, True, False):
        ops._scaled_mm(a, w.t(), one, one, out_dtype=bf, use_fast_accum=fast)
    assert [p.fp8_accum for p in selects] == ["exact", "fast"] and len(calls) == 4
    assert selects[0].info()["key"] != selects[1].info()["key"]
    # The C ABI's problem JSON carries it (a Problem made in Python reads back the same).
    assert gemmtune.Problem.make(64, 96, 256, "e4m3").resolve().fp8_accum == "exact"
    p = gemmtune.Problem.make(64, 96, 256, "e4m3", scaling="row")
    p.fp8_accum = "fast"
    assert p.resolve().fp8_accum == "fast" and "--fp8-accum=fast" in p.str()


def test_use_fast_accum_with_block_scales_is_refused_at_trace_time():
    with FakeTensorMode():
        a = torch.empty(64, 256, device="cuda", dtype=e4m3)
        w = torch.empty(96, 256, device="cuda", dtype=e4m3)
        f32 = dict(device="cuda", dtype=torch.float32)
        sa, sb = torch.empty(2, 64, **f32).t(), torch.empty(1, 2, **f32).t()  # 1x128 and 128x128 blocks
        y = torch.ops.gemmtune.scaled_mm(a, w.t(), sa, sb, out_dtype=bf)
        assert tuple(y.shape) == (64, 96)
        with pytest.raises(gemmtune.InvalidInputError, match="fp8_accum=fast with scaling=block"):
            torch.ops.gemmtune.scaled_mm(a, w.t(), sa, sb, out_dtype=bf, use_fast_accum=True)


def test_linear_plain_function_hit(mocked, monkeypatch):
    calls, selects = mocked
    monkeypatch.setattr(ops, "_direct", lambda *ts: True)
    x, w = rnd(2, 3, 64), rnd(96, 64)
    y = ops.linear(x, w, None, "silu_glu")
    y = ops.linear(x, w, None, "silu_glu")
    assert y.shape == (2, 3, 48) and len(selects) == 1 and calls[-1][0] == x.data_ptr()


def test_capture_guard(mocked, monkeypatch):
    calls, selects = mocked
    a, w = rnd(8, 64), rnd(96, 64)
    D.gemm(a, w.t())  # selected before the capture
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
    D.gemm(a, w.t())  # a hit: fine while capturing
    with pytest.raises(gemmtune.Error, match="run the op once .* before the capture"):
        D.gemm(a[:5], w.t())
    assert len(selects) == 1


def test_tune_never(mocked):
    D.set_options(tune="never")
    with pytest.raises(gemmtune.Error, match="not tuned"):
        D.gemm(rnd(8, 64), rnd(96, 64).t())


def test_set_options_checks():
    with pytest.raises(gemmtune.InvalidInputError, match="unknown option"):
        gt.set_options(bogus=1)
    with pytest.raises(gemmtune.InvalidInputError, match="tune must be"):
        gt.set_options(tune="sometimes")
    assert gt.options()["tune"] == "auto"


def test_two_threads_select_one_problem_once(mocked, monkeypatch):
    calls, selects = mocked
    gate = threading.Barrier(4)
    a, w = rnd(8, 64), rnd(96, 64)
    errors = []

    def worker():
        try:
            gate.wait()
            D.gemm(a, w.t())
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=worker) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors and len(selects) == 1 and len(calls) == 4


def test_backward_of_mm_and_refusal_for_epilogues():
    # The autograd formulas on CPU, through a stand-in forward (the real one needs a GPU).
    a = rnd(8, 16, dtype=torch.float32).requires_grad_()
    b = rnd(16, 4, dtype=torch.float32).requires_grad_()

    class Ctx:
        needs_input_grad = (True, True)
        saved_tensors = (a.detach(), b.detach())

    g = torch.ones(8, 4)
    ga, gb = ops._mm_backward(Ctx, g)
    (a @ b).backward(g)
    assert torch.allclose(ga, a.grad) and torch.allclose(gb, b.grad)

    class LCtx:
        epilogue = "gelu_tanh"

    with pytest.raises(NotImplementedError, match="no backward"):
        ops._linear_backward(LCtx, g)
