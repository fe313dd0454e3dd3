"""Host boundary, beneath the policy: a cubin in the Triton cache that is a link to /dev/zero. The
parent's digest once read it forever (a worker hung ~90 minutes, then the job was requeued). Expect it refused."""

import os

import triton
import triton.language as tl

_cache = os.environ["TRITON_CACHE_DIR"]
os.makedirs(os.path.join(_cache, "planted"), exist_ok=True)
os.symlink("/dev/zero", os.path.join(_cache, "planted", "zero.cubin"))


@triton.jit
def fill_kernel(c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(c_ptr + offs, 0.0, mask=offs < n)


def run(A, B, C):
    n = C.numel()
    fill_kernel[(triton.cdiv(n, 1024),)](C, n, BLOCK=1024)
