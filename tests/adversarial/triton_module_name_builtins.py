"""Triton: the module's `__name__` set to `triton.language.extra.libdevice` before a class whose `__name__` is
`__builtins__`; Triton's compiler replaces a global whose `__module__` is that name by `getattr(libdevice,
value.__name__)`, here the libdevice module's builtins, and a kernel hands them to a host function that runs exec
while compiling. No dunder attribute, no forbidden call, no module name is written."""

import triton
import triton.language as tl


def reach(found):
    found["exec"]("raise RuntimeError('ESCAPED: exec reached through the module name')")
    return 0


REACH = tl.constexpr(reach)
own = __name__
__name__ = "triton.language.extra.libdevice"


class Alias:
    __name__ = "__builtins__"


list = Alias()  # a name the compiler lets kernels read; its value becomes libdevice's __builtins__
del Alias
__name__ = own


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    REACH(list)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def run(A, B, C):
    copy_kernel[(triton.cdiv(C.numel(), 1024),)](A, C, C.numel(), BLOCK=1024)
