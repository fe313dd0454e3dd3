"""Nsight Compute's time of the profiled call is held against the RANKED latency, reached through the arch stage.

`run_arch_stage` reads the ranked latency (which the trusted clock bounds) from the timed workload and hands it
to the check; `absorb_profile` holds the profile against it. Only the profiler run is replaced (`profile_workload`,
which starts ncu on a GPU): a fake at the edge of the world, returning what a real profile of this attack shows.
"""

from __future__ import annotations

from pathlib import Path

from evaluator.arch_check import arch_stage
from evaluator.arch_check.arch_stage import ArchOutcome, run_arch_stage
from evaluator.both_sides.stats import summarize
from evaluator.both_sides.taskdata import load_task
from evaluator.both_sides.verdict import (
    ArchCheck,
    ArchStatus,
    Correctness,
    Integrity,
    OverallStatus,
    Performance,
    SassCounts,
    Status,
    Verdict,
    WorkloadResult,
)
from evaluator.checks.integrity import TIMER_DISAGREEMENT
from evaluator.checks.integrity_record import absorb_profile
from evaluator.measure.candidate import CandidateSetup

TINY = load_task(Path(__file__).resolve().parent / "tasks" / "tiny_gemm")


def profiled_verdict(
    tmp_path,
    monkeypatch,
    *,
    in_process_ms: float,
    ranked_ms: float | None,
    ncu_ms: float,
    host_floor_ms: float | None = None,
) -> Verdict:
    """A timed, passed workload whose ranked latency and in-process median differ, then the arch stage with a
    profile that took `ncu_ms`, and the profile absorbed into the verdict as the pipeline does."""
    workload = TINY.workloads[0]
    perf = Performance(
        latency_ms=ranked_ms,
        candidate=summarize([in_process_ms] * 5, method="cupti", warmup=2),
        host_floor_ms=host_floor_ms,
    )
    row = WorkloadResult(workload.uuid, dict(workload.axes), Status.PASSED, "", Correctness(), performance=perf)
    setup = CandidateSetup(TINY, [workload], tmp_path / "kernel.so", tmp_path, tmp_path / "x", None)
    profile = ArchCheck(ArchStatus.VERIFIED, reason="wgmma executed", ncu_gpu_time_ms=ncu_ms)
    monkeypatch.setattr(arch_stage, "profile_workload", lambda *a, **k: ArchOutcome(profile))
    result = run_arch_stage(
        setup,
        arch="sm_90a",
        sass=SassCounts("sm_90a", {"gmma": 4, "tma": 0}, {}, ["gmma", "tma"], 4, ["k"], 10),
        evaluated=[row],
        correctness_passed=True,
        profile_seed=lambda w: 7,
        timeout_s=5,
        allow_unsandboxed_profile=False,
        report=lambda stage, message: None,
        timed=True,
    )
    v = Verdict("t", TINY.name, "sm_90a", OverallStatus.PASSED, "now", "0" * 64, 1, ["timing", "arch"])
    v.workloads, v.integrity = [row], Integrity()
    assert result.outcome is not None
    absorb_profile(v, result.outcome, {})
    return v


def test_a_profiled_path_that_agrees_only_with_the_candidates_own_timer_is_held(tmp_path, monkeypatch):
    """A kernel takes a fast path only under the profiler (0.5 ms) and makes its in-process timer read the same;
    the trusted clock ranks the timed calls at 1.0 ms. Against the candidate's own median the profile agrees;
    against the ranked latency it is half of it. Mutation caught: `run_arch_stage` passing no ranked latency to
    `compare_timers` (the check then falls back to the candidate's own median and holds nothing)."""
    v = profiled_verdict(tmp_path, monkeypatch, in_process_ms=0.5, ranked_ms=1.0, ncu_ms=0.5)
    [hold] = v.integrity.holds
    assert hold.code == TIMER_DISAGREEMENT and "1 ms of the timed calls" in hold.message


def test_a_profile_that_describes_the_ranked_latency_is_not_held(tmp_path, monkeypatch):
    v = profiled_verdict(tmp_path, monkeypatch, in_process_ms=0.5, ranked_ms=1.0, ncu_ms=0.97)
    assert v.integrity.holds == []


def test_the_host_floor_of_the_timed_workload_reaches_the_check(tmp_path, monkeypatch):
    """h100-2026-12-06j's expert GEMM at M=128: 0.054 ms profiled, 0.0732 ms ranked, of which 0.0074 ms the host's
    own cost a call (the trusted baseline process's floor). Mutation caught: `absorb_profile` not passing the
    workload's `host_floor_ms` (the run's hold comes back)."""
    honest = profiled_verdict(
        tmp_path, monkeypatch, in_process_ms=0.0566, ranked_ms=0.07319, ncu_ms=0.05402, host_floor_ms=0.00742
    )
    assert honest.integrity.holds == []
    without = profiled_verdict(tmp_path, monkeypatch, in_process_ms=0.0566, ranked_ms=0.07319, ncu_ms=0.05402)
    [hold] = without.integrity.holds
    assert hold.code == TIMER_DISAGREEMENT


def test_the_host_floor_is_never_taken_off_an_in_process_median(tmp_path, monkeypatch):
    """Without a ranked latency the yardstick is the candidate process's median, GPU time alone: no host cost in it
    to leave out. Mutation caught: the floor passed whatever the yardstick."""
    v = profiled_verdict(
        tmp_path, monkeypatch, in_process_ms=0.07319, ranked_ms=None, ncu_ms=0.05402, host_floor_ms=0.00742
    )
    [hold] = v.integrity.holds
    assert hold.code == TIMER_DISAGREEMENT and "once the host's own" not in hold.message
