"""Writes to the catalog. The only writer is `catalog_sync`, fed by the pure loaders in `evaluator`."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from evaluator.both_sides.arches import ARCHES
from evaluator.both_sides.taskdata import Definition
from evaluator.both_sides.taskdata import Task as TaskData
from evaluator.languages import LANGUAGES
from evaluator.suite.flashinfer_import import ImportedDefinition
from portal.catalog.models import ArchitectureTarget, KnowledgePack, Task, Workload


@dataclass
class SyncReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deactivated: list[str] = field(default_factory=list)
    packs: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"tasks: {len(self.created)} created, {len(self.updated)} updated, {len(self.unchanged)} unchanged, "
            f"{len(self.deactivated)} deactivated; packs: {len(self.packs)}"
        )


def _digest(payload: dict) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def _task_file(task: TaskData, name: str) -> str:
    """A file of the task folder as text, "" when the task has none (imported tasks, older folders)."""
    path = Path(task.directory) / name
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def _signatures(definition: Definition) -> dict[str, str]:
    """The `run` each registered language provides for this definition."""
    return {lang.name: lang.signature(definition) for lang in LANGUAGES.values() if lang.signature}


def _starters(task: TaskData) -> dict[str, str]:
    """The task folder's starter file of each registered language that has one."""
    files = {lang.name: _task_file(task, lang.starter_file) for lang in LANGUAGES.values() if lang.starter_file}
    return {name: text for name, text in files.items() if text}


def _task_fields(task: TaskData) -> dict:
    d = task.definition
    return {
        "op_type": d.op_type,
        "group": task.group,
        "description": d.description,
        "definition": dict(d.raw),
        "reference": d.reference,
        "tags": list(d.tags),
        "flops": task.flops,
        "baselines": [{"id": b.id, "name": b.name, "function": b.function, "source": b.source} for b in task.baselines],
        "atol": task.atol,
        "rtol": task.rtol,
        "signatures": _signatures(d),
        "starters": _starters(task),
        "source": Task.Source.SUITE,
    }


def _imported_fields(item: ImportedDefinition) -> dict:
    d = item.definition
    return {
        "op_type": d.op_type,
        "group": d.op_type,
        "description": d.description,
        "definition": dict(d.raw),
        "reference": d.reference,
        "tags": list(d.tags),
        "flops": "",
        "baselines": [],
        "atol": 1e-2,
        "rtol": 1e-2,
        "signatures": _signatures(d),
        "starters": {},
        "source": Task.Source.IMPORT,
    }


CREATED, UPDATED, UNCHANGED = "created", "updated", "unchanged"


def _task_row(task: Task | None, slug: str, fields: dict) -> tuple[Task, str]:
    """The row for a task with these fields and what became of it: CREATED (new and not yet saved), UNCHANGED
    (same content, left alone) or UPDATED (rewritten and saved)."""
    fields = {**fields, "content_sha256": _digest(fields), "is_active": True}
    if task is None:
        return Task(slug=slug, **fields), CREATED
    if task.content_sha256 == fields["content_sha256"] and task.is_active:
        return task, UNCHANGED
    for key, value in fields.items():
        setattr(task, key, value)
    task.save()
    return task, UPDATED


def _upsert_task(slug: str, fields: dict, report: SyncReport) -> tuple[Task, bool]:
    task, state = _task_row(Task.objects.filter(slug=slug).first(), slug, fields)
    if state == CREATED:
        task.save()
    getattr(report, state).append(slug)
    return task, state != UNCHANGED


_WORKLOAD_FIELDS = ("task", "axes", "inputs", "is_headline", "position", "is_active")


def _sync_workloads(task: Task, workloads, headline: str | None) -> None:
    """Insert or update every workload of one task; see `_sync_workloads_of`."""
    _sync_workloads_of([(task, workloads, headline)], deactivate=True)


def _sync_workloads_of(items: list[tuple[Task, list, str | None]], *, deactivate: bool) -> None:
    """Insert or update every workload of these tasks in one read, one bulk insert and one bulk update (a
    workload keeps its row, found by uuid, even if it moved from another task); with `deactivate`, those a task
    no longer lists are deactivated, never deleted (one query a task)."""
    seen = [str(w.uuid) for _, workloads, _ in items for w in workloads]
    rows = {str(row.uuid): row for row in Workload.objects.filter(uuid__in=seen)}
    new, changed = [], {}
    for task, workloads, headline in items:
        for position, w in enumerate(workloads):
            values = {
                "task": task,
                "axes": dict(w.axes),
                "inputs": dict(w.inputs),
                "is_headline": w.uuid == headline,
                "position": position,
                "is_active": True,
            }
            row = rows.get(str(w.uuid))
            if row is None:  # new; a later task listing the same uuid takes it over, as in one-by-one writes
                rows[str(w.uuid)] = row = Workload(uuid=w.uuid, **values)
                new.append(row)
                continue
            for key, value in values.items():
                setattr(row, key, value)
            if row.pk is not None:
                changed[row.pk] = row
    Workload.objects.bulk_create(new)
    Workload.objects.bulk_update(list(changed.values()), _WORKLOAD_FIELDS)
    if deactivate:
        for task, workloads, _ in items:
            listed = [str(w.uuid) for w in workloads]
            task.workloads.exclude(uuid__in=listed).update(is_active=False, is_headline=False)


def _sync_packs(packs: list, report: SyncReport) -> dict[str, KnowledgePack]:
    """Every pack's row, written only where it differs (one read, one bulk insert, a save per changed pack)."""
    rows = {row.slug: row for row in KnowledgePack.objects.filter(slug__in=[p.id for p in packs])}
    new = []
    for pack in packs:
        values = {
            "title": pack.title,
            "arch": pack.arch or "",
            "description": pack.description,
            "text": pack.text,
            "token_count": pack.token_count,
            "tokenizer": pack.tokenizer,
            "sha256": pack.sha256,
            "manifest": {"fragments": list(pack.fragments), "headers": list(pack.headers)},
        }
        row = rows.get(pack.id)
        if row is None:
            rows[pack.id] = row = KnowledgePack(slug=pack.id, **values)
            new.append(row)
        elif any(getattr(row, k) != v for k, v in values.items()):
            for key, value in values.items():
                setattr(row, key, value)
            row.save()
        report.packs.append(pack.id)
    KnowledgePack.objects.bulk_create(new)
    return rows


def _sync_targets(items: list[tuple[Task, TaskData, str]], packs: dict[str, KnowledgePack]) -> None:
    """Each task's architecture targets as its data says, written only where they differ; pack links are
    compared every time (packs may change while the task does not). An updated task loses the targets it no
    longer lists."""
    rows = {(t.task_id, t.arch): t for t in ArchitectureTarget.objects.filter(task__in=[t for t, _, _ in items])}
    new, changed = [], []
    for task, data, state in items:
        if state == UPDATED:
            task.targets.exclude(arch__in=list(data.targets)).delete()
        for arch, target in data.targets.items():
            pack = packs.get(data.knowledge_packs.get(arch, ""))
            values = {"families": list(target.families), "note": target.note, "pack_id": pack.pk if pack else None}
            row = rows.get((task.pk, arch))
            if row is None:
                new.append(ArchitectureTarget(task=task, arch=arch, **values))
            elif any(getattr(row, k) != v for k, v in values.items()):
                for key, value in values.items():
                    setattr(row, key, value)
                changed.append(row)
    ArchitectureTarget.objects.bulk_create(new)
    ArchitectureTarget.objects.bulk_update(changed, ["families", "note", "pack"])


@transaction.atomic
def catalog_sync(*, tasks: list[TaskData], packs: list, deactivate_missing: bool = True) -> SyncReport:
    """Make the catalog match the loaded task data. Everything is validated before this is called,
    and this runs in one transaction, so a failure leaves the database as it was. Unchanged rows are read,
    compared and left alone: a sync of an unchanged catalog writes nothing, and a first sync writes each
    table in a few bulk inserts."""
    report = SyncReport()
    pack_rows = _sync_packs(packs, report)
    existing = {t.slug: t for t in Task.objects.filter(slug__in=[d.name for d in tasks])}
    rows: list[tuple[Task, TaskData, str]] = []
    for data in tasks:
        task, state = _task_row(existing.get(data.name), data.name, _task_fields(data))
        getattr(report, state).append(data.name)
        rows.append((task, data, state))
    new = [task for task, _, state in rows if state == CREATED]
    Task.objects.bulk_create(new)
    if any(t.pk is None for t in new):  # a database that does not return the new keys
        ids = dict(Task.objects.filter(slug__in=[t.slug for t in new]).values_list("slug", "pk"))
        for t in new:
            t.pk = ids[t.slug]
    for state in (CREATED, UPDATED):  # a new task has no workloads to deactivate
        items = [(task, data.workloads, data.headline_workload) for task, data, s in rows if s == state]
        _sync_workloads_of(items, deactivate=state == UPDATED)
    _sync_targets(rows, pack_rows)

    if deactivate_missing:
        names = [t.name for t in tasks]
        gone = Task.objects.filter(source=Task.Source.SUITE, is_active=True).exclude(slug__in=names)
        report.deactivated = list(gone.values_list("slug", flat=True))
        gone.update(is_active=False)
    return report


@transaction.atomic
def catalog_import(*, items: list[ImportedDefinition]) -> SyncReport:
    """Add definitions from a FlashInfer-Trace data set. They get the architecture families of every
    target but no baseline (so they can be checked for correctness and instructions, not timed)."""
    report = SyncReport()
    for item in items:
        task, changed = _upsert_task(item.definition.name, _imported_fields(item), report)
        if changed:
            _sync_workloads(task, item.workloads, item.workloads[-1].uuid if item.workloads else None)
        for arch in ARCHES.values():
            ArchitectureTarget.objects.get_or_create(
                task=task, arch=arch.name, defaults={"families": list(arch.families)}
            )
    return report
