"""The CPU form of the parent-owned batch outputs (evaluator/both_sides/shared_outputs.py): the child's views and the parent's
are the same bytes, the parent's capture is a private copy, and the region cannot be resized by whoever holds it."""

from __future__ import annotations

import os

import pytest
import torch

from evaluator.both_sides.shared_outputs import SharedOutputs, open_slots


def test_the_parent_captures_what_the_child_wrote_and_keeps_its_own_copy():
    outputs = [torch.empty(3, 4, dtype=torch.float32), torch.empty(5, dtype=torch.int32)]
    shared = SharedOutputs.create(torch, outputs, 2, "cpu")
    try:
        shared.poison()
        child_fd = os.dup(shared.fd)  # what the child inherits
        slots, _keep = open_slots(torch, {**shared.job_entry(), "fd": child_fd}, "cpu")
        assert [list(t.shape) for t in slots[1]] == [[3, 4], [5]]
        assert torch.isnan(shared.views[1][0]).all()  # poisoned by the parent
        slots[1][0].fill_(2.5)
        slots[1][1].fill_(7)
        captured = shared.capture_slots([1])[1]
        assert torch.equal(captured[0], torch.full((3, 4), 2.5)) and torch.equal(
            captured[1], torch.full((5,), 7, dtype=torch.int32)
        )
        slots[1][0].fill_(-1.0)  # written after the capture: changes nothing captured
        assert torch.equal(captured[0], torch.full((3, 4), 2.5))
        assert torch.isnan(shared.views[0][0]).all()  # the other slot untouched
    finally:
        shared.close()


def test_the_region_cannot_be_shrunk_or_grown():
    """Mutation caught: the memfd without its seals; a candidate that reached it and shrank it would make the
    parent's capture fault (SIGBUS) instead of reading outputs."""
    shared = SharedOutputs.create(torch, [torch.empty(1024, dtype=torch.float32)], 4, "cpu")
    try:
        for size in (0, shared.size * 2):
            with pytest.raises(PermissionError):
                os.ftruncate(shared.fd, size)
        assert shared.capture_slots([3])[3][0].numel() == 1024
    finally:
        shared.close()
