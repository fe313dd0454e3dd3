"""Login and sign-up throttling in Redis, shared by every web process. Fixed windows (INCR, EXPIRE NX).

Every client is counted twice: by its address and by its network (`network_of`: the /24 of an IPv4 address, the
/64 of an IPv6 one, where one customer gets a whole prefix and can rotate through its addresses freely).

Failed logins are counted per (address, username), per (network, username), per address, per network, per
username and for the whole site, each within LOGIN_WINDOW_SECONDS. A login attempt is refused when
- its (address or network, username) pair failed LOGIN_MAX_FAILURES times (guessing one account from one place), or
- its address failed LOGIN_MAX_FAILURES_PER_ADDRESS times, or its network LOGIN_MAX_FAILURES_PER_NETWORK times,
  over any usernames (spraying from one place), or
- its network has failed at all recently and the username failed LOGIN_MAX_FAILURES_PER_USERNAME times, or the
  site LOGIN_MAX_FAILURES_GLOBAL times (guessing from many places).
A network with no recent failures is never refused, so nobody can lock an account by failing its logins from
elsewhere: the owner logging in from their own network still gets in. Behind a reverse proxy set
CLIENT_ADDRESS_HEADER, or every client shares the proxy's address.

Sign-ups: every posted sign-up form counts as an attempt, per address (SIGNUP_ATTEMPTS_PER_ADDRESS_PER_HOUR) and
per network (SIGNUP_ATTEMPTS_PER_NETWORK_PER_HOUR), whatever its outcome, because a refused name says the name
is taken: this bounds how many names one place can probe. Accounts made are counted per address
(SIGNUPS_PER_ADDRESS_PER_HOUR), per network (SIGNUPS_PER_NETWORK_PER_HOUR) and for the site (SIGNUPS_PER_HOUR);
the site's rate refuses only networks that made an account this hour, so a crowd of sock puppets cannot lock
out a newcomer from a fresh network. A refusal is decided before the form is read and shows no form errors: it
is the same answer for a taken name and a free one.
Everything fails open when Redis is unreachable (logged): the site stays usable, unthrottled."""

from __future__ import annotations

import hashlib
import ipaddress
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


def network_of(address: str) -> str:
    """The network an address is grouped in: `a.b.c.0/24` for IPv4 (an IPv4-mapped IPv6 address too), the /64
    for IPv6; anything that is not an address (a proxy header's garbage) is its own group."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return f"other:{address}"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    prefix = 24 if ip.version == 4 else 64
    return str(ipaddress.ip_network(f"{ip}/{prefix}", strict=False))


def _key(kind: str, *parts: str) -> str:
    digest = hashlib.sha256("|".join(parts).encode()).hexdigest()[:32]
    return f"{PREFIX}{kind}:{digest}"


def _login_keys(address: str, username: str) -> dict[str, str]:
    name = skeleton(username.strip())  # Alice, alice and аlice are one account to guess
    network = network_of(address)
    return {
        "pair": _key("login-pair", address, name),
        "network_pair": _key("login-network-pair", network, name),
        "address": _key("login-address", address),
        "network": _key("login-network", network),
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
        "network_pair": settings.LOGIN_MAX_FAILURES,
        "address": settings.LOGIN_MAX_FAILURES_PER_ADDRESS,
        "network": settings.LOGIN_MAX_FAILURES_PER_NETWORK,
        "username": settings.LOGIN_MAX_FAILURES_PER_USERNAME,
        "global": settings.LOGIN_MAX_FAILURES_GLOBAL,
    }
    over = [name for name, (count, _) in counts.items() if count >= limits[name]]
    if counts["network"][0] == 0:
        return 0  # a clean network is never refused: no one can lock an account out from elsewhere
    return max((counts[name][1] for name in over), default=0)


def login_failed(address: str, username: str) -> None:
    _record(list(_login_keys(address, username).values()), settings.LOGIN_WINDOW_SECONDS)


def login_succeeded(address: str, username: str) -> None:
    """The pairs' counts start again; the address, network, username and site counts keep what was tried."""
    keys = _login_keys(address, username)
    try:
        _client().delete(keys["pair"], keys["network_pair"])
    except redis.RedisError:
        pass


def _signup_keys(address: str) -> dict[str, str]:
    network = network_of(address)
    return {
        "attempts_address": _key("signup-attempts-address", address),
        "attempts_network": _key("signup-attempts-network", network),
        "address": _key("signup-address", address),
        "network": _key("signup-network", network),
        "global": f"{PREFIX}signup-global",
    }


def signup_seconds_blocked(address: str) -> int:
    """Seconds until a sign-up form from this address may be read; 0 when it may be read now."""
    try:
        counts = _counts(_client(), _signup_keys(address))
    except redis.RedisError as exc:
        log.warning("signup throttle unavailable: %s", exc.__class__.__name__)
        return 0
    limits = {
        "attempts_address": settings.SIGNUP_ATTEMPTS_PER_ADDRESS_PER_HOUR,
        "attempts_network": settings.SIGNUP_ATTEMPTS_PER_NETWORK_PER_HOUR,
        "address": settings.SIGNUPS_PER_ADDRESS_PER_HOUR,
        "network": settings.SIGNUPS_PER_NETWORK_PER_HOUR,
        "global": settings.SIGNUPS_PER_HOUR,
    }
    over = [name for name, (count, _) in counts.items() if count >= limits[name]]
    if counts["network"][0] == 0 and over == ["global"]:
        return 0  # the site is busy, but not with this network's accounts: a newcomer still gets in
    return max((counts[name][1] for name in over), default=0)


def signup_attempted(address: str) -> None:
    """A sign-up form was posted and will be read (its answer may say that a name is taken)."""
    keys = _signup_keys(address)
    _record([keys["attempts_address"], keys["attempts_network"]], 3600)


def signup_recorded(address: str) -> None:
    """An account was made."""
    keys = _signup_keys(address)
    _record([keys["address"], keys["network"], keys["global"]], 3600)
