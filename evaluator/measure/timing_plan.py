"""The plan of one workload's calls, decided in the trusted parent before its candidate process exists: each call's
seed (derived from the run seed, which never leaves the parent), the rounds the calls are grouped in, and which calls
the parent compares. Pure: no GPU, no processes. The rounds themselves run in evaluator/measure/candidate.py on the slots
of evaluator/measure/lent_calls.py.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluator.both_sides.inputs import derive_seed
from evaluator.checks.integrity import CHECK_FRACTION, CheckChooser
from evaluator.measure.batch_samples import draw_indices


@dataclass
class Seeds:
    """The per-call seeds of one workload, derived from the run seed (which stays in the pipeline). The parent draws
    each call's inputs from its seed into the slots it lends (evaluator/measure/lent_calls.py): no seed leaves this side."""

    trials: list[int]  # one correctness trial each
    timed: list[list[int]] = field(default_factory=list)  # per round of timed calls (warm-up rounds first)
    batches: list[list[int]] = field(default_factory=list)  # the back-to-back batches the parent's clock ranks


@dataclass
class TimingPlan:
    """Which calls the parent compares, drawn here with the parent's own randomness; the candidate process learns
    nothing of it (every call of a round stays in the parent's memory until the round's capture)."""

    checked: set[tuple[int, int]]  # (timed round, call) of sampled timed rounds
    batch_checked: list[int]  # per batch, the call whose outputs are compared in full
    # Per batch, per output: the flat indices of the elements taken from every call (evaluator/measure/batch_samples.py)
    batch_indices: list[list[Any]] = field(default_factory=list)

    @classmethod
    def draw(
        cls, seeds: Seeds, warm_rounds: int, fraction: float, cap: int, output_numels: Sequence[int] = ()
    ) -> TimingPlan:
        chooser = CheckChooser(fraction)
        chosen = [(r, j) for r in range(warm_rounds, len(seeds.timed)) for j in range(len(seeds.timed[r]))]
        chosen = [c for c in chosen if chooser.check()]
        rng = random.SystemRandom()
        if len(chosen) > cap:
            chosen = rng.sample(chosen, cap)
        indices = [draw_indices(output_numels) for _ in seeds.batches] if output_numels else []
        return cls(set(chosen), [rng.randrange(len(b)) for b in seeds.batches], indices)


@dataclass
class TimingRequest:
    """How to time a workload, and what turning the timings into performance needs from this host."""

    warmup: int  # warm-up calls (not sampled)
    iters: int  # sampled timed calls
    peak_tflops: float | None = None  # the GPU's datasheet dense tensor peak for the task's dtype
    gpu_uuid: str | None = None  # for the SM clock before and after
    round_calls: int = 3  # timed calls per round (each on its own lent slot)
    check_fraction: float = CHECK_FRACTION  # of timed calls, compared with the reference
    max_checked: int = 32  # at most this many timed calls compared (their references are held in memory)
    gpu_name: str | None = None  # names the datasheet limits every ranked figure is held against (default: asked)

    @property
    def warm_rounds(self) -> int:
        return len(_round_sizes(self.warmup, self.round_calls))

    def round_sizes(self) -> list[int]:
        """Calls per timed round, warm-up rounds first: `round_calls` each, the last of each part shorter."""
        return _round_sizes(self.warmup, self.round_calls) + _round_sizes(self.iters, self.round_calls)


def _round_sizes(calls: int, per: int) -> list[int]:
    per = max(1, per)
    return [min(per, calls - start) for start in range(0, calls, per)]


def derive_seeds(
    run_seed: bytes,
    workload: str,
    *,
    trials: int,
    timed_rounds: list[int] | None = None,
    batches: int = 0,
    batch_calls: int = 0,
) -> Seeds:
    """The per-call seeds of one workload, derived from the run seed (which never leaves the trusted parent);
    `timed_rounds` lists the calls of each timed round."""
    return Seeds(
        trials=[derive_seed(run_seed, workload, "trial", k) for k in range(trials)],
        timed=[
            [derive_seed(run_seed, workload, f"timed{r}", k) for k in range(n)]
            for r, n in enumerate(timed_rounds or [])
        ],
        batches=[[derive_seed(run_seed, workload, f"batch{r}", k) for k in range(batch_calls)] for r in range(batches)],
    )


def seeds_for(
    run_seed: bytes, workload: str, trials: int, timing: TimingRequest | None, batches: int, batch_calls: int
) -> Seeds:
    """The seeds of one workload's calls as `timing` plans them (trials only when it is None)."""
    if timing is None:
        return derive_seeds(run_seed, workload, trials=trials)
    return derive_seeds(
        run_seed, workload, trials=trials, timed_rounds=timing.round_sizes(), batches=batches, batch_calls=batch_calls
    )


def slots_needed(seeds: Seeds) -> int:
    """The most calls any round of `seeds` makes: every call of a round has its own slot."""
    return max([1, *(len(r) for r in seeds.timed), *(len(b) for b in seeds.batches)])
