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
KERNELS = "kernels"  # kernel submissions' evaluations, reference verdicts
MODELS = "models"  # model runs and their per-task metrics
SCOPES = (KERNELS, MODELS)
_MAX_ENTRIES = 4000


def leaderboard_changed(scopes: tuple[str, ...] = SCOPES) -> None:
    """Start a new generation of the given scopes: their cached tables and charts are recomputed on next read.
    Scopes keep a model turn (frequent during agent runs) from throwing away the kernel boards, and back."""
    for scope in scopes:
        LeaderboardVersion.objects.update_or_create(scope=scope, defaults={"token": uuid.uuid4().hex})


def current_tokens() -> dict[str, str]:
    tokens = dict(LeaderboardVersion.objects.filter(scope__in=SCOPES).values_list("scope", "token"))
    return {scope: tokens.get(scope, "initial") for scope in SCOPES}


class _Store:
    """A per-process map from key to value for each scope; a new token for a scope drops that scope whole."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tokens: dict[str, str] = {}
        self._values: dict[str, dict[Hashable, tuple[float, object]]] = {}

    def get(self, scope: str, token: str, key: Hashable) -> tuple[bool, object]:
        with self._lock:
            if self._tokens.get(scope) != token:
                return False, None
            hit = self._values[scope].get(key)
        if hit is None or hit[0] < time.monotonic():
            return False, None
        return True, hit[1]

    def put(self, scope: str, token: str, key: Hashable, value: object, ttl: float) -> None:
        with self._lock:
            if self._tokens.get(scope) != token:
                self._tokens[scope], self._values[scope] = token, {}
            values = self._values[scope]
            if len(values) >= _MAX_ENTRIES:
                values.clear()
            values[key] = (time.monotonic() + ttl, value)

    def clear(self) -> None:
        with self._lock:
            self._tokens, self._values = {}, {}


_store = _Store()


class Generation:
    """The results generation one request reads from: the tokens are looked up once (one query), then
    serve every table and chart of the page."""

    def __init__(self, tokens: dict[str, str] | None = None) -> None:
        self.tokens = tokens if tokens is not None else current_tokens()

    @property
    def token(self) -> str:
        """One string naming the generation of every scope (for rendered-fragment cache keys)."""
        return "-".join(self.tokens[scope] for scope in SCOPES)

    def get(self, key: Hashable, compute: Callable[[], T], *, scope: str) -> T:
        found, value = _store.get(scope, self.tokens[scope], key)
        if found:
            return value  # type: ignore[return-value]
        value = compute()
        _store.put(scope, self.tokens[scope], key, value, settings.LEADERBOARD_CACHE_SECONDS)
        return value


def clear_process_cache() -> None:
    """Forget everything cached in this process (tests; never needed in production)."""
    _store.clear()
