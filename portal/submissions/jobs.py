"""RQ jobs: thin wrappers that take ids, load, and call services. Infrastructure faults are retried by
the services (requeue while attempts remain); a kernel's own failure is a verdict, never retried."""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

from django.conf import settings
from rq import get_current_job

from portal.submissions import services
from portal.submissions.runner import run_evaluator

log = logging.getLogger(__name__)


def _worker_name() -> str:
    job = get_current_job()
    return (job.worker_name if job and job.worker_name else None) or f"local-{os.getpid()}"


def _stages(requested: str) -> str:
    """A worker without a GPU (gpu_worker --cpu-stages-only) runs only the CPU stages, whatever was asked."""
    return os.environ.get("PTXBENCH_WORKER_STAGES") or requested


def evaluate(evaluation_id: str) -> str:
    worker = _worker_name()
    evaluation = services.evaluation_claim(evaluation_id=evaluation_id, worker_name=worker)
    if evaluation is None:
        return "not claimed (already taken or final)"
    submission = evaluation.submission

    def on_events(events: list[dict]) -> bool:
        return services.evaluation_progress(evaluation_id=evaluation_id, worker_name=worker, events=events)

    try:
        with tempfile.TemporaryDirectory(prefix=f"ptxbench-{evaluation_id[:8]}-") as tmp:
            result = run_evaluator(
                source=submission.source,
                task=submission.task.slug,
                arch=submission.arch,
                stages=_stages(evaluation.stages),
                workdir=Path(tmp),
                tasks_root=Path(settings.TASKS_DIR),
                timeout=settings.EVALUATION_TIMEOUT,
                on_events=on_events,
                seed=evaluation.seed,
                # Ranked checks run the task's hidden workloads where it has them, else all public ones.
                workload="ranked" if evaluation.purpose == evaluation.Purpose.HIDDEN else "all",
                python=settings.EVALUATOR_PYTHON,
                language=submission.language,
                evidence_max_bytes=settings.ARTIFACT_BYTES_PER_EVALUATION,
                log_max_bytes=settings.ARTIFACT_SUBMISSION_LOG_BYTES,
            )
    except OSError as exc:  # could not even start the evaluator: infrastructure
        result = None
        error = f"could not run the evaluator: {exc}"
    else:
        error = result.error
    if result is not None and result.lost:
        return "lost ownership"
    if result is not None and result.verdict is not None:
        services.evaluation_record_verdict(
            evaluation_id=evaluation_id,
            worker_name=worker,
            verdict=result.verdict,
            record=result.record,
            files=result.files,
            not_kept=result.not_kept,
        )
        return result.record.status.value if result.record else ""
    log.warning("evaluation %s: infrastructure failure: %s", evaluation_id, error)
    return services.evaluation_infra_failure(evaluation_id=evaluation_id, worker_name=worker, reason=error)
