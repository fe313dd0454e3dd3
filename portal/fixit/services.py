"""Writes for Fixit: building a dataset version (rows from the selector, files on disk, rows in the database)."""

from __future__ import annotations

import re
import shutil
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from portal.fixit import exports, selectors
from portal.fixit.models import Dataset, DatasetFile, TunedRun
from portal.fixit.pairs import PairFilter, build_rows
from portal.fixit.storage import dataset_folder

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
CONTENT_TYPES = {
    ".jsonl": "application/x-ndjson; charset=utf-8",
    ".parquet": "application/vnd.apache.parquet",
    ".json": "application/json",
    ".md": "text/markdown; charset=utf-8",
}
DEFAULT_ATTRIBUTION = (
    "Kernels and replies written by the models named in each row; verdicts by PTXBench Portal's evaluator. "
    "Row format after PTXBench's Fixit (five-message repair, three-message generation)."
)


class DatasetRefused(Exception):
    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def _check_limits(user: User) -> None:
    if user.is_staff:
        return
    since = timezone.now() - timedelta(days=1)
    if Dataset.objects.filter(created_by=user, created_at__gte=since).count() >= settings.FIXIT_DATASETS_PER_DAY:
        raise DatasetRefused(f"at most {settings.FIXIT_DATASETS_PER_DAY} datasets a day per user", 429)


def dataset_create(
    *,
    user: User,
    name: str,
    filters: dict,
    licence: str = "",
    attribution: str = "",
    description: str = "",
    operator: bool = False,
) -> Dataset:
    """Build the next version of dataset `name` from what is stored now. `operator` (the management command)
    skips the per-user limit. Raises DatasetRefused with a message for people."""
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise DatasetRefused("name must be 1-64 characters of a-z, 0-9, '-' and '_', starting with a letter or digit")
    try:
        pair_filter = PairFilter.from_document(filters if filters is not None else {})
    except ValueError as exc:
        raise DatasetRefused(str(exc))
    licence = licence or settings.FIXIT_DEFAULT_LICENCE
    for label, value, limit in (
        ("licence", licence, 100),
        ("attribution", attribution, 2000),
        ("description", description, 2000),
    ):
        if not isinstance(value, str) or len(value) > limit:
            raise DatasetRefused(f"{label} must be text of at most {limit} characters")
    first = Dataset.objects.filter(name=name).order_by("version").first()
    if first is not None and first.created_by_id != user.id and not user.is_staff:
        raise DatasetRefused(f"the dataset name {name!r} belongs to another user", 403)
    if not operator:
        _check_limits(user)

    rows = build_rows(selectors.trajectory_records(pair_filter), pair_filter)
    repair = [r.document() for r in rows.repair]
    generation = [g.document() for g in rows.generation]
    version = (
        Dataset.objects.filter(name=name).order_by("-version").values_list("version", flat=True).first() or 0
    ) + 1
    manifest_fields = {
        "filters": pair_filter.document(),
        "created_at": timezone.now().isoformat(),
        "created_by": user.username,
        "description": description,
        "licence": licence,
        "attribution": attribution or DEFAULT_ATTRIBUTION,
        "source": "PTXBench Portal: public evaluations of model-run and imported trajectories",
    }
    files = exports.dataset_files(
        name=name, version=version, repair=repair, generation=generation, manifest_fields=manifest_fields
    )
    counts_doc = {"repair": exports.counts(repair, "failed_status"), "generation": exports.counts(generation, None)}
    try:
        with transaction.atomic():
            dataset = Dataset.objects.create(
                name=name,
                version=version,
                created_by=user,
                description=description,
                filters=pair_filter.document(),
                licence=licence,
                attribution=manifest_fields["attribution"],
                counts=counts_doc,
                evaluator_versions=sorted(
                    {d["evaluator_version"] for d in repair + generation if d["evaluator_version"]}
                ),
                repair_rows=len(repair),
                generation_rows=len(generation),
                manifest_sha256=exports.sha256_bytes(files["manifest.json"]),
                source_runs=sorted(
                    {d["run"] for d in repair + generation} | {d["repair_run"] for d in repair if d["repair_run"]}
                ),
                source_evaluations=sorted(
                    {e for d in repair for e in (d["failed_evaluation"], d["fixed_evaluation"]) if e}
                    | {d["evaluation"] for d in generation}
                ),
            )
            folder = dataset_folder(dataset.id)
            try:
                for path, data in files.items():
                    target = folder / path
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
                    DatasetFile.objects.create(
                        dataset=dataset,
                        path=path,
                        sha256=exports.sha256_bytes(data),
                        size=len(data),
                        content_type=CONTENT_TYPES[Path(path).suffix],
                    )
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
    except IntegrityError:
        raise DatasetRefused(f"another version of {name!r} was being built at the same time; try again", 409)
    return dataset


def run_tuned_on_set(*, user: User, run_id: int, name: str, version: int) -> TunedRun:
    """Record that run `run_id`'s model was tuned on dataset `name` v`version` (the run's owner only)."""
    from portal.agent.models import ModelRun

    run = ModelRun.objects.filter(id=run_id).first()
    if run is None or (run.user_id != user.id and not user.is_staff):
        raise DatasetRefused("no such run of yours", 404)
    if run.kind != ModelRun.Kind.MODEL:
        raise DatasetRefused("only a model run can name the dataset its model was tuned on")
    dataset = Dataset.objects.filter(name=name, version=version).first()
    if dataset is None:
        raise DatasetRefused("no such dataset", 404)
    tuned, _ = TunedRun.objects.update_or_create(run=run, defaults={"dataset": dataset})
    return tuned
