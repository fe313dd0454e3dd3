"""Leaderboard aggregates are computed once per generation of results and shared by every web process.

The generation token lives in the database (`LeaderboardVersion`), so a verdict recorded by a GPU worker,
a ban in the admin or a finished model turn invalidates every web process at once; reading the token is
the one query a cached page costs. Writes that bypass signals (queryset `.update()`) are caught by the
time limit `LEADERBOARD_CACHE_SECONDS`, or by calling `leaderboard_changed()` explicitly.

A value is looked up in three places, each keyed by scope, token and key:
1. this process's memory (no round trip; also keeps the previous generation, see below);
2. the shared store, the `leaderboard` cache alias (Redis, `store.py`), filled by whichever process computed
   the value first;
3. otherwise the value is computed. A short lock in the store makes one process compute it; the others serve
   the previous generation's value meanwhile (stale-while-revalidate) or, with none to serve, wait up to
   WAIT_SECONDS for it. A value built from a stale part is served but never stored under the new token; a
   page rendered from one is reused for STALE_RENDER_SECONDS under a key of its own (boards/views.py). So a page
   shows earlier results at most as long as computing the newest ones takes (LOCK_SECONDS if the process
   computing dies), plus STALE_RENDER_SECONDS.
Without the store (Redis down, alias not configured) every process computes for itself, as before."""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.base import InvalidCacheBackendError

from portal.leaderboard.models import LeaderboardVersion

T = TypeVar("T")
KERNELS = "kernels"  # kernel submissions' evaluations, reference verdicts
MODELS = "models"  # model runs and their per-task metrics
SCOPES = (KERNELS, MODELS)
INITIAL = "initial"  # token of a scope never changed; not unique to this database, so never shared
STORE_ALIAS = "leaderboard"
LOCK_SECONDS = 10  # one process computes a value; if it dies, another may start after this long
WAIT_SECONDS = 3.0  # with no older value to serve, wait this long for the process computing, then compute too
POLL_SECONDS = 0.02
STALE_KEEP_SECONDS = 30  # a superseded generation's value stays in the store this long, for stale reads
STALE_RENDER_SECONDS = 2  # a page rendered from stale values is reused this long (per process), then rendered again
# The store holds pickles, and a pickle names the module of each class in it (the board rows of boards/ranking.py, the
# trajectories of charts/turns.py): when such a class moves, raise this, or a process reads a pickle naming a module its
# code no longer has (an error on every page until the generation changes).
STORE_FORMAT = 2
_MAX_ENTRIES = 4000
_GENERATIONS_KEPT = 2  # per scope in process memory: the current one and the one before (stale reads)


def leaderboard_changed(scopes: tuple[str, ...] = SCOPES) -> None:
    """Start a new generation of the given scopes: their cached tables and charts are recomputed on next read.
    Scopes keep a model turn (frequent during agent runs) from throwing away the kernel boards, and back."""
    for scope in scopes:
        LeaderboardVersion.objects.update_or_create(scope=scope, defaults={"token": uuid.uuid4().hex})


def current_tokens() -> dict[str, str]:
    tokens = dict(LeaderboardVersion.objects.filter(scope__in=SCOPES).values_list("scope", "token"))
    return {scope: tokens.get(scope, INITIAL) for scope in SCOPES}


class _Memory:
    """This process's values: per scope, the last few generations (token -> key -> (expires_at, value))."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._scopes: dict[str, OrderedDict[str, dict[Hashable, tuple[float, object]]]] = {}

    def get(self, scope: str, token: str, key: Hashable) -> tuple[bool, object]:
        with self._lock:
            hit = self._scopes.get(scope, {}).get(token, {}).get(key)
        if hit is None or hit[0] < time.time():
            return False, None
        return True, hit[1]

    def previous(self, scope: str, token: str, key: Hashable) -> tuple[bool, object]:
        """The newest unexpired value of `key` from a generation other than `token`."""
        with self._lock:
            generations = list(self._scopes.get(scope, {}).items())
        for other, values in reversed(generations):
            hit = values.get(key)
            if other != token and hit is not None and hit[0] >= time.time():
                return True, hit[1]
        return False, None

    def put(self, scope: str, token: str, key: Hashable, value: object, expires_at: float) -> None:
        with self._lock:
            generations = self._scopes.setdefault(scope, OrderedDict())
            if token not in generations:
                generations[token] = {}
                while len(generations) > _GENERATIONS_KEPT:
                    generations.popitem(last=False)
            values = generations[token]
            if len(values) >= _MAX_ENTRIES:
                values.clear()
            values[key] = (expires_at, value)

    def clear(self) -> None:
        with self._lock:
            self._scopes = {}


_memory = _Memory()


def shared_store():
    """The `leaderboard` cache alias (SharedRedisCache), or None where CACHES does not define it."""
    try:
        return caches[STORE_ALIAS]
    except InvalidCacheBackendError:
        return None


def entry_name(scope: str, token: str, key: Hashable) -> str:
    """A value's name in the shared store; its lock is this plus ":lock"."""
    return f"{scope}:v{STORE_FORMAT}:{token}:{_digest(key)}"


def _latest_name(scope: str, key: Hashable) -> str:
    """Names the token under which `key` was last stored (the value stale reads fall back to)."""
    return f"{scope}:v{STORE_FORMAT}:latest:{_digest(key)}"


def _digest(key: Hashable) -> str:
    # Keys are tuples of strings, numbers and frozen dataclasses: their repr is stable across processes.
    return hashlib.blake2b(repr(key).encode(), digest_size=16).hexdigest()


class Generation:
    """The results generation one request reads from: the tokens are looked up once (one query), then
    serve every table and chart of the page."""

    def __init__(self, tokens: dict[str, str] | None = None) -> None:
        self.tokens = tokens if tokens is not None else current_tokens()
        # True once any value this request got came from an older generation (another process was computing
        # the current one): what the request builds from it must not be cached under `token`.
        self.stale = False

    @property
    def token(self) -> str:
        """One string naming the generation of every scope (for rendered-fragment cache keys)."""
        return "-".join(self.tokens[scope] for scope in SCOPES)

    def get(self, key: Hashable, compute: Callable[[], T], *, scope: str) -> T:
        token = self.tokens[scope]
        found, value = _memory.get(scope, token, key)
        if found:
            return value  # type: ignore[return-value]
        store = shared_store() if token != INITIAL else None
        if store is None:
            return self._compute(scope, key, compute, None)
        name = entry_name(scope, token, key)
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            found, value = _fetch(store, name)
            if found:
                _memory.put(scope, token, key, value[1], value[0])
                return value[1]
            if store.add(f"{name}:lock", 1, LOCK_SECONDS):
                # The process that held the lock may have published and let go between the look-up above and
                # this: look again under the lock, or the value is computed twice.
                if not _fetch(store, name)[0]:
                    return self._compute(scope, key, compute, store, lock=f"{name}:lock")
                store.delete(f"{name}:lock")
                continue  # the look-up at the top takes the published value
            if not getattr(store, "available", True) or time.monotonic() >= deadline:
                return self._compute(scope, key, compute, store)  # Redis down, or the computing process is slow
            found, value = self._previous(store, scope, key)
            if found:
                self.stale = True
                return value  # type: ignore[return-value]
            time.sleep(POLL_SECONDS)  # nothing older to show: wait for the process computing it

    def _previous(self, store, scope: str, key: Hashable) -> tuple[bool, object]:
        """The value of `key` from the newest earlier generation, from memory or the store."""
        token = self.tokens[scope]
        found, value = _memory.previous(scope, token, key)
        if found:
            return True, value
        latest = store.get(_latest_name(scope, key))
        if latest is None or latest == token:
            return False, None
        found, value = _fetch(store, entry_name(scope, latest, key))
        return (True, value[1]) if found else (False, None)

    def _compute(self, scope: str, key: Hashable, compute: Callable[[], T], store, *, lock: str = "") -> T:
        token = self.tokens[scope]
        outer_stale, self.stale = self.stale, False
        try:
            value = compute()
            if not self.stale:  # a value built from an older generation's part is served, never stored
                expires_at = time.time() + settings.LEADERBOARD_CACHE_SECONDS
                _memory.put(scope, token, key, value, expires_at)
                if store is not None:
                    _publish(store, scope, token, key, value, expires_at)
        finally:
            self.stale = outer_stale or self.stale
            if lock:
                store.delete(lock)
        return value


def _fetch(store, name: str) -> tuple[bool, tuple[float, object]]:
    """A stored (expires_at, value) that has not expired; the store's own TTL is in whole seconds."""
    hit = store.get(name)
    if hit is None or hit[0] < time.time():
        return False, (0.0, None)
    return True, hit


def _publish(store, scope: str, token: str, key: Hashable, value: object, expires_at: float) -> None:
    """Store a computed value for every process, point `latest` at it and let the superseded one go soon."""
    timeout = max(1, int(expires_at - time.time()))
    store.set(entry_name(scope, token, key), (expires_at, value), timeout)
    pointer = _latest_name(scope, key)
    previous = store.get(pointer)
    store.set(pointer, token, timeout)
    if previous and previous != token:
        store.touch(entry_name(scope, previous, key), STALE_KEEP_SECONDS)


def clear_process_cache() -> None:
    """Forget everything cached in this process (tests; never needed in production)."""
    _memory.clear()
