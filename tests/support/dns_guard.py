"""No test sends a DNS query off the machine. `install()` (from tests/conftest.py, before any test module is
imported) wraps the resolver entry points: address literals, loopback names and no name at all go through;
any other name is refused with socket.gaierror, as if it did not exist, and recorded in REFUSED_NAMES so the
test that asked fails at teardown even when the code under test swallowed the error. Tests that need a name
resolved use a fake resolver of their own in front of this one (tests/agent/test_agent_ssrf.py's `dns`)."""

from __future__ import annotations

import functools
import ipaddress
import socket

LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}
REFUSED_NAMES: list[str] = []


def passes(host) -> bool:
    """A host the guard lets through: no name, an address literal, a loopback name."""
    if host is None or host == "":
        return True  # getaddrinfo(None, port): the local wildcard or loopback address, no lookup
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    name = str(host).split("%")[0].rstrip(".").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _guard(real):
    @functools.wraps(real)
    def guarded(host, *args, **kwargs):
        if not passes(host):
            REFUSED_NAMES.append(str(host))
            raise socket.gaierror(
                socket.EAI_NONAME, f"{host!r} refused by the test DNS guard: tests never query a real resolver"
            )
        return real(host, *args, **kwargs)

    guarded.ptx_dns_guard = True
    return guarded


def install() -> None:
    for name in ("getaddrinfo", "gethostbyname", "gethostbyname_ex"):
        current = getattr(socket, name)
        if not getattr(current, "ptx_dns_guard", False):
            setattr(socket, name, _guard(current))
