"""What an import statement loads, read with `ast` (nothing imported): shared by the layering tests
(tests/architecture/test_app_layers.py, test_leaderboard_parts.py)."""

from __future__ import annotations

import ast
from pathlib import Path


def module_parts(path: Path, root: Path) -> list[str]:
    """A source file's dotted module name under `root`, as its parts (a package's `__init__.py` is the package)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def imported_names(node: ast.Import | ast.ImportFrom, path: Path, root: Path) -> list[str]:
    """The dotted names an import statement loads, relative ones resolved (`from portal import agent` gives
    portal.agent too, since the name may be a package)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        package = module_parts(path, root)
        package = package if path.name == "__init__.py" else package[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]
