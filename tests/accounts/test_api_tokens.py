"""A token without expiry or scope, leaked once (a CI log, a shared notebook), would work for ever and
could do everything the account can. So every token expires (API_TOKEN_DEFAULT_DAYS unless the user
picks fewer days, never more than API_TOKEN_MAX_DAYS) and may be read-only: such a token reads, and is refused
with a 403 that says why on every write endpoint of the API, before the view runs."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.test import Client, override_settings
from django.urls import URLResolver, get_resolver
from django.utils import timezone

from portal.accounts.models import ApiToken
from portal.accounts.services import token_create
from portal.agent.models import ModelRun
from portal.fixit.models import Dataset
from portal.submissions.models import Submission
from tests.project.test_settings import _django
from tests.support.factories import GEMM, make_user, starter_source, sync_catalog

pytestmark = pytest.mark.django_db


def _api_routes() -> list[tuple[str, tuple[str, ...]]]:
    """Every route whose view is an `api_endpoint`, with its methods, path parameters filled in."""
    fill = {
        "int": "1",
        "slug": "x",
        "str": "x",
        "path": "x",
        "uuid": "00000000-0000-4000-8000-0000000000aa",
    }  # fixed: xdist workers must collect the same ids

    def walk(patterns, prefix=""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif getattr(pattern.callback, "api_methods", None):
                route = re.sub(r"<(\w+):\w+>", lambda m: fill[m.group(1)], prefix + str(pattern.pattern))
                yield "/" + route, pattern.callback.api_methods

    return list(walk(get_resolver().url_patterns))


WRITES = [(path, method) for path, methods in _api_routes() for method in methods if method not in {"GET", "HEAD"}]
READS = [path for path, methods in _api_routes() if "GET" in methods]


def _auth(raw: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


def test_every_write_endpoint_is_found():
    """The walk below sees the writes (a new one is covered without editing this file)."""
    paths = {path for path, _ in WRITES}
    assert {"/api/v1/submissions", "/api/v1/runs", "/api/v1/datasets", "/api/v1/fixit/repair-runs"} <= paths
    assert len(WRITES) >= 6


@pytest.mark.parametrize(("path", "method"), WRITES)
def test_a_read_only_token_is_refused_on_every_write(path, method):
    """Before: there was no scope; every token could submit, start runs and build datasets."""
    sync_catalog()
    _, raw = token_create(user=make_user("reader"), name="ci", scope=ApiToken.Scope.READ)
    body = {"task": GEMM, "arch": "sm_90a", "source": starter_source(), "name": "d", "filters": {}}
    response = Client().generic(method, path, data=json.dumps(body), content_type="application/json", **_auth(raw))
    assert response.status_code == 403, (path, response.content[:200])
    assert "read-only" in response.json()["error"] and "/accounts/tokens/" in response.json()["error"]
    assert not Submission.objects.exists() and not ModelRun.objects.exists() and not Dataset.objects.exists()


@pytest.mark.parametrize("path", READS)
def test_a_read_only_token_still_reads(path):
    _, raw = token_create(user=make_user("reader"), name="ci", scope=ApiToken.Scope.READ)
    response = Client().get(path, **_auth(raw))
    assert response.status_code != 403 and response.status_code != 401, (path, response.content[:200])


def test_a_read_and_write_token_submits():
    sync_catalog()
    _, raw = token_create(user=make_user("writer"), name="ci")
    body = {"task": GEMM, "arch": "sm_90a", "source": starter_source()}
    response = Client().post("/api/v1/submissions", data=body, content_type="application/json", **_auth(raw))
    assert response.status_code == 201, response.content


@override_settings(API_TOKEN_DEFAULT_DAYS=30, API_TOKEN_MAX_DAYS=60)
def test_tokens_expire_by_default_and_never_beyond_the_maximum():
    """Before: no expiry at all."""
    alice = make_user("alice")
    before = timezone.now()
    token, _ = token_create(user=alice, name="default")
    assert before + timedelta(days=30) <= token.expires_at <= timezone.now() + timedelta(days=30)
    short, _ = token_create(user=alice, name="short", days=1)
    assert short.expires_at <= timezone.now() + timedelta(days=1)
    with pytest.raises(ValueError, match="1 to 60 days"):
        token_create(user=alice, name="long", days=61)
    with pytest.raises(ValueError):
        token_create(user=alice, name="zero", days=0)


def test_an_expired_token_is_refused_and_told_so():
    alice = make_user("alice")
    token, raw = token_create(user=alice, name="old", days=1)
    assert Client().get("/api/v1/leaderboard/summary", **_auth(raw)).status_code == 200
    ApiToken.objects.filter(id=token.id).update(expires_at=timezone.now() - timedelta(seconds=1))  # a day later
    for path in ("/api/v1/leaderboard/summary", "/api/v1/submissions"):
        response = Client().generic("GET" if "summary" in path else "POST", path, **_auth(raw))
        assert response.status_code == 401 and "expired on" in response.json()["error"]


@override_settings(API_TOKEN_DEFAULT_DAYS=30, API_TOKEN_MAX_DAYS=60)
def test_the_tokens_page_makes_read_only_tokens_with_a_bounded_expiry(client):
    alice = make_user("alice")
    client.force_login(alice)
    page = client.get("/accounts/tokens/").content.decode()
    assert 'name="days"' in page and 'value="30"' in page and 'max="60"' in page and "read only" in page
    too_long = client.post("/accounts/tokens/", {"name": "x", "scope": "read", "days": "61"})
    assert "less than or equal to 60" in too_long.content.decode() and not ApiToken.objects.exists()
    made = client.post("/accounts/tokens/", {"name": "ci", "scope": "read", "days": "7"})
    raw = re.search(r'<pre id="new-token">([^<]+)</pre>', made.content.decode()).group(1)
    token = ApiToken.objects.get()
    assert token.scope == "read" and token.expires_at <= timezone.now() + timedelta(days=7)
    listed = client.get("/accounts/tokens/").content.decode()
    assert "read only" in listed and token.expires_at.strftime("%Y-%m-%d") in listed and raw not in listed
    refused = Client().post("/api/v1/submissions", data="{}", content_type="application/json", **_auth(raw))
    assert refused.status_code == 403


def test_a_default_above_the_maximum_fails_loudly():
    result = _django(["check"], {"DEBUG": "1", "API_TOKEN_DEFAULT_DAYS": "400", "API_TOKEN_MAX_DAYS": "365"})
    assert result.returncode != 0 and "API_TOKEN_DEFAULT_DAYS=400 must be between 1 and" in result.stderr
