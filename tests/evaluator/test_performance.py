"""Timing events to the verdict's Performance record, on the CPU, against events recorded on an H200.

The fixture holds the timing events of a recorded verdict (docs/verdicts/gemm_n7168_k5120-hopper_tma_wgmma-h200.json):
the same samples must give the same medians, speedups, bootstrap intervals and throughput as that verdict says.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator.both_sides import protocol
from evaluator.both_sides.taskdata import load_task
from evaluator.measure.performance import performance_from_timing

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = json.loads((ROOT / "tests/fixtures/timing/gemm_n7168_k5120-h200-timing-events.json").read_text())
RECORDED = json.loads((ROOT / FIXTURE["source"]).read_text())
TASK = load_task(ROOT / "tasks" / "gemm_n7168_k5120")


@pytest.mark.parametrize("entry", FIXTURE["workloads"], ids=lambda e: f"M={e['axes']['M']}")
def test_recorded_timing_events_give_the_recorded_performance(entry):
    message = protocol.check_timing(entry["message"])
    result = performance_from_timing(
        message,
        baseline=TASK.baselines[0].id,
        warmup=10,
        flops=TASK.flops_for(TASK.workload(entry["uuid"])),
        peak_tflops=FIXTURE["peak_bf16_tflops"],
        workload=entry["uuid"],
    )
    recorded = next(w for w in RECORDED["workloads"] if w["uuid"] == entry["uuid"])["performance"]
    perf = result.performance
    assert result.notes == []
    assert perf.baseline == recorded["baseline"] == "cublas"
    assert perf.latency_ms == pytest.approx(recorded["latency_ms"], rel=1e-12)
    assert perf.baseline_latency_ms == pytest.approx(recorded["reference_latency_ms"], rel=1e-12)
    assert perf.speedup_factor == pytest.approx(recorded["speedup_factor"], rel=1e-12)
    assert perf.speedup_ci95 == pytest.approx(recorded["speedup_ci95"], rel=1e-12)
    assert perf.tflops == pytest.approx(recorded["tflops"], rel=1e-9)
    assert perf.fraction_of_peak == pytest.approx(recorded["fraction_of_peak"], rel=1e-9)
    # The stored verdict is of schema_version 1, which called the baseline's timing stats `reference`.
    for mine, theirs in ((perf.candidate, recorded["candidate"]), (perf.baseline_timing, recorded["reference"])):
        assert mine.samples_ms == theirs["samples_ms"]
        assert (mine.median_ms, mine.q25_ms, mine.q75_ms) == pytest.approx(
            (theirs["median_ms"], theirs["q25_ms"], theirs["q75_ms"]), rel=1e-12
        )
        assert mine.kernels_per_call == theirs["kernels_per_call"] and mine.method == "cupti"


def test_a_timed_call_without_gpu_activity_is_noted_and_no_baseline_means_no_speedup():
    event = protocol.timing_event(
        "cupti",
        None,
        {"candidate": {"samples_ms": [0.5, 0.4, 0.6], "activities": [1, 0, 1]}},
        {"timed": [], "trials": [], "batch": []},
        [],
        {"changed_bytes": 0, "error": ""},
    )
    result = performance_from_timing(
        protocol.check_timing(event), baseline="cublas", warmup=2, flops=2e9, peak_tflops=None, workload="w-1"
    )
    perf = result.performance
    assert result.notes == ["workload w-1: some timed calls recorded no GPU activity"]
    assert perf.latency_ms == 0.5 and perf.candidate.kernels_per_call == pytest.approx(2 / 3)
    assert perf.baseline_timing is None and perf.speedup_factor is None and perf.speedup_ci95 is None
    assert perf.tflops == pytest.approx(2e9 / 0.5e-3 / 1e12) and perf.fraction_of_peak is None


@pytest.mark.parametrize(
    "event",
    [
        {"event": "timing", "method": "cupti", "series": {}, "outputs": []},
        {"event": "timing", "method": "cupti", "series": {"candidate": {"samples_ms": 3}}, "outputs": []},
        {"event": "timing", "method": "cupti", "series": {"candidate": {"samples_ms": [], "activities": []}}},
    ],
)
def test_malformed_timing_events_are_channel_violations(event):
    with pytest.raises(protocol.ChannelViolation):
        protocol.check_timing(event)
