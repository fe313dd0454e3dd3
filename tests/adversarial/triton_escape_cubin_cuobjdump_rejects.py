"""Host boundary, beneath the policy: when the compile process exits, it sets its cubin's ELF flags to
no architecture at all. The file is still plain ELF, so the evaluator's reader accepts it, but cuobjdump refuses
it; that once crashed the evaluation, which was retried as an infrastructure failure and showed a traceback with
host paths. Expect a COMPILE_ERROR naming cuobjdump, from the SASS stage, with no path in the reason."""

import atexit
import glob
import os
import struct

import triton
import triton.language as tl


def _patch():
    for path in glob.glob(os.path.join(os.environ["TRITON_CACHE_DIR"], "*", "*.cubin")):
        with open(path, "rb") as fh:
            data = bytearray(fh.read())
        struct.pack_into("<I", data, 0x30, 0xFFFFFFFF)  # e_flags: the SM version and the rest
        with open(path, "wb") as fh:
            fh.write(data)


atexit.register(_patch)


@triton.jit
def fill_kernel(c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(c_ptr + offs, 0.0, mask=offs < n)


def run(A, B, C):
    n = C.numel()
    fill_kernel[(triton.cdiv(n, 1024),)](C, n, BLOCK=1024)
