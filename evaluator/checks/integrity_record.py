"""The verdict's integrity record, filled from what one workload's candidate process and the profiled call showed.

The decisions themselves are pure functions in evaluator/checks/integrity.py; this module only applies them to the
verdict: holds collected once, foreign kernels of the profiled call failing its workload, the profiled launches
compared with the timed ones, and Nsight Compute's time with the candidate process's timer.
"""

from __future__ import annotations

from evaluator.arch_check.arch_stage import ArchOutcome
from evaluator.both_sides.launches import Launch
from evaluator.both_sides.verdict import ArchCheck, ArchStatus, Integrity, Status, Verdict
from evaluator.checks.integrity import (
    describe_foreign,
    launch_mismatch,
    matches_submission,
    ncu_hold,
    profile_failed_hold,
)
from evaluator.checks.workload_checks import WorkloadRun


def absorb_workload(record: Integrity, run: WorkloadRun) -> None:
    """One workload run's integrity observations into the verdict's record."""
    for hold in run.holds:
        record.hold(hold)
    record.timed_calls += run.timed_calls
    record.checked_calls += run.checked_calls
    record.sampled_calls += run.sampled_calls
    record.foreign_kernels.extend(k for k in run.foreign_kernels if k not in record.foreign_kernels)
    record.footprints.extend(
        c
        for c in run.footprints
        if all(
            (c.name, c.registers, c.static_shared_bytes) != (o.name, o.registers, o.static_shared_bytes)
            for o in record.footprints
        )
    )
    if run.trusted_ms is not None:
        record.trusted_ms_per_call[run.result.uuid] = round(run.trusted_ms, 6)
    record.l2_persisting_bytes = max(record.l2_persisting_bytes, run.l2_persisting_bytes)


def absorb_profile(v: Verdict, outcome: ArchOutcome, timed_launches: dict[str, list[list[Launch]]]) -> None:
    """The profiled call against the timed ones: the same kernels, only the submission's, the same time."""
    check, record = outcome.check, v.integrity
    assert record is not None
    if outcome.failure is not None:
        was_timed = any(w.performance is not None for w in v.workloads)
        if outcome.failure_by_candidate and was_timed:
            record.hold(profile_failed_hold(outcome.failure))
        elif was_timed:
            record.notes.append(f"the timed figures were not cross-checked by Nsight Compute: {outcome.failure}")
        return
    if outcome.foreign_kernels or outcome.impostors:
        record.foreign_kernels.extend(k for k in outcome.foreign_kernels if k not in record.foreign_kernels)
        record.foreign_kernels.extend(f"{k} (not the submission's code)" for k in outcome.impostors)
        message = (
            describe_foreign(outcome.foreign_kernels, where="the profiled call")
            if outcome.foreign_kernels
            else f"the profiled kernel {outcome.impostors[0][:80]} has the submission's name but other instructions "
            "than the submission's compiled code (a module loaded at run time?): only the compiled submission counts"
        )
        for w in v.workloads:
            if w.uuid == check.workload and w.status == Status.PASSED:
                w.status, w.message = Status.FOREIGN_KERNEL, message
        check.status, check.reason = ArchStatus.NOT_REQUESTED, message
        return
    timed = timed_launches.get(check.workload or "", [])
    profiled = list(outcome.launches)
    mismatch = None if outcome.cross_check_only else launch_mismatch(_named_as_timed(profiled, timed), timed)
    if mismatch is not None:
        record.hold(mismatch)
        if check.status == ArchStatus.VERIFIED:
            check.status = ArchStatus.PROFILE_ERROR
            check.reason = f"not verified: {mismatch.message}"
    reported_ms, host_floor_ms = timer_yardstick(check, v)
    record.hold(
        ncu_hold(
            reported_ms=reported_ms,
            ncu_ms=check.ncu_gpu_time_ms,
            slower_only=outcome.cross_check_only,
            host_floor_ms=host_floor_ms,
        )
    )


def timer_yardstick(check: ArchCheck, v: Verdict) -> tuple[float | None, float | None]:
    """What the profiled call's time is judged against: (that figure, the host's own cost a call to allow for).

    The ranked latency, which the trusted clock bounds: a rewritten in-process timer cannot move it, so the in-process
    median alone is no yardstick. It carries the host's cost a call (measured where no candidate runs); an in-process
    median, GPU time alone, is taken as it is, with none.
    """
    if not check.ranked_latency_ms:
        return check.cupti_median_ms, None
    perf = next((w.performance for w in v.workloads if w.uuid == check.workload and w.performance), None)
    return check.ranked_latency_ms, perf.host_floor_ms if perf is not None else None


def _named_as_timed(profiled: list[Launch], timed: list[list[Launch]]) -> list[Launch]:
    """Profiled launches named as the timed ones are (Nsight Compute may print names demangled, CUPTI mangled)."""
    names = {x.name for call in timed for x in call}
    out = []
    for launch in profiled:
        same = next((n for n in names if n == launch.name or matches_submission(launch.name, [n])), launch.name)
        out.append(Launch(same, launch.grid, launch.block))
    return out
