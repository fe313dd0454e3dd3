"""Host boundary, beneath the policy: a 200 MiB sparse file in the Triton cache (free to make, ruinous to
copy or hash). Expect the cache refused by its size cap."""

import os

import triton
import triton.language as tl

_cache = os.environ["TRITON_CACHE_DIR"]
os.makedirs(os.path.join(_cache, "planted"), exist_ok=True)
with open(os.path.join(_cache, "planted", "giant.cubin"), "wb") as _fh:
    _fh.truncate(200 << 20)  # under the compile's file-size limit, above the copy cap


@triton.jit
def fill_kernel(c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(c_ptr + offs, 0.0, mask=offs < n)


def run(A, B, C):
    n = C.numel()
    fill_kernel[(triton.cdiv(n, 1024),)](C, n, BLOCK=1024)
