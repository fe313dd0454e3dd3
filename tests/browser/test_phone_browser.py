"""At phone width (390 px), in Chromium: the boards keep the speedup and the correct + verified
columns on screen without sideways scrolling, the site header takes at most two lines (the other links behind
"More"), and /api/ does not scroll sideways."""

from __future__ import annotations

import pytest

from tests.support import leaderboard_factories as lf
from tests.support.browser import chromium_page
from tests.support.leaderboard_factories import GEMM, leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTH = 390

_SCROLL = "document.documentElement.scrollWidth"
# The distinct lines the header's visible items sit on (brand, "More", the links).
_HEADER_LINES = """() => {
  const tops = new Set();
  for (const el of document.querySelectorAll('header.site .brand, header.site .nav-toggle, header.site nav > *')) {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.height > 0) tops.add(Math.round(r.top / 8));
  }
  return tops.size;
}"""


def _right_edges(page, table: str) -> dict[str, float]:
    return page.eval_on_selector(
        table,
        """(t) => Object.fromEntries(Array.from(t.querySelectorAll(':scope > thead th'))
             .filter(th => th.getBoundingClientRect().width > 0)
             .map(th => [th.textContent.trim(), th.getBoundingClientRect().right]))""",
    )


def _data():
    runs = lf.standard_runs()
    # A long model name and a long kernel name: the columns must still fit.
    long_run = lf.model_run(lf.user("ann"), model="Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8")
    lf.metrics(long_run, GEMM, 8, 4, 3, 2, 1.3, 123456)
    for name, speedup in (("warp_specialized_persistent_tma_wgmma_gemm.cu", 1.2), ("b.cu", 0.9)):
        lf.evaluation(owner=lf.user(name[:4]), name=name, speedup=speedup)
    lf.evaluation(owner=None, kind="reference", name="hopper_tma_wgmma", speedup=0.91)
    return runs


def test_boards_keep_speedup_and_correct_verified_on_screen(live_server):
    """Catches the speedup and correct + verified columns sitting off-screen right of #/Model/GPU/Language/Runs
    (the table scrolled inside its box)."""
    _data()
    with chromium_page() as page:
        page.set_viewport_size({"width": WIDTH, "height": 800})
        for params in ({"task": GEMM}, {}):
            query = "&".join(f"{k}={v}" for k, v in {"arch": "sm_90a", "k": "8", **params}.items())
            page.goto(f"{live_server.url}/leaderboard/?{query}")
            edges = _right_edges(page, "#model-board")
            wanted = [h for h in edges if h.startswith("Correct + verified") or "speedup" in h.lower()]
            assert len(wanted) == 2, edges
            assert all(edges[h] <= WIDTH for h in wanted), edges
            assert page.evaluate(_SCROLL) <= WIDTH
            assert page.eval_on_selector("#model-board", "t => t.getBoundingClientRect().right") <= WIDTH
            assert "Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8" in page.inner_text("#model-board")
        page.goto(f"{live_server.url}/leaderboard/kernels/?arch=sm_90a&task={GEMM}")
        edges = _right_edges(page, "#kernel-board")
        assert edges["Speedup [95% CI]"] <= WIDTH and edges["Verdict"] <= WIDTH, edges
        assert page.evaluate(_SCROLL) <= WIDTH
        assert page.eval_on_selector("#kernel-board", "t => t.getBoundingClientRect().right") <= WIDTH
        # What the hidden columns held is still there, folded under the name.
        row = page.inner_text("#kernel-board tr[data-state='verified']:has-text('warp_specialized')")
        assert "TFLOP/s" in row and "H200" in row
        assert page.errors == []


@pytest.mark.parametrize("logged_in", [False, True])
def test_header_is_two_lines_and_more_shows_the_rest(live_server, logged_in):
    """Catches the nav wrapping to three lines at 390 px; the links behind "More" are one tap away."""
    if logged_in:
        lf.user("phone-user")
    with chromium_page() as page:
        page.set_viewport_size({"width": WIDTH, "height": 800})
        if logged_in:
            page.goto(f"{live_server.url}/accounts/login/")
            page.fill("input[name=username]", "phone-user")
            page.fill("input[name=password]", "x-unused-password-123")
            with page.expect_navigation():
                page.click("main button[type=submit]")
        page.goto(f"{live_server.url}/")
        assert page.evaluate(_HEADER_LINES) <= 2
        assert not page.is_visible("header.site nav a[href='/api/']")
        page.click("#nav-toggle")
        assert page.is_visible("header.site nav a[href='/api/']")
        assert page.get_attribute("#nav-toggle", "aria-expanded") == "true"
        assert page.evaluate(_SCROLL) <= WIDTH
        assert page.errors == []


def test_api_page_does_not_scroll_sideways(live_server):
    """Catches /api/ scrolling sideways at 390 px (Markdown tables of long routes and field names)."""
    with chromium_page() as page:
        page.set_viewport_size({"width": WIDTH, "height": 800})
        page.goto(f"{live_server.url}/api/")
        assert page.evaluate(_SCROLL) <= WIDTH
        assert page.errors == []
