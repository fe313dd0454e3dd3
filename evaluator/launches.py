"""One kernel launch, the same record wherever it is seen: a CUPTI activity record in the candidate process
(evaluator/timing.py), the wire between that process and the parent (evaluator/protocol.py), Nsight Compute's
raw page (evaluator/ncu.py), and the profiled-vs-timed comparison (evaluator/integrity.py). A named tuple: equal
and hashable by value (launches are compared as multisets) and unpacked as (name, grid, block)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

Dims = tuple[int, int, int]


class Launch(NamedTuple):
    name: str  # mangled name
    grid: Dims
    block: Dims


def dims3(values: Iterable[object]) -> Dims:
    """(x, y, z) as three ints; ValueError for anything else."""
    x, y, z = (int(v) for v in values)  # type: ignore[call-overload]
    return (x, y, z)
