"""Reads for the catalog pages and API."""

from __future__ import annotations

from django.db.models import Count, Prefetch, Q, QuerySet
from django.shortcuts import get_object_or_404

from portal.catalog.models import ArchitectureTarget, KnowledgePack, Task, Workload


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


def pack_list() -> QuerySet[KnowledgePack]:
    return KnowledgePack.objects.defer("text").order_by("slug")


def pack_detail(slug: str) -> KnowledgePack:
    return get_object_or_404(KnowledgePack, slug=slug)
