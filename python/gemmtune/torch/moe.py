"""The mixture-of-experts swap of ``optimize()``: transformers' experts modules -> two gemmtune grouped GEMMs.

transformers (v5) keeps a MoE layer's experts in one module (MixtralExperts, Qwen2MoeExperts, Qwen3MoeExperts,
OlmoeExperts, DeepseekV3Experts, ...) with 3-D weights ``gate_up_proj`` (E, 2I, H) and ``down_proj`` (E, H, I) (or
their transposes, ``is_transposed``) and ``forward(hidden_states (T, H), top_k_index (T, k), top_k_weights (T, k))``;
the router and the shared experts stay outside it. ``GroupedExperts`` computes the same thing as:

1. the T·k (token, expert) pairs sorted by expert (``torch.sort``; group ends by ``histc`` + ``cumsum``, no host
   sync, so it captures in CUDA graphs and traces under torch.compile);
2. one grouped GEMM over [gate; up] with the GLU epilogue (``silu_glu`` for SiLU experts), one for ``down_proj``;
3. the rows weighted by the router in fp32 and summed per token in a fixed order (deterministic, as transformers'
   own grouped path).

Expert ids past the module's experts (the sentinel of expert parallelism) land after the last group and add
nothing. The Parameters are the module's own, so state_dict keys and checkpoints are unchanged. An experts module is
taken only when its forward matches that formula on a random probe (one computed with its own weights and torch ops,
an expert at a time); otherwise it is left alone and the report says why.
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn as nn

from . import ops as _ops


def _grouped(x, w, offs, epilogue):
    """The launch: x (S, K) rows grouped by offs, w (E, K, N). A CPU test replaces it with a torch reference."""
    return _ops.grouped_mm(x, w, offs, epilogue=epilogue)


class GroupedExperts(nn.Module):
    """transformers' experts forward through gemmtune grouped GEMMs (see the module docstring)."""

    def __init__(self, gate_up_proj: nn.Parameter, down_proj: nn.Parameter, activation: str, transposed: bool,
                 top_k: Optional[int] = None):
        super().__init__()
        self.gate_up_proj = gate_up_proj
        self.down_proj = down_proj
        self.activation = activation
        self.transposed = transposed
        self.num_experts = gate_up_proj.shape[0]
        self.top_k = top_k  # experts per token, when the model's config says (ahead-of-time tuning needs it)

    def tuning_call(self, tokens: int):
        """Runs the module once on `tokens` random tokens routed uniformly to top_k experts each (what optimize()'s
        `shapes` tune ahead of time: the grouped GEMMs' selections are keyed by the rows, not the routing)."""
        w = self.gate_up_proj
        hidden = w.shape[1] if self.transposed else w.shape[2]
        x = torch.randn(tokens, hidden, device=w.device, dtype=w.dtype)
        idx = torch.rand(tokens, self.num_experts, device=w.device).argsort(-1)[:, :self.top_k]
        return self(x, idx, torch.full(idx.shape, 1.0 / self.top_k, device=w.device, dtype=w.dtype))

    def tuning_key(self) -> tuple:
        return (tuple(self.gate_up_proj.shape), tuple(self.down_proj.shape), self.gate_up_proj.dtype,
                self.gate_up_proj.device, self.activation, self.transposed, self.top_k)

    def _b(self, w):
        # grouped_mm takes B as (E, K, N): the (E, N, K) weights transposed (a view, no copy).
        return w if self.transposed else w.transpose(-2, -1)

    def forward(self, hidden_states: torch.Tensor, top_k_index: torch.Tensor, top_k_weights: torch.Tensor):
        tokens, hidden = hidden_states.shape
        k = top_k_index.shape[-1]
        if tokens * k == 0:  # no (token, expert) pair: no GEMM to run
            return torch.zeros_like(hidden_states)
        ids, perm = torch.sort(top_k_index.reshape(-1))
        x = hidden_states[perm // k]
        counts = torch.histc(ids.float() if ids.device.type == "cpu" else ids.int(), bins=self.num_experts, min=0,
                             max=self.num_experts - 1)
        offs = torch.cumsum(counts, 0, dtype=torch.int32)
        h = _grouped(x, self._b(self.gate_up_proj), offs, self.activation + "_glu")
        y = _grouped(h, self._b(self.down_proj), offs, "none")
        # Rows past the last group were not written: where() rather than a product, which would keep their NaNs.
        w = top_k_weights.reshape(-1)[perm].float()
        y = torch.where((ids < self.num_experts)[:, None], y.float() * w[:, None], 0.0)
        out = torch.empty_like(y)
        out[perm] = y
        return out.view(tokens, k, hidden).sum(1).to(hidden_states.dtype)

    def extra_repr(self) -> str:
        e, n, kk = self.gate_up_proj.shape
        return (f"experts={e}, top_k={self.top_k}, gate_up=({n}, {kk}), transposed={self.transposed}, "
                f"epilogue={self.activation}_glu")


def _reference(m, act_fn, x, top_k_index, top_k_weights, transposed):
    """The experts formula from the module's own weights, an expert at a time (the probe's answer)."""
    out = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
    for e in range(m.gate_up_proj.shape[0]):
        tok, slot = torch.where(top_k_index == e)
        if tok.numel() == 0:
            continue
        gu = m.gate_up_proj[e] if transposed else m.gate_up_proj[e].t()
        dn = m.down_proj[e] if transposed else m.down_proj[e].t()
        g, u = (x[tok] @ gu).chunk(2, dim=-1)
        y = (act_fn(g) * u) @ dn
        out.index_add_(0, tok, y.float() * top_k_weights[tok, slot, None].float())
    return out


def experts_swap(m: nn.Module, dtypes, devices, activation_of) -> tuple:
    """(GroupedExperts, None) for a transformers experts module gemmtune can run, (None, why) for one it cannot,
    (None, None) for any other module."""
    gu, dn = getattr(m, "gate_up_proj", None), getattr(m, "down_proj", None)
    if not (isinstance(gu, nn.Parameter) and isinstance(dn, nn.Parameter) and gu.dim() == 3 and dn.dim() == 3):
        return None, None
    name = type(m).__name__
    if m._forward_hooks or m._forward_pre_hooks:
        return None, f"{name} with hooks"
    if getattr(m, "has_bias", False) or getattr(m, "is_concatenated", True) is not True:
        return None, f"{name} with biases or interleaved gate/up (no such grouped epilogue)"
    if gu.dtype not in dtypes or dn.dtype != gu.dtype or gu.device.type not in devices or dn.device != gu.device:
        return None, f"{name} of {str(gu.dtype).replace('torch.', '')} on {gu.device.type}"
    act_fn = getattr(m, "act_fn", None)
    act = activation_of(act_fn) if isinstance(act_fn, nn.Module) else None
    if act is None:
        return None, f"{name} with an activation gemmtune has no GLU epilogue for"
    transposed = bool(getattr(m, "is_transposed", False))
    e, two_i, h = gu.shape if not transposed else (gu.shape[0], gu.shape[2], gu.shape[1])
    if two_i % 2 or tuple(dn.shape) != ((e, h, two_i // 2) if not transposed else (e, two_i // 2, h)):
        return None, f"{name} whose gate_up_proj {tuple(gu.shape)} and down_proj {tuple(dn.shape)} do not pair"
    gen = torch.Generator(device=gu.device).manual_seed(0)
    tokens, k = 6, min(2, e)
    x = torch.randn(tokens, h, generator=gen, device=gu.device).to(gu.dtype)
    idx = torch.rand(tokens, e, generator=gen, device=gu.device).argsort(-1)[:, :k]
    wts = torch.rand(tokens, k, generator=gen, device=gu.device).to(gu.dtype)
    try:
        with torch.no_grad():
            got = m(x, idx, wts).float()
            want = _reference(m, act_fn, x, idx, wts, transposed)
    except Exception as exc:  # a forward with another signature is not the experts contract
        return None, f"{name} whose forward(hidden, top_k_index, top_k_weights) failed ({type(exc).__name__})"
    scale = want.abs().max()
    if not (torch.isfinite(want).all() and scale > 0):
        return None, f"{name} whose weights give no finite, nonzero probe (not loaded?)"
    if got.shape != want.shape or not ((got - want).abs().max() <= 2e-2 * scale):
        return None, f"{name} whose forward is not down(act(gate) * up) weighted by the router"
    top_k = getattr(getattr(m, "config", None), "num_experts_per_tok", None)
    top_k = top_k if isinstance(top_k, int) and 0 < top_k <= e else None
    return GroupedExperts(gu, dn, act, transposed, top_k), None


__all__ = ["GroupedExperts", "experts_swap"]
