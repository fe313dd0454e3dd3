"""Pure ranking rules, the one place every front end asks: who ranks, in which order, how rates,
means and sort keys work. Selectors build the records from the database; pages, the JSON API, CSV
downloads and charts all read what these functions return."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from evaluator.arches import ARCHES

TURN_LIMITS = (1, 4, 8)  # the k a model leaderboard can be read at


# --------------------------------------------------------------------------- kernels


@dataclass(frozen=True)
class KernelRow:
    """One correct, visible evaluation of a kernel (or an expert reference) on one task and architecture."""

    evaluation_id: str
    submission_id: int
    name: str  # the submission's label (file or solution name); hostile text, escaped on output
    submitter: str  # user name, or "" for reference kernels
    is_reference: bool
    source_sha256: str
    arch_status: str  # verified / token / not_executed / absent / not_requested / profile_error
    arch_full: bool  # sm_90a: both GMMA and TMA executed
    speedup: float | None  # library median / candidate median, headline workload
    speedup_ci_low: float | None
    speedup_ci_high: float | None
    tflops: float | None
    peak_fraction: float | None
    gpu_name: str
    finished_at: datetime | None
    rank: int | None = None  # competition rank among user kernels; None for reference rows

    @property
    def badge(self) -> str:
        return arch_badge(self.arch_status, self.arch_full)


def arch_badge(arch_status: str, arch_full: bool) -> str:
    """What the architecture check found, as one word (two when both Hopper paths ran)."""
    if arch_status == "verified":
        return "verified · full" if arch_full else "verified"
    if arch_status in ("token", "not_executed", "absent"):
        return arch_status
    return "not checked"  # not_requested, profile_error: nothing is claimed either way


def _speed_order(row: KernelRow) -> tuple:
    # Fastest first; a correct kernel without a timing sorts after every timed one; an equal speed goes to
    # whoever reached it first, and the evaluation id settles the rest so the order never flickers.
    finished = row.finished_at.timestamp() if row.finished_at else math.inf
    return (row.speedup is None, -(row.speedup or 0.0), finished, row.evaluation_id)


def rank_kernels(rows: Iterable[KernelRow]) -> list[KernelRow]:
    """Keep the fastest evaluation of each distinct source (per kind), order by speed, and give user
    kernels competition ranks (equal speedups share a rank: 1, 1, 3). Reference rows are placed by
    speed but carry no rank."""
    best: dict[tuple[bool, str], KernelRow] = {}
    for row in rows:
        key = (row.is_reference, row.source_sha256)
        if key not in best or _speed_order(row) < _speed_order(best[key]):
            best[key] = row
    ordered = sorted(best.values(), key=_speed_order)
    ranked: list[KernelRow] = []
    position = 0
    previous: tuple[float | None, int] | None = None
    for row in ordered:
        if row.is_reference:
            ranked.append(replace(row, rank=None))
            continue
        position += 1
        rank = previous[1] if previous is not None and previous[0] == row.speedup else position
        previous = (row.speedup, rank)
        ranked.append(replace(row, rank=rank))
    return ranked


# --------------------------------------------------------------------------- GPU models


def gpu_model(gpu_name: str, arch: str | None = None) -> str:
    """The GPU model in a device name ("NVIDIA H100 80GB HBM3" -> "H100"), matched as a whole word so that
    "GH200" never counts as "H200"; "" when no known model is named."""
    known = [g for a in ARCHES.values() if arch is None or a.name == arch for g in a.gpus]
    words = {w.upper() for w in re.split(r"[^A-Za-z0-9]+", gpu_name or "") if w}
    for model in known:
        if model.upper() in words:
            return model
    return ""


# --------------------------------------------------------------------------- models


@dataclass(frozen=True)
class ModelRow:
    """One model run on one task at turn limit k (from RunTaskMetrics)."""

    run_id: int
    model: str  # the label people see: the run's display name, else the model id; hostile text
    model_id: str
    submitted_by: str
    created_at: datetime
    gpu_name: str
    task: str
    k: int
    trajectories: int  # trajectories counted for this task (the n of every rate)
    correct: int  # trajectories with a correct kernel within k turns
    correct_arch: int  # ... that also used the architecture (verified)
    best_speedup: float | None
    tokens: int
    complete: bool  # every trajectory of this task stopped: the numbers are final
    run_finished: bool = True  # the run as a whole stopped (done, failed or cancelled)

    @property
    def speedup(self) -> float | None:
        return self.best_speedup

    @property
    def correct_rate(self) -> float | None:
        return rate(self.correct, self.trajectories)

    @property
    def arch_rate(self) -> float | None:
        return rate(self.correct_arch, self.trajectories)


@dataclass(frozen=True)
class SummaryRow:
    """One model run across all tasks of an architecture at turn limit k."""

    run_id: int
    model: str
    model_id: str
    submitted_by: str
    created_at: datetime
    gpu_name: str
    k: int
    tasks: int  # tasks with metrics
    tasks_solved: int  # tasks with at least one correct kernel (the geometric mean's n)
    geomean_speedup: float | None
    mean_correct: float | None  # mean over tasks of each task's correctness rate
    mean_correct_arch: float | None
    correct: int  # summed over tasks, with trajectories as n
    correct_arch: int
    trajectories: int
    tokens: int
    complete: bool
    per_task_speedup: dict[str, float | None] = field(default_factory=dict)

    @property
    def speedup(self) -> float | None:
        return self.geomean_speedup

    @property
    def correct_rate(self) -> float | None:
        return self.mean_correct

    @property
    def arch_rate(self) -> float | None:
        return self.mean_correct_arch


def rate(hits: int, n: int) -> float | None:
    return hits / n if n else None


def geometric_mean(values: Iterable[float | None]) -> float | None:
    """Geometric mean of the positive values; None when there are none."""
    logs = [math.log(v) for v in values if v is not None and v > 0]
    return math.exp(sum(logs) / len(logs)) if logs else None


def summarise_run(rows: list[ModelRow]) -> SummaryRow:
    """Fold one run's per-task rows (same k) into its summary row. Tasks without a correct kernel count in
    the mean correctness (as 0/n) but not in the geometric mean, whose n is `tasks_solved`."""
    first = rows[0]
    rates = [r.correct_rate for r in rows if r.correct_rate is not None]
    arch_rates = [r.arch_rate for r in rows if r.arch_rate is not None]
    speedups = [r.best_speedup for r in rows if r.best_speedup is not None]
    return SummaryRow(
        run_id=first.run_id,
        model=first.model,
        model_id=first.model_id,
        submitted_by=first.submitted_by,
        created_at=first.created_at,
        gpu_name=first.gpu_name,
        k=first.k,
        tasks=len(rows),
        tasks_solved=len(speedups),
        geomean_speedup=geometric_mean(speedups),
        mean_correct=sum(rates) / len(rates) if rates else None,
        mean_correct_arch=sum(arch_rates) / len(arch_rates) if arch_rates else None,
        correct=sum(r.correct for r in rows),
        correct_arch=sum(r.correct_arch for r in rows),
        trajectories=sum(r.trajectories for r in rows),
        tokens=sum(r.tokens for r in rows),
        complete=first.run_finished and all(r.complete for r in rows),
        per_task_speedup={r.task: r.best_speedup for r in rows},
    )


# --------------------------------------------------------------------------- sorting

# The one whitelist of sort keys for model tables, shared by the HTML pages, the JSON API and CSV.
# Per task "speedup" is the best speedup; in the summary it is the geometric mean over tasks.
SORT_KEYS: dict[str, Callable[[Any], Any]] = {
    "speedup": lambda r: r.speedup,
    "correct": lambda r: r.correct_rate,
    "correct_arch": lambda r: r.arch_rate,
    "tokens": lambda r: r.tokens,
    "trajectories": lambda r: r.trajectories,
    "date": lambda r: r.created_at,
    "model": lambda r: r.model.casefold(),
}
DEFAULT_SORT = "-speedup"


class UnknownSortKey(ValueError):
    def __init__(self, value: str) -> None:
        allowed = ", ".join(sorted(SORT_KEYS))
        super().__init__(f"unknown sort key {value!r}; use one of: {allowed} (prefix '-' for descending)")


def parse_sort(value: str | None) -> tuple[str, bool]:
    """'-speedup' -> ('speedup', True). Raises UnknownSortKey for anything outside the whitelist."""
    value = (value or DEFAULT_SORT).strip()
    descending = value.startswith("-")
    key = value[1:] if descending else value
    if key not in SORT_KEYS:
        raise UnknownSortKey(value)
    return key, descending


def sort_rows(rows: Iterable[Any], sort: str | None) -> list[Any]:
    """Sort model rows by a whitelisted key. Missing values go last either way; ties go to the earlier
    run, then the lower run id, so the order is stable across requests."""
    key, descending = parse_sort(sort)
    get = SORT_KEYS[key]
    rows = sorted(rows, key=lambda r: (r.created_at, r.run_id))
    present = [r for r in rows if get(r) is not None]
    missing = [r for r in rows if get(r) is None]
    present.sort(key=get, reverse=descending)  # stable: the tie order above survives
    return present + missing
