"""Host boundary, beneath the policy: the compile process (which runs this module's top level) plants a
link in the Triton cache to the compile's own environment. The parent once copied the cache with links followed,
so the candidate's copy held the environment (the ranked check's seed) as a plain file. Expect the cache refused."""

import os

import triton
import triton.language as tl

_cache = os.environ["TRITON_CACHE_DIR"]
os.makedirs(os.path.join(_cache, "planted"), exist_ok=True)
os.symlink("/proc/self/environ", os.path.join(_cache, "planted", "fill_kernel.json"))


@triton.jit
def fill_kernel(c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(c_ptr + offs, 0.0, mask=offs < n)


def run(A, B, C):
    n = C.numel()
    fill_kernel[(triton.cdiv(n, 1024),)](C, n, BLOCK=1024)
