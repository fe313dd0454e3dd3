"""Which version of the API a request is answered in, and the deprecation notice version 1 carries.

The path names the version: `/api/v2/...` is the current API (the verdict's names, portal/core/serializers.py) and
the one the site links to; `/api/v1/...` answers the same resources with version 1's names, for clients written
against it. Every route is declared once, under `/api/v2/`; `v1_routes` mirrors each under `/api/v1/` (same view),
so the two cannot drift apart. `?v=` is still read where clients used it before `/api/v2/` existed: `?v=2` under
`/api/v1/`, and `?v=1` or `?v=2` on pages that answer JSON outside `/api/` (`/compare/?format=json`); under
`/api/v2/` only `v=2` is accepted (version 1 has its own path). Every response in version 1 carries a `Deprecation`
header (RFC 9745, the date version 2 became the default) and a `Link` to the section of docs/api.md that says what
changed (`rel="deprecation"`). docs/api.md, "Versions", is the reference."""

from __future__ import annotations

from typing import Any

from django.urls import URLPattern, URLResolver, path
from django.urls.resolvers import RoutePattern

API_VERSIONS = (1, 2)
CURRENT_API_VERSION = 2
# RFC 9745: when version 1 was deprecated, as an Item of type Date (seconds since the epoch): 2026-12-04 00:00 UTC.
V1_DEPRECATED_AT = 1796342400
V1_DOCS_ANCHOR = "/api/#versions"  # docs/api.md's section, as rendered on the /api/ page

_PREFIXES = {f"/api/v{v}/": v for v in API_VERSIONS}


def path_version(request_path: str) -> int | None:
    """The version a path names (`/api/v1/...` → 1), None for a path outside the versioned API."""
    return next((v for prefix, v in _PREFIXES.items() if request_path.startswith(prefix)), None)


def api_version(request: Any) -> int:
    """The version `request` is answered in: its path's, or what `?v=` asks where that is still read (see the
    module's docstring). Raises ValueError for a version the path does not allow."""
    in_path = path_version(request.path)
    raw = request.GET.get("v")
    if raw in (None, ""):
        return in_path or CURRENT_API_VERSION
    allowed = [CURRENT_API_VERSION] if in_path == CURRENT_API_VERSION else list(API_VERSIONS)
    if raw not in [str(v) for v in allowed]:
        hint = " (version 1 is at /api/v1/)" if in_path == CURRENT_API_VERSION and raw == "1" else ""
        raise ValueError(f"unknown API version v={raw!r} here; use one of: {', '.join(map(str, allowed))}{hint}")
    return int(raw)


def answers_version_1(request: Any) -> bool:
    """Whether `request` is answered in version 1 (the deprecated names), for the deprecation headers."""
    try:
        return api_version(request) == 1
    except ValueError:
        return path_version(request.path) == 1


def deprecation_headers(request: Any) -> dict[str, str]:
    """The headers a version 1 answer carries: `Deprecation` (RFC 9745) and a `Link` to what changed."""
    link = request.build_absolute_uri(V1_DOCS_ANCHOR)
    return {"Deprecation": f"@{V1_DEPRECATED_AT}", "Link": f'<{link}>; rel="deprecation"; type="text/html"'}


def same_version_path(request: Any, current_path: str) -> str:
    """`current_path` (an `/api/v2/...` path, as reverse() gives it) in the version `request` came in on: a `Location`
    answered to a version 1 client points into version 1."""
    if path_version(request.path) == 1 and current_path.startswith("/api/v2/"):
        return "/api/v1/" + current_path.removeprefix("/api/v2/")
    return current_path


def v1_routes(patterns: list[URLPattern | URLResolver]) -> list[URLPattern]:
    """An unnamed `/api/v1/...` route for every `/api/v2/...` route in `patterns` (included URL confs walked), each
    to the same view with the same arguments: version 1 is the current API answered with its old names."""
    mirrored = []
    for route, pattern in _routes(patterns, ""):
        if route.startswith("api/v2/"):
            mirrored.append(path("api/v1/" + route.removeprefix("api/v2/"), pattern.callback, pattern.default_args))
    return mirrored


def _routes(patterns: list[Any], prefix: str) -> list[tuple[str, URLPattern]]:
    found = []
    for entry in patterns:
        if not isinstance(entry.pattern, RoutePattern):
            continue  # a regex route (the admin's): never part of the API
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            found += _routes(entry.url_patterns, route)
        else:
            found.append((route, entry))
    return found
