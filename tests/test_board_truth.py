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


# --------------------------------------------------------------------------- item 5


def test_negative_controls_are_never_called_or_plotted_expert_references(client):
    """Catches simt_dead_wgmma and simt_token_wgmma (marked `"role": "negative_control"` in their solution.json)
    shown with the "expert reference" tag and drawn as "expert reference" diamonds on the distribution chart."""
    from evaluator.solutions import find_solutions
    from tests.support.factories import REPO, sync_catalog

    controls = {s.folder.name for s in find_solutions(REPO / "tasks") if s.role == "negative_control"}
    assert {"simt_dead_wgmma", "simt_token_wgmma"} <= controls
    sync_catalog()
    lf.evaluation(kind="reference", name="hopper_tma_wgmma", speedup=0.91)
    lf.evaluation(kind="reference", name="simt_dead_wgmma", speedup=0.21, arch_status="not_executed", full=False)
    lf.evaluation(kind="reference", name="simt_token_wgmma", speedup=0.22, arch_status="token", full=False)
    lf.evaluation(owner=lf.user("kim"), speedup=1.1)

    data = _chart(client, "distribution", arch="sm_90a", task=GEMM)
    assert [r["name"] for r in data["data"]["references"]] == ["hopper_tma_wgmma"]
    assert sorted(r["name"] for r in data["data"]["negative_controls"]) == ["simt_dead_wgmma", "simt_token_wgmma"]
    traces = {t["name"]: t for t in data["figure"]["data"]}
    assert traces["expert reference"]["x"] == [0.91]

    page = client.get("/leaderboard/kernels/", {"arch": "sm_90a", "task": GEMM, "show": "all"}).content.decode()
    page = page[page.index('id="kernel-board"') :]
    rows = {
        m: page[page.index(m) : page.index("</tr>", page.index(m))] for m in ("simt_dead_wgmma", "simt_token_wgmma")
    }
    for name, row in rows.items():
        assert "negative control" in row and "expert reference" not in row, name
    hopper = page[page.index("hopper_tma_wgmma") : page.index("</tr>", page.index("hopper_tma_wgmma"))]
    assert "expert reference" in hopper

    body = client.get("/api/v1/leaderboard/kernels", {"arch": "sm_90a", "task": GEMM, "show": "all"}).json()
    roles = {r["name"]: r["reference_role"] for r in body["rows"]}
    assert roles["simt_dead_wgmma"] == roles["simt_token_wgmma"] == "negative_control"
    assert roles["hopper_tma_wgmma"] == "expert" and list(roles.values()).count(None) == 1
