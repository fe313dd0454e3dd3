"""The cache backend behind the `leaderboard` alias in CACHES: Django's RedisCache, made safe to lose.

Leaderboard rows and charts are a cache, never the truth, so an unreachable Redis must not fail a page: every
operation that cannot reach the server answers like a miss (get -> default, add -> False), logs once, and the
server is left alone for `RETRY_SECONDS` so a dead Redis costs one failed connection per process per interval,
not one per request. `available` tells the caller to stop waiting for other processes and compute itself.

An empty LOCATION means settings.REDIS_URL, read at use time: the store follows the queues' Redis wherever the
settings point it (tests start their own server). `clear()` deletes only this alias's keys, never the whole
database, which also holds the RQ queues."""

from __future__ import annotations

import logging
import time
from typing import Any

from django.conf import settings
from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache, RedisCacheClient

log = logging.getLogger(__name__)

RETRY_SECONDS = 5.0  # after a failure, treat Redis as down this long before trying again
# A page waits on a slow Redis at most this long per operation, then renders from the database.
DEFAULT_OPTIONS = {"socket_connect_timeout": 0.25, "socket_timeout": 0.5}
_MISS = object()


class SharedRedisCache(RedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._options = {**DEFAULT_OPTIONS, **self._options}
        self._location = server or ""
        self._client: RedisCacheClient | None = None
        self._client_url = ""
        self._down_until = 0.0

    @property
    def _cache(self) -> RedisCacheClient:  # type: ignore[override]  # RedisCache's is a cached_property
        url = self._location or settings.REDIS_URL
        if self._client is None or url != self._client_url:
            self._client, self._client_url = RedisCacheClient([url], **self._options), url
        return self._client

    @property
    def available(self) -> bool:
        """False while the last failure is recent: callers should compute locally instead of waiting."""
        return time.monotonic() >= self._down_until

    def _guard(self, operation, default, *args):
        if not self.available:
            return default
        try:
            return operation(*args)
        except Exception as exc:  # redis.RedisError, OSError: anything between us and the server
            import redis

            if not isinstance(exc, (redis.RedisError, OSError)):
                raise
            self._down_until = time.monotonic() + RETRY_SECONDS
            log.warning("leaderboard store unreachable (%s); computing locally for %.0f s", exc, RETRY_SECONDS)
            return default

    def get(self, key, default=None, version=None):
        return self._guard(super().get, default, key, default, version)

    def get_many(self, keys, version=None):
        return self._guard(super().get_many, {}, keys, version)

    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        return self._guard(super().add, False, key, value, timeout, version)

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        self._guard(super().set, None, key, value, timeout, version)

    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None):
        return self._guard(super().touch, False, key, timeout, version)

    def delete(self, key, version=None):
        return self._guard(super().delete, False, key, version)

    def clear(self) -> bool:
        """Delete this alias's keys only (the database also holds the queues)."""

        def delete_prefixed() -> bool:
            client = self._cache.get_client(None, write=True)
            pattern = self.make_key("*")
            for batch in _batches(client.scan_iter(match=pattern, count=1000), 1000):
                client.delete(*batch)
            return True

        return self._guard(delete_prefixed, False)


def _batches(items, size: int):
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
