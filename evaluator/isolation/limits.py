"""The resource limits of one sandboxed process tree (evaluator/isolation/jail.py applies them, evaluator/isolation/cgroups.py the
cgroup part).

The cgroup memory limit is sized from the host: a fraction (`MEMORY_FRACTION`) of MemTotal in /proc/meminfo, so a
candidate or a compiler can never take more than the machine has (a fixed 64 GiB was above a 23 GiB worker's
memory, so the kernel's OOM killer, not the cgroup, would have chosen what died). `EVALUATOR_MEMORY_LIMIT`
overrides it: bytes (`12884901888`), a size (`12GiB`, `512MiB`) or a share of MemTotal (`40%`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from evaluator.errors import EnvironmentProblem

GiB = 1024**3
MiB = 1024**2

MEMORY_FRACTION = 0.5  # of the host's MemTotal, for each sandboxed process tree
MEMORY_FALLBACK_BYTES = 16 * GiB  # when /proc/meminfo cannot be read (no Linux, so no cgroup either)
MEMORY_ENV = "EVALUATOR_MEMORY_LIMIT"
MEMINFO = "/proc/meminfo"

_UNITS = {"": 1, "k": 1024, "m": MiB, "g": GiB, "t": 1024 * GiB}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", re.IGNORECASE)


def parse_size(text: str) -> int:
    """Bytes from `123`, `12G`, `12GiB`, `512MiB`, `1.5g` (binary units); ValueError otherwise."""
    m = _SIZE.fullmatch(text)
    if not m:
        raise ValueError(f"{text!r} is not a size (bytes, or a number with K, M, G or T)")
    value = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if value <= 0:
        raise ValueError(f"{text!r} is not a positive size")
    return value


def mem_total_bytes(meminfo: str) -> int | None:
    """MemTotal from the text of /proc/meminfo (`MemTotal:  24365432 kB`), in bytes; None when absent."""
    for line in meminfo.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "MemTotal:" and parts[1].isdigit():
            unit = parts[2].lower() if len(parts) > 2 else "b"
            return int(parts[1]) * (1024 if unit == "kb" else 1)
    return None


def memory_limit_bytes(meminfo: str | None, override: str | None = None, fraction: float = MEMORY_FRACTION) -> int:
    """The cgroup memory limit of one sandboxed process tree: `override` (EVALUATOR_MEMORY_LIMIT: a size, or a
    percentage of MemTotal) when given, else `fraction` of MemTotal, else MEMORY_FALLBACK_BYTES. Pure: the caller
    reads /proc/meminfo and the environment. An override that is not a size is an EnvironmentProblem (the
    operator's mistake, said at once, never a silent default)."""
    total = mem_total_bytes(meminfo) if meminfo else None
    if override is not None and override.strip():
        text = override.strip()
        try:
            if text.endswith("%"):
                share = float(text[:-1])
                if not 0 < share <= 100:
                    raise ValueError(f"{text!r} is not a share between 0 and 100%")
                if total is None:
                    raise ValueError(f"{text!r} needs the host's MemTotal, which {MEMINFO} does not give")
                return int(total * share / 100)
            return parse_size(text)
        except ValueError as exc:
            raise EnvironmentProblem(f"{MEMORY_ENV}: {exc}") from None
    if total is None:
        return MEMORY_FALLBACK_BYTES
    return int(total * fraction)


def host_memory_limit_bytes() -> int:
    """memory_limit_bytes for this host: /proc/meminfo and EVALUATOR_MEMORY_LIMIT."""
    try:
        with open(MEMINFO, encoding="ascii", errors="replace") as fh:
            meminfo = fh.read()
    except OSError:
        meminfo = None
    return memory_limit_bytes(meminfo, os.environ.get(MEMORY_ENV))


def describe_bytes(n: int) -> str:
    """`268435456 bytes (256 MiB)`: exact, and readable."""
    if n >= GiB:
        return f"{n} bytes ({n / GiB:.3g} GiB)"
    if n >= MiB:
        return f"{n} bytes ({n / MiB:.3g} MiB)"
    return f"{n} bytes"


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed process tree. Sizes in bytes."""

    tmp_bytes: int = 1 * GiB  # the private /tmp tmpfs
    shm_bytes: int = 64 * MiB  # the private /dev/shm tmpfs
    open_files: int = 4096  # RLIMIT_NOFILE
    file_bytes: int = 8 * GiB  # RLIMIT_FSIZE: outputs pass through files, so it must exceed the largest output
    # RLIMIT_FSIZE of the compiler's sandbox (nvcc and everything it runs, cuobjdump): no file it writes may be
    # larger than the library the trusted side would accept (evaluator/build/compile.py LIBRARY_MAX_BYTES), so a
    # `char big[700ull << 20] = {1};` fails when the assembler reaches the cap instead of writing 700 MB first.
    compiler_file_bytes: int = 256 * MiB
    processes: int = 1024  # pids.max (threads count); RLIMIT_NPROC when not root
    # cgroup memory limit (host memory, tmpfs pages included): a share of this host's memory (see above)
    memory_bytes: int = field(default_factory=host_memory_limit_bytes)
