"""Every RQ worker the portal starts stops promptly (portal/core/rq_workers.py): `manage.py rqworker` takes its
class from settings, `gpu_worker` its own, and tests drain queues with the same behaviour."""

from __future__ import annotations

from django_rq.workers import get_worker_class

from portal.core.rq_workers import PromptUnsubscribe
from portal.submissions.rq_worker import RequeueOnStopWorker
from tests.support.rq_workers import PromptSimpleWorker


def test_the_cpu_worker_the_gpu_worker_and_the_tests_workers_unsubscribe_promptly():
    assert issubclass(get_worker_class(), PromptUnsubscribe)  # what `manage.py rqworker` starts
    assert issubclass(RequeueOnStopWorker, PromptUnsubscribe)
    assert issubclass(PromptSimpleWorker, PromptUnsubscribe)
