"""Host boundary, beneath the policy: 20,000 empty folders in the Triton cache (the issue made 200,000:
22 s of the trusted parent's walking, since only files were counted). Expect the cache refused by its cap on files
and folders together, at once, never an infrastructure error."""

import os

import triton
import triton.language as tl

_cache = os.environ["TRITON_CACHE_DIR"]
for _i in range(20_000):
    os.makedirs(os.path.join(_cache, "planted", f"d{_i}"), exist_ok=True)


@triton.jit
def fill_kernel(c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(c_ptr + offs, 0.0, mask=offs < n)


def run(A, B, C):
    n = C.numel()
    fill_kernel[(triton.cdiv(n, 1024),)](C, n, BLOCK=1024)
