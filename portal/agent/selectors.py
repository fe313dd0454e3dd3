"""Reads for model runs. `run_document` feeds both the run page's live refresh and the JSON API, and it
never contains the API key, its hint, or anything of the endpoint URL beyond its host."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, OuterRef, Prefetch, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce, Greatest

from portal.agent import visibility
from portal.agent.models import ModelRun, RunTaskMetrics, Trajectory, Turn
from portal.core.api_versions import CURRENT_API_VERSION
from portal.core.serializers import to_version


def _count_of(queryset, field: str, run: str = "run"):
    """A per-run count as a subquery (0 when none), so that two counts never multiply each other's joins."""
    counted = queryset.filter(**{run: OuterRef("pk")}).order_by().values(run).annotate(n=Count(field, distinct=True))
    return Coalesce(Subquery(counted.values("n")[:1]), 0)


def run_list(*, user=None, mine: bool = False) -> QuerySet[ModelRun]:
    runs = ModelRun.objects.select_related("user").annotate(
        # The tasks its trajectories are on (an imported or replayed run names none in `tasks`: it read 0), or
        # the tasks it was started for while no trajectory exists yet.
        task_count=Greatest(
            _count_of(Trajectory.objects, "task"), _count_of(ModelRun.tasks.through.objects, "task", "modelrun")
        ),
        trajectory_count=Count("trajectories", distinct=True),
        running_count=Count("trajectories", filter=Q(trajectories__state=Trajectory.State.RUNNING), distinct=True),
    )
    if mine:
        return runs.filter(user=user) if user and user.is_authenticated else runs.none()
    return visibility.public_runs(runs)


def run_detail(run_id: int, *, user=None) -> ModelRun:
    turns = Turn.objects.order_by("index")
    runs = ModelRun.objects.prefetch_related(
        "tasks",
        Prefetch(
            "trajectories",
            queryset=Trajectory.objects.select_related("task")
            .defer("messages")
            .order_by("task__slug", "index")
            .prefetch_related(Prefetch("turns", queryset=turns.defer("reply", "kernel", "feedback"))),
        ),
        Prefetch("metrics", queryset=RunTaskMetrics.objects.select_related("task").order_by("task__slug", "k")),
    )
    return visibility.visible_run(user, run_id, runs)


def trajectory_detail(run_id: int, trajectory_id: int, *, user=None) -> Trajectory:
    trajectories = Trajectory.objects.prefetch_related(
        Prefetch("turns", queryset=Turn.objects.select_related("evaluation").order_by("index"))
    )
    return visibility.visible_trajectory(user, run_id, trajectory_id, trajectories)


def _iso(value) -> str | None:
    return value.isoformat() if value else None


def turn_document(turn: Turn, *, v: int = CURRENT_API_VERSION) -> dict[str, Any]:
    """A turn as the API's version `v` names it (its measured `speedup_factor` is `speedup` in version 1)."""
    record = {
        "index": turn.index,
        "state": turn.state,
        "status": turn.published_status,
        "arch_status": turn.arch_status,
        "speedup_factor": turn.speedup_factor,
        "prompt_tokens": turn.prompt_tokens,
        "completion_tokens": turn.completion_tokens,
        "reasoning_tokens": turn.reasoning_tokens,
        "model_latency_s": turn.model_latency_s,
        "model_attempts": turn.model_attempts,
        "evaluation": str(turn.evaluation_id) if turn.evaluation_id else None,
        "error": turn.error,
        "finished_at": _iso(turn.finished_at),
    }
    return to_version(record, v, "turn")


def run_document(run: ModelRun, *, v: int = CURRENT_API_VERSION) -> dict[str, Any]:
    """The public JSON view of a run (from a `run_detail` queryset), named as the API's version `v` names it."""
    trajectories = []
    for t in run.trajectories.all():
        trajectories.append(
            {
                "id": t.id,
                "task": t.task.slug,
                "index": t.index,
                "state": t.state,
                "stop_reason": t.stop_reason,
                "stop_message": t.stop_message,
                "turns": [turn_document(turn, v=v) for turn in t.turns.all()],
            }
        )
    return {
        "id": run.id,
        "display_name": run.display_name,
        "model": run.model,
        "endpoint_host": "imported" if not run.base_url else run.endpoint_host,
        "arch": run.arch,
        "pack": run.pack_variant,
        "turns": run.turns,
        "trajectories_per_task": run.trajectories_per_task,
        "target_speedup": run.target_speedup,
        "temperature": run.temperature,
        "max_output_tokens": run.max_output_tokens,
        "state": run.state,
        "error": run.error,
        "gpu_name": run.gpu_name,
        "user": run.user.username,
        "created_at": _iso(run.created_at),
        "started_at": _iso(run.started_at),
        "finished_at": _iso(run.finished_at),
        "tasks": [task.slug for task in run.tasks.all()],
        "metrics": [
            {
                "task": m.task.slug,
                "arch": m.arch,
                "k": m.k,
                "trajectories": m.trajectories,
                "correct": m.correct,
                "correct_arch": m.correct_arch,
                # The name every board uses (the best on the task); null when no turn was correct (stored as 0).
                # Version 1 adds its old name `best_speedup`.
                **to_version(
                    {"speedup": m.best_speedup or None, "tokens": m.tokens, "complete": m.complete}, v, "run_metrics"
                ),
            }
            for m in run.metrics.all()
        ],
        "trajectories": trajectories,
    }


def has_synthetic_runs() -> bool:
    """Whether any model run was made up by `seed_leaderboard` (the "synthetic demo" banner)."""
    return ModelRun.objects.filter(is_synthetic=True).exists()
