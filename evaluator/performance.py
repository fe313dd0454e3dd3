"""From a candidate process's timing message to the verdict's `Performance` record. Pure: no GPU, no processes.

The timing method itself lives in evaluator/candidate_process/timing.py (run in the candidate process, so its
report is a hint the parent bounds with its own clock); this module only summarises its samples
(evaluator/stats.py), the speedup over the library baseline with its bootstrap interval, and the throughput (the
task's FLOPs over the latency) against the GPU's datasheet peak (evaluator/peaks.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from evaluator.stats import bootstrap_speedup, summarize
from evaluator.verdict import (
    LATENCY_FROM_CANDIDATE_TIMER,
    LATENCY_FROM_TRUSTED_BATCHES,
    LATENCY_FROM_TRUSTED_BOUND,
    LATENCY_FROM_TRUSTED_CLOCK,
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
    """`message` is a timing event (evaluator.protocol.timing_event) already checked by protocol.check_timing.

    `baseline` is the id of the task's speedup reference, `flops` the task's FLOPs for this workload,
    `peak_tflops` the GPU's datasheet dense BF16 peak (evaluator/peaks.py; None when unknown), `workload` the uuid
    for notes.
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
        perf.baseline_latency_ms = perf.reference.median_ms
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


# How far below the trusted clock the candidate process's own timer may place the ranked latency.
# The parent's per-call clock over a batch is the call's time plus the host's cost of driving it
# (messages, launches, the capture), which the trusted baseline process measures on the same host just before:
# its `host_floor_ms`. So the ranked latency is at least (trusted - host floor - BOUND_EXTRA_MS) /
# TRUSTED_BOUND_MARGIN. Measured on the H200: the seven reference kernels' in-process medians sit 1.01x-1.13x
# below the parent's clock, all above this bound (docs/runs/integrity/h200-2026-12-02h); a timer rewritten to read
# 0.8x on a small GEMM workload (0.64 ms reported, 0.99 ms by the parent's clock, host floor 0.15 ms) is below it
# (docs/runs/integrity/h200-2026-12-03, harness_timer_scaled). A payload that makes the in-process figure lie gains
# at most the margin plus BOUND_EXTRA_MS; an honest kernel that costs the host more per call than the library does
# (more launches on a tiny workload) is ranked at the slower figure, never held for it.
TRUSTED_BOUND_MARGIN = 1.05
BOUND_EXTRA_MS = 0.02


def trusted_floor_ms(trusted_ms: float | None, host_floor_ms: float | None) -> float | None:
    """The least latency the trusted clock allows: its per-call time less the host's per-call cost, less the
    margin."""
    if not trusted_ms:
        return None
    return max(0.0, trusted_ms - (host_floor_ms or 0.0) - BOUND_EXTRA_MS) / TRUSTED_BOUND_MARGIN


def bound_by_trusted_clock(
    perf: Performance, trusted_ms: float | None, host_floor_ms: float | None, flops: float | None, peak: float | None
) -> bool:
    """Raise the ranked latency to the trusted clock's floor when the candidate process reported less; True when
    it did. The in-process median stays in `in_process_latency_ms`; `latency_from` says which figure ranks."""
    floor = trusted_floor_ms(trusted_ms, host_floor_ms)
    perf.in_process_latency_ms = perf.latency_ms
    perf.latency_from = LATENCY_FROM_CANDIDATE_TIMER
    if floor is None or not perf.latency_ms or perf.latency_ms >= floor:
        return False
    _replace_latency(perf, floor, flops, peak)
    perf.latency_from = LATENCY_FROM_TRUSTED_BOUND
    return True


def use_trusted_latency(perf: Performance, trusted_ms: float | None, flops: float | None, peak: float | None) -> None:
    """The slower, outside figure replaces the candidate process's median (an integrity hold asked for it)."""
    if not trusted_ms or not perf.latency_ms:
        return
    if perf.in_process_latency_ms is None:
        perf.in_process_latency_ms = perf.latency_ms
    _replace_latency(perf, trusted_ms, flops, peak)
    perf.latency_from = LATENCY_FROM_TRUSTED_CLOCK


def rank_by_trusted_clock(
    perf: Performance, latency_ms: float | None, baseline_ms: float | None, flops: float | None, peak: float | None
) -> None:
    """The parent's clock over lent batches ranks both sides (evaluator/lent_batches.py): the candidate's and the
    library's per-call times replace the in-process medians, which stay as hints (`in_process_latency_ms`, the
    `candidate` and `reference` series); the speedup's interval is the in-process one, scaled."""
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


def _replace_latency(perf: Performance, latency_ms: float, flops: float | None, peak: float | None) -> None:
    assert perf.latency_ms
    factor = perf.latency_ms / latency_ms
    perf.latency_ms = latency_ms
    if perf.speedup_factor is not None:
        perf.speedup_factor *= factor
    if perf.speedup_ci95 is not None:
        perf.speedup_ci95 = [x * factor for x in perf.speedup_ci95]
    if flops:
        perf.tflops = flops / (latency_ms * 1e-3) / 1e12
        perf.fraction_of_peak = perf.tflops / peak if peak else None


def _mean(values: list[int]) -> float:
    return sum(values) / len(values) if values else 0.0
