"""`ptxbench download`: a submission's evidence bundle, checked before anything is written.

Three digests from the portal are checked: the bundle's sha256 (`X-Content-SHA256` header), each file's sha256
and size against the bundle's MANIFEST.json, and the kernel source against the submission's `source_sha256`
from the API. A mismatch writes nothing and exits non-zero."""

from __future__ import annotations

import hashlib
import io
import json
import posixpath
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ptxbench_cli.api import CliError

WHATS = ("kernel", "verdict", "sass", "ncu", "bundle")
DEFAULT_WHAT = "kernel,verdict"
KERNEL_FILES = ("kernel.cu", "kernel.py")


class DigestMismatch(CliError):
    def __init__(self, message: str):
        super().__init__(f"sha256 mismatch: {message}; nothing was written", exit_code=1)


@dataclass(frozen=True)
class Picked:
    path: str  # inside the bundle (and under the output folder)
    data: bytes
    sha256: str


def parse_what(text: str) -> list[str]:
    wanted = [w.strip() for w in text.split(",") if w.strip()]
    unknown = [w for w in wanted if w not in WHATS]
    if unknown or not wanted:
        raise CliError(f"--what takes a comma-separated list of: {', '.join(WHATS)} (got {text!r})", exit_code=2)
    return wanted


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def safe_path(name: str) -> str:
    """A manifest path as a relative path that stays inside the output folder."""
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or "\\" in name or not path.parts or name != posixpath.normpath(name):
        raise CliError(f"the bundle names an unsafe path {name[:100]!r}; nothing was written")
    return name


def _kind(path: str) -> str | None:
    name = PurePosixPath(path).name
    if "/" not in path and name in KERNEL_FILES:
        return "kernel"
    if not path.startswith("evaluations/"):
        return None
    if name == "verdict.json":
        return "verdict"
    if name.endswith(".sass"):
        return "sass"
    if name.startswith("ncu") and name.endswith(".csv"):
        return "ncu"
    return None


def check_bundle(data: bytes, header_sha256: str, source_sha256: str) -> dict[str, bytes]:
    """Every file of the bundle by path, each checked against MANIFEST.json; raises DigestMismatch."""
    if not header_sha256:
        raise CliError("the portal sent the bundle without its sha256 (X-Content-SHA256); nothing was written")
    actual = sha256_hex(data)
    if actual != header_sha256.strip().lower():
        raise DigestMismatch(f"the bundle's sha256 is {actual}, the portal announced {header_sha256}")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        manifest = json.loads(archive.read("MANIFEST.json"))
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise CliError(f"the bundle is not a readable zip with a MANIFEST.json ({exc})") from None
    files: dict[str, bytes] = {}
    for entry in manifest.get("files") or []:
        path = safe_path(str(entry.get("path", "")))
        try:
            content = archive.read(path)
        except KeyError:
            raise DigestMismatch(f"{path} is in the manifest but not in the bundle") from None
        if sha256_hex(content) != entry.get("sha256") or len(content) != entry.get("size", len(content)):
            raise DigestMismatch(f"{path} does not match the manifest")
        files[path] = content
    kernels = [p for p in files if _kind(p) == "kernel"]
    for path in kernels:
        if sha256_hex(files[path]) != source_sha256:
            raise DigestMismatch(f"{path} is not the source the API describes (source_sha256 {source_sha256})")
    return files


def pick(files: dict[str, bytes], wanted: list[str], evaluation_id: str | None) -> tuple[list[Picked], list[str]]:
    """The files of the wanted kinds (of one evaluation when given), and the kinds that had none."""
    picked, missing = [], []
    for what in wanted:
        if what == "bundle":
            continue
        found = [
            Picked(path, data, sha256_hex(data))
            for path, data in sorted(files.items())
            if _kind(path) == what and (evaluation_id is None or what == "kernel" or f"/{evaluation_id}/" in path)
        ]
        if not found:
            missing.append(what)
        picked.extend(found)
    return picked, missing


def write(folder: Path, picked: list[Picked]) -> list[Path]:
    written = []
    for item in picked:
        target = folder / safe_path(item.path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(item.data)
        written.append(target)
    return written
