"""Leaderboard aggregates are computed once per generation of results and kept in process memory.

The generation token lives in the database (`LeaderboardVersion`), so a verdict recorded by a GPU worker,
a ban in the admin or a finished model turn invalidates every web process at once; reading the token is
the one query a cached page costs. Writes that bypass signals (queryset `.update()`) are caught by the
time limit `LEADERBOARD_CACHE_SECONDS`, or by calling `leaderboard_changed()` explicitly."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Hashable
from typing import TypeVar

from django.conf import settings

from portal.leaderboard.models import LeaderboardVersion

T = TypeVar("T")
SCOPE = "results"
_MAX_ENTRIES = 4000


def leaderboard_changed() -> None:
    """Start a new generation: every cached table and chart is recomputed on its next read."""
    LeaderboardVersion.objects.update_or_create(scope=SCOPE, defaults={"token": uuid.uuid4().hex})


def current_token() -> str:
    token = LeaderboardVersion.objects.filter(scope=SCOPE).values_list("token", flat=True).first()
    return token or "initial"


class _Store:
    """A per-process map from (generation, key) to value; a new generation drops the old one whole."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._token = ""
        self._values: dict[Hashable, tuple[float, object]] = {}

    def get(self, token: str, key: Hashable) -> tuple[bool, object]:
        with self._lock:
            if token != self._token:
                return False, None
            hit = self._values.get(key)
        if hit is None or hit[0] < time.monotonic():
            return False, None
        return True, hit[1]

    def put(self, token: str, key: Hashable, value: object, ttl: float) -> None:
        with self._lock:
            if token != self._token:
                self._token, self._values = token, {}
            if len(self._values) >= _MAX_ENTRIES:
                self._values.clear()
            self._values[key] = (time.monotonic() + ttl, value)

    def clear(self) -> None:
        with self._lock:
            self._token, self._values = "", {}


_store = _Store()


class Generation:
    """The results generation one request reads from: look the token up once, then serve many tables."""

    def __init__(self, token: str | None = None) -> None:
        self.token = token if token is not None else current_token()

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        found, value = _store.get(self.token, key)
        if found:
            return value  # type: ignore[return-value]
        value = compute()
        _store.put(self.token, key, value, settings.LEADERBOARD_CACHE_SECONDS)
        return value


def clear_process_cache() -> None:
    """Forget everything cached in this process (tests; never needed in production)."""
    _store.clear()
