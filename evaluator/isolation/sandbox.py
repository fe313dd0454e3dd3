"""Run untrusted work in a fresh process group that the parent can kill whole, with capped output capture.

The candidate process gets a clean environment (no portal secrets), its own session (so `os.killpg` reaches
everything it started), stdout/stderr captured to files up to a cap, and two private pipes for messages:
one JSON object per line. Candidate code can print whatever it likes on stdout; the parent never reads
results from there. With a `Jail` (evaluator/isolation/jail.py) the process runs inside bubblewrap, with resource
limits and, where possible, its own cgroup; whatever it leaves behind is killed through the cgroup too.
A process that writes more than `output_limit` bytes to stdout or stderr is killed: printing gigabytes is
a way to stall the evaluator, never something a kernel needs. A candidate whose cgroup reaches its process limit
(pids.max) is killed too, as soon as the parent sees it (checked every `LIMIT_POLL_S` while it waits for a
message): a fork bomb held at the limit would otherwise spin on every core until the wall-clock limit.
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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from evaluator.isolation.cgroups import Cgroup
    from evaluator.isolation.jail import Jail

OUTPUT_CAP = 1024 * 1024  # bytes kept per stream; the rest is counted and dropped
OUTPUT_LIMIT = 64 * 1024 * 1024  # bytes per stream after which the process is killed
TAIL_BYTES = 4096
LIMIT_POLL_S = 0.25  # how often a waiting parent looks at the candidate's cgroup for a process-limit hit
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


# What the sandboxed Python processes (evaluator/candidate_process/: the candidate, child.py; the Triton compile,
# triton_aot.py)
# import besides the standard library and this repository. They run with PYTHONDONTWRITEBYTECODE (below) and a
# read-only site-packages, so the install compiles these ahead of time (scripts/compile_sandbox_bytecode.py).
SANDBOX_PYTHON_IMPORTS = (
    "torch",
    "numpy",
    "tvm_ffi",
    "triton",
    "triton.compiler",
    "triton.backends.nvidia.compiler",
    "triton.runtime.jit",
    "triton.experimental.gluon",  # loaded while a kernel compiles
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
    """Copies a pipe into a file, keeping the first `cap` bytes and counting the rest.

    When more than `limit` bytes have passed, `on_limit` is called once (it kills the writer).
    """

    def __init__(
        self,
        stream: Any,
        path: Path,
        cap: int,
        limit: int | None = None,
        on_limit: Callable[[], None] | None = None,
        tail_bytes: int = TAIL_BYTES,
    ) -> None:
        super().__init__(daemon=True)
        self.stream, self.path, self.cap = stream, path, cap
        self.limit, self.on_limit, self.tail_bytes = limit, on_limit, tail_bytes
        self.kept = 0
        self.dropped = 0
        self.tail = b""
        self.over_limit = False

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
                self.tail = (self.tail + data)[-self.tail_bytes :]
                if self.limit is not None and not self.over_limit and self.kept + self.dropped > self.limit:
                    self.over_limit = True
                    if self.on_limit is not None:
                        self.on_limit()

    def tail_text(self) -> str:
        text = self.tail.decode("utf-8", errors="replace")
        return ("[... earlier output dropped ...]\n" if self.dropped else "") + text


class ChildDied(RuntimeError):
    """The child closed its message pipe (exited or crashed) before answering."""


class ProcessLimitHit(ChildDied):
    """The child's cgroup reached its process limit: the parent killed the whole tree."""


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
        output_limit: int = OUTPUT_LIMIT,
        jail: Jail | None = None,
        writable: Iterable[Path] = (),
        readable: Iterable[Path] = (),
        gpu: bool = False,
        extra_fds: tuple[int, ...] = (),
    ) -> None:
        """`extra_fds`: descriptors the child inherits as they are numbered here (e.g. shared output memory)."""
        log_dir.mkdir(parents=True, exist_ok=True)
        to_child_r, self._to_child_w = os.pipe()
        self._from_child_r, from_child_w = os.pipe()
        full = [*argv, "--fd-in", str(to_child_r), "--fd-out", str(from_child_w)]
        self.cgroup: Cgroup | None = None
        self.jail = jail
        preexec = None
        if jail is not None:
            full = jail.command(full, writable=writable, readable=readable, gpu=gpu)
            env = jail.env(env)
            self.cgroup, _ = jail.new_cgroup()
            preexec = jail.preexec(self.cgroup)
        self.proc = subprocess.Popen(
            full,
            pass_fds=(to_child_r, from_child_w, *extra_fds),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=preexec,  # noqa: PLW1509 - limits and cgroup must be set between fork and exec
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self.killed = False
        self._closed = False
        self.stdout = _CappedSink(self.proc.stdout, log_dir / f"{name}.stdout", output_cap, output_limit, self._flood)
        self.stderr = _CappedSink(self.proc.stderr, log_dir / f"{name}.stderr", output_cap, output_limit, self._flood)
        self.stdout.start()
        self.stderr.start()
        self._buffer = b""
        self.received = 0  # messages read so far (compared with the count the child's trusted side sent)
        self.limit_events: dict[str, int] = {}
        self._next_limit_check = 0.0

    def _flood(self) -> None:
        self.killed = True
        self._kill_everything()

    @property
    def flooded(self) -> str | None:
        """Which stream went over the output limit (the process was killed for it), if any."""
        return "stdout" if self.stdout.over_limit else "stderr" if self.stderr.over_limit else None

    def _kill_everything(self) -> None:
        kill_group(self.proc.pid)
        if self.cgroup is not None:
            self.cgroup.kill_all()

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
        """The next message. Raises TimeoutError at `deadline` (time.monotonic), ChildDied on EOF and
        ProcessLimitHit (after killing everything) once the cgroup's process limit has been hit."""
        while b"\n" not in self._buffer:
            self._stop_at_process_limit()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self._from_child_r], [], [], min(remaining, LIMIT_POLL_S))
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
        self.received += 1
        return message

    def _stop_at_process_limit(self) -> None:
        now = time.monotonic()
        if self.cgroup is None or now < self._next_limit_check:
            return
        self._next_limit_check = now + LIMIT_POLL_S
        if self.cgroup.events().get("pids_max_hit"):
            self.kill()
            raise ProcessLimitHit("it reached the sandbox's process limit, so its whole process tree was killed")

    def kill(self) -> None:
        """SIGKILL the whole process group (the candidate and anything it started)."""
        self.killed = True
        self._kill_everything()
        self.wait(10)

    def wait(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def close(self, grace_s: float = 10.0) -> int | None:
        """Let the child exit on its own for `grace_s`, then kill the group; release pipes and threads. A second
        call returns the first one's exit status: the pipes' descriptor numbers may belong to other files by then."""
        if self._closed:
            return self.proc.returncode
        self._closed = True
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
            self._kill_everything()  # anything the candidate left behind in its group or cgroup
        try:
            os.close(self._from_child_r)
        except OSError:
            pass
        self.stdout.join(5)
        self.stderr.join(5)
        if self.cgroup is not None:
            self.limit_events = self.cgroup.events()
            self.cgroup.remove()
            self.cgroup = None
            if self.jail is not None:
                self.jail.ledger.add_events(self.limit_events)
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
    output: str  # stdout+stderr, capped (head and tail kept)
    seconds: float
    output_bytes: int = 0  # everything the command wrote, counted
    limit_events: dict[str, int] | None = None  # cgroup events (pids_max_hit, oom_kill) when it ran in one


def run_group(
    argv: list[str],
    *,
    timeout_s: float,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    jail: Jail | None = None,
    writable: Iterable[Path] = (),
    readable: Iterable[Path] = (),
    gpu: bool = False,
    output_cap: int = OUTPUT_CAP,
    toolchain: bool = False,
    chdir: Path | None = None,
) -> GroupResult:
    """Run a command in its own session (sandboxed when `jail` is given); at `timeout_s` kill it all.

    Output is read as it comes, keeping the first and last `output_cap / 2` bytes: a compiler flooding its
    error stream costs neither memory nor disk here. `toolchain`: the compiler's narrower sandbox (jail.py).
    Inside the sandbox the command starts in its private /tmp unless `chdir` names a folder it is shown (a tool
    that writes into its working folder, like `cuobjdump -xelf`, needs that folder to be `chdir` and writable).
    """
    import tempfile

    start = time.monotonic()
    cgroup = None
    preexec = None
    if jail is not None:
        argv = jail.command(argv, writable=writable, readable=readable, gpu=gpu, chdir=chdir, toolchain=toolchain)
        env = jail.env(env if env is not None else dict(os.environ))
        cgroup, _ = jail.new_cgroup()
        preexec = jail.preexec(cgroup, toolchain=toolchain)
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=cwd,
        start_new_session=True,
        preexec_fn=preexec,  # noqa: PLW1509 - limits and cgroup must be set between fork and exec
    )
    with tempfile.TemporaryDirectory(prefix="ptxbench-out-") as tmp:
        sink = _CappedSink(proc.stdout, Path(tmp) / "head", output_cap // 2, tail_bytes=output_cap // 2)
        sink.start()
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        kill_group(proc.pid)
        if cgroup is not None:
            cgroup.kill_all()
        proc.wait()
        sink.join(10)
        head = (Path(tmp) / "head").read_bytes()
    total = sink.kept + sink.dropped
    if total <= output_cap:
        raw = head + sink.tail[len(sink.tail) - (total - len(head)) :] if total > len(head) else head
    else:
        raw = head + f"\n[... {total - output_cap} bytes cut ...]\n".encode() + sink.tail
    events = None
    if cgroup is not None:
        events = cgroup.events()
        cgroup.remove()
        if jail is not None:
            jail.ledger.add_events(events)
    text = raw.decode("utf-8", errors="replace")
    return GroupResult(None if timed_out else proc.returncode, timed_out, text, time.monotonic() - start, total, events)
