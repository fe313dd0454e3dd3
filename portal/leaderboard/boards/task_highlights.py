"""Reads for a task's page: the current best kernel per architecture (the first ranked row of that task's
kernel board, whatever order ranking.py gives it) and the library's measured latency per GPU model. The catalog's
task page shows them through the panel `task_panel`, registered in LeaderboardConfig.ready()."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from evaluator.both_sides.arches import ARCHES
from portal.catalog.models import Task
from portal.leaderboard.boards import ranking, selectors
from portal.leaderboard.cache import Generation
from portal.submissions.models import Evaluation


@dataclass(frozen=True)
class BestKernel:
    arch: str
    arch_label: str
    row: ranking.KernelRow | None  # None: nothing ranks on this architecture yet
    ranked: int  # ranked user kernels on the board


@dataclass(frozen=True)
class LibraryLatency:
    arch: str
    gpu: str  # GPU model ("H200")
    median_ms: float
    n: int  # evaluations that measured it


def best_kernels(task_slug: str, arches: list[str]) -> list[BestKernel]:
    gen = Generation()
    out = []
    for arch in arches:
        rows = [r for r in selectors.kernel_board(gen, task=task_slug, arch=arch) if r.rank is not None]
        out.append(BestKernel(arch, ARCHES[arch].label, rows[0] if rows else None, len(rows)))
    return out


def library_latencies(task_slug: str) -> list[LibraryLatency]:
    """Median library latency of the headline workload, per architecture and GPU model, over the finished public
    evaluations that timed it (each evaluation times the library again on its own GPU)."""
    values = (
        Evaluation.objects.filter(
            submission__task__slug=task_slug,
            state=Evaluation.State.DONE,
            purpose=Evaluation.Purpose.PUBLIC,
            baseline_latency_ms__isnull=False,
        )
        .values_list("submission__arch", "gpu_name", "baseline_latency_ms")
        .order_by()[:5000]
    )
    groups: dict[tuple[str, str], list[float]] = {}
    for arch, gpu_name, latency in values:
        model = ranking.gpu_model(gpu_name, arch) or (gpu_name or "unknown GPU")
        groups.setdefault((arch, model), []).append(latency)
    return [
        LibraryLatency(arch, gpu, statistics.median(samples), len(samples))
        for (arch, gpu), samples in sorted(groups.items())
    ]


def task_panel(task: Task, arches: list[str]) -> dict[str, list]:
    """The task page's `best` and `library` (portal/catalog/task_panels.py)."""
    return {"best": best_kernels(task.slug, arches), "library": library_latencies(task.slug)}
