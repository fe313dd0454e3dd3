"""Reads for the leaderboards. Each board is computed once per results generation (see ../cache.py) and
returned as typed rows from ranking.py; the HTML pages, the JSON API, CSV downloads, charts, /compare/ and the
results datasets all read the same rows."""

from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.db.models import Exists, OuterRef, Q

from evaluator.both_sides.arches import ARCHES, DEFAULT_ARCH
from evaluator.both_sides.verdict import OverallStatus
from evaluator.languages import LANGUAGES
from portal.catalog.models import Task
from portal.leaderboard.boards import ranking
from portal.leaderboard.boards.ranking import KernelRow, ModelRow, SummaryRow
from portal.leaderboard.cache import KERNELS, MODELS, Generation
from portal.submissions.models import Evaluation, Submission


class BadQuery(ValueError):
    """A leaderboard parameter is invalid; the message says which and what is allowed."""


@dataclass(frozen=True)
class BoardQuery:
    """Validated parameters of a leaderboard read."""

    arch: str
    task: str  # task slug, or "" for the summary across tasks
    k: int
    gpu: str  # GPU model filter ("H100"), or "" for all
    sort: str
    language: str = ""  # kernel language filter ("cuda", "triton"), or "" for all (kernels and model runs)


def parse_query(params, gen: Generation, *, task_required: bool = False) -> BoardQuery:
    """Validate request parameters (arch, task, k, gpu, sort) against what exists; raise BadQuery."""
    arch = params.get("arch") or DEFAULT_ARCH
    if arch not in ARCHES:
        raise BadQuery(f"unknown architecture {arch!r}; use one of: {', '.join(ARCHES)}")
    task = params.get("task") or ""
    if task and task not in active_task_slugs(gen):
        raise BadQuery(f"unknown task {task!r}")
    if task_required and not task:
        raise BadQuery("the task parameter is required")
    raw_k = params.get("k") or str(ranking.TURN_LIMITS[-1])
    if raw_k not in {str(k) for k in ranking.TURN_LIMITS}:
        raise BadQuery(f"k must be one of {', '.join(map(str, ranking.TURN_LIMITS))}")
    gpu = params.get("gpu") or ""
    if gpu and gpu not in ARCHES[arch].gpus:
        raise BadQuery(f"unknown GPU {gpu!r} for {arch}; use one of: {', '.join(ARCHES[arch].gpus)}")
    language = params.get("language") or ""
    if language and language not in LANGUAGES:
        raise BadQuery(f"unknown language {language!r}; use one of: {', '.join(LANGUAGES)}")
    sort = params.get("sort") or ranking.DEFAULT_SORT
    try:
        ranking.parse_sort(sort)
    except ranking.UnknownSortKey as exc:
        raise BadQuery(str(exc)) from None
    return BoardQuery(arch=arch, task=task, k=int(raw_k), gpu=gpu, sort=sort, language=language)


def parse_show(params) -> bool:
    """`show=all`: the kernel board also lists the correct kernels that are not verified, grouped by state."""
    show = params.get("show") or ""
    if show not in ("", "all"):
        raise BadQuery(f"show must be 'all' or absent, not {show!r}")
    return show == "all"


def parse_held(params) -> bool:
    """`held=hide`: the kernel board leaves its held rows out of the table (the line above it still counts them);
    by default (`held=show` or absent) they are listed greyed, each with its reason. True when hidden."""
    held = params.get("held") or "show"
    if held not in ("show", "hide"):
        raise BadQuery(f"held must be 'show' or 'hide', not {held!r}")
    return held == "hide"


def active_task_slugs(gen: Generation) -> list[str]:
    return gen.get(
        ("tasks",),
        lambda: list(Task.objects.filter(is_active=True).order_by("group", "slug").values_list("slug", flat=True)),
        scope=KERNELS,
    )


def tasks_for_arch(gen: Generation, arch: str) -> list[str]:
    return gen.get(
        ("tasks", arch),
        lambda: list(
            Task.objects.filter(is_active=True, targets__arch=arch)
            .order_by("group", "slug")
            .values_list("slug", flat=True)
        ),
        scope=KERNELS,
    )


# --------------------------------------------------------------------------- kernels


def kernel_board(gen: Generation, *, task: str, arch: str, gpu: str = "", language: str = "") -> list[KernelRow]:
    """Ranked correct kernels (and reference rows) of one task on one architecture (of one language when given:
    ranks are then among that language's kernels)."""

    def compute() -> list[KernelRow]:
        by_task = gen.get(("kernels", arch), lambda: _kernel_rows(arch=arch), scope=KERNELS)
        rows = by_task.get(task, [])
        if gpu:
            rows = [r for r in rows if ranking.gpu_model(r.gpu_name, arch) == gpu]
        if language:
            rows = [r for r in rows if r.language == language]
        return ranking.rank_kernels(rows)

    key = ("kernel_board", task, arch, gpu, *((language,) if language else ()))
    return gen.get(key, compute, scope=KERNELS)


def kernel_speedups(gen: Generation, *, arch: str, gpu: str = "") -> dict[str, list[KernelRow]]:
    """Every task's ranked board on one architecture (for the distribution chart)."""
    return {slug: kernel_board(gen, task=slug, arch=arch, gpu=gpu) for slug in tasks_for_arch(gen, arch)}


@functools.lru_cache(maxsize=4)
def _reference_roles(tasks_dir: str) -> dict[tuple[str, str], str]:
    """(task slug, solution name) -> role of every reference solution under tasks/ (solution.json `role`)."""
    from evaluator.suite.solutions import read_solution

    roles = {}
    for meta in sorted(Path(tasks_dir).glob("*/solutions/*/solution.json")):
        try:
            solution = read_solution(meta)
        except ValueError:
            continue  # the reference-solution tests report a malformed file; a board still draws
        roles[(solution.task or meta.parent.parent.parent.name, meta.parent.name)] = solution.role
    return roles


def reference_role(task: str, name: str) -> str:
    """A reference kernel's role from its solution.json: "expert" unless it is marked a negative control."""
    return _reference_roles(str(settings.TASKS_DIR)).get((task, name), "expert")


def _visible_evaluations(*, held: bool = False):
    """Finished, correct public evaluations that may be shown: not hidden, not from banned users, not rejected by
    review, and held for review only when `held` (the board lists those apart, with the reason); a kernel upload
    also needs its hidden ranked check (secret seed) passed. Model turns (kind agent) rank on the model
    leaderboard instead."""
    ranked_check_passed = Exists(
        Evaluation.objects.filter(
            submission=OuterRef("submission"),
            purpose=Evaluation.Purpose.HIDDEN,
            state=Evaluation.State.DONE,
            status=OverallStatus.PASSED.value,
        )
    )
    return (
        Evaluation.objects.filter(
            Q(submission__kind=Submission.Kind.REFERENCE)
            | (Q(submission__kind=Submission.Kind.KERNEL) & Q(ranked_check_passed)),
            state=Evaluation.State.DONE,
            status=OverallStatus.PASSED.value,
            purpose=Evaluation.Purpose.PUBLIC,
            submission__is_hidden=False,
        )
        .exclude(review_state__in=[Evaluation.ReviewState.REJECTED] + ([] if held else [Evaluation.ReviewState.HELD]))
        .exclude(Q(submission__user__profile__is_banned=True))
    )


def _kernel_rows(*, arch: str) -> dict[str, list[KernelRow]]:
    """Every visible correct evaluation on one architecture, by task slug: one query serves all its boards."""
    return _rows_by_task(_visible_evaluations().filter(submission__arch=arch), arch=arch)


def has_ranked(gen: Generation, *, task: str, arch: str) -> bool:
    """Whether the task's board on this architecture ranks at least one kernel (an expert's counts)."""
    return any(r.rank is not None or (r.is_expert_reference and r.section == ranking.RANKED_STATE)
               for r in kernel_board(gen, task=task, arch=arch))  # fmt: skip


def held_kernels(gen: Generation, *, task: str, arch: str, gpu: str = "", language: str = "") -> list[KernelRow]:
    """The correct evaluations of one task and architecture held for review (held_reason set: an implausible
    figure, an integrity hold such as inconsistent_figures), fastest first, never ranked: the board lists them
    apart, each with its reason. Not in kernel_board, so its JSON, CSV, charts and datasets stay as they were."""

    def compute() -> list[KernelRow]:
        held = _visible_evaluations(held=True).filter(
            submission__arch=arch, submission__task__slug=task, review_state=Evaluation.ReviewState.HELD
        )
        rows = _rows_by_task(held, arch=arch).get(task, [])
        if gpu:
            rows = [r for r in rows if ranking.gpu_model(r.gpu_name, arch) == gpu]
        if language:
            rows = [r for r in rows if r.language == language]
        return [replace(r, rank=None) for r in sorted(rows, key=ranking.speed_order)]

    return gen.get(("held_kernels", task, arch, gpu, language), compute, scope=KERNELS)


def _rows_by_task(evaluations, *, arch: str) -> dict[str, list[KernelRow]]:
    values = evaluations.values(
        "id",
        "submission__task__slug",
        "submission_id",
        "submission__name",
        "submission__user__username",
        "submission__kind",
        "submission__language",
        "submission__source_sha256",
        "submission__is_synthetic",
        "arch_status",
        "arch_full",
        "arch_rests_on_profile",
        "speedup_factor",
        "speedup_ci95_low",
        "speedup_ci95_high",
        "tflops",
        "fraction_of_peak",
        "gpu_name",
        "finished_at",
        "review_state",
        "review_reason",
    )
    by_task: dict[str, list[KernelRow]] = defaultdict(list)
    for v in values:
        by_task[v["submission__task__slug"]].append(
            KernelRow(
                evaluation_id=str(v["id"]),
                submission_id=v["submission_id"],
                name=v["submission__name"] or f"submission {v['submission_id']}",
                submitter=v["submission__user__username"] or "",
                is_reference=v["submission__kind"] == Submission.Kind.REFERENCE,
                source_sha256=v["submission__source_sha256"],
                arch_status=ranking.arch_state(v["arch_status"]),
                arch_full=v["arch_full"],
                arch_rests_on_profile=v["arch_rests_on_profile"],
                arch=arch,
                speedup_factor=v["speedup_factor"],
                speedup_ci95_low=v["speedup_ci95_low"],
                speedup_ci95_high=v["speedup_ci95_high"],
                tflops=v["tflops"],
                fraction_of_peak=v["fraction_of_peak"],
                gpu_name=v["gpu_name"],
                finished_at=v["finished_at"],
                language=v["submission__language"],
                reference_role=reference_role(v["submission__task__slug"], v["submission__name"])
                if v["submission__kind"] == Submission.Kind.REFERENCE
                else "",
                is_synthetic=v["submission__is_synthetic"],
                held_reason=(v["review_reason"] or "held for an admin's review")
                if v["review_state"] == Evaluation.ReviewState.HELD
                else "",
            )
        )
    return dict(by_task)


# --------------------------------------------------------------------------- models


def models_available() -> bool:
    """The model leaderboard needs the agent app (model runs); the kernel side works without it."""
    return apps.is_installed("portal.agent")


def model_rows(gen: Generation, *, arch: str, k: int, gpu: str = "", language: str = "") -> dict[str, list[ModelRow]]:
    """Visible model runs on one architecture at turn limit k (of one GPU model, of one kernel language when
    given): task slug -> rows (unsorted)."""
    if not models_available():
        return {}
    by_task = gen.get(("models", arch, k), lambda: _model_rows(arch=arch, k=k), scope=MODELS)
    if gpu or language:
        by_task = {
            task: [
                r
                for r in rows
                if (not gpu or ranking.gpu_model(r.gpu_name, arch) == gpu) and (not language or r.language == language)
            ]
            for task, rows in by_task.items()
        }
    return by_task


def model_board(gen: Generation, query: BoardQuery) -> list[ModelRow]:
    rows = model_rows(gen, arch=query.arch, k=query.k, gpu=query.gpu, language=query.language).get(query.task, [])
    return ranking.sort_rows(rows, query.sort)


def model_summary(gen: Generation, query: BoardQuery) -> list[SummaryRow]:
    runs = _summaries(gen, arch=query.arch, k=query.k, gpu=query.gpu, language=query.language)
    return ranking.sort_rows(runs, query.sort)


def model_entries(gen: Generation, query: BoardQuery) -> list[ranking.ModelEntry]:
    """The model board: one row per model, GPU model and language, folding its runs (the task's rows, or each
    run's summary across tasks when no task is chosen), in the query's sort order."""
    runs = (
        model_rows(gen, arch=query.arch, k=query.k, gpu=query.gpu, language=query.language).get(query.task, [])
        if query.task
        else _summaries(gen, arch=query.arch, k=query.k, gpu=query.gpu, language=query.language)
    )
    return ranking.sort_rows(ranking.entries_by_model(runs, query.arch), query.sort)


def _summaries(gen: Generation, *, arch: str, k: int, gpu: str, language: str = "") -> list[SummaryRow]:
    def compute() -> list[SummaryRow]:
        per_run: dict[int, list[ModelRow]] = defaultdict(list)
        for rows in model_rows(gen, arch=arch, k=k, gpu=gpu, language=language).values():
            for row in rows:
                per_run[row.run_id].append(row)
        return [ranking.summarise_run(rows) for rows in per_run.values()]

    return gen.get(("summary", arch, k, gpu, *((language,) if language else ())), compute, scope=MODELS)


# A model run any of whose kernels was scored on the CPU stages only (STATIC_ONLY: compiled, never run on a GPU)
# is unmeasured: whether its kernels are correct, and how fast, is unknown. It is never on a public board, chart,
# comparison or export; its own run page still shows it (docs/visibility.md).
UNMEASURED_STATUS = OverallStatus.STATIC_ONLY.value


def unmeasured_run_ids():
    """The ids of unmeasured model runs, as a subquery."""
    from portal.agent.models import Turn

    return Turn.objects.filter(verdict_status=UNMEASURED_STATUS).values("trajectory__run_id")


def _model_rows(*, arch: str, k: int) -> dict[str, list[ModelRow]]:
    from portal.agent.models import ModelRun, RunTaskMetrics

    values = (
        RunTaskMetrics.objects.filter(k=k, arch=arch, run__is_hidden=False, task__is_active=True)
        .exclude(Q(run__user__profile__is_banned=True))
        .exclude(run__kind="repair")  # Fixit repair runs had the failing kernel in context: not comparable
        .exclude(run_id__in=unmeasured_run_ids())
        .values(
            "run_id",
            "run__model",
            "run__display_name",
            "run__user__username",
            "run__created_at",
            "run__gpu_name",
            "run__state",
            "run__language",
            "run__is_synthetic",
            "task__slug",
            "trajectories",
            "correct",
            "correct_arch",
            "best_speedup",
            "tokens",
            "complete",
        )
    )
    by_task: dict[str, list[ModelRow]] = defaultdict(list)
    for v in values:
        by_task[v["task__slug"]].append(
            ModelRow(
                run_id=v["run_id"],
                model=v["run__display_name"] or v["run__model"],
                model_id=v["run__model"],
                submitted_by=v["run__user__username"] or "",
                created_at=v["run__created_at"],
                gpu_name=v["run__gpu_name"] or "",
                task=v["task__slug"],
                k=k,
                trajectories=v["trajectories"] or 0,
                correct=v["correct"] or 0,
                correct_arch=v["correct_arch"] or 0,
                # The agent stores 0 when no turn was correct; the tables show that as "no speedup".
                best_speedup=v["best_speedup"] if v["best_speedup"] and v["best_speedup"] > 0 else None,
                tokens=v["tokens"] or 0,
                complete=bool(v["complete"]),
                run_finished=v["run__state"] not in ModelRun.ACTIVE_STATES,
                language=v["run__language"],
                is_synthetic=v["run__is_synthetic"],
            )
        )
    return dict(by_task)
