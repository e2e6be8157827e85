"""The fused epilogue of the Triton templates: v = alpha*acc (*fp8 scales) + beta*C, then the chain, then the store.

The chain arrives as constexpr op codes E0..E7 (0 = no op), in application order; each code selects one branch at
compile time, so a kernel carries only the ops of its problem. The codes and the math follow gemmtune's chain
(include/gemmtune/epilogue.h, kernels/epilogue/epilogue_ops.cuh): every op acts on the fp32 value at (row, col) and
D is rounded once, at the store.
"""
import triton
import triton.language as tl
from triton.language.extra import libdevice

# Op codes, as src/backends/triton/triton_config.cpp writes them.
OP_NONE = 0
OP_BIAS_COL = 1
OP_BIAS_ROW = 2
OP_RELU = 3
OP_GELU_TANH = 4
OP_GELU_ERF = 5
OP_SILU = 6
OP_SIGMOID = 7
OP_ROW_SCALE = 8
OP_COL_SCALE = 9
OP_RESIDUAL = 10


@triton.jit
def _apply_op(v, OP: tl.constexpr, offs_m, offs_n, mask_m, mask_n, mask, bias_ptr, rs_ptr, cs_ptr, res_ptrs):
    if OP == 1:
        v += tl.load(bias_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)[None, :]
    elif OP == 2:
        v += tl.load(bias_ptr + offs_m, mask=mask_m, other=0.0).to(tl.float32)[:, None]
    elif OP == 3:
        v = tl.where(v > 0.0, v, 0.0)
    elif OP == 4:
        v = 0.5 * v * (1.0 + libdevice.tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)))
    elif OP == 5:
        v = 0.5 * v * (1.0 + libdevice.erf(v * 0.7071067811865476))
    elif OP == 6:
        v = v / (1.0 + tl.exp(-v))
    elif OP == 7:
        v = 1.0 / (1.0 + tl.exp(-v))
    elif OP == 8:
        v *= tl.load(rs_ptr + offs_m, mask=mask_m, other=0.0).to(tl.float32)[:, None]
    elif OP == 9:
        v *= tl.load(cs_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)[None, :]
    elif OP == 10:
        v += tl.load(res_ptrs, mask=mask, other=0.0).to(tl.float32)
    return v


@triton.jit
def store_tile(acc, pid_b, offs_m, offs_n, M, N, c_ptr, d_ptr, bias_ptr, res_ptr, rs_ptr, cs_ptr, sa_ptr, sb_ptr,
               ldc, ldd, sbat_c, sbat_d, alpha, beta,
               C_ROW: tl.constexpr, D_ROW: tl.constexpr, HAS_C: tl.constexpr, SCALING: tl.constexpr,
               E0: tl.constexpr, E1: tl.constexpr, E2: tl.constexpr, E3: tl.constexpr,
               E4: tl.constexpr, E5: tl.constexpr, E6: tl.constexpr, E7: tl.constexpr):
    """Writes the tile acc (BM x BN fp32, rows offs_m, columns offs_n) of batch pid_b to D, masked to M x N."""
    mask_m = offs_m < M
    mask_n = offs_n < N
    mask = mask_m[:, None] & mask_n[None, :]
    rows = offs_m.to(tl.int64)
    cols = offs_n.to(tl.int64)
    v = acc
    # fp8 dequantization (torch._scaled_mm): 1 = one scale per tensor, 2 = per row of A and per column of B.
    if SCALING == 1:
        v = v * (tl.load(sa_ptr) * tl.load(sb_ptr))
    elif SCALING == 2:
        v = v * tl.load(sa_ptr + offs_m, mask=mask_m, other=0.0)[:, None]
        v = v * tl.load(sb_ptr + offs_n, mask=mask_n, other=0.0)[None, :]
    v = v * alpha
    if HAS_C:
        if C_ROW:
            c_offs = rows[:, None] * ldc + cols[None, :]
        else:
            c_offs = rows[:, None] + cols[None, :] * ldc
        c_base = c_ptr + pid_b.to(tl.int64) * sbat_c
        v += beta * tl.load(c_base + c_offs, mask=mask, other=0.0).to(tl.float32)
    if D_ROW:
        d_offs = rows[:, None] * ldd + cols[None, :]
    else:
        d_offs = rows[:, None] + cols[None, :] * ldd
    bat_d = pid_b.to(tl.int64) * sbat_d
    # The residual is shaped like D (its layout, ld and batch stride).
    res_ptrs = res_ptr + bat_d + d_offs
    v = _apply_op(v, E0, offs_m, offs_n, mask_m, mask_n, mask, bias_ptr, rs_ptr, cs_ptr, res_ptrs)
    v = _apply_op(v, E1, offs_m, offs_n, mask_m, mask_n, mask, bias_ptr, rs_ptr, cs_ptr, res_ptrs)
    v = _apply_op(v, E2, offs_m, offs_n, mask_m, mask_n, mask, bias_ptr, rs_ptr, cs_ptr, res_ptrs)
    v = _apply_op(v, E3, offs_m, offs_n, mask_m, mask_n, mask, bias_ptr, rs_ptr, cs_ptr, res_ptrs)
    v = _apply_op(v, E4, offs_m, offs_n, mask_m, mask_n, mask, bias_ptr, rs_ptr, cs_ptr, res_ptrs)
    v = _apply_op(v, E5, offs_m, offs_n, mask_m, mask_n, mask, bias_ptr, rs_ptr, cs_ptr, res_ptrs)
    v = _apply_op(v, E6, offs_m, offs_n, mask_m, mask_n, mask, bias_ptr, rs_ptr, cs_ptr, res_ptrs)
    v = _apply_op(v, E7, offs_m, offs_n, mask_m, mask_n, mask, bias_ptr, rs_ptr, cs_ptr, res_ptrs)
    d_ptrs = d_ptr + bat_d + d_offs
    tl.store(d_ptrs, v.to(d_ptr.dtype.element_ty), mask=mask)


@triton.jit
def grouped_tile(tile, M, N, BM: tl.constexpr, BN: tl.constexpr, GM: tl.constexpr):
    """(pid_m, pid_n) of a tile index with GM rows of tiles walked together, so that their B columns stay in L2."""
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    per_group = GM * num_n
    group = tile // per_group
    first_m = group * GM
    size_m = tl.minimum(num_m - first_m, GM)
    pid_m = first_m + (tile % per_group) % size_m
    pid_n = (tile % per_group) // size_m
    return pid_m, pid_n
