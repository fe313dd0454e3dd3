"""Timing statistics: summaries of a sample series and the bootstrap interval of a speedup. Pure functions.

Used on both sides of the trust boundary: the parent summarises samples here (evaluator/measure/performance.py), and the
candidate process's timer merges activity intervals with `merge_intervals` (evaluator/candidate_process/timing.py).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from evaluator.both_sides.verdict import TimingStats


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default method)."""
    if not values:
        raise ValueError("quantile of no values")
    data = sorted(values)
    pos = (len(data) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def summarize(samples_ms: Sequence[float], *, method: str, warmup: int, kernels_per_call: float = 0.0) -> TimingStats:
    if not samples_ms:
        raise ValueError("no timing samples")
    q25, med, q75 = (quantile(samples_ms, q) for q in (0.25, 0.5, 0.75))
    return TimingStats(
        method=method,
        n=len(samples_ms),
        median_ms=med,
        q25_ms=q25,
        q75_ms=q75,
        iqr_ms=q75 - q25,
        min_ms=min(samples_ms),
        max_ms=max(samples_ms),
        mean_ms=sum(samples_ms) / len(samples_ms),
        samples_ms=[float(s) for s in samples_ms],
        warmup=warmup,
        kernels_per_call=kernels_per_call,
    )


def bootstrap_speedup(
    baseline_ms: Sequence[float],
    candidate_ms: Sequence[float],
    *,
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of median(baseline) / median(candidate), resampling each series on its own.

    The seed is fixed so that the same samples always give the same interval.
    """
    if not baseline_ms or not candidate_ms:
        raise ValueError("bootstrap needs samples in both series")
    rng = random.Random(seed)
    ratios = []
    nb, nc = len(baseline_ms), len(candidate_ms)
    for _ in range(resamples):
        b = [baseline_ms[rng.randrange(nb)] for _ in range(nb)]
        c = [candidate_ms[rng.randrange(nc)] for _ in range(nc)]
        mc = quantile(c, 0.5)
        ratios.append(quantile(b, 0.5) / mc if mc > 0 else math.inf)
    alpha = (1.0 - confidence) / 2
    return quantile(ratios, alpha), quantile(ratios, 1.0 - alpha)


def merge_intervals(intervals: Sequence[tuple[int, int]]) -> int:
    """Total length covered by possibly overlapping [start, end) intervals (kernels on several streams)."""
    total = 0
    current: tuple[int, int] | None = None  # the interval being grown: (start, end)
    for start, end in sorted(intervals):
        if current is None or start > current[1]:
            if current is not None:
                total += current[1] - current[0]
            current = (start, end)
        else:
            current = (current[0], max(current[1], end))
    if current is not None:
        total += current[1] - current[0]
    return total
