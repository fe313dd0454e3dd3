"""Model leaderboard: per-task rows, the summary across tasks, the sort whitelist, filters; numbers
checked against hand computation."""

from __future__ import annotations

import csv
import io
import math

import pytest

from portal.leaderboard.boards import ranking
from portal.leaderboard.boards.selectors import BoardQuery, model_board, model_summary
from portal.leaderboard.cache import Generation
from tests.support import leaderboard_factories as lf
from tests.support.leaderboard_factories import GEMM, MHA, leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.django_db


@pytest.fixture
def runs():
    return lf.standard_runs()


def q(**kw) -> BoardQuery:
    base = {"arch": "sm_90a", "task": GEMM, "k": 8, "gpu": "", "sort": "-speedup"}
    base.update(kw)
    return BoardQuery(**base)


def test_task_board_sorted_by_speedup_with_ties_to_the_earlier_run(runs):
    rows = model_board(Generation(), q())
    assert [
        (r.model, r.best_speedup, f"{r.correct}/{r.trajectories}", f"{r.correct_arch}/{r.trajectories}") for r in rows
    ] == [
        ("Model C", 2.0, "1/2", "1/2"),
        ("Model A", 1.4, "3/4", "2/4"),
        ("Model B", 1.4, "3/4", "3/4"),
    ]
    assert [r.complete for r in rows] == [False, True, True]


def test_every_whitelisted_sort_key(runs):
    gen = Generation()
    names = lambda sort: [r.model for r in model_board(gen, q(sort=sort))]  # noqa: E731
    assert names("-correct") == ["Model A", "Model B", "Model C"]  # .75 (A earlier), .75, .5
    assert names("correct") == ["Model C", "Model A", "Model B"]
    assert names("-correct_arch") == ["Model B", "Model C", "Model A"]  # .75, .5, .5 (tie to the faster C)
    assert names("tokens") == ["Model C", "Model B", "Model A"]
    assert names("-date") == ["Model C", "Model B", "Model A"]
    assert names("model") == ["Model A", "Model B", "Model C"]
    assert names("-trajectories") == ["Model A", "Model B", "Model C"]


def test_turn_limit_one_and_no_correct_kernel_shows_no_speedup(runs):
    gen = Generation()
    (gemm,) = model_board(gen, q(k=1))
    assert (gemm.model, gemm.correct, gemm.trajectories, gemm.best_speedup, gemm.tokens) == ("Model A", 1, 4, 0.9, 300)
    (mha,) = model_board(gen, q(k=1, task=MHA))
    assert mha.best_speedup is None and mha.correct_rate == 0.0


def test_summary_geometric_mean_and_mean_correctness(runs):
    rows = model_summary(Generation(), q(task=""))
    by = {r.model: r for r in rows}
    assert [r.model for r in rows] == ["Model C", "Model B", "Model A"]
    assert by["Model A"].geomean_speedup == pytest.approx(math.sqrt(1.4 * 0.8))
    assert by["Model B"].geomean_speedup == pytest.approx(math.sqrt(1.4 * 1.1))
    assert by["Model C"].geomean_speedup == pytest.approx(2.0)
    assert by["Model A"].mean_correct == pytest.approx((0.75 + 0.25) / 2)
    assert by["Model A"].mean_correct_arch == pytest.approx((0.5 + 0.25) / 2)
    assert (by["Model A"].correct, by["Model A"].trajectories, by["Model A"].tokens) == (4, 8, 3000)
    assert by["Model B"].mean_correct == pytest.approx(0.625)
    assert (by["Model C"].tasks, by["Model C"].tasks_solved, by["Model C"].complete) == (1, 1, False)
    assert by["Model A"].complete and by["Model B"].complete
    # k=1: MHA has no correct kernel, so A's geometric mean covers GEMM alone (n=1) while correctness counts 0/4.
    (a1,) = model_summary(Generation(), q(task="", k=1))
    assert (a1.tasks, a1.tasks_solved, a1.geomean_speedup, a1.mean_correct) == (2, 1, 0.9, 0.125)


def test_gpu_filter(runs):
    rows = model_board(Generation(), q(gpu="H100"))
    assert [r.model for r in rows] == ["Model B"]


def test_sort_whitelist_is_the_only_way_in():
    with pytest.raises(ranking.UnknownSortKey):
        ranking.parse_sort("created_at; DROP TABLE")
    with pytest.raises(ranking.UnknownSortKey):
        ranking.parse_sort("--speedup")
    assert ranking.parse_sort("-tokens") == ("tokens", True)
    assert ranking.parse_sort(None) == ("correct_arch", True)  # the default: correct and verified


def test_api_rejects_unknown_sort_key_with_json_error(client, runs):
    for url in ("/api/v1/leaderboard/models", "/api/v1/leaderboard/summary"):
        response = client.get(url, {"task": GEMM, "sort": "run__user__password"})
        assert response.status_code == 400
        assert response["Content-Type"] == "application/json"
        assert "unknown sort key 'run__user__password'" in response.json()["error"]


def test_page_rejects_unknown_sort_key_with_a_clear_message(client, runs):
    response = client.get("/leaderboard/", {"task": GEMM, "sort": "bogus"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "unknown sort key &#x27;bogus&#x27;" in html
    assert "speedup" in html and "tokens" in html  # the message lists what is allowed


def test_api_and_page_agree_on_sorted_rows(client, runs):
    body = client.get("/api/v1/leaderboard/models", {"task": GEMM, "sort": "-correct_arch"}).json()
    assert [r["model"] for r in body["rows"]] == ["Model B", "Model C", "Model A"]
    assert body["rows"][0]["correct_arch_rate"] == 0.75
    html = client.get("/leaderboard/", {"task": GEMM, "sort": "-correct_arch"}).content.decode()
    assert html.index("Model B") < html.index("Model C") < html.index("Model A")
    assert "3/4" in html and "1/2" in html and "incomplete" in html
    assert "Model D" not in html and "model-e" not in html


def test_summary_api_and_csv(client, runs):
    body = client.get("/api/v1/leaderboard/summary", {"arch": "sm_90a", "k": "8"}).json()
    # Default order: correct-plus-verified rate (B 5/8, C 1/2, A 3/8).
    assert [r["model"] for r in body["rows"]] == ["Model B", "Model C", "Model A"]
    assert body["rows"][0]["speedup"] == pytest.approx(math.sqrt(1.54))
    assert body["rows"][0]["runs"][0]["geomean_speedup"] == pytest.approx(math.sqrt(1.54))  # deprecated alias
    response = client.get("/api/v1/leaderboard/summary", {"arch": "sm_90a", "format": "csv", "sort": "model"})
    assert response["Content-Disposition"].startswith("attachment;")
    table = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [r["model"] for r in table] == ["Model A", "Model B", "Model C"]
    assert table[0]["correct"] == "4" and table[0]["trajectories"] == "8"


def test_summary_page_shows_rates_with_n(client, runs):
    html = client.get("/leaderboard/", {"arch": "sm_90a", "k": "8"}).content.decode()
    assert "(4/8)" in html and "(5/8)" in html and "(n=1 run)" in html
    assert "1.24x" in html and "1.06x" in html


def test_blackwell_board_has_only_its_runs(client, runs):
    body = client.get("/api/v1/leaderboard/models", {"task": GEMM, "arch": "sm_100a"}).json()
    assert [(r["model"], r["gpu_model"]) for r in body["rows"]] == [("Model A", "B200")]
    assert body["rows"][0]["runs"][0]["gpu_name"] == "NVIDIA B200"


def test_new_metrics_show_after_the_signal(client, runs, django_capture_on_commit_callbacks):
    assert len(client.get("/api/v1/leaderboard/models", {"task": GEMM}).json()["rows"]) == 3
    late = lf.model_run(lf.user("zed"), model="vendor/model-z", created_at=lf.T0)
    with django_capture_on_commit_callbacks(execute=True):
        lf.metrics(late, GEMM, 8, 4, 4, 4, 2.5, 100)
    rows = client.get("/api/v1/leaderboard/models", {"task": GEMM}).json()["rows"]
    assert rows[0]["model"] == "vendor/model-z"


def test_a_bad_request_never_poisons_the_cached_page(client, runs):
    assert client.get("/leaderboard/", {"sort": "bogus"}).status_code == 400
    html = client.get("/leaderboard/").content.decode()
    assert "Model A" in html and "Model B" in html
