"""Reads of per-turn results for the model charts (curves over every turn 1..T, reasoning tokens). Same
visibility as the model board: runs not hidden, authors not banned, active tasks only."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q

from portal.leaderboard import ranking
from portal.leaderboard.cache import MODELS, Generation
from portal.leaderboard.selectors import models_available


@dataclass(frozen=True)
class TurnPoint:
    run_id: int
    model_id: str  # the model id the run called: charts group runs by it
    gpu_name: str
    task: str
    trajectory_id: int
    index: int  # 0-based turn number
    correct: bool
    verified: bool  # correct and the architecture check said verified
    speedup: float | None
    reasoning_tokens: int | None


def turn_points(gen: Generation, *, arch: str, task: str = "", gpu: str = "") -> list[TurnPoint]:
    """Every finished turn of the visible runs on one architecture (one task when given, one GPU model when given)."""
    if not models_available():
        return []
    points = gen.get(("turn_points", arch), lambda: _turn_points(arch), scope=MODELS)
    return [
        p for p in points if (not task or p.task == task) and (not gpu or ranking.gpu_model(p.gpu_name, arch) == gpu)
    ]


def _turn_points(arch: str) -> list[TurnPoint]:
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
        .values_list(
            "trajectory__run_id",
            "trajectory__run__model",
            "trajectory__run__gpu_name",
            "trajectory__task__slug",
            "trajectory_id",
            "index",
            "status",
            "arch_status",
            "speedup",
            "reasoning_tokens",
        )
        .order_by()
    )
    return [
        TurnPoint(
            run_id=run_id,
            model_id=model,
            gpu_name=gpu_name or "",
            task=slug,
            trajectory_id=trajectory_id,
            index=index,
            correct=status == CORRECT_STATUS,
            verified=status == CORRECT_STATUS and arch_status == VERIFIED_ARCH_STATUS,
            speedup=speedup if status == CORRECT_STATUS and speedup and speedup > 0 else None,
            reasoning_tokens=reasoning,
        )
        for run_id, model, gpu_name, slug, trajectory_id, index, status, arch_status, speedup, reasoning in values
    ]
