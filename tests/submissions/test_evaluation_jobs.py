"""Evaluations through real Redis and real RQ workers running the real evaluator (CPU stages on this machine):
verdicts and artifacts stored, infrastructure faults retried then failed, duplicate jobs harmless,
and a worker killed mid-job repaired by the reconcile job."""

from __future__ import annotations

import hashlib
import os
import signal
import time
from datetime import timedelta
from pathlib import Path

import django_rq
import pytest
from django.test import override_settings
from django.utils import timezone

from portal.catalog.models import Task
from portal.submissions import artifacts, queueing
from portal.submissions.models import Evaluation
from portal.submissions.services import evaluation_reconcile, submission_create
from tests.support.factories import (
    BROKEN_KERNEL,
    GEMM,
    LIGHT_KERNEL,
    REPO,
    make_user,
    start_manage_process,
    starter_source,
    sync_catalog,
)
from tests.support.rq_workers import PromptSimpleWorker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("allow_unsandboxed_without_bwrap")]
CPU = "policy,compile,sass"


@pytest.fixture
def alice():
    sync_catalog()
    return make_user("alice")


def _submit(user, source: str, **kwargs) -> Evaluation:
    result = submission_create(user=user, task=Task.objects.get(slug=GEMM), arch="sm_90a", source=source, **kwargs)
    return result.evaluation


def _drain(queue: str = "gpu-sm90") -> None:
    django_rq.get_worker(queue, worker_class=PromptSimpleWorker).work(burst=True)


@override_settings(EVALUATOR_STAGES=CPU)
def test_a_compiling_kernel_gets_a_static_verdict_with_artifacts(alice):
    evaluation = _submit(alice, starter_source(), name="naive")
    _drain()
    evaluation.refresh_from_db()
    assert evaluation.state == Evaluation.State.DONE
    assert evaluation.status == "STATIC_ONLY"  # no GPU here: nothing claimed about correctness or speed
    assert evaluation.arch_status == "absent"  # a SIMT starter has no wgmma/TMA
    assert evaluation.verdict["sass"]["target_count"] == 0
    assert [e["stage"] for e in evaluation.progress][:2] == ["policy", "policy"]
    assert any(e["stage"] == "compile" and e["message"].startswith("passed") for e in evaluation.progress)
    from portal.submissions.selectors import stage_rows

    states = {row["stage"]: row["state"] for row in stage_rows(evaluation)}
    assert states == {
        "queued": "passed",
        "policy": "passed",
        "compile": "passed",
        "sass": "passed",
        "correctness": "not_run",  # said plainly: no GPU stage is implied to have happened
        "arch": "not_run",
        "timing": "not_run",
    }
    stored = {a.name: a for a in evaluation.artifacts.all()}
    assert {"kernel.cu", "verdict.json"} <= set(stored)
    # The SASS stage's own listing, kept as the evaluator's evidence: its counts are the verdict's.
    assert stored["kernel.sass"].origin == "evaluator" and not evaluation.artifacts_not_kept
    kernel = artifacts.read(stored["kernel.cu"])
    assert kernel.decode() == starter_source()
    assert hashlib.sha256(kernel).hexdigest() == stored["kernel.cu"].sha256


@override_settings(EVALUATOR_STAGES=CPU)
def test_a_broken_kernel_is_a_verdict_not_a_retry(alice):
    evaluation = _submit(alice, BROKEN_KERNEL)
    _drain()
    evaluation.refresh_from_db()
    assert evaluation.state == Evaluation.State.DONE and evaluation.attempts == 1
    assert evaluation.status == "COMPILE_ERROR"
    log = artifacts.read(evaluation.artifacts.get(name="compile.log")).decode()
    assert "error" in log


@override_settings(EVALUATOR_STAGES=CPU)
def test_a_cublas_include_is_rejected_by_policy(alice):
    evaluation = _submit(alice, "#include <cublas_v2.h>\n" + starter_source())
    _drain()
    evaluation.refresh_from_db()
    assert evaluation.status == "POLICY_REJECTED"
    assert evaluation.verdict["compile"] is None  # nothing was compiled
    assert "cublas_v2.h" in evaluation.verdict["policy"][0]["text"]


@override_settings(EVALUATOR_STAGES=CPU, EVALUATOR_PYTHON="/nonexistent/python3", EVALUATION_MAX_ATTEMPTS=2)
def test_infrastructure_faults_are_retried_then_failed_with_the_reason(alice):
    evaluation = _submit(alice, starter_source())
    _drain()  # attempt 1 fails and requeues, attempt 2 fails for good, all inside one burst
    evaluation.refresh_from_db()
    assert evaluation.state == Evaluation.State.FAILED
    assert evaluation.attempts == 2
    assert "could not run the evaluator" in evaluation.infra_error
    assert [e["state"] for e in evaluation.progress] == ["error", "error"]


@pytest.mark.no_compile_cache  # a cached compile must not let the evaluator finish inside the limit
@override_settings(EVALUATOR_STAGES=CPU, EVALUATION_TIMEOUT=1, EVALUATION_MAX_ATTEMPTS=1)
def test_an_evaluator_past_its_time_limit_is_stopped(alice):
    evaluation = _submit(alice, starter_source())
    _drain()
    evaluation.refresh_from_db()
    assert evaluation.state == Evaluation.State.FAILED
    assert "ran past the 1 s limit" in evaluation.infra_error


@override_settings(EVALUATOR_STAGES="policy")
def test_enqueueing_twice_is_harmless(alice):
    evaluation = _submit(alice, starter_source())
    queueing.enqueue_evaluation(evaluation)  # a second copy of the same job id
    _drain()
    evaluation.refresh_from_db()
    assert evaluation.state == Evaluation.State.DONE and evaluation.attempts == 1
    assert evaluation.artifacts.filter(name="verdict.json").count() == 1


def test_reconcile_requeues_a_queued_evaluation_whose_job_vanished(alice):
    evaluation = _submit(alice, starter_source())
    django_rq.get_connection("gpu-sm90").flushdb()  # Redis lost everything (restart without persistence)
    assert not queueing.job_is_pending(evaluation)
    counts = evaluation_reconcile(now=timezone.now() + timedelta(minutes=5))
    assert counts["reenqueued"] == 1
    assert queueing.job_is_pending(evaluation)


@override_settings(EVALUATION_STALE_SECONDS=5)
def test_worker_killed_mid_job_is_detected_and_the_job_requeued_then_finished(alice, monkeypatch):
    evaluation = _submit(alice, starter_source())
    worker = start_manage_process("gpu_worker", "--cpu-stages-only", "--arch", "sm_90a", "--name", "doomed")
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            evaluation.refresh_from_db()
            if evaluation.state == Evaluation.State.RUNNING:
                break
            time.sleep(0.2)
        assert evaluation.state == Evaluation.State.RUNNING, "the worker never picked the job up"
        os.killpg(worker.pid, signal.SIGKILL)  # the worker and its work horse die without a word
        worker.wait(timeout=10)
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
    evaluation.refresh_from_db()
    assert evaluation.state == Evaluation.State.RUNNING  # nothing else noticed

    counts = evaluation_reconcile(now=timezone.now() + timedelta(seconds=30))
    assert counts == {"requeued": 1, "failed": 0, "reenqueued": 0}
    evaluation.refresh_from_db()
    assert evaluation.state == Evaluation.State.QUEUED
    assert "worker doomed stopped" in evaluation.stage_message
    assert queueing.job_is_pending(evaluation)

    monkeypatch.setenv("PTXBENCH_WORKER_STAGES", CPU)  # what gpu_worker --cpu-stages-only sets for its jobs
    _drain()
    evaluation.refresh_from_db()
    assert evaluation.state == Evaluation.State.DONE and evaluation.attempts == 2
    assert evaluation.status == "STATIC_ONLY"


def test_hidden_check_seed_reaches_the_evaluator_through_its_environment_only(alice, tmp_path):
    from portal.submissions.runner import run_evaluator

    def run(seed: str, where):
        return run_evaluator(
            source=starter_source(),
            task=GEMM,
            arch="sm_90a",
            stages="policy",
            workdir=where,
            tasks_root=REPO / "tasks",
            timeout=120,
            on_events=lambda events: True,
            seed=seed,
        )

    # The evaluator reads it (a malformed seed is refused) ...
    bad = run("not-hex", tmp_path / "bad")
    assert bad.verdict is None and "hexadecimal" in bad.error
    good = run("00112233445566778899aabbccddeeff", tmp_path / "good")
    assert good.verdict is not None
    # ... and it never appears in the verdict or anything kept for audit.
    assert all(b"00112233445566778899aabbccddeeff" not in item.data for item in good.files)


def _task_with_hidden_workloads(root: Path) -> list[str]:
    """A copy of the GEMM task under `root` with two hidden workloads (no repository task has any); their uuids."""
    import json
    import shutil

    shutil.copytree(REPO / "tasks" / GEMM, root / GEMM, ignore=shutil.ignore_patterns("solutions", "__pycache__"))
    uuids = ["0d1d0e00-0000-4000-8000-00000000a001", "0d1d0e00-0000-4000-8000-00000000a002"]
    lines = [
        json.dumps({
            "definition": GEMM, "solution": None, "evaluation": None,
            "workload": {"uuid": u, "axes": {"M": m}, "inputs": {"A": {"type": "random"}, "B": {"type": "random"}}},
        })
        for u, m in zip(uuids, (96, 1536), strict=True)
    ]  # fmt: skip
    (root / GEMM / "hidden_workloads.jsonl").write_text("\n".join(lines) + "\n")
    return uuids


def _recording_python(folder: Path) -> Path:
    """An EVALUATOR_PYTHON that notes the seed in its environment and its arguments, then runs the real evaluator."""
    import shlex
    import stat
    import sys

    folder.mkdir()
    shim = folder / "python"
    shim.write_text(
        "#!/bin/sh\n"
        f"record={shlex.quote(str(folder))}/run-$$\n"
        'printf \'%s\' "${EVALUATOR_SEED-<unset>}" > "$record.seed"\n'
        'printf \'%s\\n\' "$@" > "$record.argv"\n'
        f'exec {shlex.quote(sys.executable)} "$@"\n'
    )
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    return shim


def _recorded_runs(folder: Path) -> list[tuple[str, list[str]]]:
    return [(p.with_suffix(".seed").read_text(), p.read_text().splitlines()) for p in sorted(folder.glob("run-*.argv"))]


@override_settings(EVALUATOR_STAGES="policy")
def test_a_ranked_check_runs_the_hidden_workloads_with_its_stored_seed(alice, settings, tmp_path):
    """Through RQ and the worker job on a task with hidden workloads: the public evaluation runs the public
    workloads with no seed given; the ranked check runs exactly the hidden workloads, and the evaluator process got
    the check's stored seed (through its environment, never its arguments). The kernel is refused by policy, so the
    verdict lists the workloads that were chosen without compiling anything.
    Mutations caught (tried): `jobs.evaluate` passing `seed=""`, or `workload="all"` for a ranked check."""
    from portal.submissions.services import evaluation_create

    settings.TASKS_DIR = tmp_path / "tasks"
    hidden_uuids = _task_with_hidden_workloads(settings.TASKS_DIR)
    records = tmp_path / "records"
    settings.EVALUATOR_PYTHON = str(_recording_python(records))
    public = _submit(alice, "#include <cublas_v2.h>\n" + starter_source())
    _drain()
    public.refresh_from_db()
    assert public.state == Evaluation.State.DONE, public.infra_error
    assert public.verdict["workload_set"] == "public"
    assert not {w["uuid"] for w in public.verdict["workloads"]} & set(hidden_uuids)
    [(seed, argv)] = _recorded_runs(records)
    assert seed == "<unset>" and "--workload" not in argv

    for f in records.glob("run-*"):
        f.unlink()
    hidden = evaluation_create(submission=public.submission, purpose=Evaluation.Purpose.HIDDEN)
    assert len(hidden.seed) == 32
    _drain()
    hidden.refresh_from_db()
    assert hidden.state == Evaluation.State.DONE, hidden.infra_error
    assert hidden.verdict["workload_set"] == "hidden"
    assert sorted(w["uuid"] for w in hidden.verdict["workloads"]) == hidden_uuids  # these, and no public one
    [(seed, argv)] = _recorded_runs(records)
    assert seed == hidden.seed  # the stored secret seed reached the evaluator ...
    assert argv[argv.index("--workload") + 1] == "ranked"
    assert hidden.seed not in " ".join(argv)  # ... and not through its arguments


@override_settings(EVALUATOR_STAGES="policy")
def test_a_failing_finished_listener_does_not_fail_the_recorded_evaluation(alice, caplog):
    from portal.submissions.services import evaluation_finished

    def broken_listener(**kwargs):
        raise RuntimeError("listener bug")

    evaluation_finished.connect(broken_listener, dispatch_uid="test-broken")
    try:
        evaluation = _submit(alice, starter_source())
        _drain()
    finally:
        evaluation_finished.disconnect(dispatch_uid="test-broken")
    evaluation.refresh_from_db()
    assert evaluation.state == Evaluation.State.DONE
    job = django_rq.get_queue("gpu-sm90").fetch_job(str(evaluation.id))
    assert job.is_finished  # RQ saw success: the verdict is stored, the listener's failure only logged
    assert "listener bug" in caplog.text


@override_settings(EVALUATOR_STAGES=CPU)
def test_the_hidden_check_reuses_the_public_evaluations_compile(alice, tmp_path, monkeypatch):
    from portal.submissions.services import evaluation_create

    # What gpu_worker does with settings.EVALUATOR_COMPILE_CACHE: the evaluator children read the variable.
    monkeypatch.setenv("EVALUATOR_COMPILE_CACHE", str(tmp_path / "compile-cache"))
    # The cache is the subject: a kernel cheap to compile (this test's private cache makes it a real compile).
    public = _submit(alice, LIGHT_KERNEL)
    _drain()
    hidden = evaluation_create(submission=public.submission, purpose=Evaluation.Purpose.HIDDEN)
    _drain()
    public.refresh_from_db()
    hidden.refresh_from_db()
    assert public.verdict["compile"]["cached"] is False
    assert hidden.verdict["compile"]["cached"] is True
    assert hidden.verdict["compile"]["library_sha256"] == public.verdict["compile"]["library_sha256"]
    assert hidden.verdict["sass"]["target_count"] == public.verdict["sass"]["target_count"]
