"""The toolkit's binary readers (`cuobjdump`, `nvdisasm`) run on files the candidate's build made, sandboxed.

A cubin or library came out of a build that candidate code could steer (a Triton file runs Python while it
compiles), so it is hostile data even after the trusted side copied and checked it: a tool that parses it is
started like the compiler, inside the compile sandbox (evaluator/isolation/jail.py, `toolchain=True`: no network, the
toolchain alone in view, RLIMIT_FSIZE, a cgroup), with the one file it reads bound read-only.

What the tool prints goes to an unnamed file the parent opened (the sandbox never sees a path to it), capped by
the sandbox's RLIMIT_FSIZE and again when read back. A tool that fails, times out or prints too much on such a
file is the submission's failure, not the evaluator's: `ToolFailed` carries a reason for the verdict, naming the
tool, with the tool's own words cut short and cleared of host paths.
"""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING

from evaluator.isolation.limits import describe_bytes
from evaluator.isolation.sandbox import child_env, kill_group

if TYPE_CHECKING:
    from evaluator.isolation.cgroups import Cgroup
    from evaluator.isolation.jail import Jail

READ_TIMEOUT_S = 120.0
# A listing the trusted side reads back; a library's SASS is a few MiB. Without a jail it is also the tool's
# RLIMIT_FSIZE; with one, the compile sandbox's `compiler_file_bytes` stops the tool first when that is lower.
LISTING_MAX_BYTES = 256 * 1024 * 1024
REASON_MAX_CHARS = 400
_PATH = re.compile(r"(?<![\w.~-])/(?:[^\s/'\"`:;,()]+/)+")
_UNPRINTABLE = re.compile(r"[^\x20-\x7e\n]")


class ToolFailed(Exception):
    """A trusted tool could not read a candidate-made binary; the message is the verdict's reason."""


def read_binary(
    tool: str,
    args: list[str],
    binary: Path,
    *,
    jail: Jail | None,
    timeout_s: float = READ_TIMEOUT_S,
    max_bytes: int = LISTING_MAX_BYTES,
    toolchain: bool = True,
    what: str = "the compiled code",
) -> str:
    """What `tool *args binary` prints on stdout, run in the compile sandbox of `jail` (with `toolchain` False, its
    wider sandbox, the one the profiler itself runs in; unsandboxed without a jail, for the developer scripts).
    Raises ToolFailed when the tool fails on the file, naming the file as `what`."""
    binary = Path(binary).resolve()
    name = Path(tool).name
    if jail is not None:  # the sandbox's RLIMIT_FSIZE stops the tool first where it is the lower cap
        max_bytes = min(max_bytes, jail.limits.compiler_file_bytes if toolchain else jail.limits.file_bytes)
    argv = [tool, *args, str(binary)]
    env = child_env(Path(tempfile.gettempdir()))
    cgroup: Cgroup | None = None
    if jail is not None:
        readable = [binary, Path(tool).resolve().parent]
        argv = jail.command(argv, readable=readable, toolchain=toolchain)
        env = jail.env(env)
        cgroup, _ = jail.new_cgroup()
        preexec = jail.preexec(cgroup, toolchain=toolchain)
    else:
        preexec = _file_size_limit(max_bytes)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env=env,
            cwd=tempfile.gettempdir(),
            start_new_session=True,
            preexec_fn=preexec,  # noqa: PLW1509 - limits and cgroup must be set between fork and exec
        )
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        kill_group(proc.pid)
        events: dict[str, int] = {}
        if cgroup is not None:
            cgroup.kill_all()
        proc.wait()
        if cgroup is not None:
            events = cgroup.events()
            cgroup.remove()
            if jail is not None:
                jail.ledger.add_events(events)
        if timed_out:
            raise ToolFailed(f"{name} did not finish reading {what} within {timeout_s:.0f} s")
        if events.get("oom_kill"):
            raise ToolFailed(f"{name} hit the sandbox's memory limit while reading {what}")
        printed = out.seek(0, os.SEEK_END)
        if printed > max_bytes or proc.returncode == -signal.SIGXFSZ:
            raise ToolFailed(f"{name} printed more than {describe_bytes(max_bytes)} about {what}")
        if proc.returncode != 0:
            said = redact(_head(err, 4096), binary, tool)
            how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit status {proc.returncode}"
            raise ToolFailed(f"{name} could not read {what} ({how})" + (f": {said}" if said else ""))
        out.seek(0)
        return out.read(max_bytes).decode("utf-8", errors="replace")


def redact(text: str, binary: Path, tool: str) -> str:
    """A tool's complaint as the submitter may see it: printable ASCII, each line once, short, without host paths
    (the file read and the tool are named by their names; every other path is cut to its last part)."""
    text = text.replace(str(binary), binary.name).replace(tool, Path(tool).name)
    text = _PATH.sub("", _UNPRINTABLE.sub("?", text))
    text = " | ".join(dict.fromkeys(line.strip() for line in text.splitlines() if line.strip()))
    return text if len(text) <= REASON_MAX_CHARS else text[: REASON_MAX_CHARS - 3] + "..."


def _head(fh: IO[bytes], n: int) -> str:
    fh.seek(0)
    return fh.read(n).decode("utf-8", errors="replace")


def _file_size_limit(max_bytes: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes + 1, max_bytes + 1))

    return apply
