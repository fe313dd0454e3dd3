"""The RQ worker class of `gpu_worker`: a stop request gives the running evaluation back to the queue first.

RQ's warm shutdown waits for the job in progress, which for an evaluation is minutes (an nvcc compile, a timed
run); its cold shutdown kills the work horse, leaving the evaluator's own process group running and the
evaluation "running" until reconcile notices the silence. Requeuing it first makes the runner stop the
evaluator's group at its next poll (about a second), so the horse, and then the worker, end within seconds."""

from __future__ import annotations

import logging

from portal.core.rq_workers import PromptWorker
from portal.submissions import services

log = logging.getLogger(__name__)


class RequeueOnStopWorker(PromptWorker):
    def request_stop(self, signum, frame):  # noqa: ANN001, ANN201 - RQ's signal handler signature
        try:
            requeued = services.evaluations_requeue_for_stopping_worker(worker_name=self.name)
        except Exception:  # a database that is away must not keep the worker from stopping
            log.exception("worker %s: could not requeue its evaluations on stop", self.name)
        else:
            if requeued:
                log.warning("worker %s: stopping; requeued %s", self.name, ", ".join(requeued))
        super().request_stop(signum, frame)
