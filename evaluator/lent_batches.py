"""Batches whose inputs the parent draws itself, after its clock has started.

A batch call's inputs used to be drawn in the candidate process from seeds it was sent, before the parent's
clock started: a payload could compute the outputs in that window and copy them in during the call. Here the
parent starts its clock, draws every call's tensor inputs into the slots it lends (evaluator/shared_outputs.py),
evicts L2 with a write of its own (every call then reads its inputs cold, on both sides alike), waits for the
device, and only then says `go`; it stops the clock when it holds the compared call's outputs. The candidate
process is sent no seed. The ranked time per call is that span less the drawing time the parent measured the
same way in the trusted baseline's process, where no candidate runs (`ranked_ms`): the candidate pays for any
work it does while the parent draws.

Enabled by `TimingRequest.trusted_ranking` (EVALUATOR_TRUSTED_RANKING=1) until its figures are measured on the
H200; the default path draws batch inputs in the candidate process and bounds its timer with the parent's clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evaluator import protocol
from evaluator.inputs import make_inputs
from evaluator.shared_outputs import SharedOutputs
from evaluator.taskdata import Definition, Workload

TRUSTED_RANKING_FLAG = "EVALUATOR_TRUSTED_RANKING"
Expect = Callable[[Any, float, str], dict[str, Any]]


@dataclass
class LentBatch:
    """One lent batch as the parent's clock saw it."""

    calls: int
    total_ms: float  # from the clock's start (before drawing) to the compared call's outputs in hand
    drawing_ms: float  # the part spent drawing the inputs, evicting L2 and waiting for the device
    captured: list[Any]  # the compared call's outputs, copied by the parent


def ranked_ms(batches: list[LentBatch], drawing_ms: float) -> float | None:
    """The fastest batch's time per call less `drawing_ms` (the drawing time of one batch measured in the
    trusted baseline's process), never below zero; None without batches."""
    if not batches:
        return None
    return min(max(0.0, b.total_ms - drawing_ms) / b.calls for b in batches)


def fastest_drawing_ms(batches: list[LentBatch]) -> float:
    return min((b.drawing_ms for b in batches), default=0.0)


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

    def draw(self, seed: int, into: list[Any]) -> None:
        values = make_inputs(self.definition, self.workload, seed, device=str(self.device), derive=self.derive)
        tensors = [v for v in values if isinstance(v, self.torch.Tensor)]
        if len(tensors) != len(into):
            raise RuntimeError(f"{len(tensors)} tensor inputs drawn for {len(into)} lent slots")
        for dst, src in zip(into, tensors, strict=True):
            dst.copy_(src)

    def evict_l2(self) -> None:
        if self._evict is not None:
            self._evict.zero_()


def lent_batch(
    child: Any,
    expect: Expect,
    deadline: float,
    round_: int,
    seeds: list[int],
    shared: SharedOutputs,
    drawer: InputDrawer,
    compared: int,
) -> LentBatch:
    """One batch on lent inputs: the command, the parent's clock around drawing, the calls and the capture."""
    child.send(protocol.lent_batch_command(round_, len(seeds)))
    protocol.check_round(expect(child, deadline, protocol.BATCH_READY), round_)
    shared.poison()
    t0 = time.perf_counter()
    for k, seed in enumerate(seeds):
        drawer.draw(seed, shared.inputs_of(k))
    drawer.evict_l2()
    shared.sync()
    drawn = time.perf_counter()
    child.send(protocol.go_command())
    protocol.check_round(expect(child, deadline, protocol.BATCH_DONE), round_)
    captured = shared.capture(compared)
    done = time.perf_counter()
    child.send(protocol.next_command())
    return LentBatch(len(seeds), (done - t0) * 1e3, (drawn - t0) * 1e3, captured)


def lent_input_shapes(torch: Any, definition: Definition, workload: Workload) -> list[Any]:
    """Meta tensors shaped as the call's tensor inputs, in definition order (scalars are not lent)."""
    from evaluator.inputs import scalar_input, torch_dtype

    return [
        torch.empty(definition.shape_of(spec, workload.axes), dtype=torch_dtype(spec.dtype), device="meta")
        for spec in definition.inputs
        if scalar_input(spec, workload) is None
    ]
