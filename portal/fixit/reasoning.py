"""The optional reasoning-teacher step: for each repair a repair run found, the run's teacher endpoint (or another
model id on it) is shown the failure and the fix and asked to explain the path from one to the other. The text
is stored beside the pair (`RepairExplanation`), always marked model-written with the teacher named, and becomes
the repair row's `reasoning` / `reasoning_by`. The call runs as a job on the `agent` queue, the only place the
endpoint's key is decrypted, through the same SSRF-guarded client as every model call."""

from __future__ import annotations

import re
from dataclasses import replace

import django_rq
from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

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
    with transaction.atomic():
        for trajectory in run.trajectories.filter(repair_of__isnull=False, explanation__isnull=True):
            fixed = trajectory.turns.filter(status=PASSED).exclude(kernel="").order_by("index").first()
            if fixed is None:
                continue
            explanation = RepairExplanation.objects.create(trajectory=trajectory, fixed_turn=fixed, teacher=teacher)
            created.append(explanation)
            transaction.on_commit(lambda pk=explanation.id: _enqueue(pk))
    return created


def _enqueue(explanation_id: int) -> None:
    django_rq.get_queue("agent").enqueue(
        EXPLAIN_JOB,
        explanation_id,
        job_id=f"fixit-explanation-{explanation_id}",
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
        .filter(id=explanation_id, state=RepairExplanation.State.QUEUED)
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
