"""The candidate-process loader of the made-up language in tests/evaluator/test_language_seam.py: its build is the
submitted Python file itself, and its kernel cache holds one file the loader must find in its private copy."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

CACHE_FILE = "toy-kernels.txt"


def prepare() -> None:
    """Nothing to import ahead of the candidate's code: the language runs on PyTorch, already loaded."""


def load(library: Path, kernel_cache: Path | None) -> tuple[Any, Callable[..., Any]]:
    if kernel_cache is None or not (kernel_cache / CACHE_FILE).is_file():
        raise RuntimeError(f"no copy of the toy kernel cache reached this process ({kernel_cache})")
    # A file loader named explicitly: the import system takes no `.toy` file by its suffix.
    file_loader = importlib.machinery.SourceFileLoader("toy_candidate", str(library))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("toy_candidate", file_loader))
    file_loader.exec_module(module)
    return module, module.run
