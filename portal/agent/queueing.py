"""The only place that talks to RQ for the agent loop. Every step is idempotent (it moves a turn forward with a
conditional update), so a step enqueued twice does its work once."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import django_rq
from django.conf import settings
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus

QUEUE = "agent"
# By dotted path, resolved by RQ in the worker: this module imports nothing from jobs (jobs -> services -> here).
MODEL_STEP_JOB = "portal.agent.jobs.turn_call_model"
VERDICT_STEP_JOB = "portal.agent.jobs.turn_after_evaluation"


def _job_timeout(turn) -> int:
    # The model call ends within its wall-clock cap whatever the run asked for (portal/agent/client.py).
    return int(settings.AGENT_CALL_WALL_MAX_S + 300)


def enqueue_model_step(turn) -> str:
    """Queue the model call of `turn`; returns the job id (also stored on the turn by the caller)."""
    job_id = f"agent-turn-{turn.id}-call-{uuid.uuid4().hex[:8]}"
    django_rq.get_queue(QUEUE).enqueue(
        MODEL_STEP_JOB,
        turn.id,
        job_id=job_id,
        job_timeout=_job_timeout(turn),
        result_ttl=3600,
        failure_ttl=7 * 24 * 3600,
    )
    return job_id


def enqueue_verdict_step(turn_id: int) -> None:
    """Queue the after-evaluation step of a turn. A fixed job id: a second enqueue replaces a waiting copy."""
    django_rq.get_queue(QUEUE).enqueue(
        VERDICT_STEP_JOB,
        turn_id,
        job_id=f"agent-turn-{turn_id}-verdict",
        job_timeout=600,
        result_ttl=3600,
        failure_ttl=7 * 24 * 3600,
    )


def job_is_alive(job_id: str, *, stale_seconds: float) -> bool:
    """Whether Redis holds the job waiting, or running on a worker that heartbeated recently."""
    if not job_id:
        return False
    connection = django_rq.get_connection(QUEUE)
    try:
        job = Job.fetch(job_id, connection=connection)
    except NoSuchJobError:
        return False
    status = job.get_status(refresh=True)
    if status in {JobStatus.QUEUED, JobStatus.SCHEDULED, JobStatus.DEFERRED}:
        return True
    if status == JobStatus.STARTED:
        beat = job.last_heartbeat or job.started_at
        if beat is None:
            return True
        if beat.tzinfo is None:
            beat = beat.replace(tzinfo=UTC)
        return datetime.now(UTC) - beat < timedelta(seconds=stale_seconds)
    return False
