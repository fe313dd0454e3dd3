"""Fixit datasets: a saved filter and the rows it gave at one point in time, written once as files on disk
(under FIXIT_DIR/<id>/) with their sha256, never changed afterwards. A new build of the same name is a new
version."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Dataset(models.Model):
    name = models.SlugField(max_length=64)  # shared by every version; owned by whoever built version 1
    version = models.PositiveIntegerField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    description = models.TextField(blank=True)
    filters = models.JSONField()  # PairFilter.document()
    licence = models.CharField(max_length=100)
    attribution = models.TextField(blank=True)
    counts = models.JSONField()  # {"repair": {rows, by_task, by_arch, by_status}, "generation": {...}}
    evaluator_versions = models.JSONField(default=list)
    repair_rows = models.PositiveIntegerField()
    generation_rows = models.PositiveIntegerField()
    manifest_sha256 = models.CharField(max_length=64)
    # What the rows came from, so a version whose source was later hidden, banned or held is withdrawn.
    source_runs = models.JSONField(default=list)
    source_evaluations = models.JSONField(default=list)

    class Meta:
        ordering = ["name", "-version"]
        constraints = [models.UniqueConstraint(fields=["name", "version"], name="unique_dataset_version")]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"


class DatasetFile(models.Model):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=100)  # relative to the dataset's folder, e.g. "repair/train.parquet"
    sha256 = models.CharField(max_length=64)
    size = models.PositiveBigIntegerField()
    content_type = models.CharField(max_length=100)

    class Meta:
        ordering = ["path"]
        constraints = [models.UniqueConstraint(fields=["dataset", "path"], name="unique_dataset_file")]

    def __str__(self) -> str:
        return f"{self.dataset} {self.path}"
