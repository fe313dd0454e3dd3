"""Host boundary, beneath the policy: a FIFO in the Triton cache (open() of it blocks a reader that
does not use O_NONBLOCK). Expect it refused without a hang."""

import os

import triton
import triton.language as tl

_cache = os.environ["TRITON_CACHE_DIR"]
os.makedirs(os.path.join(_cache, "planted"), exist_ok=True)
os.mkfifo(os.path.join(_cache, "planted", "fill_kernel.cubin"))


@triton.jit
def fill_kernel(c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(c_ptr + offs, 0.0, mask=offs < n)


def run(A, B, C):
    n = C.numel()
    fill_kernel[(triton.cdiv(n, 1024),)](C, n, BLOCK=1024)
