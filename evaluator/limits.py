"""The resource limits of one sandboxed process tree (evaluator/jail.py applies them, evaluator/cgroups.py the
cgroup part)."""

from __future__ import annotations

from dataclasses import dataclass

GiB = 1024**3
MiB = 1024**2


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed process tree. Sizes in bytes."""

    tmp_bytes: int = 1 * GiB  # the private /tmp tmpfs
    shm_bytes: int = 64 * MiB  # the private /dev/shm tmpfs
    open_files: int = 4096  # RLIMIT_NOFILE
    file_bytes: int = 8 * GiB  # RLIMIT_FSIZE: outputs pass through files, so it must exceed the largest output
    processes: int = 1024  # pids.max (threads count); RLIMIT_NPROC when not root
    memory_bytes: int = 64 * GiB  # cgroup memory limit (host memory, tmpfs pages included)
