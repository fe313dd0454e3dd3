"""Reads for submission pages and the API. `evaluation_status` feeds both the status page and its JSON."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import Prefetch, QuerySet
from django.utils import timezone

from evaluator.both_sides.arches import ARCHES
from evaluator.both_sides.verdict import STAGES, OverallStatus
from portal.core.api_versions import CURRENT_API_VERSION
from portal.submissions import queueing, serializers
from portal.submissions.compile_log import first_error_lines
from portal.submissions.models import Evaluation, GpuWorker, Submission

STAGE_LABELS = {
    "policy": "Policy check",
    "compile": "Compiling",
    "sass": "Static SASS",
    "correctness": "Correctness",
    "arch": "Instruction check",
    "timing": "Timing",
}


def user_submissions(user: User) -> QuerySet[Submission]:
    """The user's submissions, newest first, each with `public_evaluations` (newest first) and `ranked_checks`
    (the hidden ones, newest first: only their pass/fail may be shown, through `ranked_check`)."""
    newest = Evaluation.objects.order_by("-created_at")
    return (
        Submission.objects.filter(user=user)
        .select_related("task")
        .prefetch_related(
            Prefetch(
                "evaluations",
                queryset=newest.filter(purpose=Evaluation.Purpose.PUBLIC).defer("verdict", "progress"),
                to_attr="public_evaluations",
            ),
            Prefetch(
                "evaluations",
                queryset=newest.filter(purpose=Evaluation.Purpose.HIDDEN).only(
                    "id", "submission_id", "state", "status", "created_at"
                ),
                to_attr="ranked_checks",
            ),
        )
        .order_by("-created_at")
    )


def my_submission_rows(user: User, *, limit: int = 200) -> list[dict[str, Any]]:
    """Rows of "My submissions": the newest public evaluation and the ranked check's pass/fail, nothing else of it."""
    rows = []
    for submission in user_submissions(user)[:limit]:
        checks = submission.ranked_checks
        rows.append(
            {
                "submission": submission,
                "evaluation": submission.public_evaluations[0] if submission.public_evaluations else None,
                "ranked_check": _ranked_check_summary(
                    submission,
                    checks[0] if checks else None,
                    submission.public_evaluations[0] if submission.public_evaluations else None,
                ),
            }
        )
    return rows


def _event_state(event: dict) -> str:
    """A stage event's state: given by the evaluator, or read from its message ("passed: ...", "failed: ...")."""
    state = str(event.get("state") or "")
    if state:
        return state
    word = str(event.get("message", "")).split(":")[0].strip().lower()
    return {"passed": "passed", "failed": "failed", "skipped": "skipped", "not run": "not_run"}.get(word, "running")


def stage_rows(evaluation: Evaluation) -> list[dict[str, str]]:
    """One row per stage: from the verdict once there is one (it knows what was not run), else from the
    evaluator's progress events so far."""
    latest: dict[str, dict] = {}
    for event in evaluation.progress or []:
        stage = event.get("stage")
        if stage in STAGE_LABELS:
            latest[stage] = event
    verdict = evaluation.verdict_record
    recorded = {s.name: s for s in (verdict.stages if verdict else [])}
    rows = [
        {
            "stage": "queued",
            "label": "Queued",
            "state": "passed" if evaluation.state != "queued" else "running",
            "message": "",
        }
    ]
    for stage in STAGES:
        if stage in recorded:
            state = str(recorded[stage].state.value)
            message = str(recorded[stage].message or "")
        else:
            event = latest.get(stage)
            state = _event_state(event) if event else ""
            message = str((event or {}).get("message", ""))
            if state == "running" and evaluation.state != Evaluation.State.RUNNING:
                state = "interrupted"  # the evaluation ended while this stage was in progress
            if not state:
                state = "not_run" if not evaluation.is_active else "pending"
        rows.append({"stage": stage, "label": STAGE_LABELS[stage], "state": state, "message": message})
    return rows


def evaluation_status(evaluation: Evaluation, *, v: int = CURRENT_API_VERSION) -> dict[str, Any]:
    """The evaluation as the status page and the API show it (no secrets in here; sources are separate), its
    field names those of the API's version `v`."""
    data: dict[str, Any] = {
        "id": str(evaluation.id),
        "submission": evaluation.submission_id,
        "state": evaluation.state,
        "final": not evaluation.is_active,
        "stage": evaluation.stage,
        "message": evaluation.stage_message,
        "stages": stage_rows(evaluation),
        "queue": evaluation.queue,
        "queue_position": queueing.queue_position(evaluation) if evaluation.state == Evaluation.State.QUEUED else None,
        "attempts": evaluation.attempts,
        "created_at": evaluation.created_at.isoformat(),
        "started_at": evaluation.started_at.isoformat() if evaluation.started_at else None,
        "finished_at": evaluation.finished_at.isoformat() if evaluation.finished_at else None,
        "error": evaluation.infra_error or None,
    }
    if evaluation.state == Evaluation.State.DONE:
        data["result"] = serializers.evaluation_result(evaluation, v=v)  # the one evaluation shape
        # The lines the status page shows for a failed compile, so the command line can show them too.
        data["compile_errors"] = first_error_lines(evaluation.verdict_record)
    return data


def identical_expert(submission: Submission) -> Submission | None:
    """The expert kernel whose source this upload repeats byte for byte (same task, architecture and language),
    for its page to say so; None for an expert kernel itself, or when no expert kernel has this source."""
    if submission.kind == Submission.Kind.REFERENCE:
        return None
    return (
        Submission.objects.filter(
            kind=Submission.Kind.REFERENCE,
            task_id=submission.task_id,
            arch=submission.arch,
            language=submission.language,
            source_sha256=submission.source_sha256,
            is_hidden=False,
        )
        .order_by("id")
        .first()
    )


def public_evaluations(submission: Submission) -> list[Evaluation]:
    """What the submitter and the public see; hidden ranked checks are summarised by `ranked_check` only."""
    return list(submission.evaluations.filter(purpose=Evaluation.Purpose.PUBLIC).order_by("-created_at"))


def ranked_check(submission: Submission) -> dict[str, str]:
    """Pass/fail of the hidden evaluation with a secret seed that a kernel upload needs before it ranks.
    Nothing else about it is shown: not its inputs, errors or timings."""
    if submission.kind != Submission.Kind.KERNEL:
        return {"state": "not_needed", "message": ""}
    newest = submission.evaluations.order_by("-created_at")
    hidden = newest.filter(purpose=Evaluation.Purpose.HIDDEN).first()
    public = newest.filter(purpose=Evaluation.Purpose.PUBLIC).only("id", "state", "status").first()
    return _ranked_check_summary(submission, hidden, public)


def _ranked_check_summary(
    submission: Submission, hidden: Evaluation | None, public: Evaluation | None
) -> dict[str, str]:
    if submission.kind != Submission.Kind.KERNEL:
        return {"state": "not_needed", "message": ""}
    if hidden is None and public is not None and public.status == OverallStatus.STATIC_ONLY:
        # Scored without a GPU: it can never pass, so it never starts; saying it "runs once the evaluation
        # passes" would promise what cannot happen.
        return {"state": "needs_gpu", "message": "only a GPU evaluation can rank; this one was scored without a GPU"}
    if hidden is None:
        return {"state": "not_started", "message": "runs once the evaluation passes"}
    if hidden.is_active:
        return {"state": "pending", "message": "re-running on fresh inputs from a secret seed"}
    if hidden.state == Evaluation.State.DONE and hidden.status == OverallStatus.PASSED:
        return {"state": "passed", "message": "passed on fresh inputs from a secret seed: eligible to rank"}
    if hidden.state == Evaluation.State.FAILED:
        return {"state": "error", "message": "the check could not run (infrastructure); an operator will retry it"}
    return {"state": "failed", "message": "failed on fresh inputs from a secret seed: not ranked"}


def live_workers() -> QuerySet[GpuWorker]:
    since = timezone.now() - timedelta(seconds=max(3 * settings.WORKER_HEARTBEAT_SECONDS, 60))
    return GpuWorker.objects.filter(stopped_at__isnull=True, heartbeat_at__gte=since).select_related(
        "current_evaluation"
    )


def live_workers_on_gpu(host: str, gpu_uuid: str) -> QuerySet[GpuWorker]:
    """The live workers of `host` bound to the GPU with this UUID: at most one may serve it."""
    return live_workers().filter(host=host, gpu_uuid=gpu_uuid)


def queue_depths() -> dict[str, int]:
    return queueing.queue_depths()


@dataclass(frozen=True)
class ArchCapability:
    """What the live workers of one architecture can do for a new submission, for the submit form."""

    arch: str
    label: str
    gpu_workers: int  # workers with a GPU: every stage, timing included
    cpu_stage_workers: int  # --cpu-stages-only workers: policy, compile, SASS; verdicts say STATIC_ONLY
    gpus: tuple[str, ...]  # GPU names of the GPU workers

    @property
    def summary(self) -> str:
        if self.gpu_workers:
            return (
                f"{self.gpu_workers} GPU worker{'s' if self.gpu_workers != 1 else ''} online "
                f"({', '.join(self.gpus)}): compiled, checked for correctness, profiled and timed."
            )
        if self.cpu_stage_workers:
            return (
                "No GPU worker online, only CPU-stage workers: policy, compile and SASS run now; correctness, "
                "the instruction profile and timing do not (the verdict says STATIC_ONLY)."
            )
        return "No worker online: the submission waits in the queue until one starts."


def worker_capabilities() -> list[ArchCapability]:
    workers = list(live_workers())
    out = []
    for arch in ARCHES.values():
        mine = [w for w in workers if w.arch == arch.name]
        gpu = [w for w in mine if not w.mode.startswith("cpu-stages-only")]
        out.append(
            ArchCapability(
                arch=arch.name,
                label=arch.label,
                gpu_workers=len(gpu),
                cpu_stage_workers=len(mine) - len(gpu),
                gpus=tuple(sorted({w.gpu_name or "GPU" for w in gpu})),
            )
        )
    return out


def has_synthetic_submissions() -> bool:
    """Whether any submission was made up by `seed_leaderboard` (the "synthetic demo" banner)."""
    return Submission.objects.filter(is_synthetic=True).exists()
