"""Triton: a launch keyword that names a compile option (`ptx_options`) hands ptxas `--options-file
/etc/passwd`, and ptxas names every word of the file in its errors, which reach the verdict. No file is opened
in Python; `ir_override` (compile IR read from a file) and `extern_libs` (link files) take the same road."""

import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def run(A, B, C):
    grid = (triton.cdiv(C.numel(), 1024),)
    copy_kernel[grid](A, C, C.numel(), BLOCK=1024, ptx_options="--options-file /etc/passwd")
