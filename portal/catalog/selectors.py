"""Reads for the catalog pages and API."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Prefetch, Q, QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404

from evaluator.languages import LANGUAGES, Language
from portal.catalog.models import ArchitectureTarget, KnowledgePack, Task, Workload


@dataclass(frozen=True)
class TaskLanguage:
    """What the task page shows of one registered language: how its `run` looks and its starter file."""

    language: Language
    signature: str  # "" when the catalog has none for it
    starter: str  # "" when the task has no starter in it


def task_list() -> QuerySet[Task]:
    return (
        Task.objects.filter(is_active=True)
        .annotate(workload_count=Count("workloads", filter=Q(workloads__is_active=True)))
        .prefetch_related(Prefetch("targets", queryset=ArchitectureTarget.objects.order_by("arch")))
        .order_by("group", "slug")
    )


def task_detail(slug: str) -> Task:
    """The task with its workloads and targets; 404 for unknown or retired slugs."""
    queryset = Task.objects.filter(is_active=True).prefetch_related(
        Prefetch("workloads", queryset=Workload.objects.filter(is_active=True).order_by("position")),
        Prefetch("targets", queryset=ArchitectureTarget.objects.select_related("pack").order_by("arch")),
    )
    return get_object_or_404(queryset, slug=slug)


def task_languages(task: Task) -> list[TaskLanguage]:
    """Every registered language, in the registry's order, with what the task holds for it."""
    return [TaskLanguage(lang, task.signature(lang.name), task.starter(lang.name)) for lang in LANGUAGES.values()]


def task_starter(slug: str, filename: str) -> tuple[Task, Language, str]:
    """The task, the language whose starter file has that name, and the starter; 404 when there is none."""
    task = task_detail(slug)
    lang = next((lang for lang in LANGUAGES.values() if lang.starter_file and lang.starter_file == filename), None)
    starter = task.starter(lang.name) if lang else ""
    if lang is None or not starter:
        raise Http404("this task has no starter of that name")
    return task, lang, starter


def pack_list() -> QuerySet[KnowledgePack]:
    return KnowledgePack.objects.defer("text").order_by("slug")


def pack_detail(slug: str) -> KnowledgePack:
    return get_object_or_404(KnowledgePack, slug=slug)
