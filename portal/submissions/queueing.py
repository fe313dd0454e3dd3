"""The only place that talks to RQ for evaluations. Job id = evaluation id, so enqueueing twice is harmless:
the second copy finds the evaluation no longer queued and does nothing.

Redis may be down for a while (restart, failover). The database is the truth, so neither storing a submission
nor showing one depends on Redis: an evaluation whose enqueue failed stays queued in the database and the
reconcile job enqueues it again once Redis is back."""

from __future__ import annotations

import logging
import time

import django_rq
from django.conf import settings
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from rq.job import Job, JobStatus

log = logging.getLogger(__name__)
REDIS_UNAVAILABLE = (RedisConnectionError, RedisTimeoutError)
# By dotted path, resolved by RQ in the worker: this module imports nothing from jobs (jobs -> services -> here).
EVALUATE_JOB = "portal.submissions.jobs.evaluate"


def enqueue_evaluation(evaluation) -> bool:
    """Put the evaluation's job on its queue. False when Redis is unreachable (reconcile will enqueue it)."""
    queue = django_rq.get_queue(evaluation.queue)
    try:
        queue.enqueue(
            EVALUATE_JOB,
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


# Between taking a job and marking it started, an RQ 3.0 worker serving one queue (ours do) holds the id in
# "<queue>:intermediate": LMOVE from the queue there, then, in the work horse, "started" and LREM in one transaction.
# In that gap (usually milliseconds) the hash says "queued" and the id is in no queue. A worker that dies in the gap
# leaves the id there for ever; RQ's own cleanup (a worker's maintenance, every 10 minutes) only marks it failed more
# than a minute after first seeing it. So reconcile waits up to this long for the id to move on, and only then counts
# it as lost. Within the same round, because the reconcile RQ job runs in a fresh work horse and remembers nothing
# between rounds. A stuck id costs this wait once: it is then taken out of the intermediate list.
INTERMEDIATE_RECHECK_SECONDS = 2.0
PENDING_STATUSES = {JobStatus.STARTED.value, JobStatus.SCHEDULED.value, JobStatus.DEFERRED.value}


def job_is_pending(evaluation) -> bool:
    """Whether Redis still holds a job that a worker will run or is running for this evaluation.

    A job hash saying "queued" is not enough: a worker that popped the id from the queue and then lost Redis
    (restart) exits before it records the job as started, leaving a "queued" hash that is in no queue and would
    never run. Such a job counts as lost, so reconcile enqueues the evaluation again. An id in the queue's
    intermediate list is a worker's, unless it is still there, not started, after INTERMEDIATE_RECHECK_SECONDS."""
    queue = django_rq.get_queue(evaluation.queue)
    job_id = str(evaluation.id)
    deadline = None
    while True:
        with queue.connection.pipeline() as pipe:  # MULTI/EXEC: the three answers are one snapshot
            pipe.hget(Job.key_for(job_id), "status")
            pipe.lpos(queue.key, job_id)
            pipe.lpos(queue.intermediate_queue_key, job_id)
            status, in_queue, in_intermediate = pipe.execute()
        if status is None:
            return False  # no such job
        if status.decode() != JobStatus.QUEUED:
            return status.decode() in PENDING_STATUSES
        if in_queue is not None:
            return True
        if in_intermediate is None:
            return False
        if deadline is None:
            deadline = time.monotonic() + INTERMEDIATE_RECHECK_SECONDS
        elif time.monotonic() >= deadline:
            _drop_stuck(queue, job_id)
            return False
        time.sleep(0.1)


def _drop_stuck(queue, job_id: str) -> None:
    """Forget an id a dead worker left in the intermediate list, before reconcile enqueues it again: otherwise RQ's
    cleanup would later mark the new job (same id) failed. Should the worker be alive after all, merely slow, the
    job runs twice, which the evaluation's conditional claim makes harmless."""
    log.warning("job %s stuck in %s without starting; enqueueing it again", job_id, queue.intermediate_queue_key)
    with queue.connection.pipeline() as pipe:
        pipe.lrem(queue.intermediate_queue_key, 1, job_id)
        pipe.delete(queue.intermediate_queue.get_first_seen_key(job_id))
        pipe.execute()


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
