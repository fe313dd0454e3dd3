"""The timed-call integrity flow end to end on CPU tensors (host clock): fresh inputs every call, outputs the
trusted parent chooses to compare after each call returned, the re-check and the parent-timed batches."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from evaluator import verdict as vm
from evaluator.pipeline import Options, evaluate
from evaluator.taskdata import load_task
from evaluator.verdict import OverallStatus
from tests.support.variants import SOURCE, variant_workdir

HERE = Path(__file__).resolve().parent
TASK = load_task(HERE / "tasks" / "tiny_gemm")
SCHEMA = json.loads((HERE.parents[1] / "evaluator" / "verdict.schema.json").read_text())
WORKLOAD = "00000000-0000-4000-8000-000000000016"


def timed(variant: str | None, **options):
    with variant_workdir(variant) as work:
        opts = Options(
            **{
                "device_type": "cpu",
                "timeout_s": 60,
                "warmup": 3,
                "iters": 20,
                "allow_unsandboxed": True,
                "workdir": work,
            }
            | options
        )
        verdict = evaluate(SOURCE, TASK, "sm_90a", workloads=WORKLOAD, stages=["timing"], options=opts)
    jsonschema.validate(json.loads(vm.to_json(verdict)), SCHEMA)
    return verdict


def test_honest_kernel_passes_with_its_calls_checked_and_timed_from_outside():
    # A host-code call here takes microseconds, so one context switch in a batch on a loaded 2-core machine can
    # exceed the clock check's slack (0.05 ms a call); the fastest batch counts, so more batches keep it honest.
    v = timed(None, batches=8)
    assert v.status == OverallStatus.PASSED, v.workloads[0].message
    record = v.integrity
    assert record.timed_calls == 20 and record.holds == []
    # the re-check and one call of each batch are always compared; timed calls at random
    assert record.checked_calls >= 4
    assert v.workloads[0].correctness.timed_outputs_checked >= 1
    assert record.trusted_ms_per_call[WORKLOAD] > 0
    perf = v.workloads[0].performance
    assert perf.candidate.method == "host_clock" and perf.latency_ms > 0


@pytest.mark.parametrize("variant", ["SKIP_SEEN_BUFFERS", "DRIFT"])
def test_reusing_results_between_calls_fails_with_the_call_named(variant):
    v = timed(variant)
    w = v.workloads[0]
    assert v.status == OverallStatus.INCORRECT_NUMERICAL, w.message
    assert "differs from the reference" in w.message and "may not be reused between calls" in w.message
    assert w.performance is None


def test_the_candidate_process_sees_no_secret_of_the_evaluator(monkeypatch):
    """The ranked check's secret seed reaches the evaluator through its environment; never the candidate."""
    monkeypatch.setenv("EVALUATOR_SEED", "secret-seed-marker-7f3a")
    monkeypatch.setenv("SECRET_KEY", "django-secret-marker-91c2")
    with variant_workdir("PRINT_ENV") as work:
        opts = Options(device_type="cpu", timeout_s=60, allow_unsandboxed=True, workdir=work)
        v = evaluate(SOURCE, TASK, "sm_90a", workloads=WORKLOAD, stages=["correctness"], options=opts)
    out = v.workloads[0].stdout_tail
    assert "ENV " in out  # the candidate did print its environment
    assert "secret-seed-marker-7f3a" not in out and "django-secret-marker-91c2" not in out


def test_the_library_baseline_is_timed_where_the_candidate_cannot_reach_it():
    """Issue 32, the denominator: the SLOW_BASELINE variant replaces torch.matmul (the tiny task's baseline) with one
    that sleeps 20 ms, from inside its own process, on its first call. When the baseline was timed in the candidate's
    process this made the baseline ~20 ms and the speedup enormous. Mutation caught: timing the baseline in the
    candidate's process again (`start(..., baseline=True)` and no trusted baseline process)."""
    v = timed("SLOW_BASELINE", batches=8)
    assert v.status == OverallStatus.PASSED, v.workloads[0].message
    perf = v.workloads[0].performance
    assert perf.reference_measured_by == "trusted process"
    assert perf.reference_latency_ms is not None and perf.reference_latency_ms < 10.0, perf.reference_latency_ms
    assert perf.host_floor_ms is not None and perf.host_floor_ms >= 0
