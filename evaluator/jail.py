"""The sandbox every piece of candidate code runs in: bubblewrap, resource limits, and a cgroup where there is one.

A `Jail` turns an argument vector into one that runs inside bubblewrap (`bwrap`) with
- no network (a fresh network namespace with only loopback), its own PID, IPC and UTS namespaces, no
  capabilities, a new session, and death when the evaluator dies;
- a narrow read-only view of the host: the system directories, the Python installation and its import path,
  the evaluator package (not the rest of the repository), the task folder, the tool folders it needs;
  /etc/shadow, /etc/gshadow and every other file under /etc that others may not read are masked, /root, /home
  and /var are not there at all; the compiler's sandbox
  (`toolchain=True`) is narrower still: /usr, /bin, /lib*, of /etc only TOOLCHAIN_ETC, and the folders the
  caller names (toolkit, include roots, build folder), no /opt, /sys or Python folders;
- a size-capped private tmpfs at /tmp (HOME and TMPDIR point there) and a small one at /dev/shm: the only
  writable places besides the folders the caller names (the output exchange, the build folder);
- the NVIDIA device nodes bound in when GPU work is asked for.
Limits are applied in the forked child before `bwrap` starts (`preexec`): RLIMIT_CORE=0, RLIMIT_NOFILE,
RLIMIT_FSIZE (for the compiler's processes the smaller `compiler_file_bytes`, in every mode), RLIMIT_NPROC (the
kernel ignores it for root, so it only counts when the evaluator is not root),
and, where a writable cgroup hierarchy exists (v1 or v2), the process joins a fresh cgroup with pids.max and
a memory limit. RLIMIT_AS is not used: CUDA reserves terabytes of virtual address space and fails under it.

`open_jail` probes bubblewrap once per configuration. When it is missing or cannot start (no user or mount
namespaces in a container, say) the evaluator refuses, unless unsandboxed mode was asked for explicitly
(`allow_unsandboxed=True` or EVALUATOR_ALLOW_UNSANDBOXED=1); either way `Jail.record()` says what was used.
"""

from __future__ import annotations

import functools
import glob
import os
import resource
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import evaluator
from evaluator.cgroups import Cgroup
from evaluator.envflags import env_flag
from evaluator.errors import EnvironmentProblem
from evaluator.limits import Limits
from evaluator.verdict import SandboxInfo

EVALUATOR_DIR = Path(evaluator.__file__).resolve().parent
# System folders shown read-only. /usr/local holds CUDA; /opt holds Nsight Compute and, on some GPU images,
# the Python installation.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/sys")
# The compile sandbox (`toolchain=True`) shows only these of the system: no /etc beyond the dynamic loader's
# cache and the alternatives links (Debian's cc/c++), no /opt, no /sys. Measured with nvcc 13.0 + GCC 12.
TOOLCHAIN_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
TOOLCHAIN_ETC = ("/etc/ld.so.cache", "/etc/alternatives")
MASKED_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-")
MASKED_DIRS = ("/etc/ssl/private",)
# Besides those, everything under /etc that an unprivileged local user could not read (the operator's env file with
# SECRET_KEY and DATABASE_URL, say) is masked too: the sandbox drops capabilities, but a worker running as root still
# owns root's 0600 files, and owner permissions need no capability.
PRIVATE_ROOTS = ("/etc",)
SANDBOX_TMP = "/tmp"  # noqa: S108 - inside the sandbox this is a private, size-capped tmpfs
SANDBOX_SHM = "/dev/shm"  # noqa: S108 - likewise


class SandboxUnavailable(EnvironmentProblem):
    """bubblewrap is missing or cannot start here, and unsandboxed mode was not allowed."""


def allow_unsandboxed_from_env() -> bool:
    return env_flag("EVALUATOR_ALLOW_UNSANDBOXED")


def find_bwrap() -> str | None:
    """EVALUATOR_BWRAP (a path, e.g. a bwrap unpacked from the Debian package), else `bwrap` on PATH."""
    explicit = os.environ.get("EVALUATOR_BWRAP")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    return shutil.which("bwrap")


# --------------------------------------------------------------------------- the jail


@dataclass
class SandboxLedger:
    """What the processes started through one jail actually got; the verdict's sandbox record is built from it."""

    processes: int = 0  # process trees started (each asks for its own cgroup)
    cgroup_versions: set[int] = field(default_factory=set)  # of the cgroups made
    without_cgroup: list[str] = field(default_factory=list)  # why, once per process tree that ran without one
    limit_events: dict[str, int] = field(default_factory=dict)  # pids_max_hit, oom_kill, summed
    overrides: dict[str, str] = field(default_factory=dict)  # e.g. "profile": "outside bubblewrap: ..."

    def started(self, cgroup: Cgroup | None, reason: str) -> None:
        self.processes += 1
        if cgroup is None:
            self.without_cgroup.append(reason or "no cgroup")
        else:
            self.cgroup_versions.add(cgroup.version)

    def add_events(self, events: dict[str, int] | None) -> None:
        for key, value in (events or {}).items():
            self.limit_events[key] = self.limit_events.get(key, 0) + value


@dataclass
class Jail:
    """How to start sandboxed processes: `command` wraps the argument vector, pass `preexec(cgroup)` to Popen."""

    mode: str  # "bubblewrap" or "unsandboxed"
    reason: str
    limits: Limits = field(default_factory=Limits)
    bwrap: str | None = None
    bwrap_version: str = ""
    use_cgroups: bool = True
    ledger: SandboxLedger = field(default_factory=SandboxLedger)  # shared by the jails of one evaluation

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
        """A cgroup for the next process tree, or None and why not; the ledger notes which."""
        cgroup, reason = Cgroup.create(self.limits) if self.use_cgroups else (None, "cgroups disabled")
        self.ledger.started(cgroup, reason)
        return cgroup, reason

    def preexec(self, cgroup: Cgroup | None, *, toolchain: bool = False) -> Callable[[], None]:
        """Runs in the forked child before exec: limits, then the cgroup. Only async-signal-safe-ish calls.
        `toolchain` (the compiler's processes): RLIMIT_FSIZE is `compiler_file_bytes`, in every mode, so a compile
        that would write a huge library stops at the cap instead of filling the disk first."""
        limits = self.limits
        procs = cgroup.procs_files() if cgroup is not None else []
        sandboxed = self.mode == "bubblewrap"

        def apply() -> None:
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            if toolchain:
                _lower(resource.RLIMIT_FSIZE, limits.compiler_file_bytes)
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

    def record(self) -> SandboxInfo:
        """What the processes started through this jail (and its ledger's other jails) actually got, for the verdict:
        each limit with its value and how it was enforced, or `not enforced: why`."""
        info = SandboxInfo(mode=self.mode, reason=self.reason, bwrap_version=self.bwrap_version or None)
        sandboxed = self.mode == "bubblewrap"
        root = os.geteuid() == 0
        lim, ledger = self.limits, self.ledger
        if sandboxed:
            info.network = False
            info.user = "root without capabilities" if root else f"uid {os.geteuid()}"
            info.writable = [f"{SANDBOX_TMP} (private tmpfs)", f"{SANDBOX_SHM} (private tmpfs)", "the exchange folder"]
            info.limits = {
                "tmp_bytes": f"{lim.tmp_bytes} (private tmpfs size)",
                "shm_bytes": f"{lim.shm_bytes} (private tmpfs size)",
                "open_files": f"{lim.open_files} (RLIMIT_NOFILE)",
                "file_bytes": f"{lim.file_bytes} (RLIMIT_FSIZE)",
            }
        else:
            off = "not enforced: unsandboxed"
            info.limits = {"tmp_bytes": off, "shm_bytes": off, "open_files": off, "file_bytes": off}
        info.limits["core_dumps"] = "off"  # RLIMIT_CORE=0 in every mode
        info.limits["compiler_file_bytes"] = f"{lim.compiler_file_bytes} (RLIMIT_FSIZE of the compiler)"
        info.limits["processes"], info.limits["memory_bytes"] = _cgroup_limits(lim, ledger, sandboxed and not root)
        info.limits.update(ledger.overrides)
        info.limit_events = dict(ledger.limit_events)
        return info


def _cgroup_limits(limits: Limits, ledger: SandboxLedger, nproc_applies: bool) -> tuple[str, str]:
    """(processes, memory_bytes) as enforced for the ledger's processes. RLIMIT_NPROC (per user, set only under
    bubblewrap) is ignored by the kernel for root."""
    if ledger.processes == 0:
        return "not enforced: no sandboxed process ran", "not enforced: no sandboxed process ran"
    if not ledger.without_cgroup:
        memory_file = "memory.max" if ledger.cgroup_versions == {2} else "memory.limit_in_bytes"
        return f"{limits.processes} (cgroup pids.max)", f"{limits.memory_bytes} (cgroup {memory_file})"
    reasons = "; ".join(dict.fromkeys(ledger.without_cgroup))
    which = f"no cgroup for {len(ledger.without_cgroup)} of {ledger.processes} processes ({reasons})"
    processes = f"{limits.processes} (RLIMIT_NPROC, per user; {which})" if nproc_applies else f"not enforced: {which}"
    return processes, f"not enforced: {which}"


def _lower(which: int, value: int) -> None:
    soft, hard = resource.getrlimit(which)
    new_hard = value if hard == resource.RLIM_INFINITY else min(hard, value)
    resource.setrlimit(which, (min(value, new_hard), new_hard))


@functools.lru_cache(maxsize=1)
def private_paths(roots: tuple[str, ...] = PRIVATE_ROOTS) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(files, folders) under `roots` that others may not read: shown to candidate code as empty."""
    files: list[str] = []
    folders: list[str] = []
    for root in roots:
        for here, dirs, names in os.walk(root):
            for d in list(dirs):
                path = os.path.join(here, d)
                try:
                    mode = os.lstat(path).st_mode
                except OSError:
                    continue
                if stat.S_ISDIR(mode) and (mode & 0o005) != 0o005:
                    folders.append(path)
                    dirs.remove(d)
            for name in names:
                path = os.path.join(here, name)
                try:
                    mode = os.lstat(path).st_mode
                except OSError:
                    continue
                if stat.S_ISREG(mode) and not mode & stat.S_IROTH:
                    files.append(path)
    return tuple(files), tuple(folders)


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
    private_files, private_dirs = ((), ()) if toolchain else private_paths()
    for f in () if toolchain else (*MASKED_FILES, *private_files):
        if os.path.isfile(f):
            args += ["--ro-bind", "/dev/null", f]
    for d in () if toolchain else (*MASKED_DIRS, *private_dirs):
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
    out: list[Path] = []
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
        if p in (Path(SANDBOX_TMP), Path(SANDBOX_SHM), Path("/dev")):
            # Private in the sandbox: the host's /tmp bound over the private one (a script run from /tmp puts it on
            # sys.path) would show other evaluations' folders and leave no writable /tmp.
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
