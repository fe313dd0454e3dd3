"""Kernel submission through the web form and the JSON API: validation, limits, duplicates, visibility."""

from __future__ import annotations

import pytest
from django.test import override_settings

from portal.submissions.models import Evaluation, Submission
from tests.support.factories import GEMM, make_token, make_user, starter_source, sync_catalog

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice():
    sync_catalog()
    return make_user("alice")


def _api(client, token, body, **kwargs):
    return client.post(
        "/api/v1/submissions", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}", **kwargs
    )


def test_form_submission_queues_an_evaluation_on_the_arch_queue(client, alice, django_capture_on_commit_callbacks):
    import django_rq

    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/submit/", {"task": GEMM, "arch": "sm_90a", "source": starter_source(), "name": "naive"}
        )
    submission = Submission.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/submissions/{submission.id}/"
    evaluation = submission.evaluations.get()
    assert evaluation.state == Evaluation.State.QUEUED and evaluation.queue == "gpu-sm90"
    assert django_rq.get_queue("gpu-sm90").get_job_ids() == [str(evaluation.id)]
    page = client.get(f"/submissions/{submission.id}/").content.decode()
    assert "position 1 in gpu-sm90" in page


def test_form_upload_of_a_file(client, alice):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(alice)
    upload = SimpleUploadedFile("mine.cu", starter_source().encode(), content_type="text/plain")
    response = client.post("/submit/", {"task": GEMM, "arch": "sm_100a", "file": upload})
    assert response.status_code == 302
    assert Submission.objects.get().name == "mine.cu"


def test_pasted_source_is_the_uploaded_file_byte_for_byte(client, alice):
    """A browser sends a textarea's text with CRLF line breaks; the portal keeps what was pasted, so pasting a
    kernel and uploading its file are the same source: one digest, and the second is the duplicate."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(alice)
    text = "\n  // leading and trailing white space is part of the file\n" + starter_source() + "\n\n"
    upload = SimpleUploadedFile("mine.cu", text.encode(), content_type="text/plain")
    assert client.post("/submit/", {"task": GEMM, "arch": "sm_90a", "file": upload}).status_code == 302
    uploaded = Submission.objects.get()
    assert uploaded.source == text
    pasted = client.post("/submit/", {"task": GEMM, "arch": "sm_90a", "source": text.replace("\n", "\r\n")})
    assert pasted.status_code == 302 and pasted["Location"] == f"/submissions/{uploaded.id}/"
    assert Submission.objects.count() == 1  # the duplicate of the upload, not a second submission


def test_form_requires_login(client, alice):
    response = client.get("/submit/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_non_utf8_upload_is_refused_with_a_message(client, alice):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(alice)
    upload = SimpleUploadedFile("bad.cu", b"__global__ void k() {}\n\xff\xfe\n", content_type="text/plain")
    response = client.post("/submit/", {"task": GEMM, "arch": "sm_90a", "file": upload})
    assert response.status_code == 400
    assert "not UTF-8 text" in response.content.decode()
    assert not Submission.objects.exists()


@override_settings(MAX_SOURCE_BYTES=1000, MAX_REQUEST_BYTES=4000)
def test_oversize_source_is_refused_by_form_and_api(client, alice):
    client.force_login(alice)
    big = "// x\n" * 400  # 2000 bytes: over the source limit, under the request limit
    response = client.post("/submit/", {"task": GEMM, "arch": "sm_90a", "source": big})
    assert response.status_code == 400 and "limit is 1000 bytes" in response.content.decode()
    response = _api(client, make_token(alice), {"task": GEMM, "arch": "sm_90a", "source": big})
    assert response.status_code == 413 and "limit is 1000 bytes" in response.json()["error"]
    huge = "// x\n" * 2000  # 10000 bytes: over the whole-request limit, refused before parsing
    response = _api(client, make_token(alice), {"task": GEMM, "arch": "sm_90a", "source": huge})
    assert response.status_code == 413 and "the limit is 4000 bytes" in response.json()["error"]
    assert not Submission.objects.exists()


def test_api_submission_with_token_then_duplicate_then_forced(client, alice):
    token = make_token(alice)
    first = _api(client, token, {"task": GEMM, "arch": "sm_90a", "source": starter_source(), "name": "naive"})
    assert first.status_code == 201, first.content
    body = first.json()
    assert body["task"] == GEMM and body["duplicate"] is False
    assert body["evaluations"][0]["state"] == "queued"

    again = _api(client, token, {"task": GEMM, "arch": "sm_90a", "source": starter_source()})
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert again.json()["id"] == body["id"]
    assert Evaluation.objects.count() == 1

    other_arch = _api(client, token, {"task": GEMM, "arch": "sm_100a", "source": starter_source()})
    assert other_arch.status_code == 201  # same source, other architecture: a new submission

    forced = _api(client, token, {"task": GEMM, "arch": "sm_90a", "source": starter_source(), "force": True})
    assert forced.status_code == 201 and forced.json()["id"] != body["id"]


def test_api_rejects_missing_or_bad_tokens_and_session_cookies(client, alice):
    body = {"task": GEMM, "arch": "sm_90a", "source": starter_source()}
    assert client.post("/api/v1/submissions", body, content_type="application/json").status_code == 401
    assert _api(client, "ptx_not-a-real-token", body).status_code == 401
    client.force_login(alice)  # a logged-in browser session is not an API credential
    response = client.post("/api/v1/submissions", body, content_type="application/json")
    assert response.status_code == 401
    assert response.json() == {"error": "an API token is required (Authorization: Bearer <token>)"}


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"arch": "sm_90a", "source": "x"}, 400, "'task' is required"),
        ({"task": "nope", "arch": "sm_90a", "source": "x"}, 404, "unknown task 'nope'"),
        ({"task": GEMM, "arch": "sm_75", "source": "x"}, 400, "no target for architecture sm_75"),
        ({"task": GEMM, "arch": "sm_90a", "source": "   "}, 400, "the kernel source is empty"),
        ({"task": GEMM, "arch": "sm_90a", "source": "a\u0000b"}, 400, "NUL bytes"),
    ],
)
def test_api_validation_messages(client, alice, body, status, message):
    response = _api(client, make_token(alice), body)
    assert response.status_code == status
    assert message in response.json()["error"]


def test_api_body_must_be_json(client, alice):
    response = client.post(
        "/api/v1/submissions",
        "not json",
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {make_token(alice)}",
    )
    assert response.status_code == 400 and response.json() == {"error": "the request body is not valid JSON"}


@override_settings(EVALUATIONS_PER_HOUR=2, MAX_ACTIVE_EVALUATIONS=10)
def test_hourly_limit_gives_429(client, alice):
    token = make_token(alice)
    for i in range(2):
        assert (
            _api(client, token, {"task": GEMM, "arch": "sm_90a", "source": f"// {i}\n" + starter_source()}).status_code
            == 201
        )
    response = _api(client, token, {"task": GEMM, "arch": "sm_90a", "source": "// 3\n" + starter_source()})
    assert response.status_code == 429
    assert "hourly limit reached" in response.json()["error"]


@override_settings(EVALUATIONS_PER_HOUR=100, MAX_ACTIVE_EVALUATIONS=1)
def test_concurrent_limit_gives_429_until_the_evaluation_finishes(client, alice):
    token = make_token(alice)
    assert (
        _api(client, token, {"task": GEMM, "arch": "sm_90a", "source": "// a\n" + starter_source()}).status_code == 201
    )
    response = _api(client, token, {"task": GEMM, "arch": "sm_90a", "source": "// b\n" + starter_source()})
    assert response.status_code == 429 and "still queued or running" in response.json()["error"]
    Evaluation.objects.update(state=Evaluation.State.DONE)
    assert (
        _api(client, token, {"task": GEMM, "arch": "sm_90a", "source": "// b\n" + starter_source()}).status_code == 201
    )


def test_hidden_submission_is_visible_only_to_owner_and_staff(client, alice):
    token = make_token(alice)
    sid = _api(client, token, {"task": GEMM, "arch": "sm_90a", "source": starter_source()}).json()["id"]
    Submission.objects.filter(id=sid).update(is_hidden=True)
    assert client.get(f"/submissions/{sid}/").status_code == 404
    assert client.get(f"/api/v1/submissions/{sid}").status_code == 404
    client.force_login(alice)
    assert client.get(f"/submissions/{sid}/").status_code == 200
    client.force_login(make_user("root", is_staff=True))
    assert client.get(f"/submissions/{sid}/").status_code == 200


def test_kernel_source_is_escaped_on_the_status_page(client, alice):
    token = make_token(alice)
    payload = '// <script>alert("x")</script>\n' + starter_source()
    sid = _api(
        client, token, {"task": GEMM, "arch": "sm_90a", "source": payload, "name": "<img src=x onerror=alert(1)>"}
    ).json()["id"]
    html = client.get(f"/submissions/{sid}/").content.decode()
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
