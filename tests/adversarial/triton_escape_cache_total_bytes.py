"""Host boundary, beneath the policy: five sparse files of 60 MiB in the Triton cache, each under the
per-file cap (64 MiB), together above the cache's total cap (256 MiB). Expect a COMPILE_ERROR that names the total
cap, never an infrastructure error."""

import os

import triton
import triton.language as tl

_cache = os.environ["TRITON_CACHE_DIR"]
os.makedirs(os.path.join(_cache, "planted"), exist_ok=True)
for _i in range(5):
    with open(os.path.join(_cache, "planted", f"chunk{_i}.bin"), "wb") as _fh:
        _fh.truncate(60 << 20)


@triton.jit
def fill_kernel(c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(c_ptr + offs, 0.0, mask=offs < n)


def run(A, B, C):
    n = C.numel()
    fill_kernel[(triton.cdiv(n, 1024),)](C, n, BLOCK=1024)
