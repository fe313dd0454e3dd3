"""Every call's inputs and outputs live in memory the trusted parent owns: it draws the inputs there and captures
the outputs before its clock stops (what is compared is what was timed, captured by the trusted side).

The parent creates one region of memory per candidate process (device memory lent by a POSIX file descriptor,
evaluator/both_sides/gpu_share.py, on a GPU; an anonymous shared file, memfd, on the CPU), cut into `slots`. Slot k holds
call k's tensor inputs, then its outputs: the candidate's `run` reads and writes the parent's memory directly
(evaluator/measure/lent_calls.py). When the candidate process reports a round done, the parent copies the chosen slots'
outputs into its own private tensors and only then stops its clock: whatever the candidate does before that copy
is timed, whatever it does after cannot change what is compared. No message says which call is compared, so
every call of a round must be right when the copy is taken.

The copy costs the parent 0.018 ms for 1 MB and 0.078 ms for 128 MB on the H200
(docs/runs/integrity/h200-2026-12-03/probe_cuda_ipc.log); the trusted baseline process goes through the same
rounds and captures, so both sides pay it alike.

The child maps the region (`open_slots`) from the descriptor it inherited; the layout comes in the job file.

Used on both sides of the trust boundary: the parent creates and reads the region (`SharedOutputs`), the candidate
process maps it (`open_slots`).
"""

from __future__ import annotations

import fcntl
import mmap
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evaluator.both_sides.inputs import poison

__all__ = ["SharedOutputs", "layout_of", "open_slots"]


def layout_of(torch: Any, outputs: list[Any]) -> tuple[list[dict[str, Any]], int]:
    """Where each output of one call sits in a slot (byte offsets aligned to 256), and the slot's size."""
    entries, offset = [], 0
    for t in outputs:
        nbytes = t.numel() * t.element_size()
        entries.append({"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch."), "offset": offset})
        offset += -(-max(nbytes, 1) // 256) * 256
    return entries, offset


def _views(torch: Any, base: Any, entries: list[dict[str, Any]], slot_bytes: int, slots: int) -> list[list[Any]]:
    """Per slot, the outputs as tensors over `base` (a flat uint8 tensor over the whole region)."""
    result = []
    for s in range(slots):
        views = []
        for e in entries:
            dtype = getattr(torch, e["dtype"])
            numel = 1
            for d in e["shape"]:
                numel *= d
            start = s * slot_bytes + e["offset"]
            nbytes = numel * torch.empty(0, dtype=dtype).element_size()
            views.append(base[start : start + nbytes].view(dtype).view(e["shape"]))
        result.append(views)
    return result


@dataclass
class SharedOutputs:
    """The parent's side: the region, its layout, and the parent's own views of every slot."""

    fd: int
    size: int
    slots: int
    slot_bytes: int
    entries: list[dict[str, Any]]
    device_type: str
    views: list[list[Any]]  # per slot: its lent inputs (the first `inputs`), then its outputs
    torch: Any
    _keep: Any  # the region's owner (gpu_share.SharedRegion or the mmap)
    inputs: int = 0
    base: Any = None  # the whole region as one flat uint8 tensor (the parent's)

    @classmethod
    def create(
        cls,
        torch: Any,
        outputs: list[Any],
        slots: int,
        device_type: str,
        device: int = 0,
        inputs: list[Any] | None = None,
    ) -> SharedOutputs:
        """A region for `slots` calls of outputs shaped like `outputs` (allocated, not used: their shapes count),
        and, when `inputs` is given, of tensor inputs shaped like those before them in each slot."""
        lent = list(inputs or [])
        entries, slot_bytes = layout_of(torch, lent + list(outputs))
        nbytes = max(slot_bytes * slots, 1)
        if device_type == "cuda":
            from evaluator.both_sides.gpu_share import SharedRegion, tensor_view

            region = SharedRegion.create(nbytes, device)
            base = tensor_view(torch, region, 0, [region.size], "uint8")
            return cls(
                region.fd,
                region.size,
                slots,
                slot_bytes,
                entries,
                device_type,
                _views(torch, base, entries, slot_bytes, slots),
                torch,
                region,
                len(lent),
                base,
            )
        fd = os.memfd_create("ptxbench-outputs", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(fd, nbytes)
        # Its size is fixed from here on: a candidate that reached the file (through /proc, unsandboxed) and shrank
        # it would make this process's reads of the mapping fault (SIGBUS) instead of reading its outputs.
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        mapped = mmap.mmap(fd, nbytes, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        base = torch.frombuffer(mapped, dtype=torch.uint8)
        return cls(
            fd,
            nbytes,
            slots,
            slot_bytes,
            entries,
            device_type,
            _views(torch, base, entries, slot_bytes, slots),
            torch,
            mapped,
            len(lent),
            base,
        )

    def job_entry(self) -> dict[str, Any]:
        """What the child needs to map the same slots (the descriptor number is the one it inherits)."""
        return {
            "fd": self.fd,
            "size": self.size,
            "slots": self.slots,
            "slot_bytes": self.slot_bytes,
            "outputs": self.entries,
            "inputs": self.inputs,
        }

    def inputs_of(self, slot: int) -> list[Any]:
        return self.views[slot][: self.inputs]

    def outputs_of(self, slot: int) -> list[Any]:
        return self.views[slot][self.inputs :]

    def poison(self, slots: int | None = None) -> None:
        """The outputs of the first `slots` slots (default: all) poisoned by the parent itself before a round
        starts (NaN, or the integer maximum); returns once that is done on the device."""
        for slot in range(len(self.views) if slots is None else min(slots, len(self.views))):
            for t in self.outputs_of(slot):
                poison(t)
        self._sync()

    def sample_plan(self, slots: int, indices: Sequence[Any]) -> list[tuple[Any, Any]]:
        """For a round of `slots` calls: per output, the region seen as that output's dtype and the positions there
        of the elements `indices` names (flat indices within one output, a tensor per output) in every slot. Made
        before the parent's clock starts, so that taking the samples costs one gather per output inside it."""
        torch, plan = self.torch, []
        for entry, idx in zip(self.entries[self.inputs :], indices, strict=True):
            dtype = getattr(torch, entry["dtype"])
            size = torch.empty(0, dtype=dtype).element_size()
            typed = self.base.view(dtype)
            starts = torch.arange(slots, dtype=torch.int64) * (self.slot_bytes // size) + entry["offset"] // size
            plan.append((typed, (starts[:, None] + idx.to(torch.int64)[None, :]).to(typed.device)))
        return plan

    def take_samples(self, plan: list[tuple[Any, Any]]) -> list[Any]:
        """Per output, the sampled elements of every slot ([slots, samples]), copied into the parent's private
        memory; queued on the device, complete once the next capture (or `sync`) returns."""
        return [typed[positions] for typed, positions in plan]

    def capture_slots(self, slots: Sequence[int], *, inputs: bool = False) -> dict[int, list[Any]]:
        """The outputs (with `inputs`, the lent inputs) of each slot in `slots`, copied into the parent's private
        memory; returns once every copy is complete."""
        copies = {s: [t.clone() for t in (self.inputs_of(s) if inputs else self.outputs_of(s))] for s in slots}
        self._sync()
        return copies

    def sync(self) -> None:
        """Returns once everything this process queued on the region's device is done."""
        self._sync()

    def _sync(self) -> None:
        if self.device_type == "cuda":
            self.torch.cuda.synchronize(self.views[0][0].device if self.views and self.views[0] else None)

    def close(self) -> None:
        self.views = []
        keep, self._keep = self._keep, None
        if keep is None:
            return
        if self.device_type == "cuda":
            keep.close()  # closes the descriptor too
        else:
            try:
                keep.close()
            except BufferError:  # a tensor view still exports the buffer: the mapping goes with the last reference
                pass
            os.close(self.fd)
        self.fd = -1


def open_slots(torch: Any, entry: dict[str, Any], device_type: str, device: int = 0) -> tuple[list[list[Any]], Any]:
    """The child's side: per slot, its tensors over the parent's region (the first `entry["inputs"]` are lent
    inputs, the rest outputs), and the object that keeps the mapping alive."""
    fd, size = int(entry["fd"]), int(entry["size"])
    slots, slot_bytes, entries = int(entry["slots"]), int(entry["slot_bytes"]), list(entry["outputs"])
    if device_type == "cuda":
        from evaluator.both_sides.gpu_share import SharedRegion, tensor_view

        region = SharedRegion.open(fd, size, device)
        base = tensor_view(torch, region, 0, [size], "uint8")
        return _views(torch, base, entries, slot_bytes, slots), region
    mapped = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    os.close(fd)
    return _views(torch, torch.frombuffer(mapped, dtype=torch.uint8), entries, slot_bytes, slots), mapped
