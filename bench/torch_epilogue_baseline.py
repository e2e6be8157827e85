#!/usr/bin/env python3
"""PyTorch peers for the fused-epilogue suite (bench/suites/epilogue_llama8b.json), run on the GPU host.

For each shape it times
  (a) eager:   the GEMM (torch.matmul / F.linear) followed by separate elementwise ops, as a model written plainly runs;
  (c) compile: torch.compile(mode="max-autotune-no-cudagraphs") of the same function (Inductor fuses the epilogue into
               its Triton GEMM templates or picks cuBLAS + a fused pointwise kernel, whichever it measures faster).
Timing: triton.testing.do_bench (median of its repetitions, L2 flushed between runs), random normal bf16 inputs.
Prints a table and writes JSON (default bench/results/torch_epilogue_<gpu>.json).

Epilogue semantics match gemmtune's (gemmtune/epilogue.h):
  bias,gelu_tanh  y = gelu(x W^T + b, approximate="tanh")
  silu_glu        y = silu(g) * u where [g | u] = x W^T, W = [W_gate; W_up] (N = 2 * N_out, halves)
  bias,residual   y = x W^T + b + r
"""
import argparse
import json
import os
import platform
import sys

import torch
import torch.nn.functional as F


def make_fn(epilogue):
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


def n_out(shape):
    return shape["n"] // 2 if "glu" in shape.get("epilogue", "") else shape["n"]


def inputs(shape, device):
    m, n, k = shape["m"], shape["n"], shape["k"]
    x = torch.randn(m, k, device=device, dtype=torch.bfloat16)
    w = torch.randn(n, k, device=device, dtype=torch.bfloat16) / k ** 0.5  # W (N x K row-major) = B col-major
    b = torch.randn(n, device=device, dtype=torch.bfloat16)
    r = torch.randn(m, n_out(shape), device=device, dtype=torch.bfloat16)
    return x, w, b, r


def main():
    root = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default=os.path.join(root, "suites", "epilogue_llama8b.json"))
    ap.add_argument("--json", default=None, help="output JSON (default bench/results/torch_epilogue_<gpu>.json)")
    ap.add_argument("--no-compile", action="store_true", help="eager only (skip torch.compile)")
    ap.add_argument("--rep", type=int, default=200, help="do_bench rep (ms)")
    ap.add_argument("--compile-filter", default="",
                    help="comma-separated substrings: torch.compile only shapes whose name contains one (default: all)")
    ap.add_argument("--compile-budget-s", type=float, default=0,
                    help="stop compiling new shapes once this many seconds were spent in torch.compile (0: no cap)")
    args = ap.parse_args()

    import triton
    from triton.testing import do_bench

    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device")
    dev = torch.device("cuda")
    gpu = torch.cuda.get_device_name(dev)
    with open(args.suite) as fh:
        suite = json.load(fh)

    rows = []
    import time
    compile_spent = 0.0
    out_path = args.json or os.path.join(root, "results",
                                         "torch_epilogue_" + gpu.replace(" ", "_").replace("/", "_") + ".json")
    hdr = f"{'name':28} {'M':>5} {'N':>6} {'K':>6} {'epilogue':16} | {'eager us':>9} {'TFLOP/s':>8} | {'compile us':>10} {'TFLOP/s':>8} | {'eager/compile':>13}"
    print(f"# {gpu}, torch {torch.__version__}, triton {triton.__version__}")
    print(hdr)
    print("-" * len(hdr))
    for shape in suite["shapes"]:
        ep = shape.get("epilogue", "none")
        fn = make_fn(ep)
        x, w, b, r = inputs(shape, dev)
        flops = 2.0 * shape["m"] * shape["n"] * shape["k"]
        ref = fn(x, w, b, r).float()
        eager_ms = do_bench(lambda: fn(x, w, b, r), rep=args.rep, return_mode="median")
        row = {"name": shape["name"], "m": shape["m"], "n": shape["n"], "k": shape["k"], "epilogue": ep,
               "eager_us": eager_ms * 1e3, "eager_tflops": flops / (eager_ms * 1e-3) / 1e12}
        want = not args.compile_filter or any(s and s in shape["name"] for s in args.compile_filter.split(","))
        over = args.compile_budget_s > 0 and compile_spent >= args.compile_budget_s
        if not args.no_compile and want and not over:
            t_c = time.time()
            torch._dynamo.reset()
            cfn = torch.compile(fn, mode="max-autotune-no-cudagraphs", dynamic=False)
            out = cfn(x, w, b, r).float()  # autotunes here
            err = ((out - ref).norm() / ref.norm()).item()
            comp_ms = do_bench(lambda: cfn(x, w, b, r), rep=args.rep, return_mode="median")
            row.update({"compile_us": comp_ms * 1e3, "compile_tflops": flops / (comp_ms * 1e-3) / 1e12,
                        "compile_vs_eager_error": err, "compile_wall_s": time.time() - t_c})
            compile_spent += time.time() - t_c
        rows.append(row)
        c_us = row.get("compile_us", float("nan"))
        c_tf = row.get("compile_tflops", float("nan"))
        print(f"{row['name']:28} {row['m']:>5} {row['n']:>6} {row['k']:>6} {ep:16} | {row['eager_us']:9.1f} "
              f"{row['eager_tflops']:8.1f} | {c_us:10.1f} {c_tf:8.1f} | {row['eager_us'] / c_us:13.2f}", flush=True)
        write(out_path, suite, gpu, args, rows)  # after every shape: a time limit keeps what was measured
    print(f"wrote {out_path}", file=sys.stderr)


def write(out_path, suite, gpu, args, rows):
    import triton
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    meta = {"suite": suite.get("name"), "gpu": gpu, "torch": torch.__version__, "triton": triton.__version__,
            "cuda": torch.version.cuda, "host": platform.node(), "timing": "triton.testing.do_bench median",
            "modes": {"eager": "GEMM + separate elementwise ops",
                      "compile": "torch.compile(mode='max-autotune-no-cudagraphs')"},
            "compile_filter": args.compile_filter, "compile_budget_s": args.compile_budget_s}
    with open(out_path, "w") as fh:
        json.dump({"meta": meta, "results": rows}, fh, indent=2)


if __name__ == "__main__":
    main()
