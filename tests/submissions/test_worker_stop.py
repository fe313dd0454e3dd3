"""Stopping a GPU worker (Ctrl-C under `make run`, a deploy) takes seconds, not the rest of the evaluation: the
evaluation goes back to the queue at once, its attempt not counted, and the evaluator it started is stopped."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from portal.catalog.models import Task
from portal.submissions.models import Evaluation
from portal.submissions.services import submission_create
from tests.support.factories import (
    GEMM,
    make_user,
    start_manage_process,
    starter_source,
    sync_catalog,
    wait_for_live_worker,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]  # a real worker process: 4-20 s


def _sleeping_evaluator(folder: Path) -> Path:
    """An EVALUATOR_PYTHON that starts like the evaluator (a progress line) and then works for two minutes, its
    pid written down so the test can tell whether it was stopped."""
    script = folder / "python"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys, time\n"
        "args = sys.argv\n"
        "progress = args[args.index('--progress') + 1]\n"
        f"open({str(folder / 'evaluator.pid')!r}, 'w').write(str(os.getpid()))\n"
        "with open(progress, 'a') as f:\n"
        "    f.write(json.dumps({'stage': 'compile', 'state': 'running', 'message': 'nvcc'}) + '\\n')\n"
        "time.sleep(120)\n"
    )
    script.chmod(0o755)
    return script


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def _until(check, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout_s:.0f} s")
        time.sleep(0.1)


def test_a_stopped_worker_requeues_its_evaluation_and_stops_the_evaluator_within_seconds(tmp_path):
    sync_catalog()
    fake = _sleeping_evaluator(tmp_path)
    worker = start_manage_process(
        "gpu_worker", "--cpu-stages-only", "--arch", "sm_90a", "--name", "stop-test", EVALUATOR_PYTHON=str(fake)
    )
    try:
        wait_for_live_worker("stop-test", worker)
        evaluation = submission_create(
            user=make_user("kai"), task=Task.objects.get(slug=GEMM), arch="sm_90a", source=starter_source()
        ).evaluation

        def running() -> bool:
            evaluation.refresh_from_db()
            return evaluation.state == Evaluation.State.RUNNING and (tmp_path / "evaluator.pid").exists()

        _until(running, 60, "the worker did not start the evaluation")
        evaluator_pid = int((tmp_path / "evaluator.pid").read_text())
        assert evaluation.attempts == 1

        stopped_at = time.monotonic()
        os.kill(worker.pid, signal.SIGTERM)  # what the `make run` trap sends
        worker.wait(timeout=30)
        took = time.monotonic() - stopped_at
        assert took < 10, f"the worker took {took:.1f} s to stop"
        _until(lambda: not _alive(evaluator_pid), 5, "the evaluator was not stopped")

        evaluation.refresh_from_db()
        assert evaluation.state == Evaluation.State.QUEUED and evaluation.worker_name == ""
        assert evaluation.attempts == 0  # the kernel did nothing wrong: the stop does not use up an attempt
        assert "requeued: its worker was stopped" in evaluation.stage_message
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
        pid_file = tmp_path / "evaluator.pid"
        if pid_file.exists() and _alive(int(pid_file.read_text())):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
