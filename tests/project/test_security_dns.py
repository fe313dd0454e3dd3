"""Tests never send a DNS query off the machine: a session-wide guard (tests/conftest.py) lets through only
address literals and loopback names; any other name is refused as if it did not exist, and the test that asked
fails at teardown, whether or not the code under test swallowed the error."""

from __future__ import annotations

import socket

import pytest

from tests.support import dns_guard


def _guarded(function) -> bool:
    return bool(getattr(function, "ptx_dns_guard", False))


def test_the_guard_is_installed_on_every_resolver_entry_point():
    for name in ("getaddrinfo", "gethostbyname", "gethostbyname_ex"):
        assert _guarded(getattr(socket, name)), name


def test_unknown_names_are_refused_without_a_query_and_recorded():
    assert _guarded(socket.getaddrinfo)  # never reach the real resolver below if the guard is missing
    for call in (
        lambda: socket.getaddrinfo("api.models.example", 443),
        lambda: socket.gethostbyname("api.models.example"),
        lambda: socket.gethostbyname_ex("api.models.example"),
    ):
        with pytest.raises(socket.gaierror, match="test DNS guard"):
            call()
    assert dns_guard.REFUSED_NAMES == ["api.models.example"] * 3
    dns_guard.REFUSED_NAMES.clear()  # expected here; anywhere else the teardown check fails the test


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", None])
def test_literals_and_loopback_still_resolve(host):
    assert socket.getaddrinfo(host, 80, type=socket.SOCK_STREAM)
    assert dns_guard.REFUSED_NAMES == []
