"""The trusted figures' pure rules: the figures of a row agree, and the trusted-clock slack scales with the host
floor measured by the trusted baseline process."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from evaluator.checks.integrity import (
    HOST_SLACK_MS,
    HOST_TIME,
    INCONSISTENT_FIGURES,
    consistency_hold,
    trusted_clock_hold,
)
from evaluator.measure.trusted_baseline import FLOOR_FACTOR, host_slack_ms

GEMM_FLOPS = 2 * 8192 * 7168 * 5120
ROOT = Path(__file__).resolve().parents[2]


def test_one_measurement_agrees_with_itself():
    lat = 0.831
    tflops = GEMM_FLOPS / (lat * 1e-3) / 1e12
    hold = consistency_hold(
        latency_ms=lat, baseline_latency_ms=0.756, speedup=0.756 / lat, tflops=tflops, flops=GEMM_FLOPS
    )
    assert hold is None


def test_a_speedup_that_the_baseline_does_not_explain_is_held():
    """The issue's rank-1 row: 1.81x at the same 738 TFLOP/s as the honest 0.91x row. Mutation caught: dropping the
    speedup comparison from consistency_hold."""
    lat = 0.831
    tflops = GEMM_FLOPS / (lat * 1e-3) / 1e12
    hold = consistency_hold(latency_ms=lat, baseline_latency_ms=0.756, speedup=1.81, tflops=tflops, flops=GEMM_FLOPS)
    assert hold is not None and hold.code == INCONSISTENT_FIGURES and "1.81x" in hold.message


def test_throughput_that_the_latency_does_not_explain_is_held():
    hold = consistency_hold(latency_ms=0.831, baseline_latency_ms=None, speedup=None, tflops=1500.0, flops=GEMM_FLOPS)
    assert hold is not None and "TFLOP/s" in hold.message


def test_the_slack_scales_with_the_measured_host_floor_only_upwards():
    assert host_slack_ms(None) == HOST_SLACK_MS
    assert host_slack_ms(0.001) == HOST_SLACK_MS
    assert host_slack_ms(0.2) == FLOOR_FACTOR * 0.2


def _rows(path: str) -> list[dict]:
    return [json.loads(line) for line in (ROOT / path).read_text().splitlines() if line.strip()]


def test_a_busy_host_does_not_hold_the_honest_rows_it_measured():
    """The FP8 reference GEMM five times through the portal with 14 of 16 cores loaded (H200, 2026-12-05): at M=128
    the parent's clock read 0.030-0.096 ms a call against 0.022 ms on the candidate's GPU timer, and the fourth
    evaluation was held `host_time` under the old 0.05 ms slack. Each row is judged here as the evaluator judged it
    (its own baseline host floor scales the slack). Mutation caught: HOST_SLACK_MS back at 0.05 (the fourth row is
    held)."""
    rows = _rows("docs/runs/integrity/h200-2026-12-05/holds/holds.jsonl")
    assert len(rows) == 5 and any(r["holds"] == ["host_time"] for r in rows)  # what the old rule did
    for r in rows:
        slack = host_slack_ms(r["host_floor_ms"])
        assert (
            trusted_clock_hold(reported_ms=r["in_process_latency_ms"], trusted_ms=r["latency_ms"], slack_ms=slack)
            is None
        )


def _corpus_rows(*names: str) -> dict[str, dict]:
    rounds = json.loads(gzip.decompress((ROOT / "docs/runs/integrity/h200-2026-12-04/corpus.json.gz").read_bytes()))
    found = {
        o["name"]: o["verdict"]["workloads"][0]["performance"] for o in rounds[0]["outcomes"] if o["name"] in names
    }
    assert set(found) == set(names)
    return found


def test_the_held_timer_forgeries_and_hidden_work_are_still_held():
    """The corpus entries whose expectation is a `host_time` hold, as measured on the H200 (2026-12-04 round): the
    timer forgeries read 0.92-0.98 ms outside against 0.097 ms reported (13.4 ms against 0.077 ms for
    gc_shrink_samples), hidden host work 250 ms and more.
    Each is held with its own host floor's slack. Mutation caught: the hold switched off (trusted_clock_hold
    answering None) or a slack of a millisecond."""
    rows = _corpus_rows(
        "python_patch_timer",
        "forged_channel_rewrite",
        "gc_shrink_samples",
        "cpu_gemm_host_threads",
        "helper_thread_after_return",
    )
    for name, p in rows.items():
        slack = host_slack_ms(p["host_floor_ms"])
        hold = trusted_clock_hold(reported_ms=p["in_process_latency_ms"], trusted_ms=p["latency_ms"], slack_ms=slack)
        assert hold is not None and hold.code == HOST_TIME, name
