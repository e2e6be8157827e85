"""Persistent TMA matmul for sm90: a fixed grid of programs (about one per SM) walks the output tiles of every
batch; A and B tiles arrive by TMA through device-side tensor descriptors, software-pipelined STAGES deep.

TMA needs 16-byte aligned base pointers, pitches and batch strides (the backend's validate() routes everything else
to matmul_masked); it zero-fills reads past the matrix, so ragged M, N and K need no masks in the main loop. D is
written by the shared masked epilogue (any layout, any pitch).
"""
import triton
import triton.language as tl

from gemm_epilogue import grouped_tile, store_tile


@triton.jit
def _descriptors(a_ptr, b_ptr, pid_b, M, N, K, lda, ldb, sbat_a, sbat_b,
                 A_ROW: tl.constexpr, B_ROW: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a_base = a_ptr + pid_b * sbat_a  # sbat_* are i64: so is the offset
    b_base = b_ptr + pid_b * sbat_b
    if A_ROW:
        a_desc = tl.make_tensor_descriptor(a_base, shape=[M, K], strides=[lda, 1], block_shape=[BM, BK])
    else:
        a_desc = tl.make_tensor_descriptor(a_base, shape=[K, M], strides=[lda, 1], block_shape=[BK, BM])
    if B_ROW:
        b_desc = tl.make_tensor_descriptor(b_base, shape=[K, N], strides=[ldb, 1], block_shape=[BK, BN])
    else:
        b_desc = tl.make_tensor_descriptor(b_base, shape=[N, K], strides=[ldb, 1], block_shape=[BN, BK])
    return a_desc, b_desc


@triton.jit
def matmul_tma_persistent(a_ptr, b_ptr, c_ptr, d_ptr, bias_ptr, res_ptr, rs_ptr, cs_ptr, sa_ptr, sb_ptr,
                          M, N, K, batch, lda, ldb, ldc, ldd, sbat_a, sbat_b, sbat_c, sbat_d, alpha, beta,
                          A_ROW: tl.constexpr, B_ROW: tl.constexpr, C_ROW: tl.constexpr, D_ROW: tl.constexpr,
                          HAS_C: tl.constexpr, SCALING: tl.constexpr,
                          E0: tl.constexpr, E1: tl.constexpr, E2: tl.constexpr, E3: tl.constexpr,
                          E4: tl.constexpr, E5: tl.constexpr, E6: tl.constexpr, E7: tl.constexpr,
                          BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GM: tl.constexpr,
                          STAGES: tl.constexpr, BATCHED: tl.constexpr):
    start = tl.program_id(0)
    progs = tl.num_programs(0)
    tiles = tl.cdiv(M, BM) * tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    # One batch: the descriptors are made once per program; batched, once per tile (its batch's base pointers).
    if not BATCHED:
        a_desc, b_desc = _descriptors(a_ptr, b_ptr, 0, M, N, K, lda, ldb, sbat_a, sbat_b, A_ROW, B_ROW, BM, BN, BK)
    for t in range(start, tiles * batch, progs):
        pid_b = t // tiles
        pid_m, pid_n = grouped_tile(t % tiles, M, N, BM, BN, GM)
        if BATCHED:
            a_desc, b_desc = _descriptors(a_ptr, b_ptr, pid_b, M, N, K, lda, ldb, sbat_a, sbat_b,
                                          A_ROW, B_ROW, BM, BN, BK)
        om = pid_m * BM
        on = pid_n * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for kt in tl.range(0, k_tiles, num_stages=STAGES):
            ok = kt * BK
            if A_ROW:
                a = a_desc.load([om, ok])
            else:
                a = a_desc.load([ok, om]).T
            if B_ROW:
                b = b_desc.load([ok, on])
            else:
                b = b_desc.load([on, ok]).T
            acc = tl.dot(a, b, acc)
        offs_m = om + tl.arange(0, BM)
        offs_n = on + tl.arange(0, BN)
        store_tile(acc, pid_b, offs_m, offs_n, M, N, c_ptr, d_ptr, bias_ptr, res_ptr, rs_ptr, cs_ptr, sa_ptr, sb_ptr,
                   ldc, ldd, sbat_c, sbat_d, alpha, beta, C_ROW, D_ROW, HAS_C, SCALING,
                   E0, E1, E2, E3, E4, E5, E6, E7)
