"""Every call of a candidate process runs on inputs the parent draws after its clock has started.

A call's inputs must not exist where candidate code can read them before the trusted clock covers that call: a
payload could compute the outputs in such a window and copy them in while the call is timed. So the candidate
process is sent no seed at all. The parent works in rounds (one for each correctness trial, rounds of timed calls,
back-to-back batches); for each it tells the candidate process how many calls come, waits until it is idle, starts
its clock, draws every call's tensor inputs into the slots it lends (evaluator/both_sides/shared_outputs.py), poisons their
outputs, evicts L2 with a write of its own (each call then reads its inputs cold, on both sides alike), waits for
the device, says `go`, and stops the clock when it holds the outputs it compares. Whatever the candidate process
does from the moment a slot is written until that capture is inside the span.

Only batches rank: back-to-back calls, each on its own slot, no synchronisation between them; besides the call it
copies whole, the parent takes sampled elements of every call's outputs before its clock stops
(evaluator/measure/batch_samples.py). The ranked time per
call is the batch's span less the drawing time the parent measured the same way in the trusted baseline's process,
where no candidate code runs: a candidate that works while the parent draws slows the drawing and pays for it.
The library baseline is ranked through the same rounds (evaluator/measure/trusted_baseline.py).

Parent side only: the candidate process maps the slots and answers the rounds (evaluator/candidate_process/child.py).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluator.both_sides import protocol
from evaluator.both_sides.inputs import make_inputs
from evaluator.both_sides.shared_outputs import SharedOutputs
from evaluator.both_sides.taskdata import Definition, Workload
from evaluator.checks.physical_limits import PhysicalLimits

Expect = Callable[[Any, float, str], dict[str, Any]]

# Batch length: enough calls that a batch's GPU time is about BATCH_TARGET_MS at the workload's physical limit (a real
# kernel takes longer), so the per-batch cost of messages and the capture spreads thin; between BATCH_MIN_CALLS and
# BATCH_MAX_CALLS.
BATCH_TARGET_MS = 10.0
BATCH_MIN_CALLS = 16
BATCH_MAX_CALLS = 64
# Every call of a round has its own slot (its inputs and outputs), and one process's slots hold at most
# LEND_MEMORY_BYTES: batches and timed rounds alike are cut to what fits (one call at least). Two such regions exist
# at once (the candidate's process sets itself up while the trusted baseline's is timed), beside the parent's
# references and captures: two take at most 32 GiB of an 80 GB card, the rest left to those.
LEND_MEMORY_BYTES = 16 * 1024**3


@dataclass
class LentRound:
    """One round as the parent's clock saw it."""

    kind: str  # protocol.TRIAL_ROUND, TIMED_ROUND or BATCH_ROUND
    calls: int
    total_ms: float  # from the clock's start (before drawing) until the compared outputs are in hand
    drawing_ms: float  # the part spent drawing the inputs, evicting L2 and waiting for the device
    captured: dict[int, list[Any]] = field(default_factory=dict)  # slot -> its outputs, copied by the parent
    drawn: list[list[Any]] = field(default_factory=list)  # with keep_inputs: per slot, the inputs as drawn
    left: dict[int, list[Any]] = field(default_factory=dict)  # with keep_inputs: captured slots' inputs after the calls
    # With `sample_at`: per output, those elements of every slot ([calls, samples]), taken before the clock stopped
    samples: list[Any] = field(default_factory=list)


def ranked_ms(batches: list[LentRound], drawing_ms: float) -> float | None:
    """The fastest batch's time per call, less the drawing time: `drawing_ms` (one batch's drawing time measured in
    the trusted baseline's process) or the batch's own, whichever is shorter; None without batches.

    A candidate can only lengthen its own drawing (by working beside it), which the baseline's figure then caps; the
    batch's own figure caps a baseline figure that noise made longer than this drawing, which would otherwise eat
    into the calls' time (down to zero on a host where a call takes microseconds)."""
    if not batches:
        return None
    return min(max(0.0, b.total_ms - min(b.drawing_ms, drawing_ms)) / b.calls for b in batches)


def fastest_drawing_ms(batches: list[LentRound]) -> float:
    return min((b.drawing_ms for b in batches), default=0.0)


def calls_that_fit(limits: PhysicalLimits) -> int:
    """How many calls' inputs and outputs LEND_MEMORY_BYTES holds for a workload (one at least)."""
    return max(1, LEND_MEMORY_BYTES // max(limits.io_bytes, 1))


def batch_length(limits: PhysicalLimits, flops: float | None, requested: int | None = None) -> int:
    """Calls per batch for a workload: `requested` when given, else from its physical limit (module constants);
    never more than calls_that_fit."""
    calls = requested or BATCH_MIN_CALLS
    if requested is None:
        least = [t for t in (limits.min_ms, _compute_ms(flops, limits.peak_tflops)) if t]
        if least:
            calls = math.ceil(BATCH_TARGET_MS / max(least))
        calls = min(BATCH_MAX_CALLS, max(BATCH_MIN_CALLS, calls))
    return round_length(limits, calls)


def round_length(limits: PhysicalLimits, requested: int) -> int:
    """Calls that share one lent region (a timed round, a batch): `requested`, never more than calls_that_fit."""
    return max(1, min(requested, calls_that_fit(limits)))


def _compute_ms(flops: float | None, peak_tflops: float | None) -> float | None:
    return flops / (peak_tflops * 1e12) * 1e3 if flops and peak_tflops else None


class InputDrawer:
    """Draws a call's tensor inputs from its seed into lent slots, on the parent's device, and evicts L2."""

    def __init__(self, torch: Any, definition: Definition, workload: Workload, device: Any, derive: Any) -> None:
        self.torch, self.definition, self.workload, self.derive = torch, definition, workload, derive
        self.device = torch.device(device) if isinstance(device, str) else device
        self._evict: Any = None
        if self.device.type == "cuda":
            props = torch.cuda.get_device_properties(self.device)
            l2 = int(getattr(props, "L2_cache_size", 0) or 64 * 1024 * 1024)
            self._evict = torch.empty(2 * l2 // 4 + 1024, dtype=torch.int32, device=self.device)

    def draw(self, seed: int, into: list[Any]) -> list[Any]:
        """The call's tensor inputs drawn from `seed`, copied into `into`; returns the drawn tensors (the
        parent's own, which candidate code never sees)."""
        values = make_inputs(self.definition, self.workload, seed, device=str(self.device), derive=self.derive)
        tensors = [v for v in values if isinstance(v, self.torch.Tensor)]
        if len(tensors) != len(into):
            raise RuntimeError(f"{len(tensors)} tensor inputs drawn for {len(into)} lent slots")
        for dst, src in zip(into, tensors, strict=True):
            dst.copy_(src)
        return tensors

    def evict_l2(self) -> None:
        if self._evict is not None:
            self._evict.zero_()


def lent_round(
    child: Any,
    expect: Expect,
    deadline: float,
    round_: int,
    kind: str,
    seeds: Sequence[int],
    shared: SharedOutputs,
    drawer: InputDrawer,
    capture: Sequence[int] = (),
    *,
    sampled: bool = True,
    keep_inputs: bool = False,
    sample_at: Sequence[Any] = (),
) -> LentRound:
    """One round: the command, the parent's clock around drawing, the calls and the capture of `capture`'s slots.
    With `keep_inputs`, the drawn inputs are kept (the caller checks the lent ones were left unchanged). With
    `sample_at` (per output, flat element indices), those elements of every slot are taken with the capture."""
    if len(seeds) > shared.slots:
        raise RuntimeError(f"a round of {len(seeds)} calls and {shared.slots} lent slots")
    plan = shared.sample_plan(len(seeds), sample_at) if sample_at else []
    child.send(protocol.round_command(round_, kind, len(seeds), sampled=sampled))
    protocol.check_round(expect(child, deadline, protocol.ROUND_READY), round_)
    shared.poison(len(seeds))
    t0 = time.perf_counter()
    drawn = [drawer.draw(seed, shared.inputs_of(k)) for k, seed in enumerate(seeds)]
    drawer.evict_l2()
    shared.sync()
    ready = time.perf_counter()
    child.send(protocol.go_command())
    protocol.check_round(expect(child, deadline, protocol.ROUND_DONE), round_)
    taken = shared.take_samples(plan)  # complete once the capture returns
    captured = shared.capture_slots(capture)
    done = time.perf_counter()
    left = shared.capture_slots(capture, inputs=True) if keep_inputs else {}
    child.send(protocol.next_command())
    return LentRound(
        kind,
        len(seeds),
        (done - t0) * 1e3,
        (ready - t0) * 1e3,
        captured,
        drawn if keep_inputs else [],
        left,
        taken,
    )


@dataclass
class Lent:
    """One process's rounds on its lent slots, numbered in order: the candidate's and the trusted baseline's alike."""

    child: Any
    expect: Expect
    deadline: float
    shared: SharedOutputs
    drawer: InputDrawer
    numbers: Iterator[int] = field(default_factory=itertools.count)

    def round(
        self,
        kind: str,
        seeds: Sequence[int],
        capture: Sequence[int] = (),
        *,
        sampled: bool = True,
        keep_inputs: bool = False,
        sample_at: Sequence[Any] = (),
    ) -> LentRound:
        return lent_round(
            self.child,
            self.expect,
            self.deadline,
            next(self.numbers),
            kind,
            seeds,
            self.shared,
            self.drawer,
            capture,
            sampled=sampled,
            keep_inputs=keep_inputs,
            sample_at=sample_at,
        )


def lent_input_shapes(torch: Any, definition: Definition, workload: Workload) -> list[Any]:
    """Meta tensors shaped as the call's tensor inputs, in definition order (scalars are not lent)."""
    from evaluator.both_sides.inputs import scalar_input, torch_dtype

    return [
        torch.empty(definition.shape_of(spec, workload.axes), dtype=torch_dtype(spec.dtype), device="meta")
        for spec in definition.inputs
        if scalar_input(spec, workload) is None
    ]
