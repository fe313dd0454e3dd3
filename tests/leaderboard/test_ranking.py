"""Ranking what PTXBench measures: verified kernels first (the others grouped behind ?show=all), one verdict
phrase and one architecture vocabulary, the model board one row per model; checked by hand."""

from __future__ import annotations

import csv
import io

import pytest

from portal.core import numbers, verdicts
from portal.leaderboard.boards import ranking
from portal.leaderboard.boards.selectors import BoardQuery, kernel_board, model_entries
from portal.leaderboard.cache import Generation
from tests.support import leaderboard_factories as lf
from tests.support.leaderboard_factories import GEMM, leaderboard_isolation  # noqa: F401 - autouse fixture
from tests.support.ranking_fixtures import mixed_board, three_runs_of_one_model

pytestmark = pytest.mark.django_db

BOARD = {"task": GEMM, "arch": "sm_90a"}


def test_verified_kernels_rank_first_even_when_an_absent_one_is_faster():
    mixed_board()
    rows = kernel_board(Generation(), task=GEMM, arch="sm_90a")
    assert [(r.name, r.rank, r.section) for r in rows] == [
        ("mid.cu", 1, "verified"),
        ("slow.cu", 2, "verified"),
        ("token.cu", None, "token"),
        ("idle.cu", None, "not_executed"),
        ("absent.cu", None, "absent"),
        ("unchecked.cu", None, "not_requested"),
    ]


def test_page_shows_only_verified_until_show_all_then_groups_them(client):
    mixed_board()
    html = client.get("/leaderboard/kernels/", BOARD).content.decode()
    assert html.index("mid.cu") < html.index("slow.cu")
    for name in ("absent.cu", "token.cu", "idle.cu", "unchecked.cu"):
        assert name not in html
    assert 'id="show-all"' in html and "Show all 4 other correct kernels" in html

    html = client.get("/leaderboard/kernels/", {**BOARD, "show": "all"}).content.decode()
    sections = [part.split('"')[0] for part in html.split('class="board-section" data-state="')[1:]]
    assert sections == ["verified", "token", "not_executed", "absent", "not_requested"]
    order = [html.index(n) for n in ("mid.cu", "slow.cu", "token.cu", "idle.cu", "absent.cu", "unchecked.cu")]
    assert order == sorted(order)  # never interleaved: each group is its own block, in state order
    assert "correct, but no wgmma/TMA in the binary" in html
    assert 'id="show-verified"' in html

    assert client.get("/leaderboard/kernels/", {**BOARD, "show": "everything"}).status_code == 400


def test_api_and_csv_ask_the_same_rules():
    from django.test import Client

    mixed_board()
    client = Client()
    body = client.get("/api/v1/leaderboard/kernels", BOARD).json()
    assert [(r["name"], r["rank"]) for r in body["rows"]] == [("mid.cu", 1), ("slow.cu", 2)]
    everything = client.get("/api/v1/leaderboard/kernels", {**BOARD, "show": "all"}).json()
    assert [r["group"] for r in everything["rows"]] == [
        "verified",
        "verified",
        "token",
        "not_executed",
        "absent",
        "not_requested",
    ]
    response = client.get("/api/v1/leaderboard/kernels", {**BOARD, "show": "all", "format": "csv"})
    table = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [row["name"] for row in table] == [r["name"] for r in everything["rows"]]
    assert table[4]["verdict_phrase"] == "correct, but no wgmma/TMA in the binary" and table[4]["rank"] == ""
    bad = client.get("/api/v1/leaderboard/kernels", {**BOARD, "show": "x"})
    assert bad.status_code == 400 and "show must be" in bad.json()["error"]


def test_held_evaluations_never_rank_in_any_group(client):
    mixed_board()
    lf.evaluation(owner=lf.user("max"), name="held-absent.cu", speedup=2.5, arch_status="absent", review_state="held")
    lf.evaluation(owner=lf.user("ned"), name="held-verified.cu", speedup=2.4, review_state="held")
    names = {r.name for r in kernel_board(Generation(), task=GEMM, arch="sm_90a")}
    assert "held-absent.cu" not in names and "held-verified.cu" not in names
    html = client.get("/leaderboard/kernels/", {**BOARD, "show": "all"}).content.decode()
    # Listed apart, in the held section, never ranked (the board says why a row is held).
    held = html[html.index('data-state="held"') : html.index("</tbody>", html.index('data-state="held"'))]
    assert "held-absent.cu" in held and "held-verified.cu" in held
    assert "held-" not in html.replace(held, "")


@pytest.mark.parametrize(
    ("status", "arch_status", "full", "arch", "phrase", "tone"),
    [
        ("PASSED", "verified", True, "sm_90a", "correct · verified · full", "ok"),
        ("PASSED", "verified", False, "sm_100a", "correct · verified", "ok"),
        ("PASSED", "not_executed", False, "sm_90a", "correct, but wgmma/TMA never executed", "warn"),
        ("PASSED", "not_executed", False, "sm_100a", "correct, but tcgen05 never executed", "warn"),
        ("PASSED", "absent", False, "sm_90a", "correct, but no wgmma/TMA in the binary", "warn"),
        ("PASSED", "token", False, "sm_90a", "correct, but wgmma/TMA did little of the work", "warn"),
        ("PASSED", "", False, "sm_90a", "correct · instructions not checked", "warn"),
        ("PASSED", "profile_error", False, "sm_90a", "correct · instructions not checked (profiler error)", "warn"),
        ("INCORRECT_NUMERICAL", "not_requested", False, "sm_90a", "incorrect: wrong values", "bad"),
        ("COMPILE_ERROR", "", False, "sm_90a", "incorrect: did not compile", "bad"),
        ("STATIC_ONLY", "", False, "sm_90a", "scored without a GPU: compiled, never run", ""),
        ("", "", False, "sm_90a", "no verdict yet", ""),
    ],
)
def test_one_verdict_phrase(status, arch_status, full, arch, phrase, tone):
    assert verdicts.verdict_phrase(status, arch_status, full, arch) == phrase
    assert verdicts.verdict_tone(status, arch_status) == tone


def test_one_vocabulary_for_the_architecture_states():
    # The evaluator's words everywhere: an empty or unknown status reads as not_requested, never "not checked".
    assert [verdicts.arch_badge(s, False) for s in ("", "bogus", "profile_error", "absent")] == [
        "not_requested",
        "not_requested",
        "profile_error",
        "absent",
    ]
    assert verdicts.arch_badge("verified", True) == "verified · full"


def test_submission_page_never_shows_a_green_pass_beside_not_executed(client):
    mixed_board()
    from portal.submissions.models import Evaluation

    idle = Evaluation.objects.get(submission__name="idle.cu", purpose="public")
    html = client.get(f"/submissions/{idle.submission_id}/").content.decode()
    assert '<span class="badge warn" id="verdict-phrase">correct, but wgmma/TMA never executed</span>' in html
    assert 'badge ok">PASSED' not in html
    html = client.get(f"/evidence/evaluations/{idle.id}/").content.decode()
    assert "correct, but wgmma/TMA never executed" in html


# --------------------------------------------------------------------------- models


def q(**kw) -> BoardQuery:
    return BoardQuery(**{"arch": "sm_90a", "task": GEMM, "k": 8, "gpu": "", "sort": ranking.DEFAULT_SORT, **kw})


def test_one_model_with_three_runs_is_one_row():
    three_runs_of_one_model()
    rows = model_entries(Generation(), q())
    # Default order: correct-plus-verified rate (Y 4/4, X on H200 6/12, X on H100 0/4).
    assert [(g.model, g.gpu, g.n_runs) for g in rows] == [
        ("Model Y", "H200", 1),
        ("Model X", "H200", 3),
        ("Model X", "H100", 1),
    ]
    x = rows[1]
    assert (x.correct, x.correct_arch, x.trajectories, x.tokens) == (9, 6, 12, 1_234_000)
    # mean of 1.2, 1.5, 1.8 = 1.5; sd 0.3; t(0.975, 2) = 4.303; half width 4.303 * 0.3 / sqrt(3) = 0.7453
    assert x.speedup == pytest.approx(1.5)
    assert (x.speedup_ci_low, x.speedup_ci_high) == (pytest.approx(0.7547, abs=1e-4), pytest.approx(2.2453, abs=1e-4))
    # per-run verified rates .25, .5, .75: mean .5, sd .25, half width 4.303 * .25 / sqrt(3) = 0.6211
    # -> [-0.1211, 1.1211], clipped to what a rate can be
    assert x.arch_rate_mean == pytest.approx(0.5) and (x.arch_rate_ci_low, x.arch_rate_ci_high) == (0.0, 1.0)
    assert [r.run_id for r in x.runs] == sorted((r.run_id for r in x.runs), reverse=True)  # newest first
    assert rows[0].speedup_ci_low is None  # one run: no interval


def test_model_page_and_api_show_one_row_per_model(client):
    three_runs_of_one_model()
    html = client.get("/leaderboard/", {"task": GEMM}).content.decode()
    assert html.count('data-model="vendor/model-x"') == 2  # H200 and H100
    assert 'data-runs="3"' in html and "<summary>3 runs</summary>" in html
    assert "(6/12)" in html and "(9/12)" in html  # every rate with its n
    assert "1.2M" in html and "411.3k" in html  # tokens human-readable (total, per run)
    body = client.get("/api/v1/leaderboard/models", {"task": GEMM}).json()
    assert [(r["model_id"], r["gpu_model"], r["runs_count"]) for r in body["rows"]] == [
        ("vendor/model-y", "H200", 1),
        ("vendor/model-x", "H200", 3),
        ("vendor/model-x", "H100", 1),
    ]
    assert len(body["rows"][1]["runs"]) == 3 and body["rows"][1]["correct_arch_rate"] == 0.5
    per_run = client.get("/api/v1/leaderboard/models", {"task": GEMM, "per": "run"}).json()
    assert per_run["per"] == "run" and len(per_run["rows"]) == 5
    summary = client.get("/leaderboard/").content.decode()
    assert "<summary>3 runs</summary>" in summary


def test_human_count():
    assert [numbers.human_count(v) for v in (950, 12_345, 1_234_567, 3_400_000_000, None)] == [
        "950",
        "12.3k",
        "1.2M",
        "3.4B",
        "—",
    ]
