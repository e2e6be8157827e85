#!/usr/bin/env python3
"""One MoE experts module, gemmtune's swap against transformers' default path (GPU host, torch + transformers).

For each shape (tokens T, experts E, top-k, hidden H, expert intermediate I): transformers' MixtralExperts with
random N(0, 1/fan_in) bf16 weights and a random routing, run through transformers' `grouped_mm_experts_forward`
(torch._grouped_mm, its default) and through `gemmtune.torch.moe.GroupedExperts` (the module optimize() puts in its
place). Each is timed two ways: host-inclusive (50 eager calls between two synchronizations) and as a CUDA-graph
replay (the GPU's time); then each of the two grouped GEMMs alone, torch._grouped_mm against gemmtune's grouped_mm,
with the weights' bytes streamed per second. The first gemmtune call tunes (its time is printed).

    python3 bench/moe_experts.py
"""
import os
import sys
import time

import torch
import transformers
from transformers.integrations.moe import grouped_mm_experts_forward
from transformers.models.mixtral.modeling_mixtral import MixtralExperts

import gemmtune.torch as gt
from gemmtune.torch import modules as gm
from gemmtune.torch import moe

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llama_e2e import graphed  # noqa: E402  (the capture a CUDA-graph mode times)

DEV = torch.device("cuda")
# (label, tokens, experts, top-k, hidden, expert intermediate)
SHAPES = [("qwen3 decode32", 32, 128, 8, 2048, 768), ("qwen3 prefill", 2048, 128, 8, 2048, 768),
          ("mixtral decode32", 32, 8, 2, 4096, 14336)]


def bench(f, iters=50):
    """(host-inclusive µs per call, CUDA-graph replay µs per call)."""
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        f()
    torch.cuda.synchronize()
    eager = (time.perf_counter() - t0) / iters * 1e6
    replay = graphed(lambda _: f(), None, DEV)
    replay(None)
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(iters):
        replay(None)
    e1.record()
    torch.cuda.synchronize()
    return eager, e0.elapsed_time(e1) / iters * 1e3


def main():
    gt.set_options(progress=False)
    print(torch.cuda.get_device_name(DEV))
    for name, T, E, k, H, I in SHAPES:
        cfg = transformers.MixtralConfig(hidden_size=H, intermediate_size=I, num_local_experts=E,
                                         num_experts_per_tok=k)
        cfg._experts_implementation = "grouped_mm"
        ex = MixtralExperts(cfg).to(DEV, torch.bfloat16)
        with torch.no_grad():
            for p in ex.parameters():
                p.normal_(0, p.shape[-1] ** -0.5)
        x = torch.randn(T, H, device=DEV, dtype=torch.bfloat16)
        idx = torch.rand(T, E, device=DEV).argsort(-1)[:, :k]
        w = torch.softmax(torch.randn(T, k, device=DEV), -1).bfloat16()
        new, why = moe.experts_swap(ex, (torch.bfloat16,), ("cuda",), gm.activation_of)
        if new is None:
            raise SystemExit(f"{name}: not swapped: {why}")
        with torch.no_grad():
            t0 = time.perf_counter()
            new(x, idx, w)
            torch.cuda.synchronize()
            tune = time.perf_counter() - t0
            a = bench(lambda: grouped_mm_experts_forward(ex, x, idx, w))
            b = bench(lambda: new(x, idx, w))
        print(f"{name}: torch grouped_mm host-incl {a[0]:8.1f} us graph {a[1]:8.1f} us | gemmtune host-incl "
              f"{b[0]:8.1f} us graph {b[1]:8.1f} us (tune {tune:.1f} s)", flush=True)
        # The two GEMMs alone, on the same routing.
        S = T * k
        ids, perm = torch.sort(idx.reshape(-1))
        offs = torch.cumsum(torch.histc(ids.int(), bins=E, min=0, max=E - 1), 0, dtype=torch.int32)
        xs = x[perm // k]
        for label, W, epi in [("gate_up", ex.gate_up_proj, "silu_glu"), ("down", ex.down_proj, "none")]:
            xin = xs if label == "gate_up" else torch.randn(S, I, device=DEV, dtype=torch.bfloat16)
            with torch.no_grad():
                g1 = bench(lambda: torch._grouped_mm(xin, W.transpose(-2, -1), offs=offs))
                g2 = bench(lambda: gt.grouped_mm(xin, W.transpose(-2, -1), offs, epilogue=epi))
            gb = W.numel() * 2 / 1e9
            print(f"   {label}: torch graph {g1[1]:7.1f} us ({gb / g1[1] * 1e3:.2f} TB/s) host-incl {g1[0]:7.1f} | "
                  f"gemmtune graph {g2[1]:7.1f} us ({gb / g2[1] * 1e3:.2f} TB/s) host-incl {g2[0]:7.1f}", flush=True)
    for key, v in gt.selections().items():
        print(key[:150], "->", v[:200])


if __name__ == "__main__":
    main()
