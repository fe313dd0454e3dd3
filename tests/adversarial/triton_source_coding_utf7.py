# -*- coding: utf-7 -*-
"""Triton: a coding declaration. Python decodes the file as UTF-7 when it imports it, so the comment below
holds a line of code (plus-A-A-o-minus is a newline; a plain plus is written +- here) that a policy parsing the
text as given never sees."""

# The layout is the trick: the formatter leaves it as written.
# fmt: off
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK +- tl.arange(0, BLOCK)
    tl.store(y_ptr +- offs, tl.load(x_ptr +- offs, mask=offs < n), mask=offs < n)


def run(A, B, C):
    copy_kernel[(triton.cdiv(C.numel(), 1024),)](A, C, C.numel(), BLOCK=1024)  # +AAo-    print(271828)
