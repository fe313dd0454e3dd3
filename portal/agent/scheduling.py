"""Which model steps go to the `agent` queue now, so that one user's runs cannot starve another's.

Each user has at most AGENT_MAX_CALLS_PER_USER model steps queued or running; the others wait in the database
(`Turn.waiting_reason`) and are queued, oldest first and at the back of the queue, when one of that user's
steps ends, when one of their evaluations finishes, or on the reconcile tick. A user with a hundred trajectories
therefore holds a handful of places in the queue, and another user's step is reached after at most that many
of their calls, each bounded by AGENT_CALL_WALL_MAX_S. Steps also wait while the user's evaluation budget
(portal/submissions/quotas.py) is spent, instead of queueing evaluations nobody may start."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from portal.agent import queueing
from portal.agent.models import ModelRun, Trajectory, Turn
from portal.submissions import quotas

WAIT_FOR_CALLS = "waiting for your other model calls (at most {n} queued or running at once)"


def _live_calling_turns(user_id: int):
    return Turn.objects.filter(
        state=Turn.State.CALLING_MODEL,
        trajectory__state=Trajectory.State.RUNNING,
        trajectory__run__state__in=ModelRun.ACTIVE_STATES,
        trajectory__run__user_id=user_id,
    )


def scheduled_count(user_id: int) -> int:
    """The user's model steps queued or running (not waiting)."""
    return _live_calling_turns(user_id).filter(waiting_reason="").count()


def enqueue_on_commit(turn: Turn) -> None:
    def enqueue() -> None:
        job_id = queueing.enqueue_model_step(turn)
        Turn.objects.filter(id=turn.id).update(job_id=job_id)

    transaction.on_commit(enqueue)


def model_steps_schedule(*, user_id: int, turns: list[Turn]) -> None:
    """New model steps (inside the transaction that created the turns): queue as many as the user's share
    allows, in order; the rest wait."""
    limit = settings.AGENT_MAX_CALLS_PER_USER
    ids = [t.id for t in turns]
    free = limit - _live_calling_turns(user_id).filter(waiting_reason="").exclude(id__in=ids).count()
    for position, turn in enumerate(turns):
        if position < free:
            enqueue_on_commit(turn)
        else:
            turn_wait(turn, WAIT_FOR_CALLS.format(n=limit))


def turn_wait(turn: Turn, reason: str) -> None:
    """Park a model step in the database; it is queued again by `model_steps_wake`."""
    Turn.objects.filter(id=turn.id, state=Turn.State.CALLING_MODEL).update(
        waiting_reason=reason[:500] or "waiting", lease_until=None
    )
    turn.waiting_reason = reason[:500] or "waiting"


def model_steps_wake(*, user_id: int) -> int:
    """Queue the user's oldest waiting model steps into the places free now. Nothing is woken while the user's
    evaluation budget is spent (their next evaluation, or the hour moving on, wakes them). Returns how many."""
    with transaction.atomic():
        user = User.objects.select_for_update().filter(id=user_id).first()  # one waker per user at a time
        if user is None:
            return 0
        try:
            quotas.evaluation_quota_check(user)
        except quotas.QuotaExceeded:
            return 0
        free = settings.AGENT_MAX_CALLS_PER_USER - scheduled_count(user_id)
        if free <= 0:
            return 0
        woken = 0
        waiting = _live_calling_turns(user_id).exclude(waiting_reason="").order_by("created_at", "id")
        for turn in waiting.select_related("trajectory__run")[:free]:
            if Turn.objects.filter(id=turn.id, waiting_reason=turn.waiting_reason).update(waiting_reason=""):
                enqueue_on_commit(turn)
                woken += 1
    return woken


def users_waiting() -> list[int]:
    """Users with model steps waiting in the database (for the reconcile tick)."""
    return list(
        Turn.objects.filter(
            state=Turn.State.CALLING_MODEL,
            trajectory__state=Trajectory.State.RUNNING,
            trajectory__run__state__in=ModelRun.ACTIVE_STATES,
        )
        .exclude(waiting_reason="")
        .values_list("trajectory__run__user_id", flat=True)
        .distinct()
    )
