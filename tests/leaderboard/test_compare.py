"""/compare/: two models or two kernels side by side, as a page and as JSON; bad input is a clear error."""

from __future__ import annotations

import uuid

import pytest

from portal.leaderboard.cache import leaderboard_changed
from tests.support import leaderboard_factories as lf
from tests.support.leaderboard_factories import GEMM, MHA, leaderboard_isolation  # noqa: F401 - autouse fixture
from tests.support.ranking_fixtures import mixed_board
from tests.support.verdicts import complete

pytestmark = pytest.mark.django_db


def test_two_models_per_task_and_per_turn_limit(client):
    runs = lf.standard_runs()
    ok, fail = ("PASSED", "verified", 1.3, 0), ("COMPILE_ERROR", "", None, 0)
    lf.turns(runs["a"], GEMM, [[fail, ok], [fail, fail, ("PASSED", "", 1.1, 0)]])
    lf.turns(runs["b"], MHA, [[ok]])
    leaderboard_changed()
    params = {"a": "vendor/model-a", "b": "Model B", "arch": "sm_90a", "k": "8"}
    data = client.get("/compare/", {**params, "format": "json"}).json()
    assert data["kind"] == "models" and (data["a"]["model"], data["b"]["model"]) == ("Model A", "Model B")
    by_task = {row["task"]: row for row in data["tasks"]}
    assert by_task[GEMM]["a"]["correct"] == 3 and by_task[GEMM]["a"]["correct_arch"] == 2
    assert len(data["tasks"]) == 2 and GEMM not in data["tasks_without_runs"]  # only tasks either model ran
    assert by_task[GEMM]["b"]["correct_arch_rate"] == 0.75 and by_task[MHA]["b"]["speedup"] == 1.1
    # The curves run over every turn limit 1..3 (the longest trajectory), from A's two trajectories' turns: the
    # first correct and verified at turn 2, the second correct (unverified) at turn 3.
    a_curve = data["curves"][0]["points"]
    assert [(p["k"], p["correct"], p["correct_arch"], p["n"]) for p in a_curve] == [
        (1, 0, 0, 2), (2, 1, 1, 2), (3, 2, 1, 2)
    ]  # fmt: skip
    assert [p["correct"] for p in data["curves"][1]["points"]] == [1, 1, 1]
    assert len(data["figure"]["data"]) == 4  # correct and verified for each model
    assert data["figure"]["layout"]["xaxis"]["tickvals"] == [1, 2, 3]
    html = client.get("/compare/", params).content.decode()
    assert 'id="compare-models"' in html and 'data-figure="figure-compare"' in html
    assert "Model A vs Model B" in html and "(3/4)" in html


def test_models_without_turns_get_a_message_not_bare_axes(client):
    lf.standard_runs()  # per-task metrics, no turns
    data = client.get("/compare/", {"a": "vendor/model-a", "b": "vendor/model-b", "format": "json"}).json()
    assert data["figure"]["data"] == [] and all(c["points"] == [] for c in data["curves"])
    assert "No per-turn results" in data["figure"]["layout"]["annotations"][0]["text"]


def test_two_kernels_side_by_side(client):
    board = mixed_board()
    a, b = board["mid"], board["idle"]
    data = client.get("/compare/", {"kind": "kernels", "a": str(a.id), "b": str(b.id), "format": "json"}).json()
    assert data["kind"] == "kernels" and data["task"] == GEMM
    assert data["a"]["verdict_phrase"] == "correct · verified · full"
    assert data["b"]["verdict_phrase"] == "correct, but wgmma/TMA never executed"
    (workload,) = data["workloads"]
    assert workload["a"]["speedup_factor"] == 1.3 and workload["b"]["speedup_factor"] == 1.6  # version 2, the default
    assert not {"speedup", "speedup_ci_low", "speedup_ci_high", "peak_fraction"} & set(data["a"])
    old = client.get("/compare/", {"a": str(a.id), "b": str(b.id), "format": "json", "v": "1"}).json()
    assert old["a"]["speedup"] == 1.3 and old["workloads"][0]["b"]["speedup"] == 1.6
    assert "peak_fraction" in old["a"] and "speedup_factor" not in old["a"]
    bad = client.get("/compare/", {"a": str(a.id), "b": str(b.id), "format": "json", "v": "3"})
    assert bad.status_code == 400 and "unknown API version" in bad.json()["error"]
    # The kind is inferred from two evaluation ids.
    html = client.get("/compare/", {"a": str(a.id), "b": str(b.id)}).content.decode()
    assert 'id="compare-workloads"' in html and "mid.cu vs idle.cu" in html


def test_kernel_compare_shows_instruction_and_opcode_counts(client):
    from tests.support.factories import sync_catalog

    sync_catalog()
    owner = lf.user("kim")
    a = lf.evaluation(owner=owner, name="a.cu", speedup=1.2)
    b = lf.evaluation(owner=owner, name="b.cu", speedup=1.1)
    from portal.submissions.models import Evaluation

    for evaluation, hgmma in ((a, 8), (b, 2)):
        verdict = dict(evaluation.verdict)
        verdict["sass"] = {"families": {"gmma": hgmma}, "opcodes": {"HGMMA.64x128x16.F32.BF16": hgmma}}
        verdict["arch_check"] = {
            **verdict["arch_check"],
            "families": {"gmma": {"static": hgmma, "executed": 64, "predicated_on": 2048}},
        }
        Evaluation.objects.filter(id=evaluation.id).update(verdict=complete(verdict))
    data = client.get("/compare/", {"a": str(a.id), "b": str(b.id), "format": "json"}).json()
    assert {"opcode": "HGMMA.64x128x16.F32.BF16", "a": 8, "b": 2} in data["opcodes"]
    assert data["families"] == [
        {
            "family": "gmma",
            "a": {"static": 8, "executed": 64, "predicated_on": 2048},
            "b": {"static": 2, "executed": 64, "predicated_on": 2048},
        }
    ]
    html = client.get("/compare/", {"a": str(a.id), "b": str(b.id)}).content.decode()
    assert "HGMMA.64x128x16.F32.BF16" in html


@pytest.mark.parametrize(
    ("params", "status", "message"),
    [
        ({"a": "vendor/model-a"}, 400, "give two things to compare"),
        ({"a": "vendor/model-a", "b": "vendor/model-a"}, 400, "the same"),
        ({"a": "vendor/model-a", "b": "vendor/nobody"}, 404, "no visible run of model 'vendor/nobody'"),
        ({"a": "vendor/model-a", "b": "vendor/model-d"}, 404, "no visible run"),  # hidden run
        ({"a": "vendor/model-a", "b": "vendor/model-e"}, 404, "no visible run"),  # banned user
        ({"kind": "kernels", "a": "1", "b": "2"}, 400, "is not an evaluation id"),
        ({"kind": "kernels", "a": str(uuid.uuid4()), "b": str(uuid.uuid4())}, 404, "no evaluation"),
        ({"kind": "graphs", "a": "x", "b": "y"}, 400, "kind must be one of"),
        ({"a": "vendor/model-a", "b": "Model B", "k": "3"}, 400, "k must be one of"),
        ({"a": "x" * 201, "b": "y"}, 400, "at most 200"),
    ],
)
def test_bad_input_is_a_clear_error(client, params, status, message):
    lf.standard_runs()
    response = client.get("/compare/", {**params, "format": "json"})
    assert response.status_code == status and message in response.json()["error"]
    page = client.get("/compare/", params)
    assert page.status_code == status and 'id="compare-error"' in page.content.decode()


def test_kernel_compare_respects_visibility_and_one_task(client):
    board = mixed_board()
    hidden = lf.evaluation(owner=lf.user("zed"), name="secret.cu", speedup=1.2, hidden=True)
    response = client.get("/compare/", {"a": str(board["mid"].id), "b": str(hidden.id), "format": "json"})
    assert response.status_code == 404 and "secret.cu" not in response.content.decode()
    other = lf.evaluation(owner=lf.user("amy"), task_slug=MHA, name="mha.cu", speedup=1.0)
    response = client.get("/compare/", {"a": str(board["mid"].id), "b": str(other.id), "format": "json"})
    assert response.status_code == 400 and "same task" in response.json()["error"]
    from portal.submissions.models import Evaluation

    ranked_check = Evaluation.objects.filter(submission=board["mid"].submission, purpose="hidden").get()
    response = client.get("/compare/", {"a": str(board["mid"].id), "b": str(ranked_check.id), "format": "json"})
    assert response.status_code == 404  # the hidden ranked check is known only as pass/fail


def test_empty_compare_page_is_a_form(client):
    lf.standard_runs()
    response = client.get("/compare/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="compare-form"' in html and '<option value="vendor/model-a">' in html
    assert "vendor/model-d" not in html  # hidden runs are not offered


def test_hostile_names_are_escaped_on_the_compare_page(client):
    from tests.support.factories import sync_catalog

    sync_catalog()
    owner = lf.user("mal")
    evil = "<img src=x onerror=alert(1)>"
    for model in ("vendor/evil-a", "vendor/evil-b"):
        run = lf.model_run(owner, model=model, display_name=evil)
        lf.metrics(run, GEMM, 8, 4, 1, 1, 1.1, 10)
    html = client.get("/compare/", {"a": "vendor/evil-a", "b": "vendor/evil-b"}).content.decode()
    assert evil not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    a = lf.evaluation(owner=owner, name=evil, speedup=1.0)
    b = lf.evaluation(owner=owner, name="plain.cu", speedup=1.0)
    html = client.get("/compare/", {"a": str(a.id), "b": str(b.id)}).content.decode()
    assert evil not in html
