"""The kernel language of model runs on the model board and the compare view: a column, a filter (page, JSON,
CSV, charts), one model row per language, and the language of each kernel in a kernel comparison. Hostile
names and parameters stay escaped."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest

from portal.leaderboard.cache import leaderboard_changed
from portal.submissions.models import Submission
from tests.support import leaderboard_factories as lf
from tests.support.leaderboard_factories import GEMM, MHA, leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.django_db

EVIL = "<img src=x onerror=alert(1)>"


@pytest.fixture
def runs():
    """The standard CUDA runs (A, B, C on sm_90a) plus Triton runs of models A and B on H200."""
    standard = lf.standard_runs()
    dave = lf.user("dave")
    a = lf.model_run(
        dave, model="vendor/model-a", display_name="Model A", created_at=lf.T0 + timedelta(days=3), language="triton"
    )
    lf.metrics(a, GEMM, 8, 4, 4, 1, 0.6, 4000)
    lf.metrics(a, MHA, 8, 4, 2, 0, 0.5, 4000)
    b = lf.model_run(
        dave, model="vendor/model-b", display_name=EVIL, created_at=lf.T0 + timedelta(days=4), language="triton"
    )
    lf.metrics(b, GEMM, 8, 2, 1, 1, 0.7, 100)
    leaderboard_changed()
    return {**standard, "a_triton": a, "b_triton": b}


def _rows(client, **params):
    response = client.get("/api/v1/leaderboard/models", params)
    assert response.status_code == 200, response.content
    return response.json()["rows"]


def test_a_model_writing_triton_is_its_own_row_with_its_language(client, runs):
    rows = _rows(client, task=GEMM, sort="model")
    assert [(r["model_id"], r["gpu_model"], r["language"], r["correct"], r["trajectories"]) for r in rows] == [
        ("vendor/model-b", "H200", "triton", 1, 2),  # the label people see is the hostile display name (sorted first)
        ("vendor/model-a", "H200", "cuda", 3, 4),
        ("vendor/model-a", "H200", "triton", 4, 4),
        ("vendor/model-b", "H100", "cuda", 3, 4),
        ("vendor/model-c", "H200", "cuda", 1, 2),
    ]
    assert {r["runs"][0]["language"] for r in rows} == {"cuda", "triton"}  # each run's row says it too
    html = client.get("/leaderboard/", {"task": GEMM}).content.decode()
    assert '<th class="opt">Language</th>' in html and 'id="filter-language"' in html
    assert html.count('data-language="triton"') == 2 and html.count('data-language="cuda"') == 3
    assert '<td class="opt">Triton</td>' in html and '<td class="opt">CUDA</td>' in html
    assert EVIL not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_the_model_board_filters_on_the_language(client, runs):
    triton = _rows(client, task=GEMM, language="triton")
    assert sorted((r["model_id"], r["language"]) for r in triton) == [
        ("vendor/model-a", "triton"),
        ("vendor/model-b", "triton"),
    ]
    cuda = _rows(client, task=GEMM, language="cuda")
    assert sorted(r["model_id"] for r in cuda) == ["vendor/model-a", "vendor/model-b", "vendor/model-c"]
    assert {r["language"] for r in cuda} == {"cuda"}
    # Across tasks: Model A's Triton run alone (its geometric mean over both tasks), not pooled with its CUDA run.
    (summary_a,) = [r for r in _rows(client, language="triton") if r["model_id"] == "vendor/model-a"]
    assert (summary_a["correct"], summary_a["trajectories"], summary_a["runs_count"]) == (6, 8, 1)
    assert summary_a["speedup"] == pytest.approx((0.6 * 0.5) ** 0.5)
    per_run = client.get("/api/v1/leaderboard/summary", {"language": "triton", "per": "run"}).json()
    assert per_run["query"]["language"] == "triton"
    assert {r["run_id"] for r in per_run["rows"]} == {runs["a_triton"].id, runs["b_triton"].id}
    table = client.get("/api/v1/leaderboard/models", {"task": GEMM, "language": "triton", "format": "csv"})
    assert "language" in table.content.decode().splitlines()[0].split(",")
    assert {r["language"] for r in csv.DictReader(io.StringIO(table.content.decode()))} == {"triton"}

    page = client.get("/leaderboard/", {"task": GEMM, "language": "triton"}).content.decode()
    assert 'data-language="triton"' in page and 'data-language="cuda"' not in page
    assert '<option value="triton" selected>Triton</option>' in page
    assert "Model C" not in page.split('id="model-board"')[1].split("</table>")[0]
    # The charts on that page follow the filter.
    fast_p = client.get("/api/v1/leaderboard/charts/fast-p", {"task": GEMM, "language": "triton"}).json()
    assert sorted(s["model"] for s in fast_p["data"]["series"]) == ["vendor/model-a", "vendor/model-b"]


def test_an_unknown_language_is_a_clear_error_and_escaped(client, runs):
    response = client.get("/api/v1/leaderboard/models", {"language": "fortran"})
    assert response.status_code == 400 and "unknown language 'fortran'" in response.json()["error"]
    page = client.get("/leaderboard/", {"language": "<script>x</script>"})
    assert page.status_code == 400
    html = page.content.decode()
    assert "<script>x</script>" not in html and "unknown language &#x27;&lt;script&gt;x&lt;/script&gt;&#x27;" in html
    compare = client.get("/compare/", {"a": "vendor/model-a", "b": "vendor/model-b", "language": "<b>x</b>"})
    assert compare.status_code == 400 and "<b>x</b>" not in compare.content.decode()


def test_compare_shows_each_side_s_languages_and_filters_on_them(client, runs):
    pair = {"a": "vendor/model-a", "b": "vendor/model-b", "arch": "sm_90a", "k": "8"}
    both = client.get("/compare/", {**pair, "format": "json"}).json()
    assert both["language"] is None
    assert (both["a"]["languages"], both["b"]["languages"]) == (["cuda", "triton"], ["cuda", "triton"])
    gemm = {row["task"]: row for row in both["tasks"]}[GEMM]
    assert (gemm["a"]["languages"], gemm["a"]["correct"], gemm["a"]["trajectories"]) == (["cuda", "triton"], 7, 8)

    only = client.get("/compare/", {**pair, "language": "triton", "format": "json"}).json()
    assert only["language"] == "triton" and only["a"]["languages"] == ["triton"]
    by_task = {row["task"]: row for row in only["tasks"]}
    assert (by_task[GEMM]["a"]["correct"], by_task[GEMM]["a"]["trajectories"]) == (4, 4)
    assert (by_task[GEMM]["b"]["correct"], by_task[GEMM]["b"]["trajectories"]) == (1, 2)
    assert by_task[MHA]["b"] is None  # model B's Triton run has no MHA metrics
    # The curves pool the same runs: model A's Triton run's one trajectory, correct at turn 2, and none of its CUDA run's.
    lf.turns(runs["a_triton"], GEMM, [[("COMPILE_ERROR", "", None, 0), ("PASSED", "verified", 0.6, 0)]])
    lf.turns(runs["a"], GEMM, [[("PASSED", "verified", 1.2, 0)]])
    leaderboard_changed()
    only = client.get("/compare/", {**pair, "language": "triton", "format": "json"}).json()
    assert [(p["k"], p["correct"], p["n"]) for p in only["curves"][0]["points"]] == [(1, 0, 1), (2, 1, 1)]

    html = client.get("/compare/", {**pair, "language": "triton"}).content.decode()
    table = html.split('id="compare-models"')[1].split("</table>")[0]
    assert table.count("<th>Language</th>") == 2 and '<td class="language">Triton</td>' in table
    assert '<td class="language">CUDA' not in table
    assert '<option value="triton" selected>Triton</option>' in html and 'id="compare-language"' in html
    assert EVIL not in html and "&lt;img src=x onerror=alert(1)&gt;" in html  # model B's newest label

    cuda_c = client.get("/compare/", {"a": "vendor/model-a", "b": "vendor/model-c", "language": "triton"})
    assert cuda_c.status_code == 404
    assert "no visible run of model &#x27;vendor/model-c&#x27; on sm_90a triton" in cuda_c.content.decode()


def test_kernel_compare_names_each_kernel_s_language(client):
    from tests.support.factories import sync_catalog

    sync_catalog()
    owner = lf.user("ada")
    a = lf.evaluation(owner=owner, name="tiles.py", speedup=1.1)
    b = lf.evaluation(owner=owner, name="tiles.cu", speedup=1.0)
    Submission.objects.filter(id=a.submission_id).update(language="triton")
    data = client.get("/compare/", {"a": str(a.id), "b": str(b.id), "format": "json"}).json()
    assert (data["a"]["language"], data["b"]["language"]) == ("triton", "cuda")
    html = client.get("/compare/", {"a": str(a.id), "b": str(b.id)}).content.decode()
    assert "<tr><th>Language</th><td>Triton</td><td>CUDA</td></tr>" in html
