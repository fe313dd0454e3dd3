"""A multipart body that cannot be parsed is the client's error, answered 400 on the API (JSON) and on
the site (a page that says so), never a 500. Before: `POST /api/v1/submissions` with `multipart/form-data` and no
boundary (or an empty one, a 300-character one, a negative Content-Length, part headers over Django's limit) got
`{"error": "internal server error ..."}` with status 500 and an ERROR log with a traceback; the site's pages got
Django's bare "Bad Request (400)" text with no word of what was wrong."""

from __future__ import annotations

import logging

import pytest
from django.test import Client

from tests.support.factories import make_token, make_user

pytestmark = pytest.mark.django_db

BOUNDARY = "multipart/form-data; boundary=XX"
# (content type, body, extra META): each makes Django's MultiPartParser raise MultiPartParserError.
MALFORMED = {
    "no boundary": ("multipart/form-data", b"--XX\r\n\r\nx\r\n--XX--\r\n", {}),
    "empty boundary": ("multipart/form-data; boundary=", b"x", {}),
    "over-long boundary": ("multipart/form-data; boundary=" + "x" * 300, b"x", {}),
    "negative length": (BOUNDARY, b"x", {"CONTENT_LENGTH": "-5"}),
    "part headers over the limit": (
        BOUNDARY,
        b'--XX\r\nContent-Disposition: form-data; name="task"' + b"x" * 100_000 + b"\r\n\r\nx\r\n--XX--\r\n",
        {},
    ),
}


@pytest.fixture
def alice():
    return make_user("alice")


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_multipart_body_is_a_json_400_on_the_api(alice, case, caplog):
    """Catches the old behaviour: ApiErrorsMiddleware turned MultiPartParserError into a logged JSON 500."""
    content_type, body, extra = MALFORMED[case]
    client = Client(raise_request_exception=False)
    with caplog.at_level(logging.ERROR):
        response = client.generic(
            "POST",
            "/api/v1/submissions",
            body,
            content_type=content_type,
            HTTP_AUTHORIZATION=f"Bearer {make_token(alice)}",
            **extra,
        )
    assert response.status_code == 400, response.content[:200]
    assert response["Content-Type"].startswith("application/json")
    error = response.json()["error"]
    assert "multipart/form-data body could not be read" in error
    assert "xxxxxxxx" not in error  # the client's boundary is not echoed back
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # not an operator's problem


@pytest.mark.parametrize("case", list(MALFORMED))
@pytest.mark.parametrize("path", ["/submit/", "/accounts/tokens/", "/accounts/signup/"])
def test_a_malformed_multipart_form_is_a_400_page_that_says_what_went_wrong(alice, case, path):
    """Catches the old behaviour: Django's bare "Bad Request (400)" text (there was no 400.html)."""
    content_type, body, extra = MALFORMED[case]
    client = Client(raise_request_exception=False)
    client.force_login(alice)
    response = client.generic("POST", path, body, content_type=content_type, **extra)
    assert response.status_code == 400
    page = response.content.decode()
    assert 'id="bad-request"' in page and "could not be read" in page and "xxxxxxxx" not in page


def test_the_400_page_also_serves_a_request_for_a_host_not_allowed():
    """The new 400.html renders without a request (Django's bad_request view): a disallowed Host stays a 400."""
    response = Client(raise_request_exception=False).get("/", HTTP_HOST="evil.example")
    assert response.status_code == 400 and 'id="bad-request"' in response.content.decode()
