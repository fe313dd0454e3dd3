"""A fresh cgroup per sandboxed process tree: pids.max and a memory limit, kill-all, and the limit events.

Where a writable hierarchy exists (v2, or the v1 pids and memory controllers), each process tree joins its own
cgroup in the forked child before exec (evaluator/isolation/jail.py `Jail.preexec`). A candidate can leave its process
group, never its cgroup, so whatever it leaves behind is killed through the cgroup. When no cgroup can be made,
`Cgroup.create` says why, and the verdict's sandbox record says which limits were then not enforced. The memory
limit written is `Limits.memory_bytes`: a share of this host's memory (evaluator/isolation/limits.py, EVALUATOR_MEMORY_LIMIT).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from evaluator.isolation.limits import Limits

CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass
class Cgroup:
    """A fresh cgroup (v2, or the v1 pids and memory hierarchies) that one process tree joins in preexec."""

    version: int
    dirs: dict[str, Path]  # controller ("pids", "memory", or "unified") -> folder

    @classmethod
    def create(cls, limits: Limits, root: Path | None = None) -> tuple[Cgroup | None, str]:
        """A new cgroup with the limits written (under `root`, default CGROUP_ROOT), or None and why not."""
        root = CGROUP_ROOT if root is None else root
        name = f"ptxbench-{os.getpid()}-{secrets.token_hex(4)}"
        reasons = []
        v2 = _v2_base(root)
        if v2 is not None:
            try:
                folder = v2 / name
                folder.mkdir()
                try:
                    (folder / "pids.max").write_text(str(limits.processes))
                    (folder / "memory.max").write_text(str(limits.memory_bytes))
                    with contextlib.suppress(OSError):
                        (folder / "memory.swap.max").write_text("0")
                except OSError:
                    folder.rmdir()
                    raise
                return cls(2, {"unified": folder}), ""
            except OSError as exc:
                reasons.append(f"cgroup v2 at {v2}: {exc.strerror or exc}")
        dirs: dict[str, Path] = {}
        try:
            for controller, files in (
                ("pids", {"pids.max": str(limits.processes)}),
                ("memory", {"memory.limit_in_bytes": str(limits.memory_bytes)}),
            ):
                base = _v1_base(root, controller)
                if base is None:
                    raise OSError(f"no writable v1 '{controller}' hierarchy")
                folder = base / name
                folder.mkdir()
                dirs[controller] = folder
                for fname, value in files.items():
                    (folder / fname).write_text(value)
            return cls(1, dirs), ""
        except OSError as exc:
            for folder in dirs.values():
                with contextlib.suppress(OSError):
                    folder.rmdir()
            reasons.append(f"cgroup v1: {exc.strerror or exc}")
        return None, "; ".join(reasons)

    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs.values()]

    def _read(self, controller: str, fname: str) -> str:
        folder = self.dirs.get("unified") or self.dirs.get(controller)
        try:
            return (folder / fname).read_text() if folder else ""
        except OSError:
            return ""

    def events(self) -> dict[str, int]:
        """How often the process limit was hit and how many OOM kills happened (0 when unknown)."""
        pids = _keyed_ints(self._read("pids", "pids.events")).get("max", 0)
        mem = _keyed_ints(self._read("memory", "memory.events" if self.version == 2 else "memory.oom_control"))
        return {"pids_max_hit": pids, "oom_kill": mem.get("oom_kill", 0)}

    def kill_all(self) -> None:
        """SIGKILL every process left in the cgroup (a candidate can leave the process group, not the cgroup)."""
        if self.version == 2:
            with contextlib.suppress(OSError):
                (self.dirs["unified"] / "cgroup.kill").write_text("1")
        for _ in range(50):
            pids: set[int] = set()
            for path in self.procs_files():
                with contextlib.suppress(OSError):
                    pids.update(int(p) for p in Path(path).read_text().split())
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)

    def remove(self) -> None:
        self.kill_all()
        for folder in self.dirs.values():
            for _ in range(40):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)  # the killed processes are still being reaped


def _keyed_ints(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out


def _own_cgroup_paths() -> dict[str, str]:
    """controller -> this process's cgroup path, from /proc/self/cgroup ("" is the v2 entry)."""
    paths = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for c in controllers.split(",") if controllers else [""]:
                paths[c] = path
    return paths


def _v2_base(root: Path) -> Path | None:
    """The v2 folder where a child cgroup with pids and memory can be made, or None."""
    for mount in (root, root / "unified"):
        controllers = mount / "cgroup.controllers"
        if not controllers.is_file():
            continue
        own = _own_cgroup_paths().get("", "/").lstrip("/")
        for base in (mount / own, mount):
            try:
                enabled = (base / "cgroup.subtree_control").read_text().split()
                if not {"pids", "memory"} <= set(enabled):
                    (base / "cgroup.subtree_control").write_text("+pids +memory")
                return base
            except OSError:
                continue
    return None


def _v1_base(root: Path, controller: str) -> Path | None:
    mount = root / controller
    if not (mount / "cgroup.procs").is_file():
        return None
    own = _own_cgroup_paths().get(controller, "/").lstrip("/")
    for base in (mount / own, mount):
        if base.is_dir() and os.access(base, os.W_OK):
            return base
    return None
