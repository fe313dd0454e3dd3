"""Host boundary, beneath the policy: five sparse files of 60 MiB in the build folder, beside the Triton
cache rather than in it (the issue wrote 3 GiB there in 12.6 s, accepted: only the cache had a cap). Expect the
build refused by the cache's byte cap, which now covers the whole build folder."""

import os

import triton
import triton.language as tl

_build = os.path.dirname(os.environ["TRITON_CACHE_DIR"])
for _i in range(5):
    with open(os.path.join(_build, f"filler{_i}.bin"), "wb") as _fh:
        _fh.truncate(60 << 20)


@triton.jit
def fill_kernel(c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(c_ptr + offs, 0.0, mask=offs < n)


def run(A, B, C):
    n = C.numel()
    fill_kernel[(triton.cdiv(n, 1024),)](C, n, BLOCK=1024)
