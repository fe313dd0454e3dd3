"""Triton: importlib reached through the pkgutil module that triton.language.extra imports, in a kernel
body (Triton's code generator calls it while compiling, inside the compile sandbox)."""

import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    tl.extra.pkgutil.importlib.import_module("os").system("cat /proc/self/environ")
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def run(A, B, C):
    copy_kernel[(triton.cdiv(C.numel(), 1024),)](A, C, C.numel(), BLOCK=1024)
