"""Runs `python -m evaluator run` for one evaluation in a child process and relays its progress.

The worker process never touches CUDA: everything GPU happens in this child (and the evaluator's own
candidate child below it). The child gets a minimal environment: no database URL, no Redis URL, no keys."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from evaluator.both_sides.verdict import Verdict
from evaluator.suite.solutions import LANGUAGE_FILES
from portal.core.verdict_record import parse_verdict
from portal.submissions import evidence_files
from portal.submissions.evidence_files import EvidenceFile, NotKept

# Variables the evaluator may need; everything else (SECRET_KEY, DATABASE_URL, FERNET keys ...) stays behind.
PASS_ENV = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "PYTHONPATH",
    "LD_LIBRARY_PATH",
    "CUDA_HOME",
    "CUDA_PATH",
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
)
STDERR_TAIL = 8000


@dataclass
class RunnerResult:
    verdict: dict | None  # the verdict document, when the evaluator produced one: stored as it wrote it
    record: Verdict | None = None  # the same, read once here (portal/core/verdict_record.py); None if unreadable
    files: list[EvidenceFile] = field(default_factory=list)  # artifacts to keep (portal/submissions/evidence_files.py)
    not_kept: list[NotKept] = field(default_factory=list)  # evidence files left out, and why
    error: str = ""  # why there is no verdict (infrastructure)
    lost: bool = False  # the evaluation was taken away from us while running (stop quietly)


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in PASS_ENV or k.startswith("EVALUATOR_")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _read_new_lines(path: Path, offset: int) -> tuple[list[dict], int]:
    if not path.exists():
        return [], offset
    with path.open("rb") as fh:
        fh.seek(offset)
        chunk = fh.read()
    complete = chunk.rfind(b"\n") + 1  # only whole lines; the rest is read next time
    events = []
    for line in chunk[:complete].splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events, offset + complete


def run_evaluator(
    *,
    source: str,
    task: str,
    arch: str,
    stages: str,
    workdir: Path,
    tasks_root: Path,
    timeout: float,
    on_events: Callable[[list[dict]], bool],
    seed: str = "",
    workload: str = "all",
    python: str = "",
    poll_seconds: float = 1.0,
    language: str = "cuda",
    evidence_max_bytes: int = 32 * 1024 * 1024,
    log_max_bytes: int = 64 * 1024,
) -> RunnerResult:
    """Evaluate `source`; `on_events` gets new progress events (and serves as heartbeat) about once a
    second and returns False if the evaluation is no longer ours, which stops the child. At most
    `evidence_max_bytes` of evidence files are read back, the submission's own output cut to `log_max_bytes` a
    file."""
    workdir.mkdir(parents=True, exist_ok=True)
    kernel = workdir / LANGUAGE_FILES.get(language, LANGUAGE_FILES["cuda"])
    kernel.write_text(source, encoding="utf-8")
    verdict_path = workdir / "verdict.json"
    progress_path = workdir / "progress.jsonl"
    keep_dir = workdir / "evaluator"  # the evaluator's --workdir: build files, logs, SASS, ncu output
    command = [
        python or sys.executable,
        "-m",
        "evaluator",
        "run",
        str(kernel),
        "--task",
        task,
        "--arch",
        arch,
        "--language",
        language,
        "--tasks-root",
        str(tasks_root),
        "--json",
        str(verdict_path),
        "--progress",
        str(progress_path),
        "--workdir",
        str(keep_dir),
    ]
    if stages and stages != "all":
        command += ["--stages", stages]
    if workload != "all":
        command += ["--workload", workload]
    env = child_env()
    # Hidden checks: the seed goes through the environment, not argv (world-readable in /proc/PID/cmdline);
    # the candidate's sandbox (its own PID namespace) keeps it from seeing the evaluator process at all.
    if seed:
        env["EVALUATOR_SEED"] = seed
    stderr_path = workdir / "evaluator.stderr"
    with stderr_path.open("wb") as stderr, (workdir / "evaluator.stdout").open("wb") as stdout:
        proc = subprocess.Popen(
            command,
            cwd=str(Path(__file__).resolve().parents[2]),
            env=env,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        offset = 0
        lost = timed_out = False
        while True:
            try:
                proc.wait(timeout=poll_seconds)
                finished = True
            except subprocess.TimeoutExpired:
                finished = False
            events, offset = _read_new_lines(progress_path, offset)
            if not on_events(events):
                lost = True
            if finished:
                break
            if lost or time.monotonic() > deadline:
                timed_out = not lost
                _kill_group(proc)
                break
    if lost:
        return RunnerResult(None, error="evaluation taken away from this worker", lost=True)
    if timed_out:
        return RunnerResult(None, error=f"the evaluator ran past the {timeout:.0f} s limit and was stopped")
    tail = stderr_path.read_bytes()[-STDERR_TAIL:].decode("utf-8", "replace")
    if proc.returncode != 0 or not verdict_path.exists():
        return RunnerResult(None, error=f"the evaluator exited with status {proc.returncode}: {tail.strip()[-2000:]}")
    try:
        verdict = json.loads(verdict_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        return RunnerResult(None, error=f"the evaluator wrote an unreadable verdict: {exc}")
    record = parse_verdict(verdict)  # where the portal receives the verdict: read once, handed on typed
    evidence = evidence_files.collect(
        keep_dir,
        source_name=kernel.name,
        source=source,
        verdict_bytes=verdict_path.read_bytes(),
        record=record,
        max_bytes=evidence_max_bytes,
        log_max_bytes=log_max_bytes,
    )
    return RunnerResult(verdict, record, evidence.files, not_kept=evidence.not_kept)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
