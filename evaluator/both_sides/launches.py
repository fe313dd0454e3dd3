"""One kernel launch, the same record wherever it is seen: a CUPTI activity record in the candidate process
(evaluator/candidate_process/timing.py), the wire between that process and the parent (evaluator/both_sides/protocol.py),
Nsight Compute's raw page (evaluator/arch_check/ncu.py), and the profiled-vs-timed comparison (evaluator/checks/integrity.py). A
named tuple: equal and hashable by value (launches are compared as multisets) and unpacked as (name, grid, block).

Used on both sides of the trust boundary: the candidate process's timer builds these records, the parent parses
what it is sent back into them (evaluator/both_sides/protocol.py) and trusts none of them without a cross-check.
"""

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
