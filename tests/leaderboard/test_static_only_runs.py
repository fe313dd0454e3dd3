"""Unmeasured model runs (a kernel scored on the CPU stages only: STATIC_ONLY) never on the public model board,
its charts, the compare picker or the board's JSON/CSV; the run's own page still shows it, labelled static-only."""

from __future__ import annotations

import json

import pytest

from portal.leaderboard.charts import selectors as charts
from tests.support import leaderboard_factories as lf
from tests.support.leaderboard_factories import GEMM, leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.django_db

STATIC = "vendor/cpu-only-replay"


@pytest.fixture
def runs():
    runs = lf.standard_runs()
    owner = lf.user("olga")
    static = lf.model_run(owner, model=STATIC, display_name="CPU-only replay", gpu="")
    lf.metrics(static, GEMM, 8, 2, 0, 0, 0.0, 400)
    lf.turns(static, GEMM, [[("STATIC_ONLY", "", None, None)], [("COMPILE_ERROR", "", None, None)]])
    # The same kind of run, measured on a GPU (its kernels failed there): it stays on the board, so the test
    # below tells "unmeasured" apart from "no correct kernel".
    measured = lf.model_run(owner, model="vendor/measured-replay", display_name="Measured replay")
    lf.metrics(measured, GEMM, 8, 2, 0, 0, 0.0, 400)
    lf.turns(measured, GEMM, [[("INCORRECT_NUMERICAL", "", None, None)], [("COMPILE_ERROR", "", None, None)]])
    return {**runs, "static": static, "owner": owner}


def test_an_unmeasured_run_is_on_no_board_chart_or_export(client, runs):
    """Catches: a replay run with only CPU-stage verdicts listed and plotted as if it had been measured (0 correct
    of 2) on the public model board, its CSV/JSON and every model chart."""
    responses = {
        "task board JSON": client.get("/api/v1/leaderboard/models", {"task": GEMM}),
        "per-run JSON": client.get("/api/v1/leaderboard/models", {"task": GEMM, "per": "run"}),
        "summary JSON": client.get("/api/v1/leaderboard/summary"),
        "summary CSV": client.get("/api/v1/leaderboard/summary", {"format": "csv"}),
        "board page": client.get("/leaderboard/"),
        "task board page": client.get("/leaderboard/", {"task": GEMM}),
        "compare picker": client.get("/compare/"),
    }
    for name, model_chart in charts.CHARTS.items():
        if model_chart[2]:
            responses[f"chart {name}"] = client.get(f"/api/v1/leaderboard/charts/{name}")
    for label, response in responses.items():
        assert response.status_code == 200, label
        text = response.content.decode()
        assert "vendor/measured-replay" in text or "Measured replay" in text or label.startswith("chart"), label
        assert STATIC not in text and "CPU-only replay" not in text, label
    chart_text = json.dumps([responses[k].json() for k in responses if k.startswith("chart")])
    assert "vendor/measured-replay" in chart_text


def test_the_owner_sees_the_run_labelled_static_only(client, runs):
    """Catches: an unmeasured run with nothing on its page saying why it is missing from the boards."""
    client.force_login(runs["owner"])
    page = client.get(f"/runs/{runs['static'].id}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="run-static-only"' in html and "static-only" in html
    assert 'id="run-static-only"' not in client.get(f"/runs/{runs['a'].id}/").content.decode()
