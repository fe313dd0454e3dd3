"""A content-addressed cache of successful compiles, owned by the trusted evaluator process (nvcc's here;
Triton's in evaluator/build/triton_cache.py, in the same folder under the same caps).

The key is the sha256 of everything that decides what nvcc produces: the source, the flags and target, the
nvcc version and the TVM-FFI headers' location and library. A hit gives back the same shared library,
cubin and preprocessor output that compiling again would; the verdict's `compile.cached` says so. Only
successful compiles are kept (a failure, a time-out or a template bomb is paid for every time). Candidate
code never sees the cache folder: the sandbox shows only the evaluator package, the task and the exchange
folder (an evaluation allowed to run unsandboxed neither reads nor fills the cache). Enabled by `EVALUATOR_COMPILE_CACHE=/some/dir` (or `Options.compile_cache`); off by default.
After each store the least recently used entries (a hit or a kept text marks an entry used) are removed while
there are more than `MAX_ENTRIES` or their files hold more than the byte cap together: `EVALUATOR_COMPILE_CACHE_MAX_BYTES`
(bytes or a size such as `8GiB`), default `DEFAULT_MAX_BYTES`. A compile larger than the cap on its own is not kept.
Without the byte cap, a source that compiles to a large library (a `char big[200ull << 20] = {1};` stays under the
library cap) and a comment changed per upload filled 256 entries of it.

An entry also keeps what the SASS stage read from its binary (the disassembly and the resource usage) once an
evaluation has made it (`load_text`/`store_text`): each `cuobjdump` run costs about a second of CPU even for a
tiny binary, and every evaluation of the same source reads the same text. A kept text is bound to the digest of
the shared library it was read from and to its own digest, and is checked against both before use.

Two processes that miss the same key at once would both compile it: `compiling()` holds a lock per key while
one compiles, and the other waits for its entry instead (never longer than its own compile time-out).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from evaluator.both_sides.verdict import CompileResult, KernelResources
from evaluator.build.hashing import sha256_file
from evaluator.errors import EnvironmentProblem
from evaluator.isolation.limits import GiB, parse_size

if TYPE_CHECKING:
    from evaluator.isolation.jail import Jail

MAX_ENTRIES = 256
DEFAULT_MAX_BYTES = 8 * GiB  # every entry's files together (libraries are at most 256 MiB each)
MAX_BYTES_ENV = "EVALUATOR_COMPILE_CACHE_MAX_BYTES"
FILES = ("kernel.so", "kernel.cubin", "kernel.ii")


def cache_dir_from_env() -> Path | None:
    value = os.environ.get("EVALUATOR_COMPILE_CACHE", "").strip()
    return Path(value) if value else None


def usable_dir(cache_dir: Path | None, jail: Jail | None) -> Path | None:
    """The cache folder a compile may read and fill: none for an evaluation allowed to run unsandboxed, whose
    candidate code could write into it."""
    if jail is not None and jail.mode != "bubblewrap":
        return None
    return cache_dir


def max_bytes_from_env() -> int:
    """The cache's byte cap: EVALUATOR_COMPILE_CACHE_MAX_BYTES, else DEFAULT_MAX_BYTES."""
    value = os.environ.get(MAX_BYTES_ENV, "").strip()
    if not value:
        return DEFAULT_MAX_BYTES
    try:
        return parse_size(value)
    except ValueError as exc:
        raise EnvironmentProblem(f"{MAX_BYTES_ENV}: {exc}") from None


def cache_key(source: str, flags: list[str], nvcc_version: str, tvm_ffi: tuple[list[str], str]) -> str:
    """sha256 over the source and what shapes its compile (flags without file paths)."""
    includes, libtvm = tvm_ffi
    material = {
        "source": source,
        "flags": flags,
        "nvcc": nvcc_version,
        "tvm_ffi_includes": includes,
        "tvm_ffi_lib": libtvm,
        "tvm_ffi_lib_size": _size(libtvm),
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode("utf-8")).hexdigest()


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return -1


@dataclasses.dataclass
class CachedCompile:
    result: CompileResult
    library: Path
    cubin: Path | None
    preprocessed: str | None
    entry: Path


def load(cache_dir: Path, key: str, workdir: Path) -> CachedCompile | None:
    """Copy a cached compile into `workdir` (library at workdir/kernel.so, cubin under workdir/cubin/)."""
    entry = cache_dir / key
    result = read_result(entry)
    if result is None:
        return None
    try:
        library = workdir / "kernel.so"
        shutil.copyfile(entry / "kernel.so", library)
        cubin = None
        if (entry / "kernel.cubin").is_file():
            cubin_dir = workdir / "cubin"
            shutil.rmtree(cubin_dir, ignore_errors=True)
            cubin_dir.mkdir()
            cubin = cubin_dir / "kernel.cubin"
            shutil.copyfile(entry / "kernel.cubin", cubin)
        ii = entry / "kernel.ii"
        preprocessed = ii.read_text(encoding="utf-8", errors="replace") if ii.is_file() else None
    except (OSError, ValueError):
        return None
    damaged = sha256_file(library) != result.library_sha256
    damaged = damaged or (cubin is not None and sha256_file(cubin) != result.cubin_sha256)
    if damaged:  # damaged or tampered with: drop it, compile again
        shutil.rmtree(entry, ignore_errors=True)
        return None
    result.cached = True
    with contextlib.suppress(OSError):
        os.utime(entry)  # recently used: kept longest
    return CachedCompile(result, library, cubin, preprocessed, entry)


def store(
    cache_dir: Path,
    key: str,
    result: CompileResult,
    library: Path,
    cubin: Path | None,
    preprocessed: str | None,
    *,
    max_bytes: int | None = None,
) -> Path | None:
    """Keep a successful compile (atomically: a half-written entry is never visible); its entry folder. Then the
    least recently used entries go until the cache holds at most MAX_ENTRIES and `max_bytes` (default: from the
    environment); a compile larger than `max_bytes` alone is not kept (None)."""
    if not result.ok:
        return None
    max_bytes = max_bytes_from_env() if max_bytes is None else max_bytes
    try:
        size = library.stat().st_size + (cubin.stat().st_size if cubin is not None else 0)
        size += len(preprocessed.encode("utf-8")) if preprocessed is not None else 0
        if size > max_bytes:
            return None
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=cache_dir))
        shutil.copyfile(library, tmp / "kernel.so")
        if cubin is not None:
            shutil.copyfile(cubin, tmp / "kernel.cubin")
        if preprocessed is not None:
            (tmp / "kernel.ii").write_text(preprocessed, encoding="utf-8")
        write_result(tmp, result)
        try:
            tmp.rename(cache_dir / key)
        except OSError:  # another process stored the same key first
            shutil.rmtree(tmp, ignore_errors=True)
        prune(cache_dir, max_bytes, keep=key)
    except OSError:
        return None
    return cache_dir / key if (cache_dir / key).is_dir() else None


def read_result(entry: Path) -> CompileResult | None:
    """The compile record an entry keeps, or None (absent, unreadable, or written by another evaluator version)."""
    try:
        record = json.loads((entry / "result.json").read_text(encoding="utf-8"))
        resources = [KernelResources(**r) for r in record.pop("resources", [])]
        return CompileResult(**record, resources=resources)
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def write_result(folder: Path, result: CompileResult) -> None:
    """Keep the compile record in a folder that becomes an entry (as compiled, not cached)."""
    record = dataclasses.asdict(result)
    record["cached"] = False
    (folder / "result.json").write_text(json.dumps(record), encoding="utf-8")


KEPT_TEXTS = ("kernel.sass", "resource-usage.txt")  # what the SASS stage reads from the binary, by file name
LOCK_POLL_S = 0.1


def load_text(entry: Path, name: str, binary_sha256: str | None) -> str | None:
    """The text kept in `entry` under `name` for the binary with this digest, or None (absent, stale or damaged)."""
    if not binary_sha256 or name not in KEPT_TEXTS:
        return None
    try:
        record = json.loads((entry / f"{name}.json").read_text(encoding="utf-8"))
        text = (entry / name).read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None
    if record.get("binary_sha256") != binary_sha256 or record.get("text_sha256") != _digest(text):
        return None
    return text


def store_text(entry: Path, name: str, binary_sha256: str | None, text: str) -> None:
    """Keep a text read from the entry's binary (each file replaced atomically; the digests bind the pair)."""
    if not binary_sha256 or name not in KEPT_TEXTS or not entry.is_dir():
        return
    record = {"binary_sha256": binary_sha256, "text_sha256": _digest(text)}
    with contextlib.suppress(OSError):
        for file, data in ((name, text), (f"{name}.json", json.dumps(record))):
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=entry)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(data)
            os.replace(tmp, entry / file)


@contextlib.contextmanager
def compiling(cache_dir: Path, key: str, wait_s: float) -> Iterator[None]:
    """Held while this process compiles `key`: another process that misses the same key waits here (at most
    `wait_s`, then it compiles anyway) and then finds the entry instead of compiling it a second time. The lock
    file is removed when a process leaves (the holder, or a waiter that gave up); a process that still waits on
    a removed file gets its lock next and looks the entry up, and one that arrives later makes a new file, so the
    only cost of these races is a compile done twice (never a wrong result: entries are checked on load)."""
    lock = cache_dir / f".lock-{key}"
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o600)
    except OSError:
        yield
        return
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    break
                time.sleep(LOCK_POLL_S)
        yield
    finally:
        with contextlib.suppress(OSError):
            lock.unlink()
        os.close(fd)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def entry_bytes(entry: Path) -> int:
    """What an entry's files hold (entries are written by trusted processes only; links are not followed)."""
    total = 0
    with contextlib.suppress(OSError), os.scandir(entry) as files:
        for f in files:
            with contextlib.suppress(OSError):
                total += f.stat(follow_symlinks=False).st_size
    return total


def prune(cache_dir: Path, max_bytes: int, keep: str | None = None) -> None:
    """Remove the least recently used entries (oldest folder time first; `keep`, the entry just stored, last of
    all) until at most MAX_ENTRIES remain and they hold at most `max_bytes`."""
    entries = []
    for p in cache_dir.iterdir():
        with contextlib.suppress(OSError):
            if p.is_dir() and not p.name.startswith("."):
                entries.append((p.name == keep, p.stat().st_mtime_ns, p, entry_bytes(p)))
    entries.sort(key=lambda e: e[:2])
    count, total = len(entries), sum(e[3] for e in entries)
    for is_kept, _, path, size in entries:
        if count <= MAX_ENTRIES and total <= max_bytes or is_kept:
            break
        shutil.rmtree(path, ignore_errors=True)
        count, total = count - 1, total - size
