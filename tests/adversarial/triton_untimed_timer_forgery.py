"""Class "untimed work" in Triton (the corpus skips the source policy). Trick: an honest Triton GEMM (wgmma through
tl.dot, TMA descriptors) whose module body scales every figure the candidate process's own timer gives by 0.95 (the
CUPTI timer's and the host timer's windows, CUDA events): a claim a few percent better than the truth, small enough
to sit inside any slack a cross-check against the trusted clock must allow.
The evaluator must: rank by its own clock over the back-to-back batches (latency_from "trusted batches"), so the
ranked figure is the honest kernel's whatever the in-process timer says: PASSED, no faster than the honest GEMM."""

import sys

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def gemm_kernel(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    pid_m = pid % tl.cdiv(M, BM)
    pid_n = pid // tl.cdiv(M, BM)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        acc = tl.dot(a_desc.load([pid_m * BM, k * BK]), b_desc.load([pid_n * BN, k * BK]).T, acc)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.bfloat16))


BM, BN, BK = 128, 256, 64


def run(A, B, C):
    descs = (TensorDescriptor.from_tensor(t, s) for t, s in ((A, [BM, BK]), (B, [BN, BK]), (C, [BM, BN])))
    grid = (triton.cdiv(A.shape[0], BM) * triton.cdiv(B.shape[0], BN),)
    gemm_kernel[grid](*descs, A.shape[0], B.shape[0], A.shape[1], BM=BM, BN=BN, BK=BK, num_warps=8)


def _scaled(window):
    def scaled(self, t0, t1):
        ms, count, kernels = window(self, t0, t1)
        return ms * 0.95, count, kernels

    return scaled


# The candidate process imports its timer before this module; the compile step does not, and is left alone.
_timing = sys.modules.get("evaluator.candidate_process.timing")
for _cls in vars(_timing).values() if _timing is not None else ():
    if isinstance(_cls, type) and callable(getattr(_cls, "window", None)):
        _cls.window = _scaled(_cls.window)
_elapsed = torch.cuda.Event.elapsed_time
torch.cuda.Event.elapsed_time = lambda self, end: _elapsed(self, end) * 0.95
