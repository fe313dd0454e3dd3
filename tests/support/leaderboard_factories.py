"""Rows for leaderboard tests: kernel evaluations with hand-picked numbers, verdict documents, model runs."""

from __future__ import annotations

import hashlib
import itertools
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

GEMM = "gemm_n7168_k5120"
HEADLINE = "7abd165d-8d16-5996-9d55-3b80c1718242"  # gemm_n7168_k5120's headline workload
T0 = datetime(2025, 11, 1, 12, 0, tzinfo=UTC)
_counter = itertools.count(1)


@pytest.fixture(autouse=True)
def leaderboard_isolation(settings, tmp_path):
    """Each test starts with empty leaderboard caches and its own artifact folder."""
    from django.core.cache import cache

    from portal.leaderboard.cache import clear_process_cache

    settings.ARTIFACTS_DIR = tmp_path / "artifacts"
    clear_process_cache()
    cache.clear()  # rendered fragments: a rolled-back test can leave the same generation token behind
    yield
    clear_process_cache()
    cache.clear()


def user(username: str, *, banned: bool = False):
    from django.contrib.auth.models import User

    from portal.accounts.models import Profile

    account = User.objects.create_user(username=username, password="x-unused-password-123")
    if banned:
        Profile.objects.create(user=account, is_banned=True, banned_reason="test")
    return account


def task(slug: str = GEMM):
    from portal.catalog.models import Task

    return Task.objects.get(slug=slug)


def verdict(
    *,
    task_slug: str = GEMM,
    arch: str = "sm_90a",
    source: str = "// kernel\n",
    status: str = "PASSED",
    speedup: float | None = 1.0,
    ci: tuple[float, float] | None = None,
    arch_status: str = "verified",
    full: bool = True,
    tflops: float | None = 500.0,
    peak: float | None = 0.5,
    gpu: str = "NVIDIA H200",
    compile_output: str = "ptxas info    : Used 168 registers\n",
    created_at: datetime = T0,
    families: dict[str, dict[str, int]] | None = None,
    witness: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A verdict document in evaluator/both_sides/verdict.py's shape, with one (headline) workload; completed with the
    evaluator's defaults and validated against evaluator/verdict.schema.json (tests/support/verdicts.py)."""
    from tests.support.verdicts import complete

    encoded = source.encode()
    performance = None
    if status == "PASSED" and speedup is not None:
        low, high = ci or (speedup * 0.98, speedup * 1.02)
        performance = {
            "latency_ms": 1.0 / speedup,
            "baseline_latency_ms": 1.0,
            "speedup_factor": speedup,
            "speedup_ci95": [low, high],
            "baseline": "cublas",
            "tflops": tflops,
            "fraction_of_peak": peak,
        }
    return complete({
        "evaluator_version": "0.1.0",
        "task": task_slug,
        "arch": arch,
        "status": status,
        "created_at": created_at.isoformat().replace("+00:00", "Z"),
        "source_sha256": hashlib.sha256(encoded).hexdigest(),
        "source_bytes": len(encoded),
        "stages_requested": ["policy", "compile", "sass", "correctness", "arch", "timing"],
        "stages": [],
        "policy": [],
        "compile": {
            "ok": status != "COMPILE_ERROR",
            "command": ["nvcc"],
            "returncode": 0,
            "seconds": 1.0,
            "output": compile_output,
        },
        "sass": None,
        "workloads": [
            {
                "uuid": HEADLINE,
                "axes": {"M": 4096},
                "status": status if status != "STATIC_ONLY" else "PASSED",
                "message": "",
                "correctness": {"max_absolute_error": 0.004, "max_relative_error": 0.002},
                "performance": performance,
            }
        ],
        "arch_check": {
            "status": arch_status,
            "families": families or {},
            "full": full,
            "ptxbench_verified": arch_status == "verified",
            "tensor_core_share": 0.99,
            **(witness or {}),
        },
        "environment": {
            "gpu_name": gpu,
            "driver_version": "570.86.15",
            "cuda_runtime": "12.8",
            "torch_version": "2.11.0",
            "nvcc_version": "13.0",
        },
        "notes": [],
    })  # fmt: skip


def evaluation(
    *,
    owner=None,
    task_slug: str = GEMM,
    arch: str = "sm_90a",
    name: str = "kernel.cu",
    source: str | None = None,
    kind: str = "kernel",
    hidden: bool = False,
    review_state: str | None = None,
    finished_at: datetime | None = None,
    files: dict[str, bytes] | None = None,
    ranked_check: str | None = "PASSED",
    **verdict_fields,
):
    """A submission with one done evaluation whose summary columns come from summarise_verdict, exactly as
    a worker would record it; artifacts stored for real. A kernel upload also gets its hidden ranked check
    with status `ranked_check` (None: not run yet)."""
    from portal.core.verdict_record import parse_verdict
    from portal.submissions import artifacts
    from portal.submissions.models import Evaluation, Submission
    from portal.submissions.summary import summarise_verdict

    source = source if source is not None else f"// kernel {next(_counter)}\n"
    the_task = task(task_slug)
    document = verdict(task_slug=task_slug, arch=arch, source=source, **verdict_fields)
    summary = summarise_verdict(parse_verdict(document), headline_workload=HEADLINE, plausible_speedup_max=3.0)
    message = summary.pop("message")
    if review_state is not None:
        summary["review_state"] = review_state
    submission = Submission.objects.create(
        user=owner,
        task=the_task,
        arch=arch,
        kind=kind,
        name=name,
        source=source,
        source_sha256=hashlib.sha256(source.encode()).hexdigest(),
        source_bytes=len(source.encode()),
        is_hidden=hidden,
    )
    done = Evaluation.objects.create(
        id=uuid.uuid4(),
        submission=submission,
        state="done",
        queue="gpu-sm90",
        stage="done",
        stage_message=message,
        verdict=document,
        finished_at=finished_at or T0 + timedelta(minutes=next(_counter)),
        **summary,
    )
    stored = {"kernel.cu": source.encode(), "verdict.json": json.dumps(document).encode()}
    stored.update(files or {})
    artifacts.store_all(done, stored)
    if kind == "kernel" and ranked_check is not None and summary["status"] == "PASSED":
        Evaluation.objects.create(
            submission=submission,
            purpose="hidden",
            seed="5ec2e7",
            state="done",
            queue="gpu-sm90",
            status=ranked_check,
            finished_at=done.finished_at,
        )
    return done


# --------------------------------------------------------------------------- model runs

MHA = "mha_with_lse_d128"


def model_run(
    owner,
    *,
    model: str,
    display_name: str = "",
    arch: str = "sm_90a",
    gpu: str = "NVIDIA H200",
    created_at: datetime = T0,
    state: str = "done",
    hidden: bool = False,
    language: str = "cuda",
):
    from portal.agent.models import ModelRun

    run = ModelRun.objects.create(
        user=owner,
        model=model,
        display_name=display_name or model,
        base_url="https://llm.example.com/v1?key=do-not-leak",
        api_key_encrypted="gAAAA-not-a-real-token",
        api_key_last4="leak",
        arch=arch,
        state=state,
        gpu_name=gpu,
        is_hidden=hidden,
        language=language,
    )
    ModelRun.objects.filter(id=run.id).update(created_at=created_at)  # auto_now_add ignores the value given
    run.refresh_from_db()
    return run


def metrics(
    run, task_slug: str, k: int, n: int, correct: int, correct_arch: int, best: float, tokens: int, *, complete=True
):
    from portal.agent.models import RunTaskMetrics

    return RunTaskMetrics.objects.create(
        run=run,
        task=task(task_slug),
        arch=run.arch,
        k=k,
        trajectories=n,
        correct=correct,
        correct_arch=correct_arch,
        best_speedup=best,
        tokens=tokens,
        complete=complete,
    )


def turns(run, task_slug, trajectories):
    """Trajectories of a run on one task; each a list of turns (status, arch_status, speedup, reasoning tokens)."""
    from portal.agent.models import Trajectory, Turn
    from tests.support.agent_support import ended

    for index, turn_list in enumerate(trajectories):
        trajectory = Trajectory.objects.create(run=run, task=task(task_slug), index=index, state="done")
        for number, (status, arch_status, speedup, reasoning) in enumerate(turn_list):
            Turn.objects.create(
                trajectory=trajectory, index=number, state="done", **ended(status), arch_status=arch_status,
                speedup_factor=speedup, reasoning_tokens=reasoning,
            )  # fmt: skip


def standard_runs():
    """sm_90a, k=8 unless said otherwise (n, correct, correct_arch, best, tokens):
    A (H200, day 0): GEMM 4,3,2,1.4,1000   MHA 4,1,1,0.8,2000   k=1: GEMM 4,1,0,0.9,300  MHA 4,0,0,0,600
    B (H100, day 1): GEMM 4,3,3,1.4,500    MHA 4,2,2,1.1,700
    C (H200, day 2, still running): GEMM 2,1,1,2.0,300 (incomplete), no MHA yet
    D hidden, E banned, F on sm_100a: never on the sm_90a board."""
    from tests.support.factories import sync_catalog

    sync_catalog()
    alice, bob, carol = user("alice"), user("bob"), user("carol")
    eve = user("eve", banned=True)
    t = T0
    a = model_run(alice, model="vendor/model-a", display_name="Model A", created_at=t)
    b = model_run(
        bob,
        model="vendor/model-b",
        display_name="Model B",
        gpu="NVIDIA H100 80GB HBM3",
        created_at=t + timedelta(days=1),
    )
    c = model_run(
        carol, model="vendor/model-c", display_name="Model C", created_at=t + timedelta(days=2), state="running"
    )
    d = model_run(alice, model="vendor/model-d", created_at=t, hidden=True)
    e = model_run(eve, model="vendor/model-e", created_at=t)
    f = model_run(
        alice, model="vendor/model-a", display_name="Model A", arch="sm_100a", gpu="NVIDIA B200", created_at=t
    )
    metrics(a, GEMM, 8, 4, 3, 2, 1.4, 1000)
    metrics(a, MHA, 8, 4, 1, 1, 0.8, 2000)
    metrics(a, GEMM, 1, 4, 1, 0, 0.9, 300)
    metrics(a, MHA, 1, 4, 0, 0, 0.0, 600)
    metrics(b, GEMM, 8, 4, 3, 3, 1.4, 500)
    metrics(b, MHA, 8, 4, 2, 2, 1.1, 700)
    metrics(c, GEMM, 8, 2, 1, 1, 2.0, 300, complete=False)
    metrics(d, GEMM, 8, 4, 4, 4, 3.0, 100)
    metrics(e, GEMM, 8, 4, 4, 4, 2.9, 100)
    metrics(f, GEMM, 8, 4, 4, 4, 1.6, 100)
    metrics(f, MHA, 8, 4, 2, 1, 1.2, 100)
    return {"a": a, "b": b, "c": c}
