"""Failed-login throttling in Redis, shared by every web process: after LOGIN_MAX_FAILURES failures for
one (client address, username) within LOGIN_WINDOW_SECONDS, further attempts are refused until it expires."""

from __future__ import annotations

import hashlib
import logging

import redis
from django.conf import settings

log = logging.getLogger(__name__)


def _key(address: str, username: str) -> str:
    digest = hashlib.sha256(f"{address}|{username.strip().lower()}".encode()).hexdigest()[:32]
    return f"ptxbench:login-failures:{digest}"


def _client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)


def seconds_blocked(address: str, username: str) -> int:
    """Seconds until this pair may try again; 0 when not blocked. Fails open if Redis is unreachable."""
    try:
        client = _client()
        key = _key(address, username)
        failures = int(client.get(key) or 0)
        if failures < settings.LOGIN_MAX_FAILURES:
            return 0
        return max(int(client.ttl(key)), 1)
    except redis.RedisError as exc:
        log.warning("login throttle unavailable: %s", exc.__class__.__name__)
        return 0


def record_failure(address: str, username: str) -> None:
    try:
        client = _client()
        key = _key(address, username)
        pipe = client.pipeline()
        pipe.incr(key)
        pipe.expire(key, settings.LOGIN_WINDOW_SECONDS, nx=True)
        pipe.execute()
    except redis.RedisError as exc:
        log.warning("login throttle unavailable: %s", exc.__class__.__name__)


def clear(address: str, username: str) -> None:
    try:
        _client().delete(_key(address, username))
    except redis.RedisError:
        pass
