"""The module swap for eager users: ``gemmtune.torch.optimize(model)``.

    model = gemmtune.torch.optimize(model)                              # tuned lazily, per shape, on first use
    model = gemmtune.torch.optimize(model, shapes=[(1, 2048), (8, 512)])  # every distinct GEMM tuned now

What is swapped (weights bf16 or f16 on a CUDA device, plain ``nn.Linear`` only: subclasses such as the
``out_proj`` of ``nn.MultiheadAttention``, whose owner reads the weight directly, and quantized or LoRA layers keep
their own forward):

- ``nn.Linear`` -> ``Linear``: the same ``weight`` and ``bias`` Parameter objects, so tied weights (an LM head
  sharing the embedding) stay tied and the state_dict keys stay ``weight`` / ``bias``.
- ``nn.Sequential(..., nn.Linear, act, ...)`` with ``act`` ReLU, GELU (tanh or erf), SiLU or Sigmoid (or any module
  without parameters that computes one of these: transformers' activation classes) -> a ``Linear`` with that
  epilogue, and ``nn.Identity`` in the activation's slot (indices and state_dict keys unchanged).
- A gated MLP (transformers' LlamaMLP and its Mistral/Qwen/Gemma kin): a module with ``gate_proj``, ``up_proj``,
  ``down_proj`` Linears and an ``act_fn`` SiLU or GELU (or ReLU, Sigmoid) whose forward is
  ``down(act(gate(x)) * up(x))`` -> ``GatedMLP``: one GEMM over the concatenated ``[gate; up]`` weight with the
  ``silu_glu`` / ``gelu_tanh_glu`` / ``gelu_erf_glu`` (``relu_glu``, ``sigmoid_glu``) epilogue, then ``down_proj``.
  The forward is checked, not assumed: the module is run once on a random 2-token input
  and compared with that formula (a module whose forward differs is left alone). The concatenated weight is a new
  Parameter (the originals are freed unless referenced elsewhere); ``state_dict()`` still has the original keys
  (``gate_proj.weight``, ``up_proj.weight``: copies of the halves) and ``load_state_dict`` takes them (or
  ``gate_up.weight``), so checkpoints load into and out of an optimized model alike.
- A mixture-of-experts layer's experts module (transformers' MixtralExperts, Qwen2/Qwen3-MoE, OLMoE and DeepSeek-V3
  experts: 3-D ``gate_up_proj`` and ``down_proj``, ``forward(hidden, top_k_index, top_k_weights)``) ->
  ``moe.GroupedExperts``: the (token, expert) pairs sorted by expert, one grouped GEMM over [gate; up] with the GLU
  epilogue, one over ``down_proj``, the router-weighted sum; the same Parameters, checked by a probe like the gated
  MLP (see gemmtune/torch/moe.py). The router and shared experts stay as they are (their Linears are swapped as
  above). ``shapes`` tunes the experts' grouped GEMMs too (for a uniform routing of each token count: the
  selections depend on the rows, not on the routing) when the model's config gives the experts per token.

Modules with forward hooks, or Linears that appear at several places of the model, are not fused (a shared Linear is
still swapped, once). The swapped modules call ``torch.ops.gemmtune.linear``, a custom op: they work in eager,
under ``torch.compile`` and in CUDA graphs. They are for inference: run the model under ``torch.no_grad()`` or
``torch.inference_mode()``.

Tuning: lazily by default (the op tunes a problem on its first call, then a dict lookup); or ahead of time with
``shapes``, a list of the activations' leading dims: ``(batch, seq)`` for a transformer whose Linears see
(batch, seq, hidden) inputs, or an int M for 2-D (M, K) inputs. Every distinct GEMM of the model (M = the product,
N, K, dtype, epilogue, bias) is gathered, deduplicated, and tuned before ``optimize`` returns, with one progress line
per GEMM on stderr; each listed input shape is then run once through the op, whose selection dict is keyed by the
input's shape, so those calls find their kernel without tuning (``set_options(tune="never")`` can then enforce
it). Tuner options are ``gemmtune.torch.set_options``'.
"""
from __future__ import annotations

import copy
import math
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Sequence, Union

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import _dispatch
from . import moe as _moe
from . import ops as _ops

# Which devices the swap takes. The ops launch on CUDA only; the CPU tests add "cpu" with a reference launch.
_DEVICE_TYPES = ("cuda",)

# Reference activations the epilogue grammar names (gemmtune/epilogue.h), for recognizing activation modules.
_ACTIVATIONS = {
    "relu": torch.relu,
    "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
    "gelu_erf": F.gelu,
    "silu": F.silu,
    "sigmoid": torch.sigmoid,
}
# A gated MLP's GLU epilogue by its activation (the grammar's <act>_glu; halves is the default layout).
_GLU = {name: name + "_glu" for name in _ACTIVATIONS}
# Gated MLPs whose forward is down(act(gate(x)) * up(x)) by construction: trusted when the probe cannot decide
# (weights that give a non-finite or zero output, e.g. not yet loaded).
_KNOWN_GATED_MLPS = frozenset({"LlamaMLP", "MistralMLP", "MixtralMLP", "Qwen2MLP", "Qwen3MLP", "GemmaMLP",
                               "Gemma2MLP", "Gemma3MLP", "Olmo2MLP", "OlmoMLP", "GraniteMLP", "CohereMLP"})


def _linear(x, weight, bias, epilogue):
    """The launch of every swapped module. Eager calls take the ops module's direct path (no dispatcher) when it
    has one; a traced call (torch.compile, export) goes through the registered op so the graph holds it opaque."""
    if not torch.compiler.is_compiling():
        direct = getattr(_ops, "linear", None)
        if direct is not None:
            return direct(x, weight, bias, epilogue)
    return torch.ops.gemmtune.linear(x, weight, bias, epilogue)


class Linear(nn.Module):
    """``y = epilogue(x @ weight.T [+ bias])`` through ``torch.ops.gemmtune.linear``. ``weight`` is (N, K) as in
    nn.Linear; with a GLU epilogue the output has N/2 columns (``out_features``)."""

    def __init__(self, weight: nn.Parameter, bias: Optional[nn.Parameter] = None, epilogue: str = "none"):
        super().__init__()
        if weight.dim() != 2:
            raise ValueError(f"gemmtune Linear: weight must be 2-D (N, K), got shape {tuple(weight.shape)}")
        if bias is not None and tuple(bias.shape) != (weight.shape[0],):
            raise ValueError(f"gemmtune Linear: bias must have shape ({weight.shape[0]},), got {tuple(bias.shape)}")
        self.weight = weight if isinstance(weight, nn.Parameter) else nn.Parameter(weight, requires_grad=False)
        if bias is None:
            self.register_parameter("bias", None)
        else:
            self.bias = bias if isinstance(bias, nn.Parameter) else nn.Parameter(bias, requires_grad=False)
        self.epilogue = epilogue
        self.in_features = weight.shape[1]
        self.out_features = weight.shape[0] // 2 if "glu" in epilogue else weight.shape[0]

    @classmethod
    def from_linear(cls, linear: nn.Linear, epilogue: str = "none") -> "Linear":
        """The same Parameter objects as `linear` (no copy)."""
        return cls(linear.weight, linear.bias, epilogue)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _linear(x, self.weight, self.bias, self.epilogue)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
                f"epilogue={self.epilogue!r}")


class GatedMLP(nn.Module):
    """``down_proj(act(gate_proj(x)) * up_proj(x))`` as two GEMMs: ``gate_up`` over the concatenated [gate; up]
    weight with a GLU epilogue (halves: gate = the first N/2 columns), then ``down_proj``. state_dict keys are the
    original module's (gate_proj.*, up_proj.*, down_proj.*)."""

    def __init__(self, gate_up: Linear, down_proj: Linear):
        super().__init__()
        self.gate_up = gate_up
        self.down_proj = down_proj
        self.register_state_dict_post_hook(_split_gate_up)
        self.register_load_state_dict_pre_hook(_join_gate_up)

    @classmethod
    def from_parts(cls, gate: nn.Linear, up: nn.Linear, down: Union[nn.Linear, Linear], activation: str) -> "GatedMLP":
        with torch.no_grad():
            w = torch.cat([gate.weight, up.weight], dim=0)
            b = None if gate.bias is None else torch.cat([gate.bias, up.bias], dim=0)
        rg = gate.weight.requires_grad or up.weight.requires_grad
        bias = None if b is None else nn.Parameter(b, requires_grad=gate.bias.requires_grad)
        gate_up = Linear(nn.Parameter(w, requires_grad=rg), bias, _GLU[activation])
        return cls(gate_up, down if isinstance(down, Linear) else Linear.from_linear(down))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(self.gate_up(x))


def _split_gate_up(module, state_dict, prefix, local_metadata):
    for kind in ("weight", "bias"):
        key = prefix + "gate_up." + kind
        if key in state_dict:
            t = state_dict.pop(key)
            half = t.shape[0] // 2
            # Copies, not views: a checkpoint writer (safetensors, transformers' save_pretrained) would take two
            # views of one storage for tied tensors.
            state_dict[prefix + "gate_proj." + kind] = t[:half].detach().clone()
            state_dict[prefix + "up_proj." + kind] = t[half:].detach().clone()


def _join_gate_up(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
    for kind in ("weight", "bias"):
        g, u = prefix + "gate_proj." + kind, prefix + "up_proj." + kind
        if g in state_dict and u in state_dict:
            state_dict[prefix + "gate_up." + kind] = torch.cat([state_dict.pop(g), state_dict.pop(u)], dim=0)


# ---- recognizing what to swap --------------------------------------------------------------------------------------

def _has_hooks(m: nn.Module) -> bool:
    return bool(m._forward_hooks or m._forward_pre_hooks or getattr(m, "_backward_hooks", None)
                or getattr(m, "_backward_pre_hooks", None))


def _swappable(m: nn.Module, dtypes) -> bool:
    """A plain nn.Linear whose weight (and bias) gemmtune can take as they are."""
    if type(m) is not nn.Linear or _has_hooks(m):
        return False
    w, b = m.weight, m.bias
    if type(w) is not nn.Parameter or w.dim() != 2 or w.dtype not in dtypes or w.device.type not in _DEVICE_TYPES:
        return False
    if min(w.shape) == 0:
        return False
    return b is None or (type(b) is nn.Parameter and b.dtype == w.dtype and b.device == w.device)


def activation_of(m: nn.Module) -> Optional[str]:
    """The epilogue name of an activation module ("relu", "gelu_tanh", "gelu_erf", "silu", "sigmoid"), or None.
    Known torch modules are named by type; any other module without parameters, buffers or hooks is probed on a
    float32 grid over [-8, 8] and matched against each activation (within 1e-5: gelu_tanh and gelu_erf differ by
    up to ~5e-4 there), which recognizes transformers' activation classes without importing transformers."""
    if _has_hooks(m):
        return None
    if type(m) is nn.ReLU:
        return "relu"
    if type(m) is nn.GELU:
        return "gelu_tanh" if m.approximate == "tanh" else "gelu_erf"
    if type(m) is nn.SiLU:
        return "silu"
    if type(m) is nn.Sigmoid:
        return "sigmoid"
    if not isinstance(m, nn.Module) or any(True for _ in m.parameters()) or any(True for _ in m.buffers()):
        return None
    if isinstance(m, (nn.Identity, nn.Dropout, nn.Sequential, nn.ModuleList, nn.ModuleDict)):
        return None
    t = torch.linspace(-8.0, 8.0, 321, dtype=torch.float32)
    try:
        with torch.no_grad():
            y = m(t.clone())
    except Exception:  # not an elementwise module on a 1-D tensor: not an activation gemmtune fuses
        return None
    if not isinstance(y, torch.Tensor) or y.shape != t.shape or y.dtype != t.dtype:
        return None
    for name, fn in _ACTIVATIONS.items():
        if torch.allclose(y, fn(t), rtol=0.0, atol=1e-5):
            return name
    return None


def _gated_mlp_activation(m: nn.Module, dtypes, counts) -> Optional[str]:
    """The activation of a gated MLP that can be fused (see the module docstring), else None."""
    gate, up, down = (getattr(m, n, None) for n in ("gate_proj", "up_proj", "down_proj"))
    act_fn = getattr(m, "act_fn", None)
    if not all(isinstance(x, nn.Module) for x in (gate, up, down, act_fn)) or _has_hooks(m):
        return None
    if not all(_swappable(x, dtypes) for x in (gate, up, down)):
        return None
    # The gate and up Linears are replaced by one: each must be used by this MLP alone.
    if counts.get(id(gate), 0) != 1 or counts.get(id(up), 0) != 1 or gate is up:
        return None
    if not (gate.in_features == up.in_features and gate.out_features == up.out_features == down.in_features):
        return None
    if (gate.bias is None) != (up.bias is None) or gate.weight.dtype != up.weight.dtype:
        return None
    if gate.weight.device != up.weight.device:
        return None
    act = activation_of(act_fn)
    if act not in _GLU:
        return None
    verdict = _probe_gated_mlp(m, gate, up, down, act_fn)
    if verdict is None:
        return act if type(m).__name__ in _KNOWN_GATED_MLPS else None
    return act if verdict else None


def _probe_gated_mlp(m, gate, up, down, act_fn) -> Optional[bool]:
    """Runs the MLP once on a random 2-token input and compares with down(act(gate(x)) * up(x)) computed from its
    own parts: True (same), False (its forward computes something else), None (the weights cannot tell: a non-finite
    or all-zero result)."""
    w = gate.weight
    gen = torch.Generator(device=w.device).manual_seed(0)
    x = torch.randn(2, gate.in_features, generator=gen, device=w.device, dtype=torch.float32).to(w.dtype)
    try:
        with torch.no_grad():
            got = m(x)
            want = down(act_fn(gate(x)) * up(x))
    except Exception:
        return False
    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        return False
    want32, got32 = want.float(), got.float()
    if not torch.isfinite(want32).all() or want32.abs().max() == 0:
        return None
    scale = want32.abs().max()
    return bool(torch.isfinite(got32).all() and (got32 - want32).abs().max() <= 1e-3 * scale)


# ---- the swap ------------------------------------------------------------------------------------------------------

@dataclass
class SwapReport:
    """What optimize() changed: counts of swapped Linears, fused Linear->activation pairs, gated MLPs and MoE experts
    modules, and the Linears and experts modules left alone with why."""

    linears: int = 0
    fused_activations: int = 0
    gated_mlps: int = 0
    experts: int = 0
    left_alone: dict = field(default_factory=dict)  # reason -> count

    def line(self) -> str:
        s = (f"gemmtune.optimize: {self.linears} Linear -> gemmtune (of them {self.fused_activations} with a fused "
             f"activation), {self.gated_mlps} gated MLPs fused, {self.experts} MoE experts grouped")
        if self.left_alone:
            s += "; left alone: " + ", ".join(f"{n} {why}" for why, n in sorted(self.left_alone.items()))
        return s


def _why_not(m: nn.Linear, dtypes) -> str:
    if type(m) is not nn.Linear:
        return f"{type(m).__name__} (a Linear subclass)"
    if _has_hooks(m):
        return "Linear with hooks"
    w = m.weight
    if type(w) is not nn.Parameter:
        return f"Linear with a {type(w).__name__} weight"
    if w.device.type not in _DEVICE_TYPES:
        return f"Linear on {w.device.type}"
    if w.dtype not in dtypes:
        return f"{str(w.dtype).replace('torch.', '')} Linear"
    return "Linear gemmtune cannot take"


class _Swapper:
    def __init__(self, dtypes, fuse: bool, include: Optional[Callable[[str, nn.Module], bool]]):
        self.dtypes = tuple(dtypes)
        self.fuse = fuse
        self.include = include
        self.memo = {}  # id(original module) -> its replacement, so a shared module stays shared
        # The originals stay referenced until the swap ends: a replaced module freed mid-swap could hand its id to a
        # module created later (an Identity), which the memo would then mistake for it.
        self.originals = []
        self.counts = {}  # id(module) -> how many (parent, attribute) slots of the model hold it
        self.report = SwapReport()

    def count(self, root: nn.Module):
        # Each parent once: the children of a module that is itself shared are still held by one parent.
        for parent in root.modules():
            for child in parent._modules.values():
                if child is not None:
                    self.counts[id(child)] = self.counts.get(id(child), 0) + 1

    def wanted(self, name: str, m: nn.Module) -> bool:
        return self.include is None or bool(self.include(name, m))

    def convert(self, name: str, m: nn.Module) -> Optional[nn.Module]:
        """The replacement of module `m` itself (MoE experts, a gated MLP or a Linear), or None."""
        if id(m) in self.memo:
            return self.memo[id(m)]
        new = None
        if self.fuse and self.wanted(name, m):
            new, why = _moe.experts_swap(m, self.dtypes, _DEVICE_TYPES, activation_of)
            if why:
                self.note(why)
            self.report.experts += new is not None
        if new is None and self.fuse and self.wanted(name, m):
            act = _gated_mlp_activation(m, self.dtypes, self.counts)
            if act is not None:
                down = self.memo.get(id(m.down_proj)) or Linear.from_linear(m.down_proj)
                self.remember(m.down_proj, down)
                new = GatedMLP.from_parts(m.gate_proj, m.up_proj, down, act)
                self.report.gated_mlps += 1
                self.report.linears += 2
        if new is None and isinstance(m, nn.Linear):
            if not self.wanted(name, m):
                self.note("Linear excluded by include")
            elif _swappable(m, self.dtypes):
                new = Linear.from_linear(m)
                self.report.linears += 1
            else:
                self.note(_why_not(m, self.dtypes))
        if new is not None:
            self.remember(m, new)
        return new

    def remember(self, original: nn.Module, new: nn.Module):
        self.memo[id(original)] = new
        self.originals.append(original)

    def note(self, why: str):
        self.report.left_alone[why] = self.report.left_alone.get(why, 0) + 1

    def fuse_sequential(self, prefix: str, seq: nn.Sequential):
        keys = list(seq._modules.keys())
        for a, b in zip(keys, keys[1:]):
            lin, act_mod = seq._modules[a], seq._modules[b]
            if lin is None or act_mod is None or id(lin) in self.memo:
                continue
            if not (_swappable(lin, self.dtypes) and self.counts.get(id(lin), 0) == 1):
                continue
            if not self.wanted(prefix + a, lin):
                continue
            act = activation_of(act_mod)
            if act is None:
                continue
            new = Linear.from_linear(lin, act)
            self.remember(lin, new)
            setattr(seq, a, new)
            setattr(seq, b, nn.Identity())
            self.report.linears += 1
            self.report.fused_activations += 1

    def walk(self, prefix: str, parent: nn.Module, seen: set):
        if id(parent) in seen:
            return
        seen.add(id(parent))
        if self.fuse and isinstance(parent, nn.Sequential):
            self.fuse_sequential(prefix, parent)
        for name, child in list(parent._modules.items()):
            if child is None or isinstance(child, (Linear, GatedMLP, _moe.GroupedExperts)):
                continue
            new = self.convert(prefix + name, child)
            if new is not None:
                setattr(parent, name, new)
            else:
                self.walk(prefix + name + ".", child, seen)


def swap(model: nn.Module, *, dtypes: Sequence[torch.dtype] = (torch.bfloat16, torch.float16), fuse: bool = True,
         include: Optional[Callable[[str, nn.Module], bool]] = None) -> tuple:
    """Replaces the model's modules in place as the module docstring says; returns (model, SwapReport). The model
    returned differs from the one given only when the model itself is a Linear or a gated MLP."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"gemmtune.torch.optimize: expected an nn.Module, got {type(model).__name__}")
    s = _Swapper(dtypes, fuse, include)
    s.count(model)
    root = None if isinstance(model, (Linear, GatedMLP, _moe.GroupedExperts)) else s.convert("", model)
    if root is not None:
        return root, s.report
    s.walk("", model, set())
    return model, s.report


# ---- ahead-of-time tuning ------------------------------------------------------------------------------------------

@dataclass
class GemmSpec:
    """One distinct GEMM of a swapped model: M x N x K (N = the weight's rows, before a GLU halves it), dtype,
    epilogue, whether a bias is added, the device, and the swapped modules that run it (names)."""

    m: int
    n: int
    k: int
    dtype: torch.dtype
    epilogue: str
    bias: bool
    device: torch.device
    modules: list = field(default_factory=list)
    leads: list = field(default_factory=list)  # the inputs' leading dims with this M, e.g. [(2, 16), (1, 32)]

    def key(self) -> tuple:
        return (self.m, self.n, self.k, self.dtype, self.epilogue, self.bias, self.device)

    def label(self) -> str:
        dt = {torch.bfloat16: "bf16", torch.float16: "f16"}.get(self.dtype, str(self.dtype).replace("torch.", ""))
        ops = [op for op in self.epilogue.split(",") if op and op != "none"]
        if self.bias and not any(op.split(":")[0] in ("bias", "bias_col") for op in ops):
            ops.insert(0, "bias")
        return f"linear {self.m}x{self.n}x{self.k} {dt}" + (f" {','.join(ops)}" if ops else "")


def leading_shapes(shapes: Iterable[Union[int, Sequence[int]]]) -> list:
    """The activations' leading dims from `shapes`, distinct, in order: an int M is a 2-D input (M, K) -> (M,); a
    shape (batch, seq, ...) is an input (batch, seq, ..., K) as a transformer's hidden states reach its Linears."""
    if isinstance(shapes, (int, tuple, torch.Size)):
        raise TypeError("gemmtune.torch.optimize: shapes is a list of token counts or shapes, e.g. [(1, 2048), "
                        f"(8, 512)] or [2048, 4096] (got {shapes!r})")
    leads = []
    for s in shapes:
        if isinstance(s, int) and not isinstance(s, bool):
            lead = (s,)
        elif isinstance(s, (tuple, list, torch.Size)) and len(s) > 0 and all(
                isinstance(d, int) and not isinstance(d, bool) for d in s):
            lead = tuple(s)
        else:
            raise TypeError(f"gemmtune.torch.optimize: shape entry {s!r} is not a token count (int) or a shape "
                            "(tuple of ints)")
        if math.prod(lead) <= 0:
            raise ValueError(f"gemmtune.torch.optimize: shape entry {s!r} gives M = {math.prod(lead)}; it must be "
                             "positive")
        if lead not in leads:
            leads.append(lead)
    if not leads:
        raise ValueError("gemmtune.torch.optimize: shapes is empty")
    return leads


def token_counts(shapes: Iterable[Union[int, Sequence[int]]]) -> list:
    """M values from `shapes`: an int is M; a shape (batch, seq, ...) is the product of its dims. Distinct, in order."""
    ms = []
    for lead in leading_shapes(shapes):
        if math.prod(lead) not in ms:
            ms.append(math.prod(lead))
    return ms


def distinct_gemms(model: nn.Module, shapes) -> list:
    """Every distinct GEMM the swapped modules of `model` run for the inputs in `shapes`, deduplicated over
    (M, N, K, dtype, epilogue, bias, device), in model order by M; `leads` lists the input shapes giving that M.
    Each Linear is assumed to see all the tokens (true of a decoder's projections; an LM head that computes only the
    last position's logits runs at M = batch on a strided view and is tuned lazily on first use)."""
    leads = leading_shapes(shapes)
    ms = token_counts(shapes)
    found = {}
    for name, mod in model.named_modules():
        if not isinstance(mod, Linear):
            continue
        w = mod.weight
        for m in ms:
            spec = GemmSpec(m, w.shape[0], w.shape[1], w.dtype, mod.epilogue, mod.bias is not None, w.device,
                            leads=[ld for ld in leads if math.prod(ld) == m])
            found.setdefault(spec.key(), spec).modules.append(name or "<model>")
    return sorted(found.values(), key=lambda s: ms.index(s.m))


def _distinct_experts(model: nn.Module, shapes) -> list:
    """(tokens, module names, module) for each distinct swapped MoE experts module and token count of `shapes`; a
    module whose experts per token the model's config does not give is left to be tuned on first use."""
    found = {}
    for name, mod in model.named_modules():
        if isinstance(mod, _moe.GroupedExperts) and mod.top_k:
            for tokens in token_counts(shapes):
                found.setdefault((tokens,) + mod.tuning_key(), (tokens, [], mod))[1].append(name or "<model>")
    return list(found.values())


def _representative(model: nn.Module, spec: GemmSpec) -> Linear:
    return model.get_submodule(spec.modules[0]) if spec.modules[0] != "<model>" else model


def _kernel_ms(fn, iters: int = 20) -> float:
    """Mean ms of `fn` over `iters` back-to-back launches (CUDA events), after one warm-up call."""
    fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / iters


def tune_ahead(model: nn.Module, shapes, *, progress: Union[bool, Callable[[str], None]] = True) -> list:
    """Tunes every distinct GEMM of an optimized model for the inputs in `shapes` (see leading_shapes) now, by
    running each once through the op on random input of each listed shape (so what the op selects is exactly what
    later calls of those shapes find in its selection dict). Tuning is allowed for the duration even under
    set_options(tune="never"). Returns one dict per GEMM: label, modules, leads, candidate, ms (the selected kernel's
    time through the op, CUDA only), tune_s, error. Raises gemmtune.Error after trying them all if any failed."""
    from .._errors import Error

    if progress is True:
        emit = lambda s, end="\n": print(s, end=end, file=sys.stderr, flush=True)  # noqa: E731
    elif callable(progress):
        parts = []

        def emit(s, end="\n"):
            parts.append(s)
            if end:
                progress("".join(parts))
                parts.clear()
    else:
        emit = lambda s, end="\n": None  # noqa: E731
    # One job per distinct GEMM (a Linear's, over its leading shapes) or experts module (both of its grouped GEMMs):
    # its record and run(), which makes the tuning calls and returns the call to time (None: not timed).
    jobs = []
    for spec in distinct_gemms(model, shapes):
        rec = {"label": spec.label(), "m": spec.m, "n": spec.n, "k": spec.k, "epilogue": spec.epilogue,
               "bias": spec.bias, "modules": list(spec.modules), "leads": list(spec.leads)}

        def run(spec=spec, mod=_representative(model, spec)):
            # The op's selection dict is keyed by the input's own shape: the problem is tuned on the first input
            # shape, and each other shape of the same M is one more call (the tuner's result cache answers it
            # without tuning again).
            for lead in spec.leads:
                x = torch.randn(*lead, spec.k, device=spec.device, dtype=spec.dtype)
                mod(x)
            return lambda: mod(x)
        jobs.append((rec, spec.device, run))
    for tokens, names, mod in _distinct_experts(model, shapes):
        n_experts, n, k = mod.gate_up_proj.shape if not mod.transposed else (
            mod.gate_up_proj.shape[0], mod.gate_up_proj.shape[2], mod.gate_up_proj.shape[1])
        rec = {"label": f"experts {tokens}x{mod.top_k} over {n_experts} ({n}x{k} {mod.activation}_glu, then down)",
               "m": tokens * mod.top_k, "n": n, "k": k, "epilogue": mod.activation + "_glu", "bias": False,
               "modules": list(names), "leads": [tokens]}

        def run(mod=mod, tokens=tokens):
            mod.tuning_call(tokens)  # not timed: the routing of a real call differs
        jobs.append((rec, mod.gate_up_proj.device, run))
    results = []
    prev = _dispatch.options().get("tune", "auto")
    if prev == "never":
        _dispatch.set_options(tune="auto")
    try:
        for i, (rec, device, run) in enumerate(jobs, start=1):
            names = rec["modules"]
            more = f" +{len(names) - 1}" if len(names) > 1 else ""
            emit(f"[{i}/{len(jobs)}] {rec['label']} ({names[0]}{more}) ... ", end="")
            rec.update(candidate="", ms=None, tune_s=0.0, error="")
            before = dict(_dispatch.selections())
            t0 = time.perf_counter()
            try:
                with torch.no_grad():
                    timed = run()
                    if device.type == "cuda":
                        torch.cuda.synchronize(device)
                    rec["tune_s"] = time.perf_counter() - t0
                    new = [v for key, v in _dispatch.selections().items() if before.get(key) != v]
                    rec["candidate"] = ", ".join(new) or "(already selected)"
                    if timed is not None and device.type == "cuda":
                        with torch.cuda.device(device):
                            rec["ms"] = _kernel_ms(timed)
            except Exception as e:  # reported, the other GEMMs still tuned
                rec["tune_s"] = time.perf_counter() - t0
                rec["error"] = f"{type(e).__name__}: {e}"
            results.append(rec)
            if rec["error"]:
                emit(f"failed: {rec['error']}")
            else:
                ms = "" if rec["ms"] is None else f" {rec['ms']:.3f} ms"
                emit(f"{rec['candidate']}{ms} (tuned in {rec['tune_s']:.1f} s)")
    finally:
        if prev == "never":
            _dispatch.set_options(tune="never")
    failed = [r for r in results if r["error"]]
    if failed:
        raise Error("gemmtune.torch.optimize: tuning failed for " + "; ".join(
            f"{r['label']} ({r['modules'][0]}): {r['error']}" for r in failed))
    return results


def optimize(model: nn.Module, shapes=None, *, tune: Optional[str] = None,
             progress: Union[bool, Callable[[str], None]] = True, inplace: bool = True, fuse: bool = True,
             dtypes: Sequence[torch.dtype] = (torch.bfloat16, torch.float16),
             include: Optional[Callable[[str, nn.Module], bool]] = None) -> nn.Module:
    """Swaps the model's nn.Linear layers and the patterns above for gemmtune-backed modules; returns the model.

    shapes: token counts M or the inputs' leading dims (see leading_shapes) to tune every distinct GEMM for before
    returning: (batch, seq) for a transformer whose Linears see (batch, seq, hidden) activations.
    tune: "lazy" (each shape tuned by the op on its first call) or "ahead" (needs shapes); default "ahead" when
    shapes are given, else "lazy". progress: True prints a summary and one line per tuned GEMM on stderr; a
    callable gets the lines instead; False is silent. inplace: False swaps a deep copy and leaves `model` as it is.
    fuse: False swaps Linears only (no activation or gated-MLP fusion). dtypes: the weight dtypes to take.
    include(name, module): a predicate choosing which Linears / MLPs to swap (e.g. lambda n, m: n != "lm_head")."""
    mode = tune if tune is not None else ("ahead" if shapes is not None else "lazy")
    if mode not in ("lazy", "ahead"):
        raise ValueError(f"gemmtune.torch.optimize: tune must be 'lazy' or 'ahead', got {tune!r}")
    if mode == "ahead" and shapes is None:
        raise ValueError("gemmtune.torch.optimize: tune='ahead' needs shapes (token counts or input shapes to tune "
                         "for), e.g. shapes=[(1, 2048), (8, 512)]")
    if mode == "lazy" and shapes is not None:
        raise ValueError("gemmtune.torch.optimize: shapes are tuned ahead of time; drop tune='lazy' or the shapes")
    if shapes is not None:
        leading_shapes(shapes)  # a bad shape list fails before anything is swapped
    bad = [d for d in dtypes if d not in (torch.bfloat16, torch.float16)]
    if bad:
        raise ValueError(f"gemmtune.torch.optimize: dtypes may hold torch.bfloat16 and torch.float16 (got {bad})")
    if not inplace:
        model = copy.deepcopy(model)
    model, report = swap(model, dtypes=dtypes, fuse=fuse, include=include)
    if progress is True:
        print(report.line(), file=sys.stderr, flush=True)
    elif callable(progress):
        progress(report.line())
    if mode == "ahead":
        tune_ahead(model, shapes, progress=progress)
    return model


__all__ = ["optimize", "swap", "tune_ahead", "distinct_gemms", "token_counts", "leading_shapes", "activation_of", "Linear", "GatedMLP",
           "GemmSpec", "SwapReport"]
