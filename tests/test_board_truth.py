"""What the boards, charts and exports say must be true and consistent (issue 29 items 3-6, 8 and the status
vocabulary); the layout and phone-width halves are browser tests (test_chart_layout_browser.py,
test_phone_browser.py)."""

from __future__ import annotations

import pytest

from tests.support import leaderboard_factories as lf
from tests.support.leaderboard_factories import GEMM, MHA, leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.django_db


def _chart(client, name, **params):
    response = client.get(f"/api/v1/leaderboard/charts/{name}", params)
    assert response.status_code == 200, response.content
    return response.json()


# --------------------------------------------------------------------------- item 3


def test_hopper_vs_blackwell_is_left_out_when_no_model_has_both(client):
    """Catches the chart drawn with each model on one architecture (it compared nothing): the board leaves it
    out and the JSON says why; a model with runs on both brings it back."""
    from tests.support.factories import sync_catalog

    sync_catalog()
    hopper = lf.model_run(lf.user("ann"), model="vendor/only-hopper")
    lf.metrics(hopper, GEMM, 8, 2, 1, 1, 1.2, 100)
    blackwell = lf.model_run(lf.user("ben"), model="vendor/only-blackwell", arch="sm_100a", gpu="NVIDIA B200")
    lf.metrics(blackwell, GEMM, 8, 2, 1, 1, 1.3, 100)
    body = _chart(client, "arch-comparison", k="8")
    assert "nothing to compare" in body["empty"]
    page = client.get("/leaderboard/", {"arch": "sm_90a", "k": "8"}).content.decode()
    assert 'id="block-arch-comparison"' not in page and 'id="block-fast-p"' in page

    both = lf.model_run(lf.user("cat"), model="vendor/only-hopper", arch="sm_100a", gpu="NVIDIA B200")
    lf.metrics(both, GEMM, 8, 2, 1, 1, 1.1, 100)
    from portal.leaderboard.cache import leaderboard_changed

    leaderboard_changed()
    assert _chart(client, "arch-comparison", k="8")["empty"] == ""
    page = client.get("/leaderboard/", {"arch": "sm_90a", "k": "8"}).content.decode()
    assert 'id="block-arch-comparison"' in page
