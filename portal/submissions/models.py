"""Kernel submissions, their evaluations (one RQ job each; the job id is the evaluation id),
the artifacts kept for audit, and the GPU workers that score them."""

from __future__ import annotations

import uuid
from functools import cached_property

from django.conf import settings
from django.db import models

from evaluator.both_sides.verdict import Verdict
from evaluator.languages import DEFAULT_LANGUAGE
from evaluator.suite.solutions import LANGUAGE_FILES
from portal.catalog.models import Task
from portal.core.registry_fields import ArchField, LanguageField
from portal.core.verdict_record import parse_verdict


def kernel_file_name(language: str) -> str:
    """The file name a submission's source is stored and served under: kernel.py for Triton, else kernel.cu."""
    return LANGUAGE_FILES.get(language, LANGUAGE_FILES["cuda"])


class Submission(models.Model):
    class Kind(models.TextChoices):
        KERNEL = "kernel", "Kernel upload"
        REFERENCE = "reference", "Expert reference"
        AGENT = "agent", "Model turn"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="submissions"
    )
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="submissions")
    arch = ArchField()
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.KERNEL)
    # The kernel language: a .cu file through nvcc, or a Python file of @triton.jit kernels (docs/kernel-abi.md).
    language = LanguageField(default=DEFAULT_LANGUAGE.name)
    name = models.CharField(max_length=200, blank=True)  # label shown in tables (file name, solution name)
    source = models.TextField()
    source_sha256 = models.CharField(max_length=64)
    source_bytes = models.PositiveIntegerField()
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # Hidden by an admin: gone from every public table and page, evidence kept.
    is_hidden = models.BooleanField(default=False)
    # Made up by `seed_leaderboard` (demo or benchmark data), never measured: pages show a "synthetic demo" banner.
    is_synthetic = models.BooleanField(default=False, db_index=True)
    hidden_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["task", "arch", "source_sha256"], name="submission_dedup")]

    def __str__(self) -> str:
        return f"#{self.pk} {self.task.slug} @ {self.arch}"


class Evaluation(models.Model):
    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"  # a verdict was recorded, whatever it says
        FAILED = "failed", "Failed"  # the infrastructure failed for good; infra_error says why
        CANCELLED = "cancelled", "Cancelled"

    ACTIVE_STATES = (State.QUEUED, State.RUNNING)

    class ReviewState(models.TextChoices):
        NONE = "", "Not needed"
        HELD = "held", "Held for review"
        CONFIRMED = "confirmed", "Confirmed by an admin"
        REJECTED = "rejected", "Rejected by an admin"

    class Purpose(models.TextChoices):
        PUBLIC = "public", "Public evaluation"
        # Run after a kernel upload passes: fresh inputs from a secret seed (and hidden workloads where the task has
        # them). It must pass too before the kernel ranks; the submitter only ever sees pass or fail.
        HIDDEN = "hidden", "Ranked check (secret seed)"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)  # also the RQ job id
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="evaluations")
    purpose = models.CharField(max_length=8, choices=Purpose.choices, default=Purpose.PUBLIC, db_index=True)
    seed = models.CharField(max_length=64, blank=True)  # hex run seed for the evaluator; secret for hidden checks
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED, db_index=True)
    queue = models.CharField(max_length=32)
    stages = models.CharField(max_length=120, default="all")  # what the evaluator was asked to run
    stage = models.CharField(max_length=32, blank=True)  # stage in progress (or last reached)
    stage_message = models.TextField(blank=True)
    progress = models.JSONField(default=list)  # [{stage, state, message, at}] as the evaluator reports them
    attempts = models.PositiveSmallIntegerField(default=0)
    worker_name = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    infra_error = models.TextField(blank=True)

    verdict = models.JSONField(null=True, blank=True)  # the evaluator's verdict document, as produced
    # Summary columns copied from the verdict for tables and sorting.
    status = models.CharField(max_length=32, blank=True, db_index=True)
    arch_status = models.CharField(max_length=32, blank=True)
    arch_full = models.BooleanField(default=False)
    # verified, but the timed calls' use of the target instructions rests on the profiled call alone (the verdict's
    # arch_check.rests_on_profile; its notes say why)
    arch_rests_on_profile = models.BooleanField(default=False)
    ptxbench_verified = models.BooleanField(default=False)
    tensor_core_share = models.FloatField(null=True, blank=True)
    # Named as the verdict names them (evaluator/both_sides/verdict.py `Performance`; the interval `speedup_ci95` by its ends).
    speedup_factor = models.FloatField(null=True, blank=True)
    speedup_ci95_low = models.FloatField(null=True, blank=True)
    speedup_ci95_high = models.FloatField(null=True, blank=True)
    latency_ms = models.FloatField(null=True, blank=True)
    baseline_latency_ms = models.FloatField(null=True, blank=True)
    tflops = models.FloatField(null=True, blank=True)
    fraction_of_peak = models.FloatField(null=True, blank=True)
    gpu_name = models.CharField(max_length=100, blank=True)
    gpu_uuid = models.CharField(max_length=100, blank=True)
    driver_version = models.CharField(max_length=40, blank=True)
    evaluator_version = models.CharField(max_length=40, blank=True)
    # Plausibility (achieved rate above the GPU's peak, speedup above the bound): held until an admin decides.
    review_state = models.CharField(max_length=16, choices=ReviewState.choices, default=ReviewState.NONE, blank=True)
    review_reason = models.TextField(blank=True)
    # Evidence files the portal did not keep, and why (a byte cap, a file it would not read): [{name, bytes, reason}].
    artifacts_not_kept = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["state", "heartbeat_at"], name="evaluation_liveness")]

    def __str__(self) -> str:
        return f"evaluation {self.id} ({self.state})"

    @property
    def is_active(self) -> bool:
        return self.state in self.ACTIVE_STATES

    @cached_property
    def verdict_record(self) -> Verdict | None:
        """The stored verdict as the evaluator's typed record, read once per row object (portal/core/verdict_record.py);
        None when there is none or it cannot be read."""
        return parse_verdict(self.verdict)


class Artifact(models.Model):
    """A file kept for audit (kernel source, SASS, Nsight Compute CSV, compiler log, verdict JSON),
    stored under ARTIFACTS_DIR and served as an attachment with its sha256."""

    class Origin(models.TextChoices):
        # Who decided the file's bytes. Only EVALUATOR files are the evaluator's evidence (the SASS the page shows,
        # the Nsight Compute tables); the rest are shown as what they are (portal/submissions/evidence_files.py).
        EVALUATOR = "evaluator", "written by the evaluator"
        SOURCE = "source", "the source as submitted"
        TOOL = "tool", "compiler output (may quote the submission)"
        SUBMISSION = "submission", "written by the submission"
        UNKNOWN = "", "origin not recorded (stored before origins were)"

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="artifacts")
    name = models.CharField(max_length=100)
    origin = models.CharField(max_length=16, choices=Origin.choices, blank=True)
    content_type = models.CharField(max_length=100)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveBigIntegerField()
    path = models.CharField(max_length=400)  # relative to ARTIFACTS_DIR
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["evaluation", "name"], name="unique_artifact_name")]

    def __str__(self) -> str:
        return self.name


class GpuWorker(models.Model):
    """A registered worker process: one per GPU, serving its architecture's queue, heartbeating."""

    name = models.CharField(max_length=200, unique=True)  # the RQ worker name
    host = models.CharField(max_length=200)
    pid = models.PositiveIntegerField(default=0)
    arch = models.CharField(max_length=16, blank=True)  # empty for CPU-only workers
    queues = models.CharField(max_length=200)
    gpu_index = models.CharField(max_length=16, blank=True)  # CUDA_VISIBLE_DEVICES it is pinned to
    gpu_name = models.CharField(max_length=100, blank=True)
    gpu_uuid = models.CharField(max_length=100, blank=True)
    driver_version = models.CharField(max_length=40, blank=True)
    cuda_version = models.CharField(max_length=40, blank=True)
    torch_version = models.CharField(max_length=40, blank=True)
    mode = models.CharField(max_length=40, blank=True)  # e.g. "gpu", "cpu-stages-only"
    started_at = models.DateTimeField(auto_now_add=True)
    heartbeat_at = models.DateTimeField()
    stopped_at = models.DateTimeField(null=True, blank=True)
    current_evaluation = models.ForeignKey(
        Evaluation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["arch", "host", "name"]

    def __str__(self) -> str:
        return self.name
