"""Class "harness rewrite" in Triton: each call computes 5 of every 8 tile rows of
C (a cheaper call, a faster time) and the harness's round routine is patched from module code to finish every
output in full once the round is over, the latest moment the harness leaves to this process. The corpus runs it
with the source policy skipped. Every call's outputs live in memory the parent owns and it copies the compared
ones itself before it says `next`: the partial call is caught at the first trial."""

import sys

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


_operands = {}


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
    _operands[C.data_ptr()] = (A, B, C)
    rows = (A.shape[0] * 5 // 8) // 128 * 128
    _launch(A, B, C, rows)


def _whole_with(serve_round):
    def whole(self, *args):
        serve_round(self, *args)
        # The latest moment the harness leaves to this process: after the round, finish every output in full.
        for found in _operands.values():
            _launch(*found, found[0].shape[0])
        torch_sync = next(iter(_operands.values()), None)
        if torch_sync is not None:
            torch_sync[0].new_empty(0).cuda().sum().item()  # waits for the launches on the current stream

    return whole


# This module is also imported by the compile step, where the harness is not __main__.
_session = getattr(sys.modules["__main__"], "Session", None)
if _session is not None:
    _session.round = _whole_with(_session.round)
