#!/usr/bin/env python3
r"""Grouped GEMMs for mixture-of-experts (bench/suites/moe.json): gemmtune against PyTorch, per shape and routing.

Methods, all on the same inputs and the same three routings of a shape:
  torch      torch._grouped_mm (bf16; a masked shape: its 3-D x 3-D form over all G x M_max rows), or
             torch._scaled_grouped_mm (fp8 row-wise)
  inductor   torch.compile(mode="max-autotune-no-cudagraphs") of a function calling the torch op (bf16 shapes;
             `compile_s`: its first call, which autotunes)
  gemmtune   gemmtune.torch.grouped_mm / grouped_mm_masked / scaled_grouped_mm (its first call tunes the problem:
             `tune_s`; the tuner itself times each candidate over the same routings)
  dense      one GEMM of the same FLOPs: torch.mm of (routed rows, K) x (K, N) (fp8: torch._scaled_mm row-wise)
The routings are the grouped contract's (include/gemmtune/problem.h, src/tuner/routing.cpp): uniform, skewed (Zipf,
group 0 the hottest expert) and sparse (every fourth expert empty); a masked shape splits ceil(G * M_max / 2) rows
the same ways, each count clamped to M_max. Before timing, each method's output is checked on every routing against
a per-group fp32 reference on the routed rows (relative Frobenius error; a gemmtune error above --tolerance fails the
run). Timing as bench/torch_ops.py times: each call captured in a CUDA graph, input sets rotated so that >= 2x L2 of
other sets' data is read between two reads of one set (L2 cold), per-launch CUDA events, median over about --rep ms;
a method's time on a shape is the mean over the routings of its per-routing median, and TFLOP/s counts the routed
rows only (2 x rows x N x K: a masked shape's padding is no useful work).

Output (--out DIR): moe.json (every number, the card's name) and moe.md (a table: TFLOP/s per method, gemmtune /
torch, gemmtune / dense, geometric means); the table is printed too.

Examples (GPU host; PYTHONPATH=python GEMMTUNE_LIBRARY=build/libgemmtune.so, or the installed package):
  python3 bench/moe.py --out bench/results/moe-h100
  python3 bench/moe.py --quick --out /tmp/moe               # four shapes, shorter timings
  python3 bench/moe.py --filter dsv3 --no-inductor --out /tmp/moe
  python3 bench/moe.py --resume --out bench/results/moe-h100   # go on after a time limit cut a run short
  python3 bench/moe.py --self-test                          # no GPU: routings and the report on synthetic rows
"""
import argparse
import json
import math
import os
import statistics
import sys
import time
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_baseline as tb  # noqa: E402  (the timing harness: CUDA graphs, rotated sets, events)

METHODS = ("torch", "inductor", "gemmtune", "dense")
ROUTINGS = ("uniform", "skewed", "sparse")
QUICK = ("decode_g64", "dsv3_down_g32", "dsv3_up_masked_g32_m64", "dsv3_down_g32_fp8_row")


# -- routings (the grouped contract) -------------------------------------------------------------------------------


def split_uniform(total, groups):
    return [total // groups + (1 if g < total % groups else 0) for g in range(groups)]


def split_skewed(total, groups):
    """Zipf weights 1/(g+1): floor(total * w_g / sum w), the rows left over one each to groups 0, 1, 2, ..."""
    h = sum(Fraction(1, g + 1) for g in range(groups))
    c = [math.floor(Fraction(total) / ((g + 1) * h)) for g in range(groups)]
    for i in range(total - sum(c)):
        c[i % groups] += 1
    return c


def split_sparse(total, groups):
    """Every fourth group (g % 4 == 3) empty, the others split total as uniform does."""
    active = [g for g in range(groups) if g % 4 != 3]
    c = [0] * groups
    for g, n in zip(active, split_uniform(total, len(active))):
        c[g] = n
    return c


def routings(rows, groups, masked):
    """{name: row counts per group}: a contiguous shape splits its rows, a masked one ceil(G * M_max / 2) rows, each
    count clamped to M_max (rows is M_max then)."""
    total = (groups * rows + 1) // 2 if masked else rows
    out = {}
    for name, split in zip(ROUTINGS, (split_uniform, split_skewed, split_sparse)):
        out[name] = [min(c, rows) if masked else c for c in split(total, groups)]
    return out


def group_rows(counts, masked):
    """The device array's values: the counts (masked) or their cumulative ends (contiguous: torch's offs)."""
    if masked:
        return list(counts)
    ends, e = [], 0
    for c in counts:
        e += c
        ends.append(e)
    return ends


# -- the suite ---------------------------------------------------------------------------------------------------


def load_shapes(path, args):
    with open(path) as fh:
        suite = json.load(fh)
    shapes = []
    for s in suite["shapes"]:
        s = dict(s)
        for w in ("A", "B", "D"):
            s.setdefault(w, suite.get(w, suite.get("dtype", "bf16") + (":col" if w == "B" else ":row")))
        s["dtype"] = s["A"].split(":")[0]
        s["masked"] = "masked_m" in s
        s["rows"] = s["masked_m"] if s["masked"] else s["m"]
        s.setdefault("scaling", "none")
        if args.filter and not any(f and f in s["name"] for f in args.filter.split(",")):
            continue
        if args.quick and s["name"] not in QUICK:
            continue
        shapes.append(s)
    return suite, shapes


def describe(s):
    rows = f"{s['groups']}x{s['rows']}" if s["masked"] else str(s["rows"])
    return f"{rows} x {s['n']} x {s['k']}"


# -- one shape on the GPU ------------------------------------------------------------------------------------------


def make_set(s, dev, routes):
    """One input set: A, B (the expert weights (G, N, K) seen as (G, K, N)), fp8 scales, a group_rows tensor per
    routing, and the dense GEMM's operands."""
    import torch
    G, R, N, K = s["groups"], s["rows"], s["n"], s["k"]
    fp8 = s["dtype"] == "e4m3"
    a_shape = (G, R, K) if s["masked"] else (R, K)
    if fp8:
        a = torch.randn(a_shape, device=dev).clamp_(-4, 4).to(torch.float8_e4m3fn)
        w = torch.randn(G, N, K, device=dev).clamp_(-4, 4).to(torch.float8_e4m3fn)
        sa = torch.rand(a_shape[:-1], device=dev) * 0.01 + 0.005
        sb = torch.rand(G, N, device=dev) * 0.01 + 0.005
    else:
        a = torch.randn(a_shape, device=dev, dtype=torch.bfloat16)
        w = torch.randn(G, N, K, device=dev, dtype=torch.bfloat16) * (1.0 / math.sqrt(K))
        sa = sb = None
    gr = {r: torch.tensor(group_rows(c, s["masked"]), dtype=torch.int32, device=dev) for r, c in routes.items()}
    x = {"a": a, "b": w.transpose(-2, -1), "sa": sa, "sb": sb, "rows": gr}
    if fp8:  # the dense GEMM's row-wise scales, as torch._scaled_mm takes them: views, nothing copied when timed
        x["dense_sa"], x["dense_sb"] = sa.reshape(-1, 1), sb[0:1]
    return x


def method_fns(s, compiled):
    """{method: f(set, routing) -> output} of the methods that apply to the shape."""
    import torch
    import gemmtune.torch as gt
    fp8, masked = s["dtype"] == "e4m3", s["masked"]
    bf = torch.bfloat16
    fns = {}
    if fp8:
        fns["torch"] = lambda x, r: torch._scaled_grouped_mm(x["a"], x["b"], x["sa"], x["sb"], x["rows"][r],
                                                             out_dtype=bf)
        fns["gemmtune"] = lambda x, r: gt.scaled_grouped_mm(x["a"], x["b"], x["sa"], x["sb"], x["rows"][r])
    elif masked:
        fns["torch"] = lambda x, r: torch._grouped_mm(x["a"], x["b"])
        fns["gemmtune"] = lambda x, r: gt.grouped_mm_masked(x["a"], x["b"], x["rows"][r])
        if compiled is not None:
            fns["inductor"] = lambda x, r: compiled(x["a"], x["b"])
    else:
        fns["torch"] = lambda x, r: torch._grouped_mm(x["a"], x["b"], x["rows"][r])
        fns["gemmtune"] = lambda x, r: gt.grouped_mm(x["a"], x["b"], x["rows"][r])
        if compiled is not None:
            fns["inductor"] = lambda x, r: compiled(x["a"], x["b"], x["rows"][r])
    return fns


def dense_fn(s, routes):
    """f(set, routing): one GEMM over the routing's routed rows against expert 0's weight (same FLOPs)."""
    import torch
    fp8 = s["dtype"] == "e4m3"
    K = s["k"]
    rows = {r: sum(c) for r, c in routes.items()}

    def f(x, r):
        a = x["a"].reshape(-1, K)[:rows[r]]
        if fp8:
            return torch._scaled_mm(a, x["b"][0], x["dense_sa"][:rows[r]], x["dense_sb"], out_dtype=torch.bfloat16)
        return torch.mm(a, x["b"][0])
    return f


def reference(s, x, counts):
    """The per-group fp32 result on the routed rows, as a list of (output rows selector, fp32 rows)."""
    fp8 = s["dtype"] == "e4m3"
    out = []
    start = 0
    for g, c in enumerate(counts):
        if s["masked"]:
            a, sel = x["a"][g, :c], (g, slice(0, c))
            sa = x["sa"][g, :c] if fp8 else None
        else:
            a, sel = x["a"][start:start + c], (slice(start, start + c),)
            sa = x["sa"][start:start + c] if fp8 else None
            start += c
        b = x["b"][g].float()
        a = a.float()
        if fp8:
            a = a * sa[:, None]
            b = b * x["sb"][g][None, :]
        out.append((sel, a @ b))
    return out


def rel_error(out, ref):
    num = den = 0.0
    for sel, r in ref:
        o = out[sel].float()
        num += float((o - r).square().sum())
        den += float(r.square().sum())
    return math.sqrt(num / den) if den > 0 else (0.0 if num == 0 else float("inf"))


def run_shape(s, args, dev, l2):
    import torch
    import gemmtune.torch as gt
    from torch._inductor.utils import run_and_get_code

    routes = routings(s["rows"], s["groups"], s["masked"])
    fp8 = s["dtype"] == "e4m3"
    row = {"name": s["name"], "groups": s["groups"], "rows": s["rows"], "n": s["n"], "k": s["k"],
           "dtype": s["dtype"], "form": "masked" if s["masked"] else "contiguous", "scaling": s["scaling"],
           "routed_rows": {r: sum(c) for r, c in routes.items()}, "errors": {}, "notes": []}
    s0 = make_set(s, dev, routes)
    compiled = None
    if not args.no_inductor and not fp8:
        torch._dynamo.reset()  # a fresh compile per shape: no recompile limit, no guard on another shape

        if s["masked"]:
            def f(a, b):
                return torch._grouped_mm(a, b)
        else:
            def f(a, b, offs):
                return torch._grouped_mm(a, b, offs)
        cf = torch.compile(f, mode="max-autotune-no-cudagraphs", dynamic=False)
        args0 = (s0["a"], s0["b"]) if s["masked"] else (s0["a"], s0["b"], s0["rows"]["uniform"])
        try:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            _, codes = run_and_get_code(cf, *args0)  # traces, compiles and autotunes here
            torch.cuda.synchronize()
            row["compile_s"] = time.perf_counter() - t0
            # ATen's grouped GEMM is CUTLASS, not the cuBLAS that inductor_pick names for an extern matmul.
            row["inductor_pick"] = tb.inductor_pick(codes).replace("_grouped_mm (cuBLAS)", "_grouped_mm (ATen)")
            compiled = cf
        except Exception as e:  # Inductor's column is one of four: the row stands without it
            row["notes"].append(f"inductor: {tb.one_line(e, 300)}")
    fns = method_fns(s, compiled)
    fns["dense"] = dense_fn(s, routes)
    # gemmtune's first call tunes the problem.
    try:
        before = dict(gt.selections())
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fns["gemmtune"](s0, "uniform")
        torch.cuda.synchronize()
        row["tune_s"] = time.perf_counter() - t0
        new = {k: v for k, v in gt.selections().items() if before.get(k) != v}
        row["candidate"] = "; ".join(sorted(set(new.values()))) or "; ".join(sorted(set(before.values())))
        row["problem"] = "; ".join(sorted(new)) if new else ""
    except Exception as e:
        row["notes"].append(f"gemmtune: {tb.one_line(e, 400)}")
        del fns["gemmtune"]
    # Correctness on every routing, then the timing.
    for r, counts in routes.items():
        ref = reference(s, s0, counts)
        for m, f in list(fns.items()):
            if m == "dense":
                continue
            try:
                err = rel_error(f(s0, r), ref)
            except Exception as e:
                row["notes"].append(f"{m} ({r}): {tb.one_line(e, 300)}")
                del fns[m]
                continue
            row["errors"][f"{m}/{r}"] = err
            if not math.isfinite(err) or err > args.tolerance:
                row["notes"].append(f"{m} ({r}): error {err:.3g} against the fp32 reference")
                if m == "gemmtune":
                    row["failed"] = True
        del ref
    nsets = tb.timing_sets(tb.input_set_bytes([t for t in (s0["a"], s0["b"], s0["sa"], s0["sb"]) if t is not None]),
                           l2)
    sets = [s0] + [make_set(s, dev, routes) for _ in range(nsets - 1)]
    row["timing_sets"] = nsets
    us = {m: {} for m in fns}
    for r in ROUTINGS:
        for m, f in fns.items():
            if m not in us:
                continue
            try:
                replays = [tb.graphed(lambda x=x, f=f, r=r: f(x, r)) for x in sets]
                how = "graph"
            except Exception as e:  # a method that cannot be captured is timed as direct calls, and says so
                replays = [lambda x=x, f=f, r=r: f(x, r) for x in sets]
                how = "direct"
                row["notes"].append(f"{m}: CUDA-graph capture failed ({tb.one_line(e, 200)}); direct calls")
            times = [tb.time_rotating(replays, args.rep) for _ in range(args.rounds)]
            us[m][r] = statistics.median(times)
            row.setdefault("timing", {})[m] = how
            del replays
    row["us"] = us
    flops = {r: 2.0 * sum(c) * s["n"] * s["k"] for r, c in routes.items()}
    row["tflops"] = {}
    for m, per in us.items():
        if len(per) == len(ROUTINGS):
            mean_us = statistics.fmean(per.values())
            row["tflops"][m] = statistics.fmean(flops.values()) / (mean_us * 1e-6) / 1e12
            row[f"{m}_us"] = mean_us
    del sets, s0
    torch.cuda.empty_cache()
    return row


# -- the report --------------------------------------------------------------------------------------------------


def ratio(row, num, den):
    t = row.get("tflops", {})
    return t[num] / t[den] if num in t and den in t and t[den] > 0 else None


def report_lines(meta, rows):
    def num(v, prec=0):
        return "-" if v is None or not math.isfinite(v) else f"{v:.{prec}f}"

    lines = [f"# MoE grouped GEMMs on {meta['gpu']}", "",
             "TFLOP/s of the routed rows, mean over the routings (uniform, skewed, sparse) of each method's "
             "per-routing median; L2 cold, CUDA graphs.", "",
             "| shape | G | rows x N x K | dtype | torch | inductor | gemmtune | dense | gemmtune / torch | "
             "gemmtune / dense | notes |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        t = r.get("tflops", {})
        notes = "; ".join(r.get("notes", []))
        if r.get("failed"):
            notes = "**gemmtune wrong** " + notes
        lines.append(f"| {r['name']} | {r['groups']} | {describe_row(r)} | {r['dtype']}"
                     f"{'' if r['scaling'] == 'none' else ' ' + r['scaling']} | {num(t.get('torch'))} | "
                     f"{num(t.get('inductor'))} | {num(t.get('gemmtune'))} | {num(t.get('dense'))} | "
                     f"{num(ratio(r, 'gemmtune', 'torch'), 2)} | {num(ratio(r, 'gemmtune', 'dense'), 2)} | "
                     f"{notes.replace('|', '/')} |")
    lines.append("")
    groups = [("bf16", lambda r: r["dtype"] != "e4m3"), ("fp8 row", lambda r: r["dtype"] == "e4m3"),
              ("all", lambda r: True)]
    for label, pick in groups:
        sel = [r for r in rows if pick(r) and not r.get("failed")]
        g_t, n_t = tb.geomean([ratio(r, "gemmtune", "torch") for r in sel])
        g_i, n_i = tb.geomean([ratio(r, "gemmtune", "inductor") for r in sel])
        g_d, n_d = tb.geomean([ratio(r, "gemmtune", "dense") for r in sel if r["groups"] <= 32])
        lines.append(f"- {label}: gemmtune / torch geomean {num(g_t, 3)} over {n_t} shapes; gemmtune / inductor "
                     f"{num(g_i, 3)} over {n_i}; gemmtune / dense at G <= 32 {num(g_d, 3)} over {n_d}")
    return lines


def describe_row(r):
    rows = f"{r['groups']}x{r['rows']}" if r["form"] == "masked" else str(r["rows"])
    return f"{rows} x {r['n']} x {r['k']}"


def write(out_dir, meta, rows):
    os.makedirs(out_dir, exist_ok=True)
    for name, text in (("moe.json", json.dumps({"meta": meta, "results": rows}, indent=2)),
                       ("moe.md", "\n".join(report_lines(meta, rows)) + "\n")):
        tmp = os.path.join(out_dir, name + ".tmp")
        with open(tmp, "w") as fh:
            fh.write(text)
        os.replace(tmp, os.path.join(out_dir, name))


def self_test(root):
    """No GPU: the routings obey the contract and the report renders synthetic rows."""
    for rows, groups, masked in ((8192, 8, False), (8192, 32, False), (512, 64, False), (64, 32, True),
                                 (5, 8, False), (1000, 3, False), (7, 300, False), (1, 1, True)):
        rs = routings(rows, groups, masked)
        for name, c in rs.items():
            assert len(c) == groups and min(c) >= 0, (name, c)
            if masked:
                assert max(c) <= rows and sum(c) <= (groups * rows + 1) // 2, (name, c)
            else:
                assert sum(c) == rows, (name, rows, groups, c)
        if groups >= 4 and not masked:
            assert all(c == 0 for g, c in enumerate(rs["sparse"]) if g % 4 == 3)
            assert rs["skewed"][0] == max(rs["skewed"])
        assert group_rows(rs["uniform"], masked)[-1] == (rs["uniform"][-1] if masked else sum(rs["uniform"]))
    assert split_skewed(10, 3) == [6, 3, 1]  # 10 * (1, 1/2, 1/3) / (11/6) = 5.45, 2.73, 1.82: floors 5, 2, 1
    suite, shapes = load_shapes(os.path.join(root, "suites", "moe.json"), argparse.Namespace(filter="", quick=False))
    assert len(shapes) >= 12 and any(s["masked"] for s in shapes) and sum(s["dtype"] == "e4m3" for s in shapes) >= 3
    rows = []
    for i, s in enumerate(shapes):
        t = {"torch": 400.0 + i, "gemmtune": 480.0 + i, "dense": 600.0}
        if s["dtype"] != "e4m3":
            t["inductor"] = 380.0
        rows.append({"name": s["name"], "groups": s["groups"], "rows": s["rows"], "n": s["n"], "k": s["k"],
                     "dtype": s["dtype"], "form": "masked" if s["masked"] else "contiguous", "scaling": s["scaling"],
                     "tflops": t, "notes": []})
    text = "\n".join(report_lines({"gpu": "synthetic"}, rows))
    assert "gemmtune / torch geomean" in text and "| mixtral_w1_g8 |" in text
    print(text)
    print("self-test ok")


def main():
    root = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default=os.path.join(root, "suites", "moe.json"))
    ap.add_argument("--out", help="directory for moe.json and moe.md")
    ap.add_argument("--filter", default="", help="comma-separated substrings of shape names")
    ap.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}; shorter timings")
    ap.add_argument("--no-inductor", action="store_true", help="skip the torch.compile max-autotune column")
    ap.add_argument("--rep", type=float, default=None, help="ms of launches per timing (default 50, quick 20)")
    ap.add_argument("--rounds", type=int, default=None, help="timings per method and routing (median; default 3)")
    ap.add_argument("--tolerance", type=float, default=2e-2, help="max relative error against fp32 (default 2e-2)")
    ap.add_argument("--resume", action="store_true", help="keep the shapes already in --out's moe.json (same "
                    "GPU) and run the others: a long run split over several commands")
    ap.add_argument("--self-test", action="store_true", help="no GPU: check routings and the report, then exit")
    args = ap.parse_args()
    if args.self_test:
        self_test(root)
        return 0
    if not args.out:
        ap.error("--out DIR is required")
    args.rep = args.rep or (20.0 if args.quick else 50.0)
    args.rounds = args.rounds or (1 if args.quick else 3)
    import torch
    if not torch.cuda.is_available():
        raise SystemExit("bench/moe.py needs a CUDA GPU (--self-test runs without one)")
    import gemmtune
    dev = torch.device("cuda", torch.cuda.current_device())
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    suite, shapes = load_shapes(args.suite, args)
    meta = {"gpu": torch.cuda.get_device_name(dev), "torch": torch.__version__, "gemmtune": gemmtune.version(),
            "suite": suite.get("name", args.suite), "quick": args.quick, "rep_ms": args.rep, "rounds": args.rounds,
            "tolerance": args.tolerance, "routings": list(ROUTINGS)}
    rows = []
    done = os.path.join(args.out, "moe.json")
    if args.resume and os.path.exists(done):
        with open(done) as fh:
            old = json.load(fh)
        if old["meta"].get("gpu") != meta["gpu"]:
            raise SystemExit(f"--resume: {done} was measured on {old['meta'].get('gpu')}, this is {meta['gpu']}")
        names = {s["name"] for s in shapes}
        rows = [r for r in old["results"] if r["name"] in names]
        print(f"--resume: {len(rows)} shapes kept from {done}", file=sys.stderr)
    kept = {r["name"] for r in rows}
    order = {s["name"]: i for i, s in enumerate(shapes)}
    t0 = time.perf_counter()
    for s in shapes:
        if s["name"] in kept:
            continue
        ts = time.perf_counter()
        print(f"{s['name']}: {s['groups']} groups, {describe(s)}, {s['dtype']}", file=sys.stderr, flush=True)
        try:
            row = run_shape(s, args, dev, l2)
        except torch.cuda.OutOfMemoryError as e:
            row = {"name": s["name"], "groups": s["groups"], "rows": s["rows"], "n": s["n"], "k": s["k"],
                   "dtype": s["dtype"], "form": "masked" if s["masked"] else "contiguous", "scaling": s["scaling"],
                   "notes": [f"out of memory: {tb.one_line(e, 200)}"]}
            torch.cuda.empty_cache()
        row["wall_s"] = time.perf_counter() - ts
        rows.append(row)
        rows.sort(key=lambda r: order[r["name"]])
        t = row.get("tflops", {})
        print("  " + "  ".join(f"{m} {t[m]:.0f}" for m in METHODS if m in t) + " TFLOP/s"
              + (f"  ({'; '.join(row['notes'])})" if row.get("notes") else ""), file=sys.stderr, flush=True)
        write(args.out, dict(meta, wall_s=time.perf_counter() - t0), rows)  # partial results survive a timeout
    meta["wall_s"] = time.perf_counter() - t0
    write(args.out, meta, rows)
    print("\n".join(report_lines(meta, rows)))
    failed = [r["name"] for r in rows if r.get("failed")]
    if failed:
        print(f"gemmtune's output is wrong on: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
