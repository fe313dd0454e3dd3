"""The sandbox every piece of candidate code runs in: bubblewrap, resource limits, and a cgroup where there is one.

A `Jail` turns an argument vector into one that runs inside bubblewrap (`bwrap`) with
- no network (a fresh network namespace with only loopback), its own PID, IPC and UTS namespaces, no
  capabilities, a new session, and death when the evaluator dies;
- a narrow read-only view of the host: the system directories, the Python installation and its import path,
  the evaluator package (not the rest of the repository), the task folder, the tool folders it needs;
  /etc/shadow and /etc/gshadow are masked, /root, /home and /var are not there at all; the compiler's sandbox
  (`toolchain=True`) is narrower still: /usr, /bin, /lib*, of /etc only TOOLCHAIN_ETC, and the folders the
  caller names (toolkit, include roots, build folder), no /opt, /sys or Python folders;
- a size-capped private tmpfs at /tmp (HOME and TMPDIR point there) and a small one at /dev/shm: the only
  writable places besides the folders the caller names (the output exchange, the build folder);
- the NVIDIA device nodes bound in when GPU work is asked for.
Limits are applied in the forked child before `bwrap` starts (`preexec`): RLIMIT_CORE=0, RLIMIT_NOFILE,
RLIMIT_FSIZE, RLIMIT_NPROC (the kernel ignores it for root, so it only counts when the evaluator is not root),
and, where a writable cgroup hierarchy exists (v1 or v2), the process joins a fresh cgroup with pids.max and
a memory limit. RLIMIT_AS is not used: CUDA reserves terabytes of virtual address space and fails under it.

`open_jail` probes bubblewrap once per configuration. When it is missing or cannot start (no user or mount
namespaces in a container, say) the evaluator refuses, unless unsandboxed mode was asked for explicitly
(`allow_unsandboxed=True` or EVALUATOR_ALLOW_UNSANDBOXED=1); either way `Jail.record()` says what was used.
"""

from __future__ import annotations

import contextlib
import glob
import os
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import evaluator
from evaluator.errors import EnvironmentProblem
from evaluator.verdict import SandboxInfo

EVALUATOR_DIR = Path(evaluator.__file__).resolve().parent
GiB = 1024**3
MiB = 1024**2
# System folders shown read-only. /usr/local holds CUDA; /opt holds Nsight Compute and, on some GPU images,
# the Python installation.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/sys")
# The compile sandbox (`toolchain=True`) shows only these of the system: no /etc beyond the dynamic loader's
# cache and the alternatives links (Debian's cc/c++), no /opt, no /sys. Measured with nvcc 13.0 + GCC 12.
TOOLCHAIN_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
TOOLCHAIN_ETC = ("/etc/ld.so.cache", "/etc/alternatives")
MASKED_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-")
MASKED_DIRS = ("/etc/ssl/private",)
SANDBOX_TMP = "/tmp"  # noqa: S108 - inside the sandbox this is a private, size-capped tmpfs
SANDBOX_SHM = "/dev/shm"  # noqa: S108 - likewise


class SandboxUnavailable(EnvironmentProblem):
    """bubblewrap is missing or cannot start here, and unsandboxed mode was not allowed."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed process tree. Sizes in bytes."""

    tmp_bytes: int = 1 * GiB  # the private /tmp tmpfs
    shm_bytes: int = 64 * MiB  # the private /dev/shm tmpfs
    open_files: int = 4096  # RLIMIT_NOFILE
    file_bytes: int = 8 * GiB  # RLIMIT_FSIZE: outputs pass through files, so it must exceed the largest output
    processes: int = 1024  # pids.max (threads count); RLIMIT_NPROC when not root
    memory_bytes: int = 64 * GiB  # cgroup memory limit (host memory, tmpfs pages included)


def allow_unsandboxed_from_env() -> bool:
    return os.environ.get("EVALUATOR_ALLOW_UNSANDBOXED", "").strip().lower() in ("1", "true", "yes")


def find_bwrap() -> str | None:
    """EVALUATOR_BWRAP (a path, e.g. a bwrap unpacked from the Debian package), else `bwrap` on PATH."""
    explicit = os.environ.get("EVALUATOR_BWRAP")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    return shutil.which("bwrap")


# --------------------------------------------------------------------------- cgroups


@dataclass
class Cgroup:
    """A fresh cgroup (v2, or the v1 pids and memory hierarchies) that one process tree joins in preexec."""

    version: int
    dirs: dict[str, Path]  # controller ("pids", "memory", or "unified") -> folder

    @classmethod
    def create(cls, limits: Limits, root: Path = Path("/sys/fs/cgroup")) -> tuple[Cgroup | None, str]:
        """A new cgroup with the limits written, or None and why not."""
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
            pids = set()
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


# --------------------------------------------------------------------------- the jail


@dataclass
class Jail:
    """How to start sandboxed processes: `command` wraps the argument vector, pass `preexec(cgroup)` to Popen."""

    mode: str  # "bubblewrap" or "unsandboxed"
    reason: str
    limits: Limits = field(default_factory=Limits)
    bwrap: str | None = None
    bwrap_version: str = ""
    use_cgroups: bool = True

    def command(
        self,
        argv: list[str],
        *,
        writable: Iterable[Path] = (),
        readable: Iterable[Path] = (),
        gpu: bool = False,
        chdir: Path | None = None,
        toolchain: bool = False,
    ) -> list[str]:
        """`argv` run inside the sandbox (unchanged in unsandboxed mode); `toolchain`: the compile sandbox."""
        if self.mode != "bubblewrap":
            return list(argv)
        assert self.bwrap is not None
        options = bwrap_args(
            self.limits, writable=writable, readable=readable, gpu=gpu, chdir=chdir, toolchain=toolchain
        )
        return [self.bwrap, *options, "--", *argv]

    def env(self, env: dict[str, str]) -> dict[str, str]:
        """The child's environment as seen inside: HOME and TMPDIR on the private /tmp."""
        if self.mode != "bubblewrap":
            return env
        return {**env, "HOME": SANDBOX_TMP, "TMPDIR": SANDBOX_TMP}

    def new_cgroup(self) -> tuple[Cgroup | None, str]:
        if not self.use_cgroups:
            return None, "cgroups disabled"
        return Cgroup.create(self.limits)

    def preexec(self, cgroup: Cgroup | None) -> Callable[[], None]:
        """Runs in the forked child before exec: limits, then the cgroup. Only async-signal-safe-ish calls."""
        limits = self.limits
        procs = cgroup.procs_files() if cgroup is not None else []
        sandboxed = self.mode == "bubblewrap"

        def apply() -> None:
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            if sandboxed:
                _lower(resource.RLIMIT_NOFILE, limits.open_files)
                _lower(resource.RLIMIT_FSIZE, limits.file_bytes)
                _lower(resource.RLIMIT_NPROC, limits.processes)
            pid = str(os.getpid()).encode()
            for path in procs:
                fd = os.open(path, os.O_WRONLY)
                try:
                    os.write(fd, pid)
                finally:
                    os.close(fd)

        return apply

    def record(self, cgroup_reason: str | None = None) -> SandboxInfo:
        """What this jail enforces, for the verdict."""
        info = SandboxInfo(mode=self.mode, reason=self.reason, bwrap_version=self.bwrap_version or None)
        if self.mode != "bubblewrap":
            info.limits = {"core_dumps": "off"}
            return info
        root = os.geteuid() == 0
        info.network = False
        info.user = "root without capabilities" if root else f"uid {os.geteuid()}"
        info.writable = [f"{SANDBOX_TMP} (private tmpfs)", f"{SANDBOX_SHM} (private tmpfs)", "the exchange folder"]
        info.limits = {
            "tmp_bytes": str(self.limits.tmp_bytes),
            "shm_bytes": str(self.limits.shm_bytes),
            "open_files": str(self.limits.open_files),
            "file_bytes": str(self.limits.file_bytes),
            "core_dumps": "off",
        }
        if cgroup_reason is None:
            info.limits["processes"] = f"{self.limits.processes} (cgroup pids.max)"
            info.limits["memory_bytes"] = f"{self.limits.memory_bytes} (cgroup)"
        else:
            info.limits["processes"] = (
                f"not enforced: running as root without a pids cgroup ({cgroup_reason})"
                if root
                else f"{self.limits.processes} (RLIMIT_NPROC, per user)"
            )
            info.limits["memory_bytes"] = f"not enforced: no writable cgroup ({cgroup_reason})"
        return info


def _lower(which: int, value: int) -> None:
    soft, hard = resource.getrlimit(which)
    new_hard = value if hard == resource.RLIM_INFINITY else min(hard, value)
    resource.setrlimit(which, (min(value, new_hard), new_hard))


def bwrap_args(
    limits: Limits,
    *,
    writable: Iterable[Path] = (),
    readable: Iterable[Path] = (),
    gpu: bool = False,
    chdir: Path | None = None,
    toolchain: bool = False,
) -> list[str]:
    """bubblewrap options (without the program) for the sandbox described in the module docstring.

    `toolchain=True` is the compiler's sandbox: only TOOLCHAIN_DIRS and TOOLCHAIN_ETC of the system, and of the
    rest only `readable` (the toolkit, tvm-ffi, the build folder), not Python's folders."""
    args = [
        "--die-with-parent",
        "--new-session",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--cap-drop",
        "ALL",
        "--hostname",
        "sandbox",
    ]
    for d in TOOLCHAIN_DIRS if toolchain else SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    if toolchain:
        args += [a for f in TOOLCHAIN_ETC if os.path.exists(f) for a in ("--ro-bind", f, f)]
        shown = _outside(TOOLCHAIN_DIRS, [Path(p) for p in readable])
    else:
        shown = visible_paths([Path(p) for p in readable])
    for p in shown:
        if not _under_tmp(p):
            args += ["--ro-bind", str(p), str(p)]
    for f in () if toolchain else MASKED_FILES:
        if os.path.isfile(f):
            args += ["--ro-bind", "/dev/null", f]
    for d in () if toolchain else MASKED_DIRS:
        if os.path.isdir(d):
            args += ["--tmpfs", d]
    args += ["--dev", "/dev"]
    if gpu:
        for node in sorted(glob.glob("/dev/nvidia*")):
            args += ["--dev-bind", node, node]
    args += ["--size", str(limits.shm_bytes), "--tmpfs", SANDBOX_SHM, "--remount-ro", "/dev"]
    args += ["--proc", "/proc", "--size", str(limits.tmp_bytes), "--tmpfs", SANDBOX_TMP]
    # Python folders under /tmp (e.g. wheels unpacked to /tmp/site on GPU hosts) are hidden by the tmpfs: show them.
    for p in shown:
        if _under_tmp(p):
            args += ["--ro-bind", str(p), str(p)]
    for p in writable:
        p = Path(p).resolve()
        args += ["--bind", str(p), str(p)]
    args += ["--remount-ro", "/", "--chdir", str(chdir or SANDBOX_TMP)]
    return args


def _outside(dirs: Iterable[str], paths: Iterable[Path]) -> list[Path]:
    """`paths` resolved, without those under `dirs` (already shown) or under another path of the list."""
    out = []
    for p in sorted({Path(os.path.realpath(p)) for p in paths if os.path.exists(p)}, key=lambda p: len(p.parts)):
        if any(str(p) == d or str(p).startswith(d + "/") for d in dirs) or p == Path("/"):
            continue
        if not any(k in p.parents for k in out):
            out.append(p)
    return out


def _under_tmp(p: Path) -> bool:
    return p.parts[:2] in (("/", "tmp"), ("/", "dev"))


def visible_paths(extra: Iterable[Path] = ()) -> list[Path]:
    """Folders outside the system directories that sandboxed Python and the tools need, read-only.

    Python's prefixes and import path, library paths, the evaluator package alone (never the repository root:
    it holds the portal's data), and `extra` (task folders, the build folder, tool folders).
    """
    repo = EVALUATOR_DIR.parent
    candidates = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix), Path(sys.executable).parent]
    candidates += [Path(p) for p in sys.path if p]
    for var in ("PYTHONPATH", "LD_LIBRARY_PATH"):
        candidates += [Path(p) for p in os.environ.get(var, "").split(os.pathsep) if p]
    candidates += [EVALUATOR_DIR, *extra]
    out: list[Path] = []
    for c in candidates:
        try:
            p = c.resolve()
        except OSError:
            continue
        if not p.exists() or p == Path("/"):
            continue
        if p == repo or p in repo.parents:
            continue  # the evaluator package is bound on its own
        if any(str(p) == d or str(p).startswith(d + "/") for d in SYSTEM_DIRS):
            continue
        out.append(p)
    # Drop paths under another path in the list, keep order.
    out = sorted(set(out), key=lambda p: (len(p.parts), str(p)))
    kept: list[Path] = []
    for p in out:
        if not any(k == p or k in p.parents for k in kept):
            kept.append(p)
    return kept


_PROBES: dict[tuple[str, bool], tuple[bool, str]] = {}


def probe(bwrap: str, limits: Limits, gpu: bool) -> tuple[bool, str]:
    """Start Python inside the sandbox once; (works, reason it does not)."""
    key = (bwrap, gpu)
    if key not in _PROBES:
        argv = [bwrap, *bwrap_args(limits, gpu=gpu), "--", sys.executable, "-c", "import evaluator.jail"]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(EVALUATOR_DIR.parent)}
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
            ok = proc.returncode == 0
            why = "" if ok else (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1][:500]
        except (OSError, subprocess.SubprocessError) as exc:
            ok, why = False, str(exc)
        _PROBES[key] = (ok, why)
    return _PROBES[key]


def bwrap_version(bwrap: str) -> str:
    try:
        return subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def open_jail(*, allow_unsandboxed: bool | None = None, gpu: bool = False, limits: Limits | None = None) -> Jail:
    """The sandbox for this evaluation. Raises SandboxUnavailable when bubblewrap cannot be used and unsandboxed
    mode was not allowed (argument, or EVALUATOR_ALLOW_UNSANDBOXED=1 when the argument is None)."""
    limits = limits or Limits()
    allowed = allow_unsandboxed_from_env() if allow_unsandboxed is None else allow_unsandboxed
    bwrap = find_bwrap()
    if bwrap is None:
        why = "bubblewrap (bwrap) is not installed" + (
            f" at EVALUATOR_BWRAP={os.environ['EVALUATOR_BWRAP']}" if os.environ.get("EVALUATOR_BWRAP") else ""
        )
    else:
        ok, why = probe(bwrap, limits, gpu)
        if ok:
            return Jail("bubblewrap", "", limits, bwrap, bwrap_version(bwrap))
        why = f"bubblewrap failed to start: {why}"
    if not allowed:
        raise SandboxUnavailable(
            f"{why}; refusing to run candidate code unsandboxed (pass --allow-unsandboxed or set "
            "EVALUATOR_ALLOW_UNSANDBOXED=1 to accept that)"
        )
    return Jail("unsandboxed", f"{why}; unsandboxed mode explicitly allowed", limits)
