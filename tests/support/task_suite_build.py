"""Building the task starters the way the kernel ABI says (docs/tasks.md), for the task-suite tests."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from evaluator.build.compile import compile_kernel


def compile_starter(source: Path, out: Path, arch: str = "sm_90a") -> None:
    """The evaluator's compile (evaluator/build/compile.py: the ABI's build line, and the compile cache when one is set);
    raises with nvcc's output on failure."""
    compiled = compile_kernel(source.read_text(encoding="utf-8"), arch, out.with_suffix(".build"))
    if compiled.library is None:
        raise AssertionError(f"nvcc failed for {source}:\n{compiled.result.output}")
    shutil.copyfile(compiled.library, out)


def distinct_starters(tasks_root: Path, names: Iterable[str]) -> dict[str, list[str]]:
    """Starter text hash -> the tasks sharing that text (the GEMM starter serves all GEMMs, and so on)."""
    groups: dict[str, list[str]] = {}
    for name in names:
        digest = hashlib.sha256((tasks_root / name / "starter.cu").read_bytes()).hexdigest()[:12]
        groups.setdefault(digest, []).append(name)
    return groups


def compile_all(tasks_root: Path, names: Iterable[str], out_dir: Path, arch: str, workers: int) -> dict[str, Path]:
    """Compile each distinct starter once, in parallel; task name -> its shared library."""
    groups = distinct_starters(tasks_root, names)
    jobs = {
        digest: (tasks_root / members[0] / "starter.cu", out_dir / f"starter_{digest}.so")
        for digest, members in groups.items()
    }
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for future in [pool.submit(compile_starter, src, so, arch) for src, so in jobs.values()]:
            future.result()
    return {name: jobs[digest][1] for digest, members in groups.items() for name in members}
