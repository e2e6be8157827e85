#!/usr/bin/env python3
"""Plot `gemmtune bench --json` output as an SVG: the speedup of gemmtune's tuned winner per shape against cuBLASLt's
default algorithm and, given a `bench/torch_baseline.py` JSON of the same suite, against TorchInductor max-autotune,
with the geomeans, the GPU and the date in the title, and given `--twin` (the aligned twin suite's `gemmtune bench
--json`, e.g. suites/unaligned_padded.json) the twin's time over the unaligned one per shape of the same name.
Python 3 standard library only: the SVG is written by hand.

  python3 bench/plot.py bench/results/large/h200-gemmtune.json \\
      --inductor bench/results/large/h200-inductor.json \\
      --inductor-gemmtune bench/results/large/h200-inductor-gemmtune.json \\
      --out bench/results/large/h200.svg
  python3 bench/plot.py --self-test

Against Inductor the ratio is Inductor µs / gemmtune µs when both were timed the same way (`torch_baseline.py
--timing rotate`), else the two harnesses bridged by each one's own cuBLAS time (as `torch_baseline.py --report`).
The Inductor run is compared with the gemmtune run it was measured beside (`--inductor-gemmtune`, default the plotted
JSON)."""
import argparse
import json
import math
import os
import re
import sys
import tempfile
from xml.sax.saxutils import escape

COLORS = {"cublas": "#4c72b0", "inductor": "#dd8452", "twin": "#55a868"}
LABELS = {"cublas": "x cuBLASLt default", "inductor": "x TorchInductor", "twin": "x aligned twin"}
GPU_SHORT = {"NVIDIA H100 80GB HBM3": "H100 SXM", "NVIDIA H200": "H200"}


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def scaling_group(s):
    """The scaling of a `gemmtune bench --json` row: none, tensor, row or block, "+w8a16" for weight-only fp8 (a
    16-bit A with an fp8 B); from its problem object, else its problem string (`... --A=e4m3:row --scaling=row`)."""
    p = s.get("problem") if isinstance(s.get("problem"), dict) else {"str": str(s.get("problem") or "")}
    opts = dict(re.findall(r"--(\w+)=(\S+)", p.get("str", "")))
    sc = p.get("scaling") or opts.get("scaling", "none")
    a = p["A"]["dtype"] if isinstance(p.get("A"), dict) else opts.get("A", "bf16").split(":")[0]
    return sc + ("+w8a16" if sc != "none" and a in ("bf16", "f16") else "")


def inductor_ratios(torch_json, gemmtune_json, mode="compile"):
    """name -> gemmtune's speedup over Inductor, and whether it is absolute (same timing) or bridged. mode: the
    torch_baseline.py timing to compare with, "compile" or, for fp8 rows, "compile_fast" (use_fast_accum=True,
    bridged by eager_fast, torch._scaled_mm with fast accumulation)."""
    suffix = mode[len("compile"):]
    t = {r["name"]: r for r in torch_json["results"] if f"{mode}_us" in r}
    same_timing = torch_json["meta"].get("timing", "").startswith("median of per-launch")
    out = {}
    for s in gemmtune_json["shapes"]:
        r = t.get(s["name"])
        if s.get("status") != "ok" or r is None:
            continue
        if same_timing:
            out[s["name"]] = r[f"{mode}_us"] / s["us"]
        elif r.get(f"eager{suffix}_us") and s.get("speedup_vs_cublas"):
            out[s["name"]] = s["speedup_vs_cublas"] / (r[f"eager{suffix}_us"] / r[f"{mode}_us"])
    return out, same_timing


def series(bench, torch_json=None, torch_gemmtune=None, twin=None, inductor_mode="compile"):
    """Rows (name, x cuBLAS, x Inductor or None, x aligned twin or None, scaling group) and the title's facts. The
    twin (a `gemmtune bench --json` of the aligned twin suite, e.g. suites/unaligned_padded.json) gives twin us /
    gemmtune us per shape of the same name: 1.00 = the unaligned problem runs as fast as its aligned twin."""
    ind, same = ({}, True)
    if torch_json is not None:
        ind, same = inductor_ratios(torch_json, torch_gemmtune or bench, inductor_mode)
    tw = {s["name"]: s["us"] for s in (twin or {}).get("shapes", []) if s.get("status") == "ok" and s.get("us")}
    rows = [(s["name"], s["speedup_vs_cublas"], ind.get(s["name"]),
             tw[s["name"]] / s["us"] if s["name"] in tw else None, scaling_group(s))
            for s in bench["shapes"] if s.get("status") == "ok" and s.get("speedup_vs_cublas")]
    gpu = bench.get("device", {}).get("name", "unknown GPU")
    date = (bench.get("finished_at") or bench.get("started_at") or "")[:10]
    return rows, {"suite": bench.get("suite", "suite"), "gpu": GPU_SHORT.get(gpu, gpu), "date": date,
                  "inductor_kind": ("same timing" if same else "bridged by cuBLAS")
                  + (", use_fast_accum=True" if inductor_mode == "compile_fast" else "")}


def by_scaling(rows):
    """"" for a suite of one scaling mode (bf16 suites), else the geomeans per scaling: x cuBLAS and, where there are
    Inductor values, x Inductor, e.g. "tensor 1.052x (5) / 1.101x; row ..."."""
    groups = {}
    for r in rows:
        groups.setdefault(r[4], []).append(r)
    if list(groups) in ([], ["none"]):
        return ""
    parts = []
    for name, rs in groups.items():
        ind = [r[2] for r in rs if r[2] is not None]
        parts.append(f"{name} {geomean([r[1] for r in rs]):.3f}x ({len(rs)})"
                     + (f" / {geomean(ind):.3f}x ({len(ind)})" if ind else ""))
    return "by scaling, x cuBLASLt (shapes) / x Inductor (shapes): " + "; ".join(parts)


def svg(rows, facts, title=None):
    """A horizontal bar chart: one group per shape, the speedup axis log-scaled around 1.0."""
    keys = ["cublas"] + [key for j, key in ((2, "inductor"), (3, "twin")) if any(r[j] is not None for r in rows)]
    col = {"cublas": 1, "inductor": 2, "twin": 3}
    vals = [v for r in rows for v in r[1:4] if v is not None] + [1.0]
    lo = min(0.9, min(vals) * 0.97)
    hi = max(1.1, max(vals) * 1.03)
    split = by_scaling(rows)
    shift = 16 if split else 0  # one more line under the title
    # fp8 names carry their scaling and output (llama3_70b_o_m4096_tensor_e4m3d_amax): room for ~6.3 px a character
    left = max(190, int(6.3 * max(len(r[0]) for r in rows)) + 60) if split else 190
    right, top, bar, gap = 40, 78 + shift, 11, 8
    width = 960 if split else 820
    plot_w = width - left - right
    group = bar * len(keys) + gap
    height = top + group * len(rows) + 44

    def x(v):
        return left + plot_w * (math.log(v) - math.log(lo)) / (math.log(hi) - math.log(lo))

    gm_c = geomean([r[1] for r in rows])
    ind_vals = [r[2] for r in rows if r[2] is not None]
    twin_vals = [r[3] for r in rows if r[3] is not None]
    head = title or (f"gemmtune on {facts['suite']}: speedup per shape, {facts['gpu']}, measured {facts['date']}")
    sub = f"vs cuBLASLt's default: geomean {gm_c:.3f}x over {len(rows)} shapes"
    if "inductor" in keys:
        sub += (f"; vs TorchInductor max-autotune ({facts['inductor_kind']}): geomean {geomean(ind_vals):.3f}x "
                f"over {len(ind_vals)}")
    if "twin" in keys:
        sub += f"; vs the aligned twin: geomean {geomean(twin_vals):.3f}x over {len(twin_vals)}"
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
         f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
         f'<rect width="{width}" height="{height}" fill="white"/>',
         f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="14" font-weight="bold">{escape(head)}</text>',
         f'<text x="{width / 2}" y="40" text-anchor="middle">{escape(sub)}</text>']
    if split:
        o.append(f'<text x="{width / 2}" y="56" text-anchor="middle">{escape(split)}</text>')
    # legend
    lx = left
    for key in keys:
        label = LABELS[key]
        o.append(f'<rect x="{lx}" y="{50 + shift}" width="12" height="10" fill="{COLORS[key]}"/>')
        o.append(f'<text x="{lx + 16}" y="{59 + shift}">{label}</text>')
        lx += 150
    # grid: ticks every 5% (every 10% on a wide range)
    step = 0.05 if hi / lo < 1.6 else 0.1
    t = math.ceil(lo / step) * step
    axis_y = top + group * len(rows)
    while t <= hi + 1e-9:
        xt = x(t)
        stroke = "#333" if abs(t - 1.0) < 1e-9 else "#ddd"
        o.append(f'<line x1="{xt:.1f}" y1="{top - 4}" x2="{xt:.1f}" y2="{axis_y}" stroke="{stroke}"/>')
        o.append(f'<text x="{xt:.1f}" y="{axis_y + 14}" text-anchor="middle">{t:.2f}</text>')
        t += step
    o.append(f'<text x="{left + plot_w / 2}" y="{axis_y + 32}" text-anchor="middle">'
             f'speedup (reference time / gemmtune time, log scale; right of 1.00 = gemmtune faster)</text>')
    x1 = x(1.0)
    for i, r in enumerate(rows):
        name = r[0]
        y = top + i * group
        o.append(f'<text x="{left - 6}" y="{y + bar * len(keys) / 2 + 4:.1f}" '
                 f'text-anchor="end">{escape(name)}</text>')
        for j, key in enumerate(keys):
            v = r[col[key]]
            if v is None:
                continue
            xv = x(v)
            yb = y + j * bar
            o.append(f'<rect x="{min(x1, xv):.1f}" y="{yb}" width="{abs(xv - x1):.1f}" height="{bar - 1}" '
                     f'fill="{COLORS[key]}"><title>{escape(name)}: {v:.3f}x</title></rect>')
            tx, anchor = (xv + 3, "start") if v >= 1 else (xv - 3, "end")
            o.append(f'<text x="{tx:.1f}" y="{yb + bar - 2}" text-anchor="{anchor}" font-size="9">{v:.3f}</text>')
    o.append("</svg>")
    return "\n".join(o) + "\n"


def self_test():
    """Plot a synthetic suite and check what the picture must say."""
    bench = {"suite": "demo", "device": {"name": "NVIDIA H200"}, "finished_at": "2026-01-02T03:04:05Z",
             "shapes": [{"name": "a<b", "status": "ok", "us": 10.0, "speedup_vs_cublas": 1.10},
                        {"name": "b", "status": "ok", "us": 20.0, "speedup_vs_cublas": 0.95},
                        {"name": "failed", "status": "failed", "us": 0.0, "speedup_vs_cublas": 0.0}]}
    torch_json = {"meta": {"timing": "median of per-launch CUDA events over rotated input sets"},
                  "results": [{"name": "a<b", "eager_us": 11.0, "compile_us": 12.0}]}
    rows, facts = series(bench, torch_json)
    assert [r[0] for r in rows] == ["a<b", "b"], rows
    assert abs(rows[0][2] - 1.2) < 1e-12 and rows[1][2] is None, rows
    text = svg(rows, facts)
    for needle in ("H200", "2026-01-02", "geomean 1.022x over 2 shapes", "geomean 1.200x over 1", "a&lt;b", "0.950"):
        assert needle in text, needle
    twin = {"shapes": [{"name": "b", "status": "ok", "us": 18.0}, {"name": "a<b", "status": "failed", "us": None}]}
    rows, facts = series(bench, torch_json, twin=twin)
    assert rows[0][3] is None and abs(rows[1][3] - 0.9) < 1e-12, rows
    text = svg(rows, facts)
    for needle in ("x aligned twin", "vs the aligned twin: geomean 0.900x over 1", "0.900"):
        assert needle in text, needle
    bridged = dict(torch_json, meta={"timing": "do_bench"})
    rows, facts = series(bench, bridged)
    assert abs(rows[0][2] - 1.10 / (11.0 / 12.0)) < 1e-12 and facts["inductor_kind"] == "bridged by cuBLAS"
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "b.json")
        with open(p, "w") as fh:
            json.dump(bench, fh)
        t = os.path.join(d, "t.json")
        with open(t, "w") as fh:
            json.dump(twin, fh)
        out = os.path.join(d, "b.svg")
        main([p, "--out", out, "--twin", t])
        import xml.dom.minidom
        xml.dom.minidom.parse(out)  # well-formed
    # fp8: the scaling of each row (problem object or problem string), the geomeans by scaling, fast accumulation
    def fp8_shape(name, speedup, problem):
        return {"name": name, "status": "ok", "us": 10.0, "speedup_vs_cublas": speedup, "problem": problem}
    fp8 = {"suite": "fp8_large", "device": {"name": "NVIDIA H100 80GB HBM3"}, "finished_at": "2026-01-02T03:04:05Z",
           "shapes": [fp8_shape("t", 1.2, {"scaling": "tensor", "A": {"dtype": "e4m3"},
                                           "str": "--A=e4m3:row --B=e4m3:col --scaling=tensor"}),
                      fp8_shape("r", 1.1, {"str": "--m=8 --A=e4m3:row --B=e4m3:col --D=bf16:row --scaling=row"}),
                      fp8_shape("r2", 0.9, "--m=8 --A=e4m3:row --B=e4m3:col --D=bf16:row --scaling=row"),
                      fp8_shape("w", 1.3, {"str": "--m=1 --A=bf16:row --B=e4m3:col --scaling=row"})]}
    assert [scaling_group(x) for x in fp8["shapes"]] == ["tensor", "row", "row", "row+w8a16"]
    assert scaling_group(bench["shapes"][0]) == "none" and by_scaling(series(bench)[0]) == ""
    tj = {"meta": {"timing": "median of per-launch CUDA events over rotated input sets"},
          "results": [{"name": "t", "eager_us": 12.0, "compile_us": 11.0, "eager_fast_us": 11.0,
                       "compile_fast_us": 9.0}, {"name": "r", "eager_us": 11.0, "compile_us": 12.0}]}
    rows, facts = series(fp8, tj)
    assert [r[4] for r in rows] == ["tensor", "row", "row", "row+w8a16"] and abs(rows[0][2] - 1.1) < 1e-12, rows
    text = svg(rows, facts)
    want = (f"by scaling, x cuBLASLt (shapes) / x Inductor (shapes): tensor 1.200x (1) / 1.100x (1); "
            f"row {(1.1 * 0.9) ** 0.5:.3f}x (2) / 1.200x (1); row+w8a16 1.300x (1)")
    assert escape(want) in text, (want, text)
    rows, facts = series(fp8, tj, inductor_mode="compile_fast")
    assert abs(rows[0][2] - 0.9) < 1e-12 and rows[1][2] is None and "use_fast_accum" in facts["inductor_kind"]
    rows, facts = series(fp8, dict(tj, meta={"timing": "do_bench"}), inductor_mode="compile_fast")
    assert abs(rows[0][2] - 1.2 / (11.0 / 9.0)) < 1e-12, rows
    print("plot.py self-test: ok")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench_json", nargs="?", help="`gemmtune bench --json` output")
    ap.add_argument("--inductor", metavar="TORCH_JSON", help="bench/torch_baseline.py output of the same suite")
    ap.add_argument("--inductor-gemmtune", metavar="GEMMTUNE_JSON",
                    help="the gemmtune bench run the Inductor run was measured beside (default: bench_json)")
    ap.add_argument("--twin", metavar="TWIN_JSON",
                    help="`gemmtune bench --json` of the aligned twin suite (suites/unaligned_padded.json, same run): "
                         "a third bar, twin us / gemmtune us")
    ap.add_argument("--inductor-mode", choices=["compile", "compile_fast"], default="compile",
                    help="fp8 suites: compare with Inductor's scaled matmul with use_fast_accum False (compile) or "
                         "True (compile_fast)")
    ap.add_argument("--out", help="SVG to write (default: bench_json with .svg)")
    ap.add_argument("--title", help="replace the title line")
    ap.add_argument("--self-test", action="store_true", help="check the script on synthetic data and exit")
    a = ap.parse_args(argv)
    if a.self_test:
        self_test()
        return
    if not a.bench_json:
        ap.error("bench_json is required")

    def load(p):
        with open(p) as fh:
            return json.load(fh)
    bench = load(a.bench_json)
    rows, facts = series(bench, load(a.inductor) if a.inductor else None,
                         load(a.inductor_gemmtune) if a.inductor_gemmtune else None,
                         load(a.twin) if a.twin else None, a.inductor_mode)
    if not rows:
        sys.exit(f"{a.bench_json}: no shape with status ok")
    out = a.out or os.path.splitext(a.bench_json)[0] + ".svg"
    with open(out, "w") as fh:
        fh.write(svg(rows, facts, a.title))
    print(out)


if __name__ == "__main__":
    main()
