"""What the boards, charts and exports say must be true and consistent (the status
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


# --------------------------------------------------------------------------- charts


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


# --------------------------------------------------------------------------- reference roles


def test_negative_controls_are_never_called_or_plotted_expert_references(client):
    """Catches simt_dead_wgmma and simt_token_wgmma (marked `"role": "negative_control"` in their solution.json)
    shown with the "expert reference" tag and drawn as "expert reference" diamonds on the distribution chart."""
    from evaluator.suite.solutions import find_solutions
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


# --------------------------------------------------------------------------- intervals, errors and turns


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
    from portal.leaderboard.boards import ranking
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
    from portal.core.verdict_record import parse_verdict

    failing = {"status": "INCORRECT_NUMERICAL", "correctness": {**verdict["workloads"][0]["correctness"],
               "failing_elements": 12, "relative_norm_error": 0.2}}  # fmt: skip
    record = parse_verdict({**verdict, "workloads": [{**verdict["workloads"][0], **failing}]})
    text = error_vs_tolerance(record.workloads[0])
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


# --------------------------------------------------------------------------- peak and consistency


def test_the_fraction_of_peak_is_the_verdicts_and_an_older_denominator_reads_not_recorded():
    """Catches a portal that recomputes "of peak" from the TFLOP/s instead of showing the verdict's figure (the
    evaluator owns the denominator: per dtype, per GPU), and one that shows a schema_version 1 verdict's figure,
    whose denominator was the matmul rate measured on the host (803.5 TFLOP/s on the H200): that reads "not
    recorded" (None), never a value the portal made."""
    from portal.core.verdict_record import parse_verdict
    from portal.leaderboard.management.commands.seed_leaderboard import PEAK_TFLOPS
    from portal.submissions.summary import summarise_verdict

    assert PEAK_TFLOPS["NVIDIA H200"] == 989.4  # the demo seed plays the evaluator with the datasheet figure
    # 739.4 / 989.4 would be 0.747: the verdict says 0.61, and the row says what the verdict says.
    current = lf.verdict(speedup=0.91, tflops=739.4, peak=0.61)
    row = summarise_verdict(parse_verdict(current), headline_workload=lf.HEADLINE, plausible_speedup_max=3.0)
    assert row["fraction_of_peak"] == 0.61 and row["tflops"] == 739.4
    older = {**lf.verdict(speedup=0.91, tflops=739.4, peak=739.4 / 803.5), "schema_version": 1}
    row = summarise_verdict(parse_verdict(older), headline_workload=lf.HEADLINE, plausible_speedup_max=3.0)
    assert row["fraction_of_peak"] is None and row["tflops"] == 739.4 and row["speedup_factor"] == 0.91


def test_the_board_and_its_exports_state_the_denominator(client):
    from tests.support.factories import sync_catalog

    sync_catalog()
    lf.evaluation(owner=lf.user("kim"), speedup=0.91, tflops=739.4, peak=739.4 / 989.4)
    body = client.get("/api/v1/leaderboard/kernels", {"arch": "sm_90a", "task": GEMM}).json()
    (row,) = body["rows"]
    assert row["peak_tflops"] == 989.4 and row["peak_fraction"] == pytest.approx(739.4 / 989.4)
    page = client.get("/leaderboard/kernels/", {"arch": "sm_90a", "task": GEMM}).content.decode()
    assert "datasheet dense BF16 peak" in page and ">75%<" in page


def test_a_row_the_evaluator_held_for_inconsistent_figures_is_listed_apart_with_its_reason(client):
    """Catches a row shown ranked while its verdict holds it (the evaluator's inconsistent_figures: speedup and
    latencies are not one measurement), and a portal that re-runs the evaluator's check on its own: a row whose
    figures disagree but whose verdict holds nothing is the evaluator's call, not the portal's."""
    from evaluator.checks.integrity import INCONSISTENT_FIGURES
    from portal.core.verdict_record import parse_verdict
    from tests.support.factories import sync_catalog

    sync_catalog()
    good = lf.evaluation(owner=lf.user("kim"), name="good.cu", speedup=1.0)
    bad = lf.evaluation(owner=lf.user("lee"), name="bad.cu", speedup=1.11)
    verdict = bad.verdict
    verdict["workloads"][0]["performance"]["latency_ms"] = 1.0 / 0.7  # its latencies say 0.70x
    from portal.submissions.summary import summarise_verdict

    unheld = summarise_verdict(parse_verdict(verdict), headline_workload=lf.HEADLINE, plausible_speedup_max=3.0)
    assert unheld["review_state"] == "" and unheld["speedup_factor"] == 1.11
    verdict["integrity"] = {"holds": [{"code": INCONSISTENT_FIGURES, "message": "speedup 1.11x but latencies 0.70x"}]}
    summary = summarise_verdict(parse_verdict(verdict), headline_workload=lf.HEADLINE, plausible_speedup_max=3.0)
    assert summary["review_state"] == "held" and "inconsistent_figures" in summary["review_reason"]
    type(bad).objects.filter(id=bad.id).update(
        verdict=verdict, review_state=summary["review_state"], review_reason=summary["review_reason"]
    )
    from portal.leaderboard.cache import leaderboard_changed

    leaderboard_changed()
    body = client.get("/api/v1/leaderboard/kernels", {"arch": "sm_90a", "task": GEMM}).json()
    assert [r["name"] for r in body["rows"]] == ["good.cu"] and body["rows"][0]["rank"] == 1
    assert [(h["name"], h["rank"]) for h in body["held"]] == [("bad.cu", None)]
    assert "inconsistent_figures" in body["held"][0]["held_reason"]
    page = client.get("/leaderboard/kernels/", {"arch": "sm_90a", "task": GEMM}).content.decode()
    held = page[page.index('data-state="held"') : page.index("</tbody>", page.index('data-state="held"'))]
    assert "bad.cu" in held and "inconsistent_figures" in held and "speedup 1.11x" in held
    assert good.id and "good.cu" not in held


def test_demo_rows_agree_with_the_measured_reference_beside_them(demo_leaderboard):
    """Catches the demo board's rank 1 at 1.11x and 522.7 TFLOP/s above the measured reference at 0.91x and
    739.4 TFLOP/s on the same GPU: each row's TFLOP/s over its speedup (the library's rate) now agrees with the
    reference verdicts' within noise."""
    from io import StringIO

    from django.core.management import call_command

    from portal.leaderboard.boards import selectors
    from portal.leaderboard.cache import Generation

    demo_leaderboard()
    call_command("import_reference_verdicts", stdout=StringIO())
    rows = selectors.kernel_board(Generation(), task=GEMM, arch="sm_90a", gpu="H200")
    reference = next(r for r in rows if r.name == "hopper_tma_wgmma")
    library = reference.tflops / reference.speedup_factor
    made_up = [r for r in rows if r.is_synthetic and r.speedup_factor and r.tflops]
    assert len(made_up) >= 5
    for r in made_up:
        assert r.tflops / r.speedup_factor == pytest.approx(library, rel=0.1), (r.name, r.speedup_factor, r.tflops)


# --------------------------------------------------------------------------- synthetic rows and status words


def test_every_export_marks_synthetic_rows_per_row_with_raw_values(client):
    """Catches kernel and model CSV/JSON without `is_synthetic` (synthetic rows were marked only by the site
    banner): every row of every export says whether it was made up, measured rows say false; numbers stay raw."""
    import csv
    import io
    import json
    import zipfile

    from tests.support.factories import sync_catalog

    runs = lf.standard_runs()
    from portal.agent.models import ModelRun

    ModelRun.objects.filter(id=runs["b"].id).update(is_synthetic=True)
    sync_catalog()
    real = lf.evaluation(owner=lf.user("kim"), name="real.cu", speedup=0.9105157532166174)
    made_up = lf.evaluation(owner=lf.user("sam"), name="made-up.cu", speedup=1.2)
    type(made_up.submission).objects.filter(id=made_up.submission_id).update(is_synthetic=True)
    from portal.leaderboard.cache import leaderboard_changed

    leaderboard_changed()
    query = {"arch": "sm_90a", "task": GEMM}
    rows = client.get("/api/v1/leaderboard/kernels", query).json()["rows"]
    assert {r["name"]: r["is_synthetic"] for r in rows} == {"real.cu": False, "made-up.cu": True}
    assert next(r["speedup"] for r in rows if r["name"] == "real.cu") == 0.9105157532166174  # raw in exports
    table = list(
        csv.DictReader(
            io.StringIO(client.get("/api/v1/leaderboard/kernels", {**query, "format": "csv"}).content.decode())
        )
    )
    assert {r["name"]: r["is_synthetic"] for r in table} == {"real.cu": "False", "made-up.cu": "True"}
    page = client.get("/leaderboard/kernels/", query).content.decode()
    made_up_row = page[page.index("made-up.cu") : page.index("</tr>", page.index("made-up.cu"))]
    assert (
        "status-synthetic" in made_up_row
        and "status-synthetic" not in page[page.index("real.cu") : page.index("</tr>", page.index("real.cu"))]
    )

    models = client.get("/api/v1/leaderboard/models", {"arch": "sm_90a", "k": "8"}).json()["rows"]
    assert {m["model_id"]: m["is_synthetic"] for m in models} == {
        "vendor/model-a": False, "vendor/model-b": True, "vendor/model-c": False
    }  # fmt: skip
    assert all("is_synthetic" in r for m in models for r in m["runs"])
    csv_models = list(
        csv.DictReader(
            io.StringIO(
                client.get("/api/v1/leaderboard/models", {"arch": "sm_90a", "k": "8", "format": "csv"}).content.decode()
            )
        )
    )
    assert {m["model_id"]: m["is_synthetic"] for m in csv_models}["vendor/model-b"] == "True"
    per_run = client.get("/api/v1/leaderboard/models", {"arch": "sm_90a", "k": "8", "per": "run"}).json()["rows"]
    assert {r["run_id"]: r["is_synthetic"] for r in per_run}[runs["b"].id] is True

    traces = client.get("/api/v1/leaderboard/kernels/traces.jsonl", query).content.decode().splitlines()
    assert {json.loads(line)["solution"].rsplit("-", 1)[0]: json.loads(line)["is_synthetic"] for line in traces} == {
        "real.cu": False, "made-up.cu": True
    }  # fmt: skip
    bundle = zipfile.ZipFile(
        io.BytesIO(b"".join(client.get(f"/evidence/submissions/{made_up.submission_id}/bundle.zip").streaming_content))
    )
    assert json.loads(bundle.read("MANIFEST.json"))["submission"]["is_synthetic"] is True
    assert client.get(f"/api/v1/evaluations/{real.id}").json()["result"]["is_synthetic"] is False
    run_zip = zipfile.ZipFile(
        io.BytesIO(b"".join(client.get(f"/evidence/runs/{runs['b'].id}/bundle.zip").streaming_content))
    )
    assert json.loads(run_zip.read("MANIFEST.json"))["run"]["is_synthetic"] is True


def test_one_set_of_status_words_in_the_templates():
    """Catches pages naming a row's status in their own words ("Held for review:", a hand-made static-only
    badge): every status badge comes from verdicts.ROW_STATUS through the status_badge tag."""
    import re

    from django.conf import settings

    from portal.core.templatetags.portal_tags import status_badge
    from portal.core.verdicts import ROW_STATUS

    assert set(ROW_STATUS) == {"ranked", "held", "static-only", "synthetic"}
    html = status_badge("held")
    assert 'class="badge status status-held"' in html and ">held</span>" in html
    used = set()
    for path in (settings.BASE_DIR / "templates").rglob("*.html"):
        text = path.read_text()
        assert "Held for review:" not in text and '<span class="badge notice">static-only' not in text, path
        used |= set(re.findall(r'{% status_badge "([a-z-]+)" %}', text))
    assert used <= set(ROW_STATUS) and {"held", "static-only", "synthetic"} <= used
