"""Evidence bundles downloaded without signing in, counted per client address and per network in Redis (fixed
windows of an hour: INCR, EXPIRE NX), as the login throttle counts (portal/accounts/throttle.py: the client's
address and its network, the /24 of IPv4 or the /64 of IPv6, since one customer can rotate through a whole prefix).

A bundle holds every evaluation's files: tens of MiB each, so an anonymous loop over submission ids costs the
portal bandwidth and disk reads without bound. Refused past ANONYMOUS_BUNDLES_PER_ADDRESS_PER_HOUR or
ANONYMOUS_BUNDLES_PER_NETWORK_PER_HOUR; signed-in users are not counted (their account is the handle). Every
request is counted, refused or not, so a client that ignores Retry-After stays refused. Fails open, logged, when
Redis is unreachable, as the login throttle does."""

from __future__ import annotations

import hashlib
import logging

import redis
from django.conf import settings
from django.http import HttpRequest

from portal.accounts.throttle import client_address, network_of

log = logging.getLogger(__name__)
PREFIX = "ptxbench:throttle:bundle:"
WINDOW_SECONDS = 3600


def _key(kind: str, value: str) -> str:
    return f"{PREFIX}{kind}:{hashlib.sha256(value.encode()).hexdigest()[:32]}"


def seconds_blocked(request: HttpRequest) -> int:
    """Count this anonymous bundle request; seconds until another may be served (0: serve this one now)."""
    if request.user.is_authenticated:
        return 0
    address = client_address(request)
    limits = {
        _key("address", address): settings.ANONYMOUS_BUNDLES_PER_ADDRESS_PER_HOUR,
        _key("network", network_of(address)): settings.ANONYMOUS_BUNDLES_PER_NETWORK_PER_HOUR,
    }
    try:
        client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)
        pipe = client.pipeline()
        for key in limits:
            pipe.incr(key)
            pipe.expire(key, WINDOW_SECONDS, nx=True)
            pipe.ttl(key)
        values = pipe.execute()
    except redis.RedisError as exc:
        log.warning("bundle throttle unavailable: %s", exc.__class__.__name__)
        return 0
    waits = [max(int(values[3 * i + 2]), 1) for i, limit in enumerate(limits.values()) if int(values[3 * i]) > limit]
    return max(waits, default=0)
