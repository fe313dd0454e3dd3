"""In a real browser: log in, submit a kernel, and watch the status page reach its final state
(a real worker scores it; on machines without a GPU it runs the CPU stages only)."""

from __future__ import annotations

import os
import signal

import pytest

from tests.support.browser import chromium_page
from tests.support.factories import GEMM, make_user, start_manage_process, starter_source, sync_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def cpu_worker():
    proc = start_manage_process("gpu_worker", "--cpu-stages-only", "--arch", "sm_90a", "--name", "browser-test")
    yield proc
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=20)


def test_log_in_submit_and_watch_the_status_page_finish(live_server, cpu_worker):
    sync_catalog()
    make_user("kai", password="a-long-enough-passphrase-42")
    with chromium_page() as page:
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("input[name=username]", "kai")
        page.fill("input[name=password]", "a-long-enough-passphrase-42")
        page.click("button[type=submit]")
        page.goto(f"{live_server.url}/submit/?task={GEMM}")
        page.select_option("select[name=arch]", "sm_90a")
        page.fill("textarea[name=source]", starter_source())
        page.fill("input[name=name]", "naive starter")
        page.click("form.submit button[type=submit]")
        page.wait_for_url("**/submissions/*/")
        assert page.text_content("h1").endswith("naive starter")
        # The page updates itself: compile progress, then the verdict swapped in without a reload.
        page.wait_for_selector('#stages tr[data-stage="compile"] .state-passed', timeout=90_000)
        page.wait_for_selector("#verdict", timeout=90_000)
        assert "STATIC_ONLY" in page.text_content("#verdict")
        assert page.text_content("#eval-state") == "done"
        assert page.errors == []
