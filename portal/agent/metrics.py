"""Pure: the per-(run, task) metrics for turn limits k, from per-turn results. The one place that says what
"correct", "correct with the architecture" and "best speedup" mean for a model run."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from evaluator.both_sides.verdict import ArchStatus, OverallStatus

CORRECT_STATUS = (
    OverallStatus.PASSED.value
)  # STATIC_ONLY (CPU stages only) and every failure status are "not known correct"
VERIFIED_ARCH_STATUS = ArchStatus.VERIFIED.value


@dataclass(frozen=True)
class TurnResult:
    index: int  # 0-based turn number in its trajectory
    status: str  # verdict status, or NO_KERNEL / MODEL_ERROR / EVALUATION_FAILED
    arch_status: str  # verdict arch_check.status ("verified", "absent", ...) or ""
    speedup_factor: float | None  # headline workload speedup vs the library baseline, when timed
    tokens: int  # prompt + completion tokens of the turn's model call

    @property
    def correct(self) -> bool:
        return self.status == CORRECT_STATUS


@dataclass(frozen=True)
class TrajectoryResult:
    turns: Sequence[TurnResult]
    finished: bool  # the trajectory stopped (for any reason); no more turns will come


@dataclass(frozen=True)
class TaskMetrics:
    k: int
    trajectories: int  # n
    correct: int  # trajectories with a correct turn among the first k
    correct_arch: int  # trajectories with a correct turn among the first k whose arch status is verified
    best_speedup: float  # max speedup over trajectories and turns < k; incorrect turns count 0
    tokens: int  # tokens of all turns < k, all trajectories
    complete: bool  # every trajectory finished: these numbers will not change


def compute_task_metrics(trajectories: Iterable[TrajectoryResult], ks: Iterable[int]) -> list[TaskMetrics]:
    trajectories = list(trajectories)
    complete = all(t.finished for t in trajectories)
    rows = []
    for k in ks:
        correct = correct_arch = tokens = 0
        best = 0.0
        for trajectory in trajectories:
            first_k = [turn for turn in trajectory.turns if turn.index < k]
            tokens += sum(turn.tokens for turn in first_k)
            good = [turn for turn in first_k if turn.correct]
            correct += bool(good)
            correct_arch += any(turn.arch_status == VERIFIED_ARCH_STATUS for turn in good)
            for turn in good:
                if turn.speedup_factor is not None and turn.speedup_factor > best:
                    best = turn.speedup_factor
        rows.append(
            TaskMetrics(
                k=k,
                trajectories=len(trajectories),
                correct=correct,
                correct_arch=correct_arch,
                best_speedup=best,
                tokens=tokens,
                complete=complete,
            )
        )
    return rows
