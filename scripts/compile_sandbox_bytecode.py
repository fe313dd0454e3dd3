"""Compile the bytecode of the packages that the evaluator's sandboxed Python processes import.

`python scripts/compile_sandbox_bytecode.py` (scripts/install_python.sh runs it after installing). The candidate
process (evaluator/candidate_process/child.py) and the Triton compile (evaluator/candidate_process/triton_aot.py)
run with PYTHONDONTWRITEBYTECODE and a read-only view of site-packages: a module without its bytecode there is
compiled again in every such process (PyTorch alone: ~6 s more per process). Every other process writes the
bytecode of what it imports on first use (the Makefile clears PYTHONDONTWRITEBYTECODE for them), so only these
packages need it ahead of time. Compiling all of site-packages instead took ~50 s of a 2-core machine's install;
this takes ~13 s.

What they import is found by importing it here, with bytecode written: that compiles every module they load. The
other modules of each folder those came from are compiled too (in parallel), for the submodules they import
later, on demand; folders of which nothing was imported (PyTorch's test helpers, its compilers, ONNX export) are
left out. A package that is not installed (the web tier has no PyTorch) is left out. The list of imports is the
evaluator's (`evaluator.isolation.sandbox.SANDBOX_PYTHON_IMPORTS`), beside the environment it gives those processes.
"""

from __future__ import annotations

import compileall
import functools
import importlib
import sys
import sysconfig
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from evaluator.isolation.sandbox import SANDBOX_PYTHON_IMPORTS


def imported_files(names: tuple[str, ...], site: Path) -> list[Path]:
    """Import `names` (those installed; their bytecode is written as they load) and return the Python files
    under `site` of every folder the modules they brought in came from (a top-level module: its own file)."""
    sys.dont_write_bytecode = False  # the point of importing them here
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
    folders: set[Path] = set()
    files: set[Path] = set()
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not file:
            continue
        path = Path(file).resolve()
        if path.parent == site:
            files.add(path)
        elif site in path.parents:
            folders.add(path.parent)
    return sorted(files | {f for folder in folders for f in folder.glob("*.py")})


def compile_for(names: tuple[str, ...], site: Path) -> list[Path]:
    """Write the bytecode of `imported_files(names, site)`, in one process pool; those files."""
    files = imported_files(names, site)
    # The results are not checked: a file that does not compile for this Python (PyTorch ships some written for
    # 3.12 only) is never imported by it either, and quiet=2 keeps their errors out of the install's output.
    with ProcessPoolExecutor() as pool:  # one pool for all folders: a pool per folder costs more than it compiles
        list(pool.map(functools.partial(compileall.compile_file, quiet=2), files, chunksize=16))
    return files


def main() -> int:
    compile_for(SANDBOX_PYTHON_IMPORTS, Path(sysconfig.get_paths()["purelib"]).resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
