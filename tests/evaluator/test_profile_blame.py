"""Who is blamed when the profiled call gives nothing: the host only where the driver keeps performance counters
from the sandbox (its parameter file, which no candidate can write), else the candidate, whose result is then held
(`profile_failed`). A candidate can print the driver's refusal itself: the profiled call's output carries its
prints, so the text alone proves nothing. Through the arch stage and the verdict's integrity record, as the
pipeline calls them; the fake `ncu` here prints what such a candidate prints through Nsight Compute and stops."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from evaluator.arch_check import arch_stage
from evaluator.arch_check.arch_stage import run_arch_stage
from evaluator.both_sides.taskdata import load_task
from evaluator.both_sides.verdict import (
    ArchStatus,
    Correctness,
    Integrity,
    Performance,
    SassCounts,
    Status,
    WorkloadResult,
)
from evaluator.checks.integrity import PROFILE_FAILED
from evaluator.checks.integrity_record import absorb_profile
from evaluator.measure.candidate import CandidateSetup
from evaluator.stage_book import new_verdict

TINY = load_task(Path(__file__).resolve().parent / "tasks" / "tiny_gemm")
CANDIDATE_PRINT = (
    "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters"
)


@pytest.fixture
def printing_ncu(tmp_path, monkeypatch):
    """An `ncu` on PATH whose run shows only the candidate's print of the driver's refusal."""
    folder = tmp_path / "ncu-bin"
    folder.mkdir()
    ncu = folder / "ncu"
    ncu.write_text(f"#!/bin/sh\necho '{CANDIDATE_PRINT}'\nexit 1\n")
    ncu.chmod(ncu.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


def _driver_params(tmp_path, monkeypatch, admin_only: bool) -> None:
    """The driver's parameter file, as this test's host has it: the edge of the world for counters_restricted."""
    params = tmp_path / "params"
    params.write_text(f"ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: {int(admin_only)}\n")
    monkeypatch.setattr(arch_stage.counters_restricted, "__defaults__", (params,))


def _profiled_verdict(tmp_path):
    """A timed, correct verdict of the tiny task, then the arch stage and its integrity record as the pipeline runs
    them (evaluator/pipeline.py `_gpu_stages`)."""
    workloads = list(TINY.workloads)
    setup = CandidateSetup(TINY, workloads, tmp_path / "kernel.so", tmp_path / "work", tmp_path / "x", None)
    setup.workdir.mkdir()
    v = new_verdict("// k\n", TINY, "sm_90a", ["correctness", "arch", "timing"])
    v.integrity = Integrity(candidate_kernels=["k"])
    v.workloads = [
        WorkloadResult(
            w.uuid, dict(w.axes), Status.PASSED, "", Correctness(), Performance(latency_ms=0.5, speedup_factor=1.1)
        )
        for w in workloads
    ]
    result = run_arch_stage(
        setup,
        arch="sm_90a",
        sass=SassCounts("sm_90a", {"gmma": 4, "tma": 0}, {}, ["gmma", "tma"], 4, ["k"], 10),
        evaluated=v.workloads,
        correctness_passed=True,
        profile_seed=lambda w: 7,
        timeout_s=30,
        allow_unsandboxed_profile=False,
        report=lambda stage, message: None,
        timed=True,
    )
    assert result.outcome is not None
    v.arch_check = result.outcome.check
    absorb_profile(v, result.outcome, {})
    return v, result.outcome


def test_a_candidate_printing_the_drivers_refusal_is_held(tmp_path, monkeypatch, printing_ncu):
    """Mutation caught: the `counters_restricted()` condition dropped from the blame in
    `arch_stage.profile_workload` (the print alone then turns the hold into a note)."""
    _driver_params(tmp_path, monkeypatch, admin_only=False)
    v, outcome = _profiled_verdict(tmp_path)
    assert "ERR_NVGPUCTRPERM" in (outcome.failure or "") and outcome.failure_by_candidate
    assert v.arch_check.status == ArchStatus.PROFILE_ERROR
    assert [h.code for h in v.integrity.holds] == [PROFILE_FAILED]
    assert v.integrity.notes == []


def test_the_same_refusal_on_a_host_whose_driver_restricts_counters_is_a_note(tmp_path, monkeypatch, printing_ncu):
    _driver_params(tmp_path, monkeypatch, admin_only=True)
    v, outcome = _profiled_verdict(tmp_path)
    assert not outcome.failure_by_candidate
    assert v.integrity.holds == []
    assert len(v.integrity.notes) == 1 and "not cross-checked by Nsight Compute" in v.integrity.notes[0]
