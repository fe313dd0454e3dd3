"""Charts: data endpoints match hand-computed numbers, figures are valid plotly, pages embed them as JSON
data blocks drawn by a static script, and plotly.js is served from the plotly package."""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path

import plotly.graph_objects as go
import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command

from portal.leaderboard.charts import figures, model_charts
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


_turns = lf.turns
FAIL = ("COMPILE_ERROR", "", None, 100)


def test_correctness_and_verified_for_every_turn_by_model_name(client, runs):
    # Model A: two runs (one from the standard set, one more), pooled into one series named by the model id.
    _turns(
        runs["a"], GEMM, [[FAIL, ("PASSED", "absent", 0.9, 200), ("PASSED", "verified", 1.2, 300)], [FAIL, FAIL, FAIL]]
    )
    second = lf.model_run(lf.user("zed"), model="vendor/model-a", display_name="Model A again")
    _turns(second, GEMM, [[("PASSED", "verified", 1.1, 400), FAIL, FAIL]])
    _turns(runs["b"], MHA, [[FAIL, FAIL, ("PASSED", "verified", 1.5, 50)]])
    body = chart(client, "correctness", arch="sm_90a", task=GEMM)
    assert body["data"]["turns"] == [1, 2, 3]
    (a,) = body["data"]["series"]  # Model B has no GEMM turns: the task filter holds
    assert (a["model"], a["n"], a["correct"], a["verified"]) == ("vendor/model-a", 3, [1, 2, 2], [1, 1, 2])
    names = [t["name"] for t in body["figure"]["data"]]
    assert names == ["vendor/model-a · correct", "vendor/model-a · correct + verified"]
    assert body["figure"]["data"][0]["y"] == [33.33, 66.67, 66.67]
    everything = chart(client, "correctness", arch="sm_90a")["data"]["series"]
    assert {s["model"] for s in everything} == {"vendor/model-a", "vendor/model-b"}

    by_turn = chart(client, "speedup-by-turn", arch="sm_90a", task=GEMM)["data"]["series"]
    # Run a: best within t = 0, 0.9, 1.2; the second run: 1.1 from turn 1; mean over the two runs.
    assert by_turn[0]["runs"] == 2
    assert by_turn[0]["geomean"] == pytest.approx([1.1, 1.0, 1.15])


def test_hidden_runs_and_banned_users_turns_stay_out_of_every_turn_chart_and_export(client, runs):
    """The hidden run D and the banned user's run E get turns better than anyone's (and one turn more), on the same
    task and GPU as model A: none of it may reach a chart, the page that embeds the charts, or the turns export.
    Mutation caught (tried, both halves separately): `leaderboard/charts/turns.py` without `trajectory__run__is_hidden=False`
    or without the `is_banned` exclude (D or E then appears in correctness and speedup-by-turn, with a 3-turn axis)."""
    from portal.agent.models import ModelRun
    from portal.datasets.selectors import turn_rows

    hidden = ModelRun.objects.get(model="vendor/model-d")
    banned = ModelRun.objects.get(model="vendor/model-e")
    assert hidden.is_hidden and banned.user.profile.is_banned  # the fixtures are what this test is about
    _turns(runs["a"], GEMM, [[FAIL, ("PASSED", "verified", 1.2, 300)]])
    for leaked in (hidden, banned):
        _turns(leaked, GEMM, [[("PASSED", "verified", 2.9, 9000), ("PASSED", "verified", 3.0, 9000), FAIL]] * 2)
    for params in ({}, {"task": GEMM}, {"gpu": "H200"}, {"k": "8"}):
        correctness = chart(client, "correctness", arch="sm_90a", **params)["data"]
        assert correctness["turns"] == [1, 2], params  # the leaked trajectories have three turns
        assert [(s["model"], s["n"], s["correct"], s["verified"]) for s in correctness["series"]] == [
            ("vendor/model-a", 1, [0, 1], [0, 1])
        ], params
        by_turn = chart(client, "speedup-by-turn", arch="sm_90a", **params)["data"]
        assert [(s["model"], s["runs"]) for s in by_turn["series"]] == [("vendor/model-a", 1)], params
        assert by_turn["series"][0]["geomean"] == [None, pytest.approx(1.2)], params
        reasoning = chart(client, "reasoning", arch="sm_90a", **params)["data"]
        assert [s["model"] for s in reasoning["series"]] == ["vendor/model-a"], params
        assert [p["reasoning_tokens"] for p in reasoning["series"][0]["points"]] == [200.0], params
    html = client.get("/leaderboard/", {"arch": "sm_90a", "k": "8"}).content.decode()
    assert 'id="figure-correctness"' in html and "vendor/model-a" in html
    assert "vendor/model-d" not in html and "vendor/model-e" not in html
    assert {row["run_id"] for row in turn_rows()} == {runs["a"].id}  # the public turns export


def test_empty_states_are_a_message_not_bare_axes(client, runs):
    body = chart(client, "correctness", arch="sm_100a")  # sm_100a has metrics but no turns
    assert body["empty"] and body["figure"]["data"] == []
    assert body["figure"]["layout"]["xaxis"]["visible"] is False
    html = client.get("/leaderboard/", {"arch": "sm_100a"}).content.decode()
    assert 'class="empty chart-empty">No model turns here yet.' in html
    assert 'data-figure="figure-correctness"' not in html


def test_fast_p_is_the_share_of_tasks_correct_and_faster_than_p(client, runs):
    body = chart(client, "fast-p", arch="sm_90a", k="8")
    assert body["data"]["p"][0] == 0 and body["data"]["p"][-1] == 2.0 and len(body["data"]["p"]) == 41
    curves = {s["model"]: s["fast_p"] for s in body["data"]["series"]}
    p = body["data"]["p"]
    # Model A (k=8): GEMM 1.4, MHA 0.8 -> p=0: 2/2, p=1: 1/2, p=1.5: 0.
    assert curves["vendor/model-a"][p.index(0)] == 1.0
    assert curves["vendor/model-a"][p.index(1.0)] == 0.5
    assert curves["vendor/model-a"][p.index(1.5)] == 0.0
    # Model C: GEMM only, 2.0x -> above every p < 2.
    assert curves["vendor/model-c"][p.index(1.95)] == 1.0
    assert "vendor/model-d" not in curves and "vendor/model-e" not in curves  # hidden, banned


def test_reasoning_tokens_against_speedup_one_point_per_run(client, runs):
    _turns(runs["a"], GEMM, [[("PASSED", "verified", 1.2, 300), ("PASSED", "verified", 1.3, 500)]])
    body = chart(client, "reasoning", arch="sm_90a", k="8")
    (series,) = body["data"]["series"]
    (point,) = series["points"]
    assert series["model"] == "vendor/model-a" and point["reasoning_tokens"] == 400.0
    assert point["speedup"] == pytest.approx(math.sqrt(1.4 * 0.8))


def test_best_speedup_per_task_is_horizontal_and_by_model(client, runs):
    body = chart(client, "best-speedup", arch="sm_90a", k="8")
    speedups = {s["model"]: s["speedups"] for s in body["data"]["series"]}
    assert speedups["vendor/model-a"][GEMM] == 1.4 and speedups["vendor/model-a"][MHA] == 0.8
    assert speedups["vendor/model-c"][MHA] is None
    assert GEMM in body["data"]["tasks"] and MHA in body["data"]["tasks"]
    bars = body["figure"]["data"]
    assert all(b["orientation"] == "h" for b in bars) and bars[0]["name"].startswith("vendor/")
    assert body["figure"]["layout"]["yaxis"]["automargin"] is True
    # every active sm_90a task gets a row (the height grows with tasks x models), not only the tasks with metrics
    from portal.catalog.models import Task

    active = set(Task.objects.filter(is_active=True).values_list("slug", flat=True))
    assert len(body["data"]["tasks"]) > 2 and set(body["data"]["tasks"]) <= active
    assert len(bars) == 3  # models A, B, C; never the hidden D or the banned E
    expected = min(2400, max(380, 120 + len(body["data"]["tasks"]) * (8 * len(bars) + 12)))
    assert body["figure"]["layout"]["height"] == expected
    lines = [s for s in body["figure"]["layout"]["shapes"] if s.get("x0") == 1.0 and s.get("x1") == 1.0]
    assert lines, "the 1.0x library line is missing"
    one_task = chart(client, "best-speedup", arch="sm_90a", k="8", task=MHA)["data"]
    assert one_task["tasks"] == [MHA]


def test_more_models_than_the_cap_are_all_counted_in_the_title(client, runs, monkeypatch):
    monkeypatch.setattr(model_charts, "MAX_MODELS", 2)
    body = chart(client, "fast-p", arch="sm_90a", k="8")
    assert len(body["data"]["series"]) == 2 and "top 2 of 3 models" in body["figure"]["layout"]["title"]["text"]


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
    assert body["data"]["references"] == [{"task": GEMM, "name": "ref", "speedup": 1.4}]  # version 1, the default
    v2 = chart(client, "distribution", arch="sm_90a", task=GEMM, v="2")["data"]
    assert v2["references"] == [{"task": GEMM, "name": "ref", "speedup_factor": 1.4}]
    assert chart(client, "distribution", arch="sm_90a")["data"]["n"] == 3  # all tasks


def test_unknown_chart_and_bad_parameters(client, runs):
    assert client.get("/api/v1/leaderboard/charts/pie").status_code == 404
    response = client.get("/api/v1/leaderboard/charts/correctness", {"k": "3"})
    assert response.status_code == 400 and "k must be one of 1, 4, 8" in response.json()["error"]


def test_page_embeds_every_chart_as_a_json_block(client, runs):
    html = client.get("/leaderboard/", {"arch": "sm_90a", "k": "8"}).content.decode()
    from portal.leaderboard.boards.views import MODEL_CHARTS

    for name in MODEL_CHARTS:
        if name in ("correctness", "speedup-by-turn", "reasoning"):
            continue  # the standard runs have metrics but no turns: these show their empty state
        match = re.search(rf'<script id="figure-{name}" type="application/json">(.*?)</script>', html, re.S)
        assert match, name
        figure = json.loads(match.group(1))
        assert figure["data"], name
        assert f'data-figure="figure-{name}"' in html
        assert f"/api/v2/leaderboard/charts/{name}?" in html
    assert '<script src="/static/vendor/plotly-basic.min.js" defer></script>' in html
    assert '<script src="/static/js/leaderboard.js" defer></script>' in html


BUNDLE_TRACES = {"scatter", "bar", "pie"}  # what plotly.js's basic partial bundle registers


def _plotly_header(path: Path) -> str:
    return path.read_text(encoding="utf-8")[:200]


def test_the_vendored_plotly_is_the_basic_bundle_and_draws_every_chart(client, runs):
    """Catches a chart drawing a trace type the small bundle lacks (the page would show an empty box), a bundle
    whose plotly.js is not the one whose schema the tests check figures against, and a bundle changed without its
    README's checksum."""
    import plotly

    from portal.leaderboard.charts.selectors import CHARTS

    found = finders.find("vendor/plotly-basic.min.js")
    assert found, "static/vendor/plotly-basic.min.js"
    header = _plotly_header(Path(found))
    python_side = re.search(
        r"plotly\.js v(\S+)", _plotly_header(Path(plotly.__file__).parent / "package_data" / "plotly.min.js")
    )
    assert f"plotly.js (basic - minified) v{python_side.group(1)}" in header
    readme = (Path(found).parent / "README.md").read_text(encoding="utf-8")
    assert hashlib.sha256(Path(found).read_bytes()).hexdigest() in readme
    types = set()
    for name in CHARTS:
        body = client.get(f"/api/v1/leaderboard/charts/{name}", {"arch": "sm_90a", "k": "8"}).json()
        types |= {t.get("type", "scatter") for t in body["figure"]["data"]}
    compare = client.get("/compare/", {"a": "vendor/model-a", "b": "vendor/model-b", "format": "json"}).json()
    types |= {t.get("type", "scatter") for t in compare["figure"]["data"]}
    assert {"scatter", "bar"} <= types <= BUNDLE_TRACES


def test_collectstatic_takes_the_vendored_bundle(tmp_path, settings):
    settings.STATIC_ROOT = tmp_path / "static"
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    call_command("collectstatic", "--noinput", verbosity=0)
    assert (tmp_path / "static" / "vendor" / "plotly-basic.min.js").is_file()
    assert (tmp_path / "static" / "js" / "leaderboard.js").is_file()


def test_plot_text_escapes_label_markup():
    assert figures.plot_text("<b>x</b> & y") == "&lt;b&gt;x&lt;/b&gt; &amp; y"
    assert len(figures.plot_text("m" * 100)) == 48
