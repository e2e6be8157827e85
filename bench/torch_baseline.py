#!/usr/bin/env python3
"""PyTorch peers for a gemmtune suite (bench/suites/*.json), run on the GPU host.

For each shape it times
  (a) eager:   F.linear (cuBLAS through PyTorch), followed by separate elementwise ops for a fused-epilogue shape;
  (c) compile: torch.compile(mode="max-autotune-no-cudagraphs") of the same function. Inductor times its GEMM
               choices (ATen/cuBLAS and its Triton templates) and keeps the fastest, fusing the epilogue where it can.
and records how long torch.compile took to compile and autotune the shape (`autotune_s`: the first call, with a
fresh Inductor cache directory per run unless --inductor-cache names one) and which GEMM kernel Inductor kept
(`inductor_pick`, read from the generated code: "aten" = cuBLAS through ATen, or the Triton template with its
BLOCK_M/N/K, stages and warps).

Timing: each mode captured in CUDA graphs (replays: the same small host cost per launch for both modes), eager and
compiled alternating for --rounds rounds (median of the rounds), random normal bf16 inputs; outputs checked against
fp64. --timing rotate (default) times it as gemmtune's harness does: one graph per input set, the sets rotated so that
>= 2x L2 of other sets' data is read between two reads of one set, per-launch CUDA events, median. --timing flush
uses triton.testing.do_bench (median; its L2 flush is a 256 MB memset before every run, which leaves L2 full of dirty
lines that the timed kernel's reads then wait behind: on the H200 12-25% slower at decode sizes than a cold L2 of
clean lines, docs/PERFORMANCE.md "How we time"). gemmtune's harness is another process: compare in absolute time (same
timing) or through the cuBLAS anchor each harness measured itself (--gemmtune-json prints both).

Epilogue semantics match gemmtune's (gemmtune/epilogue.h):
  none            y = x W^T
  bias,gelu_tanh  y = gelu(x W^T + b, approximate="tanh")
  silu_glu        y = silu(g) * u where [g | u] = x W^T, W = [W_gate; W_up] (N = 2 * N_out, halves)
  bias,residual   y = x W^T + b + r

Examples (GPU host):
  python3 bench/torch_baseline.py --suite bench/suites/large.json --json out/torch_large.json
  python3 bench/torch_baseline.py --suite bench/suites/large.json --report out/torch_large.json \
      --gemmtune-json out/large.json          # table only: gemmtune vs Inductor, no GPU work
"""
import argparse
import json
import math
import os
import platform
import re
import statistics
import sys
import tempfile
import time


def make_fn(epilogue):
    import torch.nn.functional as F
    if epilogue == "bias,gelu_tanh":
        def f(x, w, b, r):
            return F.gelu(F.linear(x, w, b), approximate="tanh")
    elif epilogue == "silu_glu":
        def f(x, w, b, r):
            y = F.linear(x, w)
            g, u = y.chunk(2, dim=-1)
            return F.silu(g) * u
    elif epilogue == "bias,residual":
        def f(x, w, b, r):
            return F.linear(x, w, b) + r
    elif epilogue in ("", "none"):
        def f(x, w, b, r):
            return F.linear(x, w)
    else:
        raise SystemExit(f"epilogue '{epilogue}' has no torch equivalent in this script")
    return f


def shape_reason(shape):
    """The script builds y = x W^T with bf16 operands: A row-major, B col-major (W row-major), D row-major.
    Returns why a shape is outside that ("" when it is not); such shapes are skipped with the reason on stderr."""
    want = {"A": "bf16:row", "B": "bf16:col", "D": "bf16:row"}
    for op, spec in want.items():
        if shape.get(op, spec) != spec:
            return f"{op} = {shape[op]}; this script runs only {want}"
    if shape.get("batch", 1) != 1:
        return f"batch {shape['batch']} is not supported by this script"
    return ""


def n_out(shape):
    return shape["n"] // 2 if "glu" in shape.get("epilogue", "") else shape["n"]


def inputs(shape, device):
    import torch
    m, n, k = shape["m"], shape["n"], shape["k"]
    x = torch.randn(m, k, device=device, dtype=torch.bfloat16)
    w = torch.randn(n, k, device=device, dtype=torch.bfloat16) / k ** 0.5  # W (N x K row-major) = B col-major
    b = torch.randn(n, device=device, dtype=torch.bfloat16)
    r = torch.randn(m, n_out(shape), device=device, dtype=torch.bfloat16)
    return x, w, b, r


_TEMPLATE_DEF = re.compile(r"async_compile\.triton\('(triton_tem_\w+)',\s*'''(.*?)'''", re.S)


def inductor_pick(codes):
    """Which GEMM kernel Inductor's generated code runs: its Triton template(s) with their tile constants, else the
    ATen extern (cuBLAS), else 'unknown'."""
    text = "\n".join(codes)
    picks = []
    for name, body in _TEMPLATE_DEF.findall(text):
        consts = dict(re.findall(r"\b(BLOCK_M|BLOCK_N|BLOCK_K|GROUP_M|NUM_SMS)\s*:\s*tl\.constexpr\s*=\s*(\d+)", body))
        meta = dict(re.findall(r"\b(num_stages|num_warps)\s*=\s*(\d+)", body))
        tma = "tma" in body.lower() or "tensor_descriptor" in body
        tile = "x".join(consts.get(c, "?") for c in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
        picks.append(f"triton {tile} stages={meta.get('num_stages', '?')} warps={meta.get('num_warps', '?')}"
                     + (" tma" if tma else "") + (" persistent" if "NUM_SMS" in consts else ""))
    if picks:
        return "; ".join(picks)
    m = re.search(r"extern_kernels\.(\w*mm\w*)", text)
    return f"aten {m.group(1)} (cuBLAS)" if m else "unknown"


def graphed(f):
    """f captured in a CUDA graph; returns its replay. Timed through replays, each mode launches its GPU work with the
    same small host cost: called directly, a compiled function's Python wrapper (guards, allocation) costs several us
    per call more than F.linear, which do_bench's events partly count on kernels of 10-70 us (seen on the Llama-3-8B
    M = 16 shapes: the same cuBLAS kernel 8 us slower through torch.compile)."""
    import torch
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):  # warm-up off the capture (lazy initialisation, allocator)
            f()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        f()
    torch.cuda.synchronize()
    return g.replay


def timing_sets(set_bytes, l2_bytes):
    """Input sets to rotate (gemmtune's timing_set_count, src/tuner/evaluate.cpp): >= 2x L2 of other sets between two
    reads of one set, at least two, at most 64."""
    others = -(-2 * l2_bytes // max(set_bytes, 1))
    return min(others + 1, 64)


def time_rotating(replays, rep_ms):
    """Median us of per-launch CUDA events over about rep_ms of launches, launch i replaying replays[i % len]. Bursts
    of launches are queued behind a GPU sleep so that the GPU does not wait on the host between them."""
    import torch
    ev = lambda: torch.cuda.Event(enable_timing=True)  # noqa: E731
    n = len(replays)
    for i in range(2 * n):
        replays[i % n]()
    e0, e1 = ev(), ev()
    e0.record()
    for i in range(20):
        replays[i % n]()
    e1.record()
    torch.cuda.synchronize()
    per_ms = max(e0.elapsed_time(e1) / 20, 1e-3)
    iters = int(min(5000, max(100, rep_ms / per_ms)))
    starts, ends = [ev() for _ in range(iters)], [ev() for _ in range(iters)]
    burst = 200
    for b0 in range(0, iters, burst):
        torch.cuda._sleep(4_000_000)  # ~2 ms: the host queues the burst meanwhile
        for i in range(b0, min(iters, b0 + burst)):
            starts[i].record()
            replays[i % n]()
            ends[i].record()
    torch.cuda.synchronize()
    us = sorted(1e3 * s.elapsed_time(e) for s, e in zip(starts, ends))
    return us[len(us) // 2]


def set_inductor_options(pairs):
    """--inductor-option KEY=VALUE: torch._inductor.config.KEY = literal VALUE; an unknown key is an error."""
    import ast
    import torch._inductor.config as cfg
    done = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--inductor-option '{pair}': expected KEY=VALUE")
        try:
            val = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise SystemExit(f"--inductor-option '{pair}': VALUE is not a Python literal")
        obj, *path = [cfg] + key.split(".")
        for part in path[:-1]:
            if not hasattr(obj, part):
                raise SystemExit(f"--inductor-option '{pair}': torch._inductor.config has no '{key}'")
            obj = getattr(obj, part)
        if not hasattr(obj, path[-1]):
            raise SystemExit(f"--inductor-option '{pair}': torch._inductor.config has no '{key}'")
        setattr(obj, path[-1], val)
        done[key] = val
    return done


def run(args, root):
    import torch
    import triton
    from triton.testing import do_bench
    from torch._inductor.utils import run_and_get_code

    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device")
    cache = args.inductor_cache or tempfile.mkdtemp(prefix="inductor_cache_")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache  # read when Inductor first needs it: a cold cache per run
    options = set_inductor_options(args.inductor_option)
    dev = torch.device("cuda")
    gpu = torch.cuda.get_device_name(dev)
    with open(args.suite) as fh:
        suite = json.load(fh)
    shapes = []
    for shape in suite["shapes"]:
        why = shape_reason(shape)
        if why:
            print(f"skipped shape '{shape['name']}': {why}", file=sys.stderr)
        else:
            shapes.append(shape)
    if not shapes:
        raise SystemExit(f"{args.suite}: no shape this script can run")

    rows = []
    compile_spent = 0.0
    out_path = args.json or os.path.join(root, "results", suite.get("name", "suite"), gpu_slug(gpu) + "-inductor.json")
    os.makedirs(os.path.dirname(out_path) or ".", exist_ok=True)
    hdr = (f"{'name':24} {'M':>5} {'N':>6} {'K':>6} {'epilogue':14} | {'eager us':>9} {'TFLOP/s':>8} | "
           f"{'compile us':>10} {'TFLOP/s':>8} | {'eager/compile':>13} | {'autotune s':>10} | inductor pick")
    print(f"# {gpu}, torch {torch.__version__}, triton {triton.__version__}, Inductor cache {cache}, "
          f"options {options or 'default'}")
    print(hdr)
    print("-" * len(hdr))
    for shape in shapes:
        ep = shape.get("epilogue", "none")
        fn = make_fn(ep)
        x, w, b, r = inputs(shape, dev)
        flops = 2.0 * shape["m"] * shape["n"] * shape["k"]  # the GEMM's (a GLU's N is both halves)
        ref = fn(x.double(), w.double(), b.double(), r.double())  # fp64 reference on the same inputs
        eager_out = fn(x, w, b, r)
        eager_err = ((eager_out.double() - ref).norm() / ref.norm()).item()
        row = {"name": shape["name"], "m": shape["m"], "n": shape["n"], "k": shape["k"], "epilogue": ep,
               "eager_error": eager_err}
        fns = {"eager": lambda: fn(x, w, b, r)}
        want = not args.compile_filter or any(s and s in shape["name"] for s in args.compile_filter.split(","))
        over = args.compile_budget_s > 0 and compile_spent >= args.compile_budget_s
        if not args.no_compile and want and not over:
            torch._dynamo.reset()  # a fresh compile per shape (no recompile limit, no guards of earlier shapes)
            cfn = torch.compile(fn, mode="max-autotune-no-cudagraphs", dynamic=False)
            torch.cuda.synchronize()
            t_c = time.perf_counter()
            out, codes = run_and_get_code(cfn, x, w, b, r)  # traces, compiles and autotunes here
            torch.cuda.synchronize()
            autotune_s = time.perf_counter() - t_c
            compile_spent += autotune_s
            err = ((out.double() - ref).norm() / ref.norm()).item()
            if not math.isfinite(err) or err > 1e-2:
                raise SystemExit(f"{shape['name']}: torch.compile output error {err:.3g} against fp64")
            fns["compile"] = lambda: cfn(x, w, b, r)
            row.update({"compile_error": err, "autotune_s": autotune_s, "inductor_pick": inductor_pick(codes)})
        # The two modes alternate --rounds times (the GPU's clocks drift with its power state between timings); each
        # mode's median over the rounds counts.
        if args.timing == "rotate":
            set_bytes = sum(t.numel() * t.element_size() for t in (x, w, b, r))
            nsets = timing_sets(set_bytes, torch.cuda.get_device_properties(dev).L2_cache_size)
            sets = [(x, w, b, r)] + [inputs(shape, dev) for _ in range(nsets - 1)]
            fns = {"eager": lambda s: fn(*s)} | ({"compile": lambda s: cfn(*s)} if "compile" in fns else {})
            wrap = (lambda f, s: graphed(lambda: f(s))) if not args.no_graphs else (lambda f, s: lambda: f(s))
            fns = {mode: [wrap(f, s) for s in sets] for mode, f in fns.items()}
            row["timing_sets"] = nsets
        elif not args.no_graphs:
            fns = {mode: graphed(f) for mode, f in fns.items()}
        times = {mode: [] for mode in fns}
        for _ in range(args.rounds):
            for mode, f in fns.items():
                times[mode].append(time_rotating(f, args.rep) / 1e3 if args.timing == "rotate" else
                                   do_bench(f, rep=args.rep, return_mode="median"))
        for mode, ts in times.items():
            ms = statistics.median(ts)
            row.update({f"{mode}_us": ms * 1e3, f"{mode}_tflops": flops / (ms * 1e-3) / 1e12,
                        f"{mode}_us_rounds": [t * 1e3 for t in ts]})
        rows.append(row)
        c_us = row.get("compile_us", float("nan"))
        print(f"{row['name']:24} {row['m']:>5} {row['n']:>6} {row['k']:>6} {ep:14} | {row['eager_us']:9.1f} "
              f"{row['eager_tflops']:8.1f} | {c_us:10.1f} {row.get('compile_tflops', float('nan')):8.1f} | "
              f"{row['eager_us'] / c_us:13.3f} | {row.get('autotune_s', float('nan')):10.1f} | "
              f"{row.get('inductor_pick', '-')}", flush=True)
        write(out_path, suite, gpu, args, cache, options, rows)  # after each shape: a time limit keeps what was done
    print(f"wrote {out_path}", file=sys.stderr)
    return out_path


def write(out_path, suite, gpu, args, cache, options, rows):
    import torch
    import triton
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    meta = {"suite": suite.get("name"), "gpu": gpu, "torch": torch.__version__, "triton": triton.__version__,
            "cuda": torch.version.cuda, "host": platform.node(),
            "timing": ("median of per-launch CUDA events over rotated input sets (>= 2x L2 between reads of a set)"
                       if args.timing == "rotate" else "triton.testing.do_bench median (256 MB memset between runs)")
                      + ("" if args.no_graphs else ", CUDA-graph replays"),
            "modes": {"eager": "F.linear (cuBLAS) + separate elementwise ops",
                      "compile": "torch.compile(mode='max-autotune-no-cudagraphs')"},
            "autotune_s": "wall time of the first compiled call (trace, Inductor compile, autotune), cold cache "
                          "unless inductor_cache was given",
            "inductor_cache": cache, "fresh_cache": not args.inductor_cache, "inductor_options": options,
            "rounds": args.rounds, "rep_ms": args.rep,
            "compile_filter": args.compile_filter, "compile_budget_s": args.compile_budget_s}
    tmp = out_path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump({"meta": meta, "results": rows}, fh, indent=2)
    os.replace(tmp, out_path)


def report(torch_json, gemmtune_json):
    """gemmtune (`gemmtune bench --json`) against Inductor, shape by shape. Each harness's time of its own cuBLAS anchor
    is the bridge: gemmtune's winner x cuBLASLt's default (its harness) and Inductor's pick x F.linear (this script's);
    their quotient is gemmtune x Inductor. Tuning time: gemmtune's tune wall (compile, verify, time; cold result cache
    when the bench ran without one) against Inductor's autotune_s. With --timing rotate (the same timing as
    gemmtune's harness) the absolute quotient Inductor us / gemmtune us is printed too (`abs x ind`)."""
    with open(torch_json) as fh:
        tj = json.load(fh)
    t = {r["name"]: r for r in tj["results"]}
    same_timing = tj["meta"].get("timing", "").startswith("median of per-launch")
    with open(gemmtune_json) as fh:
        g = json.load(fh)
    hdr = (f"{'name':24} | {'gemmtune us':>11} {'x cuBLAS':>8} | {'inductor us':>11} {'x cuBLAS':>8} | "
           f"{'x inductor':>10} {'abs x ind':>9} | {'tune s':>6} {'autotune s':>10} | gemmtune winner / inductor pick")
    print(hdr)
    print("-" * len(hdr))
    ratios, absolute, tune_g, tune_i = [], [], [], []
    for s in g["shapes"]:
        r = t.get(s["name"])
        if s.get("status") != "ok" or r is None or "compile_us" not in r:
            print(f"{s['name']:24} | (not in both runs)")
            continue
        ours = s["speedup_vs_cublas"]
        ind = r["eager_us"] / r["compile_us"]
        tune = s.get("tune", {})
        tune_s = tune.get("wall_ms", float("nan")) / 1e3 if not tune.get("cache_hit") else float("nan")
        ratios.append(ours / ind)
        absolute.append(r["compile_us"] / s["us"] if same_timing else float("nan"))
        if math.isfinite(tune_s):
            tune_g.append(tune_s)
            tune_i.append(r["autotune_s"])
        print(f"{s['name']:24} | {s['us']:11.1f} {ours:8.3f} | {r['compile_us']:11.1f} {ind:8.3f} | "
              f"{ours / ind:10.3f} {absolute[-1]:9.3f} | {tune_s:6.1f} {r['autotune_s']:10.1f} | {s['winner']} / {r['inductor_pick']}")
    if ratios:
        gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        print(f"geomean gemmtune x Inductor: {gm:.3f} over {len(ratios)} shapes (bridged by each harness's cuBLAS)")
        if same_timing:
            ga = math.exp(sum(math.log(x) for x in absolute) / len(absolute))
            print(f"geomean Inductor us / gemmtune us: {ga:.3f} over {len(absolute)} shapes (same timing method)")
    if tune_g:
        print(f"tuning time, sum over {len(tune_g)} shapes: gemmtune {sum(tune_g):.1f} s, Inductor {sum(tune_i):.1f} s")


def gpu_slug(name):
    """The GPU part of a results file name (bench/README.md): "NVIDIA H100 80GB HBM3" -> "h100"."""
    m = re.search(r"\b([A-Z]+\d{2,4}[A-Za-z]*)\b", name.replace("NVIDIA", ""))
    return (m.group(1) if m else name.replace(" ", "_").replace("/", "_")).lower()


def main():
    root = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default=os.path.join(root, "suites", "large.json"))
    ap.add_argument("--json", default=None, help="output JSON (default bench/results/<suite>/<gpu>-inductor.json)")
    ap.add_argument("--no-compile", action="store_true", help="eager only (skip torch.compile)")
    ap.add_argument("--timing", choices=["rotate", "flush"], default="rotate",
                    help="rotate: input sets rotated, per-launch events (gemmtune's harness); flush: do_bench")
    ap.add_argument("--rep", type=int, default=200, help="GPU time per timing (ms)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating timing rounds per mode (median counts)")
    ap.add_argument("--no-graphs", action="store_true",
                    help="time direct calls instead of CUDA-graph replays (host overhead then counts at small shapes)")
    ap.add_argument("--inductor-option", action="append", default=[], metavar="KEY=VALUE",
                    help="set torch._inductor.config.KEY (Python literal), e.g. "
                         "triton.enable_persistent_tma_matmul=True; repeatable")
    ap.add_argument("--compile-filter", default="",
                    help="comma-separated substrings: torch.compile only shapes whose name contains one (default: all)")
    ap.add_argument("--compile-budget-s", type=float, default=0,
                    help="stop compiling new shapes once this many seconds were spent in torch.compile (0: no cap)")
    ap.add_argument("--inductor-cache", default="",
                    help="Inductor cache directory (default: a fresh one, so autotune_s is a cold compile)")
    ap.add_argument("--report", default="", metavar="TORCH_JSON",
                    help="no GPU work: the gemmtune vs Inductor table from this script's JSON and --gemmtune-json")
    ap.add_argument("--gemmtune-json", default="", help="`gemmtune bench --json` output of the same suite")
    args = ap.parse_args()
    if args.report:
        if not args.gemmtune_json:
            raise SystemExit("--report needs --gemmtune-json")
        report(args.report, args.gemmtune_json)
        return
    out = run(args, root)
    if args.gemmtune_json:
        report(out, args.gemmtune_json)


if __name__ == "__main__":
    main()
