"""On a host of two or more Hopper GPUs only: one portal GPU worker per GPU, no cross-talk. The Hopper reference
GEMM (TMA + wgmma) is scored through real `manage.py gpu_worker` processes on the architecture's one queue: on
GPU 0 alone, on GPU 1 alone, then with both workers serving the queue at once. Each verdict must record the UUID
of the GPU its worker is bound to, nothing may be held, both workers must have served the shared queue with their
evaluations overlapping in time, and each GPU's speedups timed beside the other worker must agree with the same
GPU's solo speedups: within TRUSTED_BOUND_MARGIN (the evaluator's stated margin between two of its clocks on one
kernel), or, where the bootstrap intervals are wider than that, with overlapping `speedup_ci95`.

MULTI_GPU_REPEATS (default 2) evaluations per GPU per phase; with MULTI_GPU_OUT set, one JSON line per evaluation
(phase, GPU, worker, status, holds, speedups) is written there."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.django_db(transaction=True)]

from portal.submissions.gpu import detect_gpus  # noqa: E402

HOPPER = [g for g in detect_gpus() if g.compute_capability == (9, 0)]
if len(HOPPER) < 2:
    pytest.skip(
        f"needs two or more Hopper GPUs (compute capability 9.0) on one host; nvidia-smi lists {len(HOPPER)}",
        allow_module_level=True,
    )

from evaluator.measure.performance import TRUSTED_BOUND_MARGIN  # noqa: E402
from portal.catalog.models import Task  # noqa: E402
from portal.submissions.models import Evaluation, GpuWorker, Submission  # noqa: E402
from portal.submissions.services import submission_create  # noqa: E402
from tests.support.factories import GEMM, REPO, make_user, start_manage_process, sync_catalog  # noqa: E402

REFERENCE = next((REPO / "tasks" / GEMM / "solutions" / "hopper_tma_wgmma").glob("*.cu"))
REPEATS = int(os.environ.get("MULTI_GPU_REPEATS", "2"))
GPUS = HOPPER[:2]
PHASE_TIMEOUT_S = 900
# The worker processes read these from their environment (the test's own settings do not reach them).
WORKER_ENV = {"RANKED_CHECK": "0", "EVALUATOR_STAGES": "all"}


def _submit(user, count: int) -> list:
    task = Task.objects.get(slug=GEMM)
    return [
        submission_create(
            user=user, task=task, arch="sm_90a", source=REFERENCE.read_text(), force=True, kind=Submission.Kind.KERNEL
        ).evaluation.id
        for _ in range(count)
    ]


def _serve(phase: str, gpus: list) -> None:
    """A burst worker per GPU, started together on the queued evaluations; until every one has exited."""
    procs = [
        start_manage_process("gpu_worker", "--gpu", g.index, "--burst", "--name", f"{phase}-gpu{g.index}", **WORKER_ENV)
        for g in gpus
    ]
    deadline = time.monotonic() + PHASE_TIMEOUT_S
    try:
        while any(p.poll() is None for p in procs):
            assert time.monotonic() < deadline, f"{phase}: the workers did not empty the queue in {PHASE_TIMEOUT_S} s"
            time.sleep(1)
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=30)
    assert [p.returncode for p in procs] == [0] * len(procs), f"{phase}: a worker failed (exit codes)"


def _speedups(evaluation: Evaluation) -> dict[str, tuple[float, list[float] | None]]:
    return {
        w["uuid"]: (w["performance"]["speedup_factor"], w["performance"].get("speedup_ci95"))
        for w in evaluation.verdict["workloads"]
        if (w.get("performance") or {}).get("speedup_factor")
    }


def _agree(solo: tuple[float, list[float] | None], busy: tuple[float, list[float] | None]) -> bool:
    (a, a_ci), (b, b_ci) = solo, busy
    if max(a, b) / min(a, b) <= TRUSTED_BOUND_MARGIN:
        return True
    return bool(a_ci and b_ci and a_ci[0] <= b_ci[1] and b_ci[0] <= a_ci[1])


def test_two_gpus_serve_one_queue_without_cross_talk(settings):
    settings.RANKED_CHECK = False
    settings.EVALUATIONS_PER_HOUR = 10_000
    settings.MAX_ACTIVE_EVALUATIONS = 10_000
    sync_catalog()
    user = make_user("multi-gpu")
    phases: dict[str, list] = {}
    for g in GPUS:
        phases[f"solo{g.index}"] = _submit(user, REPEATS)
        _serve(f"solo{g.index}", [g])
    phases["both"] = _submit(user, 2 * REPEATS)
    _serve("both", GPUS)

    uuid_of = {w.name: w.gpu_uuid for w in GpuWorker.objects.all()}
    rows = []
    for phase, ids in phases.items():
        for evaluation in Evaluation.objects.filter(id__in=ids):
            verdict = evaluation.verdict or {}
            rows.append(
                {
                    "phase": phase,
                    "evaluation": str(evaluation.id),
                    "worker": evaluation.worker_name,
                    "gpu_uuid": (verdict.get("environment") or {}).get("gpu_uuid"),
                    "status": evaluation.status,
                    "review_state": evaluation.review_state,
                    "holds": [h.get("code") for h in (verdict.get("integrity") or {}).get("holds", [])],
                    "speedups": _speedups(evaluation) if verdict else {},
                    "started_at": evaluation.started_at.isoformat() if evaluation.started_at else None,
                    "finished_at": evaluation.finished_at.isoformat() if evaluation.finished_at else None,
                }
            )
    if out := os.environ.get("MULTI_GPU_OUT"):
        Path(out).write_text("".join(json.dumps(r) + "\n" for r in rows))

    assert len(rows) == 4 * REPEATS
    assert all(r["status"] == "PASSED" for r in rows), [r for r in rows if r["status"] != "PASSED"]
    held = [r for r in rows if r["review_state"] == "held" or r["holds"]]
    assert not held, held
    for r in rows:  # each verdict records the GPU its worker is bound to, and solo runs stay on their GPU
        assert r["gpu_uuid"] == uuid_of[r["worker"]], r
        if r["phase"].startswith("solo"):
            assert r["gpu_uuid"] == next(g.uuid for g in GPUS if r["phase"] == f"solo{g.index}"), r
    both = [r for r in rows if r["phase"] == "both"]
    assert {r["gpu_uuid"] for r in both} == {g.uuid for g in GPUS}, "both workers must take jobs from the one queue"
    spans = {g.uuid: [(r["started_at"], r["finished_at"]) for r in both if r["gpu_uuid"] == g.uuid] for g in GPUS}
    first, second = spans.values()
    assert any(a0 < b1 and b0 < a1 for a0, a1 in first for b0, b1 in second), "the two GPUs never timed at once"
    for g in GPUS:
        solo = [r["speedups"] for r in rows if r["phase"] == f"solo{g.index}"]
        busy = [r["speedups"] for r in both if r["gpu_uuid"] == g.uuid]
        for s in solo:
            for b in busy:
                for workload, figure in b.items():
                    assert _agree(s[workload], figure), (g.uuid, workload, s[workload], figure)
