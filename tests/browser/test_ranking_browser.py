"""In a real browser: the kernel board ranks verified kernels first and its toggle shows the others grouped,
the model board shows one row per model with its runs behind a click, /compare/ renders both kinds, /api/
answers 200."""

from __future__ import annotations

import pytest

from tests.support import leaderboard_factories as lf
from tests.support.browser import chromium_page
from tests.support.leaderboard_factories import GEMM, leaderboard_isolation  # noqa: F401 - autouse fixture
from tests.support.ranking_fixtures import mixed_board, three_runs_of_one_model

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _rows(page, selector: str) -> list[str]:
    return [" ".join(text.split()) for text in page.locator(selector).all_inner_texts()]


def test_first_row_is_verified_and_show_all_groups_the_rest(live_server):
    mixed_board()
    with chromium_page() as page:
        page.goto(f"{live_server.url}/leaderboard/kernels/?arch=sm_90a&task={GEMM}")
        rows = page.locator("#kernel-board tbody tr[data-evaluation]")
        assert rows.first.get_attribute("data-state") == "verified"
        assert "mid.cu" in rows.first.inner_text() and "absent.cu" not in page.inner_text("#kernel-board")
        with page.expect_navigation():
            page.click("#show-all")
        assert page.get_attribute("#kernel-board", "data-show") == "all"
        states = [s.get_attribute("data-state") for s in page.locator("#kernel-board tbody.board-section").all()]
        assert states == ["verified", "token", "not_executed", "absent", "not_requested"]
        order = [r.get_attribute("data-state") for r in page.locator("#kernel-board tr[data-evaluation]").all()]
        assert order == ["verified", "verified", "token", "not_executed", "absent", "not_requested"]
        assert "correct, but no wgmma/TMA in the binary" in page.inner_text("tbody[data-state=absent]")
        assert page.errors == []


def test_one_model_with_three_runs_is_one_row_that_opens_to_its_runs(live_server):
    three_runs_of_one_model()
    with chromium_page() as page:
        page.goto(f"{live_server.url}/leaderboard/?arch=sm_90a&task={GEMM}&k=8")
        rows = page.locator("#model-board > tbody > tr")
        assert rows.count() == 3  # Model Y, Model X on H200, Model X on H100
        x = page.locator('#model-board > tbody > tr[data-model="vendor/model-x"][data-runs="3"]')
        assert x.count() == 1
        runs = x.locator("details.runs table.runs tbody tr")
        assert not runs.first.is_visible()  # collapsed until clicked, no JavaScript needed
        x.locator("summary").click()
        assert runs.count() == 3 and runs.first.is_visible()
        assert "(6/12)" in x.inner_text() and "1.2M" in x.inner_text()
        assert page.errors == []


def test_compare_renders_two_models_and_two_kernels(live_server):
    runs = lf.standard_runs()
    for run in (runs["a"], runs["b"]):  # the curves are drawn from the runs' turns
        lf.turns(run, GEMM, [[("COMPILE_ERROR", "", None, 90), ("PASSED", "verified", 1.2, 120)]])
    board = mixed_board()
    with chromium_page() as page:
        page.goto(f"{live_server.url}/compare/?a=vendor/model-a&b=vendor/model-b&arch=sm_90a&k=8")
        assert "Model A vs Model B" in page.inner_text("#compare-title")
        page.wait_for_selector("#chart-compare .main-svg", timeout=30_000)
        assert page.locator("#chart-compare g.trace").count() > 0
        assert page.locator("#compare-models tbody tr").count() >= 2

        page.goto(f"{live_server.url}/compare/?kind=kernels&a={board['mid'].id}&b={board['absent'].id}")
        verdicts = page.inner_text("#compare-verdicts")
        assert "correct · verified · full" in verdicts and "correct, but no wgmma/TMA in the binary" in verdicts
        assert page.locator("#compare-workloads tbody tr").count() == 1

        response = page.goto(f"{live_server.url}/compare/?kind=kernels&a=not-an-id&b=x")
        assert response.status == 400 and "not an evaluation id" in page.inner_text("#compare-error")
        assert page.errors == [] or all("400" in e for e in page.errors)


def test_api_page_answers_200(live_server):
    with chromium_page() as page:
        response = page.goto(f"{live_server.url}/api/")
        assert response.status == 200
        assert "$PTXBENCH_TOKEN" in page.inner_text("#curl-example")
        assert page.locator("#api-doc h2").count() > 3
        with page.expect_navigation():
            page.click("#tokens-link")
        assert "/accounts/" in page.url  # the tokens page (or the login in front of it)
        assert page.errors == []
