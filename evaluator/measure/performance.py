"""From a candidate process's timing message to the verdict's `Performance` record. Pure: no GPU, no processes.

The timing method itself lives in evaluator/candidate_process/timing.py (run in the candidate process, so its
report is a hint the parent bounds with its own clock); this module only summarises its samples
(evaluator/both_sides/stats.py), the speedup over the library baseline with its bootstrap interval, and the throughput (the
task's FLOPs over the latency) against the GPU's datasheet peak (evaluator/checks/peaks.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from evaluator.both_sides.stats import bootstrap_speedup, summarize
from evaluator.both_sides.verdict import (
    LATENCY_FROM_CANDIDATE_TIMER,
    LATENCY_FROM_TRUSTED_BATCHES,
    Performance,
)


@dataclass
class PerformanceResult:
    performance: Performance
    notes: list[str] = field(default_factory=list)  # for the verdict's notes (e.g. timed calls with no GPU activity)


def performance_from_timing(
    message: dict[str, Any],
    *,
    baseline: str,
    warmup: int,
    flops: float | None,
    peak_tflops: float | None,
    workload: str,
) -> PerformanceResult:
    """`message` is a timing event (evaluator.both_sides.protocol.timing_event) already checked by protocol.check_timing.

    `baseline` is the id of the task's library baseline, `flops` the task's FLOPs for this workload,
    `peak_tflops` the GPU's datasheet dense peak for the task's dtype (checks/physical_limits.py; None when unknown),
    `workload` the uuid for notes.
    """
    notes = []
    method = message["method"]
    series = message["series"]
    cand = series["candidate"]
    perf = Performance(baseline=baseline)
    perf.candidate = summarize(
        cand["samples_ms"], method=method, warmup=warmup, kernels_per_call=_mean(cand["activities"])
    )
    if min(cand["activities"], default=0) == 0 and method == "cupti":
        notes.append(f"workload {workload}: some timed calls recorded no GPU activity")
    perf.latency_ms = perf.candidate.median_ms
    if "baseline" in series:
        base = series["baseline"]
        perf.baseline_timing = summarize(
            base["samples_ms"], method=method, warmup=warmup, kernels_per_call=_mean(base["activities"])
        )
        perf.baseline_latency_ms = perf.baseline_timing.median_ms
        if perf.candidate.median_ms > 0:
            perf.speedup_factor = perf.baseline_timing.median_ms / perf.candidate.median_ms
            lo, hi = bootstrap_speedup(base["samples_ms"], cand["samples_ms"])
            if math.isfinite(lo) and math.isfinite(hi):
                perf.speedup_ci95 = [lo, hi]
    if perf.candidate.median_ms > 0 and flops:
        perf.tflops = flops / (perf.candidate.median_ms * 1e-3) / 1e12
        if peak_tflops:
            perf.fraction_of_peak = perf.tflops / peak_tflops
    return PerformanceResult(perf, notes)


def rank_by_trusted_clock(
    perf: Performance, latency_ms: float | None, baseline_ms: float | None, flops: float | None, peak: float | None
) -> None:
    """The parent's clock over lent batches ranks both sides (evaluator/measure/lent_calls.py): the candidate's and the
    library's per-call times replace the in-process medians, which stay as hints (`in_process_latency_ms`, the
    `candidate` and `baseline_timing` stats); the speedup's interval is the in-process one, scaled."""
    perf.in_process_latency_ms = perf.latency_ms
    if not latency_ms:
        perf.latency_from = LATENCY_FROM_CANDIDATE_TIMER
        return
    before = perf.speedup_factor
    perf.latency_ms = latency_ms
    if baseline_ms:
        perf.baseline_latency_ms = baseline_ms
    if perf.baseline_latency_ms:
        perf.speedup_factor = perf.baseline_latency_ms / latency_ms
        if perf.speedup_ci95 is not None and before:
            perf.speedup_ci95 = [x * perf.speedup_factor / before for x in perf.speedup_ci95]
    if flops:
        perf.tflops = flops / (latency_ms * 1e-3) / 1e12
        perf.fraction_of_peak = perf.tflops / peak if peak else None
    perf.latency_from = LATENCY_FROM_TRUSTED_BATCHES


def _mean(values: list[int]) -> float:
    return sum(values) / len(values) if values else 0.0
