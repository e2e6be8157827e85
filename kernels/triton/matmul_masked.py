"""Masked-pointer matmul: any alignment, any leading dimension, either layout of every operand.

One program per output tile (grid axis 0, GM-grouped order), batch on grid axis 1. A and B are read with masked
pointer loads, so ragged edges and pitches that TMA cannot take (ld = K + 3, a 2-byte aligned base) need nothing
special; the compiler vectorizes the loads as far as the pointers' and pitches' divisibility hints allow.
"""
import triton
import triton.language as tl

from gemm_epilogue import grouped_tile, store_tile


@triton.jit
def matmul_masked(a_ptr, b_ptr, c_ptr, d_ptr, bias_ptr, res_ptr, rs_ptr, cs_ptr, sa_ptr, sb_ptr,
                  M, N, K, batch, lda, ldb, ldc, ldd, sbat_a, sbat_b, sbat_c, sbat_d, alpha, beta,
                  A_ROW: tl.constexpr, B_ROW: tl.constexpr, C_ROW: tl.constexpr, D_ROW: tl.constexpr,
                  HAS_C: tl.constexpr, SCALING: tl.constexpr,
                  E0: tl.constexpr, E1: tl.constexpr, E2: tl.constexpr, E3: tl.constexpr,
                  E4: tl.constexpr, E5: tl.constexpr, E6: tl.constexpr, E7: tl.constexpr,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GM: tl.constexpr):
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BM, BN, GM)
    pid_b = tl.program_id(1)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    rows = offs_m.to(tl.int64)
    cols = offs_n.to(tl.int64)
    # A is M x K, B is K x N; the unit stride is a compile-time constant so that loads along it vectorize.
    if A_ROW:
        a_ptrs = a_ptr + pid_b.to(tl.int64) * sbat_a + rows[:, None] * lda + offs_k[None, :]
        a_step = BK
    else:
        a_ptrs = a_ptr + pid_b.to(tl.int64) * sbat_a + rows[:, None] + offs_k[None, :].to(tl.int64) * lda
        a_step = BK * lda
    if B_ROW:
        b_ptrs = b_ptr + pid_b.to(tl.int64) * sbat_b + offs_k[:, None].to(tl.int64) * ldb + cols[None, :]
        b_step = BK * ldb
    else:
        b_ptrs = b_ptr + pid_b.to(tl.int64) * sbat_b + offs_k[:, None] + cols[None, :] * ldb
        b_step = BK
    mask_m = offs_m < M
    mask_n = offs_n < N
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        in_k = (k0 + offs_k) < K
        a = tl.load(a_ptrs, mask=mask_m[:, None] & in_k[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=in_k[:, None] & mask_n[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += a_step
        b_ptrs += b_step
    store_tile(acc, pid_b, offs_m, offs_n, M, N, c_ptr, d_ptr, bias_ptr, res_ptr, rs_ptr, cs_ptr, sa_ptr, sb_ptr,
               ldc, ldd, sbat_c, sbat_d, alpha, beta, C_ROW, D_ROW, HAS_C, SCALING, E0, E1, E2, E3, E4, E5, E6, E7)
