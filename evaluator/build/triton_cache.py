"""Successful Triton compiles kept in the compile cache (evaluator/build/compile_cache.py).

A Triton compile runs the submission's module in the sandbox and traces `run` for each workload, about six seconds
each time; the same file for the same workloads, target, Triton and evaluator gives the same kernels. An entry
keeps the compile's record and the checked copy of its cache folder (what the candidate process later loads) as
one tar file, so that the cache's accounting, which reads an entry's top-level files, counts all of it. Only a
compile that passed every check is kept, after the checks: the tree was copied under the hostile-file caps and
every cubin passed the device-code check. A failed compile is made again each time, so what the submission's code
does while it compiles is seen on every evaluation that fails there.

On a hit the tree is unpacked into the evaluation's trusted folder and its cubins are held to the digest the
record names; a mismatch drops the entry and the file is compiled again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from evaluator.both_sides.verdict import CompileResult
from evaluator.build import compile_cache

TREE = "triton-cache.tar"
# The evaluator's own files that decide what a Triton compile produces (the compile process and its settings).
_DECIDING = ("candidate_process/triton_aot.py", "both_sides/triton_settings.py")


def cache_key(source: str, triton_version: str, capability: int, calls: Any) -> str:
    """sha256 over the source and everything else that shapes its Triton compile."""
    root = Path(__file__).resolve().parents[1]
    material = {
        "language": "triton",
        "source": source,
        "triton": triton_version,
        "capability": capability,
        "calls": calls,
        "evaluator": [hashlib.sha256((root / f).read_bytes()).hexdigest() for f in _DECIDING],
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def cubins_digest(cubins: list[Path]) -> str:
    """One digest of the compiled kernels, in order (the verdict's `compile.cubin_sha256` for Triton)."""
    h = hashlib.sha256()
    for c in cubins:
        h.update(hashlib.sha256(c.read_bytes()).hexdigest().encode())
    return h.hexdigest()


def load(cache_dir: Path, key: str, dest: Path) -> tuple[CompileResult, list[Path]] | None:
    """The kept compile unpacked into `dest` (created afresh): its record (marked cached) and its cubins; None on a
    miss or a damaged entry (then dropped)."""
    entry = cache_dir / key
    result = compile_cache.read_result(entry)
    if result is None or not (entry / TREE).is_file():
        return None
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    try:
        with tarfile.open(entry / TREE) as tar:
            tar.extractall(dest, filter="data")
    except (OSError, tarfile.TarError):
        shutil.rmtree(dest, ignore_errors=True)
        return None
    cubins = sorted(p for p in dest.rglob("*.cubin") if p.is_file())
    if not cubins or cubins_digest(cubins) != result.cubin_sha256:
        shutil.rmtree(entry, ignore_errors=True)
        shutil.rmtree(dest, ignore_errors=True)
        return None
    result.cached = True
    with contextlib.suppress(OSError):
        os.utime(entry)  # recently used: kept longest
    return result, cubins


def store(cache_dir: Path, key: str, result: CompileResult, tree: Path, *, max_bytes: int | None = None) -> None:
    """Keep a checked, successful compile: its record and `tree` (its trusted cache copy), atomically; then the
    least recently used entries go as for every compile (compile_cache.prune). A tree larger than the byte cap
    alone is not kept."""
    if not result.ok:
        return
    max_bytes = compile_cache.max_bytes_from_env() if max_bytes is None else max_bytes
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=cache_dir))
        with tarfile.open(tmp / TREE, "w") as tar:
            tar.add(tree, arcname=".")
        if (tmp / TREE).stat().st_size > max_bytes:
            shutil.rmtree(tmp, ignore_errors=True)
            return
        compile_cache.write_result(tmp, result)
        try:
            tmp.rename(cache_dir / key)
        except OSError:  # another process stored the same key first
            shutil.rmtree(tmp, ignore_errors=True)
        compile_cache.prune(cache_dir, max_bytes, keep=key)
    except OSError:
        return
