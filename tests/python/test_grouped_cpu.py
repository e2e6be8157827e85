"""gemmtune.torch's grouped ops without a GPU: fake implementations (shapes, strides, dtypes as torch._grouped_mm's),
every error path, the Problem built from tensors (the transposed-weight view, offsets, fp8 scales), the selection by
M bucket and the launch's pointers (with a mocked Gemm), and the backward's formulas against torch on CPU."""
import pytest

torch = pytest.importorskip("torch")

import gemmtune  # noqa: E402
from gemmtune.torch import _dispatch as D  # noqa: E402
from gemmtune.torch import ops  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

bf, f16, e4m3 = torch.bfloat16, torch.float16, torch.float8_e4m3fn
i32 = torch.int32


def gbuild(op, a, b, offs=None, bias=None, scale_a=None, scale_b=None, masked=False, epilogue="none"):
    """The library's plan of a grouped call, as the ops ask for it."""
    kind = "grouped_masked" if masked else "scaled_grouped" if scale_a is not None else "grouped"
    return D.build(op, a, b, kind=kind, offs=offs, bias=bias, scale_a=scale_a, scale_b=scale_b, epilogue=epilogue)


def rnd(*shape, dtype=bf):
    return torch.randn(*shape).to(dtype)


def weights(g, n, k, dtype=bf, device="cpu"):
    """Expert weights as models store them, (G, N, K), seen as the GEMM's B (G, K, N): column-major per group."""
    return torch.randn(g, n, k, device=device).to(dtype).transpose(-2, -1)


def ends(counts):
    return torch.tensor(counts, dtype=i32).cumsum(0).to(i32)


# -- fake implementations --------------------------------------------------------------------------------------


@pytest.mark.parametrize("n,ld", [(96, 96), (100, 104), (1, 8), (4096, 4096)])
def test_contiguous_fake_matches_torch(n, ld):
    with FakeTensorMode():
        a = torch.empty(300, 64, device="cuda", dtype=bf)
        b = torch.empty(8, n, 64, device="cuda", dtype=bf).transpose(-2, -1)
        offs = torch.empty(8, device="cuda", dtype=i32)
        y = torch.ops.gemmtune.grouped_mm(a, b, offs)
        assert tuple(y.shape) == (300, n) and y.stride() == (ld, 1) and y.dtype == bf and y.device.type == "cuda"
        assert torch.ops.gemmtune.grouped_mm(a, b, offs, out_dtype=torch.float32).dtype == torch.float32


def test_fakes_keep_symbolic_sizes():
    """Traced with dynamic shapes (every input size symbolic): the output keeps the routed rows' symbol, and the
    masked form's group stride follows it; a padded row pitch holds for the traced width only."""
    from torch.fx.experimental.proxy_tensor import make_fx

    def out(fn, *inputs):
        gm = make_fx(fn, tracing_mode="symbolic")(*inputs)
        return next(n for n in gm.graph.nodes if n.op == "output").args[0].meta["val"]

    a, b, offs = rnd(300, 64), weights(8, 96, 64), ends([40] * 7 + [20])
    y = out(lambda a, b, o: torch.ops.gemmtune.grouped_mm(a, b, o, epilogue="silu_glu"), a, b, offs)
    assert isinstance(y.shape[0], torch.SymInt) and [D._size(n) for n in y.shape] == [300, 48]
    assert [D._size(n) for n in y.stride()] == [48, 1]
    a3, counts = rnd(8, 50, 64), torch.full((8,), 50, dtype=i32)
    y = out(torch.ops.gemmtune.grouped_mm_masked, a3, weights(8, 100, 64), counts)
    assert [D._size(n) for n in y.shape] == [8, 50, 100] and [D._size(n) for n in y.stride()] == [5200, 104, 1]
    assert y.stride()[0] == y.shape[1] * 104


def test_output_layout_is_torchs():
    # torch._grouped_mm runs on CPU: its output's shape matches ours (its CPU strides are packed; on CUDA both pad
    # rows to 16 bytes, see test_contiguous_fake_matches_torch).
    a, b = rnd(10, 16), weights(3, 20, 16)
    offs = ends([3, 0, 5])
    ref = torch._grouped_mm(a, b, offs)
    ours = ops._grouped_mm_fake(a.to("meta"), b.to("meta"), offs.to("meta"))
    assert ours.shape == ref.shape and ours.dtype == ref.dtype


def test_batched_and_masked_fakes():
    with FakeTensorMode():
        a = torch.empty(4, 33, 64, device="cuda", dtype=f16)
        b = torch.empty(4, 20, 64, device="cuda", dtype=f16).transpose(-2, -1)
        y = torch.ops.gemmtune.grouped_mm(a, b)
        assert tuple(y.shape) == (4, 33, 20) and y.stride() == (33 * 24, 24, 1) and y.dtype == f16
        counts = torch.empty(4, device="cuda", dtype=i32)
        y = torch.ops.gemmtune.grouped_mm_masked(a, b, counts)
        assert tuple(y.shape) == (4, 33, 20) and y.dtype == f16


def test_scaled_fakes_row_and_block():
    with FakeTensorMode():
        a = torch.empty(300, 256, device="cuda", dtype=e4m3)
        b = torch.empty(8, 384, 256, device="cuda", dtype=e4m3).transpose(-2, -1)
        offs = torch.empty(8, device="cuda", dtype=i32)
        f32 = dict(device="cuda", dtype=torch.float32)
        y = torch.ops.gemmtune.scaled_grouped_mm(a, b, torch.empty(300, **f32), torch.empty(8, 384, **f32), offs)
        assert tuple(y.shape) == (300, 384) and y.dtype == bf
        y = torch.ops.gemmtune.scaled_grouped_mm(a, b, torch.empty(300, 2, **f32), torch.empty(8, 2, 3, **f32), offs,
                                                 out_dtype=f16)
        assert tuple(y.shape) == (300, 384) and y.dtype == f16
        # The batched form's row scales have their shapes, but the library refuses row scaling of a batch: the fake
        # says so at trace time, as the launch would.
        a3 = torch.empty(8, 40, 256, device="cuda", dtype=e4m3)
        with pytest.raises(gemmtune.InvalidInputError, match="batched fp8 GEMMs take tensor scaling"):
            torch.ops.gemmtune.scaled_grouped_mm(a3, b, torch.empty(8, 40, **f32), torch.empty(8, 384, **f32))


def test_scaled_grouped_use_fast_accum_reaches_the_plan(monkeypatch):
    seen = []
    monkeypatch.setattr(D, "grouped", lambda *a, **kw: seen.append(kw["fp8_accum"]))
    a, b, offs = rnd(300, 256, dtype=e4m3), weights(8, 384, 256, dtype=e4m3), ends([30] * 8)
    sa, sb = torch.rand(300), torch.rand(8, 384)
    for fast in (False, True):
        ops._scaled_grouped_mm(a, b, sa, sb, offs, use_fast_accum=fast)
    assert seen == ["exact", "fast"]
    plan = D.build("t", a, b, offs=offs, scale_a=sa, scale_b=sb, kind="scaled_grouped", fp8_accum="fast")
    assert plan.problem.fp8_accum == "fast" and ":fp8acc=fast" in plan.key


def test_meta_tensors_and_plain_functions():
    a = torch.empty(300, 64, device="meta", dtype=bf)
    b = torch.empty(8, 96, 64, device="meta", dtype=bf).transpose(-2, -1)
    offs = torch.empty(8, device="meta", dtype=i32)
    assert tuple(ops.grouped_mm(a, b, offs).shape) == (300, 96)
    assert tuple(ops.grouped_mm_masked(a[:256].view(8, 32, 64), b, offs).shape) == (8, 32, 96)


def _bad_calls():
    f32 = torch.float32
    a, b, offs = (lambda: torch.empty(300, 64, device="cuda", dtype=bf),
                  lambda: torch.empty(8, 96, 64, device="cuda", dtype=bf).transpose(-2, -1),
                  lambda: torch.empty(8, device="cuda", dtype=i32))
    gm = torch.ops.gemmtune.grouped_mm
    sgm = torch.ops.gemmtune.scaled_grouped_mm
    e = lambda *s, dt=f32: torch.empty(*s, device="cuda", dtype=dt)  # noqa: E731
    return [
        (lambda: gm(a(), b(), offs().long()), "offs has dtype torch.int64"),
        (lambda: gm(a(), b(), offs()[:7]), "offs has 7 elements but mat_b holds 8 groups"),
        (lambda: gm(a(), b(), e(8, 2, dt=i32)), "offs must be 1-D"),
        (lambda: gm(a(), b(), e(16, dt=i32)[::2]), "offs must be contiguous"),
        (lambda: gm(a(), b()), "needs offs"),
        (lambda: gm(a().view(3, 100, 64), b()[:3], offs()[:3]), "takes no offs"),
        (lambda: gm(a(), e(64, 96, dt=bf), offs()), "K-grouped form"),
        (lambda: gm(a().view(3, 100, 64), e(64, 96, dt=bf), offs()[:3]), "N-grouped form"),
        (lambda: gm(a()[None, None], b(), offs()), "2-D or 3-D"),
        (lambda: gm(a()[:, :32], b(), offs()), r"contraction dims \(K\) differ"),
        (lambda: gm(a().view(3, 100, 64), b()), "mat_a holds 3 groups and mat_b 8"),
        (lambda: gm(a().float(), b(), offs()), "float32.*autocast"),
        (lambda: gm(a().to(e4m3), b().to(e4m3), offs()), "scaled_grouped_mm"),
        (lambda: gm(a(), b().half(), offs()), "give them one dtype"),
        (lambda: gm(a(), b(), offs(), e(8, 96, dt=bf)), "per-group biases are not supported"),
        (lambda: gm(a(), b(), offs(), e(96, dt=torch.int32)), "bias has dtype"),
        (lambda: gm(a(), b(), offs(), out_dtype=e4m3), "out_dtype"),
        (lambda: torch.ops.gemmtune.grouped_mm_masked(a(), b(), offs()), "masked form takes a \\(G, M_max, K\\)"),
        (lambda: torch.ops.gemmtune.grouped_mm_masked(a()[:256].view(8, 32, 64), b(), offs()[:4]), "counts has 4"),
        (lambda: sgm(a(), b(), e(300), e(8, 96), offs()), "must be float8"),
        (lambda: sgm(a().to(e4m3), b().to(e4m3), e(300), e(8, 96), offs(), scale_result=e(1)), "scale_result"),
        (lambda: sgm(a().to(e4m3), b().to(e4m3), e(300), e(8, 95), offs()), "no scaling gemmtune takes"),
        (lambda: sgm(a().to(e4m3), b().to(e4m3), e(300, 1), e(1, 96), offs()), "row-wise \\(scale_a \\(300,\\)"),
        (lambda: sgm(a().to(e4m3), b().to(e4m3), e(300, dt=bf), e(8, 96), offs()), "float32 scales"),
    ]


@pytest.mark.parametrize("i", range(len(_bad_calls())))
def test_fake_errors(i):
    with FakeTensorMode():
        call, match = _bad_calls()[i]
        with pytest.raises(gemmtune.InvalidInputError, match=match):
            call()


def test_cpu_tensors_are_refused_with_the_op_name():
    a, b, offs = rnd(30, 64), weights(4, 16, 64), ends([10, 5, 0, 15])
    with pytest.raises(gemmtune.InvalidInputError, match="gemmtune.grouped_mm: the inputs are CPU tensors"):
        ops.grouped_mm(a, b, offs)
    with pytest.raises(gemmtune.InvalidInputError, match="grouped_mm_masked: the inputs are CPU tensors"):
        torch.ops.gemmtune.grouped_mm_masked(a[:28].view(4, 7, 64), b, offs)


def test_errors_are_value_errors():
    with FakeTensorMode():
        with pytest.raises(ValueError):
            torch.ops.gemmtune.grouped_mm(torch.empty(3, 8, device="cuda", dtype=bf),
                                          torch.empty(2, 8, 4, device="cuda", dtype=bf),
                                          torch.empty(2, device="cuda", dtype=torch.int64))


# -- the Problem of a call -------------------------------------------------------------------------------------


def test_contiguous_problem_from_the_transposed_weight_view():
    a, b, offs = rnd(5000, 256), weights(8, 384, 256), ends([600] * 8)
    plan = gbuild("t", a, b, offs)
    p = plan.problem
    assert (p.m, p.n, p.k, p.batch, p.grouping, p.groups) == (5000, 384, 256, 1, "contiguous", 8)
    assert (p.a.layout, p.a.ld, p.a.batch_stride) == ("row", 256, 0)
    assert (p.b.layout, p.b.ld, p.b.batch_stride) == ("col", 256, 384 * 256)  # no copy: the view as it is
    assert (p.d.layout, p.d.ld) == ("row", 384) and not plan.copies
    assert "--groups=8" in plan.problem_text
    # Another token count of the same bucket shares the key: one tuning serves both.
    p2 = gbuild("t", rnd(8192, 256), b, offs).problem
    assert p2.key() == p.key()
    assert gbuild("t", rnd(8193, 256), b, offs).problem.key() != p.key()


def test_masked_and_batched_problems():
    a, b, counts = rnd(8, 64, 128), weights(8, 96, 128), torch.full((8,), 3, dtype=i32)
    p = gbuild("t", a, b, counts, masked=True).problem
    assert (p.m, p.batch, p.grouping, p.groups) == (64, 8, "masked", 8)
    assert (p.a.batch_stride, p.d.ld, p.d.batch_stride) == (64 * 128, 96, 64 * 96)
    p = gbuild("t", a, b).problem
    assert (p.m, p.batch, p.grouping, p.groups) == (64, 8, "none", 1)


def test_padded_output_pitch_and_bias():
    a, b, offs = rnd(100, 64), weights(4, 100, 64), ends([25] * 4)
    plan = gbuild("t", a, b, offs, bias=rnd(100, dtype=torch.float32))
    assert plan.problem.d.ld == 104 and plan.out_strides == (104, 1)
    assert plan.problem.epilogue == "bias:f32"


def test_a_without_unit_stride_is_copied_and_weights_row_major_are_not():
    a = rnd(64, 300)[:, ::2]  # (64, 150): no unit stride
    b = rnd(4, 150, 32)       # (G, K, N) row-major per group
    plan = gbuild("t", a, b, ends([16] * 4))
    assert plan.problem.b.layout == "row" and plan.problem.a.ld == 150 and plan.copies
    fixed = plan.fix(a=a, b=b)
    assert fixed["a"].is_contiguous() and torch.equal(fixed["a"], a) and fixed["b"] is b


def test_fp8_row_and_block_scales():
    a, b, offs = rnd(300, 256, dtype=e4m3), weights(8, 384, 256, dtype=e4m3), ends([30] * 8)
    sa, sb = torch.rand(300), torch.rand(8, 384)
    plan = gbuild("t", a, b, offs, scale_a=sa, scale_b=sb)
    assert plan.problem.scaling == "row" and not plan.copies and plan.problem.d.dtype == "bf16"
    sa, sb = torch.rand(300, 2), torch.rand(8, 2, 3)
    plan = gbuild("t", a, b, offs, scale_a=sa, scale_b=sb)
    assert plan.problem.scaling == "block"
    fixed = plan.fix(scale_a=sa, scale_b=sb)
    # gemmtune's block order in memory: scale_a[kb * M + m], scale_b[g][nb * Kb + kb].
    assert fixed["scale_a"].transpose(-2, -1).flatten()[1 * 300 + 7] == sa[7, 1]
    assert fixed["scale_b"].transpose(-2, -1).flatten()[5 * 6 + 2 * 2 + 1] == sb[5, 1, 2]
    # Scales already in gemmtune's order are read as they are.
    assert not gbuild("t", a, b, offs, scale_a=sa.t().contiguous().t(), scale_b=fixed["scale_b"]).copies


def test_library_check_messages_reach_the_caller():
    a, b = rnd(30, 64), weights(4, 16, 64)
    with pytest.raises(gemmtune.InvalidInputError, match="K is 0"):
        gbuild("t", rnd(30, 0), torch.empty(4, 0, 16, dtype=bf), ends([1] * 4))
    # Nothing to compute: no rows, no columns, or no group.
    assert gbuild("t", a[:0], b, ends([0] * 4)).empty
    assert gbuild("t", a, torch.empty(0, 64, 16, dtype=bf), torch.empty(0, dtype=i32)).empty
    assert gbuild("t", a[:0].view(0, 7, 64), b[:0]).empty


# -- the epilogue chain ------------------------------------------------------------------------------------------


def _fake_inputs(n, k=64, dtype=bf):
    a = torch.empty(300, k, device="cuda", dtype=dtype)
    b = torch.empty(8, n, k, device="cuda", dtype=dtype).transpose(-2, -1)
    return a, b, torch.empty(8, device="cuda", dtype=i32)


@pytest.mark.parametrize("n,ld,ld32", [(200, 104, 100), (96, 48, 48), (2, 8, 4), (4096, 2048, 2048)])
def test_glu_fakes_have_half_the_columns(n, ld, ld32):
    # The output pitch is N/2 padded to 16 bytes (ld elements of bf16, ld32 of float32).
    with FakeTensorMode():
        a, b, offs = _fake_inputs(n)
        y = torch.ops.gemmtune.grouped_mm(a, b, offs, None, None, "silu_glu")
        assert tuple(y.shape) == (300, n // 2) and y.stride() == (ld, 1) and y.dtype == bf
        y = torch.ops.gemmtune.grouped_mm(a, b, offs, out_dtype=torch.float32, epilogue="swiglu")
        assert tuple(y.shape) == (300, n // 2) and y.stride() == (ld32, 1)
        y = torch.ops.gemmtune.grouped_mm_masked(a[:256].view(8, 32, 64), b, offs, epilogue="gelu_tanh_glu")
        assert tuple(y.shape) == (8, 32, n // 2) and y.stride() == (32 * ld, ld, 1)
        y = torch.ops.gemmtune.grouped_mm(a[:256].view(8, 32, 64), b, epilogue="silu_glu")  # batched
        assert tuple(y.shape) == (8, 32, n // 2)


def test_activation_and_bias_fakes_keep_the_columns():
    with FakeTensorMode():
        a, b, offs = _fake_inputs(100)
        y = torch.ops.gemmtune.grouped_mm(a, b, offs, epilogue="gelu_tanh")
        assert tuple(y.shape) == (300, 100) and y.stride() == (104, 1)
        bias = torch.empty(100, device="cuda", dtype=torch.float32)
        y = torch.ops.gemmtune.grouped_mm(a, b, offs, bias, epilogue="bias,relu")
        assert tuple(y.shape) == (300, 100)
        y = ops.grouped_mm(a, b, offs, bias, epilogue="relu")  # the bias not named: added first
        assert tuple(y.shape) == (300, 100)
        # A bias after the GLU has N/2 values.
        y = torch.ops.gemmtune.grouped_mm(a, b, offs, bias[:50], epilogue="silu_glu,bias")
        assert tuple(y.shape) == (300, 50)


def test_scaled_fake_with_glu():
    with FakeTensorMode():
        a, b, offs = _fake_inputs(384, 256, e4m3)
        f32 = dict(device="cuda", dtype=torch.float32)
        y = torch.ops.gemmtune.scaled_grouped_mm(a, b, torch.empty(300, **f32), torch.empty(8, 384, **f32), offs,
                                                 epilogue="silu_glu")
        assert tuple(y.shape) == (300, 192) and y.dtype == bf
        y = ops.scaled_grouped_mm(a, b, torch.empty(300, **f32), torch.empty(8, 384, **f32), offs,
                                  bias=torch.empty(384, **f32), epilogue="gelu_tanh")
        assert tuple(y.shape) == (300, 384)


def test_existing_positional_calls_are_unchanged():
    # torch._grouped_mm's arguments keep their places: the epilogue is the last one, "none" by default.
    for name in ("grouped_mm", "grouped_mm_masked", "scaled_grouped_mm"):
        args = getattr(torch.ops.gemmtune, name).default._schema.arguments
        assert args[-1].name == "epilogue" and args[-1].default_value == "none"
    assert [a.name for a in torch.ops.gemmtune.grouped_mm.default._schema.arguments[:5]] == \
        ["mat_a", "mat_b", "offs", "bias", "out_dtype"]


def _bad_epilogue_calls():
    a, b, offs = (lambda: torch.empty(300, 64, device="cuda", dtype=bf),
                  lambda: torch.empty(8, 96, 64, device="cuda", dtype=bf).transpose(-2, -1),
                  lambda: torch.empty(8, device="cuda", dtype=i32))
    gm = torch.ops.gemmtune.grouped_mm
    e = lambda *s, dt=torch.float32: torch.empty(*s, device="cuda", dtype=dt)  # noqa: E731
    odd = lambda: torch.empty(8, 95, 64, device="cuda", dtype=bf).transpose(-2, -1)  # noqa: E731
    return [
        (lambda: gm(a(), b(), offs(), epilogue="relu,residual"), "grouped_mm: the epilogue 'relu,residual' has "
         "'residual', which reads a tensor the grouped ops do not take"),
        (lambda: gm(a(), b(), offs(), epilogue="row_scale"), "'row_scale', which reads a tensor"),
        (lambda: gm(a(), b(), offs(), epilogue="col_scale,silu"), "'col_scale', which reads a tensor"),
        (lambda: gm(a(), b(), offs(), e(300), epilogue="bias_row"), "'bias_row', which reads a tensor"),
        (lambda: torch.ops.gemmtune.grouped_mm_masked(a()[:256].view(8, 32, 64), b(), offs(), epilogue="residual"),
         "grouped_mm_masked: the epilogue 'residual' has 'residual'"),
        (lambda: torch.ops.gemmtune.scaled_grouped_mm(a().to(e4m3), b().to(e4m3), e(300), e(8, 96), offs(),
                                                      epilogue="silu,col_scale"),
         "scaled_grouped_mm: the epilogue 'silu,col_scale' has 'col_scale'"),
        (lambda: gm(a(), odd(), offs(), epilogue="silu_glu"), "has a GLU, which needs an even N \\(got N=95\\)"),
        (lambda: gm(a(), b(), offs(), epilogue="bias,relu"), "has 'bias' but no bias tensor was given"),
        (lambda: torch.ops.gemmtune.grouped_mm_masked(a()[:256].view(8, 32, 64), b(), offs(), epilogue="bias"),
         "grouped_mm_masked takes none"),
        (lambda: gm(a(), b(), offs(), e(96), epilogue="silu_glu,bias"), "bias of 48 values \\(the bias follows the "
         "GLU"),
        (lambda: gm(a(), b(), offs(), e(48), epilogue="silu_glu"), "bias of 96 values shared"),
    ]


@pytest.mark.parametrize("i", range(len(_bad_epilogue_calls())))
def test_epilogue_refusals_in_the_fakes(i):
    with FakeTensorMode():
        call, match = _bad_epilogue_calls()[i]
        with pytest.raises(gemmtune.InvalidInputError, match=match):
            call()


def test_problem_of_a_glu_and_a_bias_chain():
    a, b, offs = rnd(300, 64), weights(8, 200, 64), ends([30] * 8)
    plan = gbuild("t", a, b, offs, epilogue="silu_glu")
    p = plan.problem
    assert p.epilogue == "silu_glu" and p.n_out() == 100 and p.n == 200
    assert p.d.ld == 104 and plan.out_shape == (300, 100) and plan.out_strides == (104, 1)
    assert p.key().endswith(":ep=silu_glu") and "--epilogue=silu_glu" in plan.problem_text
    # A bias not named by the chain comes first, with its tensor's dtype.
    p = gbuild("t", a, b, offs, bias=rnd(200, dtype=torch.float32), epilogue="gelu_tanh").problem
    assert p.epilogue == "bias:f32,gelu_tanh" and p.n_out() == 200 and p.key().endswith(":ep=bias:f32,gelu_tanh")
    p = gbuild("t", a, b, offs, bias=rnd(100), epilogue="swiglu,bias").problem
    assert p.epilogue == "silu_glu,bias:bf16" and p.n_out() == 100 and p.key().endswith(":ep=silu_glu,bias:bf16")
    p = gbuild("t", rnd(8, 32, 64), b, torch.full((8,), 3, dtype=i32), masked=True, epilogue="relu").problem
    assert (p.grouping, p.epilogue, p.d.ld, p.d.batch_stride) == ("masked", "relu", 200, 32 * 200)
    fp8 = gbuild("t", rnd(300, 256, dtype=e4m3), weights(8, 384, 256, dtype=e4m3), offs, scale_a=torch.rand(300),
                  scale_b=torch.rand(8, 384), epilogue="silu_glu").problem
    assert fp8.scaling == "row" and fp8.n_out() == 192 and fp8.d.ld == 192


def test_library_refuses_bad_chains_with_the_op_name():
    a, b, offs = rnd(300, 64), weights(8, 200, 64), ends([30] * 8)
    with pytest.raises(gemmtune.InvalidInputError, match="t: epilogue 'foo': unknown op 'foo'"):
        gbuild("t", a, b, offs, epilogue="foo")
    with pytest.raises(gemmtune.InvalidInputError, match="at most one GLU"):
        gbuild("t", a, b, offs, epilogue="silu_glu,silu_glu")
    with pytest.raises(gemmtune.InvalidInputError, match="interleave64 needs N divisible by"):
        gbuild("t", a, b, offs, epilogue="silu_glu:interleave64")
    with pytest.raises(gemmtune.InvalidInputError, match="'bias:f32' but bias has dtype torch.bfloat16"):
        gbuild("t", a, b, offs, bias=rnd(200), epilogue="bias:f32,relu")
    with pytest.raises(gemmtune.InvalidInputError, match="epilogue must be a str"):
        gbuild("t", a, b, offs, epilogue=None)


# -- the launch, with a mocked Gemm --------------------------------------------------------------------------------


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


@pytest.fixture
def mocked(monkeypatch):
    """The grouped launch on CPU tensors: device checks pass, Tuner.select / Tuner.load return a mock Gemm whose
    run_raw records its pointers and group_rows."""
    calls, selects, loads = [], [], []

    class Gemm:
        def __init__(self, problem, candidate):
            self.problem, self.candidate = problem, candidate

        def run_raw(self, *ptrs, group_rows=0):
            calls.append((self.problem, ptrs, group_rows))

    class Tuner:
        def __init__(self, **kw):
            pass

        def select(self, problem):
            selects.append(problem)
            return Gemm(problem, f"mock:{len(selects)}")

        @staticmethod
        def load(problem, candidate):
            loads.append((problem, candidate))
            return Gemm(problem, candidate)

    monkeypatch.setattr(D, "check_devices", lambda *a, **k: None)
    monkeypatch.setattr(D, "Tuner", Tuner)
    # The Python path under test: with the C++ hot path loaded, ops.* would go through the dispatcher (CPU: refused).
    monkeypatch.setattr(D._native_ops, "loaded", False)
    monkeypatch.setattr(D, "_raw_stream", lambda dev: 1234)
    monkeypatch.setattr(D, "_bind_context", lambda dev: None)
    monkeypatch.setattr(D._tls, "ready", {-1}, raising=False)
    monkeypatch.setattr(torch.cuda, "device", lambda dev: _Null())
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)
    monkeypatch.setattr(ops, "_direct", lambda *ts: True)
    D.clear_selections()
    yield calls, selects, loads
    D.clear_selections()
    D.set_options(**D._DEFAULTS)


def test_one_tuning_per_m_bucket(mocked):
    calls, selects, loads = mocked
    b = weights(8, 96, 64)
    offs = ends([100] * 8)
    for m in (5000, 5000, 6000, 8192, 4096):
        y = ops.grouped_mm(rnd(m, 64), b, offs)
        assert y.shape == (m, 96)
    # 5000, 6000, 8192 share the bucket 8192: one tuning, two loads; 4096 is a bucket of its own.
    assert [p.m for p in selects] == [5000, 4096]
    assert [(p.m, c) for p, c in loads] == [(6000, "mock:1"), (8192, "mock:1")]
    assert len(calls) == 5
    problem, ptrs, group_rows = calls[-1]
    assert group_rows == offs.data_ptr() and ptrs[-1] == 1234
    assert any("--groups=8" in s for s in D.selections())


def test_launch_pointers_and_masked_counts(mocked):
    calls, selects, loads = mocked
    a, b, counts, bias = rnd(4, 16, 64), weights(4, 96, 64), torch.tensor([0, 1, 16, 7], dtype=i32), rnd(96)
    y = ops.grouped_mm_masked(a, b, counts)
    problem, ptrs, group_rows = calls[-1]
    assert problem.grouping == "masked" and group_rows == counts.data_ptr()
    assert (ptrs[0], ptrs[1], ptrs[2], ptrs[3]) == (a.data_ptr(), b.data_ptr(), 0, y.data_ptr())
    y = ops.grouped_mm(a[:, :8].reshape(32, 64), b, ends([8] * 4), bias)
    problem, ptrs, group_rows = calls[-1]
    assert ptrs[4] == bias.data_ptr() and problem.epilogue == "bias:bf16"


def test_the_epilogue_is_part_of_the_selection(mocked):
    calls, selects, loads = mocked
    a, b, offs, bias = rnd(64, 32), weights(4, 96, 32), ends([16] * 4), rnd(96)
    y0 = ops.grouped_mm(a, b, offs)
    y1 = ops.grouped_mm(a, b, offs, epilogue="silu_glu")
    y2 = ops.grouped_mm(a, b, offs, bias, epilogue="gelu_tanh")
    ops.grouped_mm(a, b, offs, epilogue="silu_glu")  # a hit
    assert [p.epilogue for p in selects] == ["none", "silu_glu", "bias:bf16,gelu_tanh"]
    assert (y0.shape, y1.shape, y2.shape) == ((64, 96), (64, 48), (64, 96))
    assert y1.stride() == (48, 1) and calls[-1][0].epilogue == "silu_glu"
    _, ptrs, _ = calls[2]
    assert ptrs[4] == bias.data_ptr()
    # Another M of a bucket loads the winner of the same chain.
    ops.grouped_mm(rnd(60, 32), b, offs, epilogue="silu_glu")
    assert loads[-1][1] == "mock:2" and loads[-1][0].epilogue == "silu_glu" and len(selects) == 3
    y = ops.grouped_mm_masked(a.view(4, 16, 32), b, torch.full((4,), 5, dtype=i32), epilogue="silu_glu")
    assert y.shape == (4, 16, 48) and selects[-1].epilogue == "silu_glu" and selects[-1].grouping == "masked"


def test_scaled_launch_passes_scales(mocked):
    calls, selects, loads = mocked
    a, b, offs = rnd(64, 128, dtype=e4m3), weights(4, 32, 128, dtype=e4m3), ends([16] * 4)
    sa, sb = torch.rand(64), torch.rand(4, 32)
    y = ops.scaled_grouped_mm(a, b, sa, sb, offs)
    problem, ptrs, group_rows = calls[-1]
    assert y.dtype == bf and problem.scaling == "row" and (ptrs[8], ptrs[9]) == (sa.data_ptr(), sb.data_ptr())


def test_capture_guard_and_tune_never(mocked, monkeypatch):
    calls, selects, loads = mocked
    b, offs = weights(4, 32, 64), ends([4] * 4)
    ops.grouped_mm(rnd(16, 64), b, offs)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
    ops.grouped_mm(rnd(16, 64), b, offs)  # a hit: fine while capturing
    with pytest.raises(gemmtune.Error, match="before the capture"):
        ops.grouped_mm(rnd(17, 64), b, offs)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)
    D.set_options(tune="never")
    with pytest.raises(gemmtune.Error, match="not tuned"):
        ops.grouped_mm(rnd(100, 64), b, offs)
    ops.grouped_mm(rnd(12, 64), b, offs)  # the bucket of 16 has a winner: loaded, not tuned
    assert len(selects) == 1 and loads[-1][0].m == 12


def test_empty_output_launches_nothing(mocked):
    calls, selects, loads = mocked
    y = ops.grouped_mm(rnd(0, 64), weights(4, 32, 64), ends([0] * 4))
    assert y.shape == (0, 32) and not calls and not selects


# -- the backward (its formulas on CPU, through torch's grouped GEMMs) -------------------------------------------


def test_backward_formulas_against_autograd_of_torch():
    a = rnd(20, 16).requires_grad_()
    b = weights(3, 8, 16).detach().requires_grad_()
    offs = ends([5, 0, 11])  # 16 of 20 rows routed
    y = torch._grouped_mm(a, b, offs)
    grad = rnd(20, 8)
    ga_ref, gb_ref = torch.autograd.grad(y[:16], (a, b), grad[:16])

    class Ctx:
        needs_input_grad = (True, True, False, False, False)
        has_bias = False
        epilogue = "none"
        saved_tensors = (a.detach(), b.detach(), offs)

    ga, gb, *_ = ops._grouped_mm_backward(Ctx, grad)
    assert torch.allclose(ga[:16].float(), ga_ref[:16].float(), rtol=2e-2, atol=2e-2)
    assert torch.equal(ga[16:], torch.zeros_like(ga[16:]))
    assert torch.allclose(gb.float(), gb_ref.float(), rtol=2e-2, atol=2e-2)


def test_backward_refuses_an_epilogue_chain(monkeypatch):
    class Ctx:
        needs_input_grad = (True, True, False, False, False, False)
        has_bias = False
        epilogue = "silu_glu"
        saved_tensors = ()

    with pytest.raises(NotImplementedError, match="gemmtune.grouped_mm with epilogue 'silu_glu' has no backward"):
        ops._grouped_mm_backward(Ctx, None)
    # Through the registered Autograd kernel: the forward runs, the backward refuses; a bias chain has one.
    monkeypatch.setattr(ops, "cpu_kernel", lambda name, a, b, offs=None, bias=None, out_dtype=None, epilogue="none":
                        torch._grouped_mm(a, b, offs) if bias is None else torch._grouped_mm(a, b, offs) + bias)
    a, w, offs = rnd(24, 16).requires_grad_(), rnd(3, 8, 16).requires_grad_(), ends([10, 0, 14])
    y = torch.ops.gemmtune.grouped_mm(a, w.transpose(-2, -1), offs, None, None, "gelu_tanh")
    with pytest.raises(NotImplementedError, match="epilogue 'gelu_tanh' has no backward"):
        y.sum().backward()
    bias = rnd(8).requires_grad_()
    y = torch.ops.gemmtune.grouped_mm(a, w.transpose(-2, -1), offs, bias, None, "bias")
    ga, gbias = torch.autograd.grad(y, (a, bias), torch.ones_like(y))
    assert ga.shape == a.shape and torch.allclose(gbias.float(), torch.full((8,), 24.0))


def test_masked_and_scaled_refuse_a_backward():
    with pytest.raises(NotImplementedError, match="no backward"):
        ops._grouped_masked_backward(None, None)
    with pytest.raises(NotImplementedError, match="no backward"):
        ops._scaled_grouped_backward(None, None)


def test_compile_traces_the_op():
    def f(a, b, offs):
        return torch.ops.gemmtune.grouped_mm(a, b, offs) * 2

    with FakeTensorMode():
        a = torch.empty(64, 32, device="cuda", dtype=bf)
        b = torch.empty(4, 16, 32, device="cuda", dtype=bf).transpose(-2, -1)
        offs = torch.empty(4, device="cuda", dtype=i32)
        gm = torch.fx.experimental.proxy_tensor.make_fx(f, tracing_mode="fake")(a, b, offs)
    assert "gemmtune.grouped_mm" in str(gm.graph)


def test_trace_keeps_the_epilogue():
    def f(a, b, offs):
        return torch.ops.gemmtune.grouped_mm(a, b, offs, epilogue="silu_glu") * 2

    with FakeTensorMode():
        a = torch.empty(64, 32, device="cuda", dtype=bf)
        b = torch.empty(4, 16, 32, device="cuda", dtype=bf).transpose(-2, -1)
        offs = torch.empty(4, device="cuda", dtype=i32)
        gm = torch.fx.experimental.proxy_tensor.make_fx(f, tracing_mode="fake")(a, b, offs)
    node = next(n for n in gm.graph.nodes if "grouped_mm" in str(n.target))
    assert node.kwargs.get("epilogue", node.args[-1]) == "silu_glu"
    assert tuple(node.meta["val"].shape) == (64, 8)


def test_autograd_through_the_op(monkeypatch):
    # The registered Autograd kernel with a CPU stand-in for the launch: gradients reach a and the (G, N, K) weight.
    monkeypatch.setattr(ops, "cpu_kernel", lambda name, a, b, offs=None, bias=None, out_dtype=None:
                        torch._grouped_mm(a, b, offs))
    a = rnd(24, 16).requires_grad_()
    w = rnd(3, 8, 16).requires_grad_()
    offs = ends([10, 0, 14])
    y = torch.ops.gemmtune.grouped_mm(a, w.transpose(-2, -1), offs)
    grad = rnd(24, 8)
    ga, gw = torch.autograd.grad(y, (a, w), grad)
    ra, rw = torch.autograd.grad(torch._grouped_mm(a, w.transpose(-2, -1), offs), (a, w), grad)
    assert torch.allclose(ga.float(), ra.float(), rtol=2e-2, atol=2e-2)
    assert torch.allclose(gw.float(), rw.float(), rtol=2e-2, atol=2e-2)


def test_moe_benchmark_self_test():
    # bench/moe.py's routings (the grouped contract) and its report, without a GPU.
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([sys.executable, os.path.join(root, "bench", "moe.py"), "--self-test"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "self-test ok" in r.stdout, r.stdout + r.stderr


def test_backward_pads_pitches_torch_refuses():
    # torch's grouped GEMMs want 16-byte pitches: an odd K or N reaches them through a padded copy.
    t = rnd(5, 7)
    p = ops._pitch16(t)
    assert p.stride() == (8, 1) and torch.equal(p, t)
    assert ops._pitch16(rnd(5, 8)).stride() == (8, 1)
    c = rnd(7, 16).t()  # (16, 7) column-major, pitch 16: taken as it is
    assert ops._pitch16(c) is c
    w = rnd(3, 5, 7).transpose(-2, -1)  # (3, 7, 5), pitch 7: copied
    assert ops._pitch16(w).stride()[-2:] == (8, 1) and torch.equal(ops._pitch16(w), w)


def test_export_keeps_the_grouped_ops():
    class MoE(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(rnd(4, 96, 64), requires_grad=False)

        def forward(self, x, offs, counts):
            y = ops.grouped_mm(x, self.w.transpose(-2, -1), offs)
            z = torch.ops.gemmtune.grouped_mm_masked(x.view(4, -1, 64), self.w.transpose(-2, -1), counts)
            return y, z

    ep = torch.export.export(MoE(), (rnd(32, 64), ends([8] * 4), torch.full((4,), 8, dtype=i32)))
    targets = {str(n.target) for n in ep.graph.nodes}
    assert "gemmtune.grouped_mm.default" in targets and "gemmtune.grouped_mm_masked.default" in targets
