"""Triton starter for the PTXBench FP8 GEMM tasks: C[M,N] = (A * scale_a) @ (B * scale_b)^T with A[M,K] and B[N,K]
float8_e4m3fn (row-major), scale_a and scale_b one-element float32 tensors, C bf16.

Correct and deliberately simple: one program per 32x32 tile of C, K in steps of 32, the e4m3 tiles widened to fp32
and multiplied with tl.dot(..., input_precision="ieee"), which is plain FMA on the CUDA cores; the scales applied
once, in the epilogue. It uses no wgmma/TMA (sm_90a) or tcgen05 (sm_100a), so it passes the correctness layer and
fails the architecture layer; replace the kernel, keep `run`. A tl.dot of the e4m3 tiles themselves is where the
tensor cores start (an FP8 wgmma on sm_90a): add its result to an fp32 accumulator outside the dot every few k-steps
(FP8 tensor-core accumulators keep fewer bits than fp32, and the task asks for fp32 accumulation). All sizes come
from the tensors (contiguous, row-major).
"""

import triton
import triton.language as tl

BLOCK = 32  # rows, columns and reduction step of one tile


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
        acc = tl.dot(a.to(tl.float32), tl.trans(b.to(tl.float32)), acc, input_precision="ieee")
    scale = tl.load(sa_ptr) * tl.load(sb_ptr)
    c = c_ptr + rows.to(tl.int64)[:, None] * N + cols[None, :]
    tl.store(c, (acc * scale).to(tl.bfloat16), mask=row_ok[:, None] & col_ok[None, :])


def run(A, B, scale_a, scale_b, C):
    M, K = A.shape
    N = B.shape[0]
    grid = (triton.cdiv(M, BLOCK), triton.cdiv(N, BLOCK))
    gemm_fp8_tile[grid](A, B, scale_a, scale_b, C, M, N, K, BLOCK_M=BLOCK, BLOCK_N=BLOCK, BLOCK_K=BLOCK)
