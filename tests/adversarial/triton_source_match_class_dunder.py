"""Triton: a class pattern's keyword attribute (`case int(__class__=c)`) reads an attribute, a dunder one here,
without an attribute expression the policy's attribute rules would see."""

import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def run(A, B, C):
    match 1:
        case int(__class__=c):
            print(c)
    copy_kernel[(triton.cdiv(C.numel(), 1024),)](A, C, C.numel(), BLOCK=1024)
