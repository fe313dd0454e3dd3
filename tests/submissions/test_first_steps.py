"""A newcomer's first steps: a too-large upload, a logged-out Submit, sign-up keeping where
it was going, a compile error shown on the submission page, the home page and nav leading somewhere, Compare
opening on something useful."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from portal.submissions.models import Submission
from tests.support import leaderboard_factories as lf
from tests.support.factories import GEMM, make_user, sync_catalog
from tests.support.leaderboard_factories import leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.django_db


def test_a_5_mb_upload_gets_a_readable_page(client):
    """Catches: a bare text/plain 413 ("Request too large: ...") instead of a page with the limit and a way back."""
    sync_catalog()
    client.force_login(make_user("alice"))
    upload = SimpleUploadedFile("huge.cu", b"// x\n" * (1024 * 1024), content_type="text/plain")  # 5 MiB
    response = client.post("/submit/", {"task": GEMM, "arch": "sm_90a", "file": upload})
    assert response.status_code == 413
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    assert "<h1>Upload too large</h1>" in html and 'href="/submit/"' in html
    said = re.sub(r"[ \n]+", " ", html)  # line breaks as a reader sees them
    assert "a kernel source at most 1.0\xa0MB (1048576 bytes)" in said
    assert not Submission.objects.exists()


def test_logged_out_submit_says_why_it_asks_to_log_in(client):
    """Catches: the login page shown with no reason, and a Sign up link that drops `next`."""
    response = client.get("/submit/", {"task": GEMM}, follow=True)
    assert response.redirect_chain[-1][0] == "/accounts/login/?next=/submit/%3Ftask%3Dgemm_n7168_k5120"
    html = response.content.decode()
    assert "Log in to submit a kernel" in html
    assert 'href="/accounts/signup/?next=/submit/%3Ftask%3Dgemm_n7168_k5120"' in html


def test_sign_up_goes_on_to_next(client):
    """Catches: sign-up always landing on the home page, losing where the newcomer was going."""
    page = client.get("/accounts/signup/", {"next": "/submit/?task=x"}).content.decode()
    assert '<input type="hidden" name="next" value="/submit/?task=x">' in page
    response = client.post(
        "/accounts/signup/",
        {"username": "newcomer", "password1": "a-long-enough-passphrase-42", "password2": "a-long-enough-passphrase-42",
         "next": "/submit/?task=x"},
    )  # fmt: skip
    assert response.status_code == 302 and response["Location"] == "/submit/?task=x"


def test_sign_up_never_sends_elsewhere(client):
    response = client.post(
        "/accounts/signup/",
        {"username": "newcomer", "password1": "a-long-enough-passphrase-42", "password2": "a-long-enough-passphrase-42",
         "next": "https://evil.example/"},
    )  # fmt: skip
    assert response.status_code == 302 and response["Location"] == "/"


def test_a_compile_error_shows_its_first_error_lines_escaped(client):
    """Catches: a compile error's page saying only that the compiler failed (the log one click away), and compiler
    text (which quotes the kernel) put on the page unescaped."""
    log = (
        '/tmp/portal-eval-1234/work/kernel.cu(2): error: expected a ";" <script>alert(1)</script>\n'
        "  void run() { this is not C++ }\n"
        "                   ^\n"
        '1 error detected in the compilation of "/tmp/portal-eval-1234/work/kernel.cu".\n'
    )
    sync_catalog()
    evaluation = lf.evaluation(owner=make_user("alice"), status="COMPILE_ERROR", compile_output=log)
    html = client.get(f"/submissions/{evaluation.submission_id}/").content.decode()
    block = re.search(r'<pre class="compile-errors" id="compile-errors">(.*?)</pre>', html, re.S)
    assert block, "no compiler output on the submission page"
    text = block.group(1)
    assert "kernel.cu(2): error: expected a &quot;;&quot; &lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "/tmp/portal-eval" not in text and "<script>" not in html.split("<footer")[0].split("</header>")[1]
    assert "this is not C++" in text
    # the fragment the status page swaps in says the same
    fragment = client.get(f"/submissions/{evaluation.submission_id}/verdict").content.decode()
    assert 'id="compile-errors"' in fragment


def test_home_page_leads_to_the_boards_submit_and_the_api(client):
    """Catches: a home page with no way to the boards or to submit, and no API in the nav."""
    sync_catalog()
    html = client.get("/").content.decode()
    actions = re.search(r'<p class="actions" id="home-actions">(.*?)</p>', html, re.S).group(1)
    for href in ("/leaderboard/", "/leaderboard/kernels/", "/submit/", "/compare/"):
        assert f'href="{href}"' in actions
    nav = re.search(r"<nav[^>]*>(.*?)</nav>", html, re.S).group(1)
    assert 'href="/api/">API</a>' in nav


def test_compare_opens_on_the_two_leading_models(client):
    """Catches: the Compare link opening an empty form."""
    lf.standard_runs()
    html = client.get("/compare/").content.decode()
    assert 'id="compare-models"' in html and "Showing the two leading models" in html


def test_kernels_are_picked_from_a_task_board_without_typing_ids(client):
    """Catches: kernel comparison only by typed evaluation UUIDs."""
    sync_catalog()
    fast = lf.evaluation(owner=lf.user("ann"), name="fast.cu", speedup=1.5)
    slow = lf.evaluation(owner=lf.user("bo"), name="slow.cu", speedup=0.9)
    html = client.get("/compare/", {"kind": "kernels", "task": GEMM}).content.decode()
    picker_a = re.search(r'<select name="a" id="compare-a">(.*?)</select>', html, re.S).group(1)
    assert f'<option value="{fast.id}" selected>fast.cu · ann · cuda · 1.50x</option>' in picker_a
    picker_b = re.search(r'<select name="b" id="compare-b">(.*?)</select>', html, re.S).group(1)
    assert f'<option value="{slow.id}" selected>slow.cu · bo · cuda · 0.90x</option>' in picker_b
    # what the picker sends is a working comparison
    compared = client.get("/compare/", {"kind": "kernels", "task": GEMM, "a": str(fast.id), "b": str(slow.id)})
    assert compared.status_code == 200 and 'id="compare-verdicts"' in compared.content.decode()
