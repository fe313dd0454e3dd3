"""Endpoint URLs against server-side request forgery: private, loopback, link-local, CGNAT, multicast and
odd spellings refused before any connection; DNS answers checked and pinned; redirects not followed and every
hop re-checked; the operator allow-list admits local servers. No test sends a packet beyond 127.0.0.1."""

from __future__ import annotations

import ipaddress
import socket

import httpx2
import pytest

from portal.agent.client import EndpointConfig, ModelCallError, chat_completion
from portal.agent.ssrf import Allowlist, EndpointRefused, PinnedTransport, blocked_reason, check_endpoint_url
from tests.support import dns_guard
from tests.support.agent_support import replay  # noqa: F401 - fixture

NOBODY = Allowlist.parse([])
LOCAL = Allowlist.parse(["127.0.0.1/32"])
_real_getaddrinfo = socket.getaddrinfo
_real_create_connection = socket.create_connection


@pytest.fixture
def dns(monkeypatch):
    """Fake DNS at the edge of the world: names in the table resolve as given; address literals and loopback go
    to the (guarded) resolver; any other name fails the test here, it never reaches a real resolver."""
    table: dict[str, list[str]] = {}

    def getaddrinfo(host, port, *args, **kwargs):
        if host in table:
            out = []
            for address in table[host]:
                family = socket.AF_INET6 if ":" in address else socket.AF_INET
                sockaddr = (address, port or 0, 0, 0) if family == socket.AF_INET6 else (address, port or 0)
                out.append((family, socket.SOCK_STREAM, 6, "", sockaddr))
            return out
        if not dns_guard.passes(host):
            raise AssertionError(f"{host!r} is not in this test's fake DNS: add it to the `dns` table")
        return _real_getaddrinfo(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return table


@pytest.fixture
def no_outside_connections(monkeypatch):
    """Any connection attempt to an address other than loopback fails the test."""
    attempts = []

    def create_connection(address, *args, **kwargs):
        host = address[0]
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = host == "localhost"
        if not loopback:
            attempts.append(address)
            raise AssertionError(f"tried to connect to {address}")
        return _real_create_connection(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", create_connection)
    return attempts


@pytest.mark.parametrize(
    "url, why",
    [
        ("http://127.0.0.1:8000/v1", "loopback"),
        ("http://[::1]:8000/v1", "loopback"),
        ("http://10.0.0.1/v1", "private"),
        ("http://192.168.1.20/v1", "private"),
        ("http://172.16.0.5/v1", "private"),
        ("http://169.254.169.254/latest/meta-data", "link-local"),
        ("http://0x7f000001/v1", "loopback"),
        ("http://2130706433/v1", "loopback"),
        ("http://127.1/v1", "loopback"),
        ("http://0177.0.0.1/v1", "loopback"),
        ("http://[::ffff:127.0.0.1]/v1", "IPv4 inside an IPv6"),
        ("http://[::ffff:a9fe:a9fe]/v1", "IPv4 inside an IPv6"),
        ("http://100.64.0.1/v1", "100.64.0.0/10"),
        ("http://224.0.0.1/v1", "multicast"),
        ("http://0.0.0.0/v1", "unspecified"),
        ("http://[fe80::1]/v1", "link-local"),
        ("http://[fd12::1]/v1", "private"),
        ("http://localhost:8000/v1", "loopback"),
    ],
)
def test_non_public_endpoints_are_refused(url, why, no_outside_connections):
    with pytest.raises(EndpointRefused) as caught:
        check_endpoint_url(url, NOBODY)
    assert why in caught.value.message
    assert "AGENT_ENDPOINT_ALLOWLIST" in caught.value.message
    assert no_outside_connections == []


def test_a_name_resolving_to_a_private_address_is_refused(dns):
    dns["models.evil.example"] = ["10.20.30.40"]
    with pytest.raises(EndpointRefused, match="resolves to 10.20.30.40, a private address"):
        check_endpoint_url("https://models.evil.example/v1", NOBODY)


def test_a_name_with_one_private_address_among_public_ones_is_refused(dns):
    dns["mixed.example"] = ["93.184.215.14", "169.254.169.254"]
    with pytest.raises(EndpointRefused, match="169.254.169.254"):
        check_endpoint_url("https://mixed.example/v1", NOBODY)


def test_a_public_name_passes_and_returns_the_address_to_pin(dns):
    dns["api.models.example"] = ["93.184.215.14"]
    assert check_endpoint_url("https://api.models.example/v1", NOBODY) == "93.184.215.14"


@pytest.mark.parametrize(
    "url", ["ftp://example.com/", "file:///etc/passwd", "https://user:pw@example.com/v1", "http:///v1"]
)
def test_malformed_or_credentialed_urls_are_refused(url):
    with pytest.raises(EndpointRefused):
        check_endpoint_url(url, NOBODY)


def test_allowlist_admits_cidrs_and_exact_hosts(dns):
    dns["vllm.internal"] = ["10.0.5.7"]
    allow = Allowlist.parse(["10.0.5.0/24", "gpu-box.internal", " "])
    assert check_endpoint_url("http://vllm.internal:8000/v1", allow) == "10.0.5.7"
    dns["gpu-box.internal"] = ["192.168.7.7"]
    assert check_endpoint_url("http://GPU-box.internal/v1", allow) == "192.168.7.7"
    with pytest.raises(EndpointRefused):
        check_endpoint_url("http://10.0.6.1/v1", allow)


def test_blocked_reason_leaves_public_addresses_alone():
    assert blocked_reason(ipaddress.ip_address("8.8.8.8")) is None
    assert blocked_reason(ipaddress.ip_address("2606:4700:4700::1111")) is None
    assert blocked_reason(ipaddress.ip_address("64:ff9b::a00:1")) is not None  # NAT64 of 10.0.0.1


def _config(base_url: str) -> EndpointConfig:
    return EndpointConfig(
        base_url=base_url,
        model="m",
        api_key="sk-ssrf-test-key-0000",
        temperature=0.0,
        max_output_tokens=64,
        request_timeout=2.0,
        max_retries=1,
        backoff_base_s=0.01,
    )


def test_the_model_client_refuses_a_private_dns_answer_without_connecting(dns, no_outside_connections):
    dns["llm.evil.example"] = ["10.9.9.9"]
    with pytest.raises(ModelCallError, match="endpoint refused by the portal: .*10.9.9.9") as caught:
        chat_completion(_config("http://llm.evil.example/v1"), [{"role": "user", "content": "hi"}], allowlist=NOBODY)
    assert caught.value.attempts == 1  # a refusal is final, not retried
    assert no_outside_connections == []


def test_connections_are_pinned_to_the_checked_address_with_the_name_as_host_header(dns, replay):  # noqa: F811
    server = replay({"turns": [{"content": "pinned"}]})
    port = server.server_address[1]
    dns["replay.test"] = ["127.0.0.1"]
    allow = Allowlist.parse(["replay.test"])
    reply = chat_completion(
        _config(f"http://replay.test:{port}/v1"), [{"role": "user", "content": "hi"}], allowlist=allow
    )
    assert reply.content == "pinned"
    assert server.requests[0]["host_header"] == f"replay.test:{port}"


def test_a_redirect_to_the_metadata_service_is_not_followed(replay, no_outside_connections):  # noqa: F811
    server = replay({"turns": [{"status": 307, "location": "http://169.254.169.254/latest/meta-data/"}]})
    with pytest.raises(ModelCallError, match="redirect"):
        chat_completion(_config(server.base_url), [{"role": "user", "content": "hi"}], allowlist=LOCAL)
    assert len(server.requests) == 1
    assert no_outside_connections == []


def test_every_redirect_hop_is_rechecked_even_by_a_client_that_follows(replay, no_outside_connections):  # noqa: F811
    server = replay({"turns": [{"status": 302, "location": "http://10.0.0.1/v1/chat/completions"}]})
    client = httpx2.Client(transport=PinnedTransport(allowlist=LOCAL), follow_redirects=True)
    with pytest.raises(EndpointRefused, match="10.0.0.1"):
        client.post(server.base_url + "/chat/completions", json={"messages": []})
    assert no_outside_connections == []


def test_the_fake_dns_refuses_names_it_does_not_know(dns):
    """A name missing from the table fails here, in the test, instead of reaching a real resolver."""
    dns["known.example"] = ["93.184.215.14"]
    assert socket.getaddrinfo("known.example", 443)[0][4][0] == "93.184.215.14"
    assert socket.getaddrinfo("127.0.0.1", 443)  # literals still work (connections to the replay server)
    with pytest.raises(AssertionError, match="not in this test's fake DNS"):
        socket.getaddrinfo("unknown.example", 443)
