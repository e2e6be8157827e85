"""gemmtune.torch.optimize on transformers' MoE models (GPU host, transformers installed): the experts modules of
Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE and DeepSeek-V3 swapped for two grouped GEMMs each, outputs against an fp32 copy of the original (the
tolerance of test_modules.py), under CUDA-graph capture with a routing that changes between replays, and under
torch.compile.

Run on the GPU host: python3 -m pytest -q tests/python/gpu/test_moe_models.py
"""
import copy

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)
transformers = pytest.importorskip("transformers")

import gemmtune.torch as gt  # noqa: E402
from gemmtune.torch import modules as gm, moe  # noqa: E402

TOL = 3e-2
DEV = torch.device("cuda")
VOCAB = 1000
SMALL = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, vocab_size=VOCAB,
             max_position_embeddings=512)
CONFIGS = {
    "mixtral": lambda: transformers.MixtralConfig(intermediate_size=96, num_local_experts=8, num_experts_per_tok=2,
                                                  **SMALL),
    "qwen3_moe": lambda: transformers.Qwen3MoeConfig(intermediate_size=256, moe_intermediate_size=96, num_experts=8,
                                                     num_experts_per_tok=2, head_dim=32, **SMALL),
    "olmoe": lambda: transformers.OlmoeConfig(intermediate_size=96, num_experts=8, num_experts_per_tok=2, **SMALL),
    # Shared experts beside the routed ones (a gated MLP, fused as in test_modules.py).
    "qwen2_moe": lambda: transformers.Qwen2MoeConfig(intermediate_size=256, moe_intermediate_size=96,
                                                     shared_expert_intermediate_size=128, num_experts=8,
                                                     num_experts_per_tok=2, **SMALL),
    "deepseek_v3": lambda: transformers.DeepseekV3Config(
        intermediate_size=256, moe_intermediate_size=96, n_routed_experts=8, num_experts_per_tok=2, n_group=2,
        topk_group=1, first_k_dense_replace=0, q_lora_rank=None, kv_lora_rank=32, qk_rope_head_dim=16,
        qk_nope_head_dim=16, v_head_dim=32, **SMALL),
}


pytestmark = pytest.mark.usefixtures("quick_tuning")  # conftest.py


def build(kind):
    """(bf16 model on the GPU, its fp32 twin)."""
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(CONFIGS[kind]())
    model = model.to(DEV).eval().requires_grad_(False)
    return model.to(torch.bfloat16), copy.deepcopy(model).float()


def logits(m, ids):
    return m(input_ids=ids, use_cache=False).logits


def norm_err(y, ref):
    y, ref = y.float(), ref.float()
    assert torch.isfinite(y).all(), "non-finite output"
    return ((y - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()


# Short sequences: over longer ones a token whose top-k is a near tie is routed differently in bf16 than in fp32
# (eager transformers itself then misses the bound); test_experts_match_fp32 covers large token counts.
@pytest.mark.parametrize("kind", sorted(CONFIGS))
@pytest.mark.parametrize("batch, seq", [(1, 1), (5, 1), (2, 37)])
def test_moe_model_matches_fp32(kind, batch, seq):
    model, ref32 = build(kind)
    ids = torch.randint(0, VOCAB, (batch, seq), device=DEV)
    lines = []
    with torch.no_grad():
        want = logits(ref32, ids)
        eager = logits(model, ids)
        gt.optimize(model, progress=lines.append)
        got = logits(model, ids)
    assert sum(isinstance(m, moe.GroupedExperts) for m in model.modules()) == 2, lines
    e_eager, e_opt = norm_err(eager, want), norm_err(got, want)
    assert e_eager <= TOL, f"eager bf16 vs fp32: {e_eager:.3g}"
    assert e_opt <= TOL, f"{kind}: optimized vs fp32 {e_opt:.3g} (eager bf16 {e_eager:.3g}), batch {batch} seq {seq}"


@pytest.mark.parametrize("tokens, experts, k", [(1, 8, 2), (300, 8, 2), (2048, 8, 2), (32, 128, 8), (700, 64, 6)])
def test_experts_match_fp32(tokens, experts, k):
    """The experts module alone, one routing for both: skewed (every fourth expert unused), with 1-row groups at
    decode sizes."""
    cfg = transformers.MixtralConfig(hidden_size=256, intermediate_size=160, num_local_experts=experts,
                                     num_experts_per_tok=k)
    from transformers.models.mixtral.modeling_mixtral import MixtralExperts
    torch.manual_seed(tokens)
    ex = MixtralExperts(cfg).to(DEV)
    with torch.no_grad():
        for p in ex.parameters():
            p.normal_(0.0, p.shape[-1] ** -0.5)
    ex32 = copy.deepcopy(ex).float()
    x = torch.randn(tokens, 256, device=DEV)
    used = torch.tensor([e for e in range(experts) if e % 4 != 3], device=DEV)
    idx = used[torch.rand(tokens, len(used), device=DEV).argsort(-1)[:, :k]]
    w = torch.softmax(torch.randn(tokens, k, device=DEV), -1)
    new, why = moe.experts_swap(ex.to(torch.bfloat16), (torch.bfloat16,), ("cuda",), gm.activation_of)
    assert why is None
    with torch.no_grad():
        got = new(x.bfloat16(), idx, w.bfloat16())
        want = ex32(x, idx, w)
    assert norm_err(got, want) <= TOL


def test_shapes_tune_experts_ahead():
    """optimize(shapes=...) tunes the experts' grouped GEMMs too: then a call of that shape, with its own routing,
    needs no tuning (tune="never" would refuse one)."""
    model, ref32 = build("mixtral")
    lines = []
    gt.optimize(model, shapes=[(2, 16)], progress=lines.append)
    assert sum("experts 32x2 over 8" in ln for ln in lines) == 1, lines  # both layers' experts: one entry
    gt.set_options(tune="never")
    ids = torch.randint(0, VOCAB, (2, 16), device=DEV)
    with torch.no_grad():
        assert norm_err(logits(model, ids), logits(ref32, ids)) <= TOL


def test_state_dict_keys_unchanged():
    model, _ = build("mixtral")
    keys = {k: v.clone() for k, v in model.state_dict().items()}
    gt.optimize(model, progress=False)
    sd = model.state_dict()
    assert set(sd) == set(keys) and all(torch.equal(sd[k], keys[k]) for k in keys)


def test_cuda_graph_replays_new_routings():
    """Sort, group ends and both grouped GEMMs are captured: a replay with other tokens (another routing, the same
    token count) matches eager on those tokens."""
    model, ref32 = build("mixtral")
    gt.optimize(model, progress=False)
    ids = torch.randint(0, VOCAB, (4, 16), device=DEV)
    with torch.no_grad():
        logits(model, ids)  # tunes the shapes before capture
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            logits(model, ids)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = logits(model, ids)
        for seed in (1, 2):
            ids.copy_(torch.randint(0, VOCAB, ids.shape, device=DEV, generator=torch.Generator(DEV).manual_seed(seed)))
            g.replay()
            torch.cuda.synchronize()
            assert norm_err(out, logits(ref32, ids)) <= TOL


def test_swapped_moe_under_torch_compile():
    model, ref32 = build("qwen3_moe")
    gt.optimize(model, progress=False)
    ids = torch.randint(0, VOCAB, (2, 24), device=DEV)
    with torch.no_grad():
        got = torch.compile(lambda i: logits(model, i), fullgraph=True)(ids)
        assert norm_err(got, logits(ref32, ids)) <= TOL
