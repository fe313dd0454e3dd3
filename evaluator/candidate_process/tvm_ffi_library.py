"""The candidate process's loader of a shared library that exports `run` through TVM-FFI (a CUDA submission's
build, evaluator/languages.py names it).

`prepare` runs before the candidate's code exists (a missing install is this host's problem); `load` maps the
library, which runs its static initialisers: from there on, failures are the candidate's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def prepare() -> None:
    import tvm_ffi  # noqa: F401 - imported before the candidate's code runs


def load(library: Path, kernel_cache: Path | None) -> tuple[Any, Callable[..., Any]]:
    """(the loaded module, kept alive while its `run` is called; `run`)."""
    import tvm_ffi

    module = tvm_ffi.load_module(str(library))
    run: Callable[..., Any] = module["run"] if not hasattr(module, "run") else module.run
    return module, run
