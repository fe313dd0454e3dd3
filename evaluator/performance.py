"""From a candidate process's timing message to the verdict's `Performance` record. Pure: no GPU, no processes.

The timing method itself lives in evaluator/timing.py (run in the candidate process); this module only
summarises its samples (evaluator/stats.py), the speedup over the library baseline with its bootstrap
interval, and the throughput against the task's FLOPs and the GPU's measured peak.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from evaluator.stats import bootstrap_speedup, summarize
from evaluator.verdict import Performance


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
    """`message` is a timing event (evaluator.protocol.timing_event) already checked by protocol.check_timing.

    `baseline` is the id of the task's speedup reference, `flops` the task's FLOPs for this workload,
    `peak_tflops` the measured bf16 dense peak (None when unknown), `workload` the uuid for notes.
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
        perf.reference = summarize(
            base["samples_ms"], method=method, warmup=warmup, kernels_per_call=_mean(base["activities"])
        )
        perf.reference_latency_ms = perf.reference.median_ms
        if perf.candidate.median_ms > 0:
            perf.speedup_factor = perf.reference.median_ms / perf.candidate.median_ms
            lo, hi = bootstrap_speedup(base["samples_ms"], cand["samples_ms"])
            if math.isfinite(lo) and math.isfinite(hi):
                perf.speedup_ci95 = [lo, hi]
    if perf.candidate.median_ms > 0 and flops:
        perf.tflops = flops / (perf.candidate.median_ms * 1e-3) / 1e12
        if peak_tflops:
            perf.fraction_of_peak = perf.tflops / peak_tflops
    return PerformanceResult(perf, notes)


def use_trusted_latency(perf: Performance, trusted_ms: float | None, flops: float | None, peak: float | None) -> None:
    """The slower, outside figure replaces the candidate process's median (an integrity hold asked for it)."""
    if not trusted_ms or not perf.latency_ms:
        return
    factor = perf.latency_ms / trusted_ms
    perf.latency_ms = trusted_ms
    if perf.speedup_factor is not None:
        perf.speedup_factor *= factor
    if perf.speedup_ci95 is not None:
        perf.speedup_ci95 = [x * factor for x in perf.speedup_ci95]
    if flops:
        perf.tflops = flops / (trusted_ms * 1e-3) / 1e12
        perf.fraction_of_peak = perf.tflops / peak if peak else None


def _mean(values: list[int]) -> float:
    return sum(values) / len(values) if values else 0.0
