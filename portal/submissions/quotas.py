"""The per-user evaluation budget, one rule for every source of evaluations (kernel uploads, model-run turns,
imported trajectories and whatever comes next): at most MAX_ACTIVE_EVALUATIONS queued or running, and at most
EVALUATIONS_PER_HOUR started in the last hour. The hidden ranked check counts as active (it uses a GPU) but is
started by the portal, so it is never refused and not counted in the hourly budget.

`evaluation_quota_check` is the one gate: `submission_create` calls it for every kind of submission."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.utils import timezone

from portal.submissions.models import Evaluation

HOUR = timedelta(hours=1)
# What an API client is told to wait when the active cap is reached: nothing says when an evaluation ends.
ACTIVE_RETRY_SECONDS = 30


class QuotaExceeded(Exception):
    """Over a budget. `retry_after` (seconds) and `resets_at` say when trying again can succeed."""

    def __init__(self, message: str, *, retry_after: int, resets_at: datetime) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = max(int(retry_after), 1)
        self.resets_at = resets_at


@dataclass(frozen=True)
class EvaluationUsage:
    active: int  # queued or running, any source, the ranked check included
    active_limit: int
    last_hour: int  # started by the user (public evaluations) in the last hour
    hourly_limit: int
    oldest_in_hour: datetime | None  # when the oldest of `last_hour` was created


def evaluation_usage(user: User, *, now: datetime | None = None) -> EvaluationUsage:
    now = now or timezone.now()
    mine = Evaluation.objects.filter(submission__user=user)
    recent = mine.filter(purpose=Evaluation.Purpose.PUBLIC, created_at__gte=now - HOUR)
    return EvaluationUsage(
        active=mine.filter(state__in=Evaluation.ACTIVE_STATES).count(),
        active_limit=settings.MAX_ACTIVE_EVALUATIONS,
        last_hour=recent.count(),
        hourly_limit=settings.EVALUATIONS_PER_HOUR,
        oldest_in_hour=recent.order_by("created_at").values_list("created_at", flat=True).first(),
    )


def evaluation_quota_check(user: User, *, now: datetime | None = None) -> EvaluationUsage:
    """Raise QuotaExceeded when one more evaluation for `user` would exceed a budget; else return the usage."""
    now = now or timezone.now()
    usage = evaluation_usage(user, now=now)
    if usage.last_hour >= usage.hourly_limit:
        resets_at = (usage.oldest_in_hour or now) + HOUR
        raise QuotaExceeded(
            f"hourly limit reached: {usage.last_hour} evaluations started in the last hour, uploads and model "
            f"turns together (limit {usage.hourly_limit}); one more may start at {resets_at:%H:%M:%S} UTC",
            retry_after=(resets_at - now).total_seconds() + 1,
            resets_at=resets_at,
        )
    if usage.active >= usage.active_limit:
        raise QuotaExceeded(
            f"{usage.active} of your evaluations are still queued or running, uploads and model turns together "
            f"(limit {usage.active_limit}); wait for one to finish",
            retry_after=ACTIVE_RETRY_SECONDS,
            resets_at=now + timedelta(seconds=ACTIVE_RETRY_SECONDS),
        )
    return usage


def quota_error_body(message: str, retry_after: int | None, resets_at: datetime | None) -> dict:
    """The API's {"error": ...} body for a refusal, with when to retry when that is known."""
    body: dict = {"error": message}
    if retry_after is not None:
        body["retry_after"] = retry_after
        body["resets_at"] = resets_at.isoformat() if resets_at else None
    return body
