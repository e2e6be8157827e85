"""The MoE experts swap of gemmtune.torch.optimize without a GPU: transformers-style experts modules on CPU in bf16,
the grouped launch replaced by a torch reference of gemmtune's grouped_mm (GLU epilogue as in gemmtune/epilogue.h)."""
import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import gemmtune.torch  # noqa: E402,F401
from gemmtune.torch import modules as gm  # noqa: E402
from gemmtune.torch import moe  # noqa: E402

BF16 = torch.bfloat16


def reference_grouped(x, w, offs, epilogue):
    """grouped_mm's contract: rows [offs[g-1], offs[g]) times w[g] (K, N); rows past offs[-1] are left undefined
    (NaN here, so a swap that reads them fails)."""
    n = w.shape[-1] // (2 if epilogue.endswith("_glu") else 1)
    out = torch.full((x.shape[0], n), float("nan"), dtype=x.dtype)
    start = 0
    for g, end in enumerate(offs.tolist()):
        y = x[start:end].float() @ w[g].float()
        if epilogue == "silu_glu":
            a, b = y.chunk(2, dim=-1)
            y = F.silu(a) * b
        elif epilogue != "none":
            raise AssertionError(f"unexpected epilogue {epilogue}")
        out[start:end] = y.to(x.dtype)
        start = end
    return out


@pytest.fixture
def launches(monkeypatch):
    calls = []

    def launch(x, w, offs, epilogue):
        calls.append((tuple(x.shape), tuple(w.shape), epilogue))
        return reference_grouped(x, w, offs, epilogue)
    monkeypatch.setattr(gm, "_DEVICE_TYPES", ("cuda", "cpu"))
    monkeypatch.setattr(moe, "_grouped", launch)
    return calls


class Experts(nn.Module):
    """transformers v5's experts contract (weights (E, 2I, H) and (E, H, I), or transposed), a loop over experts."""

    def __init__(self, e=4, h=32, i=48, transposed=False, act=None, up_first=False):
        super().__init__()
        self.num_experts, self.is_transposed, self.up_first = e, transposed, up_first
        self.config = type("Config", (), {"num_experts_per_tok": 2})()  # as transformers' experts modules hold it
        gu, dn = (e, h, 2 * i) if transposed else (e, 2 * i, h), (e, i, h) if transposed else (e, h, i)
        self.gate_up_proj = nn.Parameter(torch.randn(gu, dtype=BF16) / h ** 0.5)
        self.down_proj = nn.Parameter(torch.randn(dn, dtype=BF16) / i ** 0.5)
        self.act_fn = act if act is not None else nn.SiLU()

    def forward(self, hidden, top_k_index, top_k_weights):
        out = torch.zeros_like(hidden)
        for e in range(self.num_experts):
            tok, slot = torch.where(top_k_index == e)
            gu = self.gate_up_proj[e] if self.is_transposed else self.gate_up_proj[e].t()
            dn = self.down_proj[e] if self.is_transposed else self.down_proj[e].t()
            g, u = (hidden[tok] @ gu).chunk(2, dim=-1)
            if self.up_first:
                g, u = u, g
            y = (self.act_fn(g) * u) @ dn
            out.index_add_(0, tok, y * top_k_weights[tok, slot, None])
        return out


class MoeBlock(nn.Module):
    def __init__(self, k=2, **kw):
        super().__init__()
        self.experts = Experts(**kw)
        # The router's weight as a bare Parameter (as transformers' routers hold it): no Linear to swap.
        h = self.experts.gate_up_proj.shape[1 if kw.get("transposed") else 2]
        self.router = nn.Parameter(torch.randn(self.experts.num_experts, h, dtype=BF16))
        self.k = k

    def forward(self, x):
        w, idx = torch.softmax(F.linear(x, self.router).float(), -1).topk(self.k, -1)
        return self.experts(x, idx, w.to(x.dtype))


def close(a, b, tol=3e-2):
    return (a.float() - b.float()).abs().max().item() <= tol * max(b.float().abs().max().item(), 1e-6)


@pytest.mark.parametrize("transposed", [False, True])
def test_experts_swapped_and_same_output(launches, transposed):
    torch.manual_seed(0)
    block = MoeBlock(transposed=transposed)
    x = torch.randn(37, 32, dtype=BF16)
    want = block(x)
    keys = set(block.state_dict())
    lines = []
    gemmtune.torch.optimize(block, progress=lines.append)
    assert isinstance(block.experts, moe.GroupedExperts), lines
    assert "1 MoE experts grouped" in lines[0]
    assert set(block.state_dict()) == keys
    launches.clear()
    got = block(x)
    assert close(got, want)
    # Two grouped GEMMs over the 37 * 2 (token, expert) pairs: [gate; up] with SwiGLU, then down.
    assert [c[2] for c in launches] == ["silu_glu", "none"] and launches[0][0] == (74, 32)


def test_sentinel_experts_add_nothing(launches):
    """Ids past the module's experts (expert parallelism's sentinel) sort after the last group and contribute 0."""
    torch.manual_seed(1)
    ex = Experts()
    x = torch.randn(9, 32, dtype=BF16)
    idx = torch.randint(0, 4, (9, 2))
    idx[::3, 1] = 4  # not a local expert
    w = torch.rand(9, 2, dtype=BF16)
    want = ex(x, idx, w)  # the loop never visits expert 4
    new, why = moe.experts_swap(ex, (BF16,), ("cpu",), gm.activation_of)
    assert why is None
    got = new(x, idx, w)
    assert torch.isfinite(got.float()).all() and close(got, want)


def test_other_formula_left_alone(launches):
    block = MoeBlock(up_first=True)
    lines = []
    gemmtune.torch.optimize(block, progress=lines.append)
    assert isinstance(block.experts, Experts)
    assert "forward is not down(act(gate) * up)" in lines[0]


def test_unsupported_activation_left_alone(launches):
    block = MoeBlock(act=nn.Tanh())
    lines = []
    gemmtune.torch.optimize(block, progress=lines.append)
    assert isinstance(block.experts, Experts) and "no GLU epilogue" in lines[0]


def test_fp32_experts_left_alone(launches):
    block = MoeBlock().float()
    lines = []
    gemmtune.torch.optimize(block, progress=lines.append)
    assert isinstance(block.experts, Experts) and "float32 on cpu" in lines[0]


def test_transformers_mixtral_experts(launches):
    """The real module, when transformers is installed."""
    tf = pytest.importorskip("transformers")
    from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock
    cfg = tf.MixtralConfig(hidden_size=32, intermediate_size=48, num_local_experts=4, num_experts_per_tok=2)
    torch.manual_seed(2)
    block = MixtralSparseMoeBlock(cfg).to(BF16)
    for p in block.parameters():
        nn.init.normal_(p, std=0.1)
    x = torch.randn(2, 5, 32, dtype=BF16)
    want = block(x)
    want = want[0] if isinstance(want, tuple) else want
    gemmtune.torch.optimize(block, progress=False)
    assert isinstance(block.experts, moe.GroupedExperts)
    got = block(x)
    got = got[0] if isinstance(got, tuple) else got
    assert close(got, want)


def test_shapes_tune_the_experts_ahead(launches):
    """optimize(shapes=...) runs each experts module once per token count: T * top_k rows through both GEMMs."""
    torch.manual_seed(3)
    block = MoeBlock()
    lines = []
    gemmtune.torch.optimize(block, shapes=[(2, 8), 5], progress=lines.append)
    assert isinstance(block.experts, moe.GroupedExperts) and block.experts.top_k == 2
    assert [c[0][0] for c in launches] == [32, 32, 10, 10]  # 16 tokens x 2, then 5 x 2; gate+up, down each
    assert any("experts 16x2 over 4 (96x32 silu_glu, then down)" in ln for ln in lines), lines
    assert any(ln.startswith("[2/2] experts 5x2") for ln in lines), lines


def test_no_tokens(launches):
    ex = Experts()
    new, _ = moe.experts_swap(ex, (BF16,), ("cpu",), gm.activation_of)
    out = new(torch.empty(0, 32, dtype=BF16), torch.empty(0, 2, dtype=torch.long), torch.empty(0, 2, dtype=BF16))
    assert out.shape == (0, 32) and not launches
