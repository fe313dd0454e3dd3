"""The library baseline, measured where no submission code runs (the denominator is trusted).

A speedup divides the library's time by the candidate's. When the library was timed inside the candidate's own
process, a payload there could slow it (a 1.81x "speedup" for an unchanged 0.91x kernel). Now, for each timed
workload, the parent first starts a process of the same shape as a candidate process (same job file layout,
same sandbox, CUDA context, CUPTI timer, L2 flush and input machinery) that loads no submission code and serves
the task's library baseline in place of `run` (`protocol.BASELINE_MODE`, evaluator/candidate_process/child.py).
The parent drives it through the same warm-up, timed calls (same per-call seeds, so the same inputs the candidate
will get) and back-to-back batches timed with its own clock. It runs before the candidate's process for that
workload exists, after the previous one was killed, so nothing the candidate does can reach it.

The batches also give the host floor: the trusted process's wall clock per call minus the library's GPU time, the
cost of a Python-driven call on this host at this moment. The trusted-clock check scales its slack with it, so a
busy host does not hold an honest small kernel (the 0.171 ms outside vs 0.055 ms CUPTI false hold).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evaluator import protocol
from evaluator.integrity import HOST_SLACK_MS
from evaluator.lent_batches import InputDrawer, LentBatch, fastest_drawing_ms, lent_batch, ranked_ms

__all__ = ["FLOOR_FACTOR", "TrustedBaseline", "host_slack_ms", "measure"]

# The candidate's per-call host cost may be this many times the library call's before the excess counts as hidden
# work: a candidate's `run` may launch several kernels and allocate (the library: one call), but hidden host work
# measured in the corpus is 100x and more (docs/threat-model.md, class 3).
FLOOR_FACTOR = 3.0


@dataclass
class TrustedBaseline:
    series: dict[str, Any]  # {"samples_ms": [...], "activities": [...]}: the timing event's shape for one series
    median_ms: float  # the timed calls' median (warm-up left out)
    batch_ms: float | None  # the parent's clock per call over the fastest batch
    host_floor_ms: float | None  # batch_ms - median_ms, never below zero
    # With lent inputs (evaluator/lent_batches.py): the time one batch's inputs took to draw, which both sides'
    # ranked times leave out, and the library's ranked time per call.
    drawing_ms: float | None = None
    ranked_ms: float | None = None


def host_slack_ms(floor_ms: float | None) -> float:
    """The trusted-clock check's additive slack: the fixed minimum, or FLOOR_FACTOR host floors when larger."""
    if floor_ms is None:
        return HOST_SLACK_MS
    return max(HOST_SLACK_MS, FLOOR_FACTOR * floor_ms)


def measure(
    child: Any,
    expect: Callable[[Any, float, str], dict[str, Any]],
    *,
    call_seeds: list[int],
    recheck_seed: int,
    batches: list[list[int]],
    warmup: int,
    iters: int,
    sets: int,
    deadline: float,
    shared: Any = None,
    drawer: InputDrawer | None = None,
) -> TrustedBaseline:
    """Drive a started baseline process (READY already received) through the candidate's call schedule. With
    `drawer`, the batches run on inputs the parent draws into `shared` after its clock starts."""
    child.send(protocol.timing_command(call_seeds, recheck_seed, warmup, iters, sets))
    total = warmup + iters
    for i in range(warmup, total + 1):
        protocol.check_index(expect(child, deadline, protocol.CALLED), i)
        child.send(protocol.next_command())
    batch_ms: list[float] = []
    lent: list[LentBatch] = []
    for r, batch in enumerate(batches):
        if drawer is not None and shared is not None:
            lent.append(lent_batch(child, expect, deadline, r, batch, shared, drawer, r % len(batch)))
            lent[-1].captured.clear()
            continue
        child.send(protocol.batch_command(r, batch))
        protocol.check_round(expect(child, deadline, protocol.BATCH_READY), r)
        if shared is not None:
            shared.poison()
        t0 = time.perf_counter()
        child.send(protocol.go_command())
        protocol.check_round(expect(child, deadline, protocol.BATCH_DONE), r)
        if shared is not None:  # the same capture the candidate's batches end with, so the floor includes it
            shared.capture(r % len(batch))
        batch_ms.append((time.perf_counter() - t0) * 1e3 / len(batch))
        child.send(protocol.next_command())
    child.send(protocol.finish_command())
    msg = protocol.check_timing(expect(child, deadline, protocol.TIMED))
    child.send(protocol.exit_command())
    protocol.check_bye(expect(child, deadline, protocol.BYE), child.received)
    series = msg["series"]["candidate"]
    median = statistics.median(series["samples_ms"])  # the timed calls only: warm-up calls are not sampled
    drawing = fastest_drawing_ms(lent) if lent else None
    ranked = ranked_ms(lent, drawing or 0.0)
    fastest = ranked if lent else (min(batch_ms) if batch_ms else None)
    floor = max(0.0, fastest - median) if fastest is not None else None
    return TrustedBaseline(series, median, fastest, floor, drawing_ms=drawing, ranked_ms=ranked)
