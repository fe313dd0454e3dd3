"""No import cycles inside a package, counting every import a module makes (module level and inside functions),
except those under `if TYPE_CHECKING:`, which never run. A function-level import that only breaks a cycle is still
a cycle here: move the shared thing into a small module both sides may import instead.

The check reads the source with `ast` (nothing is imported). Extend PACKAGES to check more packages; each entry
is a package folder relative to the repository root, checked on its own.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["evaluator"]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported_modules(path: Path, known: set[str]) -> set[str]:
    """The modules of `known` that the file at `path` imports at run time."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def resolve(candidate: str) -> None:
        # "a.b.c" may be a module or a name inside "a.b": take the longest known module prefix.
        parts = candidate.split(".")
        for end in range(len(parts), 0, -1):
            prefix = ".".join(parts[:end])
            if prefix in known:
                if prefix != name:
                    found.add(prefix)
                return

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking_only(child):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    resolve(alias.name)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[: len(package.split(".")) - child.level + 1]
                    source = ".".join([*base, *([child.module] if child.module else [])])
                else:
                    source = child.module or ""
                for alias in child.names:
                    resolve(f"{source}.{alias.name}")  # `from pkg import module` imports pkg.module
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return found


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    files = [p for p in sorted(package_dir.rglob("*.py")) if "migrations" not in p.parts]
    known = {module_name(p) for p in files}
    return {module_name(p): imported_modules(p, known) for p in files}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def strongconnect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return sorted(found)


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycles(package):
    graph = import_graph(ROOT / package)
    assert len(graph) > 1, f"no modules found under {package}"
    assert cycles(graph) == [], "import cycles (each list imports itself round): " + repr(cycles(graph))


def test_the_checker_finds_a_cycle_hidden_in_a_function(tmp_path, monkeypatch):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg import b\n")
    (pkg / "b.py").write_text("def f():\n    from pkg.a import thing\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n")
    (pkg / "d.py").write_text("from . import c\n")
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    graph = import_graph(pkg)
    assert graph["pkg.c"] == set() and graph["pkg.d"] == {"pkg.c"}
    assert cycles(graph) == [["pkg.a", "pkg.b"]]
