"""The holds the parent decides when a workload's timing ends (`workload_checks.judge_timing`, which `candidate._time`
calls on the ranked performance). No GPU: the datasheet limits are asked for by GPU name; the ranked figures are
the test's (the parent's clock over lent batches is exercised in tests/evaluator/test_lent_calls_cpu.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluator.both_sides.taskdata import load_task
from evaluator.both_sides.verdict import Correctness, Performance, Status, WorkloadResult
from evaluator.checks.integrity import BEYOND_PHYSICAL_LIMIT, L2_PERSISTENCE
from evaluator.checks.physical_limits import limits_for
from evaluator.checks.workload_checks import WorkloadRun, judge_timing
from evaluator.measure.performance import rank_by_trusted_clock

REPO = Path(__file__).resolve().parents[2]
GEMM = load_task(REPO / "tasks" / "gemm_n4096_k4096")


def time_workload(
    m: int, ranked_ms: float, *, gpu_name: str | None = "NVIDIA H200", l2_changed: int = 0, baseline_ms: float = 1.0
) -> WorkloadRun:
    """One workload's holds, its ranked latency (the parent's clock) given; the in-process figure agrees."""
    workload = next(w for w in GEMM.workloads if w.axes["M"] == m)
    result = WorkloadResult(workload.uuid, dict(workload.axes), Status.PASSED, "", Correctness())
    run = WorkloadRun(result, trusted_ms=ranked_ms)
    flops = GEMM.flops_for(workload)
    result.performance = perf = Performance(baseline="torch_matmul", latency_ms=ranked_ms)
    rank_by_trusted_clock(perf, ranked_ms, baseline_ms, flops, 989.4)
    judge_timing(
        run, ranked_ms, limits_for(GEMM.definition, workload, gpu_name), flops, 0.05, {"changed_bytes": l2_changed}
    )
    return run


def codes(run: WorkloadRun) -> list[str]:
    return [h.code for h in run.holds]


def test_a_rate_above_the_dense_tensor_peak_is_held_on_the_workload_naming_both_figures(tmp_path):
    """M=8192 is 275 GFLOP: 0.2 ms a call would be 1374 TFLOP/s on a GPU whose bf16 tensor cores do 989.4 (the
    issue's stash-and-copy SIMT GEMM ranked at 8,403). Mutation caught: `judge_timing` not asking physical_limit_hold."""
    run = time_workload(8192, 0.2)
    [hold] = [h for h in run.holds if h.code == BEYOND_PHYSICAL_LIMIT]
    assert "1374 TFLOP/s" in hold.message and "989.4 TFLOP/s dense bfloat16" in hold.message
    assert "NVIDIA H200" in hold.message


def test_a_small_workload_faster_than_its_bytes_cross_the_hbm_is_held(tmp_path):
    """M=128 moves 35.65 MB (A, B and C in bf16): 7.43 us at 4.8 TB/s. 5 us a call is 859 TFLOP/s, under the peak, so
    only the bandwidth limit sees it; this is where the trusted clock's host floor binds least."""
    run = time_workload(128, 0.005)
    [hold] = [h for h in run.holds if h.code == BEYOND_PHYSICAL_LIMIT]
    assert "0.005 ms per call" in hold.message and "0.007427 ms" in hold.message
    assert "35.65 MB" in hold.message and "4.8 TB/s" in hold.message and "TFLOP/s" not in hold.message


@pytest.mark.parametrize(("m", "ms"), [(8192, 0.4436), (128, 0.0282)])
def test_honest_figures_are_not_held(m, ms):
    """The committed H200 figures: the reference Triton GEMM at M=8192 (docs/runs/integrity/h200-2026-12-02h)
    and cuBLAS's latency at M=128 of the larger GEMM task, taken here for the smaller one (tighter)."""
    assert codes(time_workload(m, ms)) == []


def test_a_gpu_the_tables_do_not_know_gets_no_physical_limit():
    assert codes(time_workload(8192, 0.02, gpu_name="NVIDIA GeForce RTX 4090")) == []


def test_a_persisting_l2_limit_the_candidate_left_set_is_held():
    """The candidate process reports the largest persisting-L2 limit it found changed before a timed call (it
    reset it each time); the parent holds the result on it. Mutation caught: `judge_timing` not recording
    `l2_hold`."""
    run = time_workload(1024, 0.1, l2_changed=4 << 20)
    assert codes(run) == [L2_PERSISTENCE]
    assert run.l2_persisting_bytes == 4 << 20 and "4194304 bytes" in run.holds[0].message
    assert codes(time_workload(1024, 0.1)) == []
