"""At 1400 and 390 px in Chromium: the compare-kernels page and the task page's "Current best" table fit the
window (no sideways scrolling, the speedup column on screen), with long kernel names on them."""

from __future__ import annotations

import pytest

from tests.support import leaderboard_factories as lf
from tests.support.browser import chromium_page
from tests.support.leaderboard_factories import GEMM, leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

_SCROLL = "document.documentElement.scrollWidth"
LONG = "warp_specialized_persistent_tma_wgmma_gemm_with_a_very_long_name_v17.cu"


def _kernels():
    from portal.leaderboard.cache import leaderboard_changed
    from tests.support.factories import sync_catalog

    sync_catalog()
    a = lf.evaluation(owner=lf.user("a-long-user-name-for-width"), name=LONG, speedup=1.2)
    b = lf.evaluation(owner=lf.user("bee"), name="b.cu", speedup=0.9, arch_status="token", full=False)
    leaderboard_changed()
    return a, b


@pytest.mark.parametrize("width", [1400, 390])
def test_compare_kernels_and_the_task_pages_current_best_fit_the_window(live_server, width):
    a, b = _kernels()
    with chromium_page() as page:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{live_server.url}/compare/?kind=kernels&a={a.id}&b={b.id}")
        assert LONG in page.content()
        assert page.evaluate(_SCROLL) <= width, "the compare-kernels page scrolls sideways"

        page.goto(f"{live_server.url}/tasks/{GEMM}/")
        assert page.evaluate(_SCROLL) <= width, "the task page scrolls sideways"
        speedup = page.eval_on_selector(
            "#best-kernels",
            "t => Array.from(t.querySelectorAll('thead th')).find(th => /Speedup/.test(th.textContent))"
            ".getBoundingClientRect().right",
        )
        assert speedup <= width, f"the Current best speedup column ends at {speedup:.0f} px"
        assert page.errors == []
