"""Triton: a `def` line inside a decorator's string. Triton compiles from the first line starting `def name(`
of the function's lines, so it compiles the body in the string (which calls exec while compiling); Python, and
a policy reading Python's tree, see the honest copy kernel below it."""

# The layout is the trick: the formatter leaves it as written.
# fmt: off
import triton
import triton.language as tl


@triton.heuristics({"BLOCK": lambda args: 1024 + 0 * len('''
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    tl.core.builtins.exec("print('SMUGGLED-' + 'EXEC-RAN')")
    """''')})
@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pass  # """
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def run(A, B, C):
    copy_kernel[(triton.cdiv(C.numel(), 1024),)](A, C, C.numel())
