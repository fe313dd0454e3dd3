"""The only place that talks to RQ for evaluations. Job id = evaluation id, so enqueueing twice is harmless:
the second copy finds the evaluation no longer queued and does nothing.

Redis may be down for a while (restart, failover). The database is the truth, so neither storing a submission
nor showing one depends on Redis: an evaluation whose enqueue failed stays queued in the database and the
reconcile job enqueues it again once Redis is back."""

from __future__ import annotations

import logging

import django_rq
from django.conf import settings
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus

log = logging.getLogger(__name__)
REDIS_UNAVAILABLE = (RedisConnectionError, RedisTimeoutError)


def enqueue_evaluation(evaluation) -> bool:
    """Put the evaluation's job on its queue. False when Redis is unreachable (reconcile will enqueue it)."""
    from portal.submissions import jobs

    queue = django_rq.get_queue(evaluation.queue)
    try:
        queue.enqueue(
            jobs.evaluate,
            str(evaluation.id),
            job_id=str(evaluation.id),
            job_timeout=settings.EVALUATION_TIMEOUT + 300,
            result_ttl=3600,
            failure_ttl=7 * 24 * 3600,
        )
    except REDIS_UNAVAILABLE as exc:
        log.warning("evaluation %s stays queued in the database, Redis is unreachable: %s", evaluation.id, exc)
        return False
    return True


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
    """1-based position of the evaluation's job in its queue, None when not waiting there or unknown
    (Redis unreachable: status pages and API answers still work from the database)."""
    queue = django_rq.get_queue(evaluation.queue)
    try:
        ids = queue.get_job_ids()
    except REDIS_UNAVAILABLE:
        return None
    try:
        return ids.index(str(evaluation.id)) + 1
    except ValueError:
        return None
