"""The candidate process's side of Triton: load the file and run only the kernels compiled ahead of time.

The parent gives this process a private copy of the evaluation's Triton cache folder (the ahead-of-time compile,
evaluator/candidate_process/triton_aot.py, filled it, and its cubins are what the static SASS counted). Triton
looks every launch up there under the same key it computed at compile time; compilation itself is switched off,
so a launch whose specialization was not compiled ahead of time fails with a clear error instead of compiling
here. Triton builds its small C launcher helper (cuda_utils) into the same private folder when the compile step
could not.

Triton's cache names the files of each compiled kernel in a group file (`__grp__<kernel>.json`) by absolute path,
the path the compile process wrote them to. The copy this process is given lies elsewhere, and that folder may be
gone (a compile kept in the compile cache outlives the evaluation that made it), so each group is pointed at its
own folder in the copy before anything is looked up: otherwise Triton finds no kernel and asks for a compile.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evaluator.both_sides.triton_settings import triton_env
from evaluator.candidate_process.triton_aot import load_candidate

NOT_AHEAD_OF_TIME = (
    "this launch needs a Triton compile in the candidate process (a specialization that was not compiled ahead "
    "of time: run must launch the same kernels with the same constexprs and argument kinds for every call)"
)


def refuse_compilation() -> None:
    """Make any Triton compile in this process raise (a cache hit never reaches the compiler's stages)."""
    from triton.backends.nvidia.compiler import CUDABackend

    def add_stages(self: Any, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(NOT_AHEAD_OF_TIME)

    CUDABackend.add_stages = add_stages


def prepare() -> None:
    """Before the candidate's code exists: a missing install is this host's problem, not the candidate's."""
    import triton  # noqa: F401


def load(library: Path, kernel_cache: Path | None) -> tuple[Any, Callable[..., Any]]:
    """The loader entry the candidate process calls (evaluator/languages.py names this module): (None, `run`)."""
    if kernel_cache is None:
        raise RuntimeError("a Triton candidate process needs its copy of the compiled kernels")
    return None, load_triton(library, kernel_cache)


def relocate_groups(cache_dir: Path) -> None:
    """Point every group file under `cache_dir` at the files beside it, by their names (a name with a folder in it
    is dropped: a group names files of its own folder only). A member that is not there leaves its group
    unresolved, a miss that refuse_compilation turns into the clear error."""
    for group in cache_dir.rglob("__grp__*.json"):
        data = json.loads(group.read_text(encoding="utf-8"))
        members = data.get("child_paths") if isinstance(data, dict) else None
        if not isinstance(members, dict):
            continue
        data["child_paths"] = {
            name: str(group.parent / name) for name in members if isinstance(name, str) and Path(name).name == name
        }
        group.write_text(json.dumps(data), encoding="utf-8")


def load_triton(source: Path, cache_dir: Path) -> Callable[..., Any]:
    """The candidate's `run`, with Triton reading kernels from `cache_dir` and never compiling."""
    relocate_groups(cache_dir)
    os.environ.update(triton_env(cache_dir))
    refuse_compilation()
    module = load_candidate(source)
    run = getattr(module, "run", None)
    if not callable(run):
        raise TypeError("the Triton file defines no callable run")
    checked: Callable[..., Any] = run
    return checked
