"""Code identity of a profiled kernel: Nsight Compute's source page of a kernel captured on an H200 lists exactly the
instructions cuobjdump lists for the same source compiled here with the same nvcc, and another kernel's do not
match. This is what lets the arch stage tell the submission's function from a same-named one loaded at run time."""

from __future__ import annotations

import gzip
from collections import defaultdict
from pathlib import Path

import pytest

from evaluator.arch_check import ncu
from evaluator.binaries import sass
from evaluator.build.compile import compile_kernel
from evaluator.checks.integrity import same_code
from evaluator.isolation.jail import open_jail

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "ncu"
SOLUTIONS = REPO / "tasks" / "gemm_n7168_k5120" / "solutions"

pytestmark = pytest.mark.slow


def _static(source: Path, tmp_path: Path) -> dict[str, list[str]]:
    compiled = compile_kernel(source.read_text(), "sm_90a", tmp_path, timeout_s=600, jail=open_jail())
    assert compiled.result.ok, compiled.result.output[-2000:]
    by_kernel: dict[str, list[str]] = defaultdict(list)
    for ins in sass.parse_sass(sass.disassemble(compiled.cubin or compiled.library)):
        by_kernel[ins.kernel].append(ins.opcode)
    return by_kernel


@pytest.mark.parametrize(
    ("solution", "capture"),
    [
        ("hopper_tma_wgmma", "gpu-hopper_gemm-M8192-source.csv.gz"),
        ("simt_dead_wgmma", "gpu-dead_wgmma-M128-source.csv.gz"),
    ],
)
def test_a_profiled_kernel_is_the_same_code_as_its_static_sass(solution, capture, tmp_path):
    static = _static(SOLUTIONS / solution / "kernel.cu", tmp_path)
    (profiled,) = ncu.parse_source_page(gzip.open(FIXTURES / capture, "rt").read())
    (name,) = static
    assert same_code([r.opcode for r in profiled.rows], static[name])
    # and it is not the code of another kernel
    other = _static(
        SOLUTIONS / ("simt_dead_wgmma" if solution == "hopper_tma_wgmma" else "hopper_tma_wgmma") / "kernel.cu",
        tmp_path / "o",
    )
    assert not same_code([r.opcode for r in profiled.rows], next(iter(other.values())))
