"""Reading a verdict document into records (`verdict.from_dict`): what each field's type makes of a JSON value."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from enum import StrEnum
from pathlib import Path
from typing import Any

from evaluator.both_sides import verdict as vm
from evaluator.both_sides.verdict import ArchStatus, OverallStatus, Status, Verdict

REPO = Path(__file__).resolve().parents[2]


def _document() -> dict[str, Any]:
    timing = {
        "method": "cupti",
        "n": 3,
        "median_ms": 2,  # JSON writers drop ".0": an integer where the record says float
        "q25_ms": 1,
        "q75_ms": 3.5,
        "iqr_ms": 2.5,
        "min_ms": 1,
        "max_ms": 4,
        "mean_ms": 2.5,
        "samples_ms": [1, 2.5, None, 4],
        "warmup": 2,
    }
    return {
        "evaluator_version": "0.1.0",
        "task": "t",
        "arch": "sm_90a",
        "status": "PASSED",
        "created_at": "2026-12-05T00:00:00+00:00",
        "source_sha256": "0" * 64,
        "source_bytes": 10,
        "stages_requested": ["policy", "timing"],
        "workloads": [
            {
                "uuid": "u",
                "axes": {"M": 1},
                "status": "PASSED",
                "performance": {
                    "latency_ms": 1,
                    "speedup_ci95": [1, 2],
                    "candidate": timing,
                    "reference": dict(timing, median_ms=7),  # the baseline's timing under its old name
                    "baseline_measured_by": "trusted process",
                    "reference_measured_by": "candidate process",  # the new name wins where both are present
                },
            },
            {"uuid": "v", "axes": {"M": 2}, "status": "TIMEOUT", "performance": None},
        ],
        "arch_check": {"status": "token", "tensor_core_share": 0},
    }


def test_each_value_becomes_what_its_field_says_at_every_depth():
    doc = _document()
    read = vm.from_dict(doc)
    assert read.status is OverallStatus.PASSED and read.arch_check.status is ArchStatus.TOKEN
    assert [w.status for w in read.workloads] == [Status.PASSED, Status.TIMEOUT]
    assert type(read.arch_check.tensor_core_share) is float
    perf = read.workloads[0].performance
    assert type(perf.latency_ms) is float and [type(x) for x in perf.speedup_ci95] == [float, float]
    assert perf.candidate.samples_ms == [1.0, 2.5, None, 4.0]
    assert [type(x) for x in perf.candidate.samples_ms] == [float, float, type(None), float]
    assert type(perf.candidate.median_ms) is float and type(perf.candidate.n) is int
    assert perf.baseline_timing.median_ms == 7.0 and perf.baseline_measured_by == "trusted process"
    assert read.workloads[0].axes == {"M": 1} and read.workloads[1].performance is None


def test_the_records_share_no_list_or_dict_with_the_document():
    doc = _document()
    read = vm.from_dict(doc)
    doc["stages_requested"].append("arch")
    doc["workloads"][0]["axes"]["M"] = 99
    doc["workloads"][0]["performance"]["candidate"]["samples_ms"][0] = 1000
    assert read.stages_requested == ["policy", "timing"]
    assert read.workloads[0].axes == {"M": 1} and read.workloads[0].performance.candidate.samples_ms[0] == 1.0


def _read_by_walking(hint: Any, value: Any) -> Any:
    """An independent reading, deciding by the type at every value: the oracle for `from_dict` below."""
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        return _read_by_walking(inner[0], value) if len(inner) == 1 else value
    if origin is list:
        return [_read_by_walking(typing.get_args(hint)[0], v) for v in value]
    if origin is dict:
        return {k: _read_by_walking(typing.get_args(hint)[1], v) for k, v in value.items()}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        kwargs = {}
        for f in dataclasses.fields(hint):
            key = next((n for n in (f.name, f.metadata.get("renamed_from")) if n and n in value), None)
            if key is not None:
                kwargs[f.name] = _read_by_walking(hints[f.name], value[key])
        return hint(**kwargs)
    if isinstance(hint, type) and issubclass(hint, StrEnum):
        return hint(value)
    return float(value) if hint is float and isinstance(value, int) else value


def test_every_committed_verdict_reads_as_the_type_by_type_walk_reads_it():
    paths = sorted(p for p in (REPO / "docs").rglob("*.json") if '"workloads"' in p.read_text(encoding="utf-8"))
    documents = [json.loads(p.read_text(encoding="utf-8")) for p in paths]
    documents = [d for d in documents if isinstance(d, dict) and "status" in d and "workloads" in d]
    assert len(documents) >= 50  # the committed evidence: schema versions 1 to the current one
    for document in [*documents, _document()]:
        assert vm.from_dict(document) == _read_by_walking(Verdict, document)
