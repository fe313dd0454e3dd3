"""`scripts/gpu_pass.sh`'s detached modes on the GPU host: `MODE stop` ends what `MODE start` left running,
children included, so the device's remaining time can go to another mode without two users of the GPU; `holds wait`
counts the evaluations of its own run.

The GPU programs are the edge here: a `python3` on PATH that, for the corpus runner, starts a child and sleeps, and
for the false-hold test writes one evaluation's row and sleeps, as the real ones would sit on the GPU, and answers
the environment log's version queries of the GPU host's packages; everything else is the real script."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

FAKE_PYTHON = f"""#!/bin/bash
case "$*" in
  *"import torch, triton"*|*"import django, pyarrow"*) echo "versions of the GPU host's packages" ;;
  *tests/adversarial/corpus.py*) sleep 300 & sleep 300 ;;
  *tests/submissions/test_false_holds_gpu.py*) echo '{{"kernel": "k", "holds": []}}' >> "$FALSE_HOLDS_OUT"; sleep 300 ;;
  *) exec {sys.executable} "$@" ;;
esac
"""


def _fake_python(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "python3"
    fake.parent.mkdir()
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)


def _pass(tmp_path: Path, *args: str, wait_s: int = 1, **extra: str) -> subprocess.CompletedProcess:
    bin_dir = tmp_path / "bin"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}",
        "GPU_PASS_WORK": str(tmp_path / "work"),
        "OUT": str(tmp_path / "out"),
        "BUNDLE": str(tmp_path / "no-bundle"),
        "HOST_ENV_DIR": str(tmp_path / "host"),
        "WAIT_S": str(wait_s),
        **extra,
    }
    return subprocess.run(
        ["bash", "scripts/gpu_pass.sh", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


def _session(sid: int) -> list[str]:
    """The processes of session `sid` still running (an ended one its parent has not reaped yet is not)."""
    found = subprocess.run(["ps", "-o", "pid=,stat=", "-s", str(sid)], capture_output=True, text=True).stdout
    return [line.split()[0] for line in found.splitlines() if not line.split()[1].startswith("Z")]


def test_a_detached_corpus_stops_with_every_process_of_its_session(tmp_path):
    _fake_python(tmp_path)

    started = _pass(tmp_path, "corpus", "start")
    assert "corpus started" in started.stdout, started.stdout + started.stderr
    sid_file = tmp_path / "work" / "corpus.sid"
    sid = int(sid_file.read_text())
    deadline = time.monotonic() + 30
    while len(_session(sid)) < 3 and time.monotonic() < deadline:  # the shell and the runner's two sleeps
        time.sleep(0.2)
    assert len(_session(sid)) >= 3

    try:
        stopped = _pass(tmp_path, "corpus", "stop")
        assert "corpus stopped" in stopped.stdout, stopped.stdout + stopped.stderr
        assert _session(sid) == []
        assert not sid_file.exists()
        assert (tmp_path / "out" / "gpu-pass.tgz").exists()  # what it wrote so far is packed
    finally:
        subprocess.run(["pkill", "-KILL", "-s", str(sid)], capture_output=True)


def test_a_false_hold_run_counts_its_own_evaluations_not_an_earlier_runs(tmp_path):
    _fake_python(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    # A pass's holds step wrote five rows to the same file earlier on this host.
    (work / "holds-0.jsonl").write_text('{"kernel": "earlier", "holds": []}\n' * 5)

    started = _pass(tmp_path, "holds", "start")
    assert "false-hold run started in 1 part(s)" in started.stdout, started.stdout + started.stderr
    sid = int((work / "holds-0.sid").read_text())
    try:
        rows = work / "holds-0.jsonl"
        deadline = time.monotonic() + 30
        while not (rows.exists() and '"k"' in rows.read_text()) and time.monotonic() < deadline:
            time.sleep(0.2)
        waited = _pass(tmp_path, "holds", "wait", wait_s=0)
        assert "false-hold run still running: 1 evaluations recorded" in waited.stdout, waited.stdout
        assert (tmp_path / "out" / "holds.jsonl").read_text().count("\n") == 1
    finally:
        subprocess.run(["pkill", "-KILL", "-s", str(sid)], capture_output=True)


def test_a_new_corpus_run_is_not_taken_for_done_by_an_earlier_runs_end(tmp_path):
    _fake_python(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    (work / "corpus.done").write_text("exit 0\n")  # an earlier corpus run on this host ended

    started = _pass(tmp_path, "corpus", "start")
    sid = int((work / "corpus.sid").read_text())
    try:
        assert "corpus started" in started.stdout, started.stdout + started.stderr
        assert "corpus still running" in started.stdout, started.stdout
        assert "exit 0" not in started.stdout
    finally:
        subprocess.run(["pkill", "-KILL", "-s", str(sid)], capture_output=True)


def test_a_detached_run_that_never_starts_is_reported_not_announced(tmp_path):
    _fake_python(tmp_path)
    # A setsid that starts nothing: no shell ever writes its session id.
    (tmp_path / "bin" / "setsid").write_text("#!/bin/bash\nexit 0\n")
    (tmp_path / "bin" / "setsid").chmod(0o755)

    started = _pass(tmp_path, "holds", "start", SESSION_WAIT_S="1")

    assert started.returncode != 0
    assert "false-hold run started" not in started.stdout
    assert "not started in 1 s" in started.stderr and "holds-0.sid" in started.stderr, started.stderr
    assert "holds stop` cannot end it" in started.stderr
