"""In a real browser: from a task page to the SASS view by clicking (a real CPU-stage worker scores the expert
Hopper kernel: policy, compile, SASS), and no main page wider than a 390 px phone screen."""

from __future__ import annotations

import os
import signal
import subprocess
from io import StringIO

import pytest
from django.core.management import call_command

from portal.core import context_processors
from tests.support.browser import chromium_page
from tests.support.factories import GEMM, REPO, make_user, start_manage_process, sync_catalog, wait_for_live_worker

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-enough-passphrase-42"


@pytest.fixture
def cpu_worker(transactional_db):
    proc = start_manage_process("gpu_worker", "--cpu-stages-only", "--arch", "sm_90a", "--name", "pages-browser")
    wait_for_live_worker("pages-browser", proc)  # the submit page below says which workers are online
    yield proc
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        # How fast a worker stops is tests/submissions/test_worker_stop.py's subject; here a loaded machine may take
        # longer than that test allows, and the page flow is what is judged.
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def _log_in(page, base: str, username: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")


def test_task_page_to_submit_to_status_to_evaluation_page_to_sass_view(live_server, cpu_worker):
    sync_catalog()
    make_user("kai", password=PASSWORD)
    source = (REPO / "tasks" / GEMM / "solutions" / "hopper_tma_wgmma" / "kernel.cu").read_text()
    with chromium_page() as page:
        _log_in(page, live_server.url, "kai")
        page.goto(f"{live_server.url}/tasks/{GEMM}/")
        page.click("#task-submit")
        page.wait_for_url("**/submit/?task=*")
        assert page.input_value("select[name=task]") == GEMM  # pre-filled from the task page
        assert page.input_value("select[name=arch]") == "sm_90a"
        assert "only CPU-stage workers" in page.text_content("#worker-capabilities li[data-arch=sm_90a]")
        page.fill("textarea[name=source]", source)
        page.fill("input[name=name]", "tma wgmma")
        page.click("form.submit button[type=submit]")
        page.wait_for_url("**/submissions/*/")
        page.wait_for_selector("#verdict", timeout=120_000)  # the live status page swaps the verdict in
        page.click("#evaluation-link a")
        page.wait_for_url("**/evidence/evaluations/*/")
        assert page.is_visible("#evaluation-summary")
        sass = page.locator("#sass-view")
        assert not page.is_visible("pre.sass")  # collapsed until asked for
        sass.locator("summary").click()
        page.wait_for_selector("pre.sass .sass-target.sass-gmma", state="visible")
        assert page.locator("pre.sass .sass-target.sass-gmma").count() > 0
        assert page.locator("pre.sass .sass-target.sass-tma").count() > 0
        assert "HGMMA" in page.locator("pre.sass .sass-gmma").first.text_content()
        assert page.errors == []


PHONE_PAGES = [
    "/",
    "/tasks/",
    f"/tasks/{GEMM}/",
    "/leaderboard/?arch=sm_90a&k=8",
    f"/leaderboard/?arch=sm_90a&task={GEMM}&k=8",
    f"/leaderboard/kernels/?arch=sm_90a&task={GEMM}",
    f"/leaderboard/kernels/?arch=sm_90a&task={GEMM}&show=all",
    "/submit/",
    "/workers/",
    "/runs/",
]


def test_no_page_is_wider_than_a_phone_screen(live_server, demo_leaderboard):
    from portal.agent.models import ModelRun, Trajectory
    from portal.catalog.models import KnowledgePack
    from portal.submissions.models import Evaluation

    sync_catalog()
    demo_leaderboard()
    call_command("import_reference_verdicts", stdout=StringIO())
    context_processors.reset()
    make_user("kai", password=PASSWORD)
    reference = Evaluation.objects.filter(submission__kind="reference", submission__task__slug=GEMM).first()
    run = ModelRun.objects.filter(is_hidden=False).first()
    trajectory = Trajectory.objects.filter(run=run).first()
    pages = [
        *PHONE_PAGES,
        f"/evidence/evaluations/{reference.id}/",
        f"/submissions/{reference.submission_id}/",
        f"/packs/{KnowledgePack.objects.exclude(text='').first().slug}/",
        f"/runs/{run.id}/",
        f"/runs/{run.id}/trajectories/{trajectory.id}/",
    ]
    too_wide = {}
    with chromium_page() as page:
        page.set_viewport_size({"width": 390, "height": 844})
        _log_in(page, live_server.url, "kai")
        for path in pages:
            response = page.goto(live_server.url + path)
            assert response.status == 200, path
            page.wait_for_load_state("load")
            width = page.evaluate("document.documentElement.scrollWidth")
            if width > 390:
                too_wide[path] = width
        assert page.errors == []
    context_processors.reset()
    assert too_wide == {}
