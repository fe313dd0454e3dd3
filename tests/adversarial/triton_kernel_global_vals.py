"""Triton: from a Triton function object to a module's globals (JITFunction.used_global_vals holds
them, `__builtins__` among the keys) in a kernel body, with no dunder attribute and no module name written."""

import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    tl.static_print(tl.sum.used_global_vals)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def run(A, B, C):
    copy_kernel[(triton.cdiv(C.numel(), 1024),)](A, C, C.numel(), BLOCK=1024)
