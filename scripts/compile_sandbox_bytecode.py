"""Compile the bytecode of the packages that the evaluator's sandboxed Python processes import.

`python scripts/compile_sandbox_bytecode.py` (scripts/install_python.sh runs it after installing). The candidate
process (evaluator/child.py) and the Triton compile (evaluator/triton_aot.py) run with PYTHONDONTWRITEBYTECODE and a
read-only view of site-packages: a module without its bytecode there is compiled again in every such process
(PyTorch alone: ~6 s more per process). Every other process writes the bytecode of what it imports on first use
(the Makefile clears PYTHONDONTWRITEBYTECODE for them), so only these packages need it ahead of time. Compiling
all of site-packages instead took ~50 s of a 2-core machine's install; this takes ~25 s.

What they import is found by importing it here: each package that brings in (PyTorch's own dependencies
included) is compiled whole, so modules they import lazily later have their bytecode too. A package that is not
installed (the web tier has no PyTorch) is left out.
"""

from __future__ import annotations

import compileall
import importlib
import sys
import sysconfig
from pathlib import Path

# What a candidate process and a Triton compile import besides the standard library and this repository.
SANDBOX_IMPORTS = (
    "torch",
    "numpy",
    "tvm_ffi",
    "triton",
    "triton.compiler",
    "triton.backends.nvidia.compiler",
    "triton.runtime.jit",
)


def imported_packages(names: tuple[str, ...], site: Path) -> list[Path]:
    """Import `names` (those installed) and return the top-level packages and modules under `site` they loaded."""
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
    tops: set[Path] = set()
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not file:
            continue
        path = Path(file).resolve()
        if site in path.parents:
            tops.add(site / path.relative_to(site).parts[0])
    return sorted(tops)


def main() -> int:
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    # The results are not checked: a file that does not compile for this Python (PyTorch ships some written for
    # 3.12 only) is never imported by it either, and quiet=2 keeps their errors out of the install's output.
    for top in imported_packages(SANDBOX_IMPORTS, site):
        if top.is_dir():
            compileall.compile_dir(top, quiet=2, workers=0)
        elif top.suffix == ".py":
            compileall.compile_file(top, quiet=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
