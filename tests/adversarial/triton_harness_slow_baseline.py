"""Class "harness rewrite" in Triton: the reference Triton GEMM, and module code
that makes every library matmul of this process sleep 20 ms first (the issue's 1.57x claim for a 0.81x kernel
came this way, through a policy bypass). The corpus runs it with the source policy skipped: Python that gets
through must change nothing. The baseline is timed where no submission code runs, so the speedup stays honest."""

import time

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def gemm_kernel(
    a_desc,
    b_desc,
    c_desc,
    M,
    N,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_n
    first_m = (pid // group) * GROUP_M
    size_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % size_m
    pid_n = (pid % group) // size_m
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
        b = b_desc.load([pid_n * BLOCK_N, k * BLOCK_K])
        acc = tl.dot(a, b.T, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(tl.bfloat16))


def _slow(real):
    def call(*args, **kwargs):
        time.sleep(0.02)
        return real(*args, **kwargs)

    return call


torch.matmul, torch.mm, F.linear = _slow(torch.matmul), _slow(torch.mm), _slow(F.linear)
torch.Tensor.__matmul__ = _slow(torch.Tensor.__matmul__)


def _launch(A, B, C, rows):
    M, K = A.shape
    N = B.shape[0]
    BM, BN, BK = 128, 256, 64
    a = TensorDescriptor.from_tensor(A, [BM, BK])
    b = TensorDescriptor.from_tensor(B, [BN, BK])
    c = TensorDescriptor.from_tensor(C, [BM, BN])
    grid = (triton.cdiv(rows, BM) * triton.cdiv(N, BN),)
    gemm_kernel[grid](a, b, c, rows, N, K, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=8, num_warps=8, num_stages=3)


def run(A, B, C):
    _launch(A, B, C, A.shape[0])
