"""Triton: a lambda's default argument, evaluated where the lambda is defined, runs os.system."""

import triton
import triton.language as tl

leak = lambda cmd=tl.core.inspect.os.system("id"): cmd  # noqa: B008, E731


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def run(A, B, C):
    copy_kernel[(triton.cdiv(C.numel(), 1024),)](A, C, C.numel(), BLOCK=1024)
