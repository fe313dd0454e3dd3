"""Triton starter for the PTXBench FP8 GEMM tasks: C[M,N] = (A * scale_a) @ (B * scale_b)^T with A[M,K] and B[N,K]
float8_e4m3fn (row-major), scale_a and scale_b one-element float32 tensors, C bf16.

Correct and plain: one program per 64x64 tile of C, K in steps of 64, each step a tl.dot of the e4m3 tiles (on
sm_90a Triton lowers it to an FP8 wgmma) added to an fp32 accumulator outside the dot, so the tensor cores' partial
sums are promoted to fp32 every 64 elements of K (FP8 tensor-core accumulators keep fewer bits than fp32). The
scales are applied once, in the epilogue. Bigger tiles, a software pipeline and tensor descriptors (TMA) are where
the speed is; keep `run`. All sizes come from the tensors (contiguous, row-major).
"""

import triton
import triton.language as tl

BLOCK_M = 64
BLOCK_N = 64
BLOCK_K = 64


@triton.jit
def gemm_fp8_tile(
    a_ptr, b_ptr, sa_ptr, sb_ptr, c_ptr, M, N, K,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    row_ok = rows < M
    col_ok = cols < N
    a_rows = a_ptr + rows.to(tl.int64)[:, None] * K
    b_rows = b_ptr + cols.to(tl.int64)[:, None] * K
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        k_ok = ks < K
        a = tl.load(a_rows + ks[None, :], mask=row_ok[:, None] & k_ok[None, :], other=0.0)  # [BLOCK_M, BLOCK_K]
        b = tl.load(b_rows + ks[None, :], mask=col_ok[:, None] & k_ok[None, :], other=0.0)  # [BLOCK_N, BLOCK_K]
        acc += tl.dot(a, tl.trans(b), out_dtype=tl.float32)
    scale = tl.load(sa_ptr) * tl.load(sb_ptr)
    c = c_ptr + rows.to(tl.int64)[:, None] * N + cols[None, :]
    tl.store(c, (acc * scale).to(tl.bfloat16), mask=row_ok[:, None] & col_ok[None, :])


def run(A, B, scale_a, scale_b, C):
    M, K = A.shape
    N = B.shape[0]
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    gemm_fp8_tile[grid](A, B, scale_a, scale_b, C, M, N, K, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
