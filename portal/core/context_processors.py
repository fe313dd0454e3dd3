"""Template context every page gets."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.db import DatabaseError

_CHECK_SECONDS = 30.0  # how stale the banner may be after demo data is loaded or removed
_cached: tuple[float, bool] = (0.0, False)

# Whether an app holds rows made up by `seed_leaderboard`, by app: each app that can hold them registers its own
# check in its AppConfig.ready() (submissions, then model runs, in INSTALLED_APPS order).
_synthetic_checks: dict[str, Callable[[], bool]] = {}


def register_synthetic_rows(app_label: str, check: Callable[[], bool]) -> None:
    """`check()` says whether `app_label` holds rows flagged `is_synthetic` (one indexed EXISTS query)."""
    _synthetic_checks[app_label] = check


def synthetic_demo(request) -> dict:
    """`synthetic_demo`: whether the database holds rows made up by `seed_leaderboard` (flagged `is_synthetic`);
    base.html then shows a "synthetic demo" banner on every page, since any board or chart may include them.
    Checked at most every 30 s per process (an indexed EXISTS query per registered app, until one finds some)."""
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
    try:
        return any(check() for check in _synthetic_checks.values())
    except DatabaseError:
        return False  # a page must render even while the database is unavailable or not migrated
