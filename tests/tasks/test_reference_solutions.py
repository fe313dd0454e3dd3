"""Every expert reference kernel under tasks/*/solutions/ builds for its architecture and its static SASS holds
what its solution.json promises (the GPU verdicts in docs/verdicts/ cover the run-time part on Hopper)."""

from __future__ import annotations

import pytest

from evaluator.both_sides.taskdata import find_task
from evaluator.isolation.jail import allow_unsandboxed_from_env, find_bwrap
from evaluator.pipeline import evaluate
from evaluator.suite.solutions import Solution, find_solutions
from tests.support.factories import REPO

SOLUTIONS = find_solutions(REPO / "tasks")


@pytest.mark.slow  # a compile of each reference kernel: an nvcc sweep (`make test` runs it, `make test-fast` not)
@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda s: s.label)
def test_reference_solution_compiles_with_its_target_instructions(solution: Solution):
    """STATIC_ONLY also says the policy passed twice: on the source, and after macro expansion on the passes the
    compile kept (inline PTX: wgmma, tcgen05, TMA, mbarrier); either finding would make it POLICY_REJECTED."""
    if find_bwrap() is None and not allow_unsandboxed_from_env():
        pytest.fail("bubblewrap is missing: `make test` installs it")
    task = find_task(REPO / "tasks", solution.task)
    arch, language = solution.arch, solution.language
    if language == "triton":
        pytest.importorskip("triton", reason="Triton is not installed (pip install '.[triton]')")
    verdict = evaluate(solution.source(), task, arch, stages=("policy", "compile", "sass"), language=language)
    assert verdict.status == "STATIC_ONLY", (verdict.status, verdict.compile.output[-2000:] if verdict.compile else "")
    assert verdict.compile.ok and all((r.spill_store_bytes or 0) == 0 for r in verdict.compile.resources)
    families = verdict.sass.families
    expected = solution.expected
    if arch == "sm_100a":
        assert families["tcgen05"] > 0 and families["tma"] > 0
    elif expected["arch_status"] in {"verified", "not_executed", "token"}:
        assert families["gmma"] > 0  # present statically in every Hopper reference, dead or not
        if expected.get("full"):
            assert families["tma"] > 0


HOPPER_SOLUTIONS = [s for s in SOLUTIONS if s.arch == "sm_90a"]


@pytest.mark.gpu
@pytest.mark.parametrize("solution", HOPPER_SOLUTIONS, ids=lambda s: s.label)
def test_reference_solution_meets_its_expectations_on_a_hopper_gpu(solution: Solution):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs a Hopper GPU (compute capability 9.0)")
    task = find_task(REPO / "tasks", solution.task)
    verdict = evaluate(solution.source(), task, "sm_90a", workloads="headline", language=solution.language)
    expected = solution.expected
    assert verdict.status == expected["status"], [w.message for w in verdict.workloads]
    assert verdict.arch_check.status == expected["arch_status"], verdict.arch_check.reason
    if "full" in expected:
        assert verdict.arch_check.full == expected["full"]
