"""Every call of a ranked batch is checked on sampled elements, not one call a batch in full.

Only batches rank (evaluator/measure/lent_calls.py), and a batch's full comparison covers one call, chosen by the
parent. A candidate that skips, or approximates, a fraction f of a batch's calls would otherwise escape with
probability 1 - f and rank faster by 1 / (1 - f); the fastest batch ranks, so one such batch is enough. So with the
one call compared in full, the parent takes `SAMPLED_ELEMENTS` elements of every output of every call of the batch
before its clock stops (one gather per output: the same in the trusted baseline's rounds, which pay it alike) and
compares them with the reference's elements at the same places. The places are drawn afresh for each batch with the
parent's own randomness and never leave it, so a call is only safe to leave wrong where it is right.

A call left unwritten keeps the parent's poison and fails on any element; a call with wrong values fails unless all
its sampled elements happen to fall where it is right. The element rule is the task's own, so an output that passes
in full passes on any sample; the relative-norm bound is `SAMPLE_NORM_FACTOR` times the task's, since a few hundred
elements only estimate the whole tensor's norm (`Checker.compare_samples`). The references of the sampled calls are
computed before the candidate process exists, as the others are, within `SAMPLE_BUDGET_S` a workload: where one
reference takes longer than that allows for every call, the calls checked are a random part of each batch, at least
`MIN_SAMPLED_CALLS`.
"""

from __future__ import annotations

import math
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from evaluator.both_sides.taskdata import Definition, Workload

SAMPLED_ELEMENTS = 512  # per output of a call; an output this small or smaller is taken whole
SAMPLE_NORM_FACTOR = 2.0
SAMPLE_BUDGET_S = 10.0  # the parent's time for the sampled calls' references, per workload
MIN_SAMPLED_CALLS = 4  # per batch, whatever the budget


def output_numels(definition: Definition, workload: Workload) -> list[int]:
    return [math.prod(definition.shape_of(spec, workload.axes)) for spec in definition.outputs]


def draw_indices(numels: Sequence[int]) -> list[Any]:
    """Per output, the flat indices of the elements to take: sorted, distinct, drawn with the system's randomness."""
    import torch

    rng = random.SystemRandom()
    return [
        torch.tensor(sorted(rng.sample(range(n), SAMPLED_ELEMENTS)) if n > SAMPLED_ELEMENTS else range(n))
        for n in numels
    ]


def sampled_references(
    reference: Callable[[int], tuple[Any, ...]],
    batches: Sequence[Sequence[int]],
    indices: Sequence[Sequence[Any]],
    skip: Sequence[int],
    budget_s: float = SAMPLE_BUDGET_S,
) -> dict[tuple[int, int], list[Any]]:
    """(batch, call) -> per output, the reference's elements at that batch's indices, for every call but `skip[b]`
    (compared in full), in a random order until `budget_s` is spent once each batch has `MIN_SAMPLED_CALLS`."""
    rng = random.SystemRandom()
    order = [[k for k in range(len(calls)) if k != skip[b]] for b, calls in enumerate(batches)]
    for calls in order:
        rng.shuffle(calls)
    # Round-robin over the batches, so that a budget cut leaves each batch about the same share.
    queue = [
        (b, calls[i]) for i in range(max(map(len, order), default=0)) for b, calls in enumerate(order) if i < len(calls)
    ]
    started = time.monotonic()
    refs: dict[tuple[int, int], list[Any]] = {}
    per_batch = Counter[int]()
    for b, k in queue:
        if per_batch[b] >= MIN_SAMPLED_CALLS and time.monotonic() - started > budget_s:
            continue
        outputs = reference(batches[b][k])
        refs[(b, k)] = [out.reshape(-1)[idx.to(out.device)].cpu() for out, idx in zip(outputs, indices[b], strict=True)]
        per_batch[b] += 1
    return refs
