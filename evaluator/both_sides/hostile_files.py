"""The one module through which the trusted side touches a folder that candidate code could write.

Candidate code writes in three places: the build folder (nvcc and the Triton ahead-of-time compile run there,
and a Triton file's module-level Python runs in that compile), the exchange folder (the candidate process) and
the profile folder (the candidate under Nsight Compute). Everything in them is hostile data: a name may be a
symbolic link to a secret (`/proc/self/environ`, the database), to a device that never ends (`/dev/zero`), or a
FIFO that blocks `open()`; a file may be larger than any memory. So the trusted side never follows a link there,
never opens a path there by name with `open()`, and never trusts a size it did not cap:

- every component below a trusted `root` is opened relative to its parent's descriptor with `O_NOFOLLOW`
  (directories with `O_DIRECTORY` too), `..`, absolute parts and empty parts are refused;
- the last component must be a regular file with a single link (`fstat` after a non-blocking open), no larger
  than the caller's cap, and at most that many bytes are read even if it grows;
- listings and tree copies walk descriptors (folders opened with `O_NOFOLLOW` and read lazily) and refuse any link
  or special file rather than skipping it, so a planted link is a visible failure, not a silent gap; every walk
  counts folders and files together and has a time limit (`TreeCaps`), so a tree of empty folders stops it too;
- what the trusted side writes goes to folders only it can write (`private_dir`), created with `O_EXCL` and
  `O_NOFOLLOW`, so even a mistake in the folder layout cannot turn a write into a write through a link.

`Refused` says why, in words that can go into a verdict as they are (names are quoted with `!r`).

Used on both sides of the trust boundary, as a dependency only: the candidate process loads it through
evaluator/both_sides/protocol.py (whose `read_result_file` is the parent's); its functions run for the trusted side.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = [
    "Refused",
    "TreeCaps",
    "copy_file",
    "copy_tree",
    "file_size",
    "fresh_private_dir",
    "list_files",
    "measure_tree",
    "open_regular",
    "private_dir",
    "read_bytes",
    "read_text",
    "sha256",
    "trusted_beside",
    "write_private",
]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_BLOCK = 1 << 20


class Refused(Exception):
    """A path below a trusted root that the trusted side will not read: a link, a special file, too large, absent."""


@dataclass(frozen=True)
class TreeCaps:
    """Caps on a tree the trusted side lists or copies."""

    max_files: int = 4096
    max_bytes: int = 256 * 1024 * 1024  # all regular files together
    max_file_bytes: int = 128 * 1024 * 1024  # any one file
    max_depth: int = 8
    # Every entry, folders and links included: empty folders cost the walk time and memory as files do.
    max_entries: int = 8192
    max_seconds: float = 10.0  # the whole walk, on the trusted side's clock


def _parts(rel: str | os.PathLike[str]) -> list[str]:
    text = os.fspath(rel)
    if not text or text.startswith("/"):
        raise Refused(f"{text!r} is not a relative path")
    parts = [p for p in PurePosixPath(text).parts]
    if any(p in ("", ".", "..") or "/" in p or "\0" in p for p in parts):
        raise Refused(f"{text!r} has a '..', '.' or empty component")
    return parts


def _open_root(root: Path) -> int:
    try:
        return os.open(root, _DIR_FLAGS)
    except OSError as exc:
        raise Refused(f"{os.fspath(root)!r} is not a folder (or is a link): {exc.strerror}") from None


@contextmanager
def _dir_fd(root: Path, parts: list[str]) -> Iterator[int]:
    """A descriptor of root/parts..., every component opened without following links."""
    fd = _open_root(root)
    try:
        for part in parts:
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise Refused(f"folder {part!r} cannot be opened without following links: {exc.strerror}") from None
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


@contextmanager
def open_regular(root: Path, rel: str | os.PathLike[str], *, max_bytes: int) -> Iterator[tuple[int, int]]:
    """(descriptor, size) of root/rel when it is a regular file of at most `max_bytes` with one link."""
    *dirs, name = _parts(rel)
    with _dir_fd(root, dirs) as parent:
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=parent)
        except OSError as exc:
            raise Refused(f"{os.fspath(rel)!r} cannot be opened as a plain file: {exc.strerror}") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise Refused(f"{os.fspath(rel)!r} is not a regular file")
            if st.st_nlink != 1:
                raise Refused(f"{os.fspath(rel)!r} has {st.st_nlink} hard links")
            if st.st_size > max_bytes:
                raise Refused(f"{os.fspath(rel)!r} is {st.st_size} bytes, above the {max_bytes}-byte cap")
            os.set_blocking(fd, True)
            yield fd, st.st_size
        finally:
            os.close(fd)


def _read_fd(fd: int, rel: str | os.PathLike[str], max_bytes: int) -> Iterator[bytes]:
    total = 0
    while block := os.read(fd, min(_BLOCK, max_bytes + 1 - total)):
        total += len(block)
        if total > max_bytes:
            raise Refused(f"{os.fspath(rel)!r} grew above the {max_bytes}-byte cap while being read")
        yield block


def read_bytes(root: Path, rel: str | os.PathLike[str], *, max_bytes: int) -> bytes:
    with open_regular(root, rel, max_bytes=max_bytes) as (fd, _):
        return b"".join(_read_fd(fd, rel, max_bytes))


def read_text(root: Path, rel: str | os.PathLike[str], *, max_bytes: int) -> str:
    return read_bytes(root, rel, max_bytes=max_bytes).decode("utf-8", errors="replace")


def file_size(root: Path, rel: str | os.PathLike[str], *, max_bytes: int) -> int:
    """The size of root/rel under the same rules as a read (Refused when it is not a plain file)."""
    with open_regular(root, rel, max_bytes=max_bytes) as (_, size):
        return size


def sha256(root: Path, rel: str | os.PathLike[str], *, max_bytes: int) -> str:
    h = hashlib.sha256()
    with open_regular(root, rel, max_bytes=max_bytes) as (fd, _):
        for block in _read_fd(fd, rel, max_bytes):
            h.update(block)
    return h.hexdigest()


def private_dir(path: Path) -> Path:
    """`path` as a fresh folder only this user can write (mode 0700); refuses one that exists as a link."""
    path = Path(path)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            raise Refused(f"{os.fspath(path)!r} exists and is not this user's own folder") from None
        os.chmod(path, 0o700)
    return path


def fresh_private_dir(path: Path) -> Path:
    """`path` emptied (links inside removed, never followed) and made again as a private folder."""
    import shutil

    path = Path(path)
    if path.is_symlink():
        path.unlink()
    shutil.rmtree(path, ignore_errors=True)  # fd-based on Linux: never follows a link inside
    return private_dir(path)


def trusted_beside(build: Path) -> Path:
    """The trusted side's own folder next to a build folder (`build` -> `build-trusted`): verified copies of what
    the compiler made, and the texts trusted tools printed about them."""
    build = Path(build)
    return build.parent / f"{build.name}-trusted"


def write_private(path: Path, data: bytes | str) -> Path:
    """Write `data` to `path` in a folder of the trusted side's own, never through a link (O_NOFOLLOW, replaced)."""
    path = Path(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    parent = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the trusted side's own folder
    try:
        try:
            os.unlink(path.name, dir_fd=parent)
        except FileNotFoundError:
            pass
        fd = os.open(
            path.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=parent
        )
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
    finally:
        os.close(parent)
    return path


def copy_file(root: Path, rel: str | os.PathLike[str], dest: Path, *, max_bytes: int) -> Path:
    """Copy root/rel (checked as a read is) to `dest` in a trusted folder; `dest` is written with write_private."""
    return write_private(dest, read_bytes(root, rel, max_bytes=max_bytes))


def list_files(root: Path, *, caps: TreeCaps = TreeCaps(), suffixes: tuple[str, ...] = ()) -> list[str]:
    """Relative paths of the regular files under `root` (sorted), whose names end in one of `suffixes` (all when
    empty). Any link, special file, file with several links, or cap exceeded anywhere in the tree is Refused."""
    return [rel for rel, _ in _walk(root, caps) if not suffixes or rel.endswith(suffixes)]


def measure_tree(root: Path, *, caps: TreeCaps = TreeCaps()) -> int:
    """The bytes of the regular files under `root`, within `caps` (entries, files, bytes, depth, time): Refused
    beyond them. Links and special files are counted as entries and never followed or read, not refused: this is
    the size of a folder, not a read of it."""
    total = 0
    for _rel, st in _entries(root, caps):
        if stat.S_ISREG(st.st_mode):
            total += st.st_size
            if total > caps.max_bytes:
                raise Refused(f"more than {caps.max_bytes} bytes in all")
    return total


def _walk(root: Path, caps: TreeCaps) -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []
    total = 0
    for rel, st in _entries(root, caps):
        if stat.S_ISDIR(st.st_mode):
            continue
        if stat.S_ISLNK(st.st_mode):
            raise Refused(f"{rel!r} is a symbolic link")
        if not stat.S_ISREG(st.st_mode):
            raise Refused(f"{rel!r} is not a regular file")
        if st.st_nlink != 1:
            raise Refused(f"{rel!r} has {st.st_nlink} hard links")
        if st.st_size > caps.max_file_bytes:
            raise Refused(f"{rel!r} is {st.st_size} bytes, above the {caps.max_file_bytes}-byte cap")
        total += st.st_size
        found.append((rel, st.st_size))
        if len(found) > caps.max_files:
            raise Refused(f"more than {caps.max_files} files")
        if total > caps.max_bytes:
            raise Refused(f"more than {caps.max_bytes} bytes in all")
    return sorted(found)


def _entries(root: Path, caps: TreeCaps) -> Iterator[tuple[str, os.stat_result]]:
    """(relative path, lstat) of every entry under `root`, folders included, folders before what they hold.

    Folders are entered through descriptors opened without following links, and read lazily (`os.scandir` on a
    descriptor), so that the caps stop the walk as soon as they are passed: every entry (file, folder, link or
    anything else) counts against `max_entries`, the walk as a whole against `max_seconds`, and a folder below
    `max_depth` is refused when it is seen, before it is entered."""
    deadline = time.monotonic() + caps.max_seconds
    seen = 0

    def visit(fd: int, rel_dir: str, depth: int) -> Iterator[tuple[str, os.stat_result]]:
        nonlocal seen
        folders: list[str] = []
        try:
            listing = os.scandir(fd)
        except OSError as exc:
            raise Refused(f"folder {rel_dir!r} cannot be listed: {exc.strerror}") from None
        with listing:
            for entry in listing:
                seen += 1
                if seen > caps.max_entries:
                    raise Refused(f"more than {caps.max_entries} entries (files and folders together)")
                if time.monotonic() > deadline:
                    raise Refused(f"listing it took longer than {caps.max_seconds:g} s")
                rel = _join(rel_dir, entry.name)
                try:
                    st = os.lstat(entry.name, dir_fd=fd)
                except OSError as exc:  # a folder made unsearchable, an entry gone: a refusal, never a crash
                    raise Refused(f"{rel!r} cannot be examined: {exc.strerror}") from None
                if stat.S_ISDIR(st.st_mode):
                    if depth + 1 > caps.max_depth:
                        raise Refused(f"{rel!r} is deeper than {caps.max_depth} folders")
                    folders.append(entry.name)
                yield rel, st
        for name in folders:
            try:
                sub = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                rel = _join(rel_dir, name)
                raise Refused(f"folder {rel!r} cannot be opened without following links: {exc.strerror}") from None
            try:
                yield from visit(sub, _join(rel_dir, name), depth + 1)
            finally:
                os.close(sub)

    fd = _open_root(root)  # refuses a root that is itself a link
    try:
        yield from visit(fd, ".", 0)
    finally:
        os.close(fd)


def _join(rel_dir: str, name: str) -> str:
    return name if rel_dir == "." else f"{rel_dir}/{name}"


def copy_tree(root: Path, dest: Path, *, caps: TreeCaps = TreeCaps()) -> list[str]:
    """Copy every regular file under `root` into a fresh trusted folder `dest` (folders kept, modes not); any link or
    special file anywhere, or a cap exceeded, is Refused before anything is written. Returns the copied paths."""
    files = _walk(root, caps)
    private_dir(dest)
    for rel, _ in files:
        target = dest / rel
        for parent in reversed(target.relative_to(dest).parents[:-1]):
            private_dir(dest / parent)
        copy_file(root, rel, target, max_bytes=caps.max_file_bytes)
    return [rel for rel, _ in files]
