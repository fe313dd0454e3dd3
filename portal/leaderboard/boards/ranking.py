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

from evaluator.both_sides.arches import ARCHES
from evaluator.both_sides.verdict import ArchStatus, OverallStatus
from portal.core.verdicts import ARCH_STATE_MEANING, ARCH_STATES, ROW_STATUS, arch_badge, arch_state, verdict_phrase

TURN_LIMITS = (1, 4, 8)  # the k a model leaderboard can be read at


# --------------------------------------------------------------------------- board sections

# The words of a verdict (architecture states, row statuses, the phrase) are portal/core/verdicts.py. Only
# `verified` ranks; the other states are grouped behind ?show=all in ARCH_STATES order.
RANKED_STATE = ArchStatus.VERIFIED.value
# A correct row held for review (its reason shown) is a board section of its own, after the verified one.
HELD_SECTION = "held"
SECTION_ORDER = (RANKED_STATE, HELD_SECTION, *ARCH_STATES[1:])


# --------------------------------------------------------------------------- kernels

NEGATIVE_CONTROL = "negative_control"  # evaluator/suite/solutions.py ROLES


@dataclass(frozen=True)
class KernelRow:
    """One correct, visible evaluation of a kernel (or an expert reference) on one task and architecture."""

    evaluation_id: str
    submission_id: int
    name: str  # the submission's label (file or solution name); hostile text, escaped on output
    submitter: str  # user name, or "" for reference kernels
    is_reference: bool
    source_sha256: str
    arch_status: str  # one of ARCH_STATES
    arch_full: bool  # sm_90a: both GMMA and TMA executed
    # The evaluation's measurement, by the verdict's names (portal/core/serializers.py MEASUREMENT_FIELDS).
    speedup_factor: float | None  # library median / candidate median, headline workload
    speedup_ci95_low: float | None
    speedup_ci95_high: float | None
    tflops: float | None
    fraction_of_peak: float | None
    gpu_name: str
    finished_at: datetime | None
    rank: int | None = None  # competition rank among verified user kernels; None for references and the rest
    arch: str = ""
    status: str = OverallStatus.PASSED.value  # only correct evaluations reach a board
    language: str = "cuda"  # the submission's kernel language ("cuda", "triton")
    # A reference row's role (evaluator/suite/solutions.py ROLES): "expert", or "negative_control" for a kernel written to
    # fail the instruction check, never labelled or plotted as an expert reference; "" for everyone else's kernels.
    reference_role: str = ""
    is_synthetic: bool = False  # made up by seed_leaderboard, never measured: marked on its row and in every export
    held_reason: str = ""  # why the row is held for review (then unranked, in the held section); "" when not held
    # verified, but the timed calls' use of the target instructions rests on the profiled call alone (the verdict's
    # arch_check.rests_on_profile): ranked on its own speed, marked on its row
    arch_rests_on_profile: bool = False
    # How many evaluations of this source, in the row's board section, the row stands for: it is their median
    # (typical_run), so evaluating the same source again never lifts it to its luckiest run.
    evaluations_of_source: int = 1

    @property
    def is_expert_reference(self) -> bool:
        return self.is_reference and self.reference_role != NEGATIVE_CONTROL

    @property
    def is_negative_control(self) -> bool:
        return self.is_reference and self.reference_role == NEGATIVE_CONTROL

    @property
    def reference_label(self) -> str:
        """What the board calls a reference row: "expert reference" or "negative control"; "" for other rows."""
        if not self.is_reference:
            return ""
        return "negative control" if self.is_negative_control else "expert reference"

    @property
    def badge(self) -> str:
        return arch_badge(self.arch_status, self.arch_full)

    @property
    def section(self) -> str:
        """The board section the row belongs to: "held" when held for review, else its architecture state."""
        return HELD_SECTION if self.held_reason else arch_state(self.arch_status)

    @property
    def verdict_phrase(self) -> str:
        return verdict_phrase(self.status, self.arch_status, self.arch_full, self.arch)


def speed_order(row: KernelRow) -> tuple:
    """Fastest first (the order inside every board section)."""
    return _speed_order(row)


def _speed_order(row: KernelRow) -> tuple:
    # Fastest first; a correct kernel without a timing sorts after every timed one; an equal speed goes to
    # whoever reached it first, and the evaluation id settles the rest so the order never flickers.
    finished = row.finished_at.timestamp() if row.finished_at else math.inf
    return (row.speedup_factor is None, -(row.speedup_factor or 0.0), finished, row.evaluation_id)


def _board_order(row: KernelRow) -> tuple:
    # Verified first, then the held rows, then each other state as a block in ARCH_STATES order; by speed inside.
    return (SECTION_ORDER.index(row.section), *_speed_order(row))


def rank_kernels(rows: Iterable[KernelRow]) -> list[KernelRow]:
    """The kernel board: one row for each distinct source (per kind), its typical evaluation (typical_run);
    verified kernels first, by speed, with competition ranks for user kernels (equal speedups share a rank: 1, 1,
    3); then the other correct kernels grouped by architecture state (never interleaved with the verified ones),
    unranked. Reference rows are placed like the others but carry no rank. Held rows (held_reason) are never
    ranked and come right after the verified ones; rejected evaluations never reach this function."""
    runs: dict[tuple[bool, str], list[KernelRow]] = {}
    for row in rows:
        runs.setdefault((row.is_reference, row.source_sha256), []).append(row)
    ordered = sorted((typical_run(group) for group in runs.values()), key=_board_order)
    ranked: list[KernelRow] = []
    position = 0
    previous: tuple[float | None, int] | None = None
    for row in ordered:
        if row.is_reference or row.section != RANKED_STATE:
            ranked.append(replace(row, rank=None))
            continue
        position += 1
        rank = previous[1] if previous is not None and previous[0] == row.speedup_factor else position
        previous = (row.speedup_factor, rank)
        ranked.append(replace(row, rank=rank))
    return ranked


def typical_run(runs: list[KernelRow]) -> KernelRow:
    """The evaluation a board shows for one source: of its evaluations in the best section any of them reached (a
    verified one beats a faster unverified one), the median by speed; of an even number, the slower middle one.

    Run-to-run spread is a few percent, and anyone may evaluate the same source again: showing its best run would
    rank the luckiest of as many tries as a submitter cares to make. The median of its runs does not move up with
    more of them. The row is a real evaluation (its files and id stay auditable), marked with how many it stands for."""
    best = min(SECTION_ORDER.index(r.section) for r in runs)
    same = sorted((r for r in runs if SECTION_ORDER.index(r.section) == best), key=_speed_order)
    return replace(same[len(same) // 2], evaluations_of_source=len(same))


@dataclass(frozen=True)
class BoardSection:
    """A block of the kernel board: the ranked verified kernels, or one other state's kernels."""

    state: str
    meaning: str
    rows: list[KernelRow]


def board_sections(
    rows: list[KernelRow], *, show_all: bool, held: list[KernelRow] = (), hide_held: bool = False
) -> tuple[BoardSection, list[BoardSection]]:
    """Split a ranked board into the verified section (always shown), the held rows (shown greyed, each with its
    reason, unless hide_held) and the others by state (shown with ?show=all); an empty state gets no section."""
    verified = BoardSection(
        RANKED_STATE, ARCH_STATE_MEANING[RANKED_STATE], [r for r in rows if r.section == RANKED_STATE]
    )
    held = BoardSection(HELD_SECTION, ROW_STATUS["held"], held_rows(rows, held))
    others = [
        BoardSection(state, ARCH_STATE_MEANING[state], [r for r in rows if r.section == state])
        for state in ARCH_STATES[1:]
    ]
    # Hiding the held rows only takes them out of the table: the page still counts them (held_rows), so a board
    # never hides that it holds something.
    return verified, [s for s in [*([] if hide_held else [held]), *(others if show_all else [])] if s.rows]


def held_rows(rows: list[KernelRow], held: list[KernelRow] = ()) -> list[KernelRow]:
    """The rows a board holds for review: those listed apart (selectors.held_kernels) and any held in `rows`."""
    return [*held, *(r for r in rows if r.section == HELD_SECTION)]


def visible_rows(rows: list[KernelRow], *, show_all: bool) -> list[KernelRow]:
    """What a board shows in one list (JSON, CSV): the verified rows, then the others when asked for."""
    return list(rows) if show_all else [r for r in rows if r.section == RANKED_STATE]


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
    language: str = "cuda"  # the kernel language the run wrote ("cuda", "triton")
    is_synthetic: bool = False  # a made-up run (seed_leaderboard): marked on its row and in every export

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
    language: str = "cuda"  # the run's kernel language
    is_synthetic: bool = False

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
        language=first.language,
        is_synthetic=first.is_synthetic,
    )


# --------------------------------------------------------------------------- one row per model

# Two-sided 95% Student t quantiles by degrees of freedom; beyond the table the normal 1.96 is close enough.
_T95 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    12: 2.179,
    15: 2.131,
    20: 2.086,
    30: 2.042,
}


def _t95(df: int) -> float:
    for bound in sorted(_T95):
        if df <= bound:
            return _T95[bound]
    return 1.96


# Fewest values a 95% interval is given for: from two runs the t interval spans nearly everything ("1.07x
# [0.00, 3.27]", "63% [0%, 100%]") and says nothing; the pages show the values themselves instead.
MIN_INTERVAL_N = 3


def mean_interval(values: Iterable[float | None]) -> tuple[float | None, float | None, float | None]:
    """Mean of the present values with its 95% t interval; no interval from fewer than MIN_INTERVAL_N values."""
    xs = [v for v in values if v is not None]
    if not xs:
        return None, None, None
    mean = sum(xs) / len(xs)
    if len(xs) < MIN_INTERVAL_N:
        return mean, None, None
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))
    half = _t95(len(xs) - 1) * sd / math.sqrt(len(xs))
    return mean, mean - half, mean + half


@dataclass(frozen=True)
class ModelEntry:
    """One model on one architecture, GPU model and kernel language: its runs (per-task ModelRows or SummaryRows
    at the same k) folded into one leaderboard row. Rates pool the runs' trajectories (so each shows its n); the speedup and
    the correct-plus-verified rate are also given as a mean over runs with a 95% interval."""

    model: str  # the runs' shared label, else the model id (group_label); hostile text
    model_id: str
    gpu: str  # GPU model ("H200"), or the device name when it names no known model
    k: int
    runs: tuple[Any, ...]  # the run rows, newest first
    correct: int
    correct_arch: int
    trajectories: int
    tokens: int
    complete: bool
    created_at: datetime  # the newest run's
    run_id: int  # the newest run's
    speedup: float | None  # mean over runs of each run's speedup
    speedup_ci_low: float | None
    speedup_ci_high: float | None
    speedup_n: int  # runs with a speedup
    arch_rate_mean: float | None  # mean over runs of each run's correct-plus-verified rate
    arch_rate_ci_low: float | None
    arch_rate_ci_high: float | None
    language: str = "cuda"  # the kernel language of every run in the group
    speedup_values: tuple[float, ...] = ()  # each run's speedup (runs with one), newest first
    arch_rate_values: tuple[float, ...] = ()  # each run's correct-plus-verified rate, newest first
    is_synthetic: bool = False  # some of its runs were made up (seed_leaderboard)

    @property
    def n_runs(self) -> int:
        return len(self.runs)

    @property
    def correct_rate(self) -> float | None:
        return rate(self.correct, self.trajectories)

    @property
    def arch_rate(self) -> float | None:
        return rate(self.correct_arch, self.trajectories)

    @property
    def tokens_per_run(self) -> float:
        return self.tokens / len(self.runs) if self.runs else 0.0


def group_key(row: ModelRow | SummaryRow, arch: str | None = None) -> tuple[str, str, str]:
    """Which model row a run belongs to: its model id, GPU model and kernel language (a model writing Triton
    is another entry than the same model writing CUDA)."""
    return row.model_id, gpu_model(row.gpu_name, arch) or row.gpu_name, row.language


def entries_by_model(rows: Iterable[ModelRow | SummaryRow], arch: str | None = None) -> list[ModelEntry]:
    """Fold run rows into one ModelEntry per (model, GPU model, language); unsorted (sort with sort_rows)."""
    grouped: dict[tuple[str, str, str], list[Any]] = {}
    for row in rows:
        grouped.setdefault(group_key(row, arch), []).append(row)
    out = []
    for (model_id, gpu, language), runs in grouped.items():
        runs.sort(key=lambda r: (r.created_at, r.run_id), reverse=True)
        newest = runs[0]
        arch_rates = [rate(r.correct_arch, r.trajectories) for r in runs]
        speedup, s_low, s_high = mean_interval(r.speedup for r in runs)
        arch_mean, a_low, a_high = mean_interval(arch_rates)
        # A rate lies in [0, 1] and a speedup above 0: the t interval is clipped to what can be.
        a_low, a_high = (max(0.0, a_low), min(1.0, a_high)) if a_low is not None else (None, None)
        s_low = max(0.0, s_low) if s_low is not None else None
        out.append(
            ModelEntry(
                model=group_label(runs),
                model_id=model_id,
                gpu=gpu,
                k=newest.k,
                runs=tuple(runs),
                correct=sum(r.correct for r in runs),
                correct_arch=sum(r.correct_arch for r in runs),
                trajectories=sum(r.trajectories for r in runs),
                tokens=sum(r.tokens for r in runs),
                complete=all(r.complete for r in runs),
                created_at=newest.created_at,
                run_id=newest.run_id,
                speedup=speedup,
                speedup_ci_low=s_low,
                speedup_ci_high=s_high,
                speedup_n=sum(1 for r in runs if r.speedup is not None),
                arch_rate_mean=arch_mean,
                arch_rate_ci_low=a_low,
                arch_rate_ci_high=a_high,
                language=language,
                speedup_values=tuple(r.speedup for r in runs if r.speedup is not None),
                arch_rate_values=tuple(v for v in arch_rates if v is not None),
                is_synthetic=any(r.is_synthetic for r in runs),
            )
        )
    return out


def group_label(runs: list[Any]) -> str:
    """The label of a row that pools runs: the runs' own label when they share one, else the model id. A run's
    label ("Llama-4-Maverick #13") names that run; on a row pooling two runs it named only one of them."""
    labels = {r.model for r in runs}
    return runs[0].model if len(labels) == 1 else runs[0].model_id


# --------------------------------------------------------------------------- sorting

# The one whitelist of sort keys for model tables, shared by the HTML pages, the JSON API and CSV.
# Per task "speedup" is the best speedup; in the summary it is the geometric mean over tasks; for a model row
# the mean over its runs. "correct" and "correct_arch" are rates (pooled over a model's runs).
SORT_KEYS: dict[str, Callable[[Any], Any]] = {
    "speedup": lambda r: r.speedup,
    "correct": lambda r: r.correct_rate,
    "correct_arch": lambda r: r.arch_rate,
    "tokens": lambda r: r.tokens,
    "trajectories": lambda r: r.trajectories,
    "date": lambda r: r.created_at,
    "model": lambda r: r.model.casefold(),
}
DEFAULT_SORT = "-correct_arch"  # PTXBench's headline: correct and the target instructions executed


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
    """Sort model rows by a whitelisted key. Missing values go last either way; ties go to the higher
    speedup, then the earlier run, then the lower run id, so the order is stable across requests."""
    key, descending = parse_sort(sort)
    get = SORT_KEYS[key]
    rows = sorted(rows, key=lambda r: (r.created_at, r.run_id))
    rows.sort(key=lambda r: (r.speedup is None, -(r.speedup or 0.0)))  # stable: equal speeds keep run order
    present = [r for r in rows if get(r) is not None]
    missing = [r for r in rows if get(r) is None]
    present.sort(key=get, reverse=descending)  # stable: the tie order above survives
    return present + missing
