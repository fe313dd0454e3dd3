"""Host boundary, beneath the policy: when the compile process exits, it patches its cubin so that the
kernel's name holds a newline (cuobjdump prints names raw: the rest of the name becomes a line of the SASS listing,
where a fake HGMMA line would count as a target instruction). Expect the compile refused for that name."""

import atexit
import glob
import os

import triton
import triton.language as tl


def _patch():
    for path in glob.glob(os.path.join(os.environ["TRITON_CACHE_DIR"], "*", "*.cubin")):
        with open(path, "rb") as fh:
            data = fh.read()
        with open(path, "wb") as fh:
            fh.write(data.replace(b"fill_kernel", b"fill\nkernel"))


atexit.register(_patch)


@triton.jit
def fill_kernel(c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(c_ptr + offs, 0.0, mask=offs < n)


def run(A, B, C):
    n = C.numel()
    fill_kernel[(triton.cdiv(n, 1024),)](C, n, BLOCK=1024)
