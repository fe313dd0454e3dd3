"""Server-side request forgery guard for model endpoints.

Users give the portal a URL that its workers will POST to, so the URL could aim at the metadata service,
Redis, the database or anything else on the private network. Every request (and every redirect hop) goes
through `PinnedTransport`: it resolves the host once, refuses unless every resolved address is public
(or admitted by the operator's allow-list), and connects to that checked address, keeping the Host header
and TLS SNI of the name, so a DNS answer that changes between check and connect cannot slip through.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx2

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# Not covered by the stdlib flags on every Python version, so listed explicitly.
_EXTRA_BLOCKED = tuple(
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",  # "this network"
        "100.64.0.0/10",  # carrier-grade NAT (RFC 6598)
        "192.0.0.0/24",  # IETF protocol assignments
        "198.18.0.0/15",  # benchmarking
        "64:ff9b::/96",  # NAT64: embeds an IPv4 address
        "64:ff9b:1::/48",
        "2002::/16",  # 6to4: embeds an IPv4 address
        "2001::/32",  # Teredo
        "fc00::/7",  # unique local
        "fec0::/10",  # site-local (deprecated)
    )
)


class EndpointRefused(Exception):
    """The endpoint URL may not be contacted. `message` is for the user."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Allowlist:
    """Operator-admitted hosts (exact names, case-insensitive) and networks (addresses or CIDRs)."""

    hosts: frozenset[str]
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]

    @classmethod
    def parse(cls, entries: Iterable[str]) -> Allowlist:
        hosts, networks = set(), []
        for entry in entries:
            entry = entry.strip()
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                hosts.add(entry.lower().rstrip("."))
        return cls(frozenset(hosts), tuple(networks))

    def admits_host(self, host: str) -> bool:
        return host.lower().rstrip(".") in self.hosts

    def admits_address(self, address: IPAddress) -> bool:
        return any(address.version == n.version and address in n for n in self.networks)


def _configured_allowlist() -> Allowlist:
    from django.conf import settings

    return Allowlist.parse(getattr(settings, "AGENT_ENDPOINT_ALLOWLIST", []))


def blocked_reason(address: IPAddress) -> str | None:
    """Why this address is not a public endpoint, or None when it is."""
    if isinstance(address, ipaddress.IPv6Address):
        mapped = address.ipv4_mapped or address.sixtofour
        if mapped is not None:
            reason = blocked_reason(mapped)
            return f"{reason} (IPv4 inside an IPv6 address)" if reason else None
    checks = (
        ("loopback", address.is_loopback),
        ("unspecified", address.is_unspecified),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("private", address.is_private),
        ("reserved", address.is_reserved),
    )
    for name, hit in checks:
        if hit:
            return f"a {name} address"
    for network in _EXTRA_BLOCKED:
        if address.version == network.version and address in network:
            return f"a special-purpose address ({network})"
    if not address.is_global:
        return "not a globally routable address"
    return None


def literal_address(host: str) -> IPAddress | None:
    """The address `host` spells literally, including the odd IPv4 forms C resolvers accept
    (0x7f000001, 2130706433, 127.1, 0177.0.0.1), so they are judged without asking DNS."""
    bare = host.strip("[]")
    try:
        return ipaddress.ip_address(bare.split("%")[0])
    except ValueError:
        pass
    if bare and all(c in "0123456789abcdefxABCDEFX." for c in bare) and bare[0].isdigit():
        try:
            return ipaddress.IPv4Address(socket.inet_aton(bare))
        except OSError:
            return None
    return None


def resolve_endpoint(host: str, port: int, allowlist: Allowlist | None = None) -> str:
    """Resolve `host` and return the address to connect to, or raise EndpointRefused."""
    allowlist = allowlist if allowlist is not None else _configured_allowlist()
    if not host:
        raise EndpointRefused("the endpoint URL has no host")
    literal = literal_address(host)
    if literal is not None:
        addresses = [literal]
    else:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise EndpointRefused(f"the endpoint host {host!r} does not resolve ({exc})")
        addresses = []
        for info in infos:
            address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
            if address not in addresses:
                addresses.append(address)
        if not addresses:
            raise EndpointRefused(f"the endpoint host {host!r} does not resolve")
    if allowlist.admits_host(host):
        return str(addresses[0])
    for address in addresses:
        if allowlist.admits_address(address):
            continue
        reason = blocked_reason(address)
        if reason:
            shown = host if literal is None else str(literal)
            raise EndpointRefused(
                f"the endpoint {shown} resolves to {address}, {reason}; only public endpoints are allowed "
                "(an operator can admit local inference servers with AGENT_ENDPOINT_ALLOWLIST)"
            )
    return str(addresses[0])


def check_endpoint_url(url: str, allowlist: Allowlist | None = None) -> str:
    """Validate a base URL as the web form and API do; returns the address it would connect to."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise EndpointRefused("the endpoint URL is malformed")
    if parts.scheme not in ("http", "https"):
        raise EndpointRefused("the endpoint URL must start with http:// or https://")
    if parts.username or parts.password:
        raise EndpointRefused("put credentials in the API key field, not in the endpoint URL")
    host = parts.hostname or ""
    return resolve_endpoint(host, port or (443 if parts.scheme == "https" else 80), allowlist)


class PinnedTransport(httpx2.HTTPTransport):
    """An httpx transport that checks every request's host and connects to the checked address."""

    def __init__(self, *, allowlist: Allowlist | None = None, **kwargs) -> None:
        super().__init__(trust_env=False, **kwargs)
        self._allowlist = allowlist

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        host = request.url.host
        port = request.url.port or (443 if request.url.scheme == "https" else 80)
        address = resolve_endpoint(host, port, self._allowlist)
        if address != host:
            # The Host header was set from the name when the request was built; SNI and certificate checks
            # use the name through the sni_hostname extension.
            request.url = request.url.copy_with(host=address)
            if request.url.scheme == "https":
                request.extensions = {**request.extensions, "sni_hostname": host}
        return super().handle_request(request)


def pinned_client(*, timeout: float, allowlist: Allowlist | None = None) -> httpx2.Client:
    """An httpx client for model endpoints: pinned, checked addresses, no proxies from the environment,
    and no redirects followed (each hop would be checked by the transport anyway)."""
    return httpx2.Client(
        transport=PinnedTransport(allowlist=allowlist),
        timeout=httpx2.Timeout(timeout, connect=min(timeout, 10.0)),
        follow_redirects=False,
        trust_env=False,
    )
