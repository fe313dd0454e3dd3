"""Reads of per-turn results for the model charts (curves over every turn 1..T, reasoning tokens), folded per
trajectory. Same
visibility as the model board: runs not hidden, authors not banned, active tasks only."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q

from portal.leaderboard.boards import ranking
from portal.leaderboard.boards.selectors import models_available, unmeasured_run_ids
from portal.leaderboard.cache import MODELS, Generation


@dataclass(frozen=True)
class TrajectoryTurns:
    """One trajectory's turns, folded to what the charts need (one record per trajectory, not per turn: the
    list is kept in the shared leaderboard store)."""

    run_id: int
    model_id: str  # the model id the run called: charts group runs by it
    gpu_name: str
    language: str  # the run's kernel language
    task: str
    turns: int  # turns taken
    first_correct: int | None  # 1-based turn number of the first correct kernel
    first_verified: int | None  # ... of the first correct kernel whose target instructions were verified
    speedups: tuple[tuple[int, float], ...]  # (1-based turn, speedup) of each correct, timed turn
    reasoning_tokens: int  # summed over the turns that reported them
    reasoning_turns: int  # turns that reported them


def trajectories(
    gen: Generation, *, arch: str, task: str = "", gpu: str = "", language: str = ""
) -> list[TrajectoryTurns]:
    """Every trajectory of the visible runs on one architecture (one task, one GPU model, one kernel language
    when given)."""
    if not models_available():
        return []
    rows = gen.get(("trajectory_turns", arch), lambda: _trajectories(arch), scope=MODELS)
    return [
        t
        for t in rows
        if (not task or t.task == task)
        and (not gpu or ranking.gpu_model(t.gpu_name, arch) == gpu)
        and (not language or t.language == language)
    ]


def _trajectories(arch: str) -> list[TrajectoryTurns]:
    from portal.agent.metrics import CORRECT_STATUS, VERIFIED_ARCH_STATUS
    from portal.agent.models import Turn

    values = (
        Turn.objects.filter(
            trajectory__run__arch=arch,
            trajectory__run__is_hidden=False,
            trajectory__task__is_active=True,
            state__in=[Turn.State.DONE, Turn.State.FAILED],  # a failed turn was still a turn used
        )
        .exclude(Q(trajectory__run__user__profile__is_banned=True))
        .exclude(trajectory__run__kind="repair")  # Fixit repair runs: not a model's own trajectories
        .exclude(trajectory__run_id__in=unmeasured_run_ids())  # CPU stages only: nothing known (boards/selectors.py)
        .values_list(
            "trajectory_id",
            "trajectory__run_id",
            "trajectory__run__model",
            "trajectory__run__gpu_name",
            "trajectory__run__language",
            "trajectory__task__slug",
            "index",
            "verdict_status",
            "arch_status",
            "speedup_factor",
            "reasoning_tokens",
        )
        .order_by()
    )
    folded: dict[int, dict] = {}
    for (
        trajectory_id,
        run_id,
        model,
        gpu_name,
        language,
        slug,
        index,
        verdict_status,
        arch_status,
        speedup_factor,
        reasoning,
    ) in values:
        t = folded.setdefault(
            trajectory_id,
            {"run_id": run_id, "model_id": model, "gpu_name": gpu_name or "", "language": language, "task": slug,
             "turns": 0, "first_correct": None, "first_verified": None, "speedups": [], "reasoning_tokens": 0,
             "reasoning_turns": 0},
        )  # fmt: skip
        number = index + 1
        t["turns"] = max(t["turns"], number)
        if verdict_status == CORRECT_STATUS:
            if t["first_correct"] is None or number < t["first_correct"]:
                t["first_correct"] = number
            if arch_status == VERIFIED_ARCH_STATUS and (t["first_verified"] is None or number < t["first_verified"]):
                t["first_verified"] = number
            if speedup_factor and speedup_factor > 0:
                t["speedups"].append((number, speedup_factor))
        if reasoning is not None:
            t["reasoning_tokens"] += reasoning
            t["reasoning_turns"] += 1
    return [TrajectoryTurns(**{**t, "speedups": tuple(sorted(t["speedups"]))}) for t in folded.values()]
