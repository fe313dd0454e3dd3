"""Host boundary, the Triton compile: this module's top level runs in the sandboxed ahead-of-time compile, once as
root with every capability dropped, when /proc/sys still opened for writing (core_pattern names a program the
kernel runs as root on a crash). It opens host settings for writing (it never writes) and checks its ids: a
sandbox that holds neither root nor a writable setting makes it stop the compile with the word REFUSED-EVERYWHERE.
Expect COMPILE_ERROR naming that word; a compile that goes on (STATIC_ONLY) means the sandbox gave something away."""

import os

import triton
import triton.language as tl

_opened = []
for _path in (
    "/proc/sys/kernel/core_pattern",
    "/proc/sys/vm/drop_caches",
    "/proc/sys/kernel/panic",
    "/proc/sysrq-trigger",
):
    try:
        os.close(os.open(_path, os.O_WRONLY))
        _opened.append(_path)
    except OSError:
        pass
if not _opened and 0 not in os.getresuid():
    raise SystemExit("REFUSED-EVERYWHERE: no host setting opened for writing, no root id")


@triton.jit
def fill_kernel(c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(c_ptr + offs, 0.0, mask=offs < n)


def run(A, B, C):
    n = C.numel()
    fill_kernel[(triton.cdiv(n, 1024),)](C, n, BLOCK=1024)
