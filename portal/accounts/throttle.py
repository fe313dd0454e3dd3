"""Login and sign-up throttling in Redis, shared by every web process. Fixed windows (INCR, EXPIRE NX).

Failed logins are counted per (address, username), per address, per username and for the whole site, each
within LOGIN_WINDOW_SECONDS. A login attempt is refused when
- its (address, username) pair failed LOGIN_MAX_FAILURES times (guessing one account from one place), or
- its address failed LOGIN_MAX_FAILURES_PER_ADDRESS times over any usernames (spraying from one place), or
- its address has failed at all recently and the username failed LOGIN_MAX_FAILURES_PER_USERNAME times, or the
  site LOGIN_MAX_FAILURES_GLOBAL times (guessing from many places).
An address with no recent failures is never refused, so nobody can lock an account by failing its logins: the
owner logging in from their own address still gets in. Behind a reverse proxy set CLIENT_ADDRESS_HEADER, or
every client shares the proxy's address.

Sign-ups are counted per address (SIGNUPS_PER_ADDRESS_PER_HOUR) and for the site (SIGNUPS_PER_HOUR).
Everything fails open when Redis is unreachable (logged): the site stays usable, unthrottled."""

from __future__ import annotations

import hashlib
import logging

import redis
from django.conf import settings
from django.http import HttpRequest

from portal.accounts.usernames import skeleton

log = logging.getLogger(__name__)
PREFIX = "ptxbench:throttle:"


def client_address(request: HttpRequest) -> str:
    """The client's address: REMOTE_ADDR, or the last entry of CLIENT_ADDRESS_HEADER (the one the operator's
    own proxy wrote; earlier entries come from the client and prove nothing)."""
    header = settings.CLIENT_ADDRESS_HEADER
    if header:
        value = request.META.get(header, "")
        if value:
            return value.split(",")[-1].strip()[:100]
    return request.META.get("REMOTE_ADDR", "")


def _key(kind: str, *parts: str) -> str:
    digest = hashlib.sha256("|".join(parts).encode()).hexdigest()[:32]
    return f"{PREFIX}{kind}:{digest}"


def _login_keys(address: str, username: str) -> dict[str, str]:
    name = skeleton(username.strip())  # Alice, alice and аlice are one account to guess
    return {
        "pair": _key("login-pair", address, name),
        "address": _key("login-address", address),
        "username": _key("login-username", name),
        "global": f"{PREFIX}login-global",
    }


def _client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)


def _counts(client: redis.Redis, keys: dict[str, str]) -> dict[str, tuple[int, int]]:
    """(count, seconds left) per key."""
    pipe = client.pipeline()
    for key in keys.values():
        pipe.get(key)
        pipe.ttl(key)
    values = pipe.execute()
    return {name: (int(values[2 * i] or 0), max(int(values[2 * i + 1]), 1)) for i, name in enumerate(keys)}


def _record(keys: list[str], window: int) -> None:
    try:
        pipe = _client().pipeline()
        for key in keys:
            pipe.incr(key)
            pipe.expire(key, window, nx=True)
        pipe.execute()
    except redis.RedisError as exc:
        log.warning("throttle unavailable: %s", exc.__class__.__name__)


def login_seconds_blocked(address: str, username: str) -> int:
    """Seconds until this login attempt may be made; 0 when it may be made now."""
    try:
        counts = _counts(_client(), _login_keys(address, username))
    except redis.RedisError as exc:
        log.warning("login throttle unavailable: %s", exc.__class__.__name__)
        return 0
    limits = {
        "pair": settings.LOGIN_MAX_FAILURES,
        "address": settings.LOGIN_MAX_FAILURES_PER_ADDRESS,
        "username": settings.LOGIN_MAX_FAILURES_PER_USERNAME,
        "global": settings.LOGIN_MAX_FAILURES_GLOBAL,
    }
    over = [name for name, (count, _) in counts.items() if count >= limits[name]]
    if counts["address"][0] == 0:
        return 0  # a clean address is never refused: no one can lock an account out by themselves
    return max((counts[name][1] for name in over), default=0)


def login_failed(address: str, username: str) -> None:
    _record(list(_login_keys(address, username).values()), settings.LOGIN_WINDOW_SECONDS)


def login_succeeded(address: str, username: str) -> None:
    """The pair's count starts again; the address, username and site counts keep what was tried."""
    try:
        _client().delete(_login_keys(address, username)["pair"])
    except redis.RedisError:
        pass


def _signup_keys(address: str) -> dict[str, str]:
    return {"address": _key("signup-address", address), "global": f"{PREFIX}signup-global"}


def signup_seconds_blocked(address: str) -> int:
    try:
        counts = _counts(_client(), _signup_keys(address))
    except redis.RedisError as exc:
        log.warning("signup throttle unavailable: %s", exc.__class__.__name__)
        return 0
    limits = {"address": settings.SIGNUPS_PER_ADDRESS_PER_HOUR, "global": settings.SIGNUPS_PER_HOUR}
    return max((counts[n][1] for n, (count, _) in counts.items() if count >= limits[n]), default=0)


def signup_recorded(address: str) -> None:
    _record(list(_signup_keys(address).values()), 3600)
