"""Run untrusted work in a fresh process group that the parent can kill whole, with capped output capture.

The candidate process gets a clean environment (no portal secrets), its own session (so `os.killpg` reaches
everything it started), stdout/stderr captured to files up to a cap, and two private pipes for messages:
one JSON object per line. Candidate code can print whatever it likes on stdout; the parent never reads
results from there.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

OUTPUT_CAP = 1024 * 1024  # bytes kept per stream; the rest is counted and dropped
TAIL_BYTES = 4096
_ENV_KEEP = (
    "PATH",
    "LD_LIBRARY_PATH",
    "PYTHONPATH",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_HOME",
    "CUDA_PATH",
    "LANG",
    "LC_ALL",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
)


def child_env(workdir: Path, extra_pythonpath: list[str] | None = None) -> dict[str, str]:
    """An environment with only what CUDA and Python need: never the caller's secrets."""
    env = {k: os.environ[k] for k in _ENV_KEEP if k in os.environ}
    paths = [*(extra_pythonpath or []), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])]
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(
        HOME=str(workdir),
        TMPDIR=str(workdir),
        PYTHONUNBUFFERED="1",
        PYTHONDONTWRITEBYTECODE="1",
        # NVLink multicast stays off on shared multi-GPU hosts.
        NCCL_NVLS_ENABLE="0",
        TORCH_SYMM_MEM_DISABLE_MULTICAST="1",
    )
    return env


class _CappedSink(threading.Thread):
    """Copies a pipe into a file, keeping the first `cap` bytes and counting the rest."""

    def __init__(self, stream: Any, path: Path, cap: int) -> None:
        super().__init__(daemon=True)
        self.stream, self.path, self.cap = stream, path, cap
        self.kept = 0
        self.dropped = 0
        self.tail = b""

    def run(self) -> None:
        with open(self.path, "wb") as fh:
            while True:
                data = self.stream.read1(65536) if hasattr(self.stream, "read1") else self.stream.read(65536)
                if not data:
                    break
                room = max(0, self.cap - self.kept)
                if room:
                    fh.write(data[:room])
                    self.kept += min(room, len(data))
                self.dropped += max(0, len(data) - room)
                self.tail = (self.tail + data)[-TAIL_BYTES:]

    def tail_text(self) -> str:
        text = self.tail.decode("utf-8", errors="replace")
        return ("[... earlier output dropped ...]\n" if self.dropped else "") + text


class ChildDied(RuntimeError):
    """The child closed its message pipe (exited or crashed) before answering."""


class CandidateProcess:
    """One candidate process: spawn, exchange JSON-line messages, kill the whole group."""

    def __init__(
        self,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: Path,
        log_dir: Path,
        name: str = "candidate",
        output_cap: int = OUTPUT_CAP,
    ) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        to_child_r, self._to_child_w = os.pipe()
        self._from_child_r, from_child_w = os.pipe()
        self.proc = subprocess.Popen(
            [*argv, "--fd-in", str(to_child_r), "--fd-out", str(from_child_w)],
            pass_fds=(to_child_r, from_child_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self.stdout = _CappedSink(self.proc.stdout, log_dir / f"{name}.stdout", output_cap)
        self.stderr = _CappedSink(self.proc.stderr, log_dir / f"{name}.stderr", output_cap)
        self.stdout.start()
        self.stderr.start()
        self._buffer = b""
        self.killed = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message) + "\n").encode()
        try:
            os.write(self._to_child_w, data)
        except BrokenPipeError:
            raise ChildDied("the candidate process is gone") from None

    def receive(self, deadline: float) -> dict[str, Any]:
        """The next message. Raises TimeoutError at `deadline` (time.monotonic) and ChildDied on EOF."""
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self._from_child_r], [], [], min(remaining, 1.0))
            if not ready:
                continue
            chunk = os.read(self._from_child_r, 1 << 20)
            if not chunk:
                raise ChildDied("the candidate process closed its channel")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            raise ChildDied(f"unreadable message from the candidate process: {line[:200]!r}") from None
        if not isinstance(message, dict):
            raise ChildDied("malformed message from the candidate process")
        return message

    def kill(self) -> None:
        """SIGKILL the whole process group (the candidate and anything it started)."""
        self.killed = True
        kill_group(self.proc.pid)
        self.wait(10)

    def wait(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def close(self, grace_s: float = 10.0) -> int | None:
        """Let the child exit on its own for `grace_s`, then kill the group; release pipes and threads."""
        for fd in (self._to_child_w,):
            try:
                os.close(fd)
            except OSError:
                pass
        code = self.wait(grace_s)
        if code is None:
            self.kill()
            code = self.proc.returncode
        else:
            kill_group(self.proc.pid)  # anything the candidate left behind in its group
        try:
            os.close(self._from_child_r)
        except OSError:
            pass
        self.stdout.join(5)
        self.stderr.join(5)
        return code

    def tails(self) -> tuple[str, str]:
        return self.stdout.tail_text(), self.stderr.tail_text()


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass
class GroupResult:
    returncode: int | None  # None when killed at the time limit
    timed_out: bool
    output: str  # stdout+stderr, capped
    seconds: float


def run_group(
    argv: list[str], *, timeout_s: float, env: dict[str, str] | None = None, cwd: Path | None = None
) -> GroupResult:
    """Run a command in its own session; at `timeout_s` kill its whole process group."""
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    timed_out = False
    try:
        raw, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(proc.pid)
        raw, _ = proc.communicate()
    text = raw.decode("utf-8", errors="replace")
    if len(text) > OUTPUT_CAP:
        text = text[: OUTPUT_CAP // 2] + "\n[... cut ...]\n" + text[-OUTPUT_CAP // 2 :]
    return GroupResult(None if timed_out else proc.returncode, timed_out, text, time.monotonic() - start)
