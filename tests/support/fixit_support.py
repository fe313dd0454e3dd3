"""Shared helpers for the Fixit tests: finished trajectories written straight to the database."""

from __future__ import annotations

import hashlib

import django_rq
from django.utils import timezone

from portal.agent.models import ModelRun, Trajectory, Turn
from portal.catalog.models import Task
from portal.core.verdict_record import parse_verdict
from portal.submissions import services as submission_services
from portal.submissions.models import Evaluation, Submission
from tests.support.agent_support import ended, fenced
from tests.support.factories import GEMM
from tests.support.rq_workers import PromptSimpleWorker


def stored_trajectory(user, turns: list[dict], *, model: str = "stored-model") -> Trajectory:
    """A finished run written straight to the database: each turn {status, kernel, arch, speedup, review, purpose}."""
    task = Task.objects.get(slug=GEMM)
    run = ModelRun.objects.create(user=user, model=model, display_name=model, arch="sm_90a", state="done")
    run.tasks.set([task])
    trajectory = Trajectory.objects.create(
        run=run,
        task=task,
        index=0,
        state="done",
        messages=[{"role": "system", "content": "S"}, {"role": "user", "content": "T"}],
    )
    for index, spec in enumerate(turns):
        kernel = spec["kernel"]
        submission = Submission.objects.create(
            user=user,
            task=task,
            arch="sm_90a",
            kind="agent",
            source=kernel,
            source_sha256=hashlib.sha256(kernel.encode()).hexdigest(),
            source_bytes=len(kernel),
        )
        evaluation = Evaluation.objects.create(
            submission=submission,
            queue="gpu-sm90",
            purpose=spec.get("purpose", "public"),
            state="done",
            verdict={"status": spec["status"]},
            status=spec["status"],
            arch_status=spec.get("arch", "verified"),
            speedup_factor=spec.get("speedup"),
            evaluator_version="0.1.0",
            review_state=spec.get("review", ""),
            finished_at=timezone.now(),
        )
        Turn.objects.create(
            trajectory=trajectory,
            index=index,
            state="done",
            reply=fenced(kernel),
            kernel=kernel,
            evaluation=evaluation,
            **ended(spec["status"]),
            arch_status=spec.get("arch", "verified"),
            speedup_factor=spec.get("speedup"),
            feedback=f"Evaluation result: {spec['status']}.",
        )
    return trajectory


def drain_with_gpu_stand_in(recorded: dict[str, dict]) -> None:
    """Run the agent steps and CPU-stage evaluations in-process; an evaluation whose source has a recorded verdict
    is taken off the GPU queue and finished with it through the same services a GPU worker uses."""
    agent, gpu = django_rq.get_queue("agent"), django_rq.get_queue("gpu-sm90")
    for _ in range(20):
        PromptSimpleWorker([agent], connection=agent.connection).work(burst=True)
        ids = gpu.get_job_ids()
        if not ids and not agent.get_job_ids():
            return
        for job_id in ids:
            source = Evaluation.objects.get(id=job_id).submission.source
            if source in recorded:
                gpu.remove(job_id)
                assert submission_services.evaluation_claim(evaluation_id=job_id, worker_name="h200-stand-in")
                assert submission_services.evaluation_record_verdict(
                    evaluation_id=job_id,
                    worker_name="h200-stand-in",
                    verdict=recorded[source],
                    record=parse_verdict(recorded[source]),
                    files={},
                )
        PromptSimpleWorker([gpu], connection=gpu.connection).work(burst=True)
    raise AssertionError("the queues did not drain")
