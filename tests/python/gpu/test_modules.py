"""gemmtune.torch.optimize on the GPU: swapped models against an fp32 copy of the original, ahead-of-time tuning
(then no tuning at call time), torch.compile of a swapped model.

Tolerance: outputs are bf16 (or f16); each is compared with the same model run in fp32 on the same input by the
normalized max error max|y - y32| / max|y32|, which must be <= 3e-2 (a bf16 value carries ~4e-3 relative rounding,
a few layers of it compound; a wrong epilogue, operand or layout gives errors of order 1). Eager torch in bf16 is
held to the same bound, so the test also shows the swap is no worse than the model it replaces.

Run on the GPU host: python3 -m pytest -q tests/python/gpu/test_modules.py
"""
import copy

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import torch.nn as nn  # noqa: E402

import gemmtune  # noqa: E402
import gemmtune.torch as gt  # noqa: E402
from gemmtune.torch import modules as gm  # noqa: E402

TOL = 3e-2
DEV = torch.device("cuda")


pytestmark = pytest.mark.usefixtures("quick_tuning")  # conftest.py


def norm_err(y, ref):
    y, ref = y.float(), ref.float()
    assert torch.isfinite(y).all(), "non-finite output"
    return ((y - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()


class MLP(nn.Module):
    def __init__(self, hidden, inter, act):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inter, bias=False)
        self.up_proj = nn.Linear(hidden, inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)
        self.act_fn = act

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class HandLM(nn.Module):
    """A Llama-shaped stack written by hand (used when transformers is not importable): attention-free blocks of
    RMS-normed qkv/o projections and a gated MLP, an untied LM head."""

    def __init__(self, vocab=1000, hidden=256, inter=688, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            b = nn.Module()
            b.qkv = nn.Linear(hidden, 3 * hidden, bias=False)
            b.o = nn.Linear(hidden, hidden, bias=False)
            b.mlp = MLP(hidden, inter, nn.SiLU())
            self.blocks.append(b)
        self.head = nn.Linear(hidden, vocab, bias=False)

    @staticmethod
    def rms(x):
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype)

    def forward(self, ids):
        x = self.emb(ids)
        for b in self.blocks:
            q, k, v = b.qkv(self.rms(x)).chunk(3, dim=-1)
            x = x + b.o(v * torch.sigmoid(q * k))
            x = x + b.mlp(self.rms(x))
        return self.head(self.rms(x))


def small_llama():
    """(model in bf16 on the GPU, its fp32 twin, f(model, ids) -> logits)."""
    torch.manual_seed(0)
    try:
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError:
        model = HandLM()
        call = lambda m, ids: m(ids)  # noqa: E731
    else:
        cfg = LlamaConfig(hidden_size=256, intermediate_size=688, num_hidden_layers=2, num_attention_heads=4,
                          num_key_value_heads=2, vocab_size=1000, max_position_embeddings=512)
        model = LlamaForCausalLM(cfg)
        call = lambda m, ids: m(input_ids=ids, use_cache=False).logits  # noqa: E731
    model = model.to(DEV).eval().requires_grad_(False)
    ref32 = copy.deepcopy(model)
    return model.to(torch.bfloat16), ref32, call


@pytest.mark.parametrize("batch, seq", [(1, 1), (3, 1), (2, 37), (1, 129)])
def test_llama_optimize_matches_fp32(batch, seq):
    model, ref32, call = small_llama()
    ids = torch.randint(0, 1000, (batch, seq), device=DEV)
    with torch.no_grad():
        want = call(ref32, ids)
        eager = call(model, ids)
        gt.optimize(model, progress=False)
        got = call(model, ids)
    assert sum(isinstance(m, gm.GatedMLP) for m in model.modules()) == 2
    assert not any(type(m) is nn.Linear for m in model.modules())
    e_eager, e_opt = norm_err(eager, want), norm_err(got, want)
    assert e_eager <= TOL, f"eager bf16 vs fp32: {e_eager:.3g}"
    assert e_opt <= TOL, f"optimized vs fp32: {e_opt:.3g} (eager bf16: {e_eager:.3g}), batch {batch} seq {seq}"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("m", [1, 7, 64, 300])
def test_sequential_and_mlp_epilogues(dtype, m):
    torch.manual_seed(m)
    model = nn.Sequential(
        nn.Linear(256, 512), nn.GELU(approximate="tanh"),
        nn.Linear(512, 512), nn.ReLU(),
        nn.Linear(512, 136), nn.SiLU(),
        nn.Linear(136, 264), nn.Sigmoid(),
        nn.Linear(264, 256, bias=False), nn.GELU(),
        MLP(256, 344, nn.GELU(approximate="tanh")),
        MLP(256, 200, nn.SiLU()),
    ).to(DEV).eval().requires_grad_(False)
    for lin in model.modules():  # unit-variance outputs: nn.Linear's default init shrinks them layer by layer
        if isinstance(lin, nn.Linear):  # to where f16 goes subnormal
            nn.init.normal_(lin.weight, std=lin.in_features ** -0.5)
    ref32 = copy.deepcopy(model)
    model.to(dtype)
    x = torch.randn(m, 256, device=DEV)
    with torch.no_grad():
        want = ref32(x)
        gt.optimize(model, progress=False)
        got = model(x.to(dtype))
    assert [model[i].epilogue for i in (0, 2, 4, 6, 8)] == ["gelu_tanh", "relu", "silu", "sigmoid", "gelu_erf"]
    assert model[10].gate_up.epilogue == "gelu_tanh_glu" and model[11].gate_up.epilogue == "silu_glu"
    assert got.dtype == dtype and got.shape == want.shape
    e = norm_err(got, want)
    assert e <= TOL, f"{dtype} M={m}: {e:.3g}"


def test_ahead_of_time_tuning_then_no_tuning_at_call_time():
    model, ref32, call = small_llama()
    lines = []
    shapes = [(2, 16), (1, 32), (5, 1)]  # (batch, seq): the model's Linears see (batch, seq, hidden)
    gt.optimize(model, shapes=shapes, progress=lines.append)
    specs = gm.distinct_gemms(model, shapes)  # M = 32 (twice) and 5
    assert len(lines) == 1 + len(specs), lines  # the summary, then one line per distinct GEMM
    assert all(f"[{i + 1}/{len(specs)}] linear " in ln for i, ln in enumerate(lines[1:])), lines
    assert all(" ms (tuned in " in ln for ln in lines[1:]), lines
    tuned = dict(gt.selections())
    gt.set_options(tune="never")
    with torch.no_grad():
        for shape in shapes:  # every GEMM of these inputs was tuned ahead of time
            ids = torch.randint(0, 1000, shape, device=DEV)
            e = norm_err(call(model, ids), call(ref32, ids))
            assert e <= TOL, f"{shape}: {e:.3g}"
        assert gt.selections() == tuned  # nothing tuned at call time
        with pytest.raises(gemmtune.Error):  # and "never" is in force: an M not tuned ahead of time is refused
            call(model, torch.randint(0, 1000, (1, 7), device=DEV))


def test_optimized_model_under_torch_compile():
    model, ref32, call = small_llama()
    gt.optimize(model, progress=False)
    torch._dynamo.reset()
    compiled = torch.compile(lambda ids: call(model, ids))
    try:
        with torch.no_grad():
            for shape in ((2, 24), (4, 1)):
                ids = torch.randint(0, 1000, shape, device=DEV)
                eager = call(model, ids)
                got = compiled(ids)
                want = call(ref32, ids)
                assert norm_err(got, want) <= TOL
                assert norm_err(got, eager) <= TOL
    finally:
        torch._dynamo.reset()


def test_hand_model_compiles_fullgraph():
    torch.manual_seed(3)
    model = HandLM(layers=2).to(DEV).eval().requires_grad_(False)
    ref32 = copy.deepcopy(model)
    model.to(torch.bfloat16)
    gt.optimize(model, progress=False)
    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True)
    try:
        ids = torch.randint(0, 1000, (3, 11), device=DEV)
        with torch.no_grad():
            e = norm_err(compiled(ids), ref32(ids))
        assert e <= TOL, f"{e:.3g}"
    finally:
        torch._dynamo.reset()


def test_state_dict_loads_into_the_original():
    model, _, call = small_llama()
    plain = copy.deepcopy(model)
    gt.optimize(model, progress=False)
    fresh, _, _ = small_llama()
    for p in fresh.parameters():
        p.data.normal_()
    fresh.load_state_dict(model.state_dict())
    ids = torch.randint(0, 1000, (2, 9), device=DEV)
    with torch.no_grad():
        assert torch.equal(call(fresh, ids), call(plain, ids))
