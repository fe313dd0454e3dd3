"""Model-endpoint runs: a model behind an OpenAI-compatible endpoint writes kernels for a set of tasks over
several turns of execution feedback. A run has trajectories (one conversation each), a trajectory has turns
(one model call, at most one evaluation), and the per-(run, task, k) metrics are stored, never computed
per request."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.db import models

from evaluator.languages import DEFAULT_LANGUAGE
from portal.catalog.models import Task
from portal.core.registry_fields import ArchField, LanguageField
from portal.submissions.models import Evaluation

# The turn limits the published protocol reports metrics for (the leaderboard's k).
METRIC_KS = (1, 4, 8)


def metric_ks(turns: int) -> list[int]:
    """The turn limits a run's metrics are stored for: every k from 1 to its turns (its page shows each, a 3-turn
    run showed k = 1 alone), which include the protocol's METRIC_KS up to its turns."""
    return list(range(1, max(1, turns) + 1))


class ModelRun(models.Model):
    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"  # every trajectory stopped, whatever the reason
        FAILED = "failed", "Failed"  # the run could not go on at all; `error` says why
        CANCELLED = "cancelled", "Cancelled"

    ACTIVE_STATES = (State.QUEUED, State.RUNNING)

    class Kind(models.TextChoices):
        MODEL = "model", "Model run"
        # Fixit: a teacher repairs stored failing kernels (each trajectory's `repair_of`); never on the boards.
        REPAIR = "repair", "Repair run"

    class PackVariant(models.TextChoices):
        ARCH = "arch", "Architecture knowledge pack"
        NONE = "none", "No knowledge (ablation)"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="model_runs")
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.MODEL, db_index=True)
    model = models.CharField(max_length=200)  # model id exactly as sent to the endpoint
    display_name = models.CharField(max_length=200)
    base_url = models.CharField(max_length=500)  # stored whole, shown only as its host
    api_key_encrypted = models.TextField(blank=True)  # Fernet token; decrypted only inside `agent` queue jobs
    api_key_last4 = models.CharField(max_length=4, blank=True)
    temperature = models.FloatField(default=0.7)
    max_output_tokens = models.PositiveIntegerField(default=16384)
    request_timeout = models.FloatField(default=600.0)  # seconds for one HTTP request to the endpoint
    max_retries = models.PositiveSmallIntegerField(default=3)  # extra attempts after 429/5xx/timeouts
    arch = ArchField()
    # The kernel language the model writes: CUDA replies in a ```cuda block, Triton in a ```python block.
    language = LanguageField(default=DEFAULT_LANGUAGE.name)
    tasks = models.ManyToManyField(Task, related_name="model_runs")
    pack_variant = models.CharField(max_length=8, choices=PackVariant.choices, default=PackVariant.ARCH)
    turns = models.PositiveSmallIntegerField(default=8)
    trajectories_per_task = models.PositiveSmallIntegerField(default=4)
    target_speedup = models.FloatField(default=1.2)
    # Evaluations this run may start over its life (AGENT_RUN_EVALUATION_BUDGET when it was created); None: no
    # run budget (operators' runs from manage.py run_model / import_trajectory). The owner's budget still applies.
    evaluation_budget = models.PositiveIntegerField(null=True, blank=True)
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED, db_index=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    is_hidden = models.BooleanField(default=False)
    # Made up by `seed_leaderboard` (demo or benchmark data), never run against a model: pages show a banner.
    is_synthetic = models.BooleanField(default=False, db_index=True)
    hidden_reason = models.TextField(blank=True)
    gpu_name = models.CharField(max_length=100, blank=True)  # from its evaluations, once one reports it

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"run #{self.pk} {self.display_name} @ {self.arch}"

    @property
    def endpoint_host(self) -> str:
        """What pages may show of the endpoint: host and port, never path, query or credentials."""
        parts = urlsplit(self.base_url)
        host = parts.hostname or "?"
        if ":" in host:
            host = f"[{host}]"
        try:
            port = parts.port
        except ValueError:
            port = None
        return f"{host}:{port}" if port else host

    @property
    def api_key_hint(self) -> str:
        return f"••••{self.api_key_last4}" if self.api_key_last4 else ""

    @property
    def is_active(self) -> bool:
        return self.state in self.ACTIVE_STATES


class Trajectory(models.Model):
    class State(models.TextChoices):
        RUNNING = "running", "Running"
        DONE = "done", "Done"  # stopped normally: target reached or turns used up
        FAILED = "failed", "Failed"  # stopped by an error (model endpoint, evaluation); stop_message says which
        CANCELLED = "cancelled", "Cancelled"

    class StopReason(models.TextChoices):
        NONE = "", "Not stopped"
        TARGET_REACHED = "target_reached", "Target reached"
        TURNS_EXHAUSTED = "turns_exhausted", "Turns exhausted"
        MODEL_ERROR = "model_error", "Model endpoint error"
        EVALUATION_FAILED = "evaluation_failed", "Evaluation infrastructure failed"
        STEP_CRASHED = "step_crashed", "A loop step crashed repeatedly"
        BUDGET_EXHAUSTED = "budget_exhausted", "The run's evaluation budget is used up"
        CANCELLED = "cancelled", "Cancelled"

    run = models.ForeignKey(ModelRun, on_delete=models.CASCADE, related_name="trajectories")
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="+")
    index = models.PositiveSmallIntegerField()  # 0-based among the run's trajectories for this task
    state = models.CharField(max_length=16, choices=State.choices, default=State.RUNNING, db_index=True)
    stop_reason = models.CharField(max_length=32, choices=StopReason.choices, default="", blank=True)
    stop_message = models.TextField(blank=True)  # the explanation shown with the stop reason
    messages = models.JSONField(default=list)  # [{role, content}], exactly what the model was sent and said
    # Repair runs: the stored failing turn this trajectory's teacher was asked to repair.
    repair_of = models.ForeignKey("Turn", null=True, blank=True, on_delete=models.SET_NULL, related_name="repairs")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "task__slug", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "task", "index"], name="unique_trajectory_index")]

    def __str__(self) -> str:
        return f"{self.run_id}/{self.task.slug}/t{self.index}"

    @property
    def is_finished(self) -> bool:
        return self.state != self.State.RUNNING


class Turn(models.Model):
    class State(models.TextChoices):
        CALLING_MODEL = "calling_model", "Calling the model"
        EVALUATING = "evaluating", "Evaluating"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    class Outcome(models.TextChoices):
        """How a finished turn ended: with the evaluator's verdict (`verdict_status`), or one of the agent's own
        ends. Apart from `state` (where the turn is in the loop: portal/agent/states.py)."""

        NONE = "", "Not finished"
        VERDICT = "verdict", "Scored by the evaluator"
        NO_KERNEL = "no_kernel", "No kernel in the reply, or the kernel was refused"
        MODEL_ERROR = "model_error", "Model endpoint error"
        EVALUATION_FAILED = "evaluation_failed", "Evaluation infrastructure failed"
        OVER_BUDGET = "over_budget", "The reply came, but the run's evaluation budget was used up"

    # The published status (`published_status`) of turns that ended without a verdict: PTXBench's own names.
    STATUS_NO_KERNEL = "NO_KERNEL"
    STATUS_MODEL_ERROR = "MODEL_ERROR"
    STATUS_EVALUATION_FAILED = "EVALUATION_FAILED"
    STATUS_OVER_BUDGET = "OVER_BUDGET"
    OUTCOME_STATUS = {
        Outcome.NO_KERNEL: STATUS_NO_KERNEL,
        Outcome.MODEL_ERROR: STATUS_MODEL_ERROR,
        Outcome.EVALUATION_FAILED: STATUS_EVALUATION_FAILED,
        Outcome.OVER_BUDGET: STATUS_OVER_BUDGET,
    }

    trajectory = models.ForeignKey(Trajectory, on_delete=models.CASCADE, related_name="turns")
    index = models.PositiveSmallIntegerField()  # 0-based
    state = models.CharField(max_length=16, choices=State.choices, default=State.CALLING_MODEL, db_index=True)
    reply = models.TextField(blank=True)  # raw model text
    replied_at = models.DateTimeField(null=True, blank=True)  # set once the reply is stored: never call again
    finish_reason = models.CharField(max_length=32, blank=True)
    kernel = models.TextField(blank=True)  # extracted source; empty when the reply had none
    evaluation = models.ForeignKey(Evaluation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    outcome = models.CharField(max_length=24, choices=Outcome.choices, default="", blank=True)
    verdict_status = models.CharField(max_length=32, blank=True)  # the evaluator's status; only with a verdict
    arch_status = models.CharField(max_length=32, blank=True)
    speedup_factor = models.FloatField(null=True, blank=True)  # its evaluation's
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    reasoning_tokens = models.PositiveIntegerField(null=True, blank=True)  # when the server reports them
    model_latency_s = models.FloatField(null=True, blank=True)  # the successful request only
    model_attempts = models.PositiveSmallIntegerField(default=0)  # HTTP attempts, retries included
    feedback = models.TextField(blank=True)  # the user message built from the verdict
    error = models.TextField(blank=True)  # why the turn failed (model endpoint, evaluation, crash)
    # Step machinery: the RQ job carrying the turn's current step, how often its model step started,
    # and until when the worker that claimed the model call is presumed alive.
    job_id = models.CharField(max_length=64, blank=True)
    step_attempts = models.PositiveSmallIntegerField(default=0)
    lease_until = models.DateTimeField(null=True, blank=True)
    # Why the model step waits in the database instead of the queue (the user's evaluation budget, or the
    # user's other model calls: portal/agent/scheduling.py); empty when it is queued, running or past that step.
    waiting_reason = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["trajectory", "index"]
        constraints = [models.UniqueConstraint(fields=["trajectory", "index"], name="unique_turn_index")]

    def __str__(self) -> str:
        return f"{self.trajectory} turn {self.index}"

    @property
    def published_status(self) -> str:
        """The one status word pages, the API, the exports and Fixit show (their `status`): the verdict's status when
        the evaluator gave one, else the outcome's own name (NO_KERNEL, ...); "" while the turn runs. Derived from
        `outcome` and `verdict_status`, never stored."""
        if self.outcome == self.Outcome.VERDICT:
            return self.verdict_status
        return self.OUTCOME_STATUS.get(self.outcome, "")

    @property
    def total_tokens(self) -> int:
        return (self.prompt_tokens or 0) + (self.completion_tokens or 0)


class RunTaskMetrics(models.Model):
    """Metrics of one run on one task for turn limit k, recomputed by `metrics.compute_task_metrics`
    whenever a turn of that task finishes."""

    run = models.ForeignKey(ModelRun, on_delete=models.CASCADE, related_name="metrics")
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="+")
    arch = ArchField()
    k = models.PositiveSmallIntegerField()
    trajectories = models.PositiveSmallIntegerField()  # n
    correct = models.PositiveSmallIntegerField()  # trajectories with a correct turn among the first k
    correct_arch = models.PositiveSmallIntegerField()  # ... a correct turn whose arch status is `verified`
    best_speedup = models.FloatField()  # max over trajectories and turns < k; incorrect turns count 0
    tokens = models.PositiveBigIntegerField()  # prompt + completion tokens of turns < k
    complete = models.BooleanField(default=False)  # every trajectory finished: the numbers are final
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["run", "task__slug", "k"]
        constraints = [models.UniqueConstraint(fields=["run", "task", "k"], name="unique_run_task_k")]

    def __str__(self) -> str:
        return f"{self.run_id}/{self.task_id} k={self.k}"

    @property
    def correct_rate(self) -> float | None:
        return self.correct / self.trajectories if self.trajectories else None

    @property
    def correct_arch_rate(self) -> float | None:
        return self.correct_arch / self.trajectories if self.trajectories else None
