"""Small helpers to build test data."""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GEMM = "gemm_n7168_k5120"


def copy_task(tmp_path: Path, name: str = GEMM) -> Path:
    """A tasks/ folder in tmp_path holding a copy of one real task (and no packs)."""
    root = tmp_path / "tasks"
    root.mkdir(exist_ok=True)
    shutil.copytree(REPO / "tasks" / name, root / name, ignore=shutil.ignore_patterns("solutions"))
    return root
