"""Host boundary, beneath the policy: links planted in the build folder where the trusted side
writes or reads by name: kernel.sass (a SASS stage writing through it: with a .pth target, code ran unsandboxed on the
next evaluation), logs and CSVs (published as artifacts: the environment, the admin password, the database).
Expect a normal static verdict, nothing written through the link (the test checks the target stays absent)."""

import os

import triton
import triton.language as tl

os.symlink("/tmp/ptxbench-adversarial-sass-target.pth", "kernel.sass")
os.symlink("/proc/self/environ", "environ.log")
os.symlink("/etc/shadow", "ncu-raw.csv")
os.makedirs("logs", exist_ok=True)
os.symlink("/proc/self/environ", os.path.join("logs", "secrets.txt"))


@triton.jit
def fill_kernel(c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(c_ptr + offs, 0.0, mask=offs < n)


def run(A, B, C):
    n = C.numel()
    fill_kernel[(triton.cdiv(n, 1024),)](C, n, BLOCK=1024)
