"""Which model calls go to the `agent` queue now, so that one user's runs cannot starve another's.

Each user has at most AGENT_MAX_CALLS_PER_USER model calls queued or running: the model steps of their runs and
the other kinds of call registered here (`call_kind_register`: Fixit's reasoning-teacher explanations), all
counted together. The others wait in the database (`Turn.waiting_reason`, or the other kind's own field) and are
queued, oldest first whatever their kind and at the back of the queue, when one of that user's calls ends, when
one of their evaluations finishes, or on the reconcile tick. A user with a hundred trajectories therefore holds
a handful of places in the queue, and another user's step is reached after at most that many of their calls,
each bounded by AGENT_CALL_WALL_MAX_S. Model steps also wait while the user's evaluation budget
(portal/submissions/quotas.py) is spent, instead of queueing evaluations nobody may start; calls that start no
evaluation do not."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from portal.agent import queueing
from portal.agent.models import ModelRun, Trajectory, Turn
from portal.submissions import quotas

WAIT_FOR_CALLS = "waiting for your other model calls (at most {n} queued or running at once)"


@dataclass(frozen=True)
class CallKind:
    """Another kind of model call that shares each user's places in the `agent` queue with model steps. The app
    that owns it registers it once (its AppConfig.ready), so this module never imports that app."""

    name: str
    scheduled_count: Callable[[int], int]  # user id → that user's calls of this kind queued or running
    waiting: Callable[[int, int], list[tuple[datetime, int]]]  # (user id, n) → up to n waiting (created_at, id)
    wake: Callable[[int], bool]  # id → queued (conditional update, enqueue on commit); False when another took it
    users_waiting: Callable[[], list[int]]  # users with calls of this kind waiting


_CALL_KINDS: dict[str, CallKind] = {}


def call_kind_register(kind: CallKind) -> None:
    _CALL_KINDS[kind.name] = kind


def _other_calls_scheduled(user_id: int) -> int:
    return sum(kind.scheduled_count(user_id) for kind in _CALL_KINDS.values())


def _live_calling_turns(user_id: int):
    return Turn.objects.filter(
        state=Turn.State.CALLING_MODEL,
        trajectory__state=Trajectory.State.RUNNING,
        trajectory__run__state__in=ModelRun.ACTIVE_STATES,
        trajectory__run__user_id=user_id,
    )


def scheduled_count(user_id: int) -> int:
    """The user's model calls queued or running (not waiting): model steps and every registered kind."""
    return _live_calling_turns(user_id).filter(waiting_reason="").count() + _other_calls_scheduled(user_id)


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
    scheduled = _live_calling_turns(user_id).filter(waiting_reason="").exclude(id__in=ids).count()
    free = limit - scheduled - _other_calls_scheduled(user_id)
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
    """Queue the user's oldest waiting model calls (model steps and registered kinds, by age) into the places free
    now. No model step is woken while the user's evaluation budget is spent (their next evaluation, or the hour
    moving on, wakes them); calls of other kinds start no evaluation and go on. Returns how many were queued."""
    with transaction.atomic():
        user = User.objects.select_for_update().filter(id=user_id).first()  # one waker per user at a time
        if user is None:
            return 0
        free = settings.AGENT_MAX_CALLS_PER_USER - scheduled_count(user_id)
        if free <= 0:
            return 0
        candidates: list[tuple[datetime, int, Callable[[], bool]]] = []
        try:
            quotas.evaluation_quota_check(user)
        except quotas.QuotaExceeded:
            pass
        else:
            waiting = _live_calling_turns(user_id).exclude(waiting_reason="").order_by("created_at", "id")
            for turn in waiting.select_related("trajectory__run")[:free]:
                candidates.append((turn.created_at, turn.id, lambda turn=turn: _turn_wake(turn)))
        for kind in _CALL_KINDS.values():
            for created_at, pk in kind.waiting(user_id, free):
                candidates.append((created_at, pk, lambda kind=kind, pk=pk: kind.wake(pk)))
        woken = 0
        for _, _, wake in sorted(candidates, key=lambda c: (c[0], c[1])):
            if woken >= free:
                break
            woken += bool(wake())
    return woken


def _turn_wake(turn: Turn) -> bool:
    if Turn.objects.filter(id=turn.id, waiting_reason=turn.waiting_reason).update(waiting_reason=""):
        enqueue_on_commit(turn)
        return True
    return False


def users_waiting() -> list[int]:
    """Users with model calls waiting in the database (for the reconcile tick)."""
    users = set(
        Turn.objects.filter(
            state=Turn.State.CALLING_MODEL,
            trajectory__state=Trajectory.State.RUNNING,
            trajectory__run__state__in=ModelRun.ACTIVE_STATES,
        )
        .exclude(waiting_reason="")
        .values_list("trajectory__run__user_id", flat=True)
        .distinct()
    )
    for kind in _CALL_KINDS.values():
        users.update(kind.users_waiting())
    return sorted(users)
