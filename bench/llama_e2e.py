#!/usr/bin/env python3
r"""End to end on a Llama-3-8B-, Qwen2.5-7B-, Mistral-7B-, Mixtral-8x7B- or Qwen3-30B-A3B-shaped decoder (GPU host):
eager, torch.compile, torch.compile + gemmtune, and eager with gemmtune's module swap; latency, compile/tune time and
the outputs' error against eager.

The model (--model): transformers' LlamaForCausalLM with Llama 3 8B's shapes (hidden 4096, intermediate 14336, 32
heads, 8 KV heads, vocabulary 128256); Qwen2ForCausalLM with Qwen2.5 7B's (hidden 3584, intermediate 18944, 28 heads,
4 KV heads, vocabulary 152064; its q/k/v projections have a bias, so compiled they are addmm); MistralForCausalLM with
Mistral 7B's (Llama 8B's with a vocabulary of 32768); MixtralForCausalLM with Mixtral 8x7B's (8 experts of
intermediate 14336, top 2, vocabulary 32000); Qwen3MoeForCausalLM with Qwen3-30B-A3B's (hidden 2048, 128 experts of
intermediate 768, top 8, 32 heads of 128, 4 KV heads, vocabulary 151936). --layers decoder layers (2 by default),
random weights (nothing is downloaded; the MoE models' weights drawn N(0, 1/fan_in)), bf16, on the GPU. transformers
is needed by this script only, never by the gemmtune package.

A call is one forward: h = model.model(ids, use_cache=False).last_hidden_state, then the LM head on the last position
(what a prefill needs to pick the next token: logits_to_keep = 1). Workloads:
  prefill-1x2048, prefill-8x512   (batch x tokens): the projections run at M = 2048 and 4096
  decode-1, decode-32             one new token per sequence at batch 1 and 32, with no KV cache: each sequence is that
                                  one token (seq len 1), so attention is trivial and the step is the GEMMs at M = 1 and
                                  32 (plus norms, RoPE, the LM head)
  decode-1-kv, decode-32-kv, decode-128-kv   a real decode step: one token per sequence at position 1024 of a
                                  transformers StaticCache whose first 1024 positions a prefill filled (attention over
                                  1025 positions; each call rewrites position 1024, so every call is the same step)
Modes:
  eager               the model as transformers builds it (MoE experts: transformers' default, "grouped_mm":
                      torch's grouped GEMM)
  eager-loop          MoE models: transformers' experts_implementation="eager", a loop over the experts
  eager-graph, optimize-graph   eager / optimize captured in one CUDA graph per workload and timed by replay (the
                      GPU time of the step, without the host's launch cost; serving engines replay graphs at decode)
  compile             torch.compile(mode="max-autotune-no-cudagraphs") of the call (Inductor times ATen and its
                      Triton templates per matmul and keeps the fastest)
  compile+gemmtune    the same after gemmtune.torch.enable(fuse=True) (gemmtune one more timed choice, and its
                      fusion pass)
  compile+gemmtune-choices   the same after gemmtune.torch.enable(), the default: the timed choice, no fusion pass
  optimize            eager after gemmtune.torch.optimize(model): nn.Linear -> gemmtune's linear op, the MLP's
                      gate/up as one GEMM with the silu_glu epilogue, MoE experts as two grouped GEMMs; tuned
                      lazily on each shape's first call
Each compiled (mode, workload) starts from torch._dynamo.reset() and compiles with dynamic=False. `first call s` is
the first call's wall time: compilation and autotuning for the compile modes, gemmtune's tuning of the shapes for
optimize (plus the swap itself, shown as "+x swap"), cuBLAS's start for eager. With --cold each mode gets a fresh
Inductor/Triton cache directory and a fresh GEMMTUNE_CACHE_DIR (and gemmtune's in-process selections are cleared),
so those times are cold; without it, whatever the caches hold counts. `GEMM calls` counts the GEMM kernel calls in
Inductor's generated code by kind (gemmtune: its extern choice or the op its fusion pass put in; aten: cuBLAS;
triton: Inductor's templates); the JSON also has gemmtune.torch.inductor.stats() of the compile+gemmtune mode.
Latency: CUDA events around each call after --warmup calls, median of --iters (decode: 5x that); with --repeats R,
the median of R such medians, a compiled mode compiled again (from the caches) before each. Errors against
eager's outputs of the same inputs: max abs and max abs / max |eager| of the logits and of the last hidden state
(bf16 throughout: differences of ~1e-2 relative are rounding, not bugs). A mode that fails prints its error in the
table and the script goes on.

Examples (GPU host):
  python3 bench/llama_e2e.py --cold --json out/llama_e2e.json --md out/llama_e2e.md
  python3 bench/llama_e2e.py --modes eager,optimize --workloads decode-1,decode-32
  python3 bench/llama_e2e.py --layers 4 --iters 20
  python3 bench/llama_e2e.py --device cpu --hidden 256 --intermediate 512 --heads 4 --kv-heads 2 --vocab 1000 \
      --modes eager,compile --compile-mode default   # a dry run of the script without a GPU
"""
import argparse
import contextlib
import json
import math
import os
import re
import statistics
import sys
import tempfile
import time
import traceback

MODES = ("eager", "eager-graph", "eager-loop", "compile", "compile+gemmtune", "compile+gemmtune-choices", "optimize",
         "optimize-graph")
WORKLOADS = {"prefill-1x2048": (1, 2048), "prefill-8x512": (8, 512), "decode-1": (1, 1), "decode-32": (32, 1),
             "decode-1-kv": (1, 1), "decode-32-kv": (32, 1), "decode-128-kv": (128, 1)}
KV_CONTEXT = 1024  # positions in the KV cache before the step of a "-kv" workload
KV_NOTE = ("decode-B: one new token per sequence with no KV cache (seq len 1, attention over that token only): the "
           "step's GEMMs, norms and LM head, without a cached step's attention; decode-B-kv: a real decode step, "
           f"one token per sequence at position {KV_CONTEXT} of a transformers StaticCache holding {KV_CONTEXT} "
           "prefilled positions (each call rewrites that position)")


# Model presets (transformers config class, causal-LM class, shapes of the named model); --hidden etc. override.
MODELS = {
    "llama": ("Llama-3-8B", "LlamaConfig", "LlamaForCausalLM",
              dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
                   vocab_size=128256)),
    "qwen2": ("Qwen2.5-7B", "Qwen2Config", "Qwen2ForCausalLM",  # q/k/v projections with a bias: addmm
              dict(hidden_size=3584, intermediate_size=18944, num_attention_heads=28, num_key_value_heads=4,
                   vocab_size=152064)),
    "mistral": ("Mistral-7B", "MistralConfig", "MistralForCausalLM",
                dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
                     vocab_size=32768, sliding_window=None)),
    "mixtral": ("Mixtral-8x7B", "MixtralConfig", "MixtralForCausalLM",
                dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
                     vocab_size=32000, num_local_experts=8, num_experts_per_tok=2)),
    "qwen3_moe": ("Qwen3-30B-A3B", "Qwen3MoeConfig", "Qwen3MoeForCausalLM",
                  dict(hidden_size=2048, intermediate_size=6144, moe_intermediate_size=768, num_attention_heads=32,
                       num_key_value_heads=4, head_dim=128, vocab_size=151936, num_experts=128,
                       num_experts_per_tok=8, norm_topk_prob=True)),
}


def build_model(args, device):
    import torch
    import transformers

    _, cfg_cls, model_cls, shapes = MODELS[args.model]
    shapes = dict(shapes)
    for arg, key in (("hidden", "hidden_size"), ("heads", "num_attention_heads"), ("kv_heads", "num_key_value_heads"),
                     ("vocab", "vocab_size"), ("intermediate", "moe_intermediate_size" if args.model == "qwen3_moe"
                                                               else "intermediate_size")):
        if getattr(args, arg) is not None:
            shapes[key] = getattr(args, arg)
    cfg = getattr(transformers, cfg_cls)(num_hidden_layers=args.layers, tie_word_embeddings=False,
                                         max_position_embeddings=max(8192, max(s for _, s in WORKLOADS.values())),
                                         **shapes)
    torch.manual_seed(args.seed)
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)  # built in bf16 on the device: no fp32 copy of the weights
    try:
        with torch.device(device):
            model = getattr(transformers, model_cls)(cfg)
    finally:
        torch.set_default_dtype(old)
    # Already bf16 on the device; no .to(dtype), which would also cast the fp32 RoPE frequencies to bf16.
    model = model.to(device).eval()
    model.requires_grad_(False)
    if args.model in ("mixtral", "qwen3_moe"):
        # Random init leaves 3-D expert weights as torch.empty gave them: give every weight a sane scale.
        with torch.no_grad():
            for name, p in model.named_parameters():
                if p.dim() >= 2:
                    p.normal_(0.0, p.shape[-1] ** -0.5)
    return model, cfg


def forward_fn(model, cache=None):
    """The timed call: the decoder, then the LM head on the last position. Returns (logits, last hidden state).
    With cache = (StaticCache, cache_position): one decode step at that position of the cache."""
    if cache is not None:
        kv, pos = cache
        # A StaticCache layer writes at its own count of cached positions: set back to the prefill's before each
        # step, every call is the same step (the new token at position KV_CONTEXT).
        counts = [c for c in (getattr(layer, "cumulative_length", None) for layer in kv.layers) if c is not None]

        def step(ids):
            for c in counts:
                c.fill_(KV_CONTEXT)
            h = model.model(input_ids=ids, past_key_values=kv, cache_position=pos, use_cache=True).last_hidden_state
            return model.lm_head(h[:, -1:, :]), h
        return step

    def f(ids):
        h = model.model(input_ids=ids, use_cache=False).last_hidden_state
        return model.lm_head(h[:, -1:, :]), h
    return f


def kv_cache(model, cfg, batch, device, gen):
    """A StaticCache of KV_CONTEXT + 1 positions whose first KV_CONTEXT hold a prefill of random tokens (eager, so the
    cache's tensors exist before any capture or compile), and the step's cache_position."""
    import torch
    import transformers
    kv = transformers.StaticCache(config=cfg, max_cache_len=KV_CONTEXT + 1)
    prompt = torch.randint(0, cfg.vocab_size, (batch, KV_CONTEXT), generator=gen).to(device)
    with torch.no_grad():
        model.model(input_ids=prompt, past_key_values=kv, cache_position=torch.arange(KV_CONTEXT, device=device),
                    use_cache=True)
    return kv, torch.tensor([KV_CONTEXT], device=device)


def graphed(fn, ids, device):
    """fn captured in a CUDA graph on `ids` (warmed up on a side stream first): a call replays it and returns the
    graph's own outputs. What a serving engine does at decode: the host cost of the step leaves the timing."""
    import torch
    if device.type != "cuda":
        raise RuntimeError("CUDA graphs need --device cuda")
    s = torch.cuda.Stream(device)
    s.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(s):
        for _ in range(2):
            fn(ids)
    torch.cuda.current_stream(device).wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn(ids)

    def replay(x):
        assert x is ids, "a graphed call replays its captured input"
        g.replay()
        return out
    return replay


def sync(device):
    import torch
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def latency_ms(fn, ids, iters, device):
    """Median ms of `iters` calls, each between two CUDA events (host time spent launching counts: it is latency)."""
    import torch
    if device.type != "cuda":
        ts = []
        for _ in range(iters):
            t0 = time.perf_counter()
            fn(ids)
            ts.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(ts)
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for s, e in ev:
        s.record()
        fn(ids)
        e.record()
    torch.cuda.synchronize(device)
    return statistics.median(s.elapsed_time(e) for s, e in ev)


def errors(got, want):
    """max abs and max abs / max |want| of logits and hidden state."""
    out = {}
    for name, g, w in (("logits", got[0], want[0]), ("hidden", got[1], want[1])):
        d = (g.float() - w.float()).abs().max().item()
        out[f"{name}_max_abs"] = d
        out[f"{name}_rel"] = d / max(w.float().abs().max().item(), 1e-30)
    return out


@contextlib.contextmanager
def fresh_caches(cold):
    """--cold: a fresh Inductor (and Triton) cache directory and a fresh GEMMTUNE_CACHE_DIR for the block."""
    if not cold:
        yield
        return
    from torch._inductor.utils import fresh_cache
    old = os.environ.get("GEMMTUNE_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="gemmtune_cache_") as d, fresh_cache():
        os.environ["GEMMTUNE_CACHE_DIR"] = d
        try:
            yield
        finally:
            if old is None:
                os.environ.pop("GEMMTUNE_CACHE_DIR", None)
            else:
                os.environ["GEMMTUNE_CACHE_DIR"] = old


def one_line(e, limit=300):
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:limit]}" + ("..." if len(text) > limit else "")


def run_mode(mode, model, workloads, inputs, refs, args, device, caches):
    """Rows of one mode over the workloads. The optimize mode swaps `model` in place (it runs last)."""
    import torch
    rows = []
    gt = None
    swap_s = None
    loop_prev = ()  # (the experts implementation to restore) while eager-loop runs
    try:
        if mode not in ("eager", "eager-graph", "eager-loop", "compile"):
            import gemmtune.torch as gt
            gt.clear_selections()
        if mode == "eager-loop":
            loop_prev = (model.config._experts_implementation,)
            model.config._experts_implementation = "eager"
        if mode.startswith("optimize") and not getattr(model, "_gemmtune_swapped", False):
            sync(device)
            t0 = time.perf_counter()
            gt.optimize(model, progress=args.verbose)
            swap_s = time.perf_counter() - t0
            model._gemmtune_swapped = True
    except Exception as e:  # the mode cannot start: each workload's row says why
        if args.verbose:
            traceback.print_exc()
        err = one_line(e)
        for wl in workloads:
            print(f"  {mode:17} {wl:15} error: {err}", file=sys.stderr, flush=True)
        return [{"mode": mode, "workload": wl, "error": err} for wl in workloads]
    for wl in workloads:
        row = {"mode": mode, "workload": wl}
        if swap_s is not None:
            row["swap_s"] = swap_s
        ids = inputs[wl]
        enabled = False
        try:
            torch._dynamo.reset()
            fn = forward_fn(model, caches.get(wl))
            if mode.startswith("compile"):
                if mode.startswith("compile+gemmtune"):
                    gt.enable(fuse=mode == "compile+gemmtune")
                    enabled = True
                fn = torch.compile(fn, mode=args.compile_mode, dynamic=False)
            with torch.no_grad():
                if mode.startswith("compile+gemmtune") and hasattr(gt.inductor, "reset_stats"):
                    gt.inductor.reset_stats()
                sync(device)
                t0 = time.perf_counter()
                if mode.startswith("compile"):
                    from torch._inductor.utils import run_and_get_code
                    out, codes = run_and_get_code(fn, ids)
                    row["gemm_kernels"] = kernel_mix(codes)
                elif mode.endswith("-graph"):
                    fn = graphed(fn, ids, device)
                    out = fn(ids)
                else:
                    out = fn(ids)
                sync(device)
                row["first_s"] = time.perf_counter() - t0
                if mode.startswith("compile+gemmtune") and hasattr(gt.inductor, "stats"):
                    row["gemmtune_stats"] = gt.inductor.stats()
                if wl in refs:
                    row.update(errors(out, refs[wl]))
                del out
                for _ in range(args.warmup):
                    fn(ids)
                iters = args.iters * (5 if wl.startswith("decode") else 1)
                runs = [latency_ms(fn, ids, iters, device)]
                # --repeats: a compiled mode is compiled again (from the caches the first compile filled) and timed
                # again, since one compile's host-bound latency can differ from the next one's by far more than
                # the modes differ; the row's latency is the median over the repeats.
                for _ in range(args.repeats - 1):
                    if mode.startswith("compile"):
                        torch._dynamo.reset()
                        fn = torch.compile(forward_fn(model, caches.get(wl)), mode=args.compile_mode, dynamic=False)
                        fn(ids)
                    for _ in range(args.warmup):
                        fn(ids)
                    runs.append(latency_ms(fn, ids, iters, device))
                row["latency_ms"] = statistics.median(runs)
                row["latency_runs_ms"] = runs
                row["iters"] = iters
        except Exception as e:  # a failing mode is a row with its error; the others still run
            row["error"] = one_line(e)
            if args.verbose:
                traceback.print_exc()
        finally:
            if enabled:
                try:
                    gt.disable()
                except Exception as e:
                    row.setdefault("error", "gemmtune.torch.disable: " + one_line(e))
            torch._dynamo.reset()
        rows.append(row)
        print(f"  {mode:17} {wl:15} " + (f"error: {row['error']}" if "error" in row else
              f"{row['latency_ms']:9.3f} ms  first call {row['first_s']:7.1f} s"), file=sys.stderr, flush=True)
    if loop_prev:
        model.config._experts_implementation = loop_prev[0]
    return rows


_TEMPLATE_CALL = re.compile(r"\b(triton_tem_\w+)\.run\(")
_ATEN_CALL = re.compile(r"\bextern_kernels\.(mm|addmm|bmm|baddbmm|_scaled_mm)\(")
_GEMMTUNE_CALL = re.compile(r"\b[\w.]*gemmtune[\w.]*\(")


def kernel_mix(codes):
    """Calls of each kind of GEMM kernel in Inductor's generated code: gemmtune (its extern choice or the op the
    fusion pass put in), aten (cuBLAS) and Triton templates."""
    calls = {"gemmtune": 0, "aten": 0, "triton": 0}
    for code in codes:
        for line in code.splitlines():
            line = line.strip()
            if line.startswith("#") or line.startswith("def ") or "import" in line:
                continue
            calls["gemmtune"] += len(_GEMMTUNE_CALL.findall(line))
            calls["aten"] += len(_ATEN_CALL.findall(line))
            calls["triton"] += len(_TEMPLATE_CALL.findall(line))
    return calls


def fmt(v, spec):
    return "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, spec)


def mix_text(mix):
    return "-" if not mix else ", ".join(f"{k} {v}" for k, v in mix.items() if v) or "none"


def table(rows, meta):
    by = {(r["mode"], r["workload"]): r for r in rows}
    lines = [f"# {meta.get('model', 'Llama-3-8B')}-shaped decoder, {meta['layers']} layers, bf16, {meta['device']} "
             f"(torch {meta['torch']}, transformers {meta['transformers']}, gemmtune {meta['gemmtune']})", "",
             f"- {KV_NOTE}", f"- compile mode: {meta['compile_mode']}; caches: "
             f"{'cold (fresh per mode)' if meta['cold'] else 'as found'}", "",
             "| workload | mode | latency ms | x eager | x compile | first call s | logits max abs | logits rel | "
             "hidden rel | GEMM calls | error |", "|" + "---|" * 11]
    for r in rows:
        lat = r.get("latency_ms")
        # A graphed mode is compared with graphed eager (both without the host's launch cost).
        e = by.get(("eager-graph" if r["mode"].endswith("-graph") else "eager", r["workload"]), {}).get("latency_ms")
        c = by.get(("compile", r["workload"]), {}).get("latency_ms")
        first = r.get("first_s")
        if first is not None and r.get("swap_s") is not None:
            first_txt = f"{first:.1f} (+{r['swap_s']:.1f} swap)"
        else:
            first_txt = fmt(first, ".1f")
        lines.append(f"| {r['workload']} | {r['mode']} | {fmt(lat, '.3f')} | "
                     f"{fmt(e / lat if e and lat else None, '.3f')} | {fmt(c / lat if c and lat else None, '.3f')} | "
                     f"{first_txt} | {fmt(r.get('logits_max_abs'), '.3g')} | {fmt(r.get('logits_rel'), '.2e')} | "
                     f"{fmt(r.get('hidden_rel'), '.2e')} | {mix_text(r.get('gemm_kernels'))} | {r.get('error', '')} |")
    return "\n".join(lines)


def self_test():
    rows = [{"mode": "eager", "workload": "decode-1", "latency_ms": 2.0, "first_s": 0.5},
            {"mode": "compile", "workload": "decode-1", "latency_ms": 1.0, "first_s": 60.0, "logits_rel": 1e-3,
             "gemm_kernels": {"gemmtune": 0, "aten": 7, "triton": 2}},
            {"mode": "optimize", "workload": "decode-1", "latency_ms": 0.8, "first_s": 5.0, "swap_s": 0.2},
            {"mode": "compile+gemmtune", "workload": "decode-1", "error": "NotImplementedError: x"},
            {"mode": "eager-graph", "workload": "decode-1", "latency_ms": 0.6, "first_s": 0.1},
            {"mode": "optimize-graph", "workload": "decode-1", "latency_ms": 0.4, "first_s": 0.1}]
    meta = {"layers": 2, "model": "Mixtral-8x7B", "device": "X", "torch": "t", "transformers": "5", "gemmtune": "g",
            "compile_mode": "max-autotune-no-cudagraphs", "cold": True}
    text = table(rows, meta)
    assert "| decode-1 | compile | 1.000 | 2.000 | 1.000 | 60.0 | - | 1.00e-03 | - | aten 7, triton 2 |  |" \
        in text, text
    assert "| decode-1 | optimize | 0.800 | 2.500 | 1.250 | 5.0 (+0.2 swap) |" in text, text
    assert "| decode-1 | compile+gemmtune | - | - | - | - | - | - | - | - | NotImplementedError: x |" in text, text
    assert "| decode-1 | optimize-graph | 0.400 | 1.500 | 2.500 |" in text, text
    code = ("def call(args):\n    # extern_kernels.mm(a, b)\n    extern_kernels.mm(buf0, arg1_1, out=buf1)\n"
            "    triton_tem_fused_mm_0.run(buf1, grid=g)\n"
            "    torch.ops.gemmtune.linear.default(buf2, w, None, 'silu_glu')\n"
            "    gemmtune_mm(buf3, buf4, out=buf5)\n")
    assert kernel_mix([code]) == {"gemmtune": 2, "aten": 1, "triton": 1}, kernel_mix([code])
    print("llama_e2e.py self-test: ok")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)}")
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help=f"comma-separated, of {', '.join(WORKLOADS)}")
    ap.add_argument("--model", default="llama", choices=sorted(MODELS), help="the model's shapes (default llama)")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=None, help="override the preset's hidden size")
    ap.add_argument("--intermediate", type=int, default=None, help="... the MLP's (an expert's) intermediate size")
    ap.add_argument("--heads", type=int, default=None)
    ap.add_argument("--kv-heads", type=int, default=None)
    ap.add_argument("--vocab", type=int, default=None)
    ap.add_argument("--iters", type=int, default=10, help="timed calls per prefill (decode: 5x)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=1,
                    help="time each (mode, workload) this many times, compiled modes recompiled (from the caches) "
                         "before each; the latency is the median, the JSON has every run (default 1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cold", action="store_true",
                    help="fresh Inductor/Triton cache and GEMMTUNE_CACHE_DIR per mode: cold compile/tune times")
    ap.add_argument("--compile-mode", default="max-autotune-no-cudagraphs")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--json", default="")
    ap.add_argument("--md", default="")
    ap.add_argument("--verbose", action="store_true", help="tracebacks of failing modes, gemmtune's progress lines")
    ap.add_argument("--self-test", action="store_true", help="no GPU, no transformers: the table on synthetic rows")
    args = ap.parse_args()
    if args.self_test:
        self_test()
        return
    if args.repeats < 1:
        raise SystemExit(f"--repeats {args.repeats}: at least 1")
    modes = [m for m in args.modes.split(",") if m]
    workloads = [w for w in args.workloads.split(",") if w]
    bad = [m for m in modes if m not in MODES] + [w for w in workloads if w not in WORKLOADS]
    if bad:
        raise SystemExit(f"unknown mode or workload: {', '.join(bad)} (modes: {', '.join(MODES)}; workloads: "
                         f"{', '.join(WORKLOADS)})")
    modes = [m for m in MODES if m in modes]  # canonical order: eager first (the reference), optimize last (in place)

    import torch
    try:
        import transformers
    except ImportError:
        raise SystemExit("this script needs transformers (pip install transformers): it builds the model from "
                         "transformers' LlamaConfig")
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device (--device cpu runs a dry run)")
    try:
        import gemmtune
        gemmtune_version = gemmtune.version()
    except Exception as e:  # the eager and compile modes run without it
        gemmtune_version = f"unavailable ({one_line(e, 120)})"
    model, cfg = build_model(args, device)
    meta = {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else str(device),
            "torch": torch.__version__, "transformers": transformers.__version__, "gemmtune": gemmtune_version,
            "layers": args.layers, "model": MODELS[args.model][0], "config": {k: getattr(cfg, k, None) for k in (
                "hidden_size", "intermediate_size", "moe_intermediate_size", "num_local_experts", "num_experts",
                "num_experts_per_tok", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                "vocab_size")},
            "experts_implementation": getattr(cfg, "_experts_implementation", None),
            "compile_mode": args.compile_mode, "cold": args.cold, "kv_cache": KV_NOTE, "warmup": args.warmup,
            "call": "model.model(ids, use_cache=False).last_hidden_state, lm_head on the last position (-kv: "
                    "model.model(ids, past_key_values=StaticCache, cache_position=[KV_CONTEXT], use_cache=True))"}
    gen = torch.Generator(device="cpu").manual_seed(args.seed + 1)
    inputs = {wl: torch.randint(0, cfg.vocab_size, WORKLOADS[wl], generator=gen).to(device) for wl in workloads}
    caches = {wl: kv_cache(model, cfg, WORKLOADS[wl][0], device, gen) for wl in workloads if wl.endswith("-kv")}
    refs, rows = {}, []
    with torch.no_grad():  # eager's outputs are the reference of every mode, whether or not eager is reported
        for wl in workloads:
            refs[wl] = tuple(t.clone() for t in forward_fn(model, caches.get(wl))(inputs[wl]))
    print(f"# {meta['device']}: {args.layers}-layer {meta['model']}-shaped decoder; modes {', '.join(modes)}",
          file=sys.stderr)
    for mode in modes:
        with fresh_caches(args.cold):
            rows += run_mode(mode, model, workloads, inputs, refs, args, device, caches)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({"meta": meta, "rows": rows}, fh, indent=1)
    text = table(rows, meta)
    print(text)
    if args.md:
        with open(args.md, "w") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
