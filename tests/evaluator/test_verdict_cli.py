"""Verdict JSON (schema current, round trip, validation) and the command line's exit statuses."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from evaluator.both_sides import verdict as vm
from evaluator.both_sides.verdict import (
    ArchCheck,
    ArchStatus,
    Correctness,
    OverallStatus,
    Performance,
    Status,
    Verdict,
    WorkloadResult,
)
from evaluator.schema import SCHEMA_PATH, schema_text
from tests.support.verdicts import _validator as suite_validator
from tests.support.verdicts import complete

REPO = Path(__file__).resolve().parents[2]
KERNELS = REPO / "tests" / "kernels"
SCHEMA = json.loads(SCHEMA_PATH.read_text())


def test_committed_schema_is_current():
    assert SCHEMA_PATH.read_text() == schema_text(), (
        "regenerate: python -m evaluator.schema > evaluator/verdict.schema.json"
    )
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def _sample() -> Verdict:
    return Verdict(
        evaluator_version="0.1.0",
        task="t",
        arch="sm_90a",
        status=OverallStatus.PASSED,
        created_at="2026-11-30T00:00:00+00:00",
        source_sha256="0" * 64,
        source_bytes=10,
        stages_requested=["policy"],
        workloads=[
            WorkloadResult(
                uuid="u",
                axes={"M": 1},
                status=Status.PASSED,
                correctness=Correctness(max_absolute_error=0.1, trials=3),
                performance=Performance(latency_ms=1.0, speedup_ci95=[0.9, 1.1]),
            )
        ],
        arch_check=ArchCheck(ArchStatus.TOKEN, tensor_core_share=0.01),
    )


def test_round_trip_and_validation():
    v = _sample()
    text = vm.to_json(v)
    jsonschema.validate(json.loads(text), SCHEMA)
    back = vm.from_json(text)
    assert back == v
    assert back.workloads[0].status is Status.PASSED and back.arch_check.status is ArchStatus.TOKEN


def test_schema_rejects_unknown_status_and_fields():
    data = json.loads(vm.to_json(_sample()))
    data["workloads"][0]["status"] = "MOSTLY_PASSED"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, SCHEMA)
    data = json.loads(vm.to_json(_sample()))
    data["surprise"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, SCHEMA)


def test_verdicts_written_before_the_baseline_rename_are_still_read():
    """Schema version 1 called the library baseline's median `reference_latency_ms`: the committed
    evidence under docs/verdicts/ keeps that key, and the reader and the schema accept it."""
    path = REPO / "docs" / "verdicts" / "gemm_n7168_k5120-hopper_tma_wgmma-h200.json"
    stored = json.loads(path.read_text())
    assert stored["schema_version"] == 1
    old = [w["performance"] for w in stored["workloads"] if w.get("performance")]
    assert old and all("reference_latency_ms" in p and "baseline_latency_ms" not in p for p in old)
    read = vm.from_dict(stored)
    assert [w.performance.baseline_latency_ms for w in read.workloads if w.performance] == [
        p["reference_latency_ms"] for p in old
    ]
    # Written again, it has only the new name.
    written = json.loads(vm.to_json(read))["workloads"][0]["performance"]
    assert "reference_latency_ms" not in written and written["baseline_latency_ms"] == old[0]["reference_latency_ms"]
    assert vm.SCHEMA_VERSION == 3 and vm.to_dict(_sample())["schema_version"] == 3
    # The schema still accepts the old name (deprecated), so a version-1 document differing only there validates.
    data = vm.to_dict(_sample())
    perf = data["workloads"][0]["performance"]
    perf["reference_latency_ms"] = perf.pop("baseline_latency_ms")
    jsonschema.validate(data, SCHEMA)
    assert SCHEMA["$defs"]["Performance"]["properties"]["reference_latency_ms"]["deprecated"] is True


def test_verdicts_that_called_the_baselines_timing_the_reference_are_still_read():
    """Before schema_version 3 the library baseline's timing stats were `reference` and who measured them
    `reference_measured_by` (the reference is the PyTorch oracle, never timed). Committed evidence keeps those keys:
    the reader takes them as `baseline_timing` / `baseline_measured_by`, the schema accepts them as deprecated, and
    a document written again has only the new names. Mutation caught: either field without its `renamed_from`."""
    path = REPO / "docs" / "runs" / "integrity" / "h200-2026-12-02h" / "verdicts"
    stored = json.loads((path / "gemm_n4096_k4096-triton_tma_wgmma-h200.json").read_text())
    old = [w["performance"] for w in stored["workloads"] if w.get("performance")]
    assert old and all(p["reference"] and p["reference_measured_by"] == "trusted process" for p in old)
    read = [w.performance for w in vm.from_dict(stored).workloads if w.performance]
    assert [p.baseline_timing.samples_ms for p in read] == [p["reference"]["samples_ms"] for p in old]
    assert [p.baseline_timing.median_ms for p in read] == [p["reference"]["median_ms"] for p in old]
    assert {p.baseline_measured_by for p in read} == {"trusted process"}
    written = json.loads(vm.to_json(vm.from_dict(stored)))
    perf = next(w["performance"] for w in written["workloads"] if w.get("performance"))
    assert "reference" not in perf and "reference_measured_by" not in perf
    assert perf["baseline_timing"]["median_ms"] == old[0]["reference"]["median_ms"]
    assert perf["baseline_measured_by"] == "trusted process"
    # A current document differing only there validates (the evidence file differs in other ways too).
    data = vm.to_dict(_sample())
    perf = data["workloads"][0]["performance"]
    perf["reference"], perf["reference_measured_by"] = perf.pop("baseline_timing"), "trusted process"
    perf.pop("baseline_measured_by", None)
    jsonschema.validate(data, SCHEMA)
    for name in ("reference", "reference_measured_by"):
        assert SCHEMA["$defs"]["Performance"]["properties"][name]["deprecated"] is True


def test_nan_is_never_written():
    v = _sample()
    v.workloads[0].correctness.max_absolute_error = float("nan")
    with pytest.raises(ValueError):
        vm.to_json(v)


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evaluator", *args], cwd=REPO, capture_output=True, text=True, timeout=600
    )


def test_cli_bad_arguments_exit_2(tmp_path):
    k = str(KERNELS / "simt_gemm.cu")
    assert cli("run", k, "--task", "no_such_task", "--arch", "sm_90a").returncode == 2
    assert cli("run", k, "--task", "gemm_n7168_k5120", "--arch", "sm_75").returncode == 2
    r = cli("run", k, "--task", "gemm_n7168_k5120", "--arch", "sm_90a", "--stages", "policy,magic")
    assert r.returncode == 2 and "magic" in r.stderr
    r = cli("run", str(tmp_path / "missing.cu"), "--task", "gemm_n7168_k5120", "--arch", "sm_90a")
    assert r.returncode == 2 and "cannot read" in r.stderr
    r = cli("run", k, "--task", "gemm_n7168_k5120", "--arch", "sm_90a", "--workload", "nope", "--stages", "policy")
    assert r.returncode == 2 and "workload" in r.stderr


def _no_gpu() -> bool:
    import torch

    return not torch.cuda.is_available()


@pytest.mark.skipif(not _no_gpu(), reason="checks the no-GPU path")
def test_cli_gpu_stages_without_gpu_is_environment_error():
    r = cli("run", str(KERNELS / "simt_gemm.cu"), "--task", "gemm_n7168_k5120", "--arch", "sm_90a")
    assert r.returncode == 3
    assert "broken environment" in r.stderr and "no CUDA GPU" in r.stderr


def test_cli_policy_rejection_writes_verdict(tmp_path):
    out = tmp_path / "v.json"
    r = cli(
        "run",
        str(KERNELS / "cublas_gemm.cu"),
        "--task",
        "gemm_n7168_k5120",
        "--arch",
        "sm_90a",
        "--stages",
        "policy,compile,sass",
        "--json",
        str(out),
    )
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    jsonschema.validate(data, SCHEMA)
    assert data["status"] == "POLICY_REJECTED" and data["compile"] is None
    assert {s["name"]: s["state"] for s in data["stages"]}["compile"] == "skipped"
    assert all(w["status"] == "COMPILE_ERROR" for w in data["workloads"])
    assert "POLICY_REJECTED" in r.stdout and "cublas_v2.h" in r.stdout


def test_cli_static_stages_on_a_cpu_machine(tmp_path):
    # The subject is the command line, not the kernel ABI: the light kernel (no wgmma, no TVM-FFI headers).
    out, progress = tmp_path / "v.json", tmp_path / "progress.jsonl"
    r = cli(
        "run",
        str(KERNELS / "light_kernel.cu"),
        "--task",
        "gemm_n7168_k5120",
        "--arch",
        "sm_90a",
        "--stages",
        "policy,compile,sass",
        "--json",
        str(out),
        "--progress",
        str(progress),
    )
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    jsonschema.validate(data, SCHEMA)
    assert data["status"] == "STATIC_ONLY"
    assert data["workloads"] == [] and data["environment"] is None
    states = {s["name"]: s["state"] for s in data["stages"]}
    assert states == {
        "policy": "passed",
        "compile": "passed",
        "sass": "passed",
        "correctness": "not_run",
        "arch": "not_run",
        "timing": "not_run",
    }
    assert data["sass"]["target_count"] == 0 and data["arch_check"]["status"] == "absent"
    assert data["compile"]["resources"][0]["registers"] > 0
    events = [json.loads(line) for line in progress.read_text().splitlines()]
    assert [e["stage"] for e in events][:2] == ["policy", "policy"] and events[-1]["stage"] == "sass"


def test_cli_compile_error_is_a_verdict(tmp_path):
    bad = tmp_path / "bad.cu"
    bad.write_text(
        "#include <tvm/ffi/function.h>\nint run_impl() { return nope; }\n"
        "TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run_impl);\n"
    )
    out = tmp_path / "v.json"
    r = cli("run", str(bad), "--task", "gemm_n7168_k5120", "--arch", "sm_90a", "--stages", "sass", "--json", str(out))
    assert r.returncode == 0
    data = json.loads(out.read_text())
    assert data["status"] == "COMPILE_ERROR" and "nope" in data["compile"]["output"]
    assert data["sass"] is None


def _mutations(document: dict) -> list[dict]:
    """Documents one edit away from `document`, most of them invalid: each kind of rule the schema states."""
    out = []
    for edit in (
        lambda d: d.update(status="MOSTLY_PASSED"),  # enum
        lambda d: d.update(surprise=1),  # additionalProperties
        lambda d: d.pop("task"),  # required
        lambda d: d.update(source_bytes="many"),  # type
        lambda d: d.update(stages_requested="compile"),  # array
        lambda d: d["workloads"][0].update(status=None) if d.get("workloads") else d.update(arch=7),
        lambda d: d["workloads"][0].update(extra=[]) if d.get("workloads") else d.update(task=None),
    ):
        mutated = copy.deepcopy(document)
        edit(mutated)
        out.append(mutated)
    return out


def test_the_suites_fast_validator_agrees_with_the_reference_one():
    """The tests validate verdicts with jsonschema-rs (tests/support/verdicts.py) for speed; this holds it to the
    reference implementation on documents of every status (hand-built, and the H200 runs' committed ones, some
    written by older evaluators and missing fields the schema now requires) and on documents broken in each way the
    schema forbids: the same verdict, the same places named."""
    reference = jsonschema.Draft202012Validator(SCHEMA)
    fast = suite_validator()
    current = [json.loads(vm.to_json(_sample())), *(complete({"status": status.value}) for status in OverallStatus)]
    committed = [json.loads(p.read_text()) for p in sorted((REPO / "docs" / "verdicts").glob("*-h200.json"))]
    assert all(not list(fast.iter_errors(d)) for d in current) and any(list(fast.iter_errors(d)) for d in committed)
    documents = current + committed
    assert len(documents) > 15
    checked = 0
    for document in documents:
        for candidate in (document, *_mutations(document)):
            expected = sorted(tuple(map(str, e.absolute_path)) for e in reference.iter_errors(candidate))
            got = sorted(tuple(map(str, e.instance_path)) for e in fast.iter_errors(candidate))
            assert got == expected, (expected, got)
            checked += 1
    assert checked == len(documents) * 8


def test_writing_a_verdict_gives_what_asdict_gives():
    """`to_dict` walks the records itself for speed; it must give exactly `dataclasses.asdict` with enum fields as
    their values, on verdicts of every status and on the committed H200 ones (nested records, lists of records,
    dicts of records, lists of strings)."""
    import dataclasses
    from enum import StrEnum

    def reference(verdict):
        return dataclasses.asdict(
            verdict, dict_factory=lambda items: {k: (v.value if isinstance(v, StrEnum) else v) for k, v in items}
        )

    verdicts = [_sample(), *(vm.from_dict(complete({"status": s.value})) for s in OverallStatus)]
    verdicts += [vm.from_dict(json.loads(p.read_text())) for p in sorted((REPO / "docs" / "verdicts").glob("*.json"))
                 if "workloads" in p.read_text()]  # fmt: skip
    assert len(verdicts) > 15
    for verdict in verdicts:
        written = vm.to_dict(verdict)
        assert written == reference(verdict)
        assert _shape(written) == _shape(reference(verdict))  # key order and the exact types (an enum == its value)
        assert vm.from_dict(written) == verdict


def _shape(value):
    """A value with every leaf replaced by its exact type and every dict by its items in order."""
    if isinstance(value, dict):
        return [(k, _shape(v)) for k, v in value.items()]
    if isinstance(value, (list, tuple)):
        return (type(value), [_shape(v) for v in value])
    return type(value)
