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
    """Whether Redis still holds a job that a worker will run or is running for this evaluation.

    A job hash saying "queued" is not enough: a worker that popped the id from the queue and then lost Redis
    (restart) exits before it records the job as started, leaving a "queued" hash that is in no queue and would
    never run. Such a job counts as lost, so reconcile enqueues the evaluation again."""
    queue = django_rq.get_queue(evaluation.queue)
    try:
        job = Job.fetch(str(evaluation.id), connection=queue.connection)
    except NoSuchJobError:
        return False
    status = job.get_status(refresh=True)
    if status == JobStatus.QUEUED:
        return queue.get_job_position(job.id) is not None
    return status in {JobStatus.STARTED, JobStatus.SCHEDULED, JobStatus.DEFERRED}


def queue_depths() -> dict[str, int]:
    return {name: django_rq.get_queue(name).count for name in settings.RQ_QUEUE_NAMES}


def queue_position(evaluation) -> int | None:
    """1-based position of the evaluation's job in its queue, None when not waiting there or unknown
    (Redis unreachable: status pages and API answers still work from the database)."""
    queue = django_rq.get_queue(evaluation.queue)
    try:
        index = queue.get_job_position(str(evaluation.id))  # LPOS inside Redis: the id list is not transferred
    except REDIS_UNAVAILABLE:
        return None
    return None if index is None else index + 1
