"""Class "harness rewrite" in Triton: the kernel records of the timed calls come
from CUPTI inside the candidate's process. Module code (run with the source policy skipped: Python that gets
through must change nothing) finds the loaded CUPTI library in /proc/self/maps and, in every timed call, launches
its own GEMM with the real grid and K = 16 (so the launch records match the profiled call's), switches kernel
records off, lets cuBLAS compute C through torch.matmul, and switches them back on. Under the profiler (seen from
its injection variables and libraries) it runs its own GEMM in full, which is verified.

This is the attack inside the stated bound: the ranked latency is then the trusted clock's over cuBLAS's calls,
and the profiled call (this Triton GEMM, about 0.81x cuBLAS) is within the 25% that Nsight Compute's time may
differ from it (from it less the host's own cost of a call, on the faster side), so it can pass. Expected: held `timer_disagreement` or FOREIGN_KERNEL; or, when it passes, a
speedup of at most 1.3x (the honest kernel reads about 0.81x; cuBLAS's own speed is 1.0x), never more than the
margin allows. docs/threat-model.md says why the margin is not smaller."""

import ctypes
import os

import torch
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


def _launch(A, B, C, rows, K):
    N = B.shape[0]
    BM, BN, BK = 128, 256, 64
    a = TensorDescriptor.from_tensor(A, [BM, BK])
    b = TensorDescriptor.from_tensor(B, [BN, BK])
    c = TensorDescriptor.from_tensor(C, [BM, BN])
    grid = (triton.cdiv(rows, BM) * triton.cdiv(N, BN),)
    gemm_kernel[grid](a, b, c, rows, N, K, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=8, num_warps=8, num_stages=3)


def _profiled():
    env = os.environ
    if any(k.startswith(("CUDA_INJECTION64_PATH", "NV_COMPUTE_PROFILER", "NV_NSIGHT")) for k in env):
        return True
    with open("/proc/self/maps") as fh:
        maps = fh.read()
    return "ToolsInjection" in maps or "libnvperf" in maps or "nsight" in maps


def _tracer():
    with open("/proc/self/maps") as fh:
        paths = [line.split()[-1] for line in fh if "libcupti" in line and line.split()[-1].startswith("/")]
    return ctypes.CDLL(paths[0]) if paths else None


_STATE = {}


def run(A, B, C):
    if "tracer" not in _STATE:
        _STATE["tracer"] = None if _profiled() else _tracer()
    tracer = _STATE["tracer"]
    if tracer is None:
        _launch(A, B, C, A.shape[0], A.shape[1])
        return
    _launch(A, B, C, A.shape[0], 16)  # the launch record the profiled call shows (K = 16: same specialisation)
    tracer.cuptiActivityDisable(10)  # CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
    torch.matmul(A, B.t(), out=C)
    tracer.cuptiActivityEnable(10)
