#!/usr/bin/env python3
r"""PyTorch peers for a gemmtune suite (bench/suites/*.json), run on the GPU host.

For each shape it times
  (a) eager:   F.linear (cuBLAS through PyTorch; torch.matmul on a shape of another form, see "Operands"), followed
               by separate elementwise ops for a fused-epilogue shape;
  (c) compile: torch.compile(mode="max-autotune-no-cudagraphs") of the same function. Inductor times its GEMM
               choices (ATen/cuBLAS and its Triton templates) and keeps the fastest, fusing the epilogue where it can.
and records how long torch.compile took to compile and autotune the shape (`autotune_s`: the first call, with a
fresh Inductor cache directory per run unless --inductor-cache names one) and which GEMM kernel Inductor kept
(`inductor_pick`, read from the generated code: "aten" = cuBLAS through ATen, or the Triton template with its
BLOCK_M/N/K, stages and warps).

Operands. A bf16 y = x W^T shape with packed, 16-byte aligned operands (A row-major, B col-major, D row-major, one
matrix) runs as F.linear(x, W) on contiguous tensors; an odd N or K (an LM head's vocabulary) stays that. Every other
shape (general_fn) passes the compiled function its operands exactly as the problem lays them out: A (M x K) and B
(K x N) are torch.as_strided views of a larger buffer with the problem's leading dimensions, packed batch strides, and
a storage offset of align / element-size elements where the problem declares align < 16 (a sliced activation);
D = torch.matmul(a, b) (mm, or bmm with a batch), a col-major D the transpose of the row-major N x M product; a D with a
pitch or an offset is written by copy_ into a strided view. Whatever Inductor does inside the compiled function
(padding copies of unaligned operands, a copy of a misaligned input) is timed with it.

Timing: each mode captured in CUDA graphs (replays: the same small host cost per launch for both modes), eager and
compiled alternating for --rounds rounds (median of the rounds), random normal bf16 inputs; outputs checked against
fp64. --timing rotate (default) times it as gemmtune's harness does: one graph per input set, the sets rotated so that
>= 2x L2 of other sets' data is read between two reads of one set, per-launch CUDA events, median. --timing flush
uses triton.testing.do_bench (median; its L2 flush is a 256 MB memset before every run, which leaves L2 full of dirty
lines that the timed kernel's reads then wait behind: on the H200 12-25% slower at decode sizes than a cold L2 of
clean lines, docs/PERFORMANCE.md "How we time"). gemmtune's harness is another process: compare in absolute time (same
timing) or through the cuBLAS anchor each harness measured itself (--gemmtune-json prints both).

FP8 shapes (an e4m3/e5m2 A or B with a "scaling": tensor, row or block; bench/suites/fp8_*.json) take their own
path (run_scaled): torch._scaled_mm (cuBLASLt) with the scales in torch's conventions (scale_geometry), timed with
use_fast_accum False and True, and torch.compile(mode="max-autotune-no-cudagraphs") of each; weight-only fp8 (bf16 A,
e4m3 B) runs as plain torch, F.linear(x, w.to(bf16) * scale_b) * scale_a, and torch.compile of it. Outputs are checked
against an fp64 reference from the dequantized inputs; a mode torch refuses is reported with its message
(row["unavailable"]) instead of ending the run. Rows also carry GB/s and weight GB/s (W and its scales / time).

Epilogue semantics match gemmtune's (gemmtune/epilogue.h):
  none            y = x W^T
  bias,gelu_tanh  y = gelu(x W^T + b, approximate="tanh")
  silu_glu        y = silu(g) * u where [g | u] = x W^T, W = [W_gate; W_up] (N = 2 * N_out, halves)
  bias,residual   y = x W^T + b + r

Examples (GPU host):
  python3 bench/torch_baseline.py --suite bench/suites/large.json --json out/torch_large.json
  python3 bench/torch_baseline.py --suite bench/suites/large.json --report out/torch_large.json \
      --gemmtune-json out/large.json          # table only: gemmtune vs Inductor, no GPU work
  python3 bench/torch_baseline.py --report out/torch_unaligned.json --gemmtune-json out/unaligned.json \
      --twin-json out/unaligned_padded.json   # plus each shape's aligned twin (same name) and unaligned / twin
  python3 bench/torch_baseline.py --suite bench/suites/fp8_large.json --json out/torch_fp8_large.json \
      --gemmtune-json out/bench_fp8_large.json  # fp8 peers, then the table with the geomeans by scaling
  python3 bench/torch_baseline.py --self-test  # no GPU (torch optional): suites, operand views, scales, the report
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


EPILOGUES = ("none", "bias,gelu_tanh", "silu_glu", "bias,residual")
ELEM_BYTES = {"bf16": 2, "f16": 2, "f32": 4, "e4m3": 1, "e5m2": 1}
_LAYOUTS = {"row": "row", "r": "row", "rowmajor": "row", "row-major": "row", "row_major": "row",
            "col": "col", "c": "col", "column": "col", "colmajor": "col", "col-major": "col", "column-major": "col",
            "col_major": "col", "column_major": "col"}


def resolve_shape(shape, suite):
    """A suite entry with the suite's defaults filled in as `gemmtune bench` reads them (tools/gemmtune/cli_suite.h):
    A, B, D as "dtype:layout" (suite "dtype", default bf16; A row-major, B col-major, D row-major), batch 1."""
    dt = suite.get("dtype", "bf16")
    s = dict(shape)
    s.setdefault("A", suite.get("A", dt + ":row"))
    s.setdefault("B", suite.get("B", dt + ":col"))
    s.setdefault("D", suite.get("D", dt + ":row"))
    s.setdefault("batch", 1)
    s.setdefault("epilogue", "none")
    if s["epilogue"] == "":
        s["epilogue"] = "none"
    return s


def operand_spec(shape, which):
    """("bf16", "row"|"col") of operand A, B or D of a resolved shape."""
    dtype, _, layout = shape[which].partition(":")
    default = "col" if which == "B" else "row"
    return dtype.lower(), _LAYOUTS.get((layout or default).lower(), "?")


def n_out(shape):
    return shape["n"] // 2 if "glu" in shape.get("epilogue", "") else shape["n"]


def operand_geometry(shape, which):
    """How operand A (M x K), B (K x N) or D (M x n_out) lies in memory, as the problem says (gemmtune/problem.h):
    `size` and `stride` of the logical tensor (batch, rows, cols) or (rows, cols) in elements, as torch.as_strided
    takes them; `offset`: elements from a 16-byte aligned allocation to the base pointer (align bytes / element size
    when the operand declares align < 16, as gemmtune's tuner offsets its buffers: the pointer then has exactly that
    alignment); `numel`: elements the allocation needs; `packed`: True when the tensor is a plain contiguous
    allocation (packed leading dimension and batch stride, offset 0)."""
    m, k, batch = shape["m"], shape["k"], shape.get("batch", 1)
    rows, cols = {"A": (m, k), "B": (k, shape["n"]), "D": (m, n_out(shape))}[which]
    dtype, layout = operand_spec(shape, which)
    line = cols if layout == "row" else rows    # elements of one contiguous line
    lines = rows if layout == "row" else cols
    packed_ld = max(line, 1)
    ld = shape.get("ld" + which.lower(), 0) or packed_ld
    if ld < line:
        raise ValueError(f"ld{which.lower()} = {ld} is less than the {line} elements of one "
                         f"{'row' if layout == 'row' else 'column'} of {which}")
    align = shape.get("align_" + which.lower(), 16)
    offset = align // ELEM_BYTES.get(dtype, 2) if align < 16 else 0
    stride = (ld, 1) if layout == "row" else (1, ld)
    size = (rows, cols)
    span = (lines - 1) * ld + line
    if batch > 1:
        bs = ld * lines  # packed batch stride (Problem::resolve): the suites give none
        size, stride = (batch,) + size, (bs,) + stride
        span += (batch - 1) * bs
    return {"dtype": dtype, "layout": layout, "ld": ld, "align": align, "size": size, "stride": stride,
            "offset": offset, "numel": offset + span, "packed_ld": packed_ld,
            "packed": ld == packed_ld and offset == 0}


def is_linear(shape):
    """The shapes this script has always run as F.linear(x, W): bf16, A row-major, B col-major (W N x K row-major),
    D row-major, one matrix, every operand packed and 16-byte aligned. They keep that path exactly; every other shape
    takes the general path (`general_fn`)."""
    want = {"A": ("bf16", "row"), "B": ("bf16", "col"), "D": ("bf16", "row")}
    return (shape.get("batch", 1) == 1 and all(operand_spec(shape, w) == v for w, v in want.items())
            and all(operand_geometry(shape, w)["packed"] for w in "ABD"))


def shape_reason(shape):
    """Why this script cannot run a resolved shape ("" when it can); such shapes are skipped with the reason on
    stderr. The general path runs any layouts, pitches, base offsets and batch of A, B and D, but only what torch's
    matmul computes: A, B and D of one dtype (bf16, f16 or f32), no C (beta = 0), the epilogues in EPILOGUES. A
    scaled (fp8) shape takes the fp8 path, whose limits scaled_reason states."""
    if is_scaled(shape):
        return scaled_reason(shape)
    specs = {w: operand_spec(shape, w) for w in "ABD"}
    for w, (dtype, layout) in specs.items():
        if dtype not in ELEM_BYTES or layout == "?":
            return f"{w} = {shape[w]}: expected bf16, f16 or f32 with layout row or col"
    if not specs["A"][0] == specs["B"][0] == specs["D"][0]:
        return (f"A = {shape['A']}, B = {shape['B']}, D = {shape['D']}: torch.matmul gives D the inputs' dtype, "
                "so this script runs only one dtype for all three")
    if shape.get("beta", 0) != 0:
        return f"beta = {shape['beta']}: this script has no C operand"
    if shape.get("epilogue", "none") not in EPILOGUES:
        return f"epilogue '{shape['epilogue']}' has no torch equivalent in this script"
    try:
        for w in "ABD":
            operand_geometry(shape, w)
    except ValueError as e:
        return str(e)
    return ""


def describe(shape):
    """One line naming how the general path builds the operands, e.g. "A row ld=4099 +1 el, B col, D row"."""
    if is_linear(shape):
        return "F.linear(x, W): x M x K, W N x K, y M x N, all contiguous"
    parts = []
    for w in "ABD":
        g = operand_geometry(shape, w)
        t = f"{w} {g['layout']}" + ("" if g["ld"] == g["packed_ld"] else f" ld={g['ld']}")
        parts.append(t + (f" +{g['offset']} el" if g["offset"] else ""))
    b = shape.get("batch", 1)
    return (f"batch {b}: " if b > 1 else "") + ", ".join(parts) + (
        "" if operand_geometry(shape, "D")["packed"] else " (D written by copy_ into a strided view)")


def aligned_twin(shape):
    """The aligned twin of a resolved shape (bench/suites/unaligned_padded.json): each dimension that is an operand's
    contiguous extent (K of a row-major A, N of a row-major B or D, M of a col-major A or D, ...) and each explicit
    leading dimension rounded up to a multiple of 16 bytes (8 bf16 elements), every base pointer 16-byte aligned.
    The other dimensions (M of a row-major D: a decode M = 1 stays 1) and the batch stay as they are."""
    s = {key: v for key, v in shape.items() if not key.startswith("align_")}
    contiguous = {("A", "row"): "k", ("A", "col"): "m", ("B", "row"): "n", ("B", "col"): "k",
                  ("D", "row"): "n", ("D", "col"): "m"}
    for w in "ABD":
        dtype, layout = operand_spec(shape, w)
        q = 16 // ELEM_BYTES.get(dtype, 2)
        dim = contiguous[(w, layout)]
        s[dim] = -(-s[dim] // q) * q
        ld = "ld" + w.lower()
        if s.get(ld):
            s[ld] = -(-s[ld] // q) * q
    return s


# ---- FP8 (scaled) shapes: the peers are torch._scaled_mm and torch.compile of it ----

FP8 = ("e4m3", "e5m2")
SCALINGS = ("tensor", "row", "block")
SCALE_BLOCK = 128  # K (and N, for B) extent of one block scale (gemmtune/problem.h kScaleBlock)
_SCALING_ALIASES = {"tensorwise": "tensor", "rowwise": "row", "blockwise": "block", "": "none"}


def scaling_of(shape):
    """The shape's scaling mode: none, tensor, row or block (the suite's "scaling"; CLI aliases accepted)."""
    sc = str(shape.get("scaling") or "none").strip().lower()
    return _SCALING_ALIASES.get(sc, sc)


def is_scaled(shape):
    """A scaled GEMM (fp8 A or B, or a scaling named): runs on the fp8 path (run_scaled), never on F.linear."""
    return scaling_of(shape) != "none" or any(operand_spec(shape, w)[0] in FP8 for w in "AB")


def weight_only(shape):
    """A 16-bit A with an fp8 B (weight-only fp8): its peer dequantizes W in torch and multiplies in bf16/f16."""
    return operand_spec(shape, "A")[0] in ("bf16", "f16") and operand_spec(shape, "B")[0] in FP8


def scaled_reason(shape):
    """Why the fp8 path cannot run a resolved scaled shape ("" when it can). torch._scaled_mm computes one matrix with
    A row-major and B col-major (x W^T with W N x K row-major), packed, writing a row-major D; this script adds no
    epilogue and no C to it."""
    sc = scaling_of(shape)
    (da, la), (db, lb), (dd, ldd) = (operand_spec(shape, w) for w in "ABD")
    if sc not in SCALINGS:
        return f"scaling = {shape.get('scaling', 'none')}: fp8 inputs need tensor, row or block scaling"
    if db not in FP8:
        return f"B = {shape['B']}: a scaled GEMM needs an fp8 B (e4m3 or e5m2)"
    if da not in FP8 + ("bf16", "f16"):
        return f"A = {shape['A']}: expected e4m3, e5m2 (torch._scaled_mm) or bf16/f16 (weight-only fp8)"
    if da not in FP8 and sc == "block":
        return "block scaling needs fp8 A and B"
    if (la, lb, ldd) != ("row", "col", "row"):
        return (f"A = {shape['A']}, B = {shape['B']}, D = {shape['D']}: torch._scaled_mm takes A row-major and B "
                "col-major (W N x K row-major), and this script writes D row-major")
    if dd not in ("bf16", "f16", "f32", "e4m3"):
        return f"D = {shape['D']}: expected bf16, f16, f32 or e4m3"
    if dd == "e4m3" and da not in FP8:
        return "an e4m3 D needs fp8 A and B in this script"
    if shape.get("amax") and dd != "e4m3":
        return "amax is the statistic of an e4m3 D"
    if shape.get("batch", 1) != 1:
        return f"batch = {shape['batch']}: torch._scaled_mm takes one matrix"
    if shape.get("beta", 0) != 0:
        return f"beta = {shape['beta']}: this script has no C operand"
    if shape.get("epilogue", "none") != "none":
        return f"epilogue '{shape['epilogue']}': this script's fp8 peers compute the scaled GEMM alone"
    try:
        packed = all(operand_geometry(shape, w)["packed"] for w in "ABD")
    except ValueError as e:
        return str(e)
    if not packed:
        return "an fp8 shape with a pitch or an offset: this script runs packed, 16-byte aligned operands only"
    return ""


def scale_geometry(shape, pitch_b=0):
    """The fp32 scales of a scaled shape as torch tensors over flat buffers: for A ('a') and B ('b'), the buffer's
    `numel` and the view's `size` and `stride` (torch.as_strided). With fp8 A and B these follow torch._scaled_mm's
    conventions, which lay the values out as gemmtune's GemmArgs does (gemmtune/problem.h):
      tensor  0-dim tensors, one value each;
      row     scale_a (M, 1), scale_b (1, N), contiguous: one per row of A, one per output channel of W;
      block   scale_a (M, ceil(K/128)) with strides (1, M): M contiguous, value (m, kb) at kb * M + m;
              scale_b (ceil(K/128), ceil(N/128)) with strides (1, P): scale_b.t() is the row-major
              (ceil(N/128), ceil(K/128)) grid of W's 128 x 128 blocks with row pitch P, value (kb, nb) at nb * P + kb.
              P = ceil(K/128) (gemmtune's packed grid) unless pitch_b names another (torch releases that want the
              pitch rounded up to a multiple of 4).
    Weight-only (16-bit A): scale_a (M, 1) and scale_b (N, 1) under row scaling (scale_b multiplies W's rows),
    0-dim under tensor scaling."""
    m, n, k = shape["m"], shape["n"], shape["k"]
    sc = scaling_of(shape)
    if sc == "tensor":
        return {"a": {"numel": 1, "size": (), "stride": ()}, "b": {"numel": 1, "size": (), "stride": ()}}
    if sc == "row":
        b = ({"numel": n, "size": (n, 1), "stride": (1, 1)} if weight_only(shape)
             else {"numel": n, "size": (1, n), "stride": (n, 1)})
        return {"a": {"numel": m, "size": (m, 1), "stride": (1, 1)}, "b": b}
    kb, nb = -(-k // SCALE_BLOCK), -(-n // SCALE_BLOCK)
    p = pitch_b or kb
    if p < kb:
        raise ValueError(f"pitch_b = {p} is less than ceil(K/128) = {kb}")
    return {"a": {"numel": kb * m, "size": (m, kb), "stride": (1, m)},
            "b": {"numel": nb * p, "size": (kb, nb), "stride": (1, p)}}


def scale_pitches(shape):
    """Row pitches of the block grid of B's scales to try, in order: gemmtune's packed ceil(K/128), then rounded up
    to a multiple of 4 (16-byte rows) when that differs: torch releases disagree on which they accept."""
    if scaling_of(shape) != "block":
        return [0]
    kb = -(-shape["k"] // SCALE_BLOCK)
    return [kb] + ([-(-kb // 4) * 4] if kb % 4 else [])


def scaled_bytes(shape):
    """(bytes a scaled GEMM moves at least: A, B, D and the scales once; the weight's bytes: W and its scales)."""
    m, n, k = shape["m"], shape["n"], shape["k"]
    eb = {w: ELEM_BYTES[operand_spec(shape, w)[0]] for w in "ABD"}
    g = scale_geometry(shape)
    weight = n * k * eb["B"] + 4 * g["b"]["numel"]
    return m * k * eb["A"] + weight + m * n * eb["D"] + 4 * g["a"]["numel"], weight


_TORCH_DTYPES_FP8 = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}


def torch_dtype(name):
    import torch
    return getattr(torch, {**_TORCH_DTYPES, **_TORCH_DTYPES_FP8}[name])


def scaled_inputs(shape, device, pitch_b=0):
    """One input set of a scaled shape: (a, w, scale_a, scale_b, scale_d). a (M x K) and w (N x K) are contiguous,
    drawn normal(0, 1) and rounded to their dtype (as gemmtune's verification fills them); b = w.t() is B col-major.
    Scales uniform in [0.5, 2), laid out by scale_geometry; scale_d (an e4m3 D only) = 10 / sqrt(K), which keeps
    |v * scale_d| well inside e4m3's +-448 for these inputs (the peers' speed does not depend on saturation)."""
    import torch
    m, n, k = shape["m"], shape["n"], shape["k"]
    a = torch.randn(m, k, device=device).to(torch_dtype(operand_spec(shape, "A")[0]))
    w = torch.randn(n, k, device=device).to(torch_dtype(operand_spec(shape, "B")[0]))
    g = scale_geometry(shape, pitch_b)

    def scale(s):
        buf = torch.rand(s["numel"], device=device, dtype=torch.float32) * 1.5 + 0.5
        return buf.as_strided(s["size"], s["stride"])
    sd = (torch.tensor(10.0 / k ** 0.5, device=device, dtype=torch.float32)
          if operand_spec(shape, "D")[0] == "e4m3" else None)
    return a, w, scale(g["a"]), scale(g["b"]), sd


def expand_scales(shape, sa, sb):
    """fp64 factors, broadcastable to A (M x K) and W (N x K), that dequantize them: A * SA, W * SW."""
    n, k = shape["n"], shape["k"]
    sc = scaling_of(shape)
    sa, sb = sa.double(), sb.double()
    if sc == "tensor":
        return sa, sb
    if sc == "row":
        return sa, (sb if weight_only(shape) else sb.t())  # (M, 1), (N, 1)
    r = SCALE_BLOCK
    return (sa.repeat_interleave(r, dim=1)[:, :k],
            sb.t().repeat_interleave(r, dim=0)[:n].repeat_interleave(r, dim=1)[:, :k])


def scaled_reference(shape, s):
    """fp64 v = sum_k (A * SA)(W * SW) from the dequantized inputs of set s (quantization is not counted), before D's
    scale, and max |v| (an amax shape's second output)."""
    a, w, sa, sb, sd = s
    SA, SW = expand_scales(shape, sa, sb)
    v = (a.double() * SA) @ (w.double() * SW).t()
    return v, v.abs().max().item()


def scaled_fn(shape, fast_accum):
    """f(a, w, scale_a, scale_b, scale_d) computing the shape the way PyTorch does:
      fp8 A and B: torch._scaled_mm(a, w.t(), scale_a, scale_b, out_dtype=D's dtype, use_fast_accum=fast_accum)
                   (cuBLASLt through ATen); an e4m3 D also passes scale_result=scale_d. With amax there is no amax
                   output in _scaled_mm: v in bf16, then amax = max |v| and D = saturate(v * scale_d) as torch ops,
                   returning (D, amax).
      weight-only: F.linear(x, w.to(x.dtype) * scale_b) * scale_a, the dequantize-then-matmul of plain torch (a
                   cast and a multiply over W before the GEMM in eager; Inductor may fuse them into its template)."""
    import torch
    import torch.nn.functional as F
    out = torch_dtype(operand_spec(shape, "D")[0])
    if weight_only(shape):
        def f(x, w, sa, sb, sd):
            y = F.linear(x, w.to(x.dtype) * sb.to(x.dtype))
            return (y * sa.to(x.dtype)).to(out)
    elif shape.get("amax"):
        def f(a, w, sa, sb, sd):
            y = torch._scaled_mm(a, w.t(), sa, sb, out_dtype=torch.bfloat16, use_fast_accum=fast_accum)
            d = (y.float() * sd).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
            return d, y.abs().amax().float()
    elif operand_spec(shape, "D")[0] == "e4m3":
        def f(a, w, sa, sb, sd):
            return torch._scaled_mm(a, w.t(), sa, sb, scale_result=sd, out_dtype=out, use_fast_accum=fast_accum)
    else:
        def f(a, w, sa, sb, sd):
            return torch._scaled_mm(a, w.t(), sa, sb, out_dtype=out, use_fast_accum=fast_accum)
    return f


def scaled_error(out, v, v_amax, sd=None, divide=False):
    """Normalized RMS error of D against the fp64 reference v (for an e4m3 D: saturate(v * scale_d), or v / scale_d
    with divide, the convention of torch's CPU _scaled_mm); with an amax output, the larger of that and amax's
    relative error."""
    d, amax = out if isinstance(out, tuple) else (out, None)
    ref = v if sd is None else ((v / sd.double()) if divide else (v * sd.double())).clamp(-448.0, 448.0)
    err = ((d.double() - ref).norm() / ref.norm()).item()
    if amax is not None:
        err = max(err, abs(float(amax) - v_amax) / v_amax)
    return err


def one_line(e, limit=600):
    """An exception as one line: its type and message with newlines folded (torch's layout errors span lines)."""
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:limit]}" + ("..." if len(text) > limit else "")

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


def general_fn(shape):
    """f(a, b, bias, r, d) for a shape outside is_linear, on operands built by inputs(): a and b are views with
    the problem's strides and storage offsets (A M x K, B K x N, with a leading batch dimension when batch > 1), so
    the compiled function sees them exactly as gemmtune does. D = A B is torch.matmul(a, b) (mm, or bmm for a batch:
    what a model's x @ W or q @ k.mT traces to); a col-major D is the transpose of the row-major product
    Dt = B^T A^T, torch.matmul(b.mT, a.mT).mT, whose strides (1, M) the compiled function must return as eager does,
    while Inductor chooses freely how to compute the N x M product. Then the epilogue as in make_fn. When D itself has
    a pitch or an offset (d is not None: a view into a larger buffer), the result is written into it by d.copy_(y),
    which Inductor may fuse into the GEMM's epilogue or run as a copy; either way it is timed. Returns the output
    (None when written into d)."""
    import torch
    import torch.nn.functional as F
    ep = shape.get("epilogue", "none")
    dcol = operand_spec(shape, "D")[1] == "col"

    def f(a, b, bias, r, d):
        y = torch.matmul(b.mT, a.mT).mT if dcol else torch.matmul(a, b)
        if ep == "bias,gelu_tanh":
            y = F.gelu(y + bias, approximate="tanh")
        elif ep == "silu_glu":
            g, u = y.chunk(2, dim=-1)
            y = F.silu(g) * u
        elif ep == "bias,residual":
            y = y + bias + r
        if d is None:
            return y
        d.copy_(y)
        return None
    return f


_TORCH_DTYPES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}


def inputs(shape, device):
    """Operands of one input set: (x, w, b, r) for the F.linear path, (a, b, bias, r, d) for the general path."""
    import torch
    m, n, k = shape["m"], shape["n"], shape["k"]
    if is_linear(shape):
        x = torch.randn(m, k, device=device, dtype=torch.bfloat16)
        w = torch.randn(n, k, device=device, dtype=torch.bfloat16) / k ** 0.5  # W (N x K row-major) = B col-major
        b = torch.randn(n, device=device, dtype=torch.bfloat16)
        r = torch.randn(m, n_out(shape), device=device, dtype=torch.bfloat16)
        return x, w, b, r
    dt = getattr(torch, _TORCH_DTYPES[operand_spec(shape, "A")[0]])

    def view(g, scale=1.0, fill=None):
        buf = torch.empty(g["numel"], device=device, dtype=dt)
        if fill is None:
            buf.normal_(0.0, scale)
        else:
            buf.fill_(fill)
        return buf.as_strided(g["size"], g["stride"], g["offset"])
    gd = operand_geometry(shape, "D")
    ep = shape.get("epilogue", "none")
    a = view(operand_geometry(shape, "A"))
    b = view(operand_geometry(shape, "B"), 1.0 / k ** 0.5)
    # Only the epilogue operands the function reads exist: the input set's bytes decide how many sets rotate.
    bias = torch.randn(n, device=device, dtype=dt) if "bias" in ep else None
    # the residual is shaped like D (gemmtune/problem.h), 16-byte aligned
    r = view(dict(gd, offset=0, numel=gd["numel"] - gd["offset"])) if "residual" in ep else None
    d = None if gd["packed"] else view(gd, fill=float("nan"))
    return a, b, bias, r, d


def input_set_bytes(tensors):
    """Bytes of the allocations behind one input set (a strided view counts its whole buffer, gaps included). The
    F.linear path counts x, W, b and r, as it always has; the general path counts what it reads and D."""
    return sum(t.untyped_storage().nbytes() for t in tensors if t is not None)


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
        shape = resolve_shape(shape, suite)
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
    if args.resume and os.path.exists(out_path):
        # a run cut short (a time limit per command) goes on where it stopped: the shapes it wrote are kept
        with open(out_path) as fh:
            rows = json.load(fh).get("results", [])
        done = {r["name"] for r in rows}
        shapes = [sh for sh in shapes if sh["name"] not in done]
        print(f"--resume: {len(done)} shapes already in {out_path}, {len(shapes)} to run", file=sys.stderr)
    nw = max([24] + [len(s["name"]) for s in shapes])
    hdr = (f"{'name':{nw}} {'M':>5} {'N':>6} {'K':>6} {'epilogue':14} | {'eager us':>9} {'TFLOP/s':>8} | "
           f"{'compile us':>10} {'TFLOP/s':>8} | {'eager/compile':>13} | {'autotune s':>10} | inductor pick")
    print(f"# {gpu}, torch {torch.__version__}, triton {triton.__version__}, Inductor cache {cache}, "
          f"options {options or 'default'}")
    if not all(is_scaled(sh) for sh in shapes):
        print(hdr)
        print("-" * len(hdr))
    scaled_hdr = ""
    nan = float("nan")
    for shape in shapes:
        if is_scaled(shape):
            if not scaled_hdr:
                scaled_hdr = scaled_header(nw)
                print(scaled_hdr + "\n" + "-" * len(scaled_hdr))
            row, spent = run_scaled(shape, args, dev, compile_spent)
            compile_spent += spent
            rows.append(row)
            print(scaled_line(row, nw), flush=True)
            write(out_path, suite, gpu, args, cache, options, rows)
            continue
        ep = shape["epilogue"]
        linear = is_linear(shape)
        fn = make_fn(ep) if linear else general_fn(shape)
        s0 = inputs(shape, dev)
        d = None if linear else s0[4]

        def result(out):
            """The output of a call: the returned tensor, or D's view when the function wrote into it."""
            return d if out is None else out

        def error(out):
            return ((out.double() - ref).norm() / ref.norm()).item()
        # the GEMM's flops (a GLU's N is both halves)
        flops = 2.0 * shape["m"] * shape["n"] * shape["k"] * shape["batch"]
        dbl = [t.double() if t is not None else None for t in s0[:4]]
        ref = fn(*dbl) if linear else fn(*dbl, None)  # fp64 reference on the same inputs
        del dbl
        eager_err = error(result(fn(*s0)))
        if not math.isfinite(eager_err) or eager_err > 1e-2:
            raise SystemExit(f"{shape['name']}: eager output error {eager_err:.3g} against fp64 ({describe(shape)})")
        row = {"name": shape["name"], "m": shape["m"], "n": shape["n"], "k": shape["k"], "epilogue": ep,
               "eager_error": eager_err}
        if not linear:
            row.update({"batch": shape["batch"], "operands": describe(shape)})
        fns = {"eager": lambda: fn(*s0)}
        want = not args.compile_filter or any(s and s in shape["name"] for s in args.compile_filter.split(","))
        over = args.compile_budget_s > 0 and compile_spent >= args.compile_budget_s
        if not args.no_compile and want and not over:
            torch._dynamo.reset()  # a fresh compile per shape (no recompile limit, no guards of earlier shapes)
            cfn = torch.compile(fn, mode="max-autotune-no-cudagraphs", dynamic=False)
            if d is not None:
                d.fill_(nan)  # the eager call's output must not pass for the compiled one's
            torch.cuda.synchronize()
            t_c = time.perf_counter()
            try:
                out, codes = run_and_get_code(cfn, *s0)  # traces, compiles and autotunes here
            except Exception as e:  # an Inductor failure on one shape must not end the whole run
                msg = f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:300]}"
                print(f"{shape['name']}: torch.compile failed, eager only: {msg}", file=sys.stderr)
                row["compile_failed"] = msg
                compile_spent += time.perf_counter() - t_c
            else:
                torch.cuda.synchronize()
                autotune_s = time.perf_counter() - t_c
                compile_spent += autotune_s
                err = error(result(out))
                if not math.isfinite(err) or err > 1e-2:
                    raise SystemExit(f"{shape['name']}: torch.compile output error {err:.3g} against fp64")
                fns["compile"] = lambda: cfn(*s0)
                row.update({"compile_error": err, "autotune_s": autotune_s, "inductor_pick": inductor_pick(codes)})
        # The two modes alternate --rounds times (the GPU's clocks drift with its power state between timings); each
        # mode's median over the rounds counts.
        if args.timing == "rotate":
            nbytes = input_set_bytes(s0)
            if not linear and d is None:  # D as gemmtune counts it (src/tuner/evaluate.cpp), here Inductor's output
                nbytes += operand_geometry(shape, "D")["numel"] * s0[0].element_size()
            nsets = timing_sets(nbytes, torch.cuda.get_device_properties(dev).L2_cache_size)
            sets = [s0] + [inputs(shape, dev) for _ in range(nsets - 1)]
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
        c_us = row.get("compile_us", nan)
        print(f"{row['name']:{nw}} {row['m']:>5} {row['n']:>6} {row['k']:>6} {ep:14} | {row['eager_us']:9.1f} "
              f"{row['eager_tflops']:8.1f} | {c_us:10.1f} {row.get('compile_tflops', float('nan')):8.1f} | "
              f"{row['eager_us'] / c_us:13.3f} | {row.get('autotune_s', float('nan')):10.1f} | "
              f"{row.get('inductor_pick', '-')}", flush=True)
        write(out_path, suite, gpu, args, cache, options, rows)  # after each shape: a time limit keeps what was done
    print(f"wrote {out_path}", file=sys.stderr)
    return out_path


_TORCH_ERRORS = (RuntimeError, ValueError, NotImplementedError, TypeError)


def run_scaled(shape, args, dev, compile_spent):
    """Times the PyTorch peers of one scaled shape (scaled_fn): eager with use_fast_accum False ("eager") and True
    ("eager_fast", where torch allows it; never for weight-only), and torch.compile(mode="max-autotune-no-cudagraphs")
    of each ("compile", "compile_fast"). A mode torch refuses (a scale layout, fast accumulation with block scales, an
    output dtype) or that computes a wrong result is left out with the reason in row["unavailable"]; the run goes on.
    Returns (row, seconds spent in torch.compile)."""
    import torch
    from torch._inductor.utils import run_and_get_code
    from triton.testing import do_bench
    m, n, k = shape["m"], shape["n"], shape["k"]
    dd = operand_spec(shape, "D")[0]
    tol = 0.05 if dd == "e4m3" else 1e-2  # an e4m3 D rounds each value to 3 mantissa bits (the tuner's tolerance)
    wo = weight_only(shape)
    row = {"name": shape["name"], "m": m, "n": n, "k": k, "epilogue": "none", "scaling": scaling_of(shape),
           "A": shape["A"], "B": shape["B"], "D": shape["D"], "amax": bool(shape.get("amax")),
           "peer": ("weight-only: F.linear(x, w.to(bf16) * scale_b) * scale_a" if wo else "torch._scaled_mm"),
           "unavailable": {}}
    fast = [False] if wo or args.fast_accum == "off" else [False, True]

    def judged(out, s, v, v_amax):
        """("", error) when out matches the fp64 reference, else (why not, None). An e4m3 D's scale_result is also
        accepted as a divisor (torch's CPU kernel divides, cuBLASLt multiplies): only the speed is measured here."""
        err = scaled_error(out, v, v_amax, s[4])
        if s[4] is not None and not isinstance(out, tuple) and not err <= tol:
            alt = scaled_error(out, v, v_amax, s[4], divide=True)
            if alt <= tol:
                row["scale_result"] = "divides"
                return "", alt
        if not math.isfinite(err) or err > tol:
            return f"output error {err:.3g} against fp64 (tolerance {tol})", None
        return "", err

    def checked(f, s, v, v_amax):
        """("", error) when f(*s) runs and matches the reference, else (why not, None)."""
        try:
            out = f(*s)
            torch.cuda.synchronize()
        except _TORCH_ERRORS as e:
            return one_line(e), None
        return judged(out, s, v, v_amax)

    # The scale layout: the first pitch of B's block grid that torch takes for the plain (eager, exact-accumulation)
    # call; every other mode runs on the same tensors.
    why = ""
    for pitch in scale_pitches(shape):
        s0 = scaled_inputs(shape, dev, pitch)
        ref, ref_amax = scaled_reference(shape, s0)
        why, err = checked(scaled_fn(shape, False), s0, ref, ref_amax)
        if not why:
            break
    if why:
        row["unavailable"]["eager"] = why  # printed under the shape's line
        return row, 0.0
    if scaling_of(shape) == "block":
        row["scale_b"] = f"{tuple(s0[3].shape)} strides {tuple(s0[3].stride())}"
    fns = {"eager": scaled_fn(shape, False)}
    row["eager_error"] = err
    if len(fast) > 1:
        f = scaled_fn(shape, True)
        why, err = checked(f, s0, ref, ref_amax)
        if why:
            row["unavailable"]["eager_fast"] = why
        else:
            fns["eager_fast"], row["eager_fast_error"] = f, err

    spent = 0.0
    want = not args.compile_filter or any(s and s in shape["name"] for s in args.compile_filter.split(","))
    over = args.compile_budget_s > 0 and compile_spent >= args.compile_budget_s
    if not args.no_compile and want and not over:
        torch._dynamo.reset()  # a fresh compile per shape (no recompile limit, no guards of earlier shapes)
        modes = [e for e in ("eager", "eager_fast") if e in fns]
        if args.compile_accum == "fast" and "eager_fast" in fns:
            modes = ["eager_fast"]  # one Inductor autotune per shape: the faster accumulation, the stricter peer
        for eager_mode in modes:
            suffix = eager_mode[len("eager"):]
            mode = "compile" + suffix
            cfn = torch.compile(fns[eager_mode], mode="max-autotune-no-cudagraphs", dynamic=False)
            torch.cuda.synchronize()
            t_c = time.perf_counter()
            try:
                out, codes = run_and_get_code(cfn, *s0)  # traces, compiles and autotunes here
                torch.cuda.synchronize()
            except Exception as e:  # an Inductor failure on one shape must not end the whole run
                spent += time.perf_counter() - t_c
                row["unavailable"][mode] = "torch.compile failed: " + one_line(e, 300)
                continue
            autotune_s = time.perf_counter() - t_c
            spent += autotune_s
            why, err = judged(out, s0, ref, ref_amax)
            if why:
                row["unavailable"][mode] = why
                continue
            fns[mode] = cfn
            row.update({f"{mode}_error": err, f"autotune{suffix}_s": autotune_s,
                        f"inductor_pick{suffix}": inductor_pick(codes)})
    del ref

    # Timed as the bf16 shapes are: each mode's input sets rotated (or do_bench), CUDA-graph replays, the modes
    # alternating for --rounds rounds, the median of the rounds.
    if args.timing == "rotate":
        nbytes = input_set_bytes(s0) + m * n * ELEM_BYTES[dd]  # the output, which each call allocates
        nsets = timing_sets(nbytes, torch.cuda.get_device_properties(dev).L2_cache_size)
        sets = [s0] + [scaled_inputs(shape, dev, pitch) for _ in range(nsets - 1)]
        wrap = (lambda f, s: graphed(lambda: f(*s))) if not args.no_graphs else (lambda f, s: lambda: f(*s))
        timed = {mode: [wrap(f, s) for s in sets] for mode, f in fns.items()}
        row["timing_sets"] = nsets
    else:
        timed = {mode: (graphed(lambda f=f: f(*s0)) if not args.no_graphs else (lambda f=f: f(*s0)))
                 for mode, f in fns.items()}
    times = {mode: [] for mode in timed}
    for _ in range(args.rounds):
        for mode, f in timed.items():
            times[mode].append(time_rotating(f, args.rep) / 1e3 if args.timing == "rotate" else
                               do_bench(f, rep=args.rep, return_mode="median"))
    nbytes, wbytes = scaled_bytes(shape)
    row.update({"bytes": nbytes, "weight_bytes": wbytes})
    flops = 2.0 * m * n * k
    for mode, ts in times.items():
        s = statistics.median(ts) * 1e-3
        row.update({f"{mode}_us": s * 1e6, f"{mode}_tflops": flops / s / 1e12, f"{mode}_gbps": nbytes / s / 1e9,
                    f"{mode}_weight_gbps": wbytes / s / 1e9, f"{mode}_us_rounds": [t * 1e3 for t in ts]})
    return row, spent


def scaled_header(nw):
    return (f"{'name':{nw}} {'M':>5} {'N':>6} {'K':>6} {'scaling':7} | {'eager us':>9} {'TFLOP/s':>8} {'GB/s':>6} "
            f"{'wGB/s':>6} | {'fast us':>9} {'TFLOP/s':>8} | {'compile us':>10} {'TFLOP/s':>8} | {'c.fast us':>9} "
            f"{'TFLOP/s':>8} | {'autotune s':>10} | inductor pick (fast accum)")


def scaled_line(row, nw):
    """One printed line of a scaled shape's peers (eager: torch._scaled_mm or the weight-only dequant + F.linear;
    fast: use_fast_accum=True; GB/s: A, B, D and scales once; wGB/s: the weight's bytes alone)."""
    g = lambda key, w, p: _num(row.get(key), w, p)  # noqa: E731
    sc = row["scaling"] + ("/w8" if row["peer"].startswith("weight-only") else "")
    line = (f"{row['name']:{nw}} {row['m']:>5} {row['n']:>6} {row['k']:>6} {sc:7} | {g('eager_us', 9, 1)} "
            f"{g('eager_tflops', 8, 1)} {g('eager_gbps', 6, 0)} {g('eager_weight_gbps', 6, 0)} | "
            f"{g('eager_fast_us', 9, 1)} {g('eager_fast_tflops', 8, 1)} | {g('compile_us', 10, 1)} "
            f"{g('compile_tflops', 8, 1)} | {g('compile_fast_us', 9, 1)} {g('compile_fast_tflops', 8, 1)} | "
            f"{g('autotune_s', 10, 1)} | {row.get('inductor_pick', '-')}"
            + (f" ({row['inductor_pick_fast']})" if row.get("inductor_pick_fast") else ""))
    for mode, why in row.get("unavailable", {}).items():
        line += f"\n    {mode}: {why}"
    return line

def write(out_path, suite, gpu, args, cache, options, rows):
    import torch
    import triton
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    meta = {"suite": suite.get("name"), "gpu": gpu, "torch": torch.__version__, "triton": triton.__version__,
            "cuda": torch.version.cuda, "host": platform.node(),
            "timing": ("median of per-launch CUDA events over rotated input sets (>= 2x L2 between reads of a set)"
                       if args.timing == "rotate" else "triton.testing.do_bench median (256 MB memset between runs)")
                      + ("" if args.no_graphs else ", CUDA-graph replays"),
            "modes": {"eager": "F.linear (cuBLAS), or torch.matmul of the strided views a row's 'operands' names, "
                               "+ separate elementwise ops; a scaled (fp8) row: torch._scaled_mm (cuBLASLt) with "
                               "use_fast_accum=False, or for weight-only fp8 (16-bit A) F.linear(x, w.to(bf16) * "
                               "scale_b) * scale_a",
                      "eager_fast": "a scaled row: torch._scaled_mm with use_fast_accum=True",
                      "compile": "torch.compile(mode='max-autotune-no-cudagraphs') of the eager function",
                      "compile_fast": "a scaled row: torch.compile of eager_fast"},
            "fast_accum": args.fast_accum,
            "autotune_s": "wall time of the first compiled call (trace, Inductor compile, autotune), cold cache "
                          "unless inductor_cache was given",
            "inductor_cache": cache, "fresh_cache": not args.inductor_cache, "inductor_options": options,
            "rounds": args.rounds, "rep_ms": args.rep,
            "compile_filter": args.compile_filter, "compile_budget_s": args.compile_budget_s}
    tmp = out_path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump({"meta": meta, "results": rows}, fh, indent=2)
    os.replace(tmp, out_path)


def geomean(xs):
    xs = [x for x in xs if x is not None and math.isfinite(x) and x > 0]
    return (math.exp(sum(math.log(x) for x in xs) / len(xs)), len(xs)) if xs else (float("nan"), 0)


def _num(v, width, prec):
    """v right-aligned in width with prec decimals, "-" when there is no value."""
    if v is None or not math.isfinite(v):
        return f"{'-':>{width}}"
    return f"{v:{width}.{prec}f}"


def problem_shape(s):
    """A `gemmtune bench --json` row as a suite shape (name, m, n, k; A, B, D as "dtype:layout"; scaling, amax): from
    its "problem" object, else parsed from its problem string (`--m=1 --A=e4m3:row --B=e4m3:col --scaling=row`)."""
    p = s.get("problem") if isinstance(s.get("problem"), dict) else {"str": str(s.get("problem") or "")}
    text = p.get("str", "")
    opts = dict(re.findall(r"--(\w+)=(\S+)", text))
    shape = {"name": s.get("name", "?")}
    for d in "mnk":
        shape[d] = int(s.get(d) or p.get(d) or opts.get(d, 0))
    for w, layout in (("A", "row"), ("B", "col"), ("D", "row")):
        o = p.get(w)
        shape[w] = f"{o['dtype']}:{o['layout']}" if isinstance(o, dict) else opts.get(w, f"bf16:{layout}")
    shape["scaling"] = p.get("scaling") or opts.get("scaling", "none")
    shape["amax"] = bool(p.get("amax", re.search(r"--amax\b", text)))
    return shape


def scaling_group(shape):
    """The group of a shape in the geomeans by scaling: its scaling mode, "+w8a16" for weight-only fp8."""
    return scaling_of(shape) + ("+w8a16" if is_scaled(shape) and weight_only(shape) else "")


def report_lines(tj, g, twin=None):
    """The table of one suite, shape by shape: gemmtune's tuned winner (`gemmtune bench --json` g), cuBLASLt's
    default in the same run, Inductor max-autotune (this script's JSON tj; None: no Inductor columns' values) and,
    given `twin` (a `gemmtune bench --json` of the aligned twin suite, e.g. suites/unaligned_padded.json), the twin's
    winner of the same name.
    Quotients: "x cuBLAS" = cuBLASLt default us / gemmtune us; Inductor's "x cuBLAS" = F.linear (eager) us / Inductor
    us in this script's harness; "x inductor" = their quotient, each harness's cuBLAS the bridge; "abs x ind" =
    Inductor us / gemmtune us, printed when this script timed as gemmtune does (--timing rotate); "/ twin" = gemmtune
    us / the aligned twin's gemmtune us (1.00: the unaligned problem runs as fast as its aligned twin). Tuning time:
    gemmtune's tune wall (compile, verify, time; cold result cache when the bench ran without one) against
    Inductor's autotune_s. Geomeans over the shapes that have each quotient, then the shapes behind each goal.
    A suite with scaled (fp8) shapes gets more columns: the scaling ("+w8a16": weight-only), gemmtune's TFLOP/s and
    weight GB/s (W and its scales / time), torch._scaled_mm's us with exact and fast accumulation (the eager peer,
    "x cuBLAS"'s bridge the exact one), Inductor's us of each ("abs x ind fast" = Inductor with use_fast_accum=True
    us / gemmtune us), and the geomeans split by scaling."""
    tj = tj or {"meta": {}, "results": []}
    t = {r["name"]: r for r in tj["results"]}
    same_timing = tj["meta"].get("timing", "").startswith("median of per-launch")
    tw = {s["name"]: s for s in (twin or {}).get("shapes", []) if s.get("status") == "ok"}
    shapes = g["shapes"]
    probs = {s["name"]: problem_shape(s) for s in shapes}
    fp8 = any(is_scaled(p) for p in probs.values())
    nw = max([24] + [len(s["name"]) for s in shapes])
    out = []
    cards = [f"gemmtune {g.get('device', {}).get('name', '?')} {(g.get('finished_at') or '')[:10]}"]
    if tj.get("meta", {}).get("gpu"):
        cards.append(f"Inductor {tj['meta']['gpu']}")
    if twin is not None:
        cards.append(f"aligned twin ({twin.get('suite', '?')}) {twin.get('device', {}).get('name', '?')} "
                     f"{(twin.get('finished_at') or '')[:10]}")
    out.append(f"# {g.get('suite', '?')}: " + "; ".join(c.rstrip() for c in cards))
    gpus = {g.get("device", {}).get("name"), tj.get("meta", {}).get("gpu"), (twin or {}).get("device", {}).get("name")}
    if len(gpus - {None}) > 1:
        out.append("# note: these runs were measured on different GPUs; their quotients compare cards, not kernels")
    if fp8:
        hdr = (f"{'name':{nw}} | {'scaling':12} | {'gemmtune us':>11} {'TFLOP/s':>8} {'wGB/s':>6} {'cuBLAS us':>10} "
               f"{'x cuBLAS':>8} | {'scaled_mm us':>12} {'fast us':>9} | {'inductor us':>11} {'x cuBLAS':>8} "
               f"{'fast us':>9} | {'x inductor':>10} {'abs x ind':>9} {'abs x fast':>10} |")
    else:
        hdr = (f"{'name':{nw}} | {'gemmtune us':>11} {'cuBLAS us':>10} {'x cuBLAS':>8} | {'inductor us':>11} "
               f"{'x cuBLAS':>8} | {'x inductor':>10} {'abs x ind':>9} |")
    hdr += ((f" {'twin us':>9} {'/ twin':>7} |" if twin is not None else "")
            + f" {'tune s':>6} {'autotune s':>10} | gemmtune winner / inductor pick")
    out += [hdr, "-" * len(hdr)]
    q = {"cublas": [], "bridged": [], "absolute": [], "fast": [], "twin": []}
    by_group = {}
    behind, off_twin, tune_g, tune_i = [], [], [], []
    for s in shapes:
        if s.get("status") != "ok":
            out.append(f"{s['name']:{nw}} | gemmtune: {s.get('status', '?')} {s.get('reason', '')}".rstrip())
            continue
        r = t.get(s["name"])
        ours = s.get("speedup_vs_cublas")
        q["cublas"].append(ours)
        ind_us = r.get("compile_us") if r else None
        ind = r["eager_us"] / ind_us if ind_us and r.get("eager_us") else None
        bridged = ours / ind if ind and ours else None  # no bridge when cuBLASLt's default failed
        absolute = ind_us / s["us"] if ind_us and same_timing else None
        fast_us = r.get("compile_fast_us") if r else None
        fast = fast_us / s["us"] if fast_us and same_timing else None
        q["bridged"].append(bridged)
        q["absolute"].append(absolute)
        q["fast"].append(fast)
        grp = by_group.setdefault(scaling_group(probs[s["name"]]), {key: [] for key in q})
        for key, v in (("cublas", ours), ("bridged", bridged), ("absolute", absolute), ("fast", fast)):
            grp[key].append(v)
        vs_ind = absolute if same_timing else bridged
        if vs_ind is not None and vs_ind < 1.0:
            behind.append(f"{s['name']} {vs_ind:.3f}")
        twin_us = tw[s["name"]]["us"] if s["name"] in tw else None
        to_twin = s["us"] / twin_us if twin_us else None
        q["twin"].append(to_twin)
        if to_twin is not None and to_twin > 1.10:
            off_twin.append(f"{s['name']} {to_twin:.3f}")
        tune = s.get("tune", {})
        tune_s = tune.get("wall_ms", float("nan")) / 1e3 if not tune.get("cache_hit") else None
        autotune_s = r.get("autotune_s") if r else None
        if tune_s is not None and math.isfinite(tune_s) and autotune_s is not None:
            tune_g.append(tune_s)
            tune_i.append(autotune_s)
        unavailable = (r or {}).get("unavailable", {})
        pick = ((r or {}).get("inductor_pick")
                or ("torch refused it" if "eager" in unavailable else
                    "torch.compile failed" if r and ("compile_failed" in r or "compile" in unavailable) else "-"))
        if fp8:
            p = probs[s["name"]]
            wgbps = scaled_bytes(p)[1] / (s["us"] * 1e3) if is_scaled(p) and s.get("us") else None
            line = (f"{s['name']:{nw}} | {scaling_group(p):12} | {_num(s['us'], 11, 1)} {_num(s.get('tflops'), 8, 1)} "
                    f"{_num(wgbps, 6, 0)} {_num(s.get('cublas_us'), 10, 1)} {_num(ours, 8, 3)} | "
                    f"{_num((r or {}).get('eager_us'), 12, 1)} {_num((r or {}).get('eager_fast_us'), 9, 1)} | "
                    f"{_num(ind_us, 11, 1)} {_num(ind, 8, 3)} {_num(fast_us, 9, 1)} | {_num(bridged, 10, 3)} "
                    f"{_num(absolute, 9, 3)} {_num(fast, 10, 3)} |")
        else:
            line = (f"{s['name']:{nw}} | {_num(s['us'], 11, 1)} {_num(s.get('cublas_us'), 10, 1)} "
                    f"{_num(ours, 8, 3)} | {_num(ind_us, 11, 1)} {_num(ind, 8, 3)} | {_num(bridged, 10, 3)} "
                    f"{_num(absolute, 9, 3)} |")
        out.append(line + (f" {_num(twin_us, 9, 1)} {_num(to_twin, 7, 3)} |" if twin is not None else "")
                   + f" {_num(tune_s, 6, 1)} {_num(autotune_s, 10, 1)} | {s.get('winner', '?')} / {pick}")
    gm, n = geomean(q["cublas"])
    if n:
        out.append(f"geomean gemmtune x cuBLASLt default: {gm:.3f} over {n} shapes")
    gm, n = geomean(q["bridged"])
    if n:
        out.append(f"geomean gemmtune x Inductor: {gm:.3f} over {n} shapes (bridged by each harness's cuBLAS)")
    gm, n = geomean(q["absolute"])
    if n:
        out.append(f"geomean Inductor us / gemmtune us: {gm:.3f} over {n} shapes (same timing method)")
    if n or any(x is not None for x in q["bridged"]):
        out.append(f"behind Inductor ({'absolute' if same_timing else 'bridged'} < 1.0): "
                   + (", ".join(behind) if behind else "none"))
    if fp8:
        gm, n = geomean(q["fast"])
        if n:
            out.append(f"geomean Inductor (use_fast_accum=True) us / gemmtune us: {gm:.3f} over {n} shapes")
        out.append("geomean by scaling: x cuBLASLt default | x Inductor (bridged) | Inductor us / gemmtune us | "
                   "Inductor fast-accum us / gemmtune us  (shapes)")
        for name, grp in by_group.items():
            cells = []
            for key in ("cublas", "bridged", "absolute", "fast"):
                gm, n = geomean(grp[key])
                cells.append(f"{gm:.3f} ({n})" if n else "-")
            out.append(f"  {name:12} " + " | ".join(cells))
    if twin is not None:
        gm, n = geomean(q["twin"])
        out.append(f"geomean gemmtune us / aligned twin us: {gm:.3f} over {n} shapes "
                   f"({sum(1 for s in shapes if s.get('status') == 'ok') - n} without a twin result)")
        out.append("slower than the aligned twin by more than 10%: " + (", ".join(off_twin) if off_twin else "none"))
    if tune_g:
        out.append(f"tuning time, sum over {len(tune_g)} shapes: gemmtune {sum(tune_g):.1f} s, "
                   f"Inductor {sum(tune_i):.1f} s")
    return out


def report(torch_json, gemmtune_json, twin_json=""):
    """Prints report_lines for the files (torch_json "-": gemmtune and its twin alone)."""
    def load(path):
        with open(path) as fh:
            return json.load(fh)
    tj = None if torch_json == "-" else load(torch_json)
    print("\n".join(report_lines(tj, load(gemmtune_json), load(twin_json) if twin_json else None)))


def gpu_slug(name):
    """The GPU part of a results file name (bench/README.md): "NVIDIA H100 80GB HBM3" -> "h100"."""
    m = re.search(r"\b([A-Z]+\d{2,4}[A-Za-z]*)\b", name.replace("NVIDIA", ""))
    return (m.group(1) if m else name.replace(" ", "_").replace("/", "_")).lower()


def _torch_scale_layout_ok(shape, geo):
    """torch._scaled_mm's checks of block scales (ATen's is_blockwise_1x128_scaling / is_blockwise_128x128_scaling,
    the latter on b.t() and scale_b.t()), restated over sizes and strides: A 1x128, B 128x128 with a row pitch of
    ceil(K/128), or that rounded up to 4 in the releases that want 16-byte rows."""
    m, n, k = shape["m"], shape["n"], shape["k"]
    kb, nb = -(-k // 128), -(-n // 128)
    a, b = geo["a"], geo["b"]
    a_ok = a["size"] == (m, kb) and a["stride"] == (1, m)
    bt_size, bt_stride = b["size"][::-1], b["stride"][::-1]
    b_ok = bt_size == (nb, kb) and bt_stride[1] == 1 and bt_stride[0] in (kb, -(-kb // 4) * 4)
    return a_ok and b_ok


def self_test_fp8(suites):
    """The fp8 suites, the scaled path's rules and the scale layouts, without torch."""
    large, decode = suites["fp8_large"], suites["fp8_decode"]
    assert 18 <= len(large["shapes"]) <= 24 and 12 <= len(decode["shapes"]) <= 16
    for suite, ms in ((large, {2048, 4096, 8192}), (decode, {1, 4, 8, 16, 64, 128})):
        seen = set()
        for raw in suite["shapes"]:
            shape = resolve_shape(raw, suite)
            sc = scaling_of(shape)
            assert is_scaled(shape) and shape_reason(shape) == "", (raw, shape_reason(shape))
            assert shape["m"] in ms, raw
            # names: <model>_<proj>_m<M>[_w8a16]_<scaling>[_e4m3d][_amax]
            assert re.fullmatch(rf"\w+_m{shape['m']}(_w8a16)?_{sc}(_e4m3d)?(_amax)?|\w+_{sc}", raw["name"]), raw
            assert raw["name"].startswith("dsv3_") <= (sc == "block"), raw  # DeepSeek-V3: its block recipe
            assert not raw["name"].startswith("llama3_") or sc in ("row", "tensor"), raw
            assert ("_w8a16" in raw["name"]) == weight_only(shape), raw
            assert ("_e4m3d" in raw["name"]) == (operand_spec(shape, "D")[0] == "e4m3"), raw
            seen.add(scaling_group(shape) + ("+e4m3d" if "_e4m3d" in raw["name"] else ""))
        want = {"tensor", "row", "block", "tensor+e4m3d"} | ({"row+w8a16"} if suite is decode else set())
        assert want <= seen, (suite["name"], seen)

    base = {"name": "s", "m": 3, "n": 300, "k": 700, "A": "e4m3:row", "B": "e4m3:col", "D": "bf16:row"}
    block = resolve_shape(dict(base, scaling="block"), {})
    assert scale_pitches(block) == [6, 8] and scale_pitches(dict(block, k=512)) == [4]
    assert scale_pitches(dict(block, scaling="row")) == [0]
    for pitch in scale_pitches(block):
        geo = scale_geometry(block, pitch)
        assert _torch_scale_layout_ok(block, geo), geo
        m, kb, nb = 3, 6, 3
        # the torch views address the buffers as gemmtune's GemmArgs index them (gemmtune/problem.h)
        for i in range(m):
            for j in range(kb):
                assert i * geo["a"]["stride"][0] + j * geo["a"]["stride"][1] == j * m + i
        for j in range(kb):
            for q in range(nb):
                assert j * geo["b"]["stride"][0] + q * geo["b"]["stride"][1] == q * pitch + j
        assert geo["b"]["numel"] == nb * pitch and geo["a"]["numel"] == kb * m
    row = resolve_shape(dict(base, scaling="row"), {})
    assert scale_geometry(row) == {"a": {"numel": 3, "size": (3, 1), "stride": (1, 1)},
                                   "b": {"numel": 300, "size": (1, 300), "stride": (300, 1)}}
    wo = dict(row, A="bf16:row")
    assert weight_only(wo) and scale_geometry(wo)["b"]["size"] == (300, 1)
    assert scale_geometry(dict(row, scaling="tensor"))["a"] == {"numel": 1, "size": (), "stride": ()}
    # bytes: A 3 x 700 (1 B), W 300 x 700 (1 B) + 300 row scales, D 3 x 300 bf16, 3 row scales
    assert scaled_bytes(row) == (2100 + 210000 + 1200 + 1800 + 12, 210000 + 1200)
    assert scaled_bytes(wo)[0] == 4200 + 211200 + 1800 + 12
    for bad, needle in ((dict(row, A="e4m3:col"), "row-major"), (dict(row, batch=2), "one matrix"),
                        (dict(row, epilogue="bias"), "epilogue"), (dict(wo, scaling="block"), "block"),
                        (dict(row, D="e5m2:row"), "e4m3"), (dict(row, amax=True), "amax"),
                        (dict(row, scaling="none"), "tensor, row or block"), (dict(row, lda=800), "packed"),
                        (dict(row, B="bf16:col"), "fp8 B"), (dict(wo, D="e4m3:row"), "e4m3 D")):
        assert needle in shape_reason(bad), (bad, shape_reason(bad))
    assert shape_reason(dict(row, scaling="rowwise")) == "" and scaling_of({"scaling": "Blockwise"}) == "block"
    assert not is_linear(row) and not is_scaled(resolve_shape({"name": "b", "m": 1, "n": 8, "k": 8}, {}))

    # gemmtune bench rows: the problem object, or the problem string alone
    obj = {"name": "x", "m": 16, "n": 4096, "k": 14336,
           "problem": {"A": {"dtype": "bf16", "layout": "row"}, "B": {"dtype": "e4m3", "layout": "col"},
                       "D": {"dtype": "bf16", "layout": "row"}, "scaling": "row", "amax": False,
                       "str": "--m=16 --n=4096 --k=14336 --A=bf16:row --B=e4m3:col --D=bf16:row --scaling=row"}}
    p = problem_shape(obj)
    assert (p["A"], p["B"], p["scaling"], scaling_group(p)) == ("bf16:row", "e4m3:col", "row", "row+w8a16"), p
    p = problem_shape({"name": "y", "problem": "--m=64 --n=256 --k=512 --A=e4m3:row --B=e4m3:col --D=e4m3:row "
                                               "--scaling=tensor --amax"})
    assert (p["m"], p["n"], p["k"], p["D"], p["scaling"], p["amax"]) == (64, 256, 512, "e4m3:row", "tensor", True), p
    p = problem_shape({"name": "z", "m": 8, "n": 8, "k": 8, "problem": {"str": "--m=8 --n=8 --k=8"}})
    assert (p["A"], p["B"], scaling_group(p)) == ("bf16:row", "bf16:col", "none"), p

    # the report of an fp8 suite: its columns and the geomeans by scaling
    def gshape(name, us, cublas_us, a="e4m3", sc="row"):
        return {"name": name, "status": "ok", "us": us, "cublas_us": cublas_us, "speedup_vs_cublas": cublas_us / us,
                "tflops": 2.0 * 4096 ** 3 / us / 1e6, "m": 4096, "n": 4096, "k": 4096, "winner": "sm90:x",
                "tune": {"cache_hit": True},
                "problem": {"A": {"dtype": a, "layout": "row"}, "B": {"dtype": "e4m3", "layout": "col"},
                            "D": {"dtype": "bf16", "layout": "row"}, "scaling": sc}}
    g = {"suite": "fp8_large", "device": {"name": "NVIDIA H100 80GB HBM3"}, "finished_at": "2026-01-02T03:04:05Z",
         "shapes": [gshape("r1", 100.0, 110.0), gshape("r2", 100.0, 90.0), gshape("b1", 100.0, 120.0, sc="block"),
                    gshape("w1", 50.0, 50.0, a="bf16")]}
    tj = {"meta": {"gpu": "NVIDIA H100 80GB HBM3", "timing": "median of per-launch CUDA events over rotated sets"},
          "results": [{"name": "r1", "eager_us": 110.0, "eager_fast_us": 100.0, "compile_us": 120.0,
                       "compile_fast_us": 105.0, "autotune_s": 9.0, "inductor_pick": "triton 128x128x128"},
                      {"name": "r2", "eager_us": 88.0, "compile_us": 90.0, "autotune_s": 9.0,
                       "inductor_pick": "aten _scaled_mm (cuBLAS)"},
                      {"name": "b1", "eager_us": 120.0, "compile_us": 130.0,
                       "unavailable": {"eager_fast": "RuntimeError: no fast accum with block scales"}},
                      {"name": "w1", "unavailable": {"eager": "RuntimeError: x"}}]}
    lines = report_lines(tj, g)
    text = "\n".join(lines)
    rows = {ln.split("|")[0].strip(): [c.split() for c in ln.split("|")[1:]] for ln in lines[3:] if "|" in ln}
    assert rows["r1"][0] == ["row"] and rows["r1"][1][:1] == ["100.0"], rows["r1"]
    # TFLOP/s 1374.4; W + row scales = 4096 * 4096 + 4 * 4096 bytes in 100 us = 168 GB/s
    assert rows["r1"][1] == ["100.0", "1374.4", "168", "110.0", "1.100"], rows["r1"]
    assert rows["r1"][2] == ["110.0", "100.0"] and rows["r1"][3] == ["120.0", "0.917", "105.0"], rows["r1"]
    assert rows["r1"][4] == ["1.200", "1.200", "1.050"], rows["r1"]  # bridged 1.1 / (110 / 120)
    assert rows["w1"][0] == ["row+w8a16"] and rows["w1"][2] == ["-", "-"], rows["w1"]
    assert rows["b1"][0] == ["block"] and rows["b1"][3][2] == "-", rows["b1"]
    for needle in ("geomean by scaling", f"  row          {(1.1 * 0.9) ** 0.5:.3f} (2) | ",
                   "  block        1.200 (1) | ", "  row+w8a16    1.000 (1) | - | - | -",
                   "geomean Inductor (use_fast_accum=True) us / gemmtune us: 1.050 over 1 shapes"):
        assert needle in text, (needle, text)


def self_test_fp8_torch():
    """With torch importable (CPU is enough): the scale tensors of every mode dequantize as gemmtune's index rules
    say, element by element on a small shape, and torch's CPU _scaled_mm (tensor and row scaling where this torch
    has it) matches the fp64 reference. Returns a note for the summary line."""
    try:
        import torch
    except ImportError:
        return "torch not importable: scale tensors unchecked"
    torch.manual_seed(0)
    ran = []
    base = {"name": "t", "m": 3, "n": 300, "k": 400, "A": "e4m3:row", "B": "e4m3:col", "D": "bf16:row"}
    cases = [dict(base, scaling=sc) for sc in SCALINGS] + [
        dict(base, scaling="tensor", D="e4m3:row"), dict(base, scaling="tensor", D="e4m3:row", amax=True),
        dict(base, scaling="row", A="bf16:row"), dict(base, scaling="tensor", A="bf16:row"),
        dict(base, scaling="block", k=700), dict(base, scaling="block", m=1, n=129, k=129)]
    for case in cases:
        shape = resolve_shape(case, {})
        assert shape_reason(shape) == "", (case, shape_reason(shape))
        m, n, k = shape["m"], shape["n"], shape["k"]
        sc = scaling_of(shape)
        for pitch in scale_pitches(shape):
            s = scaled_inputs(shape, "cpu", pitch)
            a, w, sa, sb, sd = s
            v, v_amax = scaled_reference(shape, s)
            fa = sa.as_strided((sa.untyped_storage().nbytes() // 4,), (1,)).double()
            fb = sb.as_strided((sb.untyped_storage().nbytes() // 4,), (1,)).double()
            p = pitch or -(-k // SCALE_BLOCK)
            ad, wd = a.double(), w.double()
            for i, j in {(0, 0), (m - 1, n - 1), (m // 2, min(130, n - 1)), (m - 1, min(257, n - 1))}:
                kk = torch.arange(k)
                if sc == "tensor":
                    s_a, s_b = fa[0], fb[0]
                elif sc == "row":
                    s_a, s_b = fa[i], fb[j]
                else:
                    s_a, s_b = fa[(kk // 128) * m + i], fb[(j // 128) * p + kk // 128]
                want = (ad[i] * s_a * wd[j] * s_b).sum().item()
                assert abs(want - v[i, j].item()) <= 1e-9 * max(1.0, abs(want)), (case, i, j, want, v[i, j].item())
            assert abs(v_amax - v.abs().max().item()) == 0.0
            try:
                out = scaled_fn(shape, False)(*s)
            except (RuntimeError, ValueError, NotImplementedError):
                continue  # this torch's CPU _scaled_mm lacks the mode (block scales are GPU-only)
            err = min(scaled_error(out, v, v_amax, sd), scaled_error(out, v, v_amax, sd, divide=True))
            assert err <= (0.05 if sd is not None else 1e-2), (case, err)
            ran.append(sc)
    return f"scale tensors checked with torch {torch.__version__}, CPU _scaled_mm ran {len(ran)} cases"


def self_test(root):
    """Checks, without torch or a GPU: every suite's shapes resolve and either run or carry a reason; the shapes this
    script ran before as F.linear still take that path; each operand view stays inside its allocation and its base
    pointer has the declared alignment; suites/unaligned_padded.json is the aligned twin of suites/unaligned.json;
    the report on synthetic JSON (every column, geomean and list)."""
    import contextlib
    import glob
    import io
    suites = {}
    for path in sorted(glob.glob(os.path.join(root, "suites", "*.json"))):
        with open(path) as fh:
            suite = json.load(fh)
        suites[os.path.basename(path)[:-5]] = suite
        for raw in suite["shapes"]:
            if "groups" in raw or "groups" in suite:  # grouped GEMMs are bench/moe.py's (its own self-test)
                continue
            shape = resolve_shape(raw, suite)
            why = shape_reason(shape)
            old = (shape["batch"] == 1 and (shape["A"], shape["B"], shape["D"]) == ("bf16:row", "bf16:col", "bf16:row")
                   and not any(key.startswith(("ld", "align_")) for key in raw))
            assert not old or (is_linear(shape) and not why), (path, raw)  # the F.linear path, as before
            if why:
                continue
            for w in "ABD":
                g = operand_geometry(shape, w)
                last = g["offset"] + sum((n - 1) * st for n, st in zip(g["size"], g["stride"]))
                assert last + 1 == g["numel"], (path, shape["name"], w, g)
                assert g["offset"] * ELEM_BYTES[g["dtype"]] % 16 == g["align"] % 16, (path, shape["name"], w, g)
    unaligned, padded = suites["unaligned"], suites["unaligned_padded"]
    assert len(unaligned["shapes"]) >= 14
    for u, p in zip(unaligned["shapes"], padded["shapes"], strict=True):
        u, p = resolve_shape(u, unaligned), resolve_shape(p, padded)
        assert shape_reason(u) == "" and shape_reason(p) == "", (u, p)
        assert aligned_twin(u) == p, f"unaligned_padded.json '{p['name']}' is not the twin of {u}: {aligned_twin(u)}"
        assert all(operand_geometry(p, w)["offset"] == 0 for w in "ABD")

    # operand views of the general path
    sliced = resolve_shape({"name": "s", "m": 2048, "n": 4096, "k": 4096, "lda": 4099, "align_a": 2}, {})
    g = operand_geometry(sliced, "A")
    assert (g["size"], g["stride"], g["offset"], g["numel"]) == ((2048, 4096), (4099, 1), 1, 1 + 2047 * 4099 + 4096)
    assert not is_linear(sliced) and describe(sliced) == "A row ld=4099 +1 el, B col, D row", describe(sliced)
    dcol = resolve_shape({"name": "d", "m": 2047, "n": 4096, "k": 64, "D": "bf16:col"}, {})
    g = operand_geometry(dcol, "D")
    assert (g["size"], g["stride"], g["packed"]) == ((2047, 4096), (1, 2047), True)
    bat = resolve_shape({"name": "b", "m": 512, "n": 512, "k": 128, "batch": 32, "B": "bf16:row"}, {})
    assert operand_geometry(bat, "B")["size"] == (32, 128, 512)
    assert operand_geometry(bat, "B")["stride"] == (65536, 512, 1)
    assert operand_geometry(dict(bat, B="bf16:col"), "B")["stride"] == (65536, 1, 128)
    assert operand_geometry(dict(bat, ldd=520, align_d=4), "D")["stride"] == (512 * 520, 520, 1)
    assert operand_geometry(dict(bat, align_d=4), "D")["offset"] == 2
    assert "copy_" in describe(dict(bat, ldd=520)) and describe(bat).startswith("batch 32: ")
    assert describe(dict(bat, align_a=8)) == "batch 32: A row +4 el, B row, D row", describe(dict(bat, align_a=8))
    assert "less than" in shape_reason(dict(sliced, lda=4000))
    assert "one dtype" in shape_reason(dict(sliced, D="f32:row"))
    assert "epilogue" in shape_reason(dict(sliced, epilogue="relu"))
    assert is_linear(resolve_shape({"name": "l", "m": 16, "n": 4096, "k": 4096, "epilogue": "silu_glu"}, {}))
    # twins: only contiguous extents and pitches move
    tw = aligned_twin(resolve_shape({"name": "t", "m": 1, "n": 4095, "k": 4100, "ldb": 4101, "align_b": 4,
                                     "B": "bf16:row", "D": "bf16:col"}, {}))
    assert (tw["m"], tw["n"], tw["k"], tw["ldb"], "align_b" in tw) == (8, 4096, 4104, 4104, False), tw

    # the report
    def gshape(name, us, cublas_us, status="ok"):
        return {"name": name, "status": status, "us": us, "cublas_us": cublas_us, "speedup_vs_cublas": cublas_us / us if us else 0.0,
                "winner": f"sm90:{name}", "tune": {"cache_hit": False, "wall_ms": 2000.0}, "reason": "no candidate"}
    g = {"suite": "unaligned", "device": {"name": "NVIDIA H100 80GB HBM3"}, "finished_at": "2026-01-02T03:04:05Z",
         "shapes": [gshape("lm_head", 100.0, 200.0), gshape("tp_k4100", 50.0, 40.0), gshape("broken", 0, 0, "failed"),
                    gshape("bmm", 10.0, 10.0), dict(gshape("nocublas", 10.0, 1.0), cublas_us=None,
                                                    speedup_vs_cublas=None)]}
    tj = {"meta": {"gpu": "NVIDIA H100 80GB HBM3", "timing": "median of per-launch CUDA events over rotated input sets"},
          "results": [{"name": "lm_head", "eager_us": 210.0, "compile_us": 120.0, "autotune_s": 30.0,
                       "inductor_pick": "triton 128x128x64"},
                      {"name": "tp_k4100", "eager_us": 44.0, "compile_us": 45.0, "autotune_s": 20.0,
                       "inductor_pick": "aten mm (cuBLAS)"}]}
    twin = {"suite": "unaligned_padded", "device": {"name": "NVIDIA H100 80GB HBM3"},
            "shapes": [gshape("lm_head", 95.0, 190.0), gshape("tp_k4100", 40.0, 40.0), gshape("bmm", 10.0, 10.0, "failed")]}
    lines = report_lines(tj, g, twin)
    text = "\n".join(lines)
    row = {ln.split("|")[0].strip(): [c.split() for c in ln.split("|")[1:]] for ln in lines[3:] if "|" in ln}
    assert "different GPUs" not in text
    mixed = report_lines(tj, g, dict(twin, device={"name": "NVIDIA H200"}))
    assert mixed[1].startswith("# note: these runs were measured on different GPUs"), mixed[:2]
    # lm_head: 100 us vs cuBLAS 200 (2.000x), Inductor 120 us (x cuBLAS 1.75), bridged 2/1.75, absolute 1.2, twin 95
    assert row["lm_head"][0] == ["100.0", "200.0", "2.000"], row["lm_head"]
    assert row["lm_head"][1] == ["120.0", "1.750"] and row["lm_head"][2] == ["1.143", "1.200"], row["lm_head"]
    assert row["lm_head"][3] == ["95.0", "1.053"] and row["lm_head"][4] == ["2.0", "30.0"], row["lm_head"]
    assert row["tp_k4100"][2] == ["0.818", "0.900"] and row["tp_k4100"][3] == ["40.0", "1.250"], row["tp_k4100"]
    assert row["bmm"][1] == ["-", "-"] and row["bmm"][3] == ["-", "-"], row["bmm"]
    assert "broken" in row and "failed" in row["broken"][0], row["broken"]
    assert row["nocublas"][0] == ["10.0", "-", "-"] and row["nocublas"][2] == ["-", "-"], row["nocublas"]
    for needle in ("# unaligned: gemmtune NVIDIA H100 80GB HBM3 2026-01-02; Inductor NVIDIA H100 80GB HBM3; "
                   "aligned twin (unaligned_padded)",
                   f"geomean gemmtune x cuBLASLt default: {(2.0 * 0.8 * 1.0) ** (1 / 3):.3f} over 3 shapes",
                   f"geomean gemmtune x Inductor: {(2 / 1.75 * 0.8 / (44 / 45)) ** 0.5:.3f} over 2 shapes",
                   f"geomean Inductor us / gemmtune us: {(1.2 * 0.9) ** 0.5:.3f} over 2 shapes",
                   "behind Inductor (absolute < 1.0): tp_k4100 0.900",
                   f"geomean gemmtune us / aligned twin us: {(100 / 95 * 1.25) ** 0.5:.3f} over 2 shapes "
                   "(2 without a twin result)",
                   "slower than the aligned twin by more than 10%: tp_k4100 1.250",
                   "tuning time, sum over 2 shapes: gemmtune 4.0 s, Inductor 50.0 s"):
        assert needle in text, (needle, text)
    bridged = report_lines(dict(tj, meta={"timing": "triton.testing.do_bench median"}), g)
    assert "behind Inductor (bridged < 1.0): tp_k4100 0.818" in bridged and "/ twin" not in bridged[1], bridged
    alone = report_lines(None, g, twin)
    assert not any(x.startswith(("geomean gemmtune x Inductor", "behind")) for x in alone), alone
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for name, obj in (("t", tj), ("g", g), ("w", twin)):
            paths.append(os.path.join(d, name + ".json"))
            with open(paths[-1], "w") as fh:
                json.dump(obj, fh)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            report(*paths)
        assert buf.getvalue() == text + "\n"
    self_test_fp8(suites)
    note = self_test_fp8_torch()
    print(f"torch_baseline.py self-test: ok ({len(suites)} suites; fp8: {note})")


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
    ap.add_argument("--compile-accum", choices=["both", "fast"], default="both",
                    help="scaled (fp8) shapes: compile both accumulations (default) or only use_fast_accum=True where "
                         "torch takes it (halves the Inductor autotuning time)")
    ap.add_argument("--fast-accum", choices=["both", "off"], default="both",
                    help="scaled (fp8) shapes: both = time torch._scaled_mm and its torch.compile with use_fast_accum "
                         "False and True (where torch allows it); off = False only")
    ap.add_argument("--resume", action="store_true",
                    help="keep the shapes already in the --json file and run only the others (a run cut short)")
    ap.add_argument("--compile-filter", default="",
                    help="comma-separated substrings: torch.compile only shapes whose name contains one (default: all)")
    ap.add_argument("--compile-budget-s", type=float, default=0,
                    help="stop compiling new shapes once this many seconds were spent in torch.compile (0: no cap)")
    ap.add_argument("--inductor-cache", default="",
                    help="Inductor cache directory (default: a fresh one, so autotune_s is a cold compile)")
    ap.add_argument("--report", default="", metavar="TORCH_JSON",
                    help="no GPU work: the table of gemmtune, cuBLASLt and Inductor from this script's JSON ('-': "
                         "none, gemmtune and its twin alone) and --gemmtune-json")
    ap.add_argument("--gemmtune-json", default="", help="`gemmtune bench --json` output of the same suite")
    ap.add_argument("--twin-json", default="",
                    help="`gemmtune bench --json` output of the aligned twin suite (suites/unaligned_padded.json): "
                         "adds its us per shape of the same name and the quotient unaligned / aligned twin")
    ap.add_argument("--self-test", action="store_true",
                    help="no GPU, no torch: check the suites, the operand geometry and the report on synthetic data")
    args = ap.parse_args()
    if args.self_test:
        self_test(root)
        return
    if args.report:
        if not args.gemmtune_json:
            raise SystemExit("--report needs --gemmtune-json")
        report(args.report, args.gemmtune_json, args.twin_json)
        return
    out = run(args, root)
    if args.gemmtune_json:
        report(out, args.gemmtune_json, args.twin_json)


if __name__ == "__main__":
    main()
