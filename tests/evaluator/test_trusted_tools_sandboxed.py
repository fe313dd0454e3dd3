"""The toolkit's binary readers run on candidate-made files inside the compile sandbox, and their failure on such a
file is the submission's verdict (evaluator/binaries/binary_tools.py, sass.py, build_stages.sass_stage).

Run outside the sandbox, cuobjdump would read candidate cubins with the host in reach, and a cubin it rejects
would crash the evaluation, retried as an infrastructure failure that shows the traceback (host paths).
A stand-in for cuobjdump (a shell script, the edge of the world here) reports what it can reach from where the
evaluator starts it: the files beside the binary, the binary for writing, the network. Mutation caught: `jail=None`
in sass.py or build_stages.py fails the first two tests; the `except ToolFailed` in sass_stage removed fails the
verdict tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluator.binaries.binary_tools import ToolFailed, read_binary, redact
from evaluator.binaries.sass import disassemble
from evaluator.both_sides.taskdata import find_task
from evaluator.both_sides.verdict import CompileResult, OverallStatus, StageState, Status
from evaluator.build import build_stages
from evaluator.build.compile import CompiledKernel, find_cuobjdump
from evaluator.isolation.jail import Jail, open_jail
from evaluator.stage_book import StageBook, new_verdict
from tests.fixtures.elf import cubins
from tests.support.factories import REPO
from tests.support.sandbox import sandbox_problem
from tests.support.tool_probe import plant, reach

TASK = find_task(REPO / "tasks", "gemm_n4096_k4096")
needs_bwrap = pytest.mark.skipif(sandbox_problem() is not None, reason=f"no bubblewrap here: {sandbox_problem()}")


@pytest.fixture
def planted(tmp_path):
    """A cubin in a folder of its own with a secret beside it, and a probe named cuobjdump in another folder."""
    return plant(tmp_path, folder="build-trusted", name="kernel.cubin", content=cubins.real(), tool="cuobjdump")


@needs_bwrap
def test_cuobjdump_reads_the_binary_in_the_sandbox_alone(planted):
    binary, probe = planted
    before = binary.read_bytes()
    seen = reach(disassemble(binary, str(probe), jail=open_jail(allow_unsandboxed=False)))
    assert seen["sibling"] == "hidden"
    assert seen["write"] == "refused" and binary.read_bytes() == before
    assert seen["net"].split() == ["lo"]


@needs_bwrap
def test_the_sass_stage_starts_cuobjdump_in_the_sandbox(planted, tmp_path, monkeypatch):
    binary, probe = planted
    monkeypatch.setenv("PATH", f"{probe.parent}:/usr/bin:/bin")
    assert find_cuobjdump() == str(probe)
    compiled, book = _triton_like(binary)
    static = build_stages.sass_stage(compiled, TASK, "sm_90a", tmp_path / "build", book, _jail(), TASK.workloads[:1])
    assert static is not None
    listing = build_stages.trusted_sass_path(compiled, tmp_path / "build").read_text()
    assert reach(listing)["sibling"] == "hidden" and reach(listing)["write"] == "refused"


@pytest.mark.parametrize("how", ["e_flags of no architecture", "code that is no instruction"])
def test_a_cubin_cuobjdump_rejects_is_a_compile_error_without_host_paths(tmp_path, how):
    binary = tmp_path / "build-trusted" / "kernel.cubin"
    binary.parent.mkdir()
    data = cubins.real()
    if how.startswith("e_flags"):
        cubins.header(data, "flags", 0xFFFFFFFF)
    else:
        start = cubins.section(data, cubins.TEXT, "offset")
        data[start : start + cubins.section(data, cubins.TEXT, "size")] = b"\xff" * cubins.section(
            data, cubins.TEXT, "size"
        )
    binary.write_bytes(data)
    compiled, book = _triton_like(binary)
    book.verdict.compile = compiled.result
    static = build_stages.sass_stage(compiled, TASK, "sm_90a", tmp_path / "build", book, _jail(), TASK.workloads[:2])
    v = book.verdict
    assert static is None and v.status == OverallStatus.COMPILE_ERROR
    assert v.stage("sass").state == StageState.FAILED
    assert [w.status for w in v.workloads] == [Status.COMPILE_ERROR] * 2
    message = v.workloads[0].message
    assert message.startswith("the compiled code was refused: cuobjdump could not read the compiled code")
    assert "/" not in message, message  # the tool's words, without a host path
    assert not v.compile.ok and v.compile.output.endswith(f"[evaluator] {message}")


def test_a_tool_s_complaint_is_cleared_of_host_paths():
    binary = Path("/srv/ptxbench/work/eval-1/build-trusted/triton-cache/ABC/kernel.cubin")
    tool = "/opt/cuda/bin/cuobjdump"
    said = redact(
        f"cuobjdump fatal   : Invalid fatbin header in '{binary}'\nnvdisasm fatal : /tmp/tmpxft_1-0 is bad\x1b[31m\n"
        f"nvdisasm fatal : /tmp/tmpxft_1-0 is bad\x1b[31m",
        binary,
        tool,
    )
    assert (
        said == "cuobjdump fatal   : Invalid fatbin header in 'kernel.cubin' | nvdisasm fatal : tmpxft_1-0 is bad?[31m"
    )


def test_a_listing_above_its_cap_is_a_tool_failure(planted):
    binary, _ = planted
    with pytest.raises(ToolFailed, match="printed more than 1024 bytes"):
        read_binary(find_cuobjdump(), ["--dump-sass"], binary, jail=None, max_bytes=1024)


def _jail() -> Jail:
    return open_jail(allow_unsandboxed=sandbox_problem() is not None)


def _triton_like(binary: Path) -> tuple[CompiledKernel, StageBook]:
    """A compiled record as the Triton build leaves it: cubins in the trusted folder, no compile-cache entry."""
    result = CompileResult(ok=True, command=["triton"], returncode=0, seconds=0.0, output="")
    compiled = CompiledKernel(result, binary, binary, cubins=[binary])
    compiled.trusted_dir = binary.parent
    stages = ["policy", "compile", "sass"]
    return compiled, StageBook(new_verdict("source", TASK, "sm_90a", stages), stages)
