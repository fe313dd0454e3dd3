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


class RepairExplanation(models.Model):
    """The reasoning teacher's account of one repair (failure → fix), written by a model and always shown as
    such: `teacher` names it. One per repair-run trajectory; its text becomes the repair row's reasoning."""

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"  # waiting for a place (`waiting_reason` set), or on the `agent` queue
        DONE = "done", "Done"
        FAILED = "failed", "Failed"  # `error` says why (endpoint refused, no reply, the job lost too often)

    trajectory = models.OneToOneField("agent.Trajectory", on_delete=models.CASCADE, related_name="explanation")
    fixed_turn = models.ForeignKey("agent.Turn", on_delete=models.CASCADE, related_name="+")
    teacher = models.CharField(max_length=200)  # model id exactly as sent to the endpoint
    state = models.CharField(max_length=8, choices=State.choices, default=State.QUEUED)
    text = models.TextField(blank=True)
    error = models.TextField(blank=True)
    # Why a queued explanation is not on the `agent` queue yet: it waits for one of the user's places there, shared
    # with their model steps (portal/agent/scheduling.py). Empty once queued.
    waiting_reason = models.CharField(max_length=500, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)  # times its job was queued (reconcile re-queues lost ones)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"explanation of trajectory {self.trajectory_id} by {self.teacher}"


class TunedRun(models.Model):
    """Closing the loop: the owner of a model run says its model was fine-tuned on this dataset version, so the
    run page names it and the dataset page lists the runs of models tuned on it."""

    run = models.OneToOneField("agent.ModelRun", on_delete=models.CASCADE, related_name="fixit_tuning")
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="tuned_runs")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"run {self.run_id} tuned on {self.dataset}"
