"""gemmtune.torch.optimize without a GPU: the swap on CPU-built bf16 models, with the launch replaced by a torch
reference of gemmtune's linear (epilogue chain as in gemmtune/epilogue.h), and the ahead-of-time GEMM gathering."""
import math

import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import gemmtune  # noqa: E402
import gemmtune.torch  # noqa: E402,F401
from gemmtune.torch import modules as gm  # noqa: E402

BF16 = torch.bfloat16
ACTS = {"relu": torch.relu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"), "gelu_erf": F.gelu,
        "silu": F.silu, "sigmoid": torch.sigmoid}


def reference_linear(x, weight, bias, epilogue):
    """torch.ops.gemmtune.linear's contract in fp32: a given bias is added first, then the chain; a GLU (halves)
    halves the columns."""
    y = F.linear(x.float(), weight.float())
    if bias is not None:
        y = y + bias.float()
    for op in epilogue.split(","):
        op = op.strip()
        if op in ("none", "bias", ""):
            continue
        if op.endswith("_glu"):
            g, u = y.chunk(2, dim=-1)
            y = ACTS[op[:-4]](g) * u
        else:
            y = ACTS[op](y)
    return y.to(x.dtype)


@pytest.fixture
def launches(monkeypatch):
    """Swap CPU modules too, and launch through reference_linear; returns the list of (shape, epilogue) launched."""
    calls = []

    def launch(x, weight, bias, epilogue):
        calls.append((tuple(x.shape), tuple(weight.shape), epilogue, bias is not None))
        return reference_linear(x, weight, bias, epilogue)
    monkeypatch.setattr(gm, "_DEVICE_TYPES", ("cuda", "cpu"))
    monkeypatch.setattr(gm, "_linear", launch)
    return calls


def close(a, b, tol=2e-2):
    """Normalized max error of bf16 results (a fused epilogue rounds once where eager rounds twice)."""
    scale = max(b.float().abs().max().item(), 1e-6)
    return (a.float() - b.float()).abs().max().item() <= tol * scale


class LlamaLikeMLP(nn.Module):
    def __init__(self, hidden=64, inter=96, act=None, bias=False):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inter, bias=bias)
        self.up_proj = nn.Linear(hidden, inter, bias=bias)
        self.down_proj = nn.Linear(inter, hidden, bias=bias)
        self.act_fn = act if act is not None else nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class SwappedMLP(LlamaLikeMLP):
    """Same parts, another formula (the activation on up, not gate): must not be fused."""

    def forward(self, x):
        return self.down_proj(self.act_fn(self.up_proj(x)) * self.gate_proj(x))


class Block(nn.Module):
    def __init__(self, hidden=64, inter=96):
        super().__init__()
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.o = nn.Linear(hidden, hidden, bias=False)
        self.mlp = LlamaLikeMLP(hidden, inter)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        x = x + self.o(q * torch.sigmoid(k) + v)
        return x + self.mlp(x)


class TinyLM(nn.Module):
    def __init__(self, vocab=50, hidden=64, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList(Block(hidden) for _ in range(layers))
        self.head = nn.Linear(hidden, vocab, bias=False)
        self.head.weight = self.emb.weight  # tied

    def forward(self, ids):
        x = self.emb(ids)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


def bf16(m):
    torch.manual_seed(0)
    return m.to(BF16)


class QuickGELU(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


class SiLUByHand(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)


# ---- recognition ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mod, want", [
    (nn.ReLU(), "relu"), (nn.ReLU(inplace=True), "relu"), (nn.GELU(), "gelu_erf"),
    (nn.GELU(approximate="tanh"), "gelu_tanh"), (nn.SiLU(), "silu"), (nn.Sigmoid(), "sigmoid"),
    (SiLUByHand(), "silu"), (QuickGELU(), None), (nn.Tanh(), None), (nn.Identity(), None), (nn.Dropout(0.0), None),
    (nn.Softmax(dim=-1), None), (nn.LayerNorm(4), None), (nn.PReLU(), None)])
def test_activation_of(mod, want):
    assert gm.activation_of(mod) == want


def test_activation_of_transformers_classes():
    act = pytest.importorskip("transformers.activations")
    want = {"silu": "silu", "swish": "silu", "gelu": "gelu_erf", "gelu_pytorch_tanh": "gelu_tanh",
            "gelu_new": "gelu_tanh", "relu": "relu", "sigmoid": "sigmoid", "quick_gelu": None}
    for name, expected in want.items():
        if name in act.ACT2CLS:
            assert gm.activation_of(act.ACT2FN[name]) == expected, name


def test_activation_with_hook_not_recognized():
    m = nn.ReLU()
    m.register_forward_hook(lambda *a: None)
    assert gm.activation_of(m) is None


# ---- the swap -------------------------------------------------------------------------------------------------------

def test_linears_swapped_parameters_kept(launches):
    model = bf16(TinyLM())
    ids = torch.randint(0, 50, (2, 5))
    with torch.no_grad():
        want = model(ids)
    params = {n: p for n, p in model.named_parameters()}
    out = gemmtune.torch.optimize(model, progress=False)
    assert out is model
    for layer in model.layers:
        assert type(layer.qkv) is gm.Linear and type(layer.o) is gm.Linear
        assert type(layer.mlp) is gm.GatedMLP
    assert type(model.head) is gm.Linear
    # the same Parameter objects (no copy), tying kept
    assert model.layers[0].qkv.weight is params["layers.0.qkv.weight"]
    assert model.layers[0].qkv.bias is params["layers.0.qkv.bias"]
    assert model.layers[1].mlp.down_proj.weight is params["layers.1.mlp.down_proj.weight"]
    assert model.head.weight is model.emb.weight
    with torch.no_grad():
        got = model(ids)
    assert got.shape == want.shape and close(got, want)
    assert any(epi == "silu_glu" for _, _, epi, _ in launches)


def test_gated_mlp_fused(launches):
    mlp = bf16(LlamaLikeMLP(64, 96, bias=True))
    x = torch.randn(3, 7, 64, dtype=BF16)
    with torch.no_grad():
        want = mlp(x)
    g, u = mlp.gate_proj.weight.detach().clone(), mlp.up_proj.weight.detach().clone()
    new = gemmtune.torch.optimize(mlp, progress=False)  # the root itself is replaced
    assert type(new) is gm.GatedMLP
    assert new.gate_up.epilogue == "silu_glu" and new.gate_up.out_features == 96 and new.gate_up.in_features == 64
    assert torch.equal(new.gate_up.weight, torch.cat([g, u]))
    assert new.down_proj.weight is mlp.down_proj.weight
    with torch.no_grad():
        got = new(x)
    assert close(got, want)
    assert launches[0] == ((3, 7, 64), (192, 64), "silu_glu", True)
    assert launches[1] == ((3, 7, 96), (64, 96), "none", True)


@pytest.mark.parametrize("act, epi", [(nn.GELU(approximate="tanh"), "gelu_tanh_glu"), (nn.GELU(), "gelu_erf_glu"),
                                      (SiLUByHand(), "silu_glu"), (nn.ReLU(), "relu_glu")])
def test_gated_mlp_activations(launches, act, epi):
    model = nn.Sequential(bf16(LlamaLikeMLP(32, 48, act=act)))
    x = torch.randn(4, 32, dtype=BF16)
    with torch.no_grad():
        want = model(x)
    gemmtune.torch.optimize(model, progress=False)
    assert type(model[0]) is gm.GatedMLP and model[0].gate_up.epilogue == epi
    with torch.no_grad():
        assert close(model(x), want)


def test_unrecognized_mlps_left_alone(launches):
    model = nn.ModuleDict({
        "swapped_formula": bf16(SwappedMLP(32, 48)),
        "quick_gelu": bf16(LlamaLikeMLP(32, 48, act=QuickGELU())),
        "shapes_disagree": bf16(LlamaLikeMLP(32, 48)),
    })
    model["shapes_disagree"].up_proj = bf16(nn.Linear(32, 40))
    model["shapes_disagree"].down_proj = bf16(nn.Linear(40, 32))
    gemmtune.torch.optimize(model, progress=False)
    for name in ("swapped_formula", "quick_gelu", "shapes_disagree"):
        mlp = model[name]
        assert type(mlp) is not gm.GatedMLP, name
        # its Linears are still swapped one by one
        assert type(mlp.gate_proj) is gm.Linear and mlp.gate_proj.epilogue == "none", name
    x = torch.randn(2, 32, dtype=BF16)
    ref = bf16(SwappedMLP(32, 48))
    ref.load_state_dict(model["swapped_formula"].state_dict())
    with torch.no_grad():
        assert close(model["swapped_formula"](x), ref(x))


def test_known_mlp_trusted_when_probe_cannot_tell(launches):
    class LlamaMLP(LlamaLikeMLP):  # noqa: N801 (transformers' class name)
        pass

    zeros = bf16(LlamaMLP(16, 24))
    other = bf16(LlamaLikeMLP(16, 24))
    for m in (zeros, other):
        for p in m.parameters():
            nn.init.zeros_(p)
    assert type(gemmtune.torch.optimize(zeros, progress=False)) is gm.GatedMLP
    assert type(gemmtune.torch.optimize(other, progress=False)) is LlamaLikeMLP


def test_sequential_activation_fused(launches):
    model = bf16(nn.Sequential(nn.Linear(32, 64), nn.GELU(approximate="tanh"), nn.Linear(64, 64), nn.ReLU(),
                               nn.Linear(64, 16), nn.Dropout(0.1), nn.Linear(16, 8), nn.SiLU()))
    model.eval()
    keys = list(model.state_dict())
    x = torch.randn(5, 32, dtype=BF16)
    with torch.no_grad():
        want = model(x)
    gemmtune.torch.optimize(model, progress=False)
    assert [type(m).__name__ for m in model] == ["Linear", "Identity", "Linear", "Identity", "Linear", "Dropout",
                                                 "Linear", "Identity"]
    assert all(type(model[i]) is gm.Linear for i in (0, 2, 4, 6))
    assert [model[i].epilogue for i in (0, 2, 4, 6)] == ["gelu_tanh", "relu", "none", "silu"]
    assert list(model.state_dict()) == keys
    with torch.no_grad():
        assert close(model(x), want)


def test_many_sequentials_each_slot_right(launches):
    """Replaced modules are freed only after the swap: a new Identity never takes a replaced module's identity."""
    model = bf16(nn.ModuleList(nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8), nn.SiLU(), nn.Linear(8, 8))
                               for _ in range(40)))
    gemmtune.torch.optimize(model, progress=False)
    for seq in model:
        assert [type(m).__name__ for m in seq] == ["Linear", "Identity", "Linear", "Identity", "Linear"]
        assert [seq[i].epilogue for i in (0, 2, 4)] == ["relu", "silu", "none"]


def test_fuse_false_swaps_linears_only(launches):
    model = bf16(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), LlamaLikeMLP(64, 32)))
    gemmtune.torch.optimize(model, progress=False, fuse=False)
    assert type(model[1]) is nn.ReLU and model[0].epilogue == "none"
    assert type(model[2]) is LlamaLikeMLP and type(model[2].gate_proj) is gm.Linear


def test_left_alone_and_report(launches):
    class MyLinear(nn.Linear):
        pass

    model = nn.ModuleDict({
        "f32": nn.Linear(8, 8),
        "sub": MyLinear(8, 8).to(BF16),
        "mha": nn.MultiheadAttention(16, 2).to(BF16),  # out_proj: a Linear subclass its owner reads directly
        "hooked": nn.Linear(8, 8).to(BF16),
        "ok": nn.Linear(8, 8).to(BF16),
        "f16": nn.Linear(8, 8).to(torch.float16),
    })
    model["hooked"].register_forward_pre_hook(lambda *a: None)
    lines = []
    gemmtune.torch.optimize(model, progress=lines.append)
    assert type(model["ok"]) is gm.Linear and type(model["f16"]) is gm.Linear
    assert type(model["f32"]) is nn.Linear and type(model["sub"]) is MyLinear and type(model["hooked"]) is nn.Linear
    assert type(model["mha"].out_proj) is not gm.Linear
    assert len(lines) == 1 and "2 Linear -> gemmtune" in lines[0], lines
    assert "float32 Linear" in lines[0] and "MyLinear" in lines[0] and "hooks" in lines[0], lines


def test_include_predicate(launches):
    model = bf16(TinyLM())
    gemmtune.torch.optimize(model, progress=False, include=lambda name, m: name != "head")
    assert type(model.head) is nn.Linear and type(model.layers[0].o) is gm.Linear


def test_shared_modules(launches):
    shared = bf16(nn.Linear(16, 16))
    mlp_gate = bf16(nn.Linear(16, 24))
    a, b = bf16(LlamaLikeMLP(16, 24)), bf16(LlamaLikeMLP(16, 24))
    a.gate_proj = mlp_gate
    b.gate_proj = mlp_gate  # a gate shared by two MLPs: fusing one would cut the other's
    same_mlp = bf16(LlamaLikeMLP(16, 24))
    model = nn.ModuleDict({"x": shared, "y": shared, "a": a, "b": b, "m1": same_mlp, "m2": same_mlp,
                           "seq": nn.Sequential(shared, nn.ReLU())})
    gemmtune.torch.optimize(model, progress=False)
    assert type(model["x"]) is gm.Linear and model["x"] is model["y"] and model["seq"][0] is model["x"]
    assert model["x"].epilogue == "none" and type(model["seq"][1]) is nn.ReLU  # shared Linear: no fused act
    assert type(model["a"]) is LlamaLikeMLP and model["a"].gate_proj is model["b"].gate_proj
    assert type(model["a"].gate_proj) is gm.Linear
    assert type(model["m1"]) is gm.GatedMLP and model["m1"] is model["m2"]


def test_idempotent(launches):
    model = bf16(TinyLM())
    gemmtune.torch.optimize(model, progress=False)
    before = {n: id(m) for n, m in model.named_modules()}
    gemmtune.torch.optimize(model, progress=False)
    assert {n: id(m) for n, m in model.named_modules()} == before


def test_not_inplace(launches):
    model = bf16(TinyLM())
    new = gemmtune.torch.optimize(model, progress=False, inplace=False)
    assert new is not model and type(model.head) is nn.Linear and type(new.head) is gm.Linear
    assert new.head.weight is new.emb.weight and new.head.weight is not model.head.weight


def test_state_dict_round_trip(launches):
    torch.manual_seed(1)
    orig = bf16(TinyLM())
    sd = {k: v.clone() for k, v in orig.state_dict().items()}
    opt = gemmtune.torch.optimize(bf16(TinyLM()), progress=False)
    # the original keys, the gate/up halves as separate tensors
    assert set(opt.state_dict()) == set(sd)
    opt.load_state_dict(sd)  # strict: original keys accepted
    osd = opt.state_dict()
    for k, v in sd.items():
        assert torch.equal(osd[k], v), k
    g = osd["layers.0.mlp.gate_proj.weight"]
    assert g.untyped_storage().data_ptr() != osd["layers.0.mlp.up_proj.weight"].untyped_storage().data_ptr()
    # and back into a plain model
    fresh = bf16(TinyLM())
    fresh.load_state_dict(osd)
    ids = torch.randint(0, 50, (1, 4))
    with torch.no_grad():
        assert close(opt(ids), fresh(ids))
    # the fused key itself is also accepted
    mlp = opt.layers[0].mlp
    w = torch.randn_like(mlp.gate_up.weight)
    mlp.load_state_dict({"gate_up.weight": w, "down_proj.weight": mlp.down_proj.weight.detach().clone()})
    assert torch.equal(mlp.gate_up.weight, w)


def test_bad_arguments(launches):
    model = bf16(TinyLM())
    with pytest.raises(ValueError, match="needs shapes"):
        gemmtune.torch.optimize(model, tune="ahead", progress=False)
    with pytest.raises(ValueError, match="tune must be"):
        gemmtune.torch.optimize(model, tune="eager", progress=False)
    with pytest.raises(ValueError, match="drop tune='lazy'"):
        gemmtune.torch.optimize(model, [16], tune="lazy", progress=False)
    with pytest.raises(TypeError, match="list of token counts"):
        gemmtune.torch.optimize(model, (1, 2048), progress=False)
    with pytest.raises(TypeError, match="not a token count"):
        gemmtune.torch.optimize(model, ["16"], progress=False)
    with pytest.raises(ValueError, match="must be positive"):
        gemmtune.torch.optimize(model, [(0, 5)], progress=False)
    with pytest.raises(ValueError, match="empty"):
        gemmtune.torch.optimize(model, [], progress=False)
    with pytest.raises(ValueError, match="dtypes"):
        gemmtune.torch.optimize(model, dtypes=(torch.float32,), progress=False)
    with pytest.raises(TypeError, match="nn.Module"):
        gemmtune.torch.optimize(lambda x: x, progress=False)
    assert type(model.head) is nn.Linear  # nothing swapped on a refused call
    with pytest.raises(ValueError, match="weight must be 2-D"):
        gm.Linear(nn.Parameter(torch.zeros(3)))
    with pytest.raises(ValueError, match="bias must have shape"):
        gm.Linear(nn.Parameter(torch.zeros(3, 2)), nn.Parameter(torch.zeros(2)))


# ---- ahead-of-time tuning: gathering and the progress lines --------------------------------------------------------

def test_token_counts():
    shapes = [(1, 2048), (8, 512), 4096, [2, 3, 4], torch.Size([7]), (2048,), (1, 2048)]
    assert gm.token_counts(shapes) == [2048, 4096, 24, 7]
    assert gm.leading_shapes(shapes) == [(1, 2048), (8, 512), (4096,), (2, 3, 4), (7,), (2048,)]


def test_distinct_gemms(launches):
    model = bf16(TinyLM(vocab=50, hidden=64, layers=3))
    gemmtune.torch.optimize(model, progress=False)
    specs = gm.distinct_gemms(model, [(1, 16), (2, 8), 4])  # M = 16 twice: one M
    labels = [s.label() for s in specs]
    per_m = ["linear {m}x192x64 bf16 bias", "linear {m}x64x64 bf16", "linear {m}x192x64 bf16 silu_glu",
             "linear {m}x64x96 bf16", "linear {m}x50x64 bf16"]
    assert labels == [x.format(m=16) for x in per_m] + [x.format(m=4) for x in per_m]
    assert specs[0].modules == ["layers.0.qkv", "layers.1.qkv", "layers.2.qkv"]
    assert specs[2].modules == ["layers.0.mlp.gate_up", "layers.1.mlp.gate_up", "layers.2.mlp.gate_up"]
    assert specs[4].modules == ["head"] and (specs[4].n, specs[4].k) == (50, 64)
    assert specs[0].leads == [(1, 16), (2, 8)] and specs[5].leads == [(4,)]


class FakeSelections:
    """_dispatch's options and selection dict, as the ops fill them on a miss."""

    def __init__(self, tune="auto"):
        self.opts = {"tune": tune}
        self.sel = {}
        self.tune_modes = []

    def install(self, monkeypatch, launches_list):
        def launch(x, weight, bias, epilogue):
            self.tune_modes.append(self.opts["tune"])
            key = (tuple(x.shape), tuple(weight.shape), epilogue)  # the ops key a selection by the input's shape
            if self.opts["tune"] == "never" and key not in self.sel:
                raise gemmtune.Error(f"untuned {key}")
            self.sel.setdefault(key, "sm90:fake")
            launches_list.append((tuple(x.shape), tuple(weight.shape), epilogue, bias is not None))
            return reference_linear(x, weight, bias, epilogue)
        monkeypatch.setattr(gm, "_linear", launch)
        monkeypatch.setattr(gm._dispatch, "options", lambda: dict(self.opts))
        monkeypatch.setattr(gm._dispatch, "set_options", lambda **kw: self.opts.update(kw))
        monkeypatch.setattr(gm._dispatch, "selections", lambda: dict(self.sel))


def test_tune_ahead_runs_each_distinct_gemm_once(launches, monkeypatch):
    fake = FakeSelections(tune="never")
    fake.install(monkeypatch, launches)
    lines = []
    model = gemmtune.torch.optimize(bf16(TinyLM(layers=2)), shapes=[(2, 8), 3], progress=lines.append)
    assert len(launches) == 10  # 5 distinct GEMMs x 2 M's, each once, whatever the layer count
    assert {s[0] for s in launches} == {(2, 8, 64), (3, 64), (2, 8, 96), (3, 96)}
    assert fake.tune_modes == ["auto"] * 10 and fake.opts["tune"] == "never"  # tuning allowed, then restored
    assert lines[0].startswith("gemmtune.optimize: ")
    assert lines[1].startswith("[1/10] linear 16x192x64 bf16 bias (layers.0.qkv +1) ... sm90:fake"), lines[1]
    assert lines[3].startswith("[3/10] linear 16x192x64 bf16 silu_glu (layers.0.mlp.gate_up +1) ..."), lines[3]
    assert all("tuned in" in ln for ln in lines[1:])
    assert type(model.layers[1].mlp) is gm.GatedMLP


def test_tune_ahead_primes_every_input_shape(launches, monkeypatch):
    """Two input shapes of one M: one problem (one progress line), tuned on the first and then run on the second,
    so that calls of either shape find their selection when tuning is off."""
    fake = FakeSelections()
    fake.install(monkeypatch, launches)
    lines = []
    model = gemmtune.torch.optimize(bf16(TinyLM(layers=1)), shapes=[(2, 8), (1, 16)], progress=lines.append)
    assert len(lines) == 6 and lines[1].startswith("[1/5] linear 16x192x64 bf16 bias (layers.0.qkv) ..."), lines
    assert [s[0] for s in launches[:2]] == [(2, 8, 64), (1, 16, 64)]
    fake.opts["tune"] = "never"
    launches.clear()
    with torch.no_grad():
        model(torch.randint(0, 50, (2, 8)))
        model(torch.randint(0, 50, (1, 16)))
        with pytest.raises(gemmtune.Error, match="untuned"):
            model(torch.randint(0, 50, (4, 4)))
    assert len(launches) == 10


def test_tune_ahead_reports_failures(launches, monkeypatch):
    fake = FakeSelections()
    fake.install(monkeypatch, launches)
    ok = gm._linear

    def refuse_glu(x, weight, bias, epilogue):
        if "glu" in epilogue:
            raise gemmtune.InvalidInputError("no GLU today")
        return ok(x, weight, bias, epilogue)
    monkeypatch.setattr(gm, "_linear", refuse_glu)
    lines = []
    with pytest.raises(gemmtune.Error, match=r"linear 4x192x64 bf16 silu_glu \(layers.0.mlp.gate_up\).*no GLU today"):
        gemmtune.torch.optimize(bf16(TinyLM(layers=1)), shapes=[4], progress=lines.append)
    assert len(lines) == 6 and "failed: InvalidInputError: no GLU today" in lines[3]
    assert lines[5].startswith("[5/5] linear 4x50x64")  # the others still tuned


# ---- torch.compile of the swapped modules ---------------------------------------------------------------------------

_test_lib_calls = []


@torch.library.custom_op("gemmtune_modules_test::linear", mutates_args=())
def _test_linear(x: torch.Tensor, weight: torch.Tensor, bias: "torch.Tensor | None", epilogue: str) -> torch.Tensor:
    _test_lib_calls.append(epilogue)
    return reference_linear(x, weight, bias, epilogue)


@_test_linear.register_fake
def _(x, weight, bias, epilogue):
    n = weight.shape[0] // 2 if "glu" in epilogue else weight.shape[0]
    return x.new_empty(*x.shape[:-1], n)


def test_compile_fullgraph(launches, monkeypatch):
    """The swapped modules trace whole into a graph holding the opaque op (here a CPU stand-in of gemmtune::linear,
    called as the real one is under torch.compile)."""
    model = bf16(TinyLM())
    ids = torch.randint(0, 50, (2, 6))
    gemmtune.torch.optimize(model, progress=False)
    with torch.no_grad():
        want = model(ids)
    monkeypatch.setattr(gm, "_linear", lambda x, w, b, e: torch.ops.gemmtune_modules_test.linear(x, w, b, e))
    graphs = []

    def backend(gm_, example_inputs):
        graphs.append(gm_)
        return gm_.forward
    torch._dynamo.reset()
    compiled = torch.compile(model, backend=backend, fullgraph=True)
    _test_lib_calls.clear()
    with torch.no_grad():
        got = compiled(ids)
    torch._dynamo.reset()
    assert len(graphs) == 1
    targets = [str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"]
    # 2 layers x (qkv, o, gate_up, down) + head
    assert sum(t.startswith("gemmtune_modules_test.linear") for t in targets) == 9, targets
    assert _test_lib_calls.count("silu_glu") == 2
    assert torch.equal(got, want)


def test_linear_launch_uses_registered_op_when_compiling(monkeypatch):
    """The launch of a swapped module: the ops module's direct path in eager, torch.ops.gemmtune.linear when traced."""
    seen = []
    monkeypatch.setattr(gm._ops, "linear", lambda *a: seen.append("direct") or "direct", raising=False)
    assert gm._linear(None, None, None, "none") == "direct" and seen == ["direct"]
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    if not hasattr(torch.ops.gemmtune, "linear"):
        with pytest.raises((AttributeError, RuntimeError)):
            gm._linear(None, None, None, "none")
    assert seen == ["direct"]


def test_module_repr():
    lin = gm.Linear(nn.Parameter(torch.zeros(8, 4, dtype=BF16)), None, "silu_glu")
    assert "out_features=4" in repr(lin) and "epilogue='silu_glu'" in repr(lin) and math.isfinite(lin.in_features)
