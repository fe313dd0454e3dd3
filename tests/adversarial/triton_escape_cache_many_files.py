"""Host boundary, beneath the policy: 600 small files in the Triton cache, above its file-count cap (512).
Each is harmless; the count is what costs the parent (one open, fstat and copy each). Expect a COMPILE_ERROR that
names the cap, never an infrastructure error."""

import os

import triton
import triton.language as tl

_cache = os.environ["TRITON_CACHE_DIR"]
os.makedirs(os.path.join(_cache, "planted"), exist_ok=True)
for _i in range(600):
    with open(os.path.join(_cache, "planted", f"part{_i}.json"), "w") as _fh:
        _fh.write("{}")


@triton.jit
def fill_kernel(c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(c_ptr + offs, 0.0, mask=offs < n)


def run(A, B, C):
    n = C.numel()
    fill_kernel[(triton.cdiv(n, 1024),)](C, n, BLOCK=1024)
