"""The arch stage's decisions that need no GPU: answered by static SASS, skipped, or no Nsight Compute here."""

from __future__ import annotations

from pathlib import Path

from evaluator.arch_check import ncu as ncu_mod
from evaluator.arch_check.arch_stage import run_arch_stage
from evaluator.both_sides.taskdata import load_task
from evaluator.both_sides.verdict import ArchStatus, Correctness, SassCounts, StageState, Status, WorkloadResult
from evaluator.measure.candidate import CandidateSetup

TINY = load_task(Path(__file__).resolve().parent / "tasks" / "tiny_gemm")


def _stage(tmp_path, sass, passed, reports, timed=False):
    setup = CandidateSetup(TINY, list(TINY.workloads), tmp_path / "kernel.so", tmp_path, tmp_path / "x", None)
    evaluated = [
        WorkloadResult(w.uuid, dict(w.axes), Status.PASSED if passed else Status.INCORRECT_NUMERICAL, "", Correctness())
        for w in TINY.workloads
    ]
    return run_arch_stage(
        setup,
        arch="sm_90a",
        sass=sass,
        evaluated=evaluated,
        correctness_passed=passed,
        profile_seed=lambda w: 7,
        timeout_s=5,
        allow_unsandboxed_profile=False,
        report=lambda stage, message: reports.append((stage, message)),
        timed=timed,
    )


def _sass(count: int) -> SassCounts:
    return SassCounts("sm_90a", {"gmma": count, "tma": 0}, {}, ["gmma", "tma"], count, ["k"], 10)


def test_absent_target_families_are_decided_statically(tmp_path):
    result = _stage(tmp_path, _sass(0), True, [])
    assert (result.state, result.message, result.outcome) == (
        StageState.PASSED,
        "absent: decided from static SASS",
        None,
    )


def test_failed_correctness_skips_the_profile(tmp_path):
    result = _stage(tmp_path, _sass(4), False, [])
    assert result.state == StageState.SKIPPED and result.outcome.check.status == ArchStatus.NOT_REQUESTED


def test_no_nsight_compute_is_a_profile_error(tmp_path, monkeypatch):
    monkeypatch.setattr(ncu_mod, "find_ncu", lambda: None)
    reports = []
    result = _stage(tmp_path, _sass(4), True, reports)
    check = result.outcome.check
    assert check.status == ArchStatus.PROFILE_ERROR and "not installed" in check.reason
    assert result.state == StageState.FAILED and check.workload in {w.uuid for w in TINY.workloads}
    assert reports[0][0] == "arch" and reports[-1] == ("arch", result.message)
    assert not (tmp_path / "profile").exists()  # nothing was started


def test_a_timed_kernel_without_target_instructions_is_still_profiled_to_cross_check_the_timing(tmp_path, monkeypatch):
    """The timed calls' kernel records come from the candidate's process (harness_cupti_blind switched
    them off around a cuBLAS call, and its SIMT kernel ranked at cuBLAS's speed with no profile to contradict
    it). The status stays `absent`; the profile is taken for its time and kernels."""
    monkeypatch.setattr(ncu_mod, "find_ncu", lambda: None)
    result = _stage(tmp_path, _sass(0), True, [], timed=True)
    assert result.outcome is not None and result.state == StageState.PASSED
    check = result.outcome.check
    assert check.status == ArchStatus.ABSENT and "cross-check" in check.reason
    assert result.outcome.cross_check_only and "not installed" in result.outcome.failure
    assert result.outcome.failure_by_candidate is False  # the host lacks ncu: a note, not a hold


def test_only_the_drivers_setting_says_a_refused_profile_was_the_hosts_doing(tmp_path):
    """A candidate can print ERR_NVGPUCTRPERM itself; the driver's parameter file it cannot write."""
    from evaluator.arch_check.arch_stage import counters_restricted

    params = tmp_path / "params"
    params.write_text("ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\n")
    assert counters_restricted(params)
    params.write_text("RmProfilingAdminOnly: 0\n")
    assert not counters_restricted(params)
    assert not counters_restricted(tmp_path / "missing")


def test_a_verified_check_notes_a_second_tensor_core_path_in_the_module(tmp_path, monkeypatch):
    """The profile is the edge here (it needs a GPU): it reports what Nsight Compute reported for a kernel whose
    SASS holds wgmma and mma.sync. The stage adds the note the verdict carries; without the second path it adds none."""
    from evaluator.arch_check import arch_stage
    from evaluator.binaries.sass import count_families

    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    page = ncu_mod.parse_source_page((fixtures / "ncu" / "h200-probe-wgmma-executed.csv").read_text())

    def profiled(setup, workload, *, arch, sass, **_):
        check = ncu_mod.decide_arch(arch=arch, sass=sass, kernels=page, task_flops=2 * 64 * 8 * 16)
        return arch_stage.ArchOutcome(check)

    monkeypatch.setattr(arch_stage, "profile_workload", profiled)
    two = count_families((fixtures / "sass" / "hopper_two_tensor_paths.sass").read_text(), "sm_90a")
    result = _stage(tmp_path, two, True, [])
    assert result.outcome.check.status == ArchStatus.VERIFIED
    assert [n for n in result.outcome.notes if "other tensor-core instructions (1 HMMA" in n]
    assert result.outcome.check.rests_on_profile  # what the boards mark
    plain = count_families((fixtures / "sass" / "hopper_sm90a.sass").read_text(), "sm_90a")
    result = _stage(tmp_path, plain, True, [])
    assert result.outcome.check.status == ArchStatus.VERIFIED and not result.outcome.notes
    assert not result.outcome.check.rests_on_profile


def test_the_profile_counts_the_operand_type_the_tasks_family_names():
    """The FP8 GEMM's family names fp8 operands, so its profile counts QGMMA only; other tasks name none."""
    from evaluator.arch_check.arch_stage import share_operands

    tasks = Path(__file__).resolve().parents[2] / "tasks"
    assert share_operands(load_task(tasks / "gemm_fp8_n7168_k5120")) == "fp8"
    assert share_operands(load_task(tasks / "gemm_n7168_k5120")) is None
    assert share_operands(TINY) is None
