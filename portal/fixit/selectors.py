"""Reads for Fixit: the stored trajectories that may become rows, and the datasets.

What may be used at all is decided here, in `usable_turns`, and nowhere else: turns of public runs (not hidden,
not by a banned user, per `portal.agent.visibility`) whose evaluation is a public one (never a ranked check with
its secret seed and hidden workloads), finished with a verdict, not held or rejected in review, of a submission
that is not hidden; never synthetic demo rows. Turns that never reached the evaluator count only when they had no kernel (NO_KERNEL)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from django.db.models import Q, QuerySet
from django.http import Http404

from portal.agent import visibility
from portal.agent.models import ModelRun, Trajectory, Turn
from portal.core.serializers import canonical_names
from portal.fixit.models import Dataset, DatasetFile, RepairExplanation
from portal.fixit.pairs import PairFilter, TrajectoryRecord, TurnRecord
from portal.fixit.storage import dataset_folder
from portal.submissions.models import Evaluation


def _source_runs() -> QuerySet[ModelRun]:
    """Runs whose turns may become rows: public ones, never the made-up demo data (`seed_leaderboard`)."""
    return visibility.public_runs(ModelRun.objects.filter(is_synthetic=False))


def usable_turns() -> QuerySet[Turn]:
    public_runs = _source_runs()
    evaluated = Q(
        evaluation__purpose=Evaluation.Purpose.PUBLIC,
        evaluation__state=Evaluation.State.DONE,
        evaluation__verdict__isnull=False,
        evaluation__submission__is_hidden=False,
        evaluation__submission__is_synthetic=False,
    ) & ~Q(evaluation__review_state__in=[Evaluation.ReviewState.HELD, Evaluation.ReviewState.REJECTED])
    no_kernel = Q(outcome=Turn.Outcome.NO_KERNEL, evaluation__isnull=True)
    return Turn.objects.filter(state=Turn.State.DONE, trajectory__run__in=public_runs.values("id")).filter(
        evaluated | no_kernel
    )


def _first(messages: list, role: str) -> str:
    for m in messages:
        if isinstance(m, dict) and m.get("role") == role:
            return str(m.get("content", ""))
    return ""


def _turn_record(turn: Turn) -> TurnRecord:
    evaluation = turn.evaluation
    return TurnRecord(
        index=turn.index,
        status=turn.published_status,
        arch_status=turn.arch_status,
        speedup_factor=turn.speedup_factor,
        kernel=turn.kernel,
        reply=turn.reply,
        feedback=turn.feedback,
        evaluation_id=str(evaluation.id) if evaluation else None,
        evaluator_version=evaluation.evaluator_version if evaluation else "",
        finish_reason=turn.finish_reason,
    )


def trajectory_records(pair_filter: PairFilter) -> list[TrajectoryRecord]:
    """Every public trajectory the filter's arch/task/model admit, with its usable turns. A repair run's
    trajectory counts only while the failing turn it repairs is usable too; its model is that turn's model."""
    public = _source_runs().values("id")
    trajectories = Trajectory.objects.select_related("run", "task", "repair_of__trajectory__run").filter(run__in=public)
    if pair_filter.arches:
        trajectories = trajectories.filter(run__arch__in=pair_filter.arches)
    if pair_filter.tasks:
        trajectories = trajectories.filter(task__slug__in=pair_filter.tasks)
    if pair_filter.models:
        trajectories = trajectories.filter(
            Q(run__kind=ModelRun.Kind.MODEL, run__model__in=pair_filter.models)
            | Q(run__kind=ModelRun.Kind.REPAIR, repair_of__trajectory__run__model__in=pair_filter.models)
        )
    trajectories = list(trajectories.order_by("run_id", "id"))
    wanted = [t.id for t in trajectories]
    sources = [t.repair_of_id for t in trajectories if t.repair_of_id]
    turns_by_trajectory: dict[int, list[TurnRecord]] = {}
    for turn in (
        usable_turns().filter(trajectory__in=wanted).select_related("evaluation").order_by("trajectory_id", "index")
    ):
        turns_by_trajectory.setdefault(turn.trajectory_id, []).append(_turn_record(turn))
    usable_sources = {
        turn.id: _turn_record(turn)
        for turn in usable_turns()
        .filter(id__in=sources, trajectory__run__in=public, trajectory__run__kind=ModelRun.Kind.MODEL)
        .select_related("evaluation")
    }
    explanations = {
        e.trajectory_id: e
        for e in RepairExplanation.objects.filter(
            trajectory__in=wanted, state=RepairExplanation.State.DONE
        ).select_related("fixed_turn")
    }
    records = []
    for t in trajectories:
        repair_of = None
        if t.run.kind == ModelRun.Kind.REPAIR:
            repair_of = usable_sources.get(t.repair_of_id)
            if repair_of is None:
                continue  # the failure it repairs is gone, hidden or held
        source = t.repair_of.trajectory if repair_of else None
        records.append(
            TrajectoryRecord(
                run_id=t.run_id,
                trajectory_id=t.id,
                model=source.run.model if source else t.run.model,
                arch=t.run.arch,
                task=t.task.slug,
                system=_first(source.messages if source else t.messages, "system"),
                prompt=_first(source.messages if source else t.messages, "user"),
                turns=tuple(turns_by_trajectory.get(t.id, ())),
                repair_of=repair_of,
                repair_source_run=source.run_id if source else 0,
                repair_source_trajectory=source.id if source else 0,
                teacher=t.run.model if source else "",
                reasoning=explanations[t.id].text if t.id in explanations else "",
                reasoning_by=explanations[t.id].teacher if t.id in explanations else "",
                reasoning_turn=explanations[t.id].fixed_turn.index if t.id in explanations else None,
            )
        )
    return records


def dataset_list() -> QuerySet[Dataset]:
    return Dataset.objects.select_related("created_by").prefetch_related("files").order_by("name", "-version")


def dataset_detail(name: str, version: int) -> Dataset:
    dataset = dataset_list().filter(name=name, version=version).first()
    if dataset is None:
        raise Http404("no such dataset")
    return dataset


def dataset_withdrawn(dataset: Dataset) -> bool:
    """True once anything its rows came from is no longer usable (run hidden, user banned, evaluation held,
    rejected or its submission hidden): the version is then listed as withdrawn and its files are not served."""
    if dataset.source_runs:
        public = _source_runs().filter(id__in=dataset.source_runs).count()
        if public != len(dataset.source_runs):
            return True
    if dataset.source_evaluations:
        usable = usable_turns().filter(evaluation_id__in=dataset.source_evaluations).values("evaluation_id")
        if usable.distinct().count() != len(dataset.source_evaluations):
            return True
    return False


def dataset_file_path(dataset: Dataset, path: str) -> tuple[DatasetFile, Path]:
    """A file of a dataset version on disk, checked against its stored sha256 (read in chunks). Raises Http404
    for a path the dataset does not list (or a withdrawn version), ValueError when the bytes no longer match."""
    row = next((f for f in dataset.files.all() if f.path == path), None)
    if row is None or dataset_withdrawn(dataset):
        raise Http404("no such file")
    target = dataset_folder(dataset.id) / row.path
    digest = hashlib.sha256()
    with target.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    if digest.hexdigest() != row.sha256:
        raise ValueError(f"{dataset} {row.path}: the file on disk does not match its sha256")
    return row, target


def dataset_sample(dataset: Dataset) -> dict | None:
    """The first repair row (or, when there is none, the first generation row), for the dataset page."""
    for path in ("repair/train.jsonl", "generation/train.jsonl"):
        try:
            _, target = dataset_file_path(dataset, path)
            with target.open("rb") as handle:
                first = handle.readline()
        except (Http404, OSError, ValueError):
            continue
        if first.strip():
            # A version 1 file (format fixit-1) says `speedup`: read with the canonical names.
            return canonical_names(json.loads(first))
    return None


def dataset_document(dataset: Dataset) -> dict:
    """The public JSON view of a dataset version (the API's list and detail)."""
    base = f"/api/v2/datasets/{dataset.name}/{dataset.version}"
    return {
        "name": dataset.name,
        "version": dataset.version,
        "created_at": dataset.created_at.isoformat(),
        "created_by": dataset.created_by.username,
        "description": dataset.description,
        "filters": dataset.filters,
        "licence": dataset.licence,
        "attribution": dataset.attribution,
        "counts": dataset.counts,
        "evaluator_versions": dataset.evaluator_versions,
        "manifest_sha256": dataset.manifest_sha256,
        "withdrawn": dataset_withdrawn(dataset),
        "tuned_runs": sorted(
            visibility.public_runs(ModelRun.objects.filter(fixit_tuning__dataset=dataset)).values_list("id", flat=True)
        ),
        "url": base,
        "files": [
            {"path": f.path, "sha256": f.sha256, "bytes": f.size, "url": f"{base}/files/{f.path}"}
            for f in dataset.files.all()
        ],
    }
