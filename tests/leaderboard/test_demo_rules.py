"""The demo rows (`seed_leaderboard --demo`) obey the rules real ones do: every evaluation holds a verdict valid
against evaluator/verdict.schema.json that the evaluator could have written, its columns are that verdict's, its
stages, latencies and SASS counts agree with its status and instruction check, its rate stays below the physical
limit for what the kernel used, it was submitted before it was evaluated, a held row says why, and a finished run's
rows are final."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import pytest
from django.conf import settings

from evaluator.both_sides import verdict as vm
from evaluator.both_sides.arches import ARCHES
from evaluator.both_sides.taskdata import load_task
from evaluator.checks import peaks
from evaluator.checks.physical_limits import limits_for
from portal.submissions.summary import summarise_verdict
from tests.support.factories import sync_catalog
from tests.support.leaderboard_factories import leaderboard_isolation  # noqa: F401 - autouse fixture
from tests.support.verdicts import validate

pytestmark = [pytest.mark.django_db, pytest.mark.slow]  # about 90 s: every one of ~5,000 verdicts validated

COLUMNS = ("status", "arch_status", "arch_full", "speedup_factor", "latency_ms", "baseline_latency_ms", "tflops",
           "fraction_of_peak", "gpu_name", "review_state", "review_reason")  # fmt: skip


@functools.cache
def _task(slug: str):
    return load_task(Path(settings.TASKS_DIR) / slug)


def _check_verdict(evaluation) -> list[str]:
    """What is wrong with one demo evaluation; empty when it obeys every rule."""
    problems = []
    document = evaluation.verdict
    try:
        validate(document)
    except AssertionError as exc:
        return [str(exc)[:300]]
    record = vm.from_dict(document)
    stages = {s.name: s.state for s in record.stages}
    status = record.status
    headline = _task(record.task).headline_workload
    summary = summarise_verdict(
        record, headline_workload=headline, plausible_speedup_max=settings.PLAUSIBLE_SPEEDUP_MAX
    )
    for column in COLUMNS:
        if getattr(evaluation, column) != summary[column]:
            problems.append(f"column {column} is {getattr(evaluation, column)!r}, its verdict says {summary[column]!r}")
    passed = vm.StageState.PASSED
    if status == vm.OverallStatus.PASSED:
        if any(stages.get(name) != passed for name in vm.STAGES):
            problems.append(f"PASSED with stages {stages}")
    elif status == vm.OverallStatus.COMPILE_ERROR:
        if stages.get("compile") != vm.StageState.FAILED or not record.compile or record.compile.ok:
            problems.append("a compile error whose compile stage did not fail")
        if not (record.compile and "error" in record.compile.output):
            problems.append("a compile error without the compiler's error line")
        if any(stages.get(n) == passed for n in ("correctness", "arch", "timing")):
            problems.append(f"a compile error with later stages passed: {stages}")
    elif status.value.startswith("INCORRECT") or status == vm.OverallStatus.RUNTIME_ERROR:
        if stages.get("correctness") != vm.StageState.FAILED or stages.get("compile") != passed:
            problems.append(f"{status} with stages {stages}")
    if status != vm.OverallStatus.PASSED:
        if evaluation.latency_ms is not None or evaluation.tflops is not None:
            problems.append(f"{status} with figures")
        return problems

    perf = next(w for w in record.workloads if w.uuid == headline).performance
    if perf is None or not (perf.latency_ms and perf.baseline_latency_ms and perf.speedup_factor and perf.tflops):
        return [*problems, "PASSED without latency, baseline latency, speedup and rate"]
    if not math.isclose(perf.speedup_factor, perf.baseline_latency_ms / perf.latency_ms, rel_tol=1e-6):
        problems.append("speedup is not the baseline's latency over the kernel's")
    task = _task(record.task)
    workload = next(w for w in task.workloads if w.uuid == headline)
    flops = task.flops_for(workload)
    if not math.isclose(perf.tflops, flops / (perf.latency_ms * 1e9), rel_tol=1e-6):
        problems.append("TFLOP/s is not the task's FLOPs over the latency")
    gpu = record.environment.gpu_name
    limits = limits_for(task.definition, workload, gpu)
    if limits.peak_tflops and perf.tflops >= limits.peak_tflops:
        problems.append(f"{perf.tflops:.0f} TFLOP/s at or above the {limits.peak_dtype} tensor peak")
    if limits.min_ms and perf.latency_ms <= limits.min_ms:
        problems.append(f"{perf.latency_ms:.4g} ms, faster than the tensors cross the HBM ({limits.min_ms:.4g} ms)")
    check = record.arch_check
    state = check.status
    simt = peaks.non_tensor_peak_tflops(gpu)
    if state != vm.ArchStatus.VERIFIED and simt and perf.tflops >= simt:
        problems.append(
            f"{state} (no tensor core did the work) at {perf.tflops:.0f} TFLOP/s, the non-tensor peak {simt}"
        )
    spec = ARCHES[record.arch]
    target = record.sass.target_count if record.sass else 0
    executed = {name for name, f in check.families.items() if f.executed > 0 and f.predicated_on > 0}
    if state == vm.ArchStatus.ABSENT and target != 0:
        problems.append("absent with target instructions in the SASS")
    if state in (vm.ArchStatus.VERIFIED, vm.ArchStatus.TOKEN, vm.ArchStatus.NOT_EXECUTED) and target == 0:
        problems.append(f"{state} with no target instruction in the SASS")
    if state in (vm.ArchStatus.VERIFIED, vm.ArchStatus.TOKEN) and not executed:
        problems.append(f"{state} with no target family executed")
    if state in (vm.ArchStatus.NOT_EXECUTED, vm.ArchStatus.ABSENT) and executed:
        problems.append(f"{state} with target families executed")
    if check.full != spec.is_full(executed) or (check.full and state != vm.ArchStatus.VERIFIED):
        problems.append("full without every family of the full rule executed")
    if state == vm.ArchStatus.VERIFIED and (check.tensor_core_share or 0) < (check.share_threshold or 0.5):
        problems.append("verified below the tensor-core share threshold")
    if check.timed_beyond_non_tensor is not None and not simt:
        problems.append("a timed-rate claim against a non-tensor rate the GPU's datasheet does not state")
    unshown = state == vm.ArchStatus.VERIFIED and (check.timed_beyond_non_tensor is False or check.other_tensor_static)
    if bool(check.rests_on_profile) != bool(unshown):
        problems.append("rests_on_profile is not set exactly where the arch stage sets it")
    return problems


def test_every_demo_row_obeys_the_rules_of_a_real_one(demo_leaderboard):
    from portal.agent.models import ModelRun, RunTaskMetrics
    from portal.submissions.models import Evaluation

    sync_catalog()
    demo_leaderboard()
    public = Evaluation.objects.filter(purpose=Evaluation.Purpose.PUBLIC).select_related("submission")
    assert public.count() > 4000
    problems = {}
    for evaluation in public.iterator():
        found = _check_verdict(evaluation)
        submitted = evaluation.submission.created_at
        if not (submitted <= evaluation.created_at <= evaluation.started_at <= evaluation.finished_at):
            found.append("evaluated before it was submitted")
        if evaluation.review_state == "held" and not evaluation.review_reason.strip():
            found.append("held without a reason")
        if found:
            problems[str(evaluation.id)] = found
    assert not problems, f"{len(problems)} demo rows break the rules, e.g. {next(iter(problems.items()))}"

    held = public.filter(review_state="held")
    assert held.exists() and all(e.review_reason for e in held)
    states = set(public.values_list("arch_status", flat=True))
    assert {"verified", "token", "not_executed", "absent"} <= states
    assert public.filter(arch_full=True).exists()

    for run in ModelRun.objects.all():
        rows = RunTaskMetrics.objects.filter(run=run)
        if run.state == ModelRun.State.DONE:
            assert run.finished_at is not None and not rows.filter(complete=False).exists(), run.id
        else:
            assert run.finished_at is None and not rows.filter(complete=True).exists(), run.id
