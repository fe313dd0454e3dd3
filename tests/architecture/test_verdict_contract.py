"""The verdict is the contract: the portal reads a stored verdict only through
portal/core/verdict_record.py (`parse_verdict`, into evaluator/both_sides/verdict.py's typed records) and compares statuses
with the evaluator's enums. Catches a dict read of a verdict (`verdict.get("workloads")`,
`(evaluation.verdict or {})["status"]`) or a status compared with a string literal ("PASSED") coming back
anywhere in portal/, and an older stored verdict (before arch_check.trusted_ratio, performance.latency_from,
integrity, ...) that no longer parses or renders."""

from __future__ import annotations

import ast
import copy
import json
import re
from pathlib import Path

import pytest

from evaluator.both_sides.verdict import ArchStatus, OverallStatus, Status, Verdict
from portal.core.verdict_record import parse_verdict
from tests.support import leaderboard_factories as lf

ROOT = Path(__file__).resolve().parents[2]
PORTAL = ROOT / "portal"
# The one module that may read a verdict document's keys: it turns the document into the typed records.
PARSER = PORTAL / "core" / "verdict_record.py"

# A name that holds a verdict: `verdict`, `evaluation.verdict`, `result.verdict`, `latest_verdict`, ...
_VERDICT_NAME = re.compile(r"^(?:\w+_)?verdict$")
# Status words of the evaluator's enums: compared as literals, they drift from evaluator/both_sides/verdict.py unseen.
STATUS_WORDS = {s.value for s in OverallStatus} | {s.value for s in Status} | {s.value for s in ArchStatus}
# An operand that is a status or state (`status`, `e.status`, `arch_status`, `arch_state(...)`, `w.state`).
_STATUS_NAME = re.compile(r"status|state", re.IGNORECASE)


def _holds_verdict(node: ast.AST) -> bool:
    """`node` evaluates to a stored verdict document: a verdict-named name or attribute, or `(x.verdict or {})`."""
    if isinstance(node, ast.Name):
        return bool(_VERDICT_NAME.match(node.id))
    if isinstance(node, ast.Attribute):
        return bool(_VERDICT_NAME.match(node.attr))
    if isinstance(node, ast.BoolOp):
        return any(_holds_verdict(v) for v in node.values)
    return False


def dict_reads(source: str) -> list[tuple[int, str]]:
    """(line, text) of every `<verdict>.get(...)` and `<verdict>[...]` in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and _holds_verdict(node.func.value)
        ) or (isinstance(node, ast.Subscript) and _holds_verdict(node.value)):
            found.append((node.lineno, ast.unparse(node)[:120]))
    return found


def status_literals(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comparison (==, !=, in, not in) of a status or state with a status word written as a
    string literal."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        literals = []
        for operand in operands:
            items = operand.elts if isinstance(operand, ast.Tuple | ast.List | ast.Set) else [operand]
            literals += [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]
        about_status = any(
            _STATUS_NAME.search(ast.unparse(o)) for o in operands if not isinstance(o, ast.Constant | ast.Tuple)
        )
        if about_status and any(word in STATUS_WORDS for word in literals):
            found.append((node.lineno, ast.unparse(node)[:120]))
    return found


def _portal_sources() -> list[Path]:
    return sorted(p for p in PORTAL.rglob("*.py") if "migrations" not in p.parts and p != PARSER)


def _report(check) -> list[str]:
    problems = []
    for path in _portal_sources():
        for line, text in check(path.read_text(encoding="utf-8")):
            problems.append(f"{path.relative_to(ROOT)}:{line}: {text}")
    return problems


def test_the_checkers_see_dict_reads_and_status_literals():
    reads = dict_reads(
        "a = verdict.get('workloads')\n"
        "b = (evaluation.verdict or {}).get('compile')\n"
        "c = result.verdict['status']\n"
        "d = stored_verdict.get('arch')\n"
        "ok = verdict.status, parse_verdict(evaluation.verdict), verdicts.ROW_STATUS.get('held'), item['verdict']\n"
    )
    assert [line for line, _ in reads] == [1, 2, 3, 4]
    literals = status_literals(
        "if status == 'PASSED': pass\n"
        "if arch_status not in ('not_requested', 'profile_error'): pass\n"
        "if status == OverallStatus.PASSED or kind == 'kernel': pass\n"
        "if kind == 'verified': pass\n"
        "if e.status != 'TIMEOUT' and arch_state(s) in {'token'}: pass\n"
    )
    assert sorted({line for line, _ in literals}) == [1, 2, 5]


def test_no_dict_read_of_a_verdict_in_the_portal():
    """Read the verdict through portal.core.verdict_record.parse_verdict and use attributes."""
    assert _report(dict_reads) == []


def test_no_status_compared_with_a_string_literal_in_the_portal():
    """Compare with evaluator.both_sides.verdict's OverallStatus / Status / ArchStatus (they equal the stored words)."""
    assert _report(status_literals) == []


# --------------------------------------------------------------------------- old stored verdicts


def _old_verdict() -> dict:
    """A verdict as an older evaluator wrote it: no trusted-clock fields, integrity, sandbox, Triton, or schema_version
    2's `baseline_latency_ms`."""
    document = copy.deepcopy(lf.verdict(status="PASSED", speedup=1.25, tflops=600.0))
    for key in ("integrity", "sandbox", "language", "triton_version", "workload_set", "redacted"):
        document.pop(key, None)
    for key in ("trusted_ratio", "ranked_latency_ms", "timed_tflops", "non_tensor_peak_tflops"):
        document["arch_check"].pop(key)
    document["arch_check"].pop("timed_beyond_non_tensor")
    performance = document["workloads"][0]["performance"]
    for key in ("latency_from", "in_process_latency_ms", "host_floor_ms", "baseline_measured_by"):
        performance.pop(key)
    performance["reference_latency_ms"] = performance.pop("baseline_latency_ms")
    performance.pop("baseline_timing")
    # the baseline's timing stats, under the name every version before 3 gave them
    performance["reference"] = {
        "method": "cupti", "n": 3, "median_ms": 1.0, "q25_ms": 1.0, "q75_ms": 1.0, "iqr_ms": 0.0, "min_ms": 1.0,
        "max_ms": 1.0, "mean_ms": 1.0, "samples_ms": [1.0, 1.0, 1.0], "warmup": 1, "kernels_per_call": 1.0,
    }  # fmt: skip
    document["schema_version"] = 1
    document["workloads"][0]["fraction_of_peak_old_name"] = 0.5  # a field the evaluator no longer writes
    return document


def test_an_old_stored_verdict_parses_with_the_new_fields_empty():
    document = _old_verdict()
    before = json.dumps(document, sort_keys=True)
    verdict = parse_verdict(document)
    assert isinstance(verdict, Verdict)
    assert json.dumps(document, sort_keys=True) == before  # the stored document is never rewritten
    assert verdict.status == OverallStatus.PASSED and verdict.arch_check.status == ArchStatus.VERIFIED
    assert verdict.arch_check.trusted_ratio is None and verdict.arch_check.timed_beyond_non_tensor is None
    performance = verdict.workloads[0].performance
    assert performance.latency_from is None and performance.speedup_factor == pytest.approx(1.25)
    assert performance.baseline_latency_ms == pytest.approx(1.0)  # read under its version-1 name
    assert performance.baseline_timing is not None and performance.baseline_timing.median_ms == 1.0
    assert verdict.integrity is None and verdict.sandbox is None and verdict.language == "cuda"


def test_a_partial_verdict_reads_its_missing_required_fields_as_empty():
    """Older or hand-made documents lack fields that have no default: they read as the empty value of their type
    (an arch check without a status: not_requested); a status word the evaluator does not have is no verdict."""
    verdict = parse_verdict({
        "status": "COMPILE_ERROR",
        "compile": {"ok": False, "output": "kernel.cu(3): error: x"},
        "arch_check": {},
        "workloads": [{"uuid": "w1", "status": "PASSED", "performance": {"latency_ms": 1}}],
    })  # fmt: skip
    assert verdict is not None and verdict.task == "" and verdict.source_bytes == 0
    assert verdict.compile.command == [] and verdict.compile.returncode is None and not verdict.compile.ok
    assert verdict.arch_check.status == ArchStatus.NOT_REQUESTED
    assert verdict.workloads[0].axes == {} and verdict.workloads[0].performance.latency_ms == 1.0
    assert parse_verdict({"status": "FAST"}) is None
    assert parse_verdict({"workloads": []}) is None  # no status at all
    assert parse_verdict({"status": "PASSED", "workloads": [{"uuid": "w1"}]}) is None  # a workload without one
    assert parse_verdict({"status": "PASSED", "compile": "nvcc"}) is None
    assert parse_verdict(None) is None and parse_verdict({}) is None and parse_verdict([1]) is None
    partial = parse_verdict({"status": "PASSED", "workloads": [{"uuid": "w1", "status": "TIMEOUT"}]})
    assert partial is not None and partial.workloads[0].status == Status.TIMEOUT


def test_every_committed_reference_verdict_parses():
    folder = ROOT / "docs" / "verdicts"
    index = json.loads((folder / "index.json").read_text())
    assert index
    for entry in index:
        assert parse_verdict(json.loads((folder / entry["verdict"]).read_text())) is not None, entry["verdict"]


def test_an_old_stored_verdict_summarises_and_gives_feedback():
    from portal.agent.feedback import verdict_feedback
    from portal.leaderboard.evidence.downloads import environment_of, trace_lines
    from portal.submissions.summary import summarise_verdict

    document = _old_verdict()
    summary = summarise_verdict(parse_verdict(document), headline_workload=lf.HEADLINE, plausible_speedup_max=3.0)
    assert summary["status"] == "PASSED" and summary["arch_status"] == "verified"
    assert summary["speedup_factor"] == pytest.approx(1.25) and summary["review_state"] == ""
    text = verdict_feedback(parse_verdict(document), speedup=1.25, target_speedup=1.2)
    assert text.startswith("Evaluation result: PASSED.") and "1.25x vs cublas" in text
    assert "Target reached" in text
    [line] = trace_lines(definition="gemm", solution="s-1", verdict=parse_verdict(document), workloads={})
    assert line["evaluation"]["status"] == "PASSED" and line["evaluation"]["performance"]["speedup_factor"] == 1.25
    assert environment_of(parse_verdict(document))["gpu_name"] == document["environment"]["gpu_name"]


@pytest.mark.django_db
def test_an_old_stored_verdict_renders_on_the_evaluation_and_status_pages(client):
    from portal.submissions.models import Evaluation
    from tests.support.factories import sync_catalog

    sync_catalog()
    evaluation = lf.evaluation(owner=lf.user("ada"), families={"gmma": {"static": 12, "executed": 30,
                                                                      "predicated_on": 960}})  # fmt: skip
    old = _old_verdict()
    old["arch_check"]["families"] = {"gmma": {"static": 12, "executed": 30, "predicated_on": 960}}
    Evaluation.objects.filter(id=evaluation.id).update(verdict=old)
    page = client.get(f"/evidence/evaluations/{evaluation.id}/")
    assert page.status_code == 200
    text = page.content.decode()
    assert 'id="workloads-table"' in text and "M=4096" in text.replace(" ", "")
    assert '<tr><td>gmma</td><td class="num">12</td><td class="num">30</td><td class="num">960</td></tr>' in text
    assert "<td>PASSED</td>" in text.replace(" ", "")
    status = client.get(f"/submissions/{evaluation.submission_id}/")
    assert status.status_code == 200
    traces = client.get(f"/evidence/evaluations/{evaluation.id}/traces.jsonl")
    assert traces.status_code in (200, 404)
