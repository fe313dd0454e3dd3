"""A trusted library-baseline process that dies is this host's problem (EnvironmentProblem, retried by the portal),
and the message says how it ended: exit status, cgroup events, its last stderr line. A GPU pass lost a corpus round
to "the candidate process closed its channel" with nothing else to go on."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evaluator.both_sides.taskdata import load_task
from evaluator.errors import EnvironmentProblem
from evaluator.pipeline import Options, evaluate
from tests.support.variants import SOURCE, variant_workdir

HERE = Path(__file__).resolve().parent
WORKLOAD = "00000000-0000-4000-8000-000000000016"

DYING_BASELINE = """\
import os
import signal
import sys


def run(A, B):
    print("baseline-marker: about to end itself", file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_dead_baseline_process_is_a_host_problem_that_says_how_it_ended(tmp_path):
    """Mutation caught: the message without the process's end (exit status and last stderr line)."""
    task_dir = tmp_path / "tiny_gemm"
    shutil.copytree(HERE / "tasks" / "tiny_gemm", task_dir)
    (task_dir / "baseline.py").write_text(DYING_BASELINE)
    task = load_task(task_dir)
    with variant_workdir(None) as work:
        opts = Options(device_type="cpu", timeout_s=60, warmup=1, iters=4, allow_unsandboxed=True)
        opts.workdir = work
        with pytest.raises(EnvironmentProblem) as raised:
            evaluate(SOURCE, task, "sm_90a", workloads=WORKLOAD, stages=["timing"], options=opts)
    message = str(raised.value)
    assert message.startswith("the trusted library-baseline process failed: "), message
    assert "killed by SIGKILL" in message, message
    assert "last stderr line: baseline-marker: about to end itself" in message, message
