"""Host boundary, beneath the policy: a folder of the Triton cache that is a link to / (every file the
parent's user may read would be copied or listed through it). Expect the cache refused."""

import os

import triton
import triton.language as tl

os.symlink("/", os.path.join(os.environ["TRITON_CACHE_DIR"], "root"))


@triton.jit
def fill_kernel(c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(c_ptr + offs, 0.0, mask=offs < n)


def run(A, B, C):
    n = C.numel()
    fill_kernel[(triton.cdiv(n, 1024),)](C, n, BLOCK=1024)
