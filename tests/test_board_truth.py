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


# --------------------------------------------------------------------------- item 8


def _board_row(client, model_id: str, **params) -> str:
    page = client.get("/leaderboard/", {"arch": "sm_90a", "k": "8", **params}).content.decode()
    start = page.index(f'data-model="{model_id}"')
    return (
        " ".join(page[start : page.index("<details", start)].split())
        + page[page.index("</details>", start) : page.index("</tr>", page.index("</details>", start))]
    )


def test_intervals_only_from_three_runs_else_the_values_and_no_run_suffix_on_pooled_rows(client):
    """Catches "1.07x [0.00, 3.27]" and "63% [0%, 100%]" from n = 2 runs (now each run's value instead), and
    "Llama-4-Maverick #13" naming a row that pools two runs (now the model id)."""
    from portal.leaderboard import ranking
    from tests.support.factories import sync_catalog

    assert ranking.mean_interval([1.0, 1.2]) == (pytest.approx(1.1), None, None)
    assert ranking.mean_interval([1.0, 1.2, 1.1])[1] is not None
    sync_catalog()
    for i, (best, correct_arch) in enumerate(((1.2, 2), (0.9, 1))):
        run = lf.model_run(
            lf.user(f"u{i}"), model="meta-llama/Llama-4-Maverick", display_name=f"Llama-4-Maverick #{13 - 8 * i}"
        )
        lf.metrics(run, GEMM, 8, 4, 3, correct_arch, best, 100)
    row = _board_row(client, "meta-llama/Llama-4-Maverick", task=GEMM)
    assert "#13" not in row and "#5" not in row and "meta-llama/Llama-4-Maverick" in row
    assert "[" not in row  # no interval from two runs
    assert "runs: 25%, 50%" in row and "runs: 0.900x, 1.20x" in row  # newest run first

    third = lf.model_run(lf.user("u3"), model="meta-llama/Llama-4-Maverick", display_name="Llama-4-Maverick #21")
    lf.metrics(third, GEMM, 8, 4, 3, 3, 1.1, 100)
    from portal.leaderboard.cache import leaderboard_changed

    leaderboard_changed()
    row = _board_row(client, "meta-llama/Llama-4-Maverick", task=GEMM)
    assert "mean over runs 50% [" in row and '1.07x <span class="tag">[' in row and "runs:" not in row


def test_passing_workload_shows_its_error_against_the_tolerance_not_a_raw_maximum(client):
    """Catches "15258.7890625" (the element-wise max relative error: an element near zero) printed on a
    workload that passed every bound; a failing workload still says how far out it was."""
    from tests.support.factories import sync_catalog

    sync_catalog()
    passing = lf.evaluation(owner=lf.user("kim"), speedup=1.1)
    verdict = passing.verdict
    verdict["workloads"][0]["correctness"] = {
        "max_absolute_error": 2.0, "max_relative_error": 15258.7890625, "relative_norm_error": 0.0001703454398941922,
        "relative_norm_bound": 0.05, "failing_elements": 0, "total_elements": 917504,
    }  # fmt: skip
    passing.verdict = verdict
    passing.save(update_fields=["verdict"])
    page = client.get(f"/evidence/evaluations/{passing.id}/").content.decode()
    table = page[page.index('id="workloads-table"') : page.index("</table>", page.index('id="workloads-table"'))]
    assert "15258" not in table and "within tolerance (norm error 0.000170 = 0.34% of its bound 0.05)" in table

    from portal.core.templatetags.portal_tags import error_vs_tolerance

    failing = {"status": "INCORRECT_NUMERICAL", "correctness": {**verdict["workloads"][0]["correctness"],
               "failing_elements": 12, "relative_norm_error": 0.2}}  # fmt: skip
    text = error_vs_tolerance(failing)
    assert text.startswith("12 of 917504 elements outside tolerance") and "400% of its bound" in text


def test_a_three_turn_run_has_metrics_at_every_k_and_unsolved_reads_not_solved(client):
    """Catches a 3-turn run with metrics at k = 1 only (k in (1, 4, 8) up to its turns), "0.000" as the best
    speedup of a task no turn solved, and the runs list's "Tasks 0" for a run whose `tasks` field is empty."""
    from portal.agent import services
    from portal.agent.models import ModelRun, RunTaskMetrics
    from tests.support.factories import sync_catalog

    sync_catalog()
    run = lf.model_run(lf.user("ann"), model="vendor/three-turns")
    ModelRun.objects.filter(id=run.id).update(turns=3)
    run.refresh_from_db()
    fail = ("COMPILE_ERROR", "", None, 10)
    lf.turns(run, GEMM, [[fail, ("PASSED", "verified", 1.25, 10), fail]])
    lf.turns(run, MHA, [[fail, fail, fail]])
    services.metrics_refresh(run=run, task=lf.task(GEMM))
    services.metrics_refresh(run=run, task=lf.task(MHA))
    assert sorted(RunTaskMetrics.objects.filter(run=run, task__slug=GEMM).values_list("k", flat=True)) == [1, 2, 3]

    page = client.get(f"/runs/{run.id}/").content.decode()
    cells = {}
    for key in (f"{GEMM}|2", f"{MHA}|3"):
        start = page.index(f'data-metric="{key}"')
        row = page[start : page.index("</tr>", start)]
        cells[key] = row[row.index('data-field="best_speedup">') :].split("</td>")[0]
    assert "1.25x" in cells[f"{GEMM}|2"]
    assert "0.000" not in cells[f"{MHA}|3"] and "—" in cells[f"{MHA}|3"] and "not solved" in cells[f"{MHA}|3"]
    body = client.get(f"/api/v1/runs/{run.id}").json()
    assert {m["speedup"] for m in body["metrics"] if m["task"] == MHA} == {None}

    assert not run.tasks.exists()  # replayed and imported runs name no tasks: the list counted those
    listing = client.get("/runs/").content.decode()
    start = listing.index(f'href="/runs/{run.id}/"')
    cells = [c.split(">")[-1] for c in listing[start : listing.index("</tr>", start)].split("</td>")]
    assert cells[5] == "2", cells
