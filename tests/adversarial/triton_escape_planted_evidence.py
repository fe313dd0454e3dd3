"""Host boundary, evidence: the compile process (this module's top level) plants files in the Triton cache that
look like the evaluator's own evidence: a `0-kernel.sass` of forged HGMMA and UTMALDG lines, an `ncu-metrics.csv`
whose cells are spreadsheet formulas, and 40 filler files. The portal once published the trusted copy of the
cache as evidence, so the page's "Show the SASS" showed the forged listing and the CSV was served. Expect the kernel
scored on its own SASS (STATIC_ONLY, no target instruction) and, in the portal, none of these files kept
(tests/submissions/test_planted_evidence_corpus.py)."""

import os

import triton
import triton.language as tl

_cache = os.environ["TRITON_CACHE_DIR"]
_planted = os.path.join(_cache, "planted")
os.makedirs(_planted, exist_ok=True)
with open(os.path.join(_planted, "0-kernel.sass"), "w") as f:
    f.write("".join(f"        /*{i:04x}*/  HGMMA.64x256x16.F32.BF16 R24, gdesc[UR4], R24 ;\n" for i in range(40)))
    f.write("        /*0280*/  UTMALDG.2D [UR8], [UR6] ;\n")
with open(os.path.join(_planted, "ncu-metrics.csv"), "w") as f:
    f.write('"Kernel","sm__inst_executed_pipe_tensor_op_gmma.sum"\n"fill_kernel","=HYPERLINK(""http://x"")"\n')
for _i in range(40):
    with open(os.path.join(_planted, f"filler-{_i:02d}.txt"), "w") as f:
        f.write("x")


@triton.jit
def fill_kernel(c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(c_ptr + offs, 0.0, mask=offs < n)


def run(A, B, C):
    n = C.numel()
    fill_kernel[(triton.cdiv(n, 1024),)](C, n, BLOCK=1024)
