"""torch.ops.gemmtune.* on a GPU against an fp32 (fp64 for the fp8 dequantization) torch reference.

Run on the GPU host, from the repository root:
    PYTHONPATH=python GEMMTUNE_LIBRARY=build/libgemmtune.so python -m pytest -q tests/python/gpu/test_ops.py

Inputs are fresh random values scaled so outputs are O(1). Tolerance: |y - ref| <= tol * (|ref| + mean|ref|), with
tol 2e-2 for a bfloat16 output (8 mantissa bits: 0.4% rounding, plus the activation's fp32 math) and 5e-3 for float16.
"""
import math
import threading
import time

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

import gemmtune  # noqa: E402
import gemmtune.torch as gt  # noqa: E402
from gemmtune.torch import _dispatch as D  # noqa: E402
from gemmtune.torch import ops  # noqa: E402

bf, f16, e4m3 = torch.bfloat16, torch.float16, torch.float8_e4m3fn
TOL = {bf: 2e-2, f16: 5e-3, torch.float32: 5e-3}


@pytest.fixture(scope="module", autouse=True)
def fast_tuning():
    saved = gt.options()
    gt.set_options(top_k=2)
    yield
    gt.set_options(**saved)


def rnd(*shape, dtype=bf, scale=1.0):
    return (torch.randn(*shape, device="cuda") * scale).to(dtype)


def check(y, ref, what=""):
    """y against the higher-precision reference with the tolerance of y's dtype; prints the worst element."""
    assert y.shape == ref.shape, f"{what}: shape {tuple(y.shape)} != {tuple(ref.shape)}"
    tol = TOL[y.dtype]
    yf, rf = y.double(), ref.double()
    bound = tol * (rf.abs() + rf.abs().mean())
    err = (yf - rf).abs()
    bad = err > bound
    assert torch.isfinite(yf).all(), f"{what}: non-finite output"
    if bad.any():
        i = int(torch.argmax((err / bound).flatten()))
        raise AssertionError(f"{what}: {int(bad.sum())} of {y.numel()} elements off, worst at flat {i}: "
                             f"got {yf.flatten()[i].item():.6g}, want {rf.flatten()[i].item():.6g} (tol {tol})")


def ref_mm(a, b):
    return a.float() @ b.float()


_ACT = {"relu": torch.relu, "gelu_tanh": lambda v: F.gelu(v, approximate="tanh"), "gelu_erf": F.gelu,
        "gelu": F.gelu, "silu": F.silu, "sigmoid": torch.sigmoid}


def parse_chain(chain):
    """The chain as [(name, [params])]: the reference reads the grammar on its own, not through the library."""
    return [(op.split(":")[0], op.split(":")[1:]) for op in "".join(chain.split()).lower().split(",") if op != "none"]


def has_glu(chain):
    return any(n.endswith("_glu") or n in ("swiglu", "glu") for n, _ in parse_chain(chain))


def ref_epilogue(v, chain, bias=None, residual=None, row_scale=None, col_scale=None):
    """gemmtune's chain (include/gemmtune/epilogue.h) in fp32 torch."""
    for name, params in parse_chain(chain):
        if name in ("bias", "bias_col"):
            v = v + bias.float()
        elif name == "bias_row":
            v = v + bias.float()[:, None]
        elif name in _ACT:
            v = _ACT[name](v)
        elif name.endswith("_glu") or name in ("swiglu", "glu"):
            act = _ACT[{"swiglu": "silu", "glu": "sigmoid"}.get(name, name[:-4])]
            inter = [p for p in params if p.startswith("interleave")]
            if inter:
                blk = int(inter[0][len("interleave"):])
                w = v.unflatten(-1, (-1, 2, blk))
                v = (act(w[..., 0, :]) * w[..., 1, :]).flatten(-2)
            else:
                h = v.shape[-1] // 2
                v = act(v[..., :h]) * v[..., h:]
        elif name == "row_scale":
            v = v * row_scale.float()[:, None]
        elif name == "col_scale":
            v = v * col_scale.float()
        elif name == "residual":
            v = v + residual.float()
        else:
            raise AssertionError(name)
    return v


# -- mm ------------------------------------------------------------------------------------------------------

SHAPES = [(1, 256, 512), (1, 4096, 4096), (7, 96, 64), (128, 256, 512), (333, 517, 129), (64, 64, 1003),
          (2048, 2048, 2048), (4095, 4097, 1031)]


@pytest.mark.parametrize("dtype", [bf, f16])
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_mm_shapes(m, n, k, dtype):
    a, w = rnd(m, k, dtype=dtype), rnd(n, k, dtype=dtype, scale=1 / math.sqrt(k))
    b = w.t()  # y = x @ W.T: B column-major, no copy
    check(torch.ops.gemmtune.mm(a, b), ref_mm(a, b), f"mm {m}x{n}x{k} {dtype}")
    check(ops.mm(a, b), ref_mm(a, b), f"ops.mm {m}x{n}x{k} {dtype}")


@pytest.mark.parametrize("la,lb", [("row", "row"), ("row", "col"), ("col", "row"), ("col", "col")])
@pytest.mark.parametrize("m,n,k", [(257, 383, 129), (1, 512, 256), (96, 1, 64)])
def test_mm_layouts(m, n, k, la, lb):
    a = rnd(m, k) if la == "row" else rnd(k, m).t()
    b = rnd(k, n, scale=k ** -0.5) if lb == "row" else rnd(n, k, scale=k ** -0.5).t()
    check(ops.mm(a, b), ref_mm(a, b), f"mm {la}/{lb} {m}x{n}x{k}")


def test_mm_non_contiguous_and_sliced_inputs():
    base = rnd(300, 700)
    for a in (base[:, 1:258],            # starts 2 bytes past an aligned address, ld 700
              base[:, 3:260],            # 6 bytes past
              base[5:205, ::2][:, :257],  # no unit stride: copied
              rnd(700, 300)[1:258, :200].t()):  # a column-major slice, ld 300
        b = rnd(96, a.shape[1], scale=a.shape[1] ** -0.5).t()
        check(ops.mm(a, b), ref_mm(a, b), f"mm a{tuple(a.shape)} strides {a.stride()}")


def test_gemm_into_sliced_outputs():
    a, b = rnd(200, 256), rnd(256, 96, scale=1 / 16)
    big = torch.full((200, 130), float("nan"), device="cuda", dtype=bf)
    out = big[:, 3:99]  # a row-major view at an offset, ld 130
    y = D.gemm(a, b, out=out)
    assert y is out
    check(out, ref_mm(a, b), "into a slice")
    assert big[:, :3].isnan().all() and big[:, 99:].isnan().all(), "wrote outside the slice"
    out2 = torch.zeros(200, 192, device="cuda", dtype=bf)[:, ::2]  # no unit stride: computed, then copied in
    D.gemm(a, b, out=out2)
    check(out2, ref_mm(a, b), "into a strided view")


def test_gemm_alpha_beta_c():
    a, b, c = rnd(130, 256), rnd(256, 72, scale=1 / 16), rnd(130, 72)
    y = D.gemm(a, b, c=c, alpha=0.5, beta=2.0)
    check(y, 0.5 * ref_mm(a, b) + 2.0 * c.float(), "alpha, beta, c")


# -- bmm -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bsz,m,n,k", [(4, 64, 96, 128), (3, 1, 256, 512), (5, 129, 65, 255)])
def test_bmm(bsz, m, n, k):
    a, b = rnd(bsz, m, k), rnd(bsz, k, n, scale=k ** -0.5)
    check(torch.ops.gemmtune.bmm(a, b), ref_mm(a, b), "bmm")
    bt = rnd(bsz, n, k, scale=k ** -0.5).transpose(1, 2)  # column-major batches
    check(ops.bmm(a, bt), ref_mm(a, bt), "bmm col-major b")


def test_bmm_broadcast():
    a = rnd(128, 256).expand(6, 128, 256)  # one A for every batch: batch stride 0, no copy
    b = rnd(6, 256, 80, scale=1 / 16)
    check(ops.bmm(a, b), ref_mm(a, b), "bmm broadcast a")
    b1 = rnd(256, 80, scale=1 / 16).expand(6, 256, 80)
    a6 = rnd(6, 128, 256)
    check(ops.bmm(a6, b1), ref_mm(a6, b1), "bmm broadcast b")
    check(D.gemm(a6, b1[0]), ref_mm(a6, b1), "gemm 3-D a with 2-D b")


# -- linear and the epilogues --------------------------------------------------------------------------------

EPILOGUES = ["none", "bias", "relu", "gelu_tanh", "gelu_erf", "silu", "sigmoid", "bias,relu", "bias,gelu_tanh",
             "silu_glu", "gelu_glu", "bias,silu_glu", "sigmoid_glu:interleave64", "residual", "bias,gelu_erf,residual",
             "silu_glu,residual", "row_scale,col_scale,relu"]


@pytest.mark.parametrize("epilogue", EPILOGUES)
@pytest.mark.parametrize("m,n,k", [(1, 512, 256), (200, 384, 320), (1023, 1536, 1000)])
def test_linear_epilogues(m, n, k, epilogue):
    x, w = rnd(m, k), rnd(n, k, scale=k ** -0.5)
    glu = has_glu(epilogue)
    n_out = n // 2 if glu else n
    bias = rnd(n) if "bias" in epilogue else None
    residual = rnd(m, n_out) if "residual" in epilogue else None
    if "row_scale" in epilogue:  # not a linear argument: through the dispatcher
        rs, cs = rnd(m, dtype=torch.float32), rnd(n, dtype=torch.float32)
        y = D.gemm(x, w.t(), epilogue=epilogue, row_scale=rs, col_scale=cs)
        check(y, ref_epilogue(ref_mm(x, w.t()), epilogue, row_scale=rs, col_scale=cs), epilogue)
        return
    y = torch.ops.gemmtune.linear(x, w, bias, epilogue, residual)
    ref = ref_epilogue(ref_mm(x, w.t()), epilogue, bias=bias, residual=residual)
    check(y, ref, f"linear {m}x{n}x{k} {epilogue}")
    assert y.shape == (m, n_out)


def test_linear_bias_without_chain_and_like_F_linear():
    x, w, b = rnd(77, 256, dtype=f16), rnd(192, 256, dtype=f16, scale=1 / 16), rnd(192, dtype=f16)
    check(ops.linear(x, w, b), F.linear(x.float(), w.float(), b.float()), "linear + bias")
    check(ops.linear(x, w, b, "gelu_tanh"), F.gelu(F.linear(x.float(), w.float(), b.float()), approximate="tanh"),
          "bias added before the chain")


@pytest.mark.parametrize("lead", [(), (3,), (2, 5), (4, 1, 3)])
def test_linear_leading_dims(lead):
    x, w = rnd(*lead, 128), rnd(256, 128, scale=1 / 12)
    r = rnd(*lead, 128)
    y = ops.linear(x, w, None, "silu_glu,residual", r)
    ref = ref_epilogue(x.float() @ w.float().t(), "silu_glu,residual", residual=r)
    check(y, ref, f"linear lead {lead}")
    xs = rnd(6, 4, 128).transpose(0, 1)  # leading dims that do not flatten to a view
    check(ops.linear(xs, w), xs.float() @ w.float().t(), "linear non-flattenable x")


def test_linear_under_autocast():
    x, w, b = torch.randn(64, 256, device="cuda"), torch.randn(128, 256, device="cuda") / 16, torch.randn(128,
                                                                                                        device="cuda")
    with torch.autocast("cuda", dtype=bf):
        y = torch.ops.gemmtune.linear(x, w, b)
        y2 = ops.linear(x, w, b, "relu")
        ref = F.linear(x, w, b)
    assert y.dtype == bf == ref.dtype and y2.dtype == bf
    check(y, F.linear(x.to(bf).float(), w.to(bf).float(), b.to(bf).float()), "autocast")
    with pytest.raises(gemmtune.InvalidInputError, match="float32"):
        ops.linear(x, w)  # float32 outside autocast


def test_errors_on_gpu():
    a, w = rnd(8, 64), rnd(96, 64)
    with pytest.raises(gemmtune.InvalidInputError, match="bias has 95 elements"):
        ops.linear(a, w, rnd(95))
    with pytest.raises(gemmtune.InvalidInputError, match="output's shape"):
        ops.linear(a, w, None, "residual", rnd(8, 95))
    with pytest.raises(gemmtune.InvalidInputError, match="cpu"):
        ops.mm(a, w.t().cpu())
    with pytest.raises(gemmtune.InvalidInputError, match="int8"):
        ops.mm(a.to(torch.int8), w.t())
    with pytest.raises(gemmtune.InvalidInputError, match="bogus"):
        ops.linear(a, w, None, "bogus")


def test_backward_of_mm_and_linear():
    a = rnd(32, 64).requires_grad_()
    w = rnd(48, 64, scale=1 / 8).requires_grad_()
    b = rnd(48).requires_grad_()
    ops.linear(a, w, b).float().sum().backward()
    ga, gw, gb = a.grad.clone(), w.grad.clone(), b.grad.clone()
    a.grad = w.grad = b.grad = None
    F.linear(a, w, b).float().sum().backward()
    for got, want, name in ((ga, a.grad, "x"), (gw, w.grad, "w"), (gb, b.grad, "b")):
        check(got, want.float(), "grad " + name)
    with pytest.raises(NotImplementedError, match="no backward"):
        ops.linear(a, w, None, "gelu_tanh").float().sum().backward()
    torch._dynamo.reset()
    a.grad = w.grad = b.grad = None
    torch.compile(lambda a, w, b: torch.ops.gemmtune.linear(a, w, b).float().sum(), fullgraph=True)(a, w, b).backward()
    for got, want, name in ((a.grad, ga, "x"), (w.grad, gw, "w"), (b.grad, gb, "b")):
        check(got, want.float(), "compiled grad " + name)


# -- scaled_mm -----------------------------------------------------------------------------------------------


def _quant(t, scale):
    return (t / scale).clamp(-448, 448).to(e4m3)


@pytest.mark.parametrize("m,n,k", [(1, 256, 512), (256, 384, 512), (129, 272, 640)])
@pytest.mark.parametrize("kind", ["tensor", "row", "block"])
def test_scaled_mm(m, n, k, kind):
    a, w = torch.randn(m, k, device="cuda"), torch.randn(n, k, device="cuda") / math.sqrt(k)
    kb, nb = -(-k // 128), -(-n // 128)
    if kind == "tensor":
        sa, sb = a.abs().max() / 448, w.abs().max() / 448
        qa, qw = _quant(a, sa), _quant(w, sb)
        da, dw = qa.double() * sa.double(), qw.double() * sb.double()
        sa, sb = sa.reshape(()).float(), sb.reshape(()).float()
    elif kind == "row":
        sa, sb = a.abs().amax(1, keepdim=True) / 448, w.abs().amax(1, keepdim=True) / 448  # (M, 1), (N, 1)
        qa, qw = _quant(a, sa), _quant(w, sb)
        da, dw = qa.double() * sa.double(), qw.double() * sb.double()
        sb = sb.t()  # (1, N)
    else:  # A 1x128 blocks, B 128x128 blocks
        ap = F.pad(a, (0, kb * 128 - k)).view(m, kb, 128)
        sa = ap.abs().amax(2) / 448 + 1e-12  # (M, Kb)
        qa = _quant(ap, sa[..., None]).view(m, kb * 128)[:, :k]
        da = (qa.double().view(m, -1) * sa.double().repeat_interleave(128, 1)[:, :k])
        wp = F.pad(w, (0, kb * 128 - k, 0, nb * 128 - n)).view(nb, 128, kb, 128)
        sw = wp.abs().amax((1, 3)) / 448 + 1e-12  # (Nb, Kb)
        qw = _quant(wp, sw[:, None, :, None]).view(nb * 128, kb * 128)[:n, :k]
        dw = qw.double() * sw.double().repeat_interleave(128, 0).repeat_interleave(128, 1)[:n, :k]
        sa = sa.t().contiguous().t()  # torch's outer-dim-major layout
        sb = sw.t()  # (Kb, Nb)
    b = qw.t()  # (K, N) column-major, as torch._scaled_mm wants
    ref = (da @ dw.t())
    y = torch.ops.gemmtune.scaled_mm(qa, b, sa, sb, out_dtype=bf)
    check(y, ref, f"scaled_mm {kind} {m}x{n}x{k}")
    bias = rnd(n)
    check(ops.scaled_mm(qa, b, sa, sb, bias, out_dtype=bf), ref + bias.double(), f"scaled_mm {kind} + bias")
    if kind != "block" and m > 1:  # torch's own fp8 GEMM agrees too
        t = torch._scaled_mm(qa, b, sa, sb, out_dtype=bf)
        check(y, t.float(), f"scaled_mm vs torch._scaled_mm {kind}")


def test_scaled_mm_fp8_output():
    m, n, k = 128, 256, 256
    a, w = torch.randn(m, k, device="cuda"), torch.randn(n, k, device="cuda") / 16
    one = torch.ones((), device="cuda")
    qa, qw = _quant(a, one), _quant(w, one)
    sd = torch.tensor(0.5, device="cuda")
    y = ops.scaled_mm(qa, qw.t(), one, one, scale_result=sd)  # out_dtype: a's (e4m3), as torch._scaled_mm
    assert y.dtype == e4m3
    ref = ((qa.float() @ qw.float().t()) * 0.5).clamp(-448, 448)
    err = (y.float() - ref).abs() / (ref.abs() + ref.abs().mean())
    assert err.max() < 0.07, f"e4m3 output: worst relative error {err.max().item():.3g} (e4m3 rounds to 1/16)"


# -- torch.compile, CUDA graphs, threads -----------------------------------------------------------------------


def test_compile_fullgraph_same_result():
    torch._dynamo.reset()
    x, w, b, r = rnd(4, 33, 256), rnd(512, 256, scale=1 / 16), rnd(512), rnd(4, 33, 256)

    def f(x, w, b, r):
        h = torch.ops.gemmtune.linear(x, w, b, "silu_glu", None)
        y = ops.linear(h, w[:256, :256], None, "residual", r)
        return ops.mm(y.reshape(-1, 256), w[:, :256].t()) * 0.5

    eager = f(x, w, b, r)
    compiled = torch.compile(f, fullgraph=True)(x, w, b, r)
    check(compiled, eager.float(), "compiled")


def test_cuda_graph_capture_and_replay():
    x, w, b = rnd(64, 256), rnd(384, 256, scale=1 / 16), rnd(384)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        ops.linear(x, w, b, "gelu_tanh")  # warm-up: selects the GEMM outside the capture
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = ops.linear(x, w, b, "gelu_tanh")
    for _ in range(2):
        x.copy_(rnd(64, 256))
        g.replay()
        torch.cuda.synchronize()
        check(y, ref_epilogue(ref_mm(x, w.t()), "bias,gelu_tanh", bias=b), "graph replay")


def test_capture_of_an_untuned_problem_raises():
    x, w = rnd(37, 256), rnd(136, 256)
    g = torch.cuda.CUDAGraph()
    with pytest.raises(gemmtune.Error, match="before the capture"):
        with torch.cuda.graph(g):
            ops.linear(x, w, None, "sigmoid")
    torch.cuda.synchronize()
    check(ops.linear(x, w, None, "sigmoid"), torch.sigmoid(ref_mm(x, w.t())), "after the failed capture")


def test_two_threads_two_streams():
    shapes = [(64, 256, 128), (100, 384, 256)]
    results, errors = {}, []
    gate = threading.Barrier(4)

    def worker(i):
        try:
            m, n, k = shapes[i % 2]
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                x, w = rnd(m, k), rnd(n, k, scale=k ** -0.5)
                gate.wait()
                ys = [ops.linear(x, w, None, "silu") for _ in range(20)]
            s.synchronize()
            results[i] = (ys, F.silu(ref_mm(x, w.t())))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    for i, (ys, ref) in results.items():
        for y in ys:
            check(y, ref, f"thread {i}")


def test_host_overhead_per_call():
    """Host cost of a call on a selection hit (printed; bounded loosely so a regression, e.g. a re-tune or a
    Problem built per call, fails)."""
    x, w, b = rnd(16, 4096), rnd(4096, 4096, scale=1 / 64), rnd(4096)
    for f, name in ((lambda: ops.linear(x, w, b, "gelu_tanh"), "ops.linear"),
                    (lambda: torch.ops.gemmtune.linear(x, w, b, "gelu_tanh", None), "torch.ops.gemmtune.linear"),
                    (lambda: F.linear(x, w, b), "F.linear (reference)")):
        with torch.no_grad():
            f()
            torch.cuda.synchronize()
            best = float("inf")
            for _ in range(5):
                t = time.perf_counter()
                for _ in range(200):
                    f()
                best = min(best, (time.perf_counter() - t) / 200 * 1e6)
                torch.cuda.synchronize()
        print(f"host us/call {name}: {best:.2f}")
        assert best < 60, f"{name}: {best:.1f} us of host time per call"
