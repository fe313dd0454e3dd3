"""The candidate-process machinery without a GPU: process-group kill, message channel, capped capture."""

from __future__ import annotations

import os
import sys
import textwrap
import time

import pytest

from evaluator.isolation.sandbox import CandidateProcess, ChildDied, child_env, run_group

CHILD = textwrap.dedent(
    """
    import argparse, json, os, subprocess, sys, time
    p = argparse.ArgumentParser(); p.add_argument("mode"); p.add_argument("--fd-in", type=int)
    p.add_argument("--fd-out", type=int); a = p.parse_args()
    out = os.fdopen(a.fd_out, "wb", buffering=0)
    def send(m): out.write((json.dumps(m) + "\\n").encode())
    print("candidate chatter on stdout", flush=True)
    if a.mode == "sleep":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        send({"event": "ready", "grandchild": child.pid})
        time.sleep(600)
    elif a.mode == "echo":
        send({"event": "ready"})
        for line in os.fdopen(a.fd_in, "rb"):
            send({"event": "echo", "got": json.loads(line)})
    elif a.mode == "noisy":
        sys.stdout.write("x" * 5_000_000); sys.stdout.flush()
        send({"event": "ready"})
    elif a.mode == "crash":
        os._exit(7)
    """
)


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "child.py"
    path.write_text(CHILD)
    return path


def spawn(script, tmp_path, mode):
    return CandidateProcess(
        [sys.executable, str(script), mode], env=child_env(tmp_path), cwd=tmp_path, log_dir=tmp_path / "logs"
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); look at its state.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_timeout_kills_the_whole_process_group(script, tmp_path):
    child = spawn(script, tmp_path, "sleep")
    ready = child.receive(time.monotonic() + 30)
    grandchild = ready["grandchild"]
    assert _alive(grandchild)
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        child.receive(time.monotonic() + 0.5)
    assert time.monotonic() - start < 5
    child.kill()
    child.close()
    time.sleep(0.2)
    assert child.proc.returncode == -9
    assert not _alive(grandchild), "the grandchild escaped the process-group kill"
    assert "candidate chatter" in child.tails()[0]


def test_messages_round_trip(script, tmp_path):
    child = spawn(script, tmp_path, "echo")
    assert child.receive(time.monotonic() + 30) == {"event": "ready"}
    child.send({"cmd": "ping", "n": 3})
    assert child.receive(time.monotonic() + 30) == {"event": "echo", "got": {"cmd": "ping", "n": 3}}
    child.close(grace_s=5)


def test_output_is_capped(script, tmp_path):
    child = spawn(script, tmp_path, "noisy")
    child.receive(time.monotonic() + 30)
    child.close(grace_s=5)
    log = tmp_path / "logs" / "candidate.stdout"
    assert log.stat().st_size == 1024 * 1024
    assert child.stdout.dropped > 3_000_000
    assert child.tails()[0].startswith("[... earlier output dropped ...]")


def test_crash_is_reported_as_child_died(script, tmp_path):
    child = spawn(script, tmp_path, "crash")
    with pytest.raises(ChildDied):
        child.receive(time.monotonic() + 30)
    assert child.close() == 7


def test_child_env_has_no_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://secret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    env = child_env(tmp_path, ["/repo"])
    assert "DATABASE_URL" not in env and "OPENAI_API_KEY" not in env
    assert env["PYTHONPATH"].split(os.pathsep)[0] == "/repo"
    assert env["HOME"] == str(tmp_path)


def test_run_group_kills_at_the_limit(tmp_path):
    start = time.monotonic()
    result = run_group([sys.executable, "-c", "import time; print('hi', flush=True); time.sleep(600)"], timeout_s=1)
    assert result.timed_out and result.returncode is None
    assert time.monotonic() - start < 10
    assert "hi" in result.output


def test_a_second_close_touches_no_descriptor_the_first_one_released(script, tmp_path):
    """The trusted baseline's failure path closes its process to read how it ended, and the `finally` closes it
    again: by then the old pipe numbers may belong to other files. Mutation caught: close() without its guard."""
    child = spawn(script, tmp_path, "crash")
    with pytest.raises(ChildDied):
        child.receive(time.monotonic() + 30)
    assert child.close() == 7
    reader, writer = os.pipe()  # takes the lowest free numbers: the ones the first close released
    try:
        assert child.close() == 7
        os.write(writer, b"still open")
        assert os.read(reader, 64) == b"still open"
    finally:
        os.close(reader)
        os.close(writer)
