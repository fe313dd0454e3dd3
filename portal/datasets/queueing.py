"""Enqueueing the snapshot build on the `default` queue (by dotted path: this module never imports jobs)."""

from __future__ import annotations

import django_rq

BUILD_JOB = "portal.datasets.jobs.snapshot_build"
JOB_TIMEOUT_S = 3600


def enqueue_snapshot_build(*, force: bool = False) -> str:
    """The job's id; inside a transaction django-rq enqueues it on commit (then: "on commit")."""
    job = django_rq.get_queue("default").enqueue(
        BUILD_JOB, force=force, job_timeout=JOB_TIMEOUT_S, result_ttl=7 * 24 * 3600, failure_ttl=7 * 24 * 3600
    )
    return job.id if job is not None else "on commit"
