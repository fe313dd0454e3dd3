"""Triton candidates through the whole evaluator on a Hopper GPU (run with scripts/gpu_tests.sh tests -k triton).

The reference Triton GEMM passes with wgmma and TMA verified by Nsight Compute, its kernel is the one CUPTI
saw (no foreign kernel), the verdict says language triton; a tl.dot in a branch never taken is not_executed;
each distinct Triton starter passes on its task's smallest workload with no target instruction (absent).
"""

from __future__ import annotations

import pytest
from gpu_requirements import hopper_problem
from test_gpu_evaluator import evaluate_cli

from tests.support.factories import REPO

_PROBLEM = hopper_problem()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_PROBLEM is not None, reason=f"GPU test: {_PROBLEM}")]
pytest.importorskip("triton", reason="Triton is not installed")

REFERENCE = REPO / "tasks/gemm_n4096_k4096/solutions/triton_tma_wgmma/kernel.py"
TASK = "gemm_n4096_k4096"
SMALL = "11764622-9883-5f9b-b1e2-699a830693bf"  # M=128
HEADLINE = "be88d7bb-3c5e-5025-b9af-7ba35d156b1e"


def test_triton_reference_gemm_passes_verified_and_full():
    v = evaluate_cli(REFERENCE, "triton_gemm", task=TASK, workload=HEADLINE)
    assert v["status"] == "PASSED", v["workloads"][0]["message"]
    assert v["language"] == "triton" and v["triton_version"]
    a = v["arch_check"]
    assert a["status"] == "verified", a["reason"]
    assert a["full"] is True
    assert v["integrity"]["candidate_kernels"] == ["gemm_kernel"]
    assert not v["integrity"].get("foreign_kernels")
    assert v["workloads"][0]["performance"]["speedup_factor"] > 0


def test_triton_dot_in_a_branch_never_taken_is_not_executed():
    kernel = REPO / "tests/kernels/triton_dead_dot.py"
    v = evaluate_cli(kernel, "triton_dead_dot", task=TASK, workload=SMALL, stages="correctness,arch")
    assert v["status"] == "PASSED", v["workloads"][0]["message"]
    assert v["sass"]["families"]["gmma"] > 0
    assert v["arch_check"]["status"] == "not_executed", v["arch_check"]["reason"]


# One task per distinct Triton starter (tests/tasks/test_task_suite_triton.py checks them on CPU in the interpreter).
STARTER_TASKS = ("gemm_n256_k7168", "mha_with_lse_d96", "mha_with_lse_d64_causal", "mha_bwd_d96", "mha_bwd_d128_causal")


@pytest.mark.parametrize("task", STARTER_TASKS)
def test_triton_starter_passes_on_the_smallest_workload_without_the_target_instructions(task):
    from evaluator.both_sides.taskdata import find_task

    smallest = find_task(REPO / "tasks", task).workloads[0]
    starter = REPO / "tasks" / task / "starter_triton.py"
    v = evaluate_cli(starter, f"triton_starter_{task}", task=task, workload=smallest.uuid)
    assert v["status"] == "PASSED", v["workloads"][0]["message"]
    assert v["language"] == "triton"
    assert v["sass"]["families"]["gmma"] == 0 and v["sass"]["families"]["tma"] == 0
    assert v["arch_check"]["status"] == "absent", v["arch_check"]["reason"]
