"""No import cycles inside a package, counting every import a module makes (module level and inside functions),
except those under `if TYPE_CHECKING:`, which never run. A function-level import that only breaks a cycle is still
a cycle here: move the shared thing into a small module both sides may import instead.

The check reads the source with `ast` (nothing is imported). Extend PACKAGES to check more packages; each entry
is a package folder relative to the repository root, checked on its own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.evaluator_imports import edges, module_name

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["evaluator"]


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """Each module of the package and the package's modules it imports at run time (tests/support/evaluator_imports.py
    reads the imports)."""
    files = [p for p in sorted(package_dir.rglob("*.py")) if "migrations" not in p.parts]
    names = {p: module_name(p, ROOT) for p in files}
    known = set(names.values())
    return {name: {e.imported for e in edges(p, name, known) if not e.type_checking} for p, name in names.items()}


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
