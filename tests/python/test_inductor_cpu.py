"""The torch.compile integration on CPU: the fusion pass on post-grad graphs of small modules, the numerics of the
rewritten graph, enable()/disable(), the fail-soft path and the choice mechanism (with a torch reference standing in
for the GPU kernels)."""
import warnings

import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

gemmtune = pytest.importorskip("gemmtune")
gt = pytest.importorskip("gemmtune.torch")
from gemmtune.torch import _dispatch, inductor  # noqa: E402

ACTS = {"relu": torch.relu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "gelu_erf": F.gelu,
        "silu": F.silu, "sigmoid": torch.sigmoid}


def ref_chain(v, epilogue, bias=None, residual=None):
    """The epilogue chain (include/gemmtune/epilogue.h) applied in fp32 to v = A @ B."""
    for op in [o for o in epilogue.split(",") if o and o != "none"]:
        name = op.split(":")[0]
        if name in ("bias", "bias_col"):
            v = v + bias.float()
        elif name == "bias_row":
            v = v + bias.float()[:, None]
        elif name in ACTS:
            v = ACTS[name](v)
        elif name.endswith("_glu"):
            h = v.shape[-1] // 2
            v = ACTS[name[:-4]](v[..., :h]) * v[..., h:]
        elif name == "residual":
            v = v + residual.float()
        else:
            raise ValueError(op)
    return v


def ref_gemm(a, b, out=None, *, epilogue="none", bias=None, residual=None, row_scale=None, col_scale=None, c=None,
             alpha=1.0, beta=0.0, scale_a=None, scale_b=None, scale_d=None, amax=None, scaling=None, out_dtype=None):
    v = alpha * (a.float() @ b.float())
    if c is not None and beta:
        v = v + beta * c.float()
    v = ref_chain(v, epilogue, bias, residual).to(out_dtype or a.dtype)
    if out is None:
        return v
    out.copy_(v)
    return out


def ref_linear(x, weight, bias=None, epilogue="none", residual=None):
    if bias is not None and "bias" not in epilogue:
        epilogue = "bias," + epilogue
    return ref_chain(x.float() @ weight.float().t(), epilogue, bias, residual).to(x.dtype)


def _fake_linear(x, weight, bias=None, epilogue="none", residual=None):
    n = weight.shape[0] // (2 if "_glu" in epilogue else 1)
    return x.new_empty(*x.shape[:-1], n)


_LIB = []


@pytest.fixture(autouse=True)
def cpu_gemmtune(monkeypatch):
    """gemmtune's kernels replaced by the torch reference, on CPU."""
    if not hasattr(torch.ops.gemmtune, "linear"):  # the ops module is not there: a test-only definition
        lib = torch.library.Library("gemmtune", "FRAGMENT")
        lib.define("linear(Tensor x, Tensor weight, Tensor? bias=None, str epilogue=\"none\", "
                   "Tensor? residual=None) -> Tensor")
        lib.impl("linear", ref_linear, "CPU")
        torch.library.register_fake("gemmtune::linear", _fake_linear, lib=lib)
        _LIB.append(lib)
    else:  # the real op: its CPU kernel runs the reference
        from gemmtune.torch import ops as gt_ops

        def cpu_kernel(name, *args, **kwargs):
            assert name == "linear", name
            return ref_linear(*args, **kwargs)
        monkeypatch.setattr(gt_ops, "cpu_kernel", cpu_kernel)
    monkeypatch.setattr(_dispatch, "gemm", ref_gemm)
    monkeypatch.setattr(inductor, "_FUSE_DEVICES", ("cuda", "cpu"))
    monkeypatch.setattr(inductor, "_CHOICE_DEVICES", ("cuda", "cpu"))
    monkeypatch.setattr(inductor, "MIN_GPU_US", 0.0)  # the small problems here are offered (the floor: its own test)
    inductor.reset_stats()
    yield
    gt.disable()
    torch._dynamo.reset()


def compiled_graph(fn, *args):
    """Runs fn under torch.compile with the gemmtune pass and returns (output, post-pass graph as text, targets)."""
    seen = []
    gt.enable(fuse=True, choices=False)
    p = torch._inductor.config.post_grad_custom_post_pass

    def spy(graph):
        p(graph)
        seen.append(graph)

    torch._dynamo.reset()
    with torch._inductor.config.patch(post_grad_custom_post_pass=spy, fx_graph_cache=False):
        out = torch.compile(fn)(*args)
    g = seen[-1]
    targets = [str(n.target) for n in g.nodes if n.op == "call_function"]
    return out, g, targets


def linear_nodes(g):
    return [n for n in g.nodes if n.op == "call_function" and n.target is torch.ops.gemmtune.linear.default]


DT = torch.bfloat16
TOL = dict(rtol=2e-2, atol=2e-2)  # bf16 outputs, fp32 accumulation on both sides


class LinAct(nn.Module):
    def __init__(self, act, k=64, n=96, bias=True):
        super().__init__()
        self.l = nn.Linear(k, n, bias=bias)
        self.act = act

    def forward(self, x):
        return self.act(self.l(x))


@pytest.mark.parametrize("act", list(ACTS))
@pytest.mark.parametrize("shape", [(32, 64), (3, 5, 64)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_activation_fused(act, shape, bias):
    m = LinAct(ACTS[act], bias=bias).to(DT)
    x = torch.randn(*shape, dtype=DT)
    with torch.no_grad():
        out, g, _ = compiled_graph(m, x)
        ref = m(x)
    lins = linear_nodes(g)
    assert len(lins) == 1, g
    assert lins[0].args[3] == ("bias," if bias else "") + act
    assert out.shape == ref.shape
    torch.testing.assert_close(out.float(), ref.float(), **TOL)
    assert inductor.stats()["fusions"] == 1


class Mlp(nn.Module):
    """Llama-style MLP with the gate and up weights concatenated into one Linear."""

    def __init__(self, d=64, f=128, act=F.silu, split="chunk"):
        super().__init__()
        self.gate_up = nn.Linear(d, 2 * f, bias=False)
        self.down = nn.Linear(f, d, bias=False)
        self.act, self.split, self.f = act, split, f

    def forward(self, x):
        h = self.gate_up(x)
        if self.split == "chunk":
            g, u = h.chunk(2, dim=-1)
        else:
            g, u = h[..., :self.f], h[..., self.f:]
        return self.down(self.act(g) * u)


@pytest.mark.parametrize("act,epi", [(F.silu, "silu_glu"), (lambda t: F.gelu(t, approximate="tanh"),
                                                            "gelu_tanh_glu")])
@pytest.mark.parametrize("split", ["chunk", "slice"])
def test_glu_fused(act, epi, split):
    m = Mlp(act=act, split=split).to(DT)
    x = torch.randn(2, 7, 64, dtype=DT)
    with torch.no_grad():
        out, g, _ = compiled_graph(m, x)
        ref = m(x)
    lins = linear_nodes(g)
    assert [n.args[3] for n in lins] == [epi], g
    torch.testing.assert_close(out.float(), ref.float(), **TOL)


class Residual(nn.Module):
    def __init__(self, act=None):
        super().__init__()
        self.l = nn.Linear(64, 64)
        self.act = act

    def forward(self, x):
        y = self.l(x)
        if self.act is not None:
            y = self.act(y)
        return x + y


@pytest.mark.parametrize("act,epi", [(None, "bias,residual"), (torch.relu, "bias,relu,residual")])
@pytest.mark.parametrize("shape", [(16, 64), (2, 9, 64)])
def test_residual_fused(act, epi, shape):
    m = Residual(act).to(DT)
    x = torch.randn(*shape, dtype=DT)
    with torch.no_grad():
        out, g, _ = compiled_graph(m, x)
        ref = m(x)
    assert [n.args[3] for n in linear_nodes(g)] == [epi], g
    torch.testing.assert_close(out.float(), ref.float(), **TOL)


class ExtraUser(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(64, 96)

    def forward(self, x):
        y = self.l(x)
        return F.gelu(y), y.sum()  # the pre-activation value is needed elsewhere


def test_extra_user_not_rewritten():
    m = ExtraUser().to(DT)
    x = torch.randn(8, 64, dtype=DT)
    with torch.no_grad():
        out, g, _ = compiled_graph(m, x)
        ref = m(x)
    assert linear_nodes(g) == []
    torch.testing.assert_close(out[0].float(), ref[0].float(), **TOL)


def test_glu_gate_with_extra_user_not_rewritten():
    class M(Mlp):
        def forward(self, x):
            g, u = self.gate_up(x).chunk(2, dim=-1)
            return F.silu(g) * u, g

    m = M().to(DT)
    with torch.no_grad():
        _, g, _ = compiled_graph(m, torch.randn(8, 64, dtype=DT))
    assert linear_nodes(g) == []


def test_plain_linear_and_fp32_not_rewritten():
    with torch.no_grad():
        _, g, _ = compiled_graph(nn.Linear(64, 32).to(DT), torch.randn(8, 64, dtype=DT))
        assert linear_nodes(g) == []
        _, g, _ = compiled_graph(LinAct(torch.relu), torch.randn(8, 64))
        assert linear_nodes(g) == []


def test_unknown_pointwise_not_rewritten():
    with torch.no_grad():
        _, g, _ = compiled_graph(LinAct(lambda t: torch.tanh(t) * 2).to(DT), torch.randn(8, 64, dtype=DT))
    assert linear_nodes(g) == []


def test_refused_problem_not_rewritten(monkeypatch):
    seen = []

    def refuse(op, kind, metas, epilogue="none", **kw):
        seen.append(epilogue)
        raise gemmtune.InvalidInputError("refused by the test")

    monkeypatch.setattr(_dispatch, "plan_of", refuse)
    m = LinAct(torch.relu).to(DT)
    with torch.no_grad():
        _, g, _ = compiled_graph(m, torch.randn(8, 64, dtype=DT))
    assert linear_nodes(g) == [] and seen == ["bias,relu"]


def test_enable_disable_idempotent():
    cfg = torch._inductor.config
    before_pass, before_cls = cfg.post_grad_custom_post_pass, cfg.inductor_choices_class
    assert gt.enable(fuse=True) == {"choices": True, "fuse": True}
    p, cls = cfg.post_grad_custom_post_pass, cfg.inductor_choices_class
    assert gt.enable(fuse=True) == {"choices": True, "fuse": True}
    assert cfg.post_grad_custom_post_pass is p and cfg.inductor_choices_class is cls
    assert p.uuid()  # the FX graph cache stays usable
    gt.disable()
    gt.disable()
    assert cfg.post_grad_custom_post_pass is before_pass and cfg.inductor_choices_class is before_cls
    assert inductor.enabled() == {"choices": False, "fuse": False}


def test_chains_with_installed_pass():
    calls = []

    def mine(graph):
        calls.append(graph)

    with torch._inductor.config.patch(post_grad_custom_post_pass=mine):
        gt.enable(fuse=True, choices=False)
        p = torch._inductor.config.post_grad_custom_post_pass
        assert p is not mine and p.prior is mine
        m = LinAct(torch.relu).to(DT)
        torch._dynamo.reset()
        with torch.no_grad():
            torch.compile(m)(torch.randn(8, 64, dtype=DT))
        assert calls
        gt.disable()
        assert torch._inductor.config.post_grad_custom_post_pass is mine


def test_fail_soft(monkeypatch):
    """Internals gone (torch itself keeps its own references): enable() warns naming them, compile is plain."""
    import torch._inductor.custom_graph_pass as cgp
    import torch._inductor.select_algorithm as sa
    monkeypatch.delattr(cgp, "CustomGraphPass")
    monkeypatch.delattr(sa, "ExternKernelChoice")
    monkeypatch.setattr(inductor, "_warned", set())
    monkeypatch.setattr(inductor, "_extern", {})
    monkeypatch.setitem(inductor._state, "pass_cls", None)
    with pytest.warns(RuntimeWarning) as rec:
        st = gt.enable(fuse=True)
    msgs = " ".join(str(w.message) for w in rec)
    assert "ExternKernelChoice" in msgs and "CustomGraphPass" in msgs, msgs
    assert st == {"choices": False, "fuse": False}
    m = LinAct(torch.relu).to(DT)
    x = torch.randn(8, 64, dtype=DT)
    torch._dynamo.reset()
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(m)(x).float(), m(x).float(), **TOL)


def test_warns_once(monkeypatch):
    import torch._inductor.select_algorithm as sa
    monkeypatch.delattr(sa, "ExternKernelChoice")
    monkeypatch.setattr(inductor, "_extern", {})
    monkeypatch.setattr(inductor, "_warned", set())
    with pytest.warns(RuntimeWarning):
        gt.enable(fuse=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gt.enable(fuse=False)


class ThreeMatmuls(nn.Module):
    def forward(self, a, b, bias, c, x3, y3):
        return a @ b, torch.addmm(bias, a, b), torch.addmm(c, a, b, beta=0.5, alpha=2.0), torch.bmm(x3, y3)


def test_choice_offered_and_correct():
    """max-autotune on CPU with the reference standing in for gemmtune: the choice is offered for mm, addmm (bias
    and full C) and bmm, tuned when created, and whichever Inductor keeps gives the right answer."""
    gt.enable(fuse=False, choices=True)
    a, b = torch.randn(64, 32, dtype=DT), torch.randn(32, 48, dtype=DT)
    bias, c = torch.randn(48, dtype=DT), torch.randn(64, 48, dtype=DT)
    x3, y3 = torch.randn(3, 64, 32, dtype=DT), torch.randn(3, 32, 48, dtype=DT)
    m = ThreeMatmuls()
    torch._dynamo.reset()
    with torch._inductor.config.patch(fx_graph_cache=False, force_disable_caches=True):
        out = torch.compile(m, mode="max-autotune-no-cudagraphs")(a, b, bias, c, x3, y3)
    ref = m(a, b, bias, c, x3, y3)
    for o, r in zip(out, ref):
        torch.testing.assert_close(o.float(), r.float(), **TOL)
    s = inductor.stats()
    assert s["by_op"].get("mm", 0) >= 1 and s["by_op"].get("addmm", 0) >= 2 and s["by_op"].get("bmm", 0) >= 1, s


def test_forced_choice_in_generated_code(monkeypatch):
    """Only gemmtune's choice kept: the generated code calls its extern kernels, with the right answers."""
    from torch._inductor.utils import run_and_get_code
    monkeypatch.setattr(inductor, "_FORCE", True)
    gt.enable(fuse=False, choices=True)
    a, b = torch.randn(64, 32, dtype=DT), torch.randn(32, 48, dtype=DT)
    bias, c = torch.randn(48, dtype=DT), torch.randn(64, 48, dtype=DT)
    x3, y3 = torch.randn(3, 64, 32, dtype=DT), torch.randn(3, 32, 48, dtype=DT)
    m = ThreeMatmuls()
    torch._dynamo.reset()
    with torch._inductor.config.patch(fx_graph_cache=False, force_disable_caches=True,
                                      max_autotune_gemm_backends="ATEN"):  # no CPP templates beside ours
        out, code = run_and_get_code(torch.compile(m, mode="max-autotune-no-cudagraphs"), a, b, bias, c, x3, y3)
    code = "\n".join(code)
    for name in ("gemmtune_mm(", "gemmtune_addmm(", "gemmtune_bmm("):
        assert "extern_kernels." + name in code, code
    assert "mode='bias'" in code and "mode='c'" in code, code
    for o, r in zip(out, m(a, b, bias, c, x3, y3)):
        torch.testing.assert_close(o.float(), r.float(), **TOL)


def test_choice_kernels_match_reference():
    a, b = torch.randn(16, 32, dtype=DT), torch.randn(32, 24, dtype=DT)
    bias = torch.randn(24, dtype=DT)
    out = torch.empty(16, 24, dtype=DT)
    inductor.gemmtune_addmm(bias.expand(16, 24), a, b, alpha=1.0, beta=1.0, mode="bias", out=out)
    torch.testing.assert_close(out.float(), torch.addmm(bias, a, b).float(), **TOL)
    c = torch.randn(16, 24, dtype=DT)
    inductor.gemmtune_addmm(c, a, b, alpha=2.0, beta=0.5, mode="c", out=out)
    torch.testing.assert_close(out.float(), torch.addmm(c, a, b, alpha=2.0, beta=0.5).float(), **TOL)
    rb = torch.randn(16, 1, dtype=DT)
    inductor.gemmtune_addmm(rb.expand(16, 24), a, b, mode="bias_row", out=out)
    torch.testing.assert_close(out.float(), torch.addmm(rb, a, b).float(), **TOL)


def test_symbolic_shapes_get_no_choice():
    gt.enable(fuse=False, choices=True)
    a, b = torch.randn(64, 32, dtype=DT), torch.randn(32, 48, dtype=DT)
    torch._dynamo.reset()
    with torch._inductor.config.patch(fx_graph_cache=False, force_disable_caches=True):
        f = torch.compile(lambda a, b: a @ b, mode="max-autotune-no-cudagraphs", dynamic=True)
        torch.testing.assert_close(f(a, b).float(), (a @ b).float(), **TOL)
    s = inductor.stats()
    assert s["choices_offered"] == 0


def test_unfused_bias_and_kn_weight():
    """The bias as a separate add (as Inductor's post-grad passes leave it on CUDA) and a (K, N) weight."""
    w, w_kn, bias = torch.randn(96, 64, dtype=DT), torch.randn(64, 80, dtype=DT), torch.randn(96, dtype=DT)

    def f(x):
        return F.silu(x @ w.t() + bias), torch.relu(x @ w_kn)

    x = torch.randn(5, 3, 64, dtype=DT)
    with torch.no_grad():
        out, g, _ = compiled_graph(f, x)
    assert sorted(n.args[3] for n in linear_nodes(g)) == ["bias,silu", "relu"], g
    for o, r in zip(out, f(x)):
        torch.testing.assert_close(o.float(), r.float(), **TOL)


def test_two_chains_feeding_each_other():
    """The output of one fused chain is the residual of the next."""
    l1, l2 = nn.Linear(64, 64).to(DT), nn.Linear(64, 64).to(DT)

    def f(x):
        h = torch.relu(l1(x))
        return torch.relu(l2(h)) + h

    x = torch.randn(4, 64, dtype=DT)
    with torch.no_grad():
        out, g, _ = compiled_graph(f, x)
        ref = f(x)
    assert sorted(n.args[3] for n in linear_nodes(g)) == ["bias,relu", "bias,relu,residual"], g
    torch.testing.assert_close(out.float(), ref.float(), **TOL)


def test_training_graph_keeps_saved_values():
    """With autograd the pre-activation is saved for backward (an extra user): nothing fused, gradients right."""
    m = LinAct(F.gelu).to(DT)
    x = torch.randn(8, 64, dtype=DT, requires_grad=True)
    out, g, _ = compiled_graph(m, x)
    assert linear_nodes(g) == []
    out.float().sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad.float()).all()


def test_user_choices_handler_kept():
    """A handler the user set for this thread keeps its class and state under enable(), and comes back after."""
    from torch._inductor.choices import InductorChoices
    from torch._inductor.virtualized import V, _choices, threadlocal

    class Mine(InductorChoices):
        pass

    mine = Mine()
    mine.tag = "user"
    prior = getattr(threadlocal, _choices._key, None)
    V.set_choices_handler(mine)
    try:
        gt.enable(fuse=False)
        h = getattr(threadlocal, _choices._key)
        assert isinstance(h, Mine) and h.tag == "user" and h is not mine
        gt.disable()
        assert getattr(threadlocal, _choices._key) is mine
    finally:
        if prior is None:
            delattr(threadlocal, _choices._key)
        else:
            V.set_choices_handler(prior)


class _Layout:
    def __init__(self, size, stride, dtype=DT, offset=0, device="cpu"):
        self.size, self.stride, self.dtype, self.offset = size, stride, dtype, offset
        self.device = torch.device(device)


class _Node:
    def __init__(self, *a, **kw):
        self.layout = _Layout(*a, **kw)

    def get_layout(self):
        return self.layout


def test_plan_addmm_modes():
    a, b = _Node([64, 32], [32, 1]), _Node([32, 48], [1, 32])
    out = _Layout([64, 48], [48, 1])
    kw, p = inductor._plan("addmm", [_Node([64, 48], [0, 1]), a, b], out, {"alpha": 2, "beta": 1})
    assert kw["mode"] == "bias" and p.epilogue == "bias:bf16" and p.alpha == 2.0
    kw, p = inductor._plan("addmm", [_Node([64, 48], [1, 0]), a, b], out, {"alpha": 1, "beta": 1})
    assert kw["mode"] == "bias_row" and p.epilogue == "bias_row:bf16"
    # a broadcast C with beta != 1 can only be a C operand, which has no row stride: copied on every call, refused
    assert "c would be copied" in inductor._plan("addmm", [_Node([64, 48], [0, 1]), a, b], out, {"alpha": 1, "beta": 0.5})
    kw, p = inductor._plan("addmm", [_Node([64, 48], [48, 1]), a, b], out, {"alpha": 1, "beta": 0.5})
    assert kw["mode"] == "c" and p.beta == 0.5 and p.c.layout == "row" and p.b.layout == "col"


def test_plan_refusals():
    import sympy
    out = _Layout([64, 48], [48, 1])
    s = sympy.Symbol("s0", integer=True, positive=True)
    assert "symbolic" in inductor._plan("mm", [_Node([s, 32], [32, 1]), _Node([32, 48], [48, 1])],
                                        _Layout([s, 48], [48, 1]), {})
    assert inductor._plan("mm", [_Node([64, 32], [32, 1], dtype=torch.float64), _Node([32, 48], [48, 1],
                                 dtype=torch.float64)], _Layout([64, 48], [48, 1], dtype=torch.float64), {})
    assert inductor._plan("mm", [_Node([64, 32], [32, 1]), _Node([32, 48], [48, 1])],
                          _Layout([64, 48], [48, 1], device="meta"), {}) == "device meta"
    # neither dim of A has unit stride: not a gemmtune operand
    assert isinstance(inductor._plan("mm", [_Node([64, 32], [64, 2]), _Node([32, 48], [48, 1])], out, {}), str)


def test_plan_scaled_mm():
    f8 = torch.float8_e4m3fn
    a, b = _Node([64, 128], [128, 1], dtype=f8), _Node([128, 48], [1, 128], dtype=f8)
    one = _Node([], [], dtype=torch.float32)
    r = inductor._plan("scaled_mm", [a, b, one, one], _Layout([64, 48], [48, 1]), {"out_dtype": DT})
    if isinstance(r, tuple):
        assert r[0]["scaling"] == "tensor" and r[1].scaling == "tensor"
    else:
        assert r  # gemmtune refused it with a reason
    ra, rb = _Node([64, 1], [1, 1], dtype=torch.float32), _Node([1, 48], [48, 1], dtype=torch.float32)
    r = inductor._plan("scaled_mm", [a, b, ra, rb], _Layout([64, 48], [48, 1]), {"out_dtype": DT})
    assert (r[0]["scaling"] == "row") if isinstance(r, tuple) else r
    bad = _Node([3], [1], dtype=torch.float32)
    assert "scales are 2-D" in inductor._plan("scaled_mm", [a, b, bad, one], _Layout([64, 48], [48, 1]), {})
    # use_fast_accum is the problem's accumulation mode, and the choice's kernel passes it on.
    for fast in (False, True):
        r = inductor._plan("scaled_mm", [a, b, one, one], _Layout([64, 48], [48, 1]),
                           {"out_dtype": DT, "use_fast_accum": fast})
        assert r[0]["use_fast_accum"] is fast and r[1].fp8_accum == ("fast" if fast else "exact")


@pytest.mark.parametrize("native", [False, True])
def test_host_cost_floor_refuses_small_problems(monkeypatch, native):
    """A small GEMM is refused where the choice's kernel is a Python function (its host cost outweighs the gain) and
    offered where it is the C++ hot path's operator."""
    if native and not inductor._NATIVE:
        pytest.skip("no C++ hot path")
    if not native:
        monkeypatch.setattr(inductor, "_NATIVE", {})
    monkeypatch.setattr(inductor, "MIN_GPU_US", 40.0)
    gt.enable(fuse=False, choices=True)
    a, b = torch.randn(64, 128, dtype=DT), torch.randn(128, 96, dtype=DT)
    with torch._inductor.config.patch(max_autotune=True, fx_graph_cache=False):
        out = torch.compile(lambda a, b: a @ b)(a, b)
    torch.testing.assert_close(out.float(), a.float() @ b.float(), atol=0.05, rtol=0.02)
    s = inductor.stats()
    refused = any("too small without CUDA graphs" in r for r in s["refusals"])
    assert (s["choices_offered"], refused) == ((1, False) if native else (0, True)), s


def test_cpp_wrapper_choice_is_a_dispatcher_call(monkeypatch):
    """Under the C++ wrapper the choice is a fallback kernel of a functional operator, which the generated C++ calls
    through the dispatcher. aten::mm stands in for gemmtune::mm (whose kernel needs a GPU); addmm is refused."""
    from torch._inductor.utils import run_and_get_code
    if not inductor._NATIVE:
        pytest.skip("no C++ hot path")
    monkeypatch.setattr(inductor, "_FORCE", True)
    monkeypatch.setattr(inductor, "_DISPATCHED", {"mm": torch.ops.aten.mm.default})
    monkeypatch.setattr(inductor, "_dispatched", {})
    gt.enable(fuse=False, choices=True)
    a, b, bias = torch.randn(64, 32, dtype=DT), torch.randn(32, 48, dtype=DT), torch.randn(48, dtype=DT)
    torch._dynamo.reset()
    with torch._inductor.config.patch(fx_graph_cache=False, force_disable_caches=True, cpp_wrapper=True,
                                      max_autotune_gemm_backends="ATEN"):
        out, code = run_and_get_code(torch.compile(lambda a, b, c: (a @ b, torch.addmm(c, a, b)),
                                                   mode="max-autotune-no-cudagraphs"), a, b, bias)
    torch.testing.assert_close(out[0].float(), a.float() @ b.float(), **TOL)
    s = inductor.stats()
    assert s["choices_offered"] == 1 and any("cpp wrapper / AOTInductor: only mm and bmm" in r
                                             for r in s["refusals"]), s
    assert "extern_kernels.gemmtune_mm" not in "\n".join(code)


def ref_grouped(a, b, offs=None, bias=None, out_dtype=None, scale_a=None, scale_b=None, scale_d=None, **kw):
    """torch._grouped_mm's result (2-D x 3-D with offs, or 3-D x 3-D) as gemmtune's grouped launch returns it."""
    return torch._grouped_mm(a, b, offs, out_dtype=out_dtype)


@pytest.mark.parametrize("form", ["2d3d", "3d3d"])
def test_grouped_choice_in_generated_code(monkeypatch, form):
    """torch._grouped_mm's lowering builds its list without V.choices: the selector's preprocessing function adds the
    gemmtune choice (forced here, so the generated code calls it); the 2-D x 2-D form (groups along K) is refused."""
    from torch._inductor.utils import run_and_get_code
    monkeypatch.setattr(_dispatch, "grouped", ref_grouped)
    monkeypatch.setattr(inductor, "_FORCE", True)
    gt.enable(fuse=False, choices=True)
    b = torch.randn(4, 48, 32, dtype=DT).transpose(-2, -1)  # expert weights (G, N, K) as (G, K, N)
    if form == "2d3d":
        args = (torch.randn(64, 32, dtype=DT), b, torch.tensor([10, 30, 30, 64], dtype=torch.int32))
    else:
        args = (torch.randn(4, 16, 32, dtype=DT), b)
    torch._dynamo.reset()
    with torch._inductor.config.patch(fx_graph_cache=False, force_disable_caches=True):
        out, code = run_and_get_code(torch.compile(lambda *t: torch._grouped_mm(*t), mode="max-autotune-no-cudagraphs"),
                                     *args)
    want = torch._grouped_mm(*args)
    torch.testing.assert_close(out.float(), want.float(), **TOL)
    assert "extern_kernels.gemmtune_grouped_mm(" in "\n".join(code), code
    assert inductor.stats()["by_op"].get("grouped_mm") == 1, inductor.stats()
    inductor.reset_stats()
    a2, b2 = torch.randn(16, 64, dtype=DT), torch.randn(64, 24, dtype=DT)
    torch._dynamo.reset()
    with torch._inductor.config.patch(fx_graph_cache=False, force_disable_caches=True):
        torch.compile(lambda a, b, o: torch._grouped_mm(a, b, o), mode="max-autotune-no-cudagraphs")(
            a2, b2, torch.tensor([20, 64], dtype=torch.int32))
    s = inductor.stats()
    assert s["choices_offered"] == 0 and any("2-D x 2-D" in r for r in s["refusals"]), s


def test_grouped_preprocess_leaves_other_lists():
    gt.enable(fuse=False, choices=True)

    class Other:
        pass
    lst = [Other(), Other()]
    assert inductor._grouped_preprocess(lst) == lst
    gt.disable()
    from torch._inductor.select_algorithm import get_algorithm_selector_cache
    assert inductor._grouped_preprocess not in get_algorithm_selector_cache().preprocessing_fns


def test_estimated_gpu_time_counts_every_group():
    """The host-cost floor's estimate: every batch's or group's rows of A, every group's B."""
    one = inductor._estimated_us([16, 4096], [4096, 4096], 2)
    assert inductor._estimated_us([8, 16, 4096], [8, 4096, 4096], 2) == pytest.approx(8 * one, rel=1e-6)
    assert inductor._estimated_us([128, 4096], [8, 4096, 4096], 2) > 7 * one  # 8 experts' weights streamed
    assert inductor._estimated_us(None, [4096, 4096], 2) is None
