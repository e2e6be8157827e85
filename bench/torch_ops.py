#!/usr/bin/env python3
r"""gemmtune's torch op against PyTorch on the Llama suites (GPU host): GPU time through the op, and host cost a call.

Part 1, GPU time, per y = x W^T shape of the suites (bench/suites/llama3_8b.json, llama3_70b.json, decode.json by
default; shapes other than a packed bf16 F.linear are skipped with the reason on stderr), all in one process on the
same input sets:
  torch     F.linear(x, W) followed by the separate pointwise ops of the epilogue (bench/torch_baseline.py make_fn)
  op        torch.ops.gemmtune.linear(x, W, b, epilogue, residual): the custom op, its first call tunes the problem
            (`tune_s`: that call's wall time; the selection is then a dict lookup)
  raw       Gemm.run_raw of the same selected kernel (gemmtune.Tuner.load(problem, the op's candidate)): the kernel
            launched through ctypes with no torch in between, writing into a preallocated D
and gemmtune's own C++ harness on the same kernel (`Tuner(only=[candidate]).bench(problem)`: what `gemmtune bench`
reports, the winner against cuBLASLt's default, timed by src/tuner). Timing as torch_baseline.py does it: each mode
captured in CUDA graphs (replays: no host cost in the GPU time), input sets rotated so that >= 2x L2 of other sets'
data is read between two reads of one set (L2 cold), per-launch CUDA events, median; the modes alternate for
--rounds rounds and each mode's median over the rounds counts. Columns: op / raw (1.00 = the binding adds no GPU
time), torch / op (the op's speedup over PyTorch), gemmtune bench's cuBLASLt / gemmtune, and the drift between those
two ratios (the issue's goal: within 2%; F.linear runs cuBLAS through ATen, whose kernel choice may differ from
cuBLASLt's default, so the drift also holds that difference).

Part 2, host overhead: wall time a call of a tight loop on a 64 x 64 x 64 bf16 problem, the GPU never the
bottleneck (each timed loop of --host-calls launches is queued behind a GPU sleep long enough to cover it; a loop
whose sleep ran out before the host finished is repeated with a longer sleep), no CUDA graphs. For
gemmtune.torch.ops.linear (the Python entry eager users may call, when the ops module has it), torch.ops.gemmtune.linear
(through the dispatcher), Gemm.run_raw (ctypes only, preallocated D, no torch) and F.linear. Median over repeats, in
us per call.

Output: a markdown table per part on stdout (--md FILE writes it too) and --json FILE with every number.

Examples (GPU host; the package importable: `pip install .`, or
PYTHONPATH=python GEMMTUNE_LIBRARY=build/libgemmtune.so):
  python3 bench/torch_ops.py --json out/torch_ops.json --md out/torch_ops.md
  python3 bench/torch_ops.py --quick                       # a few shapes per suite, shorter timings
  python3 bench/torch_ops.py --suite llama3_8b --filter m2048,m16 --no-cpp
  python3 bench/torch_ops.py --host-only
  python3 bench/torch_ops.py --self-test                   # no GPU: the report on synthetic rows
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_baseline as tb  # noqa: E402  (the suites' reading, the inputs, the timing harness)

DEFAULT_SUITES = ("llama3_8b", "llama3_70b", "decode")


def suite_path(name, root):
    if os.path.exists(name):
        return name
    path = os.path.join(root, "suites", name if name.endswith(".json") else name + ".json")
    if not os.path.exists(path):
        raise SystemExit(f"--suite {name}: no such file, nor {path}")
    return path


def load_shapes(args, root):
    """(suite name, resolved shape) for every shape of the suites this script runs, after --filter and --quick."""
    out = []
    for name in args.suite or DEFAULT_SUITES:
        with open(suite_path(name, root)) as fh:
            suite = json.load(fh)
        picked = []
        for shape in suite["shapes"]:
            shape = tb.resolve_shape(shape, suite)
            if args.filter and not any(f and f in shape["name"] for f in args.filter.split(",")):
                continue
            why = tb.shape_reason(shape) or ("" if tb.is_linear(shape) else
                                             "not a packed bf16 F.linear shape (the op's benchmark is y = x W^T)")
            if why:
                print(f"skipped {suite.get('name', name)}/{shape['name']}: {why}", file=sys.stderr)
                continue
            picked.append(shape)
        if args.quick:
            picked = quick_pick(picked)
        out += [(suite.get("name", name), s) for s in picked]
    return out


def quick_pick(shapes):
    """--quick: every fused-epilogue shape, then the shapes at the suite's smallest and largest M; at most 10."""
    if not shapes:
        return []
    lo, hi = min(s["m"] for s in shapes), max(s["m"] for s in shapes)
    fused = [s for s in shapes if s["epilogue"] not in ("", "none")]
    return (fused + [s for s in shapes if s["m"] in (lo, hi) and s not in fused])[:10]


def op_call(epilogue):
    """f(x, w, b, r) calling torch.ops.gemmtune.linear the way the suite's epilogue means (torch_baseline.EPILOGUES)."""
    import torch
    op = torch.ops.gemmtune.linear
    if epilogue in ("", "none"):
        return lambda x, w, b, r: op(x, w, None, "none")
    if epilogue == "bias,gelu_tanh":
        return lambda x, w, b, r: op(x, w, b, "bias,gelu_tanh")
    if epilogue == "silu_glu":
        return lambda x, w, b, r: op(x, w, None, "silu_glu")
    if epilogue == "bias,residual":
        return lambda x, w, b, r: op(x, w, b, "bias,residual", r)
    raise SystemExit(f"epilogue '{epilogue}' has no op call in this script")


def raw_call(gemm, epilogue, shape):
    """f(x, w, b, r) launching the Gemm through ctypes into a D preallocated per input set (keyed by x)."""
    import torch
    outs = {}
    bias = "bias" in epilogue
    res = "residual" in epilogue

    def f(x, w, b, r):
        d = outs.get(x.data_ptr())
        if d is None:
            d = outs[x.data_ptr()] = torch.empty(shape["m"], tb.n_out(shape), device=x.device, dtype=x.dtype)
        gemm.run_raw(x.data_ptr(), w.data_ptr(), 0, d.data_ptr(), b.data_ptr() if bias else 0,
                     r.data_ptr() if res else 0, 0, 0, 0, 0, 0, 0, torch.cuda.current_stream().cuda_stream)
        return d
    return f


def rel_error(out, ref):
    return ((out.double() - ref).norm() / ref.norm()).item()


def timed_modes(fns, sets, args):
    """{mode: median us over the rounds} of each f(x, w, b, r) in fns, as torch_baseline times a shape: graphs over
    rotated input sets (or direct calls with --no-graphs, or when a mode cannot be captured: noted in `how`)."""
    how, replays = {}, {}
    for mode, f in fns.items():
        if args.no_graphs:
            replays[mode], how[mode] = [lambda s=s, f=f: f(*s) for s in sets], "direct"
            continue
        try:
            replays[mode], how[mode] = [tb.graphed(lambda s=s, f=f: f(*s)) for s in sets], "graph"
        except Exception as e:  # a mode that cannot be captured is timed as direct calls, and says so
            print(f"  {mode}: CUDA-graph capture failed ({tb.one_line(e, 200)}); timing direct calls",
                  file=sys.stderr)
            replays[mode], how[mode] = [lambda s=s, f=f: f(*s) for s in sets], "direct"
    times = {mode: [] for mode in fns}
    for _ in range(args.rounds):
        for mode in fns:
            times[mode].append(tb.time_rotating(replays[mode], args.rep))
    return {mode: statistics.median(ts) for mode, ts in times.items()}, how


def run_shape(suite, shape, args, dev, l2):
    import torch
    import gemmtune
    import gemmtune.torch as gt

    ep = shape["epilogue"]
    row = {"suite": suite, "name": shape["name"], "m": shape["m"], "n": shape["n"], "k": shape["k"], "epilogue": ep}
    fn_torch, fn_op = tb.make_fn(ep), op_call(ep)
    s0 = tb.inputs(shape, dev)
    before = dict(gt.selections())
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fn_op(*s0)  # tunes the problem (or takes it from gemmtune's result cache)
    torch.cuda.synchronize()
    row["tune_s"] = time.perf_counter() - t0
    new = {k: v for k, v in gt.selections().items() if before.get(k) != v}
    problem = gemmtune.Problem.make(shape["m"], shape["n"], shape["k"], "bf16", epilogue=ep)
    pstr = problem.str()
    cand = gt.selections().get(pstr) or (next(iter(new.values())) if len(new) == 1 else "")
    row.update({"candidate": cand, "problem": pstr})
    if pstr not in gt.selections():
        row["note"] = f"the op's problem is not {pstr} (its selections: {sorted(new) or 'none new'})"
    dbl = [t.double() if t is not None else None for t in s0]
    ref = fn_torch(*dbl)
    del dbl
    row["op_error"] = rel_error(out, ref)
    row["torch_error"] = rel_error(fn_torch(*s0), ref)
    fns = {"torch": fn_torch, "op": fn_op}
    if cand:
        gemm = gemmtune.Tuner.load(problem, cand)
        fns["raw"] = raw_call(gemm, ep, shape)
        row["raw_error"] = rel_error(fns["raw"](*s0), ref)
    for mode in ("op", "raw"):
        if row.get(mode + "_error", 0.0) > 1e-2 or not math.isfinite(row.get(mode + "_error", 0.0)):
            raise SystemExit(f"{suite}/{shape['name']}: {mode} output error {row[mode + '_error']:.3g} against fp64")
    nsets = tb.timing_sets(tb.input_set_bytes(s0), l2)
    sets = [s0] + [tb.inputs(shape, dev) for _ in range(nsets - 1)]
    row["timing_sets"] = nsets
    us, how = timed_modes(fns, sets, args)
    row.update({f"{mode}_us": t for mode, t in us.items()})
    row["timing"] = how
    if cand and not args.no_cpp:
        try:
            b = gemmtune.Tuner(only=[cand]).bench(problem)
            win = next((r for r in b["compare"] if str(r.candidate) == cand), None)
            ref_r = next((r for r in b["compare"] if str(r.candidate) == b["reference"]), None)
            row.update({"bench_us": win.us_median if win else None, "cublaslt_us": ref_r.us_median if ref_r else None,
                        "bench_speedup": b["speedup"], "bench_reference": b["reference"], "bench_status": b["status"]})
        except Exception as e:  # the C++ harness's numbers are one column; the row stands without them
            row["bench_status"] = tb.one_line(e, 300)
    del sets, s0
    return row


# ---- host overhead -------------------------------------------------------------------------------------------------

def host_overhead(args, dev):
    """{name: us per call} of a tight loop of launches on a 64^3 bf16 problem (see the module docstring)."""
    import torch
    import torch.nn.functional as F
    import gemmtune
    import gemmtune.torch as gt

    m = n = k = 64
    x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
    w = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
    fns = {}
    direct = getattr(gt.ops, "linear", None)
    if direct is not None:
        fns["gemmtune.torch.ops.linear (Python entry)"] = lambda: direct(x, w, None, "none")
    op = torch.ops.gemmtune.linear
    fns["torch.ops.gemmtune.linear (dispatcher)"] = lambda: op(x, w, None, "none")
    op(x, w, None, "none")  # tuned here, outside the timing
    problem = gemmtune.Problem.make(m, n, k, "bf16")
    cand = gt.selections().get(problem.str())
    if cand:
        gemm = gemmtune.Tuner.load(problem, cand)
        d = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
        run_raw, xp, wp, dp = gemm.run_raw, x.data_ptr(), w.data_ptr(), d.data_ptr()
        stream = torch.cuda.current_stream().cuda_stream
        fns["Gemm.run_raw (ctypes)"] = lambda: run_raw(xp, wp, 0, dp, 0, 0, 0, 0, 0, 0, 0, 0, stream)
    fns["F.linear"] = lambda: F.linear(x, w)
    clock_khz = getattr(torch.cuda.get_device_properties(dev), "clock_rate", 0) or 1_980_000
    calls = args.host_calls
    out = {}
    for name, f in fns.items():
        for _ in range(50):
            f()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            f()
        torch.cuda.synchronize()
        guess_s = (time.perf_counter() - t0) / calls
        per_call, sleep_s = [], max(4 * calls * guess_s, 2e-3)
        for _ in range(args.host_repeats):
            for _attempt in range(4):
                torch.cuda._sleep(int(sleep_s * clock_khz * 1e3))
                awake = torch.cuda.Event()
                awake.record()
                t0 = time.perf_counter()
                for _ in range(calls):
                    f()
                t1 = time.perf_counter()
                busy = not awake.query()  # the GPU still asleep: it never waited on the host
                torch.cuda.synchronize()
                if busy:
                    per_call.append((t1 - t0) / calls)
                    break
                sleep_s *= 2
        out[name] = statistics.median(per_call) * 1e6 if per_call else float("nan")
    return out


# ---- the report ----------------------------------------------------------------------------------------------------

def fmt(v, spec=".1f"):
    return "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, spec)


def ratio(a, b):
    return a / b if a and b else None


def gpu_table(rows):
    lines = ["| suite | shape | M | N | K | epilogue | torch us | op us | raw us | op / raw | torch / op | "
             "bench gemmtune us | bench cuBLASLt us | bench cuBLASLt / gemmtune | drift | tune s | candidate |",
             "|" + "---|" * 17]
    drifts, op_raw = [], []  # (name, drift), op / raw
    for r in rows:
        t_op = ratio(r.get("torch_us"), r.get("op_us"))
        o_r = ratio(r.get("op_us"), r.get("raw_us"))
        sp = r.get("bench_speedup")
        drift = t_op / sp - 1.0 if t_op and sp else None
        if drift is not None:
            drifts.append((r["name"], drift))
        if o_r:
            op_raw.append(o_r)
        lines.append(f"| {r['suite']} | {r['name']} | {r['m']} | {r['n']} | {r['k']} | {r['epilogue']} | "
                     f"{fmt(r.get('torch_us'))} | {fmt(r.get('op_us'))} | {fmt(r.get('raw_us'))} | {fmt(o_r, '.3f')} | "
                     f"{fmt(t_op, '.3f')} | {fmt(r.get('bench_us'))} | {fmt(r.get('cublaslt_us'))} | "
                     f"{fmt(sp, '.3f')} | "
                     f"{fmt(None if drift is None else 100 * drift, '+.1f')}{'%' if drift is not None else ''} | "
                     f"{fmt(r.get('tune_s'))} | `{r.get('candidate') or r.get('error') or '-'}` |")
    summary = []
    if op_raw:
        summary.append(f"op / raw: geomean {geomean(op_raw):.3f}, max {max(op_raw):.3f} over {len(op_raw)} shapes")
    torch_op = [x for x in (ratio(r.get("torch_us"), r.get("op_us")) for r in rows) if x]
    if torch_op:
        summary.append(f"torch / op (speedup through the op): geomean {geomean(torch_op):.3f} over {len(torch_op)}")
    if drifts:
        out = [f"{name} {100 * d:+.1f}%" for name, d in drifts if abs(d) > 0.02]
        summary.append(f"drift (torch/op vs bench cuBLASLt/gemmtune): median "
                       f"{100 * statistics.median(d for _, d in drifts):+.1f}%, {len(out)} of {len(drifts)} beyond 2%"
                       + (f": {', '.join(out)}" if out else ""))
    failed = [f"{r['name']}: {r['error']}" for r in rows if r.get("error")]
    if failed:
        summary.append("failed: " + "; ".join(failed))
    return lines, summary


def host_table(host):
    lines = ["| entry point | us per call |", "|---|---|"]
    lines += [f"| {name} | {fmt(us, '.2f')} |" for name, us in host.items()]
    return lines


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def report(result):
    meta = result["meta"]
    out = [f"# gemmtune torch ops: {meta.get('device', '?')}, torch {meta.get('torch', '?')}, gemmtune "
           f"{meta.get('gemmtune', '?')}", ""]
    if result.get("shapes"):
        lines, summary = gpu_table(result["shapes"])
        out += ["## GPU time through the op (CUDA-graph replays, L2 cold, median us)", ""] + lines + [""]
        out += [f"- {s}" for s in summary] + [""]
    if result.get("host"):
        out += [f"## Host overhead ({meta.get('host_shape', '64x64x64 bf16')}, no graphs, GPU never the bottleneck)",
                ""] + host_table(result["host"]) + [""]
    return "\n".join(out)


def self_test():
    rows = [{"suite": "s", "name": "a", "m": 16, "n": 4096, "k": 4096, "epilogue": "none", "torch_us": 20.0,
             "op_us": 10.0, "raw_us": 10.0, "bench_us": 9.9, "cublaslt_us": 19.8, "bench_speedup": 2.0,
             "tune_s": 3.0, "candidate": "sm90:x"},
            {"suite": "s", "name": "b", "m": 2048, "n": 4096, "k": 4096, "epilogue": "silu_glu", "torch_us": 110.0,
             "op_us": 100.0, "raw_us": 99.0, "bench_speedup": 1.0, "tune_s": 1.0, "candidate": "cublaslt:y"},
            {"suite": "s", "name": "c", "m": 1, "n": 8, "k": 8, "epilogue": "none", "torch_us": 5.0}]
    text = report({"meta": {"device": "X"}, "shapes": rows, "host": {"F.linear": 4.0, "raw": float("nan")}})
    assert "| s | a | 16 | 4096 | 4096 | none | 20.0 | 10.0 | 10.0 | 1.000 | 2.000 | 9.9 | 19.8 | 2.000 | +0.0% |" \
        in text, text
    assert "| 1.010 | 1.100 | - | - | 1.000 | +10.0% |" in text, text
    assert "| s | c | 1 | 8 | 8 | none | 5.0 | - | - | - | - |" in text, text
    assert "1 of 2 beyond 2%: b +10.0%" in text, text
    assert "| F.linear | 4.00 |" in text and "| raw | - |" in text, text
    picked = quick_pick([{"m": m, "epilogue": e} for m in (1, 8, 16, 2048) for e in ("none", "silu_glu")])
    assert picked == [{"m": m, "epilogue": "silu_glu"} for m in (1, 8, 16, 2048)] + [
        {"m": 1, "epilogue": "none"}, {"m": 2048, "epilogue": "none"}], picked
    print("torch_ops.py self-test: ok")


def main():
    root = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", action="append", default=[],
                    help=f"suite name in bench/suites or a path; repeatable (default: {', '.join(DEFAULT_SUITES)})")
    ap.add_argument("--filter", default="", help="comma-separated substrings: only shapes whose name contains one")
    ap.add_argument("--quick", action="store_true",
                    help="per suite the fused shapes and those at its smallest and largest M (at most 10); 50 ms "
                         "per timing, 1 round, fewer host-overhead repeats")
    ap.add_argument("--json", default="", help="write every number here")
    ap.add_argument("--md", default="", help="write the markdown tables here (they are also printed)")
    ap.add_argument("--rep", type=float, default=200, help="GPU time per timing (ms)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating timing rounds per mode (median counts)")
    ap.add_argument("--no-graphs", action="store_true", help="time direct calls instead of CUDA-graph replays")
    ap.add_argument("--no-cpp", action="store_true", help="skip gemmtune's C++ harness (Tuner.bench) per shape")
    ap.add_argument("--host-only", action="store_true", help="only the host-overhead part")
    ap.add_argument("--no-host", action="store_true", help="skip the host-overhead part")
    ap.add_argument("--host-calls", type=int, default=200, help="launches per timed host loop (< the launch queue)")
    ap.add_argument("--host-repeats", type=int, default=30, help="timed host loops per entry point (median counts)")
    ap.add_argument("--top-k", type=int, default=None, help="gemmtune.torch.set_options(top_k=...) for the op's tuning")
    ap.add_argument("--self-test", action="store_true", help="no GPU: the report on synthetic rows")
    args = ap.parse_args()
    if args.self_test:
        self_test()
        return
    if args.quick:
        args.rep, args.rounds, args.host_repeats = 50, 1, 10

    import torch
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device")
    import gemmtune
    import gemmtune.torch as gt
    if args.top_k is not None:
        gt.set_options(top_k=args.top_k)
    dev = torch.device("cuda")
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    result = {"meta": {"device": torch.cuda.get_device_name(dev), "torch": torch.__version__,
                       "gemmtune": gemmtune.version(), "rep_ms": args.rep, "rounds": args.rounds,
                       "graphs": not args.no_graphs, "options": {k: v for k, v in gt.options().items()
                                                                if isinstance(v, (str, int, float, bool, list))},
                       "host_shape": "64x64x64 bf16", "host_calls": args.host_calls},
              "shapes": [], "host": {}}

    def save():
        if args.json:
            os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
            with open(args.json, "w") as fh:
                json.dump(result, fh, indent=1)

    if not args.host_only:
        shapes = load_shapes(args, root)
        if not shapes:
            raise SystemExit("no shape to run (check --suite and --filter)")
        for i, (suite, shape) in enumerate(shapes):
            print(f"[{i + 1}/{len(shapes)}] {suite}/{shape['name']} {shape['m']}x{shape['n']}x{shape['k']} "
                  f"{shape['epilogue']}", file=sys.stderr, flush=True)
            try:
                row = run_shape(suite, shape, args, dev, l2)
            except SystemExit:
                raise
            except Exception as e:  # one shape's failure is a row with its error; the run goes on
                row = {"suite": suite, "name": shape["name"], "m": shape["m"], "n": shape["n"], "k": shape["k"],
                       "epilogue": shape["epilogue"], "error": tb.one_line(e, 400)}
                print(f"  failed: {row['error']}", file=sys.stderr)
            result["shapes"].append(row)
            save()
            torch.cuda.empty_cache()
    if not args.no_host:
        result["host"] = host_overhead(args, dev)
        save()
    text = report(result)
    print(text)
    if args.md:
        with open(args.md, "w") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
