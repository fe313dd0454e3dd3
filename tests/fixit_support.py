"""Shared helpers for the Fixit tests: finished trajectories written straight to the database."""

from __future__ import annotations

import hashlib

from django.utils import timezone

from portal.agent.models import ModelRun, Trajectory, Turn
from portal.catalog.models import Task
from portal.submissions.models import Evaluation, Submission
from tests.agent_support import fenced
from tests.factories import GEMM


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
            speedup=spec.get("speedup"),
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
            status=spec["status"],
            arch_status=spec.get("arch", "verified"),
            speedup=spec.get("speedup"),
            feedback=f"Evaluation result: {spec['status']}.",
        )
    return trajectory
