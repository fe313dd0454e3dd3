"""In a real browser: the leaderboard draws its charts with the vendored plotly.js basic bundle (static/vendor/),
without console errors (the CSP forbids inline scripts), and the architecture, task and turn-limit filters
update the table."""

from __future__ import annotations

import pytest

from tests.support import leaderboard_factories as lf
from tests.support.browser import chromium_page
from tests.support.leaderboard_factories import GEMM, MHA, leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _board(page) -> tuple[dict[str, str], list[str]]:
    table = page.locator("#model-board")
    attrs = {name: table.get_attribute(f"data-{name}") for name in ("arch", "task", "k")}
    return attrs, [" ".join(row.split()) for row in page.locator("#model-board > tbody > tr").all_inner_texts()]


def _choose(page, selector: str, value: str) -> None:
    with page.expect_navigation():
        page.select_option(selector, value)
    page.wait_for_load_state("load")


def test_charts_draw_and_filters_update_the_model_table(live_server):
    from portal.leaderboard.boards.views import MODEL_CHARTS

    runs = lf.standard_runs()
    lf.turns(runs["a"], GEMM, [[("COMPILE_ERROR", "", None, 90), ("PASSED", "verified", 1.4, 120)]])
    kim = lf.user("kim")
    for speedup in (0.8, 1.1, 1.3):
        lf.evaluation(owner=kim, speedup=speedup)
    with chromium_page() as page:
        page.goto(f"{live_server.url}/leaderboard/?arch=sm_90a&task={GEMM}&k=8")
        for name in MODEL_CHARTS:
            page.wait_for_selector(f"#chart-{name} .main-svg", timeout=30_000)
            # One drawn trace group per series (bars or lines), not just an empty frame.
            assert page.locator(f"#chart-{name} g.trace").count() > 0, name
        attrs, rows = _board(page)
        assert attrs == {"arch": "sm_90a", "task": GEMM, "k": "8"}
        # Default order: correct-plus-verified rate at k (B 3/4; C and A 1/2, C faster).
        assert [r.split(" ")[1] + " " + r.split(" ")[2] for r in rows] == ["Model B", "Model C", "Model A"]
        assert "3/4" in rows[0]

        _choose(page, "#filter-k", "1")
        attrs, rows = _board(page)
        assert attrs["k"] == "1" and len(rows) == 1 and "Model A" in rows[0] and "1/4" in rows[0]

        _choose(page, "#filter-task", MHA)
        attrs, rows = _board(page)
        assert attrs == {"arch": "sm_90a", "task": MHA, "k": "1"}
        assert len(rows) == 1 and "0/4" in rows[0]

        _choose(page, "#filter-arch", "sm_100a")
        _choose(page, "#filter-k", "8")
        attrs, rows = _board(page)
        assert attrs == {"arch": "sm_100a", "task": MHA, "k": "8"}
        assert len(rows) == 1 and "Model A" in rows[0] and "2/4" in rows[0] and "B200" in rows[0]
        page.wait_for_selector("#chart-arch-comparison .main-svg")
        assert page.errors == []


def test_kernel_board_draws_its_distribution_and_switches_architecture(live_server):
    from tests.support.factories import sync_catalog

    sync_catalog()
    kim = lf.user("kim")
    lf.evaluation(owner=kim, name="hopper.cu", speedup=1.2)
    lf.evaluation(owner=kim, name="blackwell.cu", arch="sm_100a", speedup=1.5, gpu="NVIDIA B200")
    with chromium_page() as page:
        page.goto(f"{live_server.url}/leaderboard/kernels/?arch=sm_90a&task={GEMM}")
        page.wait_for_selector("#chart-distribution .main-svg", timeout=30_000)
        assert "hopper.cu" in page.inner_text("#kernel-board")
        _choose(page, "#filter-arch", "sm_100a")
        assert page.get_attribute("#kernel-board", "data-arch") == "sm_100a"
        board = page.inner_text("#kernel-board")
        assert "blackwell.cu" in board and "hopper.cu" not in board
        page.wait_for_selector("#chart-distribution .main-svg")
        assert page.errors == []
