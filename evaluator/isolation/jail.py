"""The sandbox every piece of candidate code runs in: bubblewrap, resource limits, and a cgroup where there is one.

A `Jail` turns an argument vector into one that runs inside bubblewrap (`bwrap`) with
- never real root: when the evaluator runs as root, bubblewrap (which needs root there to build the mounts)
  starts `setpriv`, which drops to the sandbox user (`sandbox_user()`: EVALUATOR_SANDBOX_UID/GID, default
  65534 `nobody`), clears supplementary groups and every capability set, bounding set included, before the
  candidate's program starts; under an ordinary user the sandbox keeps that user's uid (bubblewrap then runs in
  a user namespace). A configured sandbox uid or gid of 0 is refused;
- no network (a fresh network namespace with only loopback), its own PID, IPC and UTS namespaces, no
  capabilities, a new session, and death when the evaluator dies;
- /proc mounted for the sandbox's PID namespace with the parts that set host state read-only (`/proc/sys`,
  `/proc/sysrq-trigger`, `/proc/irq`, `/proc/bus`, `/proc/fs`): a second wall behind the uid drop;
- a narrow read-only view of the host: the system directories, the Python installation and its import path,
  the evaluator package (not the rest of the repository), the task folder, the tool folders it needs;
  /etc/shadow, /etc/gshadow and every other file under /etc that others may not read are masked, /root, /home
  and /var are not there at all; the compiler's sandbox
  (`toolchain=True`) is narrower still: /usr, /bin, /lib*, of /etc only TOOLCHAIN_ETC, and the folders the
  caller names (toolkit, include roots, build folder), no /opt, /sys or Python folders;
- a size-capped private tmpfs at /tmp (HOME and TMPDIR point there) and a small one at /dev/shm: the only
  writable places besides the folders the caller names (the output exchange, the build folder);
- the NVIDIA device nodes bound in when GPU work is asked for: the driver's shared ones, and of the per-GPU nodes
  only the pinned GPU's when the process is pinned to one (evaluator/isolation/gpu_nodes.py).
Limits are applied in the forked child before `bwrap` starts (`preexec`): RLIMIT_CORE=0, RLIMIT_NOFILE,
RLIMIT_FSIZE (for the compiler's processes the smaller `compiler_file_bytes`, in every mode), and, where a
writable cgroup hierarchy exists (v1 or v2), the process joins a fresh cgroup with pids.max and a memory limit;
without a cgroup, RLIMIT_NPROC stands in for pids.max (it counts every process of the sandbox's uid on the host, so
it is not used where the exact per-tree limit exists). RLIMIT_AS is not used: CUDA reserves terabytes of virtual
address space and fails under it.

The folders a sandboxed process is shown are the evaluator's own (mode 0700); before the process starts,
`hand_over` lends them to the sandbox user: the folders it may write become that user's, the ones it may only read
get the sandbox group with read access. Only entries the evaluator itself owns are changed, never through a link,
and never below a folder the sandbox user already owns (what candidate code made is never walked).

`open_jail` probes bubblewrap once per configuration. When it is missing or cannot start (no user or mount
namespaces in a container, say) the evaluator refuses, unless unsandboxed mode was asked for explicitly
(`allow_unsandboxed=True` or EVALUATOR_ALLOW_UNSANDBOXED=1); either way `Jail.record()` says what was used.
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import evaluator
from evaluator.both_sides.verdict import SandboxInfo
from evaluator.envflags import env_flag, option_or_flag
from evaluator.errors import EnvironmentProblem
from evaluator.isolation import gpu_nodes
from evaluator.isolation.cgroups import Cgroup
from evaluator.isolation.limits import Limits

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
# Parts of /proc through which a process could change the host rather than itself: shown read-only.
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")
SETPRIV = "/usr/bin/setpriv"  # util-linux; in /usr, so every sandbox shows it
NOBODY = 65534
# What bubblewrap keeps for `setpriv` alone when it starts as root; setpriv drops them with the uid change.
SETPRIV_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")
HAND_OVER_MAX_ENTRIES = 100_000  # the evaluator's own folders hold a few hundred; more is refused, not walked
# Where the evaluator makes the folders it lends (tempfile's and the shared-memory folder) and those named with
# `lendable` (an evaluation's --workdir): only folders under one of them are ever handed over, so a tool or task
# folder named as readable (owned by root too) is never changed.
_LENDABLE: set[Path] = set()


class SandboxUnavailable(EnvironmentProblem):
    """bubblewrap is missing or cannot start here, and unsandboxed mode was not allowed."""


ALLOW_UNSANDBOXED = "EVALUATOR_ALLOW_UNSANDBOXED"


def allow_unsandboxed_from_env() -> bool:
    return env_flag(ALLOW_UNSANDBOXED)


@dataclass(frozen=True)
class SandboxUser:
    """The unprivileged identity candidate code runs as when the evaluator is root."""

    uid: int
    gid: int

    def describe(self) -> str:
        return f"uid {self.uid}, gid {self.gid} (dropped from root by setpriv, no capabilities)"


def sandbox_user() -> SandboxUser | None:
    """Who candidate code runs as: None when the evaluator is not root (the sandbox keeps its uid, which holds no
    privilege); as root, EVALUATOR_SANDBOX_UID/EVALUATOR_SANDBOX_GID (default 65534). Raises SandboxUnavailable for
    an identity that would be root or cannot be read."""
    if os.geteuid() != 0:
        return None
    ids = []
    for var in ("EVALUATOR_SANDBOX_UID", "EVALUATOR_SANDBOX_GID"):
        text = os.environ.get(var, "").strip() or str(NOBODY)
        if not text.isdigit():
            raise SandboxUnavailable(f"{var}={text!r} is not a numeric id")
        ids.append(int(text))
    if 0 in ids:
        raise SandboxUnavailable(
            "EVALUATOR_SANDBOX_UID/EVALUATOR_SANDBOX_GID would run candidate code as root; "
            "refusing (leave them unset for 65534, or name an unprivileged account)"
        )
    return SandboxUser(ids[0], ids[1])


def _default_user() -> SandboxUser | None:
    try:
        return sandbox_user()
    except SandboxUnavailable:
        return SandboxUser(NOBODY, NOBODY)  # open_jail refuses the configuration; a Jail made directly stays safe


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
    gpu_processes: int = 0  # of those, the ones given GPU device nodes

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
    # Who the sandboxed program runs as when the evaluator is root (None: the evaluator's own, unprivileged, uid).
    user: SandboxUser | None = field(default_factory=_default_user)

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
        """`argv` run inside the sandbox (unchanged in unsandboxed mode, where `preexec` drops root itself);
        `toolchain`: the compile sandbox. The folders named are handed over to the sandbox user first."""
        writable, readable = list(writable), list(readable)
        if self.user is not None:
            hand_over(self.user, writable=writable, readable=readable)
        self.ledger.gpu_processes += int(gpu)
        if self.mode != "bubblewrap":
            return list(argv)
        assert self.bwrap is not None
        options = bwrap_args(
            self.limits,
            writable=writable,
            readable=readable,
            gpu=gpu,
            chdir=chdir,
            toolchain=toolchain,
            keep_caps=SETPRIV_CAPS if self.user is not None else (),
        )
        return [self.bwrap, *options, "--", *drop_root(self.user), *argv]

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
        # Unsandboxed, nothing else drops root: this process does, last (the cgroup files are root's to write).
        user = self.user if not sandboxed else None

        def apply() -> None:
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            if toolchain:
                _lower(resource.RLIMIT_FSIZE, limits.compiler_file_bytes)
            if sandboxed:
                _lower(resource.RLIMIT_NOFILE, limits.open_files)
                _lower(resource.RLIMIT_FSIZE, limits.file_bytes)
                if not procs:
                    _lower(resource.RLIMIT_NPROC, limits.processes)
            pid = str(os.getpid()).encode()
            for path in procs:
                fd = os.open(path, os.O_WRONLY)
                try:
                    os.write(fd, pid)
                finally:
                    os.close(fd)
            if user is not None:
                os.setgroups([])
                os.setresgid(user.gid, user.gid, user.gid)
                os.setresuid(user.uid, user.uid, user.uid)

        return apply

    def record(self) -> SandboxInfo:
        """What the processes started through this jail (and its ledger's other jails) actually got, for the verdict:
        each limit with its value and how it was enforced, or `not enforced: why`."""
        info = SandboxInfo(mode=self.mode, reason=self.reason, bwrap_version=self.bwrap_version or None)
        sandboxed = self.mode == "bubblewrap"
        lim, ledger = self.limits, self.ledger
        info.user = self.user.describe() if self.user is not None else f"uid {os.geteuid()}"
        if sandboxed:
            info.network = False
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
        info.limits["processes"], info.limits["memory_bytes"] = _cgroup_limits(lim, ledger, sandboxed)
        if ledger.gpu_processes:
            info.limits["gpu_devices"] = gpu_nodes.describe_binding() if sandboxed else "not enforced: unsandboxed"
        info.limits.update(ledger.overrides)
        info.limit_events = dict(ledger.limit_events)
        return info


def _cgroup_limits(limits: Limits, ledger: SandboxLedger, nproc_applies: bool) -> tuple[str, str]:
    """(processes, memory_bytes) as enforced for the ledger's processes. RLIMIT_NPROC (per user, set only under
    bubblewrap and only without a cgroup) stands in for pids.max."""
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
    keep_caps: Iterable[str] = (),
) -> list[str]:
    """bubblewrap options (without the program) for the sandbox described in the module docstring.

    `toolchain=True` is the compiler's sandbox: only TOOLCHAIN_DIRS and TOOLCHAIN_ETC of the system, and of the
    rest only `readable` (the toolkit, tvm-ffi, the build folder), not Python's folders. `keep_caps`: the
    capabilities bubblewrap, started as root, leaves to the first program (`drop_root`'s setpriv) and no other."""
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
        *(a for cap in keep_caps for a in ("--cap-add", cap)),
        "--hostname",
        "sandbox",
    ]
    system = TOOLCHAIN_DIRS if toolchain else SYSTEM_DIRS
    for d in system:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    # Folders bubblewrap makes on the way to a bound path (0700 by its default) are made 0755 first.
    made = {Path(d) for d in (*system, "/dev")}  # also: under one of these, nothing is made
    if toolchain:
        for f in TOOLCHAIN_ETC:
            if os.path.exists(f):
                args += [*_parents(Path(f), made), "--ro-bind", f, f]
        shown = _outside(TOOLCHAIN_DIRS, [Path(p) for p in readable])
    else:
        shown = visible_paths([Path(p) for p in readable])
    for p in shown:
        if not _under_tmp(p):
            args += [*_parents(p, made), "--ro-bind", str(p), str(p)]
    private_files, private_dirs = ((), ()) if toolchain else private_paths()
    for f in () if toolchain else (*MASKED_FILES, *private_files):
        if os.path.isfile(f):
            args += ["--ro-bind", "/dev/null", f]
    for d in () if toolchain else (*MASKED_DIRS, *private_dirs):
        if os.path.isdir(d):
            args += ["--tmpfs", d]
    args += ["--dev", "/dev"]
    if gpu:  # the driver's shared nodes and the pinned GPU's own (evaluator/isolation/gpu_nodes.py)
        for host_path, sandbox_path in gpu_nodes.sandbox_gpu_nodes():
            args += ["--dev-bind", host_path, sandbox_path]
    # 1777: the private tmpfs folders belong to root when bubblewrap runs as root; the sandbox user must write them.
    args += ["--perms", "1777", "--size", str(limits.shm_bytes), "--tmpfs", SANDBOX_SHM, "--remount-ro", "/dev"]
    args += ["--proc", "/proc"]
    for entry in PROC_READ_ONLY:
        args += ["--ro-bind-try", entry, entry]
    args += ["--perms", "1777", "--size", str(limits.tmp_bytes), "--tmpfs", SANDBOX_TMP]
    # Python folders under /tmp (e.g. wheels unpacked to /tmp/site on GPU hosts) are hidden by the tmpfs: show them.
    for p in shown:
        if _under_tmp(p):
            args += [*_parents(p, made), "--ro-bind", str(p), str(p)]
    for p in writable:
        p = Path(p).resolve()
        args += [*_parents(p, made), "--bind", str(p), str(p)]
    args += ["--remount-ro", "/", "--chdir", str(chdir or SANDBOX_TMP)]
    return args


def _parents(path: Path, made: set[Path]) -> list[str]:
    """Folders leading to a bound path, made searchable by everyone (bubblewrap makes them 0700, which the sandbox
    user could not pass through, and the host's own may be private, like /root). `made`: folders that exist in the
    sandbox already (the system folders bound whole, those made before); one under a bound folder is left alone."""
    out: list[str] = []
    for folder in reversed(path.parents):
        if folder == Path("/") or folder in made or any(Path(d) in folder.parents for d in SYSTEM_DIRS):
            continue
        made.add(folder)
        out += ["--perms", "0755", "--dir", str(folder)]
    return out


def drop_root(user: SandboxUser | None) -> list[str]:
    """The program that turns bubblewrap's root child into the sandbox user before `argv` runs (none when the
    evaluator is not root). After it: real, effective and saved ids of the sandbox user, no supplementary groups,
    every capability set empty (bounding set too), and no_new_privs from bubblewrap, so nothing regains root."""
    if user is None:
        return []
    return [
        SETPRIV,
        f"--reuid={user.uid}",
        f"--regid={user.gid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--ambient-caps=-all",
        "--bounding-set=-all",
        "--",
    ]


class HandOverRefused(EnvironmentProblem):
    """A folder to lend the sandbox holds more entries than the evaluator ever makes."""


def lendable(path: Path) -> None:
    """Name a folder of the evaluator's own outside the temporary folders (an evaluation's --workdir)."""
    _LENDABLE.add(Path(os.path.realpath(path)))


def _lend_root(path: Path) -> Path | None:
    """The folder under which `path` may be lent (a registered one, or a temporary root), or None."""
    real = Path(os.path.realpath(path))
    for r in _LENDABLE:
        if real == r or r in real.parents:
            return r
    repo = EVALUATOR_DIR.parent
    if real == repo or repo in real.parents:
        return None  # the repository's task folders and package, even where it sits under /tmp
    for r in (Path(os.path.realpath(tempfile.gettempdir())), Path(SANDBOX_SHM)):
        if r in real.parents:
            return r
    return None


def _open_the_way(top: Path, root: Path, me: int, user: SandboxUser) -> None:
    """Group search access on the evaluator's folders between `root` and `top`: outside bubblewrap (unsandboxed
    mode) the sandbox user reaches a lent folder through them."""
    real = Path(os.path.realpath(top))
    for folder in real.parents:
        if not (root in folder.parents or (folder == root and root in _LENDABLE)):
            break  # the system's temporary folders themselves are not the evaluator's
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return
        try:
            st = os.fstat(fd)
            if st.st_uid == me:
                os.fchown(fd, -1, user.gid)
                os.fchmod(fd, (stat.S_IMODE(st.st_mode) & ~stat.S_IWGRP) | stat.S_IXGRP)
        finally:
            os.close(fd)


def hand_over(user: SandboxUser, *, writable: Iterable[Path], readable: Iterable[Path]) -> None:
    """Lend the evaluator's own folders to the sandbox user before a sandboxed process starts.

    `writable` folders become the sandbox user's (with what the evaluator put in them); `readable` ones get the
    sandbox group and group read (and search) access. Only entries this process owns change: system and Python
    folders (readable by everyone already) are left alone, and a folder the sandbox user owns is never entered,
    so nothing candidate code made is walked or followed (links are never followed: lstat and lchown only, and
    a mode is changed through a descriptor opened with O_NOFOLLOW)."""
    me = os.geteuid()
    budget = [HAND_OVER_MAX_ENTRIES]
    for top, change in [*((w, _give) for w in writable), *((r, _share) for r in readable)]:
        root = _lend_root(Path(top))
        if root is not None:
            _open_the_way(Path(top), root, me, user)
            _walk_own(Path(top), me, budget, functools.partial(change, user=user))


def _walk_own(top: Path, me: int, budget: list[int], change: Callable[[int, os.stat_result], None]) -> None:
    try:
        fd = os.open(top, _OWN_FLAGS)
    except OSError:
        return  # a link, gone: never followed
    _change_own(fd, me, budget, change, depth=0)


# Every component is opened relative to its parent's descriptor without following a link, and a folder is changed
# only after everything below it: while the walk is inside a folder, that folder is still the evaluator's, so a
# sandboxed process still alive cannot swap what the walk is about to change.
_OWN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_HAND_OVER_MAX_DEPTH = 32


def _change_own(
    fd: int, me: int, budget: list[int], change: Callable[[int, os.stat_result], None], *, depth: int
) -> None:
    try:
        budget[0] -= 1
        if budget[0] < 0:
            raise HandOverRefused(f"more than {HAND_OVER_MAX_ENTRIES} entries under the folders lent to the sandbox")
        st = os.fstat(fd)
        if st.st_uid != me:
            return  # the sandbox user's (or a tool's): never entered, never changed
        if stat.S_ISDIR(st.st_mode):
            if depth >= _HAND_OVER_MAX_DEPTH:
                raise HandOverRefused(f"folders lent to the sandbox nested deeper than {_HAND_OVER_MAX_DEPTH}")
            for name in os.listdir(fd):
                try:
                    child = os.open(name, _OWN_FLAGS, dir_fd=fd)
                except OSError:
                    continue  # a link, a FIFO without a writer, gone: never followed
                _change_own(child, me, budget, change, depth=depth + 1)
        elif not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            return  # only the evaluator's own plain files: a second link could name a file elsewhere
        change(fd, st)
    finally:
        os.close(fd)


def _give(fd: int, st: os.stat_result, *, user: SandboxUser) -> None:
    os.fchown(fd, user.uid, user.gid)
    os.fchmod(
        fd, stat.S_IMODE(st.st_mode) | stat.S_IRUSR | stat.S_IWUSR | (stat.S_IXUSR if stat.S_ISDIR(st.st_mode) else 0)
    )


def _share(fd: int, st: os.stat_result, *, user: SandboxUser) -> None:
    os.fchown(fd, -1, user.gid)
    extra = stat.S_IRGRP | (stat.S_IXGRP if stat.S_ISDIR(st.st_mode) or st.st_mode & stat.S_IXUSR else 0)
    os.fchmod(fd, stat.S_IMODE(st.st_mode) & ~stat.S_IWGRP | extra)


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
        user = _default_user()
        keep = SETPRIV_CAPS if user is not None else ()
        inside = "import evaluator.isolation.jail as j; j.assert_unprivileged()"
        argv = [
            bwrap,
            *bwrap_args(limits, gpu=gpu, keep_caps=keep),
            "--",
            *drop_root(user),
            sys.executable,
            "-c",
            inside,
        ]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(EVALUATOR_DIR.parent)}
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
            ok = proc.returncode == 0
            why = "" if ok else (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1][:500]
        except (OSError, subprocess.SubprocessError) as exc:
            ok, why = False, str(exc)
        _PROBES[key] = (ok, why)
    return _PROBES[key]


def assert_unprivileged() -> None:
    """Inside the sandbox: exit non-zero unless this process holds neither root nor a capability, and cannot open
    a host setting under /proc/sys for writing (the probe runs it before any candidate)."""
    caps = [line.split()[1] for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("Cap")]
    if 0 in os.getresuid() or 0 in os.getresgid() or any(int(c, 16) for c in caps):
        raise SystemExit(f"the sandbox holds root: uids {os.getresuid()}, capabilities {caps}")
    for name in ("kernel/core_pattern", "kernel/hostname", "vm/drop_caches"):
        try:
            os.close(os.open(f"/proc/sys/{name}", os.O_WRONLY))
        except OSError:
            continue
        raise SystemExit(f"the sandbox can write /proc/sys/{name}")


def bwrap_version(bwrap: str) -> str:
    try:
        return subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def open_jail(*, allow_unsandboxed: bool | None = None, gpu: bool = False, limits: Limits | None = None) -> Jail:
    """The sandbox for this evaluation. Raises SandboxUnavailable when bubblewrap cannot be used and unsandboxed
    mode was not allowed (argument, or EVALUATOR_ALLOW_UNSANDBOXED=1 when the argument is None)."""
    limits = limits or Limits()
    sandbox_user()  # an identity that would be root is refused before anything runs
    allowed = option_or_flag(allow_unsandboxed, ALLOW_UNSANDBOXED)
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


def check_reachable(jail: Jail) -> None:
    """Unsandboxed, a root evaluator still runs candidate code as the sandbox user, on the host's own folders: a
    worker says at start when that user cannot start this Python (one under /root, say), rather than fail every
    candidate. Nothing to check under bubblewrap (the probe started Python as that user) or without root."""
    if jail.mode == "bubblewrap" or jail.user is None:
        return
    argv = [sys.executable, "-c", "import evaluator.isolation.jail"]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(EVALUATOR_DIR.parent)}
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, timeout=60, env=env, cwd="/", preexec_fn=jail.preexec(None)
        )
        why = "" if proc.returncode == 0 else (proc.stderr.strip().splitlines() or ["no output"])[-1][:300]
    except (OSError, subprocess.SubprocessError) as exc:
        why = str(exc)
    if why:
        assert jail.user is not None
        raise SandboxUnavailable(
            f"unsandboxed mode runs candidate code as uid {jail.user.uid}, which cannot start {sys.executable} "
            f"({why}); install Python and the repository where that user can read them, or run the evaluator as "
            "an ordinary user"
        )
