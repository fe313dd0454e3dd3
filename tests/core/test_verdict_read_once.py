"""The verdict is read once, where the portal receives it: the evaluator's reader (`evaluator.both_sides.verdict.from_dict`,
`from_json`) is called at one place in portal/ (portal/core/verdict_record.py), and that place (`parse_verdict`) is
called only where a verdict document enters the portal. Catches a second reading layer coming back (a module that
parses or "completes" a stored document itself) and a reader that re-parses a row's verdict instead of taking
`Evaluation.verdict_record`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PORTAL = ROOT / "portal"
READERS = {"from_dict", "from_json"}
# Where a verdict document enters the portal, and why each is one.
RECEIVERS = {
    "portal/submissions/runner.py": "the GPU worker's result, read as the evaluator wrote it",
    "portal/submissions/models.py": "a stored row (Evaluation.verdict_record, once per row object)",
    "portal/leaderboard/services.py": "a committed reference verdict file being imported",
    "portal/leaderboard/management/commands/seed_leaderboard.py": "the committed reference verdicts the demo follows",
}


def calls(source: str, names: set[str]) -> list[int]:
    """Lines of every call of a function named in `names` (`name(...)` or `module.name(...)`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in names:
                found.append(node.lineno)
    return found


def _sources() -> dict[str, str]:
    return {
        str(path.relative_to(ROOT)): path.read_text(encoding="utf-8")
        for path in sorted(PORTAL.rglob("*.py"))
        if "migrations" not in path.parts
    }


def test_the_checker_sees_both_call_forms():
    assert calls("from_dict(d)\nvm.from_json(t)\nx = from_dict\n", READERS) == [1, 2]


def test_the_evaluators_reader_is_called_at_one_place_in_the_portal():
    sites = [(name, line) for name, text in _sources().items() for line in calls(text, READERS)]
    assert [name for name, _ in sites] == ["portal/core/verdict_record.py"], sites


def test_parse_verdict_is_called_only_where_the_portal_receives_a_verdict():
    sites: dict[str, int] = {}
    for name, text in _sources().items():
        if name != "portal/core/verdict_record.py" and (n := len(calls(text, {"parse_verdict"}))):
            sites[name] = n
    assert set(sites) <= set(RECEIVERS), {k: v for k, v in sites.items() if k not in RECEIVERS}
    assert all(n == 1 for n in sites.values()), sites


@pytest.mark.django_db
def test_a_row_reads_its_verdict_once_and_an_older_one_says_not_recorded(client):
    """The typed record a row hands out is read once per row object and carries the verdict's own fraction of
    peak (0.42, where TFLOP/s over the datasheet peak would give 61%); an old document's (a different
    denominator) is absent, and the evaluation page says "not recorded", never a recomputed value."""
    from portal.submissions.models import Evaluation
    from portal.submissions.summary import summarise_verdict
    from tests.support import leaderboard_factories as lf
    from tests.support.factories import sync_catalog

    sync_catalog()
    made = lf.evaluation(owner=lf.user("ada"), speedup=1.25, tflops=600.0, peak=0.42)
    row = Evaluation.objects.get(id=made.id)
    assert row.verdict_record is row.verdict_record  # one reading per row object
    assert row.verdict_record.workloads[0].performance.fraction_of_peak == 0.42
    page = client.get(f"/evidence/evaluations/{row.id}/").content.decode()
    assert "(42% of the GPU's datasheet peak" in page and "(61% of" not in page
    Evaluation.objects.filter(id=row.id).update(verdict={**row.verdict, "schema_version": 1})
    row = Evaluation.objects.get(id=row.id)
    assert row.verdict_record.workloads[0].performance.fraction_of_peak is None
    assert row.verdict_record.workloads[0].performance.tflops == 600.0
    assert row.verdict["workloads"][0]["performance"]["fraction_of_peak"] == 0.42  # the stored document is kept
    summary = summarise_verdict(row.verdict_record, headline_workload=lf.HEADLINE, plausible_speedup_max=3.0)
    assert summary["fraction_of_peak"] is None and summary["tflops"] == 600.0
    Evaluation.objects.filter(id=row.id).update(fraction_of_peak=None)
    page = client.get(f"/evidence/evaluations/{row.id}/").content.decode()
    assert "fraction of peak not recorded" in page and "(61% of" not in page and "(42% of" not in page
    status = client.get(f"/submissions/{row.submission_id}/").content.decode()
    assert "fraction of peak not recorded" in status and "(61% of" not in status
