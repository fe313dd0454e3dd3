"""The premise of the two forged-module entries, checked on CPU: the cubin each embeds defines the submission's
kernel name with exactly the footprint of the compiled-in kernel, and other instructions. If a rebuilt image drifted
from that, their GPU runs would be caught by the footprint check again instead of the module images (and, for
`module_forged_footprint` without them, the profiled call's code check), and pass for the wrong reason."""

from __future__ import annotations

import re
import subprocess

import pytest

from evaluator.binaries.sass import disassemble, parse_sass, resource_usage
from evaluator.build.compile import find_nvcc
from evaluator.checks.integrity import RESERVED_SHARED_BYTES, footprint_checks, same_code
from tests.support.factories import REPO

ENTRIES = ("module_forged_footprint.cu", "module_forged_profiler_branch.cu")
NAME = "_Z10gemm_tiledPK13__nv_bfloat16S1_PS_iii"


@pytest.mark.parametrize("entry", ENTRIES)
def test_the_embedded_cubin_forges_the_compiled_in_kernels_name_and_footprint_but_not_its_code(entry, tmp_path):
    source = (REPO / "tests" / "adversarial" / entry).read_text()
    array = source[source.index("kCubin[] = {") : source.index("};", source.index("kCubin[] = {"))]
    forged = tmp_path / "forged.cubin"
    forged.write_bytes(bytes(int(b, 16) for b in re.findall(r"0x([0-9a-f]{2})", array)))
    start = source.index("__global__ void gemm_tiled(")
    own_source = tmp_path / "own.cu"
    own_source.write_text("#include <cuda_bf16.h>\n" + source[start : source.index("\n}\n", start) + 3])
    own = tmp_path / "own.cubin"
    # The evaluator's device flags for sm_90a (-O3, this gencode); -lineinfo and the host pass change no footprint.
    subprocess.run(
        [find_nvcc(), "-cubin", "-O3", "-gencode", "arch=compute_90a,code=sm_90a", str(own_source), "-o", str(own)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    forged_prints, own_prints = resource_usage([forged]), resource_usage([own])
    assert list(forged_prints) == [NAME] and forged_prints[NAME] == own_prints[NAME]
    # As a launch record would show it (the driver's reserved shared memory left out): the timed calls' check passes.
    (launched,) = forged_prints[NAME]
    shared = launched.shared_bytes - RESERVED_SHARED_BYTES
    (check,) = footprint_checks([(NAME, launched.registers, shared)], own_prints)
    assert check.matches
    # What the profiled call compares: the instructions differ.
    opcodes = [[i.opcode for i in parse_sass(disassemble(binary)) if i.kernel == NAME] for binary in (forged, own)]
    assert all(opcodes) and not same_code(*opcodes)
