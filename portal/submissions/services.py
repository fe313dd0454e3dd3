"""Writes for submissions and evaluations. Every state change is a conditional UPDATE on the current
state, so two workers, a retry and the reconcile job can never move one evaluation twice."""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

import django.dispatch
from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from evaluator.both_sides.arches import get_arch
from evaluator.both_sides.verdict import OverallStatus, Verdict
from evaluator.languages import DEFAULT_LANGUAGE, LANGUAGES
from portal.accounts.services import user_is_banned
from portal.catalog.models import Task
from portal.submissions import artifacts, queueing, quotas, visibility
from portal.submissions.evidence_files import EvidenceFile, NotKept
from portal.submissions.models import Evaluation, Submission
from portal.submissions.summary import summarise_verdict

log = logging.getLogger(__name__)

# Sent (after commit) when an evaluation reaches a final state; the agent loop listens for its turns.
evaluation_finished = django.dispatch.Signal()
# Sent (after commit) when what public tables may show changed without a new result (hide, review).
results_changed = django.dispatch.Signal()


def _announce(signal: django.dispatch.Signal, **kwargs) -> None:
    """Send after commit; a failing listener is logged, never allowed to fail the job that recorded the result
    (its verdict is already stored; the reconcile loops repair what the listener did not do)."""

    def send() -> None:
        for receiver, result in signal.send_robust(**kwargs):
            if isinstance(result, Exception):
                log.error("listener %r failed: %r", receiver, result, exc_info=result)

    transaction.on_commit(send)


class SubmissionRefused(Exception):
    """The request is invalid or over a limit. `status` is the HTTP status an API answers with."""

    def __init__(self, message: str, status: int = 400, *, retry_after: int | None = None, resets_at=None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retry_after = retry_after  # seconds, for a 429: the API's Retry-After
        self.resets_at = resets_at

    def body(self) -> dict:
        return quotas.quota_error_body(self.message, self.retry_after, self.resets_at)


@dataclass
class SubmitResult:
    submission: Submission
    evaluation: Evaluation | None
    duplicate: bool  # the same source for this task and arch existed, and no new evaluation was started


def decode_source(data: bytes) -> str:
    """Kernel bytes from an upload: at most MAX_SOURCE_BYTES of UTF-8 text without NUL bytes."""
    limit = settings.MAX_SOURCE_BYTES
    if len(data) > limit:
        raise SubmissionRefused(f"the kernel source is {len(data)} bytes; the limit is {limit} bytes", 413)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SubmissionRefused(f"the kernel source is not UTF-8 text (invalid byte at offset {exc.start})") from None
    if "\x00" in text:
        raise SubmissionRefused("the kernel source contains NUL bytes; upload a text file")
    return text


def _check_limits(user: User) -> None:
    """The user's evaluation budget (portal/submissions/quotas.py), the same for every kind of submission."""
    try:
        quotas.evaluation_quota_check(user)
    except quotas.QuotaExceeded as exc:
        raise SubmissionRefused(exc.message, 429, retry_after=exc.retry_after, resets_at=exc.resets_at) from None


def submission_create(
    *,
    user: User | None,
    task: Task,
    arch: str,
    source: str,
    name: str = "",
    note: str = "",
    kind: str = Submission.Kind.KERNEL,
    force: bool = False,
    stages: str | None = None,
    language: str = DEFAULT_LANGUAGE.name,
) -> SubmitResult:
    """Store a kernel and queue its evaluation on the architecture's GPU queue.
    Identical source for the same task and arch is not re-run unless `force`."""
    if user is not None and (not user.is_active or user_is_banned(user)):
        raise SubmissionRefused("this account may not submit", 403)
    if language not in LANGUAGES:
        raise SubmissionRefused(f"unknown language {language!r} (known: {', '.join(LANGUAGES)})")
    if not task.is_active:
        raise SubmissionRefused(f"task {task.slug} is retired")
    if not task.targets.filter(arch=arch).exists():
        raise SubmissionRefused(f"task {task.slug} has no target for architecture {arch}")
    encoded = source.encode("utf-8")
    if len(encoded) > settings.MAX_SOURCE_BYTES:
        raise SubmissionRefused(
            f"the kernel source is {len(encoded)} bytes; the limit is {settings.MAX_SOURCE_BYTES} bytes", 413
        )
    if not source.strip():
        raise SubmissionRefused("the kernel source is empty")
    digest = hashlib.sha256(encoded).hexdigest()

    with transaction.atomic():
        if not force:
            # Never answer with hidden or banned work (or a hidden run's turn): it would reveal it, and 404.
            same = visibility.public_submissions(
                Submission.objects.filter(task=task, arch=arch, language=language, source_sha256=digest)
            )
            # The uploader's own earlier copy, or someone else's upload; an expert kernel's file is never answered
            # with the expert's submission: it becomes the uploader's own (its page says it is identical).
            existing = same.filter(user=user).first() or same.exclude(kind=Submission.Kind.REFERENCE).first()
            if existing is not None:
                return SubmitResult(existing, existing.evaluations.order_by("-created_at").first(), duplicate=True)
        if user is not None:
            _check_limits(user)
        submission = Submission.objects.create(
            user=user,
            task=task,
            arch=arch,
            kind=kind,
            language=language,
            name=name.strip()[:200],
            source=source,
            source_sha256=digest,
            source_bytes=len(encoded),
            note=note.strip()[:2000],
        )
        evaluation = evaluation_create(submission=submission, stages=stages)
    return SubmitResult(submission, evaluation, duplicate=False)


def evaluation_create(
    *, submission: Submission, stages: str | None = None, purpose: str = Evaluation.Purpose.PUBLIC
) -> Evaluation:
    """A new evaluation row, enqueued once the surrounding transaction commits. Hidden checks get a secret seed."""
    evaluation = Evaluation.objects.create(
        submission=submission,
        queue=get_arch(submission.arch).queue,
        stages=stages or settings.EVALUATOR_STAGES,
        purpose=purpose,
        seed=secrets.token_hex(16) if purpose == Evaluation.Purpose.HIDDEN else "",
    )
    transaction.on_commit(lambda: queueing.enqueue_evaluation(evaluation))
    return evaluation


# --------------------------------------------------------------------------- worker side


def evaluation_claim(*, evaluation_id: str, worker_name: str) -> Evaluation | None:
    """Move queued → running for this worker. None when someone else has it or it is final."""
    now = timezone.now()
    claimed = Evaluation.objects.filter(id=evaluation_id, state=Evaluation.State.QUEUED).update(
        state=Evaluation.State.RUNNING,
        worker_name=worker_name[:200],
        attempts=F("attempts") + 1,
        started_at=now,
        heartbeat_at=now,
        stage="",
        stage_message="starting",
    )
    return Evaluation.objects.select_related("submission__task").get(id=evaluation_id) if claimed else None


def evaluation_progress(*, evaluation_id: str, worker_name: str, events: list[dict]) -> bool:
    """Record the evaluator's stage events and a heartbeat. False when the evaluation is no longer ours."""
    fields: dict = {"heartbeat_at": timezone.now()}
    if events:
        row = Evaluation.objects.filter(id=evaluation_id).values("progress").first()
        if row is None:
            return False
        progress = (row["progress"] or []) + events
        last = events[-1]
        fields.update(
            progress=progress[-200:],
            stage=str(last.get("stage", ""))[:32],
            stage_message=str(last.get("message", ""))[:2000],
        )
    updated = Evaluation.objects.filter(
        id=evaluation_id, state=Evaluation.State.RUNNING, worker_name=worker_name[:200]
    ).update(**fields)
    return updated == 1


def evaluation_record_verdict(
    *,
    evaluation_id: str,
    worker_name: str,
    verdict: dict,
    record: Verdict | None,
    files: Sequence[EvidenceFile] = (),
    not_kept: Sequence[NotKept] = (),
) -> bool:
    """Store the verdict document as the evaluator wrote it, its summary columns from `record` (the same document
    as the runner read it, portal/core/verdict_record.py) and its evidence files (within the byte caps,
    portal/submissions/artifact_caps.py), and finish the evaluation (running → done), exactly once. `not_kept`:
    files the runner already left out."""
    headline = (
        Evaluation.objects.filter(id=evaluation_id, submission__task__workloads__is_headline=True)
        .values_list("submission__task__workloads__uuid", flat=True)
        .first()
    )
    summary = summarise_verdict(
        record,
        headline_workload=str(headline) if headline else None,
        plausible_speedup_max=settings.PLAUSIBLE_SPEEDUP_MAX,
    )
    with transaction.atomic():
        updated = Evaluation.objects.filter(
            id=evaluation_id, state=Evaluation.State.RUNNING, worker_name=worker_name[:200]
        ).update(
            state=Evaluation.State.DONE,
            verdict=verdict,
            finished_at=timezone.now(),
            stage="done",
            stage_message=summary.pop("message"),
            **summary,
        )
        if updated != 1:
            log.warning("verdict for evaluation %s dropped: no longer running on %s", evaluation_id, worker_name)
            return False
        evaluation = Evaluation.objects.select_related("submission").get(id=evaluation_id)
        left_out = [*not_kept, *artifacts.store_evidence(evaluation, files)]
        if left_out:
            evaluation.artifacts_not_kept = [item.as_dict() for item in left_out]
            evaluation.save(update_fields=["artifacts_not_kept"])
        _start_ranked_check(evaluation)
        _announce(evaluation_finished, sender=Evaluation, evaluation_id=evaluation_id)
    return True


def _start_ranked_check(evaluation: Evaluation) -> None:
    """A kernel upload whose public evaluation passed gets one hidden evaluation before it may rank."""
    submission = evaluation.submission
    if (
        settings.RANKED_CHECK
        and evaluation.purpose == Evaluation.Purpose.PUBLIC
        and evaluation.status == OverallStatus.PASSED
        and submission.kind == Submission.Kind.KERNEL
        and not submission.evaluations.filter(purpose=Evaluation.Purpose.HIDDEN).exists()
    ):
        evaluation_create(submission=submission, stages=evaluation.stages, purpose=Evaluation.Purpose.HIDDEN)


def evaluation_infra_failure(*, evaluation_id: str, worker_name: str, reason: str) -> str:
    """The infrastructure failed (not the kernel): requeue while attempts remain, else fail for good.
    Returns the new state."""
    with transaction.atomic():
        evaluation = Evaluation.objects.select_for_update().filter(id=evaluation_id).first()
        if evaluation is None or evaluation.state != Evaluation.State.RUNNING:
            return evaluation.state if evaluation else "missing"
        if worker_name and evaluation.worker_name != worker_name[:200]:
            return evaluation.state
        return _retry_or_fail(evaluation, reason)


def _retry_or_fail(evaluation: Evaluation, reason: str) -> str:
    note = {
        "stage": evaluation.stage or "worker",
        "state": "error",
        "message": reason[:500],
        "at": timezone.now().isoformat(),
    }
    if evaluation.attempts < settings.EVALUATION_MAX_ATTEMPTS:
        Evaluation.objects.filter(id=evaluation.id, state=Evaluation.State.RUNNING).update(
            state=Evaluation.State.QUEUED,
            worker_name="",
            stage="",
            stage_message=f"requeued after: {reason[:300]}",
            progress=(evaluation.progress or []) + [note],
        )
        transaction.on_commit(lambda: queueing.enqueue_evaluation(evaluation))
        return Evaluation.State.QUEUED
    Evaluation.objects.filter(id=evaluation.id, state=Evaluation.State.RUNNING).update(
        state=Evaluation.State.FAILED,
        infra_error=reason[:4000],
        finished_at=timezone.now(),
        stage_message=f"failed after {evaluation.attempts} attempts: {reason[:300]}",
        progress=(evaluation.progress or []) + [note],
    )
    evaluation_id = str(evaluation.id)
    _announce(evaluation_finished, sender=Evaluation, evaluation_id=evaluation_id)
    return Evaluation.State.FAILED


def evaluations_requeue_for_stopping_worker(*, worker_name: str) -> list[str]:
    """A worker asked to stop (Ctrl-C, a deploy) gives its running evaluations back to the queue at once, not
    after the stale-heartbeat wait, and without counting the attempt (the kernel did nothing wrong). The runner
    of each then finds it no longer its own at its next progress poll and stops the evaluator's process group.
    Left queued, not enqueued here: the job id is still the stopping worker's; reconcile enqueues it again once
    that job has ended. Returns the evaluation ids."""
    requeued = []
    with transaction.atomic():
        running = Evaluation.objects.select_for_update().filter(
            state=Evaluation.State.RUNNING, worker_name=worker_name[:200]
        )
        for evaluation in running:
            note = {
                "stage": evaluation.stage or "worker",
                "state": "error",
                "message": f"worker {worker_name[:200]} was stopped; requeued",
                "at": timezone.now().isoformat(),
            }
            Evaluation.objects.filter(id=evaluation.id, state=Evaluation.State.RUNNING).update(
                state=Evaluation.State.QUEUED,
                worker_name="",
                stage="",
                stage_message="requeued: its worker was stopped",
                attempts=max(0, evaluation.attempts - 1),
                progress=(evaluation.progress or []) + [note],
            )
            requeued.append(str(evaluation.id))
    return requeued


def evaluation_reconcile(*, now=None) -> dict[str, int]:
    """Repair what crashes leave behind: running evaluations whose worker stopped heartbeating are
    requeued or failed; queued ones whose job vanished from Redis (restart, flush) are enqueued again."""
    now = now or timezone.now()
    stale_before = now - timedelta(seconds=settings.EVALUATION_STALE_SECONDS)
    counts = {"requeued": 0, "failed": 0, "reenqueued": 0}
    for evaluation_id in Evaluation.objects.filter(
        state=Evaluation.State.RUNNING, heartbeat_at__lt=stale_before
    ).values_list("id", flat=True):
        with transaction.atomic():
            evaluation = Evaluation.objects.select_for_update().get(id=evaluation_id)
            if evaluation.state != Evaluation.State.RUNNING or evaluation.heartbeat_at >= stale_before:
                continue
            reason = f"worker {evaluation.worker_name or '?'} stopped (no heartbeat since {evaluation.heartbeat_at:%Y-%m-%d %H:%M:%S} UTC)"
            state = _retry_or_fail(evaluation, reason)
            counts["requeued" if state == Evaluation.State.QUEUED else "failed"] += 1
    queued = Evaluation.objects.filter(state=Evaluation.State.QUEUED, created_at__lt=now - timedelta(seconds=30))
    for evaluation in queued.select_related("submission"):
        if not queueing.job_is_pending(evaluation):
            queueing.enqueue_evaluation(evaluation)
            counts["reenqueued"] += 1
    return counts


# --------------------------------------------------------------------------- admin actions


@transaction.atomic
def submission_hide(*, submission: Submission, reason: str) -> None:
    Submission.objects.filter(id=submission.id).update(is_hidden=True, hidden_reason=reason[:2000])
    _announce(results_changed, sender=Submission)


@transaction.atomic
def evaluation_review(*, evaluation: Evaluation, confirm: bool) -> None:
    state = Evaluation.ReviewState.CONFIRMED if confirm else Evaluation.ReviewState.REJECTED
    Evaluation.objects.filter(id=evaluation.id, review_state=Evaluation.ReviewState.HELD).update(review_state=state)
    _announce(results_changed, sender=Evaluation)
