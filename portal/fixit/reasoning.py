"""The optional reasoning-teacher step: for each repair a repair run found, the run's teacher endpoint (or another
model id on it) is shown the failure and the fix and asked to explain the path from one to the other. The text
is stored beside the pair (`RepairExplanation`), always marked model-written with the teacher named, and becomes
the repair row's `reasoning` / `reasoning_by`. The call runs as a job on the `agent` queue, the only place the
endpoint's key is decrypted, through the same SSRF-guarded client as every model call, and takes one of the
user's places there like a model step (portal/agent/scheduling.py, `EXPLANATION_CALLS`): asking for a hundred
explanations queues at most AGENT_MAX_CALLS_PER_USER calls at once, counted with the user's model steps; the
others wait in the database and are queued as places free up."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime

import django_rq
from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from portal.agent import queueing, scheduling
from portal.agent.client import ModelCallError, chat_completion
from portal.agent.models import ModelRun, Trajectory
from portal.agent.services import RunRefused, _allowlist, endpoint_config
from portal.fixit.models import RepairExplanation
from portal.fixit.pairs import PASSED, fenced

EXPLAIN_JOB = "portal.fixit.jobs.explanation_write"
MAX_EXPLANATION_CHARS = 20_000
_THINK = re.compile(r"<think>.*?(</think>|\Z)", re.DOTALL | re.IGNORECASE)
_FENCED = re.compile(r"```.*?(```|\Z)", re.DOTALL)
EXPLAIN_SYSTEM = "You are an expert in CUDA, PTX and GPU architecture who explains kernel repairs to students."
EXPLAIN_REQUEST = (
    "The second kernel above repairs the first, which failed as its evaluation says. Explain, step by step, from "
    "the failure to the repair: what was wrong, why it failed that way, and what the fix changes. Prose only, "
    "no code block; it will be placed before the fixed kernel."
)


def explanation_messages(trajectory: Trajectory, fixed) -> list[dict]:
    """The conversation the reasoning teacher is sent: the task, the failing kernel and its feedback, the fix."""
    source = trajectory.repair_of
    prompt = next((m.get("content", "") for m in source.trajectory.messages if m.get("role") == "user"), "")
    wrong = fenced(source.kernel) if source.kernel else source.reply
    return [
        {"role": "system", "content": EXPLAIN_SYSTEM},
        {"role": "user", "content": prompt},
        {"role": "assistant", "content": wrong},
        {"role": "user", "content": source.feedback},
        {"role": "assistant", "content": fenced(fixed.kernel)},
        {"role": "user", "content": EXPLAIN_REQUEST},
    ]


def explanations_request(*, run: ModelRun, user: User, teacher: str = "") -> list[RepairExplanation]:
    """Queue one explanation per repair of this repair run that has none yet (its first passing attempt).
    `teacher`: another model id on the run's endpoint (default: the run's own model)."""
    if run.kind != ModelRun.Kind.REPAIR:
        raise RunRefused("explanations are written for repair runs only")
    if run.user_id != user.id and not user.is_staff:
        raise RunRefused("only the owner of the repair run may ask for explanations", 403)
    teacher = (teacher or run.model).strip()
    if not teacher or len(teacher) > 200:
        raise RunRefused("the teacher model id must be 1-200 characters")
    created = []
    waiting = scheduling.WAIT_FOR_CALLS.format(n=settings.AGENT_MAX_CALLS_PER_USER)
    with transaction.atomic():
        for trajectory in run.trajectories.filter(repair_of__isnull=False, explanation__isnull=True):
            fixed = trajectory.turns.filter(verdict_status=PASSED).exclude(kernel="").order_by("index").first()
            if fixed is None:
                continue
            explanation = RepairExplanation.objects.create(
                trajectory=trajectory, fixed_turn=fixed, teacher=teacher, waiting_reason=waiting
            )
            created.append(explanation)
        if created:
            scheduling.model_steps_wake(user_id=run.user_id)  # as many as the user's free places, oldest first
    return created


def _live(user_id: int):
    return RepairExplanation.objects.filter(state=RepairExplanation.State.QUEUED, trajectory__run__user_id=user_id)


def _scheduled_count(user_id: int) -> int:
    return _live(user_id).filter(waiting_reason="").count()


def _waiting(user_id: int, n: int) -> list[tuple[datetime, int]]:
    waiting = _live(user_id).exclude(waiting_reason="").order_by("created_at", "id")
    return list(waiting.values_list("created_at", "id")[:n])


def _wake(explanation_id: int) -> bool:
    """Move a waiting explanation onto the `agent` queue (conditional: one waker wins)."""
    woken = (
        RepairExplanation.objects.filter(id=explanation_id, state=RepairExplanation.State.QUEUED)
        .exclude(waiting_reason="")
        .update(waiting_reason="", attempts=F("attempts") + 1)
    )
    if woken:
        transaction.on_commit(lambda: _enqueue(explanation_id))
    return bool(woken)


def _users_waiting() -> list[int]:
    waiting = RepairExplanation.objects.filter(state=RepairExplanation.State.QUEUED).exclude(waiting_reason="")
    return list(waiting.values_list("trajectory__run__user_id", flat=True).distinct())


# Registered by FixitConfig.ready: explanations share each user's places with their model steps.
EXPLANATION_CALLS = scheduling.CallKind(
    name="fixit-explanation",
    scheduled_count=_scheduled_count,
    waiting=_waiting,
    wake=_wake,
    users_waiting=_users_waiting,
)


def _job_id(explanation_id: int) -> str:
    return f"fixit-explanation-{explanation_id}"


def explanations_reconcile() -> dict[str, int]:
    """Explanations on the queue whose job Redis lost or whose worker died: queued again, up to
    AGENT_STEP_MAX_ATTEMPTS times, then failed, so that a lost job never holds one of the user's places."""
    counts = {"explanations_requeued": 0, "explanations_failed": 0}
    scheduled = RepairExplanation.objects.filter(state=RepairExplanation.State.QUEUED, waiting_reason="")
    for explanation in scheduled.select_related("trajectory__run"):
        if queueing.job_is_alive(_job_id(explanation.id), stale_seconds=settings.AGENT_JOB_STALE_SECONDS):
            continue
        same = RepairExplanation.objects.filter(
            id=explanation.id, state=RepairExplanation.State.QUEUED, waiting_reason="", attempts=explanation.attempts
        )
        with transaction.atomic():
            if explanation.attempts >= settings.AGENT_STEP_MAX_ATTEMPTS:
                error = f"the explanation's job was lost {explanation.attempts} times (worker deaths or Redis restarts)"
                if same.update(state=RepairExplanation.State.FAILED, error=error, finished_at=timezone.now()):
                    counts["explanations_failed"] += 1
                    user_id = explanation.trajectory.run.user_id
                    transaction.on_commit(lambda user_id=user_id: scheduling.model_steps_wake(user_id=user_id))
            elif same.update(attempts=F("attempts") + 1):
                transaction.on_commit(lambda pk=explanation.id: _enqueue(pk))
                counts["explanations_requeued"] += 1
    return counts


def _enqueue(explanation_id: int) -> None:
    django_rq.get_queue(queueing.QUEUE).enqueue(
        EXPLAIN_JOB,
        explanation_id,
        job_id=_job_id(explanation_id),
        job_timeout=int(settings.AGENT_CALL_WALL_MAX_S + 300),
        result_ttl=3600,
        failure_ttl=7 * 24 * 3600,
    )


def clean_explanation(text: str) -> str:
    """The visible prose: thinking and code blocks dropped, bounded."""
    text = _FENCED.sub("", _THINK.sub("", text or "")).strip()
    return text[:MAX_EXPLANATION_CHARS]


def explanation_write(*, explanation_id: int, reveal_api_key, call=chat_completion) -> str:
    """Call the reasoning teacher for one explanation and store its text (or why there is none)."""
    explanation = (
        RepairExplanation.objects.select_related("trajectory__run", "trajectory__repair_of__trajectory", "fixed_turn")
        .filter(id=explanation_id, state=RepairExplanation.State.QUEUED, waiting_reason="")
        .first()
    )
    if explanation is None:
        return "nothing to do"
    run = explanation.trajectory.run
    config = replace(endpoint_config(run, reveal_api_key(run)), model=explanation.teacher)
    try:
        reply = call(
            config,
            explanation_messages(explanation.trajectory, explanation.fixed_turn),
            allowlist=_allowlist(),
            wall_clock_s=settings.AGENT_CALL_WALL_MAX_S,
        )
    except ModelCallError as exc:
        fields = {"state": RepairExplanation.State.FAILED, "error": exc.message[:2000]}
    else:
        text = clean_explanation(reply.content)
        fields = (
            {"state": RepairExplanation.State.DONE, "text": text}
            if text
            else {"state": RepairExplanation.State.FAILED, "error": "the teacher's reply held no prose"}
        )
    RepairExplanation.objects.filter(id=explanation.id, state=RepairExplanation.State.QUEUED).update(
        finished_at=timezone.now(), **fields
    )
    return fields["state"]
