"""Every API error is {"error": "..."} JSON with a proper status, whatever the body: malformed, nested past any
sane depth, lone surrogates, not UTF-8, NUL bytes in a text field; and an unhandled exception under /api/ is a
JSON 500 without a traceback (DEBUG on or off)."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from portal.submissions.models import Submission
from tests.support.factories import GEMM, make_token, make_user, sync_catalog

pytestmark = pytest.mark.django_db

ENDPOINTS = ("/api/v1/submissions", "/api/v1/runs")


@pytest.fixture
def api():
    sync_catalog()
    token = make_token(make_user("mallory"))
    client = Client(raise_request_exception=False)  # a crash must show as the 500 a caller would get

    def post(path: str, body: bytes | str, content_type: str = "application/json"):
        return client.post(path, data=body, content_type=content_type, HTTP_AUTHORIZATION=f"Bearer {token}")

    post.client = client
    return post


def _assert_json_error(response, status: int, *words: str) -> str:
    assert response.status_code == status, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = response.json()
    assert set(body) == {"error"} and isinstance(body["error"], str) and body["error"]
    assert "Traceback" not in body["error"]
    for word in words:
        assert word in body["error"], body["error"]
    return body["error"]


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"{not json", ("not valid JSON",)),
        (b"[" * 200_000, ("nested",)),
        (b'{"a":' * 100_000 + b"1" + b"}" * 100_000, ("nested",)),
        (b'{"task": "x", "name": "\\ud800"}', ("surrogate",)),
        (b'{"name": "caf\xe9"}', ("UTF-8",)),
        ('{"name": "x"}'.encode("utf-16"), ("UTF-8",)),
        (b"[1, 2]", ("JSON object",)),
    ],
    ids=["malformed", "deep-array", "deep-object", "lone-surrogate", "latin-1", "utf-16", "not-an-object"],
)
def test_hostile_bodies_get_a_json_400(api, path, body, words):
    _assert_json_error(api(path, body), 400, *words)


@pytest.mark.parametrize("field", ["name", "note", "source", "task", "arch"])
def test_nul_bytes_in_any_submission_text_field_are_refused(api, field):
    data = {"task": GEMM, "arch": "sm_90a", "source": "// kernel\n", "name": "k.cu", "note": "hello"}
    data[field] = data[field] + "\x00tail"
    message = _assert_json_error(api("/api/v1/submissions", json.dumps(data)), 400, "NUL", field)
    assert "\x00" not in message
    assert not Submission.objects.exists()


@pytest.mark.parametrize("field", ["display_name", "model", "base_url"])
def test_nul_bytes_in_run_fields_are_refused(api, field):
    data = {"base_url": "https://llm.example.com/v1", "model": "m", "arch": "sm_90a", "tasks": [GEMM]}
    data[field] = data.get(field, "x") + "\x00"
    _assert_json_error(api("/api/v1/runs", json.dumps(data)), 400, "NUL", field)


def test_nul_bytes_in_a_nested_value_are_refused(api):
    data = {"base_url": "https://llm.example.com/v1", "model": "m", "arch": "sm_90a", "tasks": [GEMM, "a\x00b"]}
    _assert_json_error(api("/api/v1/runs", json.dumps(data)), 400, "NUL", "tasks")


def test_nul_bytes_in_multipart_fields_are_refused(api):
    client = api.client
    token = make_token(make_user("mallory2"))
    response = client.post(
        "/api/v1/submissions",
        data={"task": GEMM, "arch": "sm_90a", "source": "// kernel\n", "name": "k\x00.cu"},
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    _assert_json_error(response, 400, "NUL", "name")
    assert not Submission.objects.exists()


@pytest.mark.parametrize("debug", [False, True])
def test_an_unhandled_exception_under_api_is_a_json_500_without_traceback(api, monkeypatch, settings, debug):
    """A fault deep inside a view (here the selector every evaluation read goes through)."""
    from portal.submissions import selectors

    settings.DEBUG = debug

    def broken(*args, **kwargs):
        raise RuntimeError("internal detail: /srv/secret/path")

    monkeypatch.setattr(selectors, "evaluation_status", broken)
    data = {"task": GEMM, "arch": "sm_90a", "source": "// kernel\n"}
    response = api("/api/v1/submissions", json.dumps(data))
    message = _assert_json_error(response, 500)
    assert "secret" not in response.content.decode()
    assert "RuntimeError" not in message


def test_unknown_api_paths_and_methods_answer_json(api):
    client = api.client
    _assert_json_error(client.get("/api/v1/no-such-thing"), 404)
    _assert_json_error(client.get("/api/v1/submissions/not-a-number"), 404)
    _assert_json_error(client.delete("/api/v1/runs"), 405)
