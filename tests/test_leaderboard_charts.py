"""Charts: data endpoints match hand-computed numbers, figures are valid plotly, pages embed them as JSON
data blocks drawn by a static script, and plotly.js is served from the plotly package."""

from __future__ import annotations

import json
import math
import re

import plotly.graph_objects as go
import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command

from portal.leaderboard import charts
from portal.leaderboard.finders import plotly_js_path
from tests.support import leaderboard_factories as lf
from tests.support.leaderboard_factories import GEMM, MHA, leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.django_db


@pytest.fixture
def runs():
    return lf.standard_runs()


def chart(client, name, **params):
    response = client.get(f"/api/v1/leaderboard/charts/{name}", params)
    assert response.status_code == 200, response.content
    body = response.json()
    go.Figure(body["figure"])  # a valid plotly figure, or this raises
    return body


def test_correctness_vs_turn_limit(client, runs):
    body = chart(client, "correctness", arch="sm_90a", task=GEMM)
    series = {s["model"]: s["points"] for s in body["data"]["series"]}
    assert series["Model A"] == [
        {"k": 1, "correct": 1, "n": 4, "rate": 0.25},
        {"k": 8, "correct": 3, "n": 4, "rate": 0.75},
    ]
    assert series["Model C"] == [{"k": 8, "correct": 1, "n": 2, "rate": 0.5}]
    trace = next(t for t in body["figure"]["data"] if t["name"] == "Model A")
    assert trace["x"] == [1, 8] and trace["y"] == [25.0, 75.0] and trace["customdata"] == ["1/4", "3/4"]


def test_best_speedup_per_task_with_library_line(client, runs):
    body = chart(client, "best-speedup", arch="sm_90a", k="8")
    speedups = {s["model"]: s["speedups"] for s in body["data"]["series"]}
    assert speedups["Model A"][GEMM] == 1.4 and speedups["Model A"][MHA] == 0.8
    assert speedups["Model C"][MHA] is None
    assert GEMM in body["data"]["tasks"] and MHA in body["data"]["tasks"]
    lines = [s for s in body["figure"]["layout"]["shapes"] if s.get("y0") == 1.0 and s.get("y1") == 1.0]
    assert lines, "the 1.0x library line is missing"


def test_arch_comparison_pairs_the_same_model(client, runs):
    body = chart(client, "arch-comparison", k="8")
    model_a = next(m for m in body["data"]["models"] if m["model_id"] == "vendor/model-a")
    assert model_a["sm_90a"]["geomean_speedup"] == pytest.approx(math.sqrt(1.4 * 0.8))
    assert model_a["sm_100a"]["geomean_speedup"] == pytest.approx(math.sqrt(1.6 * 1.2))
    assert "sm_100a" not in next(m for m in body["data"]["models"] if m["model_id"] == "vendor/model-b")


def test_speedup_distribution_counts_ranked_kernels(client, runs):
    alice = lf.user("kim")
    for speedup in (0.51, 0.52, 1.21):
        lf.evaluation(owner=alice, speedup=speedup)
    lf.evaluation(owner=None, kind="reference", name="ref", speedup=1.4)
    lf.evaluation(owner=alice, name="wrong", status="INCORRECT_NUMERICAL", speedup=None)
    body = chart(client, "distribution", arch="sm_90a", task=GEMM)
    assert body["data"]["n"] == 3
    assert body["data"]["bins"] == [{"low": 0.5, "high": 0.55, "count": 2}, {"low": 1.2, "high": 1.25, "count": 1}]
    assert body["data"]["references"] == [{"task": GEMM, "name": "ref", "speedup": 1.4}]
    assert chart(client, "distribution", arch="sm_90a")["data"]["n"] == 3  # all tasks


def test_unknown_chart_and_bad_parameters(client, runs):
    assert client.get("/api/v1/leaderboard/charts/pie").status_code == 404
    response = client.get("/api/v1/leaderboard/charts/correctness", {"k": "3"})
    assert response.status_code == 400 and "k must be one of 1, 4, 8" in response.json()["error"]


def test_page_embeds_every_chart_as_a_json_block(client, runs):
    html = client.get("/leaderboard/", {"arch": "sm_90a", "k": "8"}).content.decode()
    for name in charts.CHARTS:
        match = re.search(rf'<script id="figure-{name}" type="application/json">(.*?)</script>', html, re.S)
        assert match, name
        figure = json.loads(match.group(1))
        assert figure["data"], name
        assert f'data-figure="figure-{name}"' in html
        assert f"/api/v1/leaderboard/charts/{name}?" in html
    assert '<script src="/static/vendor/plotly.min.js" defer></script>' in html
    assert '<script src="/static/js/leaderboard.js" defer></script>' in html


def test_plotly_js_is_found_and_collected_from_the_plotly_package(tmp_path, settings):
    found = finders.find("vendor/plotly.min.js")
    assert found == str(plotly_js_path())
    settings.STATIC_ROOT = tmp_path / "static"
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    call_command("collectstatic", "--noinput", verbosity=0)
    collected = tmp_path / "static" / "vendor" / "plotly.min.js"
    assert collected.read_bytes() == plotly_js_path().read_bytes()
    assert (tmp_path / "static" / "js" / "leaderboard.js").is_file()


def test_plot_text_escapes_label_markup():
    assert charts.plot_text("<b>x</b> & y") == "&lt;b&gt;x&lt;/b&gt; &amp; y"
    assert len(charts.plot_text("m" * 100)) == 48
