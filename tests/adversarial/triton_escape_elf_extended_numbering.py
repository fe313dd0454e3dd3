"""Host boundary, beneath the policy: when the compile process exits, it renames its kernel in the cubin
to a name that holds forged SASS lines (an HGMMA and a UTMALDG), and moves the section count into section 0
(extended section numbering, `e_shnum` 0). cuobjdump still reads every section and prints the forged lines; a name
check that saw no sections let them into the static count. Expect the cubin refused for its numbering."""

import atexit
import glob
import os
import struct

import triton
import triton.language as tl

NAME = b"fill_kernel_" + b"x" * 96  # the kernel's name below: room for the forged lines, which keep its length
FORGED = b"f\n/*0000*/ HGMMA.64x256x16.F32.BF16 R24, gdesc[UR4], RZ ;\n/*0010*/ UTMALDG.2D [UR8], [UR4] ;\n"
FORGED = FORGED.ljust(len(NAME), b" ")
assert len(FORGED) == len(NAME)


def _patch():
    for path in glob.glob(os.path.join(os.environ["TRITON_CACHE_DIR"], "*", "*.cubin")):
        with open(path, "rb") as fh:
            data = bytearray(fh.read().replace(NAME, FORGED))
        (shoff,) = struct.unpack_from("<Q", data, 0x28)
        (shnum,) = struct.unpack_from("<H", data, 0x3C)
        struct.pack_into("<Q", data, shoff + 32, shnum)  # section 0's sh_size holds the count
        struct.pack_into("<H", data, 0x3C, 0)
        with open(path, "wb") as fh:
            fh.write(data)


atexit.register(_patch)


@triton.jit
def fill_kernel_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx(
    c_ptr, n, BLOCK: tl.constexpr
):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(c_ptr + offs, 0.0, mask=offs < n)


def run(A, B, C):
    n = C.numel()
    fill_kernel_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx[
        (triton.cdiv(n, 1024),)
    ](C, n, BLOCK=1024)
