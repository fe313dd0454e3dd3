"""The candidate process's start: trusted setup, `standby`, and the submission loaded only on `load`.

Run as the parent runs it (`python -m evaluator.candidate_process.child`, two pipes), on the CPU with the tiny task.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from evaluator.both_sides import protocol
from evaluator.both_sides.taskdata import load_task

HERE = Path(__file__).resolve().parent
TASK_DIR = HERE / "tasks" / "tiny_gemm"
REPO = HERE.parents[1]


def start_child(tmp_path: Path) -> tuple[subprocess.Popen[bytes], int, object]:
    """A candidate process whose library does not exist: loading it fails in the loader."""
    workload = load_task(TASK_DIR).workloads[0].uuid
    job = {
        "library": str(tmp_path / "missing" / "kernel.so"),
        "task_dir": str(TASK_DIR),
        "workload": workload,
        "exchange_dir": str(tmp_path),
        "device": 0,
        "device_type": "cpu",
        "loader": "evaluator.candidate_process.tvm_ffi_library",
    }
    (tmp_path / "job.json").write_text(json.dumps(job))
    cmd_r, cmd_w = os.pipe()
    ev_r, ev_w = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-m", "evaluator.candidate_process.child", str(tmp_path / "job.json")]
        + ["--fd-in", str(cmd_r), "--fd-out", str(ev_w)],
        cwd=REPO,
        pass_fds=(cmd_r, ev_w),
        stderr=subprocess.DEVNULL,
    )
    os.close(cmd_r)
    os.close(ev_w)
    return child, cmd_w, os.fdopen(ev_r, "rb")


def test_a_library_that_fails_to_load_is_the_candidates_failure_not_the_hosts(tmp_path):
    """The child waits on standby until told to load; a failure from then on is the submission's ("load" stage,
    a RUNTIME_ERROR), never a setup error (which the parent reads as this host's problem). Mutation caught: the
    error's stage taken from the load progress only when no session was built."""
    child, commands, events = start_child(tmp_path)
    try:
        assert json.loads(events.readline()) == protocol.standby_event()
        os.write(commands, protocol.encode(protocol.load_command()))
        error = json.loads(events.readline())
        assert protocol.is_error(error) and not protocol.is_setup_error(error)
        assert error["stage"] == protocol.LOAD_STAGE
        assert protocol.describe_error(error).startswith("the library failed to load")
    finally:
        os.close(commands)
        child.wait(30)


def test_a_closed_command_channel_at_standby_is_a_setup_error(tmp_path):
    """The parent closing the channel before `load` (its baseline failed): nothing of the submission ran, so the
    child reports it as setup, and loads nothing."""
    child, commands, events = start_child(tmp_path)
    try:
        assert json.loads(events.readline()) == protocol.standby_event()
        os.close(commands)
        error = json.loads(events.readline())
        assert protocol.is_setup_error(error), error
    finally:
        child.wait(30)
