"""Triton: a `def` line inside a nested kernel's docstring. The docstring's lines start at column 0, so dedent
leaves the real `def` indented and Triton's search for the first line starting `def name(` lands in the
docstring: Triton compiles the body written there (exec while compiling), not the copy kernel Python sees."""

# The layout is the trick: the formatter leaves it as written.
# fmt: off
import triton
import triton.language as tl


@triton.jit
def fill_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros((BLOCK,), tl.float32), mask=offs < n)


def make():
    @triton.jit
    def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        """Copies x to y.
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        tl.core.builtins.exec("print('SMUGGLED-' + 'DOCSTRING-RAN')")
        """
        pass  # """
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

    return copy_kernel


def run(A, B, C):
    make()[(triton.cdiv(C.numel(), 1024),)](A, C, C.numel(), BLOCK=1024)
