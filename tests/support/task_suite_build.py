"""Building the task starters the way the kernel ABI says (docs/tasks.md), for the task-suite tests."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def tvm_ffi_dirs() -> tuple[Path, Path]:
    """tvm_ffi's header and library folders."""
    import tvm_ffi

    root = Path(tvm_ffi.__file__).parent
    return root / "include", root / "lib"


def compile_starter(source: Path, out: Path, gencode: str = "arch=compute_90a,code=sm_90a") -> None:
    """nvcc with the ABI's build line; raises with nvcc's output on failure."""
    include, lib = tvm_ffi_dirs()
    cmd = [
        "nvcc", "-shared", "-Xcompiler", "-fPIC", "-O3", "-lineinfo", "-std=c++17", "-gencode", gencode,
        f"-I{include}", str(source), "-o", str(out), f"-L{lib}", "-ltvm_ffi", f"-Xlinker=-rpath,{lib}",
    ]  # fmt: skip
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise AssertionError(f"nvcc failed for {source}:\n{result.stdout}\n{result.stderr}")


def distinct_starters(tasks_root: Path, names: Iterable[str]) -> dict[str, list[str]]:
    """Starter text hash -> the tasks sharing that text (the GEMM starter serves all GEMMs, and so on)."""
    groups: dict[str, list[str]] = {}
    for name in names:
        digest = hashlib.sha256((tasks_root / name / "starter.cu").read_bytes()).hexdigest()[:12]
        groups.setdefault(digest, []).append(name)
    return groups


def compile_all(tasks_root: Path, names: Iterable[str], out_dir: Path, gencode: str, workers: int) -> dict[str, Path]:
    """Compile each distinct starter once, in parallel; task name -> its shared library."""
    groups = distinct_starters(tasks_root, names)
    jobs = {
        digest: (tasks_root / members[0] / "starter.cu", out_dir / f"starter_{digest}.so")
        for digest, members in groups.items()
    }
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for future in [pool.submit(compile_starter, src, so, gencode) for src, so in jobs.values()]:
            future.result()
    return {name: jobs[digest][1] for digest, members in groups.items() for name in members}
