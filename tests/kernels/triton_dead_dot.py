"""A correct Triton GEMM whose work is SIMT (one outer product per k); its tl.dot sits in a branch taken only
when `mode` is 12345, and run passes 0: the wgmma is in the SASS but never executes (expected: not_executed)."""

import triton
import triton.language as tl


@triton.jit
def gemm_dead_dot(a_ptr, b_ptr, c_ptr, M, N, K, mode, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K):
        a = tl.load(a_ptr + rm * K + k, mask=rm < M, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + rn * K + k, mask=rn < N, other=0.0).to(tl.float32)
        acc += a[:, None] * b[None, :]
    if mode == 12345:
        rk = tl.arange(0, BK)
        ta = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
        tb = tl.load(b_ptr + rn[:, None] * K + rk[None, :])
        acc = tl.dot(ta, tl.trans(tb), acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))


def run(A, B, C):
    M, K = A.shape
    N = B.shape[0]
    grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
    gemm_dead_dot[grid](A, B, C, M, N, K, 0, BM=64, BN=64, BK=64, num_warps=4)
