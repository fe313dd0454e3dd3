"""The web security checklist: deploy checks, CSRF on forms, tokens not cookies for the API, a CSP that
forbids inline scripts on every page, attachments for uploads and downloads, login rate limiting."""

from __future__ import annotations

import re

import pytest
from django.test import Client, override_settings

from tests.project.test_settings import PROD_ENV, _django
from tests.support.factories import GEMM, make_token, make_user, starter_source, sync_catalog

pytestmark = pytest.mark.django_db

INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", re.I)
EVENT_HANDLER = re.compile(r"<[^>]+\son[a-z]+\s*=", re.I)


def test_check_deploy_clean_in_production_settings():
    result = _django(["check", "--deploy", "--fail-level", "WARNING"], PROD_ENV)
    assert result.returncode == 0, result.stdout + result.stderr


def test_forms_enforce_csrf():
    sync_catalog()
    user = make_user()
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = client.post("/submit/", {"task": GEMM, "arch": "sm_90a", "source": starter_source()})
    assert response.status_code == 403
    response = client.post("/accounts/tokens/", {"name": "x"})
    assert response.status_code == 403


def test_api_accepts_tokens_not_session_cookies(client):
    sync_catalog()
    user = make_user()
    client.force_login(user)
    body = {"task": GEMM, "arch": "sm_90a", "source": starter_source()}
    assert client.post("/api/v1/submissions", body, content_type="application/json").status_code == 401
    token = make_token(user)
    ok = client.post("/api/v1/submissions", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert ok.status_code == 201


@pytest.mark.parametrize(
    "path", ["/", "/tasks/", f"/tasks/{GEMM}/", "/packs/hopper/", "/accounts/login/", "/accounts/signup/", "/workers/"]
)
def test_pages_carry_a_csp_without_inline_scripts(client, path):
    sync_catalog()
    response = client.get(path)
    assert response.status_code == 200
    csp = response["Content-Security-Policy"]
    script_src = next(d for d in csp.split(";") if d.strip().startswith("script-src"))
    assert "'unsafe-inline'" not in script_src and "'unsafe-eval'" not in script_src
    html = response.content.decode()
    assert not INLINE_SCRIPT.search(html), "inline <script> on the page"
    assert not EVENT_HANDLER.search(html), "inline event handler attribute on the page"


def test_logged_in_pages_have_no_inline_scripts_either(client):
    sync_catalog()
    user = make_user()
    client.force_login(user)
    token = make_token(user)
    sid = client.post(
        "/api/v1/submissions",
        {"task": GEMM, "arch": "sm_90a", "source": starter_source()},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    ).json()["id"]
    for path in ("/submit/", f"/submissions/{sid}/", "/submissions/mine/", "/accounts/tokens/"):
        html = client.get(path).content.decode()
        assert not INLINE_SCRIPT.search(html), path
        assert not EVENT_HANDLER.search(html), path


def test_downloads_are_attachments(client):
    sync_catalog()
    for path in ("/packs/hopper/download", f"/tasks/{GEMM}/starter.cu"):
        response = client.get(path)
        assert response["Content-Disposition"].startswith("attachment;")
        assert response["X-Content-Type-Options"] == "nosniff"


@override_settings(LOGIN_MAX_FAILURES=3)
def test_login_is_rate_limited_per_address_and_user(client):
    make_user("target", password="the-right-passphrase-99")
    for _ in range(3):
        response = client.post("/accounts/login/", {"username": "target", "password": "wrong"})
        assert response.status_code == 200
    response = client.post("/accounts/login/", {"username": "target", "password": "the-right-passphrase-99"})
    assert response.status_code == 429
    assert "Too many failed logins" in response.content.decode()
    assert int(response["Retry-After"]) > 0
    other = client.post("/accounts/login/", {"username": "target", "password": "wrong"}, REMOTE_ADDR="10.9.8.7")
    assert other.status_code == 200  # another address is not blocked
