"""Triton, indirect route to PyTorch's matmul: getattr on the torch module with a built name (the policy refuses getattr)."""

import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def run(A, B, C):
    mm = getattr(torch, "mat" + "mul")
    C.copy_(mm(A, B.t()))
