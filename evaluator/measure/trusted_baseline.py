"""The library baseline, measured where no submission code runs (the denominator is trusted).

A speedup divides the library's time by the candidate's. When the library was timed inside the candidate's own
process, a payload there could slow it (a 1.81x "speedup" for an unchanged 0.91x kernel). Now, for each timed
workload, the parent first starts a process of the same shape as a candidate process (same job file layout,
same sandbox, CUDA context, CUPTI timer, lent slots) that loads no submission code and serves the task's library
baseline in place of `run` (`protocol.BASELINE_MODE`, evaluator/candidate_process/child.py). The parent drives it
through the same rounds the candidate will get (evaluator/measure/lent_calls.py: the same seeds, so the same inputs,
drawn by the parent after its clock starts): timed calls, then back-to-back batches on the parent's clock, which
rank the library as they rank the candidate. The candidate's process for that workload starts beside it and sets
itself up, but loads the submission only once this process was timed and is gone (`standby`, then `load`:
evaluator/both_sides/protocol.py), and the previous workload's was killed: nothing the candidate does can reach it.

Its batches also give the drawing time both sides' ranked figures leave out, and the host floor: the ranked time
per call minus the library's in-process GPU time, the cost of a Python-driven call on this host at this moment.
The check of the candidate's own timer against the parent's clock scales its slack with it, so a busy host does
not hold an honest small kernel.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evaluator.both_sides import protocol
from evaluator.both_sides.shared_outputs import SharedOutputs
from evaluator.checks.integrity import HOST_SLACK_MS
from evaluator.measure.batch_samples import draw_indices, output_numels
from evaluator.measure.lent_calls import InputDrawer, Lent, fastest_drawing_ms, ranked_ms

__all__ = ["FLOOR_FACTOR", "TrustedBaseline", "host_slack_ms", "measure"]

# The candidate's per-call host cost may be this many times the library call's before the excess counts as hidden
# work: a candidate's `run` may launch several kernels and allocate (the library: one call), but hidden host work
# measured in the corpus is 100x and more (docs/threat-model.md, class 3).
FLOOR_FACTOR = 3.0


@dataclass
class TrustedBaseline:
    series: dict[str, Any]  # {"samples_ms": [...], "activities": [...]}: the timing event's shape for one series
    median_ms: float  # the sampled timed calls' median (the library's in-process GPU time)
    drawing_ms: float  # the fastest batch's drawing time, which both sides' ranked times leave out
    ranked_ms: float | None  # the library's ranked time per call (the parent's clock over batches)
    host_floor_ms: float | None  # ranked_ms - median_ms, never below zero


def host_slack_ms(floor_ms: float | None) -> float:
    """The trusted-clock check's additive slack: the fixed minimum, or FLOOR_FACTOR host floors when larger."""
    if floor_ms is None:
        return HOST_SLACK_MS
    return max(HOST_SLACK_MS, FLOOR_FACTOR * floor_ms)


def measure(
    child: Any,
    expect: Callable[[Any, float, str], dict[str, Any]],
    *,
    shared: SharedOutputs,
    drawer: InputDrawer,
    seeds: Any,
    warm_rounds: int,
    deadline: float,
) -> TrustedBaseline:
    """Drive a started baseline process (READY already received) through the candidate's rounds (`seeds`, an
    evaluator.measure.candidate.Seeds): its timed rounds, then its batches, each capturing one call as the candidate's do."""
    lent = Lent(child, expect, deadline, shared, drawer)
    for r, calls in enumerate(seeds.timed):
        lent.round(protocol.TIMED_ROUND, calls, sampled=r >= warm_rounds)
    # The candidate's batches take sampled elements of every call before the clock stops: these pay the same gather.
    numels = output_numels(drawer.definition, drawer.workload)
    batches = [
        lent.round(protocol.BATCH_ROUND, calls, [b % len(calls)], sample_at=draw_indices(numels))
        for b, calls in enumerate(seeds.batches)
    ]
    for batch in batches:
        batch.captured.clear()
        batch.samples.clear()
    child.send(protocol.finish_command())
    msg = protocol.check_timing(expect(child, deadline, protocol.TIMED))
    child.send(protocol.exit_command())
    protocol.check_bye(expect(child, deadline, protocol.BYE), child.received)
    series = msg["series"]["candidate"]
    median = statistics.median(series["samples_ms"]) if series["samples_ms"] else 0.0
    drawing = fastest_drawing_ms(batches)
    ranked = ranked_ms(batches, drawing)
    floor = max(0.0, ranked - median) if ranked is not None else None
    return TrustedBaseline(series, median, drawing, ranked, floor)
