"""The task catalog: tasks, their workloads, per-architecture targets and the knowledge packs.

Rows are written only by `services.catalog_sync` from the data in `tasks/`; nothing here is edited by hand.
"""

from __future__ import annotations

from django.db import models

from portal.core.registry_fields import ArchField


class KnowledgePack(models.Model):
    slug = models.SlugField(max_length=64, unique=True)  # pack id from its manifest, e.g. "hopper"
    title = models.CharField(max_length=200)
    arch = ArchField(blank=True)  # blank: the no-knowledge variant
    description = models.TextField(blank=True)
    text = models.TextField()  # the rendered pack, exactly what a model receives
    token_count = models.PositiveIntegerField()
    tokenizer = models.CharField(max_length=64)
    sha256 = models.CharField(max_length=64)
    manifest = models.JSONField(default=dict)
    synced_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Task(models.Model):
    class Source(models.TextChoices):
        SUITE = "suite", "PTXBench suite"
        IMPORT = "import", "Imported FlashInfer Trace definition"

    slug = models.SlugField(max_length=128, unique=True)  # the definition name
    op_type = models.CharField(max_length=64)
    group = models.CharField(max_length=64, db_index=True)  # suite group: gemm, mha_fwd, mha_bwd ...
    description = models.TextField(blank=True)
    definition = models.JSONField()  # the FlashInfer Trace definition as loaded
    reference = models.TextField()  # PyTorch reference source (defines run)
    tags = models.JSONField(default=list)
    flops = models.CharField(max_length=200, blank=True)  # FLOP-count expression over axis names
    baselines = models.JSONField(default=list)  # [{id, name, function, source}]; the first is the speedup reference
    atol = models.FloatField(default=1e-2)
    rtol = models.FloatField(default=1e-2)
    # Keyed by language name (evaluator/languages.py), so a new language needs no column. Signatures: the `run`
    # a kernel file of that language provides; starters: its minimal correct kernel file, where the task has one.
    signatures = models.JSONField(default=dict)
    starters = models.JSONField(default=dict, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.SUITE)
    is_active = models.BooleanField(default=True)  # false once the task left tasks/; kept for old results
    content_sha256 = models.CharField(max_length=64)  # of everything synced, to skip unchanged rows
    synced_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["group", "slug"]

    def __str__(self) -> str:
        return self.slug

    def starter(self, language: str) -> str:
        """The task's starter in that language, "" when it has none."""
        return self.starters.get(language, "")

    def signature(self, language: str) -> str:
        return self.signatures.get(language, "")

    @property
    def inputs(self) -> list[dict]:
        return [{"name": k, **v} for k, v in self.definition.get("inputs", {}).items()]

    @property
    def outputs(self) -> list[dict]:
        return [{"name": k, **v} for k, v in self.definition.get("outputs", {}).items()]

    @property
    def axes(self) -> list[dict]:
        return [{"name": k, **v} for k, v in self.definition.get("axes", {}).items()]


class ArchitectureTarget(models.Model):
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="targets")
    arch = ArchField()
    families = models.JSONField(default=list)  # SASS families that count as using the architecture
    note = models.TextField(blank=True)
    pack = models.ForeignKey(KnowledgePack, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["arch"]
        constraints = [models.UniqueConstraint(fields=["task", "arch"], name="unique_task_arch")]

    def __str__(self) -> str:
        return f"{self.task.slug} @ {self.arch}"


class Workload(models.Model):
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="workloads")
    uuid = models.UUIDField(unique=True)
    axes = models.JSONField()  # values of the variable axes
    inputs = models.JSONField()  # how each input is made (random / scalar / safetensors)
    is_headline = models.BooleanField(default=False)
    position = models.PositiveIntegerField(default=0)  # order in workloads.jsonl
    is_active = models.BooleanField(default=True)

    class Meta:
        ordering = ["task", "position"]

    def __str__(self) -> str:
        axes = ", ".join(f"{k}={v}" for k, v in self.axes.items())
        return f"{self.task.slug} ({axes})"
