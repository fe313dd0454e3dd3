"""Writes for model-endpoint runs: create a run, drive each turn one step at a time, stop trajectories,
finish runs, and repair what a crash left behind.

The loop is a chain of small RQ jobs on the `agent` queue (call the model → submit the kernel → the GPU
worker scores it → the evaluation_finished signal queues the verdict step → the next turn's model call), so
no worker waits while a model thinks or a GPU runs. Each step moves a turn forward with a conditional
update (`states.transition`, from the tables in portal/agent/states.py), so running a step twice does its work
once; a stored reply (`replied_at`) is never requested again. A step answers with a typed `states.StepOutcome`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from evaluator.both_sides.arches import ARCHES
from evaluator.languages import DEFAULT_LANGUAGE
from portal.accounts.services import user_is_banned
from portal.agent import crypto, metrics, prompts, queueing, scheduling, states
from portal.agent.client import EndpointConfig, ModelCallError, ModelReply, chat_completion
from portal.agent.extract import extract_kernel
from portal.agent.feedback import infrastructure_feedback, verdict_feedback
from portal.agent.models import ModelRun, RunTaskMetrics, Trajectory, Turn, metric_ks
from portal.agent.ssrf import Allowlist, EndpointRefused, check_endpoint_url
from portal.agent.states import RUN, TRAJECTORY, TURN, Step, StepOutcome
from portal.catalog.models import KnowledgePack, Task
from portal.submissions import quotas
from portal.submissions.models import Evaluation, Submission
from portal.submissions.services import SubmissionRefused, submission_create

log = logging.getLogger(__name__)


class RunRefused(SubmissionRefused):
    """A run request that is invalid or over a limit: the one refusal type of submissions (message, HTTP
    `status`, `retry_after`, `resets_at`, `body()`), named for the callers that start runs."""


@dataclass(frozen=True)
class RunRequest:
    base_url: str
    model: str
    arch: str
    task_slugs: list[str]
    display_name: str = ""
    api_key: str = ""
    pack_variant: str = ModelRun.PackVariant.ARCH
    turns: int = 8
    trajectories_per_task: int = 4
    target_speedup: float = 1.2
    temperature: float = 0.7
    max_output_tokens: int = 16384
    request_timeout: float = 600.0
    max_retries: int = 3
    language: str = DEFAULT_LANGUAGE.name  # the kernel language the model writes (a name in the registry)


def _bounded(name: str, value, low, high):
    if value is None or not (low <= value <= high):
        raise RunRefused(f"{name} must be between {low} and {high}")
    return value


# --------------------------------------------------------------------------- creating and cancelling runs


def run_create(
    *, user: User, request: RunRequest, check_limits: bool = True, repairs: list[tuple[Turn, list[dict]]] | None = None
) -> ModelRun:
    """Validate a run request (endpoint against SSRF, tasks, bounds, the user's limits) and start it.
    `repairs` (Fixit, `portal.fixit.repairs`): a repair run, one trajectory per (failing turn, opening
    messages) instead of `trajectories_per_task` per task; same checks, limits, budget and fairness."""
    if not user.is_active or user_is_banned(user):
        raise RunRefused("this account may not start runs", 403)
    if request.arch not in ARCHES:
        raise RunRefused(f"unknown architecture {request.arch!r} (known: {', '.join(sorted(ARCHES))})")
    languages = [lang.name for lang in prompts.prompted_languages()]
    if request.language not in languages:
        raise RunRefused(f"language must be one of {', '.join(languages)}")
    if request.pack_variant not in ModelRun.PackVariant.values:
        raise RunRefused("pack must be 'arch' or 'none'")
    model = (request.model or "").strip()
    if not model or len(model) > 200:
        raise RunRefused("the model id is required (at most 200 characters)")
    base_url = (request.base_url or "").strip()
    if len(base_url) > 500:
        raise RunRefused("the endpoint URL is too long (500 characters at most)")
    try:
        check_endpoint_url(base_url)
    except EndpointRefused as exc:
        raise RunRefused(f"endpoint refused: {exc.message}")
    if len(request.api_key) > 1000:
        raise RunRefused("the API key is too long")
    _bounded("turns", request.turns, 1, settings.AGENT_MAX_TURNS)
    _bounded("trajectories per task", request.trajectories_per_task, 1, settings.AGENT_MAX_TRAJECTORIES)
    _bounded("target speedup", request.target_speedup, 0.01, 1000.0)
    _bounded("temperature", request.temperature, 0.0, 2.0)
    _bounded("max output tokens", request.max_output_tokens, 16, 1_000_000)
    _bounded("request timeout (seconds)", request.request_timeout, 1.0, settings.AGENT_REQUEST_TIMEOUT_MAX_S)
    _bounded("retries", request.max_retries, 0, settings.AGENT_MAX_RETRIES_MAX)
    slugs = list(dict.fromkeys(s.strip() for s in request.task_slugs if s.strip()))
    if not slugs:
        raise RunRefused("choose at least one task")
    if len(slugs) > settings.AGENT_MAX_TASKS:
        raise RunRefused(f"at most {settings.AGENT_MAX_TASKS} tasks per run")
    tasks = list(Task.objects.filter(slug__in=slugs, is_active=True, targets__arch=request.arch).order_by("slug"))
    missing = sorted(set(slugs) - {t.slug for t in tasks})
    if missing:
        raise RunRefused(f"unknown, retired or not targeting {request.arch}: {', '.join(missing)}")
    needed = len(repairs) if repairs is not None else len(tasks) * request.trajectories_per_task
    if check_limits and needed > settings.AGENT_RUN_EVALUATION_BUDGET:
        what = (
            f"{needed} failing kernels (one attempt each)"
            if repairs is not None
            else f"{len(tasks)} tasks × {request.trajectories_per_task} trajectories"
        )
        fewer = "fewer kernels" if repairs is not None else "fewer tasks or trajectories"
        raise RunRefused(
            f"{what} need at least {needed} evaluations; "
            f"a run may start at most {settings.AGENT_RUN_EVALUATION_BUDGET}: choose {fewer}"
        )

    with transaction.atomic():
        if check_limits:
            _check_limits(user)
        run = ModelRun.objects.create(
            user=user,
            model=model,
            display_name=(request.display_name or model).strip()[:200],
            base_url=base_url,
            api_key_encrypted=crypto.api_key_encrypt(request.api_key),
            api_key_last4=crypto.api_key_last4(request.api_key),
            temperature=request.temperature,
            max_output_tokens=request.max_output_tokens,
            request_timeout=request.request_timeout,
            max_retries=request.max_retries,
            arch=request.arch,
            language=request.language,
            pack_variant=request.pack_variant,
            turns=request.turns,
            trajectories_per_task=request.trajectories_per_task,
            target_speedup=request.target_speedup,
            evaluation_budget=settings.AGENT_RUN_EVALUATION_BUDGET if check_limits else None,
            kind=ModelRun.Kind.REPAIR if repairs is not None else ModelRun.Kind.MODEL,
        )
        run.tasks.set(tasks)
        first_turns = []
        by_slug = {t.slug: t for t in tasks}
        for source, opening in repairs or []:
            task = by_slug[source.trajectory.task.slug]
            index = Trajectory.objects.filter(run=run, task=task).count()
            trajectory = Trajectory.objects.create(run=run, task=task, index=index, messages=opening, repair_of=source)
            first_turns.append(Turn.objects.create(trajectory=trajectory, index=0))
        for task in tasks if repairs is None else []:
            opening = opening_messages(run=run, task=task)
            for index in range(run.trajectories_per_task):
                trajectory = Trajectory.objects.create(run=run, task=task, index=index, messages=opening)
                first_turns.append(Turn.objects.create(trajectory=trajectory, index=0))
            metrics_refresh(run=run, task=task)
        for task in tasks if repairs is not None else []:
            metrics_refresh(run=run, task=task)
        scheduling.model_steps_schedule(user_id=user.id, turns=first_turns)
    log.info("run %s created: %s on %s, %d tasks", run.id, run.display_name, run.arch, len(tasks))
    return run


def _check_limits(user: User) -> None:
    now = timezone.now()
    active = ModelRun.objects.filter(user=user, state__in=ModelRun.ACTIVE_STATES).count()
    if active >= settings.AGENT_MAX_ACTIVE_RUNS:
        raise RunRefused(
            f"{active} of your model runs are still queued or running (limit {settings.AGENT_MAX_ACTIVE_RUNS}); "
            "wait for one to finish or cancel it",
            429,
            retry_after=quotas.ACTIVE_RETRY_SECONDS,
            resets_at=now + timedelta(seconds=quotas.ACTIVE_RETRY_SECONDS),
        )
    recent = ModelRun.objects.filter(user=user, created_at__gte=now - timedelta(days=1))
    if recent.count() >= settings.AGENT_RUNS_PER_DAY:
        resets_at = recent.order_by("created_at").values_list("created_at", flat=True).first() + timedelta(days=1)
        raise RunRefused(
            f"daily limit reached: {recent.count()} model runs in the last 24 hours "
            f"(limit {settings.AGENT_RUNS_PER_DAY}); one more may start at {resets_at:%Y-%m-%d %H:%M} UTC",
            429,
            retry_after=int((resets_at - now).total_seconds()) + 1,
            resets_at=resets_at,
        )


def _run_budget_used_up(run: ModelRun) -> bool:
    return run.evaluation_budget is not None and run_evaluations_used(run.id) >= run.evaluation_budget


def run_evaluations_used(run_id: int) -> int:
    """Evaluations this run has started (its turns that were submitted)."""
    return Turn.objects.filter(trajectory__run_id=run_id).exclude(evaluation=None).count()


def opening_messages(*, run: ModelRun, task: Task) -> list[dict]:
    """System (rules + knowledge pack + ABI starter) and the first user message (the task)."""
    target = task.targets.select_related("pack").filter(arch=run.arch).first()
    if run.pack_variant == ModelRun.PackVariant.NONE:
        pack = KnowledgePack.objects.filter(slug="none").first()
    else:
        pack = target.pack if target else None
    workloads = [
        {"axes": w.axes, "headline": w.is_headline} for w in task.workloads.filter(is_active=True).order_by("position")
    ]
    return [
        {
            "role": "system",
            "content": prompts.system_prompt(
                arch=run.arch,
                pack_text=pack.text if pack else "",
                starter=task.starter(run.language),
                language=run.language,
            ),
        },
        {
            "role": "user",
            "content": prompts.task_message(
                name=task.slug,
                description=task.description,
                definition=task.definition,
                workloads=workloads,
                run_signature=task.signature(run.language),
                families=list(target.families) if target else [],
                arch=run.arch,
                language=run.language,
            ),
        },
    ]


def run_cancel(*, run: ModelRun, reason: str = "cancelled by its owner") -> bool:
    with transaction.atomic():
        if not states.transition(
            RUN, run.id, ModelRun.State.CANCELLED, error=reason[:2000], finished_at=timezone.now()
        ):
            return False
        states.transition(
            TRAJECTORY,
            Trajectory.objects.filter(run=run),
            Trajectory.State.CANCELLED,
            stop_reason=Trajectory.StopReason.CANCELLED,
            stop_message=reason[:2000],
            finished_at=timezone.now(),
        )
        for task in run.tasks.all():
            metrics_refresh(run=run, task=task)
    scheduling.model_steps_wake(user_id=run.user_id)  # the places its model steps held go to the user's others
    return True


def run_import(
    *, user: User, arch: str, task: Task, model: str, opening: list[dict], replies: list[str], display_name: str = ""
) -> ModelRun:
    """A run that re-scores a recorded trajectory: its replies are stored up front, so the loop evaluates them
    in order on this portal's workers (and stops early at the target) without calling any model."""
    if arch not in ARCHES or not task.targets.filter(arch=arch).exists():
        raise RunRefused(f"task {task.slug} has no target for architecture {arch}")
    if not replies:
        raise RunRefused("the trajectory has no replies")
    if len(replies) > 64:
        raise RunRefused("the trajectory has more than 64 replies")
    with transaction.atomic():
        run = ModelRun.objects.create(
            user=user,
            model=model[:200] or "imported",
            display_name=(display_name or f"{model} (imported)")[:200],
            base_url="",  # no endpoint: nothing is ever called
            arch=arch,
            turns=len(replies),
            trajectories_per_task=1,
            max_retries=0,
        )
        run.tasks.set([task])
        trajectory = Trajectory.objects.create(
            run=run, task=task, index=0, messages=opening or opening_messages(run=run, task=task)
        )
        now = timezone.now()
        turns = [
            Turn.objects.create(trajectory=trajectory, index=i, reply=reply, replied_at=now)
            for i, reply in enumerate(replies)
        ]
        metrics_refresh(run=run, task=task)
        scheduling.model_steps_schedule(user_id=user.id, turns=[turns[0]])
    return run


# --------------------------------------------------------------------------- step 1: the model call


def _lease_seconds(run: ModelRun) -> float:
    # The step ends within its wall-clock cap (the client enforces it); the margin covers storing the reply.
    return settings.AGENT_CALL_WALL_MAX_S + 120


def endpoint_config(run: ModelRun, api_key: str) -> EndpointConfig:
    """The run's endpoint settings, capped by the operator's maxima whatever the run asked for (older runs
    may hold larger values than today's form admits)."""
    return EndpointConfig(
        base_url=run.base_url,
        model=run.model,
        api_key=api_key,
        temperature=run.temperature,
        max_output_tokens=run.max_output_tokens,
        request_timeout=min(run.request_timeout, settings.AGENT_REQUEST_TIMEOUT_MAX_S),
        max_retries=min(run.max_retries, settings.AGENT_MAX_RETRIES_MAX),
        backoff_base_s=settings.AGENT_RETRY_BACKOFF_S,
        backoff_cap_s=settings.AGENT_RETRY_BACKOFF_CAP_S,
    )


def turn_model_step(*, turn_id: int, reveal_api_key, call=chat_completion) -> StepOutcome:
    """Call the model for a turn (unless its reply is already stored), then submit the kernel it wrote.
    `reveal_api_key(run)` gives the plain key; only the agent job passes one. Returns what happened; a `parked`
    outcome (Step.WAITING) means the step waits in the database (portal/agent/scheduling.py)."""
    turn = Turn.objects.select_related("trajectory__run", "trajectory__task").filter(id=turn_id).first()
    if turn is None or turn.state != Turn.State.CALLING_MODEL:
        return StepOutcome(Step.NOTHING_TO_DO)
    trajectory, run = turn.trajectory, turn.trajectory.run
    if run.state not in ModelRun.ACTIVE_STATES or trajectory.state != Trajectory.State.RUNNING:
        return StepOutcome(Step.STOPPED)
    if turn.waiting_reason:
        # A stale job of a parked step; its wake-up queues a new one.
        return StepOutcome(Step.WAITING, "not woken yet")
    states.transition(RUN, run.id, ModelRun.State.RUNNING, from_=[ModelRun.State.QUEUED], started_at=timezone.now())
    if turn.replied_at is None:
        # Budgets before the call, so no model is asked for a kernel nobody may evaluate.
        if _run_budget_used_up(run):
            _trajectory_out_of_budget(turn, unstarted=True)
            return StepOutcome(Step.RUN_BUDGET_USED_UP)
        try:
            quotas.evaluation_quota_check(run.user)
        except quotas.QuotaExceeded as exc:
            scheduling.turn_wait(turn, exc.message)
            return StepOutcome(Step.WAITING, exc.message)
        now = timezone.now()
        claimed = (
            Turn.objects.filter(id=turn.id, state=Turn.State.CALLING_MODEL, replied_at__isnull=True)
            .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
            .update(lease_until=now + timedelta(seconds=_lease_seconds(run)), step_attempts=F("step_attempts") + 1)
        )
        if not claimed:
            return StepOutcome(Step.CALL_HELD_ELSEWHERE)
        turn.refresh_from_db()
        if turn.step_attempts > settings.AGENT_STEP_MAX_ATTEMPTS:
            _turn_fail(
                turn,
                outcome=Turn.Outcome.MODEL_ERROR,
                reason=f"the model-call step was started {turn.step_attempts - 1} times without finishing "
                "(its workers died or crashed); giving up",
                stop_reason=Trajectory.StopReason.STEP_CRASHED,
            )
            return StepOutcome(Step.STEP_CRASHED)
        try:
            messages = list(trajectory.messages)
            reply = call(
                endpoint_config(run, reveal_api_key(run)),
                messages,
                allowlist=_allowlist(),
                should_stop=lambda: _call_should_stop(run.id, trajectory.id),
                wall_clock_s=settings.AGENT_CALL_WALL_MAX_S,
                poll_s=settings.AGENT_CANCEL_POLL_S,
            )
        except crypto.ApiKeyUnreadable as exc:
            _turn_fail(
                turn, outcome=Turn.Outcome.MODEL_ERROR, reason=str(exc), stop_reason=Trajectory.StopReason.MODEL_ERROR
            )
            return StepOutcome(Step.API_KEY_UNREADABLE)
        except ModelCallError as exc:
            _turn_fail(
                turn,
                outcome=Turn.Outcome.MODEL_ERROR,
                reason=exc.message,
                stop_reason=Trajectory.StopReason.MODEL_ERROR,
                attempts=exc.attempts,
            )
            return StepOutcome(Step.MODEL_ERROR)
        if not _turn_store_reply(turn, reply):
            return StepOutcome(Step.REPLY_STORED_ELSEWHERE)
    return _turn_submit(turn_id)


def _allowlist() -> Allowlist:
    return Allowlist.parse(settings.AGENT_ENDPOINT_ALLOWLIST)


def _call_should_stop(run_id: int, trajectory_id: int) -> bool:
    """Asked while a model call is in flight: the run was cancelled or the trajectory stopped."""
    return not Trajectory.objects.filter(
        id=trajectory_id, state=Trajectory.State.RUNNING, run__state__in=ModelRun.ACTIVE_STATES
    ).exists()


def _trajectory_out_of_budget(turn: Turn, *, unstarted: bool) -> None:
    """Stop a trajectory whose run has started all the evaluations it may. An unstarted turn is removed (it
    never happened); a turn whose reply came is kept, marked as not evaluated."""
    budget = turn.trajectory.run.evaluation_budget
    message = f"the run's evaluation budget ({budget} evaluations) is used up"
    with transaction.atomic():
        if unstarted:
            # Not a move of the turn's machine: the turn never began, so it is removed.
            Turn.objects.filter(id=turn.id, state=Turn.State.CALLING_MODEL, replied_at__isnull=True).delete()
        else:
            states.turn_end(
                turn,
                Turn.State.DONE,
                outcome=Turn.Outcome.OVER_BUDGET,
                from_=[Turn.State.CALLING_MODEL],
                error=message,
                lease_until=None,
                finished_at=timezone.now(),
            )
        trajectory = Trajectory.objects.select_for_update().select_related("run", "task").get(id=turn.trajectory_id)
        _trajectory_stop(trajectory, Trajectory.StopReason.BUDGET_EXHAUSTED, f"before turn {turn.index}: {message}")


def _turn_store_reply(turn: Turn, reply: ModelReply) -> bool:
    stored = Turn.objects.filter(id=turn.id, state=Turn.State.CALLING_MODEL, replied_at__isnull=True).update(
        reply=reply.content,
        finish_reason=reply.finish_reason,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        reasoning_tokens=reply.reasoning_tokens,
        model_latency_s=reply.latency_s,
        model_attempts=F("model_attempts") + reply.attempts,
        replied_at=timezone.now(),
        lease_until=None,
    )
    return bool(stored)


def _turn_submit(turn_id: int) -> StepOutcome:
    """Extract the kernel from the stored reply and queue its evaluation (or answer that there is none)."""
    with transaction.atomic():
        turn = Turn.objects.select_for_update().select_related("trajectory__run", "trajectory__task").get(id=turn_id)
        if turn.state != Turn.State.CALLING_MODEL or turn.replied_at is None:
            return StepOutcome(Step.ALREADY_SUBMITTED)
        # The run's row is the lock that keeps its trajectories from overrunning its budget together.
        run = ModelRun.objects.select_for_update().get(id=turn.trajectory.run_id)
        if _run_budget_used_up(run):
            _trajectory_out_of_budget(turn, unstarted=False)
            return StepOutcome(Step.RUN_BUDGET_USED_UP)
        trajectory = Trajectory.objects.select_for_update().select_related("run", "task").get(id=turn.trajectory_id)
        run = trajectory.run
        # The reply joins the conversation here, once: a turn's reply is the conversation's (index+1)-th
        # assistant message. Imported turns arrive with their reply already stored and pass the same way.
        if sum(1 for m in trajectory.messages if m.get("role") == "assistant") == turn.index:
            trajectory.messages = list(trajectory.messages) + [{"role": "assistant", "content": turn.reply}]
            trajectory.save(update_fields=["messages"])
        extraction = extract_kernel(turn.reply, language=run.language)
        if not extraction.kernel:
            if _turn_finish(
                turn,
                from_=[Turn.State.CALLING_MODEL],
                outcome=Turn.Outcome.NO_KERNEL,
                feedback=(prompts.truncated if extraction.truncated else prompts.no_kernel)(run.language),
            ):
                _advance(turn)
            return StepOutcome(Step.NO_KERNEL)
        try:
            result = submission_create(
                user=run.user,
                task=trajectory.task,
                arch=run.arch,
                source=extraction.kernel,
                kind=Submission.Kind.AGENT,
                language=run.language,
                name=f"{run.display_name} t{trajectory.index} turn {turn.index}",
                force=True,
            )
        except SubmissionRefused as exc:
            if exc.status == 429:
                # The user's evaluation budget is spent: the reply stays stored and the turn waits its turn.
                scheduling.turn_wait(turn, exc.message)
                return StepOutcome(Step.WAITING, exc.message)
            if exc.status == 403:
                error = f"the kernel could not be submitted: {exc.message}"
                states.turn_end(
                    turn,
                    Turn.State.FAILED,
                    from_=[Turn.State.CALLING_MODEL],
                    outcome=Turn.Outcome.EVALUATION_FAILED,
                    kernel=extraction.kernel,
                    error=error,
                    lease_until=None,
                    finished_at=timezone.now(),
                )
                _trajectory_stop(trajectory, Trajectory.StopReason.EVALUATION_FAILED, error, failed=True)
                return StepOutcome(Step.SUBMISSION_REFUSED, exc.message)
            if _turn_finish(
                turn,
                from_=[Turn.State.CALLING_MODEL],
                outcome=Turn.Outcome.NO_KERNEL,
                kernel=extraction.kernel,
                feedback=(
                    f"The kernel was not evaluated: {exc.message}. Please fix it and answer with the complete file."
                ),
            ):
                _advance(turn)
            return StepOutcome(Step.SUBMISSION_REFUSED, exc.message)
        states.transition(
            TURN,
            turn,
            Turn.State.EVALUATING,
            from_=[Turn.State.CALLING_MODEL],
            kernel=extraction.kernel,
            evaluation=result.evaluation,
        )
    return StepOutcome(Step.SUBMITTED, str(result.evaluation.id))


def _turn_finish(turn: Turn, *, from_: list[str], outcome: str, verdict_status: str = "", **fields) -> bool:
    """End a turn normally (DONE), inside the step's transaction that holds its row. False when another step
    moved it first (then nothing more is done for it)."""
    moved = states.turn_end(
        turn,
        Turn.State.DONE,
        from_=from_,
        outcome=outcome,
        verdict_status=verdict_status,
        lease_until=None,
        finished_at=timezone.now(),
        **fields,
    )
    if not moved:
        log.warning("turn %s was no longer %s: another step finished it", turn.id, " or ".join(from_))
    return bool(moved)


@transaction.atomic
def _turn_fail(turn: Turn, *, outcome: str, reason: str, stop_reason: str, attempts: int = 0) -> None:
    updated = states.turn_end(
        turn,
        Turn.State.FAILED,
        from_=[Turn.State.CALLING_MODEL],
        outcome=outcome,
        error=reason[:4000],
        model_attempts=F("model_attempts") + attempts,
        lease_until=None,
        finished_at=timezone.now(),
    )
    if updated:
        trajectory = Trajectory.objects.select_for_update().select_related("run", "task").get(id=turn.trajectory_id)
        _trajectory_stop(trajectory, stop_reason, f"turn {turn.index}: {reason}", failed=True)
        log.info("trajectory %s stopped at turn %d: %s", trajectory.id, turn.index, stop_reason)


# --------------------------------------------------------------------------- step 2: after the evaluation


def turn_verdict_step(*, turn_id: int) -> StepOutcome:
    """Record the evaluation of a turn, answer with feedback, and start the next turn or stop."""
    with transaction.atomic():
        # Only the turn's row: PostgreSQL cannot lock the nullable side of the outer join to its evaluation.
        turn = (
            Turn.objects.select_for_update(of=("self",))
            .select_related("trajectory__run", "trajectory__task", "evaluation")
            .filter(id=turn_id)
            .first()
        )
        if turn is None or turn.state != Turn.State.EVALUATING:
            return StepOutcome(Step.NOTHING_TO_DO)
        evaluation = turn.evaluation
        run = turn.trajectory.run
        if evaluation is None:
            error = "the evaluation of this turn was deleted"
            ending = {
                "outcome": Turn.Outcome.EVALUATION_FAILED,
                "error": error,
                "feedback": infrastructure_feedback(error),
            }
        elif evaluation.state in Evaluation.ACTIVE_STATES:
            return StepOutcome(Step.EVALUATION_RUNNING)
        elif evaluation.state == Evaluation.State.DONE and evaluation.verdict:
            ending = {
                "outcome": Turn.Outcome.VERDICT,
                "verdict_status": evaluation.status,
                "arch_status": evaluation.arch_status,
                "speedup_factor": evaluation.speedup_factor,
                "feedback": verdict_feedback(
                    evaluation.verdict_record, speedup=evaluation.speedup_factor, target_speedup=run.target_speedup
                ),
            }
            if evaluation.gpu_name and not run.gpu_name:
                ModelRun.objects.filter(id=run.id, gpu_name="").update(gpu_name=evaluation.gpu_name)
        else:
            reason = evaluation.infra_error or f"the evaluation ended {evaluation.state}"
            ending = {
                "outcome": Turn.Outcome.EVALUATION_FAILED,
                "error": reason[:4000],
                "feedback": infrastructure_feedback(reason),
            }
        if not _turn_finish(turn, from_=[Turn.State.EVALUATING], **ending):
            return StepOutcome(Step.NOTHING_TO_DO)
        _advance(turn)
    return StepOutcome(Step.RECORDED, turn.published_status)


def _advance(turn: Turn) -> None:
    """After a finished turn (inside its transaction): tell the model, then start the next turn or stop."""
    trajectory = Trajectory.objects.select_for_update().select_related("run", "task").get(id=turn.trajectory_id)
    run = trajectory.run
    trajectory.messages = list(trajectory.messages) + [{"role": "user", "content": turn.feedback}]
    trajectory.save(update_fields=["messages"])
    if trajectory.state != Trajectory.State.RUNNING:
        metrics_refresh(run=run, task=trajectory.task)
        return
    if turn.outcome == Turn.Outcome.EVALUATION_FAILED:
        _trajectory_stop(
            trajectory, Trajectory.StopReason.EVALUATION_FAILED, f"turn {turn.index}: {turn.error}", failed=True
        )
    elif (
        turn.verdict_status == metrics.CORRECT_STATUS
        and turn.speedup_factor is not None
        and turn.speedup_factor >= run.target_speedup
    ):
        _trajectory_stop(
            trajectory,
            Trajectory.StopReason.TARGET_REACHED,
            f"turn {turn.index}: correct at {turn.speedup_factor:.2f}x (target {run.target_speedup:g}x)",
        )
    elif turn.index + 1 >= run.turns:
        _trajectory_stop(trajectory, Trajectory.StopReason.TURNS_EXHAUSTED, f"all {run.turns} turns used")
    elif run.state not in ModelRun.ACTIVE_STATES:
        _trajectory_stop(trajectory, Trajectory.StopReason.CANCELLED, f"the run is {run.state}")
    else:
        # Imported trajectories come with their later turns (and replies) already stored.
        next_turn = Turn.objects.filter(trajectory=trajectory, index=turn.index + 1).first()
        next_turn = next_turn or Turn.objects.create(trajectory=trajectory, index=turn.index + 1)
        scheduling.model_steps_schedule(user_id=run.user_id, turns=[next_turn])
        metrics_refresh(run=run, task=trajectory.task)


def _trajectory_stop(trajectory: Trajectory, reason: str, message: str, *, failed: bool = False) -> None:
    state = Trajectory.State.FAILED if failed else Trajectory.State.DONE
    if reason == Trajectory.StopReason.CANCELLED:
        state = Trajectory.State.CANCELLED
    states.transition(
        TRAJECTORY, trajectory, state, stop_reason=reason, stop_message=message[:4000], finished_at=timezone.now()
    )
    metrics_refresh(run=trajectory.run, task=trajectory.task)
    run_finish_if_complete(run_id=trajectory.run_id)


def run_finish_if_complete(*, run_id: int) -> bool:
    if Trajectory.objects.filter(run_id=run_id, state__in=TRAJECTORY.active).exists():
        return False
    trajectories = Trajectory.objects.filter(run_id=run_id)
    normal = trajectories.filter(state=Trajectory.State.DONE).exists()
    fields = {"finished_at": timezone.now()}
    if not normal:
        first = trajectories.exclude(stop_message="").order_by("id").first()
        fields["error"] = (
            f"every trajectory ended in an error; the first: {first.stop_message}" if first else "no trajectories"
        )[:4000]
    return bool(states.transition(RUN, run_id, ModelRun.State.DONE if normal else ModelRun.State.FAILED, **fields))


# --------------------------------------------------------------------------- metrics


def metrics_refresh(*, run: ModelRun, task: Task) -> list[RunTaskMetrics]:
    """Recompute the stored metrics of (run, task) from its turns. Called whenever a turn finishes."""
    results = []
    for trajectory in Trajectory.objects.filter(run=run, task=task).prefetch_related("turns"):
        turns = [
            metrics.TurnResult(
                index=t.index,
                status=t.published_status,
                arch_status=t.arch_status,
                speedup_factor=t.speedup_factor,
                tokens=t.total_tokens,
            )
            for t in trajectory.turns.all()
            if t.state in TURN.terminal
        ]
        results.append(metrics.TrajectoryResult(turns=turns, finished=trajectory.is_finished))
    ks = metric_ks(run.turns)
    rows = []
    for m in metrics.compute_task_metrics(results, ks):
        row, _ = RunTaskMetrics.objects.update_or_create(
            run=run,
            task=task,
            k=m.k,
            defaults={
                "arch": run.arch,
                "trajectories": m.trajectories,
                "correct": m.correct,
                "correct_arch": m.correct_arch,
                "best_speedup": m.best_speedup,
                "tokens": m.tokens,
                "complete": m.complete,
            },
        )
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- repair


def evaluation_finished_received(*, evaluation_id: str) -> None:
    """The evaluation_finished signal: queue the verdict step of the turn this evaluation belongs to."""
    for turn_id in Turn.objects.filter(evaluation_id=evaluation_id, state=Turn.State.EVALUATING).values_list(
        "id", flat=True
    ):
        queueing.enqueue_verdict_step(turn_id)
    # A place in the user's evaluation budget opened: model steps waiting for it may go.
    user_id = Evaluation.objects.filter(id=evaluation_id).values_list("submission__user_id", flat=True).first()
    if user_id is not None:
        scheduling.model_steps_wake(user_id=user_id)


def agent_reconcile(*, now=None) -> dict[str, int]:
    """Resume what crashes left behind: model calls whose worker died (lease expired) or whose job vanished
    are queued again (a stored reply is never requested again); turns whose evaluation finished without
    the signal reaching us get their verdict step; runs whose trajectories all stopped are finished."""
    now = now or timezone.now()
    counts = {"model_steps": 0, "verdict_steps": 0, "runs_finished": 0}
    calling = Turn.objects.filter(
        state=Turn.State.CALLING_MODEL, trajectory__state=Trajectory.State.RUNNING, waiting_reason=""
    )
    for turn in calling.select_related("trajectory__run"):
        if turn.lease_until is not None and turn.lease_until > now:
            continue  # a live worker is (presumably) waiting on the model
        if turn.lease_until is None and queueing.job_is_alive(
            turn.job_id, stale_seconds=settings.AGENT_JOB_STALE_SECONDS
        ):
            continue
        with transaction.atomic():
            released = Turn.objects.filter(
                id=turn.id, state=Turn.State.CALLING_MODEL, lease_until=turn.lease_until
            ).update(lease_until=None)
            if released:
                scheduling.enqueue_on_commit(turn)
                counts["model_steps"] += 1
    evaluating = Turn.objects.filter(
        state=Turn.State.EVALUATING,
        evaluation__state__in=[Evaluation.State.DONE, Evaluation.State.FAILED, Evaluation.State.CANCELLED],
    )
    for turn_id in evaluating.values_list("id", flat=True):
        queueing.enqueue_verdict_step(turn_id)
        counts["verdict_steps"] += 1
    orphaned = Turn.objects.filter(state=Turn.State.EVALUATING, evaluation__isnull=True)
    for turn_id in orphaned.values_list("id", flat=True):
        queueing.enqueue_verdict_step(turn_id)
        counts["verdict_steps"] += 1
    for run_id in ModelRun.objects.filter(state__in=ModelRun.ACTIVE_STATES).values_list("id", flat=True):
        counts["runs_finished"] += run_finish_if_complete(run_id=run_id)
    counts["woken"] = sum(scheduling.model_steps_wake(user_id=u) for u in scheduling.users_waiting())
    return counts
