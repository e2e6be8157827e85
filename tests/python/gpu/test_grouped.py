"""gemmtune's grouped ops on a GPU against a per-group fp32 torch reference (fp32 of the dequantized values for fp8).

Run on the GPU host, from the repository root:
    PYTHONPATH=python GEMMTUNE_LIBRARY=build/libgemmtune.so python -m pytest -q tests/python/gpu/test_grouped.py

Inputs are fresh random values scaled so outputs are O(1). Only the rows a group owns are compared (the others are
undefined by contract). Tolerance: |y - ref| <= tol * (|ref| + mean|ref|), with tol 2e-2 for a bfloat16 output (8
mantissa bits: 0.4% rounding, plus accumulation order) and 5e-3 for float16 and float32 outputs.
"""
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

import gemmtune  # noqa: E402
import gemmtune.torch as gt  # noqa: E402

bf, f16, e4m3 = torch.bfloat16, torch.float16, torch.float8_e4m3fn
i32 = torch.int32
TOL = {bf: 2e-2, f16: 5e-3, torch.float32: 5e-3}


@pytest.fixture(scope="module", autouse=True)
def fast_tuning():
    saved = gt.options()
    gt.set_options(top_k=2)
    yield
    gt.set_options(**saved)


def rnd(*shape, dtype=bf, scale=1.0):
    return (torch.randn(*shape, device="cuda") * scale).to(dtype)


def weights(g, n, k, dtype=bf):
    """Expert weights (G, N, K) as models store them, seen as B (G, K, N): column-major per group."""
    return rnd(g, n, k, dtype=dtype, scale=k ** -0.5 if dtype in (bf, f16) else 1.0).transpose(-2, -1)


def offs_of(counts):
    return torch.tensor(counts, dtype=i32, device="cuda").cumsum(0).to(i32)


def check(y, ref, what=""):
    """y against the fp32 reference with the tolerance of y's dtype; names the worst element."""
    assert y.shape == ref.shape, f"{what}: shape {tuple(y.shape)} != {tuple(ref.shape)}"
    if y.numel() == 0:
        return
    tol = TOL[y.dtype]
    yf, rf = y.double(), ref.double()
    bound = tol * (rf.abs() + rf.abs().mean())
    err = (yf - rf).abs()
    assert torch.isfinite(yf).all(), f"{what}: non-finite output"
    bad = err > bound
    if bad.any():
        i = int(torch.argmax((err / bound).flatten()))
        raise AssertionError(f"{what}: {int(bad.sum())} of {y.numel()} elements off, worst at flat {i}: "
                             f"got {yf.flatten()[i].item():.6g}, want {rf.flatten()[i].item():.6g} (tol {tol})")


def check_contiguous(y, a, b, counts, what, scale_a=None, scale_b=None, bias=None, epi=None):
    """Each group's rows of y against a_g @ b_g in fp32 (+ bias, then epi: an fp32 function of the group's result)."""
    start = 0
    for g, c in enumerate(counts):
        ag, bg = a[start:start + c].float(), b[g].float()
        if scale_a is not None:
            ag, bg = ag * scale_a[start:start + c, None], bg * scale_b[g][None, :]
        ref = ag @ bg
        if bias is not None:
            ref = ref + bias.float()
        if epi is not None:
            ref = epi(ref)
        check(y[start:start + c], ref, f"{what}, group {g} ({c} rows at {start})")
        start += c


# Row counts per group: empty groups, 1-row groups, sizes not a multiple of any tile, everything in one group.
ROUTINGS = {
    "ragged": [1, 0, 130, 7, 255, 64, 0, 33],
    "one_hot": [0, 0, 0, 0, 0, 519, 0, 0],
    "singles": [1] * 8,
    "empty_first_last": [0, 100, 200, 0, 3, 90, 17, 0],
}


@pytest.mark.parametrize("routing", sorted(ROUTINGS))
@pytest.mark.parametrize("n,k", [(256, 128), (100, 72), (384, 1024)])
def test_contiguous_bf16(routing, n, k):
    counts = ROUTINGS[routing]
    m = sum(counts) + 5  # a few rows past the last group: not computed, not compared
    a, b = rnd(m, k), weights(8, n, k)
    y = gt.grouped_mm(a, b, offs_of(counts))
    assert y.shape == (m, n) and y.dtype == bf
    check_contiguous(y, a, b, counts, f"{routing} n={n} k={k}")


@pytest.mark.parametrize("groups", [1, 8, 64, 256])
def test_many_groups(groups):
    g = torch.Generator().manual_seed(groups)
    counts = torch.randint(0, 40, (groups,), generator=g).tolist()
    counts[0] = 0
    a, b = rnd(sum(counts), 64), weights(groups, 128, 64)
    y = torch.ops.gemmtune.grouped_mm(a, b, offs_of(counts))
    check_contiguous(y, a, b, counts, f"G={groups}")


def test_float16_float32_out_and_bias():
    counts = [17, 0, 64, 3]
    a, b, bias = rnd(84, 96, dtype=f16), weights(4, 160, 96, dtype=f16), rnd(160, dtype=f16)
    offs = offs_of(counts)
    check_contiguous(gt.grouped_mm(a, b, offs), a, b, counts, "f16")
    check_contiguous(gt.grouped_mm(a, b, offs, bias), a, b, counts, "f16 + bias", bias=bias)
    y = gt.grouped_mm(a, b, offs, out_dtype=torch.float32)
    assert y.dtype == torch.float32
    check_contiguous(y, a, b, counts, "f32 out")


def test_matches_torch_grouped_mm():
    counts = [300, 12, 0, 200]
    a, b = rnd(512, 256), weights(4, 512, 256)
    offs = offs_of(counts)
    ours, theirs = gt.grouped_mm(a, b, offs), torch._grouped_mm(a, b, offs)
    assert ours.shape == theirs.shape and ours.stride() == theirs.stride()
    check(ours[:512], theirs[:512].float(), "against torch._grouped_mm")


def test_batched_form():
    a, b = rnd(6, 77, 128), weights(6, 192, 128)
    y = gt.grouped_mm(a, b)
    assert y.shape == (6, 77, 192)
    check(y, a.float() @ b.float(), "3-D x 3-D")


@pytest.mark.parametrize("m_max", [1, 64, 100])
def test_masked(m_max):
    groups = 12
    counts = [(g * 37) % (m_max + 1) for g in range(groups)]
    counts[1], counts[2] = 0, m_max
    a, b = rnd(groups, m_max, 128), weights(groups, 256, 128)
    y = gt.grouped_mm_masked(a, b, torch.tensor(counts, dtype=i32, device="cuda"))
    assert y.shape == (groups, m_max, 256)
    for g, c in enumerate(counts):
        check(y[g, :c], a[g, :c].float() @ b[g].float(), f"masked group {g} ({c} of {m_max} rows)")


def test_fp8_row():
    counts = [65, 0, 1, 190, 31]
    m, n, k = sum(counts), 256, 256
    a, b = rnd(m, k, dtype=e4m3), weights(5, n, k, dtype=e4m3)
    sa, sb = torch.rand(m, device="cuda") / 16 + 0.01, torch.rand(5, n, device="cuda") / 16 + 0.01
    y = gt.scaled_grouped_mm(a, b, sa, sb, offs_of(counts))
    assert y.dtype == bf
    check_contiguous(y, a, b, counts, "fp8 row", sa, sb)
    try:  # a second opinion where torch takes these group sizes (some builds want multiples of 16)
        theirs = torch._scaled_grouped_mm(a, b, sa, sb, offs_of(counts), out_dtype=bf)
    except RuntimeError:
        return
    check(y[:m], theirs[:m].float(), "fp8 row against torch._scaled_grouped_mm")


def test_fp8_block():
    counts = [128, 0, 1, 300]
    m, n, k, G = sum(counts), 256, 384, 4
    kb, nb = k // 128, n // 128
    a, b = rnd(m, k, dtype=e4m3), weights(G, n, k, dtype=e4m3)
    sa = torch.rand(m, kb, device="cuda") / 16 + 0.01
    sb = torch.rand(G, kb, nb, device="cuda") / 16 + 0.01
    y = gt.scaled_grouped_mm(a, b, sa, sb, offs_of(counts))
    # The block-wise dequantization: A's scale per row and 128-wide K block, B's per group and 128 x 128 block.
    sa_full = sa.repeat_interleave(128, 1)[:, :k]
    sb_full = sb.repeat_interleave(128, 1).repeat_interleave(128, 2)[:, :k, :n]
    start = 0
    for g, c in enumerate(counts):
        ref = (a[start:start + c].float() * sa_full[start:start + c]) @ (b[g].float() * sb_full[g])
        check(y[start:start + c], ref, f"fp8 block group {g}")
        start += c


# -- fused epilogues ------------------------------------------------------------------------------------------------


def silu_glu(h):
    """SiLU-GLU over the halves (include/gemmtune/epilogue.h): gate = the first N/2 columns, up = the last N/2."""
    gate, up = h.chunk(2, dim=-1)
    return torch.nn.functional.silu(gate) * up


def gelu_tanh(h):
    return torch.nn.functional.gelu(h, approximate="tanh")


# Ragged with empty groups (the first, a middle and the last), a 1-row group, sizes off every tile: G = 8.
MOE_COUNTS = [0, 37, 1, 0, 130, 64, 9, 0]


@pytest.mark.parametrize("n,k", [(256, 64), (200, 72), (1024, 128)])
def test_silu_glu_contiguous(n, k):
    m = sum(MOE_COUNTS) + 3  # rows past the last group: not written, not compared
    a, b = rnd(m, k), weights(8, n, k)
    y = gt.grouped_mm(a, b, offs_of(MOE_COUNTS), epilogue="silu_glu")
    assert y.shape == (m, n // 2) and y.dtype == bf
    assert y.stride(0) == -(-(n // 2) // 8) * 8  # torch._grouped_mm's pitch: N/2 padded to 16 bytes
    check_contiguous(y, a, b, MOE_COUNTS, f"silu_glu n={n} k={k}", epi=silu_glu)


def test_gelu_tanh_with_bias():
    n, k = 160, 64
    a, b, bias = rnd(sum(MOE_COUNTS), k), weights(8, n, k), rnd(n, scale=0.5)
    offs = offs_of(MOE_COUNTS)
    y = gt.grouped_mm(a, b, offs, bias, epilogue="gelu_tanh")
    check_contiguous(y, a, b, MOE_COUNTS, "bias + gelu_tanh", bias=bias, epi=gelu_tanh)
    y = torch.ops.gemmtune.grouped_mm(a, b, offs, bias, None, "bias,relu")
    check_contiguous(y, a, b, MOE_COUNTS, "bias,relu", bias=bias, epi=torch.relu)


def test_glu_with_bias_before_and_after():
    n, k = 256, 64
    a, b = rnd(sum(MOE_COUNTS), k), weights(8, n, k)
    offs = offs_of(MOE_COUNTS)
    bias_n, bias_half = rnd(n, scale=0.5), rnd(n // 2, dtype=torch.float32, scale=0.5)
    y = gt.grouped_mm(a, b, offs, bias_n, epilogue="silu_glu")  # the bias first: N values, on gate and up
    check_contiguous(y, a, b, MOE_COUNTS, "bias,silu_glu", bias=bias_n, epi=silu_glu)
    y = gt.grouped_mm(a, b, offs, bias_half, epilogue="silu_glu,bias")  # after the GLU: N/2 values
    check_contiguous(y, a, b, MOE_COUNTS, "silu_glu,bias", epi=lambda h: silu_glu(h) + bias_half)


def test_silu_glu_masked_and_fp8_chains():
    groups, m_max, n, k = 8, 48, 256, 128
    counts = [0, 48, 1, 17, 0, 33, 48, 5]
    a, b = rnd(groups, m_max, k), weights(groups, n, k)
    y = gt.grouped_mm_masked(a, b, torch.tensor(counts, dtype=i32, device="cuda"), epilogue="silu_glu")
    assert y.shape == (groups, m_max, n // 2)
    for g, c in enumerate(counts):
        check(y[g, :c], silu_glu(a[g, :c].float() @ b[g].float()), f"masked silu_glu group {g} ({c} rows)")
    m = sum(MOE_COUNTS)
    a8, b8 = rnd(m, k, dtype=e4m3), weights(8, n, k, dtype=e4m3)
    sa, sb = torch.rand(m, device="cuda") / 16 + 0.01, torch.rand(8, n, device="cuda") / 16 + 0.01
    # fp8 inputs with a GLU: no backend fuses it (sm90's fp8 kernels take no GLU); a clear error naming the problem.
    with pytest.raises(gemmtune.Error, match="no backend supports this problem.*silu_glu"):
        gt.scaled_grouped_mm(a8, b8, sa, sb, offs_of(MOE_COUNTS), epilogue="silu_glu")
    y = gt.scaled_grouped_mm(a8, b8, sa, sb, offs_of(MOE_COUNTS), epilogue="gelu_tanh")
    assert y.shape == (m, n) and y.dtype == bf
    check_contiguous(y, a8, b8, MOE_COUNTS, "fp8 row gelu_tanh", sa, sb,
                     epi=lambda h: torch.nn.functional.gelu(h, approximate="tanh"))


def test_epilogue_backward_refuses():
    a = rnd(sum(MOE_COUNTS), 64).requires_grad_()
    w = rnd(8, 128, 64, scale=0.125)
    y = gt.grouped_mm(a, w.transpose(-2, -1), offs_of(MOE_COUNTS), epilogue="silu_glu")
    assert y.shape == (a.shape[0], 64)
    with pytest.raises(NotImplementedError, match="epilogue 'silu_glu' has no backward"):
        y.float().sum().backward()


def test_one_tuning_per_bucket_and_new_routings_without_sync():
    b = weights(8, 256, 128)
    gt.clear_selections()
    y = gt.grouped_mm(rnd(600, 128), b, offs_of([75] * 8))
    first = set(gt.selections().values())
    for m in (700, 1000, 513):  # the bucket of 1024: loaded, not tuned again
        counts = [m // 8] * 7 + [m - 7 * (m // 8)]
        a = rnd(m, 128)
        y = gt.grouped_mm(a, b, offs_of(counts))
        check_contiguous(y, a, b, counts, f"m={m}")
    assert set(gt.selections().values()) == first


def test_cuda_graph_replays_new_routings():
    a, b = rnd(512, 128), weights(8, 256, 128)
    offs = offs_of([64] * 8)
    gt.grouped_mm(a, b, offs)  # selected before the capture
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = gt.grouped_mm(a, b, offs)
    for counts in ([64] * 8, [0, 500, 1, 0, 0, 11, 0, 0], [0] * 7 + [512]):
        offs.copy_(offs_of(counts))  # the sizes live on the device: the same graph serves every routing
        g.replay()
        torch.cuda.synchronize()
        check_contiguous(y, a, b, counts, f"graph replay {counts}")


def test_compile_fullgraph():
    a, b, offs = rnd(300, 128), weights(4, 128, 128), offs_of([100, 0, 150, 50])

    @torch.compile(fullgraph=True)
    def f(a, b, offs):
        return torch.relu(torch.ops.gemmtune.grouped_mm(a, b, offs))

    y = f(a, b, offs)
    ref = gt.grouped_mm(a, b, offs).relu()
    check(y, ref.float(), "compiled")


def test_backward_matches_torch():
    counts = [40, 0, 88, 1]
    a = rnd(129, 64).requires_grad_()
    w = rnd(4, 96, 64, scale=0.125).requires_grad_()
    offs = offs_of(counts)
    grad = rnd(129, 96)
    ga, gw = torch.autograd.grad(gt.grouped_mm(a, w.transpose(-2, -1), offs), (a, w), grad)
    ra, rw = torch.autograd.grad(torch._grouped_mm(a, w.transpose(-2, -1), offs), (a, w), grad)
    check(ga, ra.float(), "dA")
    check(gw, rw.float(), "dW")


def test_bad_inputs_raise():
    a, b = rnd(64, 128), weights(4, 64, 128)
    with pytest.raises(gemmtune.InvalidInputError, match="int32"):
        gt.grouped_mm(a, b, offs_of([16] * 4).long())
    with pytest.raises(gemmtune.InvalidInputError, match="is on cpu"):
        gt.grouped_mm(a, b, offs_of([16] * 4).cpu())
    with pytest.raises(gemmtune.InvalidInputError, match="K-grouped"):
        gt.grouped_mm(a.t(), rnd(64, 32), offs_of([16] * 4))
    with pytest.raises(gemmtune.InvalidInputError, match="'residual', which reads a tensor"):
        gt.grouped_mm(a, b, offs_of([16] * 4), epilogue="residual")


@pytest.mark.parametrize("form", ["2d3d", "3d3d"])
def test_grouped_choice_under_torch_compile(form):
    """torch.compile (max-autotune) with gemmtune's grouped choice forced: the generated code calls it, with
    torch._grouped_mm's result on the rows the groups own."""
    from torch._inductor.utils import run_and_get_code
    from gemmtune.torch import inductor
    b = weights(8, 256, 512)
    if form == "2d3d":
        offs = torch.tensor([100, 300, 300, 620, 700, 900, 1000, 1100], device="cuda", dtype=i32)
        args = (rnd(1100, 512), b, offs)
    else:
        args = (rnd(8, 64, 512), b)
    gt.enable(fuse=False, choices=True)
    old = inductor._FORCE, inductor.MIN_GPU_US
    inductor._FORCE, inductor.MIN_GPU_US = True, 0.0  # these small problems are offered (the floor: the CPU tests)
    inductor.reset_stats()
    try:
        torch._dynamo.reset()
        with torch._inductor.config.patch(fx_graph_cache=False):
            out, code = run_and_get_code(torch.compile(lambda *t: torch._grouped_mm(*t),
                                                       mode="max-autotune-no-cudagraphs"), *args)
    finally:
        inductor._FORCE, inductor.MIN_GPU_US = old
        gt.disable()
        torch._dynamo.reset()
    assert "gemmtune_grouped_mm(" in "\n".join(code), inductor.stats()
    want = torch._grouped_mm(*args).float()
    err = (out.float() - want).abs().max().item()
    assert err <= 2e-2 * (want.abs().max().item() + 1), err
