"""Made-up source trees for the tests of the layering checkers (tests/architecture/)."""

from __future__ import annotations

from pathlib import Path


def write_package_tree(root: Path, files: dict[str, str]) -> Path:
    """Write `files` (path under `root` -> text) and an empty `__init__.py` in every folder that lacks one."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        for folder in path.relative_to(root).parents:
            if folder != Path(".") and not (root / folder / "__init__.py").exists():
                (root / folder / "__init__.py").write_text("")
    return root
