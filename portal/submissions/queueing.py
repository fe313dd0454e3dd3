"""The only place that talks to RQ for evaluations. Job id = evaluation id, so enqueueing twice is harmless:
the second copy finds the evaluation no longer queued and does nothing."""

from __future__ import annotations

import django_rq
from django.conf import settings
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus


def enqueue_evaluation(evaluation) -> None:
    from portal.submissions import jobs

    queue = django_rq.get_queue(evaluation.queue)
    queue.enqueue(
        jobs.evaluate,
        str(evaluation.id),
        job_id=str(evaluation.id),
        job_timeout=settings.EVALUATION_TIMEOUT + 300,
        result_ttl=3600,
        failure_ttl=7 * 24 * 3600,
    )


def job_is_pending(evaluation) -> bool:
    """Whether Redis still holds a queued/started job for this evaluation."""
    connection = django_rq.get_connection(evaluation.queue)
    try:
        job = Job.fetch(str(evaluation.id), connection=connection)
    except NoSuchJobError:
        return False
    return job.get_status(refresh=True) in {
        JobStatus.QUEUED,
        JobStatus.STARTED,
        JobStatus.SCHEDULED,
        JobStatus.DEFERRED,
    }


def queue_depths() -> dict[str, int]:
    return {name: django_rq.get_queue(name).count for name in settings.RQ_QUEUE_NAMES}


def queue_position(evaluation) -> int | None:
    """1-based position of the evaluation's job in its queue, None when not waiting there."""
    queue = django_rq.get_queue(evaluation.queue)
    ids = queue.get_job_ids()
    try:
        return ids.index(str(evaluation.id)) + 1
    except ValueError:
        return None
