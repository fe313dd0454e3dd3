"""The holds the parent decides when a workload's timing ends, reached through `candidate._time` itself.

The candidate process is replaced by `ScriptedChild`, which answers the parent's commands over the same message
format (encoded and decoded as on the pipe) with a timing report of the test's choosing: a fake at the process
edge, so that what these tests hold is the parent's wiring, the path production takes after a real process
reported the same figures. No GPU: the datasheet limits are asked for by GPU name.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

import pytest

from evaluator import protocol
from evaluator.candidate import CandidateSetup, Seeds, TimingPlan, TimingRequest, WorkloadRun, _time
from evaluator.correctness import Checker
from evaluator.integrity import BEYOND_PHYSICAL_LIMIT, L2_PERSISTENCE
from evaluator.taskdata import load_task
from evaluator.verdict import Correctness, Status, WorkloadResult

REPO = Path(__file__).resolve().parents[2]
GEMM = load_task(REPO / "tasks" / "gemm_n4096_k4096")
WARMUP, ITERS = 2, 5


class ScriptedChild:
    """The candidate process's side of the timing protocol: every call returns, nothing is saved, and `finish`
    is answered with `timing`, the report a real candidate process would send."""

    def __init__(self, timing: dict[str, Any]) -> None:
        self.timing = timing
        self.pending: deque[dict[str, Any]] = deque()
        self.calls: Any = iter(())

    def send(self, command: dict[str, Any]) -> None:
        name = protocol.command_name(command)
        if name == protocol.TIMING:
            _, _, warmup, iters, _ = protocol.timing_args(command)
            self.calls = iter(range(warmup, warmup + iters + 1))  # the timed calls, then the re-check
            self._answer(protocol.called_event(next(self.calls)))
        elif name == protocol.NEXT:
            index = next(self.calls, None)
            if index is not None:
                self._answer(protocol.called_event(index))
        elif name == protocol.FINISH:
            self._answer(self.timing)
        else:
            raise AssertionError(f"the parent sent {name!r}, which this script does not serve")

    def _answer(self, message: dict[str, Any]) -> None:
        self.pending.append(protocol.decode(protocol.encode(message)))

    def receive(self, deadline: float) -> dict[str, Any]:
        return self.pending.popleft()


def timing_report(candidate_ms: float, *, baseline_ms: float = 1.0, l2_changed: int = 0) -> dict[str, Any]:
    def series(ms: float) -> dict[str, Any]:
        return {"samples_ms": [ms] * ITERS, "activities": [1] * ITERS}

    return protocol.timing_event(
        "host_clock",
        None,
        {"candidate": series(candidate_ms), "baseline": series(baseline_ms)},
        {"timed": [], "trials": [], "batch": []},
        [],
        {"changed_bytes": l2_changed, "error": ""},
    )


def time_workload(tmp_path: Path, m: int, report: dict[str, Any], gpu_name: str | None = "NVIDIA H200") -> WorkloadRun:
    """One workload's timing end to end in the parent, the candidate process's report given."""
    workload = next(w for w in GEMM.workloads if w.axes["M"] == m)
    result = WorkloadResult(workload.uuid, dict(workload.axes), Status.PASSED, "", Correctness())
    run = WorkloadRun(result)
    setup = CandidateSetup(GEMM, [workload], tmp_path / "kernel.so", tmp_path, tmp_path, None, device_type="cpu")
    seeds = Seeds(trials=[], calls=list(range(WARMUP + ITERS)), recheck=99)
    plan = TimingPlan(checked=set(), batch_checked=[])
    request = TimingRequest(WARMUP, ITERS, peak_tflops=989.4, gpu_name=gpu_name)
    checker = Checker.for_task(GEMM, "cpu", tmp_path)
    _time(ScriptedChild(report), checker, workload, seeds, plan, {}, request, run, 1e18, setup)
    assert result.status == Status.PASSED and result.performance is not None, result.message
    return run


def codes(run: WorkloadRun) -> list[str]:
    return [h.code for h in run.holds]


def test_a_rate_above_the_dense_tensor_peak_is_held_on_the_workload_naming_both_figures(tmp_path):
    """M=8192 is 275 GFLOP: 0.2 ms a call would be 1374 TFLOP/s on a GPU whose bf16 tensor cores do 989.4 (the
    issue's stash-and-copy SIMT GEMM ranked at 8,403). Mutation caught: `_time` not asking physical_limit_hold."""
    run = time_workload(tmp_path, 8192, timing_report(0.2))
    [hold] = [h for h in run.holds if h.code == BEYOND_PHYSICAL_LIMIT]
    assert "1374 TFLOP/s" in hold.message and "989.4 TFLOP/s dense bfloat16" in hold.message
    assert "NVIDIA H200" in hold.message


def test_a_small_workload_faster_than_its_bytes_cross_the_hbm_is_held(tmp_path):
    """M=128 moves 35.65 MB (A, B and C in bf16): 7.43 us at 4.8 TB/s. 5 us a call is 859 TFLOP/s, under the peak, so
    only the bandwidth limit sees it; this is where the trusted clock's host floor binds least."""
    run = time_workload(tmp_path, 128, timing_report(0.005))
    [hold] = [h for h in run.holds if h.code == BEYOND_PHYSICAL_LIMIT]
    assert "0.005 ms per call" in hold.message and "0.007427 ms" in hold.message
    assert "35.65 MB" in hold.message and "4.8 TB/s" in hold.message and "TFLOP/s" not in hold.message


@pytest.mark.parametrize(("m", "ms"), [(8192, 0.4436), (128, 0.0282)])
def test_honest_figures_are_not_held(tmp_path, m, ms):
    """The committed H200 figures: the reference Triton GEMM at M=8192 (docs/runs/integrity/h200-2026-12-02h)
    and cuBLAS's latency at M=128 of the larger GEMM task, taken here for the smaller one (tighter)."""
    assert codes(time_workload(tmp_path, m, timing_report(ms))) == []


def test_a_gpu_the_tables_do_not_know_gets_no_physical_limit(tmp_path):
    assert codes(time_workload(tmp_path, 8192, timing_report(0.02), gpu_name="NVIDIA GeForce RTX 4090")) == []


def test_a_persisting_l2_limit_the_candidate_left_set_is_held_through_the_timing_path(tmp_path):
    """The candidate process reports the largest persisting-L2 limit it found changed before a timed call (it
    reset it each time); the parent holds the result on it. Mutation caught: `_time` not recording `l2_hold`
    (before this test, only GPU corpus entries covered it)."""
    run = time_workload(tmp_path, 1024, timing_report(0.1, l2_changed=4 << 20))
    assert codes(run) == [L2_PERSISTENCE]
    assert run.l2_persisting_bytes == 4 << 20 and "4194304 bytes" in run.holds[0].message
    assert codes(time_workload(tmp_path, 1024, timing_report(0.1))) == []
