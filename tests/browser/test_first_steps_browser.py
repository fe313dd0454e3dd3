"""In Chromium, a newcomer's first steps: Submit while logged out explains the login page,
Sign up from there comes back to the submit form, and a file far over the limit gets a page, not a bare 413."""

from __future__ import annotations

import pytest

from tests.support.browser import chromium_page
from tests.support.factories import GEMM, make_user, sync_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-enough-passphrase-42"


def test_logged_out_submit_then_sign_up_comes_back_to_the_form(live_server):
    """Catches: the login page shown with no reason, and Sign up dropping `next` (the newcomer lands on the home
    page and has to find the form again)."""
    sync_catalog()
    with chromium_page() as page:
        page.goto(f"{live_server.url}/")
        page.click("#home-actions >> text=Submit a kernel")
        page.wait_for_url("**/accounts/login/?next=**")
        assert "Log in to submit a kernel" in page.text_content("ul.messages")
        page.goto(f"{live_server.url}/submit/?task={GEMM}")  # from a task page's link: the task comes along
        page.click("#signup-link")
        page.wait_for_url("**/accounts/signup/?next=**")
        page.fill("input[name=username]", "newcomer")
        page.fill("input[name=password1]", PASSWORD)
        page.fill("input[name=password2]", PASSWORD)
        page.click("main form button[type=submit]")
        page.wait_for_url(f"**/submit/?task={GEMM}")
        assert page.text_content("h1") == "Submit a kernel"
        assert page.eval_on_selector("select[name=task]", "el => el.value") == GEMM
        assert "Log out newcomer" in page.text_content("nav")
        assert page.errors == []


def test_a_5_mb_upload_shows_a_page_with_the_limit(live_server):
    """Catches: a bare "Request too large" text answer (or a reset connection) for a big file."""
    sync_catalog()
    make_user("kai", password=PASSWORD)
    with chromium_page() as page:
        page.goto(f"{live_server.url}/accounts/login/?next=/submit/")
        page.fill("input[name=username]", "kai")
        page.fill("input[name=password]", PASSWORD)
        page.click("main form button[type=submit]")
        page.wait_for_url("**/submit/")
        page.select_option("select[name=task]", GEMM)
        page.set_input_files(
            "input[name=file]", {"name": "huge.cu", "mimeType": "text/plain", "buffer": b"// x\n" * (1024 * 1024)}
        )
        page.click("form.submit button[type=submit]")
        page.wait_for_selector("#too-large", timeout=60_000)
        assert page.text_content("h1") == "Upload too large"
        assert "5.0\xa0MB" in page.text_content("#too-large")
        page.click("text=Back to the submit form")
        page.wait_for_url("**/submit/")
