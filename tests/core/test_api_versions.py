"""The API's versions (portal/core/api_versions.py): /api/v2/ answers the verdict's names and is what the site links
to; /api/v1/ answers version 1's names for old clients, every answer marked deprecated (RFC 9745 `Deprecation`, a
`Link` to docs/api.md's "Versions"). Catches version 1 as the default again, a route added under one version only,
and a version 1 answer without its deprecation notice."""

from __future__ import annotations

import pytest
from django.urls import get_resolver, reverse

from portal.core.api_versions import V1_DEPRECATED_AT
from tests.support.leaderboard_factories import GEMM, leaderboard_isolation  # noqa: F401 - autouse fixture
from tests.support.ranking_fixtures import mixed_board

pytestmark = pytest.mark.django_db


def _deprecated(response) -> bool:
    return response.headers.get(
        "Deprecation"
    ) == f"@{V1_DEPRECATED_AT}" and 'rel="deprecation"' in response.headers.get("Link", "")


def test_the_current_version_is_the_default_and_version_1_is_deprecated(client):
    evaluation = mixed_board()["mid"]
    assert reverse("submissions:api_evaluation", args=[evaluation.id]).startswith("/api/v2/")
    current = client.get(f"/api/v2/evaluations/{evaluation.id}")
    assert current.status_code == 200 and "Deprecation" not in current.headers
    result = current.json()["result"]
    assert result["speedup_factor"] == 1.3 and "speedup" not in result and "peak_fraction" not in result
    old = client.get(f"/api/v1/evaluations/{evaluation.id}")
    assert old.status_code == 200 and _deprecated(old)
    assert "/api/#versions" in old.headers["Link"]
    assert old.json()["result"]["speedup"] == 1.3 and "speedup_factor" not in old.json()["result"]


def test_the_query_version_is_read_only_where_old_clients_used_it(client):
    evaluation = mixed_board()["mid"]
    asked = client.get(f"/api/v1/evaluations/{evaluation.id}", {"v": 2})  # how clients asked before /api/v2/
    assert asked.json()["result"]["speedup_factor"] == 1.3 and "Deprecation" not in asked.headers
    refused = client.get(f"/api/v2/evaluations/{evaluation.id}", {"v": 1})
    assert refused.status_code == 400 and "/api/v1/" in refused.json()["error"]
    board = client.get("/api/v2/leaderboard/kernels", {"task": GEMM, "v": 3})
    assert board.status_code == 400
    compare = client.get("/compare/", {"format": "json", "kind": "kernels", "a": evaluation.id, "b": evaluation.id})
    assert "Deprecation" not in compare.headers
    compare_v1 = client.get(
        "/compare/", {"format": "json", "kind": "kernels", "a": evaluation.id, "b": evaluation.id, "v": 1}
    )
    assert _deprecated(compare_v1)


def test_a_version_1_error_is_marked_deprecated_too(client):
    missing = client.get("/api/v1/evaluations/00000000-0000-0000-0000-000000000000")
    assert missing.status_code == 404 and "error" in missing.json() and _deprecated(missing)
    assert "Deprecation" not in client.get("/api/v2/evaluations/00000000-0000-0000-0000-000000000000").headers


def test_every_route_is_answered_under_both_versions():
    routes = set()
    stack = [("", p) for p in get_resolver().url_patterns]
    while stack:
        prefix, entry = stack.pop()
        route = prefix + str(entry.pattern)
        if hasattr(entry, "url_patterns"):
            stack += [(route, p) for p in entry.url_patterns]
        else:
            routes.add(route)
    v2 = {r.removeprefix("api/v2/") for r in routes if r.startswith("api/v2/")}
    v1 = {r.removeprefix("api/v1/") for r in routes if r.startswith("api/v1/")}
    assert v2 and v1 == v2
    assert {"submissions", "evaluations/<uuid:evaluation_id>", "runs", "registry", "leaderboard/kernels"} <= v2
