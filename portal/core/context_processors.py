"""Template context every page gets."""

from __future__ import annotations

import time

from django.apps import apps
from django.db import DatabaseError

_CHECK_SECONDS = 30.0  # how stale the banner may be after demo data is loaded or removed
_cached: tuple[float, bool] = (0.0, False)


def synthetic_demo(request) -> dict:
    """`synthetic_demo`: whether the database holds rows made up by `seed_leaderboard` (flagged `is_synthetic`);
    base.html then shows a "synthetic demo" banner on every page, since any board or chart may include them.
    Checked at most every 30 s per process (two indexed EXISTS queries)."""
    global _cached
    checked_at, value = _cached
    now = time.monotonic()
    if now - checked_at > _CHECK_SECONDS:
        value = _has_synthetic_rows()
        _cached = (now, value)
    return {"synthetic_demo": value}


def reset() -> None:
    global _cached
    _cached = (0.0, False)


def _has_synthetic_rows() -> bool:
    from portal.submissions.models import Submission

    try:
        if Submission.objects.filter(is_synthetic=True).exists():
            return True
        if apps.is_installed("portal.agent"):
            from portal.agent.models import ModelRun

            return ModelRun.objects.filter(is_synthetic=True).exists()
    except DatabaseError:
        return False  # a page must render even while the database is unavailable or not migrated
    return False
